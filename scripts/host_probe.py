"""Host (CPU) cost of each piece of a training step, on a GPU: where do the microseconds go?

    PYTHONPATH=. python scripts/host_probe.py generated/glu_silu_bf16_bn128_sm90.py [M K N]

Each line: median host µs per call over 7 rounds of 200 calls (no synchronisation inside a
round; shapes small enough that the GPU keeps up, so the time is the CPU's).
"""

import sys

import torch
import triton

from codegen.bench import load_module
from scripts.host_breakdown import host_us


def main():
    mod = load_module(sys.argv[1])
    M, K, N = (int(v) for v in sys.argv[2:5]) if len(sys.argv) > 4 else (512, 1024, 1024)
    dev, dt = "cuda", mod.DTYPE
    x = torch.randn(M, K, device=dev, dtype=dt)
    w = (torch.randn(2 * N, K, device=dev) / K**0.5).to(dt)
    dy = torch.randn(M, N, device=dev, dtype=dt)
    print(
        f"{torch.cuda.get_device_name()} torch {torch.__version__} triton {triton.__version__}"
        f" module {mod.SPEC['name']} shape {M}x{K}x{N}"
    )
    rows = {}

    def row(name, fn):
        rows[name] = host_us(fn)
        print(f"{name:48s} {rows[name]:8.1f} us", flush=True)

    row("torch.empty", lambda: torch.empty((M, N), device=dev, dtype=dt))
    row("F.linear (cuBLAS)", lambda: torch.nn.functional.linear(x, w))
    out = torch.empty((M, N), device=dev, dtype=dt)
    fac = torch.empty((M, 2 * N), device=dev, dtype=dt)
    row(
        "glu_forward(save_factors, out, factors)",
        lambda: mod.glu_forward(x, w, save_factors=True, out=out, factors=fac),
    )
    row("glu_forward(no factors)", lambda: mod.glu_forward(x, w))
    row("glu_backward_factors_", lambda: mod.glu_backward_factors_(dy, fac))

    xg = x.clone().requires_grad_()
    wg = w.clone().requires_grad_()
    with torch.no_grad():
        row("glu under no_grad", lambda: mod.glu(x, w))
    row("glu training forward (graph built, no bwd)", lambda: mod.glu(xg, wg))

    def step():
        mod.glu(xg, wg).backward(dy)
        xg.grad = wg.grad = None

    row("glu fwd+bwd step", step)
    mod.SPLIT_FACTORS = False
    row("glu fwd+bwd step, SPLIT_FACTORS off", step)
    mod.SPLIT_FACTORS = True
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(200):
        step()
    prof.disable()
    torch.cuda.synchronize()
    pstats.Stats(prof).sort_stats("tottime").print_stats(14)
    wcat = w.clone().requires_grad_()

    def eager_step():
        left, gate = torch.nn.functional.linear(xg, wcat).chunk(2, dim=-1)
        (left * torch.nn.functional.silu(gate)).backward(dy)
        xg.grad = wcat.grad = None

    row("eager fwd+bwd step (silu)", eager_step)
    with torch.no_grad():
        row(
            "eager forward under no_grad",
            lambda: (lambda lg: lg[0] * torch.nn.functional.silu(lg[1]))(
                torch.nn.functional.linear(x, w).chunk(2, dim=-1)
            ),
        )


if __name__ == "__main__":
    main()
