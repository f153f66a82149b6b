"""Can grad_x's GEMM take the factor pass into its prologue at cuBLAS speed? (probe; GPU)

glu's backward runs a memory-bound pass (grad_de = dy * factors, in place: ~4% of a big step,
perf log v0.2 / v0.15) and then two cuBLAS GEMMs.  Removing the pass needs both GEMMs to compute
their grad_de operand from dy and the factors as they load it (grad_de cannot be written in
place by one GEMM while other programs of the same rows still read the factors, and a separate
grad_de buffer would cost 2MN of peak).  This probes the easier one: grad_x = (dy * f) @ W in a
Triton kernel (TMA loads of dy, the factors' left and gate slices and W; the product in
registers as the dot's A operand; each dy slice loaded once for its left and gate slices).  If
it is not within a few percent of cuBLAS's grad_de @ W, the pass stays.

Prints, per shape, ms of: cuBLAS mm(grad_de, W); the module's factor pass + that GEMM (what the
backward runs now); the probe kernel, for a few tilings; and the probe's max error against
mm(bf16(dy * f), W).  Interleaved rounds, every other reversed, medians.

    PYTHONPATH=. python scripts/prologue_gemm_probe.py [--smoke] [--compile]

--smoke: tiny shapes under TRITON_INTERPRET=1 (CPU; correctness only); --compile: compile the
tilings for sm90 here (no GPU; registers / spills / shared memory).  Results: $OUT/prologue.json.
"""

import os
import sys

SMOKE = "--smoke" in sys.argv
if SMOKE:
    os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

sys.path.insert(0, ".")
from codegen.bench import write_results  # noqa: E402

CHUNK = 128  # the module's packing: [left_0 | gate_0 | left_1 | ...], CHUNK columns each
# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages): BLOCK_N over grad_x's K columns, BLOCK_K
# over hidden units (each step multiplies a left and a gate slice of BLOCK_K columns)
TILINGS = [(128, 256, 32, 8, 3), (128, 256, 64, 8, 2), (128, 128, 64, 8, 3), (128, 128, 64, 4, 3)]
SHAPES = [(11136, 3584, 14336), (8192, 4096, 14336), (4096, 2048, 5632)]


