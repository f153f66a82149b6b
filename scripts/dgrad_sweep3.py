"""dgrad epilogue overlap experiments (GPU): the epilogue's h/y traffic (6 bytes per output
element) is not hidden behind the main loop of the persistent kernel.  Tried: one tile per
program (several CTAs per SM overlap each other's epilogue), the epilogue in two column halves
(fewer live registers), warp specialisation.  Usage: python scripts/dgrad_sweep3.py MODULE"""

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
def _half(acc, h_desc, y_desc, off_m, off_n, col, CHUNK: tl.constexpr):
    left = h_desc.load([off_m, col]).to(tl.float32)
    gate = h_desc.load([off_m, col + CHUNK]).to(tl.float32)
    y, d_left, d_gate = mod._activation(left, gate)
    y_desc.store([off_m, off_n], y.to(tl.bfloat16))
    h_desc.store([off_m, col], (acc * d_left).to(tl.bfloat16))
    h_desc.store([off_m, col + CHUNK], (acc * d_gate).to(tl.bfloat16))


@triton.jit
def _tile(
    dy_desc,
    wd_desc,
    h_desc,
    y_desc,
    tile_id,
    num_pid_m,
    num_pid_n,
    k_tiles,
    CHUNK: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    SUBTILE: tl.constexpr,
):
    pid_m, pid_n = mod._tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
    off_m = pid_m * BLOCK_M
    off_n = pid_n * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for ki in range(k_tiles):
        a = dy_desc.load([off_m, ki * BLOCK_K])
        b = wd_desc.load([ki * BLOCK_K, off_n])
        acc = tl.dot(a, b, acc)
    col = off_n + (off_n // CHUNK) * CHUNK
    if SUBTILE:
        acc0, acc1 = tl.split(tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1)))
        _half(acc0, h_desc, y_desc, off_m, off_n, col, CHUNK)
        _half(acc1, h_desc, y_desc, off_m, off_n + BLOCK_N // 2, col + BLOCK_N // 2, CHUNK)
    else:
        _half(acc, h_desc, y_desc, off_m, off_n, col, CHUNK)


@triton.jit
def _persistent(
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
    SUBTILE: tl.constexpr,
    WS: tl.constexpr,
):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = N // BLOCK_N
    k_tiles = tl.cdiv(D, BLOCK_K)
    for tile_id in tl.range(
        tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS, flatten=not WS, warp_specialize=WS
    ):
        _tile(
            dy_desc,
            wd_desc,
            h_desc,
            y_desc,
            tile_id,
            num_pid_m,
            num_pid_n,
            k_tiles,
            CHUNK,
            BLOCK_M,
            BLOCK_N,
            BLOCK_K,
            GROUP_M,
            SUBTILE,
        )


@triton.jit
def _one_tile(
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
    SUBTILE: tl.constexpr,
):
    _tile(
        dy_desc,
        wd_desc,
        h_desc,
        y_desc,
        tl.program_id(0),
        tl.cdiv(M, BLOCK_M),
        N // BLOCK_N,
        tl.cdiv(D, BLOCK_K),
        CHUNK,
        BLOCK_M,
        BLOCK_N,
        BLOCK_K,
        GROUP_M,
        SUBTILE,
    )


num_sms = torch.cuda.get_device_properties(0).multi_processor_count
RUNS = [  # (kind, bm, bn, bk, warps, stages, subtile, ws, ctas per SM for the persistent grid)
    ("persistent", 128, 128, 64, 8, 4, 0, 0, 1),
    ("persistent", 128, 128, 64, 8, 4, 1, 0, 1),
    ("persistent", 128, 128, 64, 8, 3, 1, 0, 2),
    ("persistent", 128, 128, 64, 4, 3, 1, 0, 2),
    ("persistent", 128, 128, 64, 8, 3, 1, 1, 1),
    ("persistent", 128, 128, 64, 4, 3, 0, 1, 1),
    ("one_tile", 128, 128, 64, 8, 3, 0, 0, 0),
    ("one_tile", 128, 128, 64, 8, 3, 1, 0, 0),
    ("one_tile", 128, 128, 64, 8, 4, 1, 0, 0),
    ("one_tile", 128, 128, 64, 4, 3, 1, 0, 0),
    ("one_tile", 64, 128, 64, 4, 4, 1, 0, 0),
    ("one_tile", 128, 64, 64, 4, 4, 0, 0, 0),
]
for M, D, N in [(11136, 3584, 14336), (4096, 2048, 5632)]:
    dy = torch.randn(M, D, device="cuda", dtype=mod.DTYPE)
    wd = torch.randn(D, N, device="cuda", dtype=mod.DTYPE) / D**0.5
    h = torch.randn(M, 2 * N, device="cuda", dtype=mod.DTYPE)
    y = torch.empty(M, N, device="cuda", dtype=mod.DTYPE)
    ref = do_bench(lambda: torch.mm(dy, wd), warmup=25, rep=100, return_mode="median")
    print(f"{M}x{D}x{N}: cuBLAS {ref:.3f} ms", flush=True)
    for kind, bm, bn, bk, w, s, sub, ws, ctas in RUNS:
        sub_n = bn // 2 if sub else bn
        descs = (
            TensorDescriptor.from_tensor(dy, [bm, bk]),
            TensorDescriptor.from_tensor(wd, [bk, bn]),
            TensorDescriptor.from_tensor(h, [bm, sub_n]),
            TensorDescriptor.from_tensor(y, [bm, sub_n]),
        )
        tiles = triton.cdiv(M, bm) * (N // bn)
        try:
            if kind == "persistent":
                progs = min(ctas * num_sms, tiles)
                fn = lambda: _persistent[(progs,)](
                    *descs,
                    M,
                    N,
                    D,
                    mod.CHUNK,
                    bm,
                    bn,
                    bk,
                    8,
                    progs,
                    sub,
                    ws,  # noqa: E731
                    num_warps=w,
                    num_stages=s,
                )
            else:
                fn = lambda: _one_tile[(tiles,)](
                    *descs,
                    M,
                    N,
                    D,
                    mod.CHUNK,
                    bm,
                    bn,
                    bk,
                    8,
                    sub,  # noqa: E731
                    num_warps=w,
                    num_stages=s,
                )
            ms = do_bench(fn, warmup=25, rep=100, return_mode="median")
            print(
                f"  {kind} {(bm, bn, bk, w, s)} subtile={sub} ws={ws} ctas={ctas}: {ms:.3f} = {ms / ref:.3f}x",
                flush=True,
            )
        except Exception as e:  # noqa: BLE001
            print(
                f"  {kind} {(bm, bn, bk, w, s)} {sub}{ws}{ctas}: {type(e).__name__}: {str(e)[:150]}",
                flush=True,
            )
