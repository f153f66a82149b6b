"""The Python part of a GLU training step's host cost, measured on any CPU: the module's kernel
launches and GEMMs are stubbed out (tiny CPU tensors), so what is timed is the Python around
them (checks, descriptors, launch keys, the autograd.Function), against a bare
autograd.Function that allocates the same buffers and returns preallocated gradients.

    PYTHONPATH=. python scripts/host_python_cpu.py generated/glu_silu_bf16_bn128_sm90.py [--profile]

Prints µs per fwd+bwd step (median of 5 rounds of 2000 steps) for both; with --profile, a
cProfile of ours.  A GPU host runs the same Python (plus the real launches and GEMMs), so a
change that lowers "ours - bare" here lowers the bench's host µs by about as much."""

import cProfile
import pstats
import statistics
import sys
import time

import torch

sys.path.insert(0, ".")
from codegen.bench import load_module  # noqa: E402


def main():
    mod = load_module(sys.argv[1])
    mod._check_device = lambda device: 132  # no CUDA device here
    mod._launch = lambda *args, **kwargs: None  # the kernel launch itself
    mod._tma_ok = lambda *tensors: True  # the TMA path (descriptors) as on an H200
    mod.UNFUSED_MAX_ROWS = 0  # the fused forward (no cuBLAS call)
    M, K, N = 512, 64, mod.CHUNK
    x = torch.randn(M, K, dtype=mod.DTYPE, requires_grad=True)
    w = torch.randn(2 * N, K, dtype=mod.DTYPE, requires_grad=True)
    dy = torch.randn(M, N, dtype=mod.DTYPE)
    grad_x, grad_w = torch.empty_like(x), torch.empty_like(w)

    def no_gemm(a, b, out=None):  # torch.mm -> the preallocated gradient (no CPU GEMM)
        return grad_x if a.shape[0] == M else grad_w

    torch.mm = no_gemm  # this process only; Bare below calls no GEMM either

    class Bare(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            out = torch.empty((M, N), dtype=x.dtype)
            factors = torch.empty((M, 2 * N), dtype=x.dtype)
            ctx.save_for_backward(x, w, factors)
            return out

        @staticmethod
        def backward(ctx, g):
            ctx.saved_tensors
            return grad_x, grad_w

    def ours():
        mod.glu(x, w).backward(dy)
        x.grad = w.grad = None

    def bare():
        Bare.apply(x, w).backward(dy)
        x.grad = w.grad = None

    for fn in (ours, bare) * 300:
        fn()
    times = {"ours": [], "bare": []}
    for _ in range(5):
        for name, fn in (("ours", ours), ("bare", bare)):
            t0 = time.perf_counter()
            for _ in range(2000):
                fn()
            times[name].append((time.perf_counter() - t0) / 2000 * 1e6)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{mod.SPEC['name']}: µs per fwd+bwd step, Python only (launches and GEMMs stubbed)")
    print(
        f"  ours {med['ours']:.1f}  bare autograd.Function {med['bare']:.1f}  difference {med['ours'] - med['bare']:.1f}"
    )
    if "--profile" in sys.argv:
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(3000):
            ours()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
