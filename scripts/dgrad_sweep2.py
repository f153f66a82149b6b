"""dgrad GEMM experiments (GPU): B operand N-major (W_down [D, N] as is) vs K-major (W_down^T
contiguous [N, D]), tile widths 128 / 256, pipeline depth, with and without the GLU epilogue.
Usage: python scripts/dgrad_sweep2.py MODULE"""

import sys

import torch
import triton
import triton.language as tl
from triton.testing import do_bench
from triton.tools.tensor_descriptor import TensorDescriptor

sys.path.insert(0, ".")
from codegen.bench import load_module  # noqa: E402

mod = load_module(sys.argv[1])


@triton.jit
def _exp(
    dy_desc,
    wd_desc,
    h_desc,
    y_desc,
    M,
    N,
    D,
    CHUNK: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    NUM_SMS: tl.constexpr,
    KMAJOR: tl.constexpr,
    EPILOGUE: tl.constexpr,
):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = N // BLOCK_N
    k_tiles = tl.cdiv(D, BLOCK_K)
    for tile_id in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS, flatten=True):
        pid_m, pid_n = mod._tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = dy_desc.load([off_m, ki * BLOCK_K])
            if KMAJOR:
                b = wd_desc.load([off_n, ki * BLOCK_K]).T
            else:
                b = wd_desc.load([ki * BLOCK_K, off_n])
            acc = tl.dot(a, b, acc)
        if EPILOGUE:
            col = off_n + (off_n // CHUNK) * CHUNK
            left = h_desc.load([off_m, col]).to(tl.float32)
            gate = h_desc.load([off_m, col + CHUNK]).to(tl.float32)
            y, d_left, d_gate = mod._activation(left, gate)
            y_desc.store([off_m, off_n], y.to(tl.bfloat16))
            h_desc.store([off_m, col], (acc * d_left).to(tl.bfloat16))
            h_desc.store([off_m, col + CHUNK], (acc * d_gate).to(tl.bfloat16))
        else:
            y_desc.store([off_m, off_n], acc.to(tl.bfloat16))


num_sms = torch.cuda.get_device_properties(0).multi_processor_count
RUNS = [  # (bm, bn, bk, warps, stages, group_m, kmajor, epilogue)
    (128, 128, 64, 8, 4, 8, 0, 0),
    (128, 128, 64, 8, 5, 8, 0, 0),
    (128, 128, 64, 8, 5, 16, 0, 0),
    (128, 256, 64, 8, 3, 8, 0, 0),
    (128, 256, 64, 8, 4, 8, 0, 0),
    (128, 128, 64, 8, 4, 8, 1, 0),
    (128, 128, 64, 8, 5, 8, 1, 0),
    (128, 256, 64, 8, 3, 8, 1, 0),
    (128, 256, 64, 8, 4, 8, 1, 0),
    (128, 256, 64, 8, 4, 16, 1, 0),
    (128, 128, 64, 8, 5, 8, 0, 1),
    (128, 128, 64, 8, 6, 8, 0, 1),
    (128, 128, 64, 8, 5, 16, 0, 1),
    (128, 128, 64, 8, 4, 8, 1, 1),
    (128, 128, 64, 8, 5, 8, 1, 1),
    (128, 128, 64, 8, 5, 16, 1, 1),
]
for M, D, N in [(11136, 3584, 14336), (4096, 2048, 5632), (8192, 4096, 14336)]:
    dy = torch.randn(M, D, device="cuda", dtype=mod.DTYPE)
    wd = torch.randn(D, N, device="cuda", dtype=mod.DTYPE) / D**0.5
    wdt = wd.t().contiguous()
    h = torch.randn(M, 2 * N, device="cuda", dtype=mod.DTYPE)
    y = torch.empty(M, N, device="cuda", dtype=mod.DTYPE)
    ref = do_bench(lambda: torch.mm(dy, wd), warmup=25, rep=100, return_mode="median")
    tcopy = do_bench(lambda: wd.t().contiguous(), warmup=25, rep=100, return_mode="median")
    print(f"{M}x{D}x{N}: cuBLAS {ref:.3f} ms; W_down^T copy {tcopy:.3f} ms", flush=True)
    for bm, bn, bk, w, s, g, kmajor, epi in RUNS:
        if epi and bn > mod.CHUNK:
            continue
        b = (
            TensorDescriptor.from_tensor(wdt, [bn, bk])
            if kmajor
            else TensorDescriptor.from_tensor(wd, [bk, bn])
        )
        descs = (
            TensorDescriptor.from_tensor(dy, [bm, bk]),
            b,
            TensorDescriptor.from_tensor(h, [bm, min(bn, mod.CHUNK)]),
            TensorDescriptor.from_tensor(y, [bm, bn]),
        )
        grid = (min(num_sms, triton.cdiv(M, bm) * (N // bn)),)
        try:
            ms = do_bench(
                lambda: _exp[grid](
                    *descs,
                    M,
                    N,
                    D,
                    mod.CHUNK,
                    bm,
                    bn,
                    bk,
                    g,
                    num_sms,
                    kmajor,
                    epi,
                    num_warps=w,
                    num_stages=s,
                ),
                warmup=25,
                rep=100,
                return_mode="median",
            )
            print(
                f"  {(bm, bn, bk, w, s, g)} kmajor={kmajor} epilogue={epi}: {ms:.3f} = {ms / ref:.3f}x",
                flush=True,
            )
        except Exception as e:  # noqa: BLE001
            print(
                f"  {(bm, bn, bk, w, s, g)} {kmajor}{epi}: {type(e).__name__}: {str(e)[:100]}",
                flush=True,
            )