@triton.jit
def _prologue_gemm_kernel(
    dy_desc,  # [M, N]
    f_desc,  # [M, 2N] packed factors
    w_desc,  # [2N, K] packed weight
    gx_desc,  # [M, K] out
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    CHUNK: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(K, BLOCK_N)
    group = pid // (GROUP_M * num_pid_n)
    first_m = group * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % (GROUP_M * num_pid_n)) % size_m
    pid_n = (pid % (GROUP_M * num_pid_n)) // size_m
    off_m = pid_m * BLOCK_M
    off_n = pid_n * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    steps_per_chunk: tl.constexpr = CHUNK // BLOCK_K
    for s in tl.range(0, N // BLOCK_K):
        h = s * BLOCK_K  # hidden units [h, h + BLOCK_K)
        col = (s // steps_per_chunk) * 2 * CHUNK + (s % steps_per_chunk) * BLOCK_K  # left slice
        d = dy_desc.load([off_m, h]).to(tl.float32)
        a_left = (d * f_desc.load([off_m, col]).to(tl.float32)).to(tl.bfloat16)
        a_gate = (d * f_desc.load([off_m, col + CHUNK]).to(tl.float32)).to(tl.bfloat16)
        acc = tl.dot(a_left, w_desc.load([col, off_n]), acc)
        acc = tl.dot(a_gate, w_desc.load([col + CHUNK, off_n]), acc)
    gx_desc.store([off_m, off_n], acc.to(tl.bfloat16))


def prologue_gemm(dy, f, w, tiling):
    BM, BN, BK, warps, stages = tiling
    M, N = dy.shape
    K = w.shape[1]
    gx = torch.empty((M, K), device=dy.device, dtype=dy.dtype)
    descs = (
        TensorDescriptor.from_tensor(dy, [BM, BK]),
        TensorDescriptor.from_tensor(f, [BM, BK]),
        TensorDescriptor.from_tensor(w, [BK, BN]),
        TensorDescriptor.from_tensor(gx, [BM, BN]),
    )
    grid = (triton.cdiv(M, BM) * triton.cdiv(K, BN),)
    _prologue_gemm_kernel[grid](
        *descs, M, N, K, BM, BN, BK, CHUNK, 8, num_warps=warps, num_stages=stages
    )
    return gx


def grad_de_of(dy, f):
    """The module's pass, in torch: [dy * f_left | dy * f_gate] per chunk, rounded to bf16."""
    M, N = dy.shape
    d = dy.float().view(M, N // CHUNK, 1, CHUNK)
    return (d * f.float().view(M, N // CHUNK, 2, CHUNK)).to(dy.dtype).view(M, 2 * N)


def compile_report():
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sys.path.insert(0, ".")
    from codegen.compile_check import _ptxas_usage

    sig = {
        "dy_desc": "tensordesc<bf16[%d, %d]>",
        "f_desc": "tensordesc<bf16[%d, %d]>",
        "w_desc": "tensordesc<bf16[%d, %d]>",
        "gx_desc": "tensordesc<bf16[%d, %d]>",
        "M": "i32",
        "N": "i32",
        "K": "i32",
    }
    for BM, BN, BK, warps, stages in TILINGS:
        blocks = {"dy_desc": (BM, BK), "f_desc": (BM, BK), "w_desc": (BK, BN), "gx_desc": (BM, BN)}
        signature = {k: (v % blocks[k] if k in blocks else v) for k, v in sig.items()}
        constexprs = {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK, "CHUNK": CHUNK, "GROUP_M": 8}
        names = list(_prologue_gemm_kernel.arg_names)
        signature.update({k: "constexpr" for k in constexprs})
        src = ASTSource(
            _prologue_gemm_kernel,
            signature,
            constexprs={(names.index(k),): v for k, v in constexprs.items()},
        )
        try:
            c = triton.compile(
                src,
                target=GPUTarget("cuda", 90, 32),
                options={"num_warps": warps, "num_stages": stages},
            )
            ptx = c.asm["ptx"]
            print(
                f"  {BM}x{BN}x{BK} w{warps} s{stages}: {c.metadata.shared} B shared,",
                f"{ptx.count('wgmma.mma_async')} wgmma, {_ptxas_usage(ptx, 90)}",
                flush=True,
            )
        except Exception as e:  # noqa: BLE001 - a tiling that does not compile is the finding
            print(f"  {BM}x{BN}x{BK} w{warps} s{stages}: {str(e).splitlines()[0][:200]}")


def main():
    if "--compile" in sys.argv:
        compile_report()
        return
    dev = "cpu" if SMOKE else "cuda"
    if SMOKE:
        sys.path.insert(0, "tests")
        from interpreter_patch import widen_bf16_dot

        widen_bf16_dot()
    shapes = [(256, 256, 2 * CHUNK), (130, 96, 3 * CHUNK)] if SMOKE else SHAPES
    tilings = [(128, 64, 32, 4, 1), (64, 32, 64, 4, 1)] if SMOKE else TILINGS
    res = {}
    for M, K, N in shapes:
        torch.manual_seed(0)
        dy = torch.randn(M, N, device=dev).to(torch.bfloat16)
        f = torch.randn(M, 2 * N, device=dev).to(torch.bfloat16)
        w = (torch.randn(2 * N, K, device=dev) / (2 * N) ** 0.5).to(torch.bfloat16)
        g = grad_de_of(dy, f)
        ref = (g.float() @ w.float()).to(torch.bfloat16)
        row = {"max_rel_err": {}}
        for tiling in tilings:
            out = prologue_gemm(dy, f, w, tiling)
            err = ((out.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
            row["max_rel_err"][str(tiling)] = err
        if not SMOKE:
            sys.path.insert(0, ".")
            from codegen.bench import _interleaved, load_module

            mod = load_module("generated/glu_silu_bf16_bn128_sm90.py")
            fb = f.clone()

            def pass_and_gemm():
                fb.copy_(f)  # the pass works in place: refresh its input (timed separately)
                mod._launch_backward(dy, fb, None, N)
                return torch.mm(fb, w)

            fns = {
                "cublas_gemm": lambda: torch.mm(g, w),
                "copy_only": lambda: fb.copy_(f),
                "pass_and_gemm_with_copy": pass_and_gemm,
            }
            for tiling in tilings:
                fns[f"probe {tiling}"] = lambda tiling=tiling: prologue_gemm(dy, f, w, tiling)
            from triton.testing import do_bench

            def t(fn, _):
                return do_bench(fn, warmup=25, rep=100, return_mode="median")

            ms = _interleaved({k: (fn, None) for k, fn in fns.items()}, t, 6)
            ms["pass_and_gemm"] = ms["pass_and_gemm_with_copy"] - ms["copy_only"]
            row["ms"] = ms
            base = ms["cublas_gemm"]
            print(
                f"{M}x{K}x{N}: cuBLAS {base:.3f} ms; pass + GEMM {ms['pass_and_gemm']:.3f}"
                f" ({ms['pass_and_gemm'] / base:.3f}x);",
                " ".join(
                    f"{k} {ms[k]:.3f} ({ms[k] / base:.3f}x, err {row['max_rel_err'][k[6:]]:.1e})"
                    for k in fns
                    if k.startswith("probe")
                ),
                flush=True,
            )
        else:
            print(f"{M}x{K}x{N}: max rel err", row["max_rel_err"], flush=True)
            assert max(row["max_rel_err"].values()) < 1e-2
        res[f"{M}x{K}x{N}"] = row
    write_results("prologue.json", res)


if __name__ == "__main__":
    main()
