"""A/B: the bias gradient summed by the backward pass with 2-D accumulation (the module as
generated, BIAS_ROWS 64 and 256) vs an older module (`head`: dense `grad_de.sum(0)` after the
pass, grouped per-tile column sums), fwd+bwd with a bias: gpt-oss dense at three shapes and
grouped E=32 at three routings; one process, interleaved rounds (medians).  With the v0.10
module as head (e43ab88: grouped bias gradient by a grouped GEMM grad_de_e^T @ ones) it times
the whole change of v0.11.

    git show <old rev>:generated/glu_swiglu_oai_bf16_bn64_sm90.py > build/ab/head_d.py
    git show <old rev>:generated/glu_swiglu_oai_bf16_bn64_sm90_grouped.py > build/ab/head_g.py
    cp generated/glu_swiglu_oai_bf16_bn64_sm90.py build/ab/new_d.py
    cp generated/glu_swiglu_oai_bf16_bn64_sm90_grouped.py build/ab/new_g.py
    PYTHONPATH=. python scripts/ab_bias_accumulate.py     (needs a GPU)"""

import statistics
import sys
import torch
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import load_module, routing_sizes

dev, dt = "cuda", torch.bfloat16
print(torch.cuda.get_device_name(), torch.__version__, flush=True)


def bench(fns, grads, rounds=5):
    s = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            s[k].append(do_bench(f, warmup=5, rep=60, grad_to_none=grads, return_mode="median"))
    return {k: statistics.median(v) for k, v in s.items()}


def variants(path, head):
    mods = {"head": load_module(head)}
    for rows in (64, 256):
        m = load_module(path)
        m.BIAS_ROWS = rows
        mods[f"acc{rows}"] = m
    return mods


mods = variants("build/ab/new_d.py", "build/ab/head_d.py")
for M, K, N in ((32768, 2880, 2880), (8192, 4096, 14336), (4096, 2048, 5632)):
    torch.manual_seed(0)
    x = torch.randn(M, K, device=dev, dtype=dt, requires_grad=True)
    w = (torch.randn(2 * N, K, device=dev) / K**0.5).to(dt).requires_grad_()
    b = (torch.randn(2 * N, device=dev) * 0.1).to(dt).requires_grad_()
    dy = torch.randn(M, N, device=dev, dtype=dt)
    g = {}
    for k, m in mods.items():
        x.grad = w.grad = b.grad = None
        m.glu(x, w, b).backward(dy)
        g[k] = [t.grad.float().clone() for t in (x, w, b)]
    err = max(((a - c).norm() / c.norm()).item() for k in g for a, c in zip(g[k], g["head"]))
    r = bench({k: (lambda m=m: m.glu(x, w, b).backward(dy)) for k, m in mods.items()}, [x, w, b])
    print(
        f"dense {M}x{K}x{N} bias fwd+bwd ms: "
        + "  ".join(f"{k} {v:.4f} ({v / r['head']:.3f}x)" for k, v in r.items())
        + f"  max grad rel vs head {err:.1e}",
        flush=True,
    )

mods = variants("build/ab/new_g.py", "build/ab/head_g.py")
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
    g = {}
    for k, m in mods.items():
        x.grad = w.grad = b.grad = None
        m.grouped_glu(x, w, offs, b, check_offsets=False).backward(dy)
        g[k] = [t.grad.float().clone() for t in (x, w, b)]
    err = max(((a - c).norm() / c.norm()).item() for k in g for a, c in zip(g[k], g["head"]))
    fns = {"gmm": lambda: torch._grouped_mm(x.detach(), wf, offs=offs)}
    fns.update(
        {
            k: (lambda m=m: m.grouped_glu(x, w, offs, b, check_offsets=False).backward(dy))
            for k, m in mods.items()
        }
    )
    r = bench(fns, [x, w, b])
    f = 3 * r.pop("gmm")
    print(
        f"grouped E={E} {routing} fwd+bwd ms (x floor): "
        + "  ".join(f"{k} {v:.4f} ({v / f:.3f}x, {v / r['head']:.3f}x head)" for k, v in r.items())
        + f"  max grad rel vs head {err:.1e}",
        flush=True,
    )
