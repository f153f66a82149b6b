"""Is a tiny MLP step host-bound or GPU-bound?  GPU time (CUDA graph replay, do_bench) of each
launch and of the step, beside host µs per step measured with rounds of 20 and of 300 steps."""

import sys

import torch
from triton.testing import do_bench

from codegen.bench import load_module
from scripts.host_breakdown import host_us


def main():
    mod = load_module(sys.argv[1])
    M, K, N = (int(v) for v in sys.argv[2:5]) if len(sys.argv) > 4 else (256, 512, 512)
    dev, dt = "cuda", mod.DTYPE
    xd = torch.randn(M, K, device=dev, dtype=dt)
    w = (torch.randn(2 * N, K, device=dev) / K**0.5).to(dt)
    wd = (torch.randn(K, N, device=dev) / N**0.5).to(dt)
    dz = torch.randn(M, K, device=dev, dtype=dt)
    dy = torch.randn(M, N, device=dev, dtype=dt)
    h = torch.empty((M, 2 * N), device=dev, dtype=dt)
    y = torch.empty((M, N), device=dev, dtype=dt)

    def gpu(name, fn):
        g = torch.cuda.CUDAGraph()
        fn()
        torch.cuda.synchronize()
        with torch.cuda.graph(g):
            fn()
        print(f"GPU {name:44s} {do_bench(g.replay, warmup=20, rep=200) * 1e3:8.1f} us", flush=True)

    gpu(
        "glu forward kernel (factors)",
        lambda: mod._launch_forward(xd, w, None, y, h, h, N, mod.WRITE_FACTORS),
    )
    gpu("glu backward kernel", lambda: mod._launch_backward(dy, h, h, N))
    gpu(
        "mlp forward kernel (preact)",
        lambda: mod._launch_forward(xd, w, None, y, h, h, N, mod.WRITE_PREACT),
    )
    gpu("dgrad kernel", lambda: mod._launch_dgrad(dz, wd, h, y))
    gpu("torch.mm y @ wd.t()", lambda: torch.mm(y, wd.t()))
    xg = xd.clone().requires_grad_()
    wg = w.clone().requires_grad_()
    wdg = wd.clone().requires_grad_()

    def mlp_step():
        mod.mlp(xg, wg, wdg).backward(dz)
        xg.grad = wg.grad = wdg.grad = None

    def glu_step():
        mod.glu(xg, wg).backward(dy)
        xg.grad = wg.grad = None

    import time

    import torch.nn.functional as F

    from codegen.bench import _eager_glu

    eager_glu = _eager_glu(mod)
    wc = w.clone().requires_grad_()

    def split(name, fwd, grad, params):
        """Median host µs of the forward call and of the backward call inside steps."""
        f, b = [], []
        for i in range(330):
            t0 = time.perf_counter()
            out = fwd()
            t1 = time.perf_counter()
            out.backward(grad)
            t2 = time.perf_counter()
            for p in params:
                p.grad = None
            if i >= 30:
                f.append(t1 - t0)
                b.append(t2 - t1)
        torch.cuda.synchronize()
        f.sort()
        b.sort()
        print(
            f"{name:24s} forward {f[150] * 1e6:7.1f} us, backward {b[150] * 1e6:7.1f} us (medians)",
            flush=True,
        )

    for _ in range(2):
        split("mlp ours", lambda: mod.mlp(xg, wg, wdg), dz, (xg, wg, wdg))
        split("mlp eager", lambda: F.linear(eager_glu(xg, wc), wdg), dz, (xg, wc, wdg))
        split("glu ours", lambda: mod.glu(xg, wg), dy, (xg, wg))
        split("glu eager", lambda: eager_glu(xg, wc), dy, (xg, wc))
    free = mod._free
    mod._free = lambda t, eager: None
    split("mlp ours, no _free", lambda: mod.mlp(xg, wg, wdg), dz, (xg, wg, wdg))
    mod._free = free
    for name, fn in (("mlp step", mlp_step), ("glu step", glu_step)):
        print(
            f"{name}: do_bench {do_bench(fn, warmup=20, rep=200) * 1e3:.1f} us; host us, rounds "
            f"of 20: {host_us(fn, n=20, rounds=15):.1f}, of 300: {host_us(fn, n=300, rounds=5):.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
