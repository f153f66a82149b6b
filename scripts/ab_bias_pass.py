"""A/B: the grouped backward pass summing grad_de per expert for the bias gradient (new) vs a
separate grouped GEMM grad_de_e^T @ ones (old); gpt-oss E=32 fwd+bwd with its bias, three
routings, one process, interleaved rounds (medians).  (The same sums in the dense pass, and a
4-stage two-chunk forward tile, were measured with an earlier form of this script and dropped:
docs/perf-log.md v0.11.)

    git show <old rev>:generated/glu_swiglu_oai_bf16_bn64_sm90_grouped.py > build/ab/old_g.py
    cp generated/glu_swiglu_oai_bf16_bn64_sm90_grouped.py build/ab/new_g.py
    PYTHONPATH=. python scripts/ab_bias_pass.py     (needs a GPU)"""

import statistics
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import load_module, routing_sizes

dev, dt = "cuda", torch.bfloat16


def interleaved(fns, grads, rounds=5):
    s = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            s[k].append(do_bench(f, warmup=5, rep=60, grad_to_none=grads, return_mode="median"))
    return {k: statistics.median(v) for k, v in s.items()}


def rel(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


def grouped(old, new):
    T, K, N, E = 32768, 2880, 2880, 32
    for routing in ("balanced", "skewed", "ragged"):
        torch.manual_seed(0)
        sizes = routing_sizes(T, E, routing)
        offs = torch.tensor(sizes, device=dev).cumsum(0).to(torch.int32)
        x = torch.randn(T, K, device=dev, dtype=dt, requires_grad=True)
        w = (torch.randn(E, 2 * N, K, device=dev) / K**0.5).to(dt).requires_grad_()
        b = (torch.randn(E, 2 * N, device=dev) * 0.1).to(dt).requires_grad_()
        dy = torch.randn(T, N, device=dev, dtype=dt)
        wf = w.detach().transpose(-2, -1)

        def step(m):
            return lambda: m.grouped_glu(x, w, offs, b, check_offsets=False).backward(dy)

        grads = {}
        for name, m in (("old", old), ("new", new)):
            x.grad = w.grad = b.grad = None
            step(m)()
            grads[name] = [t.grad.float().clone() for t in (x, w, b)]
        errs = [rel(a, c) for a, c in zip(grads["new"], grads["old"])]
        r = interleaved(
            {
                "gmm": lambda: torch._grouped_mm(x.detach(), wf, offs=offs),
                "old": step(old),
                "new": step(new),
            },
            [x, w, b],
        )
        f = 3 * r["gmm"]
        print(
            f"grouped E={E} {routing}: gmm {r['gmm']:.3f}  fwd+bwd old {r['old']:.3f} "
            f"({r['old'] / f:.3f}x floor) new {r['new']:.3f} ({r['new'] / f:.3f}x)  "
            f"new vs old grads x/w/b rel {errs[0]:.1e} / {errs[1]:.1e} / {errs[2]:.1e}",
            flush=True,
        )


def main():
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    old_g, new_g = load_module("build/ab/old_g.py"), load_module("build/ab/new_g.py")
    grouped(old_g, new_g)


if __name__ == "__main__":
    main()
