"""The GLU backward's weight gradient grad_W = grad_de^T @ x ([2N, M] x [M, K]) as one cuBLAS
GEMM, as two GEMMs over grad_de's column halves (what the compiled backward does for a weight in
two parts), or as those two written into one [2N, K] tensor (out=).  v0.43's profile of the
compiled MLP (`scripts/compiled_mlp_profile.py`, an H100) had the one GEMM at 11136x3584x14336 run
as cuBLAS's `..._NTN` kernel in 3253 µs and the two halves as `..._NTT` in ~1533 µs each (6%
less): a kernel choice, not the graph, if it repeats in interleaved rounds.  Also grad_x =
grad_de @ W as one GEMM or as two (mm + addmm, the split's form).

    PYTHONPATH=. python scripts/wgrad_halves.py [M,K,N ...]

Prints ms per GEMM set (medians of ROUNDS interleaved rounds, every other reversed, of REPS
calls each), each form over the one GEMM per round (median [min, max]), and the cuBLAS kernel
each form ran (torch.profiler)."""

import statistics
import sys

import torch
from compiled_mlp_profile import cuda_kernels, interleaved_ms, per_round  # (scripts/)

ROUNDS, REPS = 8, 10
SHAPES = [(11136, 3584, 14336), (8192, 4096, 14336), (4096, 2048, 5632), (16384, 8192, 28672)]


def _forms(M, K, N):
    g = torch.randn(M, 2 * N, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(2 * N, K, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(2 * N, K, device="cuda", dtype=torch.bfloat16)
    gx = torch.empty(M, K, device="cuda", dtype=torch.bfloat16)

    def halves_into_one():
        torch.mm(g[:, :N].t(), x, out=out[:N])
        torch.mm(g[:, N:].t(), x, out=out[N:])

    def gx_two():
        torch.mm(g[:, :N], w[:N], out=gx)
        gx.addmm_(g[:, N:], w[N:])

    return {
        "wgrad one GEMM": lambda: torch.mm(g.t(), x),
        "wgrad two halves": lambda: (torch.mm(g[:, :N].t(), x), torch.mm(g[:, N:].t(), x)),
        "wgrad halves into one": halves_into_one,
        "wgrad x^T @ g (transposed out)": lambda: torch.mm(x.t(), g),
        "dgrad one GEMM": lambda: torch.mm(g, w),
        "dgrad mm + addmm": gx_two,
    }


def _kernel_names(fn):
    kernels = cuda_kernels(fn).items()
    return ", ".join(f"{c:g}x {n.replace('nvjet_sm90_tst_', '')[:48]}" for n, (c, _) in kernels)


def main(shapes):
    print(torch.cuda.get_device_name(), torch.__version__)
    for M, K, N in shapes:
        forms = _forms(M, K, N)
        names = list(forms)
        for fn in forms.values():
            fn()
        times = interleaved_ms(forms, REPS, ROUNDS)
        print(f"\n{M}x{K}x{N}")
        for name in names:
            base = times["wgrad one GEMM" if name.startswith("wgrad") else "dgrad one GEMM"]
            print(
                f"  {name:32s} {statistics.median(times[name]):7.3f} ms  x one GEMM per round "
                f"{per_round(times[name], base)}   "
                f"{_kernel_names(forms[name])}"
            )
        del forms
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main([tuple(int(v) for v in s.split(",")) for s in sys.argv[1:]] or SHAPES)
