"""A/B: grouped fwd+bwd with a bias, old module (bias gradient = float32 copy + index_add_) vs new
(a grouped GEMM grad_de_e^T @ ones), gpt-oss E=32, three routings; the bias gradient alone both ways.

    git show <old rev>:generated/glu_swiglu_oai_bf16_bn64_sm90_grouped.py > build/ab/old_g.py
    cp generated/glu_swiglu_oai_bf16_bn64_sm90_grouped.py build/ab/new_g.py
    PYTHONPATH=. python scripts/ab_grouped_bias_grad.py     (needs a GPU)"""

import statistics, sys
import torch
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import load_module, routing_sizes

old = load_module("build/ab/old_g.py")
new = load_module("build/ab/new_g.py")
dev, dt = "cuda", torch.bfloat16
T, K, N, E = 32768, 2880, 2880, 32
for routing in ("balanced", "skewed", "ragged"):
    sizes = routing_sizes(T, E, routing)
    offs = torch.tensor(sizes, device=dev).cumsum(0).to(torch.int32)
    x = torch.randn(T, K, device=dev, dtype=dt, requires_grad=True)
    w = (torch.randn(E, 2 * N, K, device=dev) / K**0.5).to(dt).requires_grad_()
    b = (torch.randn(E, 2 * N, device=dev) * 0.1).to(dt).requires_grad_()
    dy = torch.randn(T, N, device=dev, dtype=dt)
    wf = w.detach().transpose(-2, -1)

    def step(m):
        def run():
            m.grouped_glu(x, w, offs, b, check_offsets=False).backward(dy)

        return run

    grads = {}
    for name, m in (("old", old), ("new", new)):
        x.grad = w.grad = b.grad = None
        step(m)()
        grads[name] = [t.grad.float().clone() for t in (x, w, b)]
    errs = [((a - c).norm() / a.norm()).item() for a, c in zip(grads["old"], grads["new"])]
    # the bias gradient alone, both ways, on a grad_de-sized tensor
    gde = torch.randn(T, 2 * N, device=dev, dtype=dt)

    def bias_old():
        rows = torch.arange(T, device=dev, dtype=torch.int32)
        expert = torch.searchsorted(offs, rows, right=True).clamp(max=E - 1)
        return (
            gde.new_zeros((E, 2 * N), dtype=torch.float32).index_add_(0, expert, gde.float()).to(dt)
        )

    def bias_new():
        return new._grouped_mm(gde, gde.new_ones((T, 8)), offs, transpose_a=True)[
            :, :, 0
        ].contiguous()

    eb = ((bias_old().float() - bias_new().float()).norm() / bias_old().float().norm()).item()
    fns = {
        "gmm": lambda: torch._grouped_mm(x.detach(), wf, offs=offs),
        "old": step(old),
        "new": step(new),
        "bias_old": bias_old,
        "bias_new": bias_new,
    }
    s = {k: [] for k in fns}
    for _ in range(5):
        for k, f in fns.items():
            s[k].append(do_bench(f, warmup=5, rep=50, grad_to_none=[x, w, b], return_mode="median"))
    r = {k: statistics.median(v) for k, v in s.items()}
    print(
        f"E=32 {routing}: gmm {r['gmm']:.3f}  fwd+bwd old {r['old']:.3f} ({r['old']/(3*r['gmm']):.3f}x floor) new {r['new']:.3f} ({r['new']/(3*r['gmm']):.3f}x)  bias grad alone old {r['bias_old']:.3f} new {r['bias_new']:.3f}  rel diff grads x/w/b {errs}  bias-only rel diff {eb:.2e}",
        flush=True,
    )
