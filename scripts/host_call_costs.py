"""What one call costs the host on a GPU machine, without a profiler's overhead: each call issued
BATCH times back to back (no synchronisation inside a batch; small tensors, so the GPU never
holds the host back), interleaved rounds, medians.  The calls a GLU training step is made of:
cuBLAS GEMMs (torch.mm, addmm_, F.linear), allocations, eager elementwise ops, the module's
Triton launches (the factor pass through its launch plan), and autograd's bookkeeping.

    PYTHONPATH=. python scripts/host_call_costs.py [MODULE.py]

Results: $OUT/host_call_costs.json (or build/).
"""

import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, ".")
from codegen.bench import load_module, write_results  # noqa: E402

MODULE = "generated/glu_silu_bf16_bn128_sm90.py"
BATCH, ROUNDS = 200, 15


def main():
    mod = load_module(sys.argv[1] if len(sys.argv) > 1 else MODULE)
    dt, dev = mod.DTYPE, "cuda"
    M, K, N = 512, 256, 2 * mod.CHUNK * getattr(mod, "TILE_CHUNKS", 1)  # (> UNFUSED_MAX_ROWS)
    a = torch.randn(M, K, device=dev, dtype=dt)
    b = torch.randn(K, 2 * N, device=dev, dtype=dt)
    bt = b.t().contiguous()
    c = torch.empty(M, 2 * N, device=dev, dtype=dt)
    g = torch.randn(M, N, device=dev, dtype=dt)
    fa = torch.randn(M, 2 * N, device=dev, dtype=dt)
    xg = torch.randn(M, K, device=dev, dtype=dt, requires_grad=True)
    wg = torch.randn(2 * N, K, device=dev, dtype=dt, requires_grad=True)
    calls = {
        "torch.mm": lambda: torch.mm(a, b),
        "torch.mm(out=)": lambda: torch.mm(a, b, out=c),
        "addmm_": lambda: c.addmm_(a, b),
        "F.linear": lambda: F.linear(a, bt),
        "torch.empty [M, 2N]": lambda: torch.empty((M, 2 * N), device=dev, dtype=dt),
        "F.silu": lambda: F.silu(g),
        "mul": lambda: g * g,
        "factor pass (Triton, plan)": lambda: mod._factor_pass(g, fa, None, False),
        "glu no_grad (Triton, plan)": lambda: mod._forward(a, wg.detach(), None, False)[0],
        "as_strided": lambda: fa.as_strided((M, N), (2 * N, 1)),
        "slice rows": lambda: fa[: M // 2],
        "eager F.linear + backward": lambda: F.linear(xg, wg).backward(c),
    }
    out = torch.empty(M, N, device=dev, dtype=dt)
    wd = wg.detach()
    calls["forward launch (Triton, plan)"] = lambda: mod._launch_forward(
        a, wd, None, out, fa, fa, N, mod.WRITE_FACTORS
    )
    calls["factor pass launch (plan)"] = lambda: mod._launch_backward(g, fa, None, N)
    for fn in calls.values():
        for _ in range(20):
            fn()
    # the two plans' C launchers called as _replay calls them, without its Python around them
    stream = torch.cuda.current_stream().cuda_stream
    for kind in ("forward", "backward"):
        plans = [v for k, v in mod._PLANS.items() if k[0] == kind]
        if plans:
            launcher, grid, tail = plans[-1]
            calls[f"{kind}: C launcher alone"] = lambda l=launcher, g=grid, t=tail: l(
                *g, stream, *t
            )
    torch.cuda.synchronize()
    samples = {k: [] for k in calls}
    for r in range(ROUNDS):
        order = list(calls.items())
        for name, fn in order if r % 2 == 0 else order[::-1]:
            t0 = time.perf_counter()
            for _ in range(BATCH):
                fn()
            samples[name].append((time.perf_counter() - t0) / BATCH * 1e6)
            torch.cuda.synchronize()
            xg.grad = wg.grad = None
    res = {k: statistics.median(v) for k, v in samples.items()}
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}: host µs per call")
    for k, v in res.items():
        print(f"  {k:30s} {v:7.1f}")
    write_results("host_call_costs.json", res)


if __name__ == "__main__":
    main()
