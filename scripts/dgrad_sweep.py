"""Time the fused MLP's dgrad GEMM (dY @ W_down + GLU-derivative epilogue, in place) against
cuBLAS dY @ W_down over a few tilings (GPU).  Usage: python scripts/dgrad_sweep.py MODULE"""

import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import load_module  # noqa: E402

mod = load_module(sys.argv[1])
CONFIGS = [
    (128, 128, 64, 8, 3),
    (128, 128, 64, 8, 4),
    (128, 128, 64, 4, 3),
    (128, 64, 64, 4, 4),
    (64, 128, 64, 4, 4),
    (128, 128, 128, 8, 2),
    (256, 128, 64, 8, 3),
    (128, 64, 128, 4, 3),
]
for M, D, N in [(11136, 3584, 14336), (4096, 2048, 5632)]:
    dy = torch.randn(M, D, device="cuda", dtype=mod.DTYPE)
    wd = torch.randn(D, N, device="cuda", dtype=mod.DTYPE) / D**0.5
    h = torch.randn(M, 2 * N, device="cuda", dtype=mod.DTYPE)
    y = torch.empty(M, N, device="cuda", dtype=mod.DTYPE)
    ref = do_bench(lambda: torch.mm(dy, wd), warmup=25, rep=100, return_mode="median")
    print(f"{M}x{D}x{N}: cuBLAS {ref:.3f} ms", flush=True)
    for cfg in CONFIGS:
        if mod.CHUNK % cfg[1]:
            continue
        mod.DG_BLOCK_M, mod.DG_BLOCK_N, mod.DG_BLOCK_K, mod.DG_NUM_WARPS, mod.DG_NUM_STAGES = cfg
        try:
            for write_y in (True, False):
                ms = do_bench(
                    lambda: mod._launch_dgrad(dy, wd, h, y, write_y),
                    warmup=25,
                    rep=100,
                    return_mode="median",
                )
                print(f"  {cfg} write_y={write_y}: {ms:.3f} ms = {ms / ref:.3f}x", flush=True)
        except Exception as e:  # noqa: BLE001
            print(f"  {cfg}: {type(e).__name__}: {str(e)[:100]}", flush=True)

# ---- experiments: where the h tiles are loaded, flattened or nested tile loop ----------------
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402


@triton.jit
def _exp_kernel(
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
    PREFETCH: tl.constexpr,
    FLATTEN: tl.constexpr,
    EPILOGUE: tl.constexpr,
):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = N // BLOCK_N
    k_tiles = tl.cdiv(D, BLOCK_K)
    for tile_id in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS, flatten=FLATTEN):
        pid_m, pid_n = mod._tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        col = off_n + (off_n // CHUNK) * CHUNK
        if PREFETCH:
            left16 = h_desc.load([off_m, col])
            gate16 = h_desc.load([off_m, col + CHUNK])
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = dy_desc.load([off_m, ki * BLOCK_K])
            b = wd_desc.load([ki * BLOCK_K, off_n])
            acc = tl.dot(a, b, acc)
        if EPILOGUE:
            if not PREFETCH:
                left16 = h_desc.load([off_m, col])
                gate16 = h_desc.load([off_m, col + CHUNK])
            y, d_left, d_gate = mod._activation(left16.to(tl.float32), gate16.to(tl.float32))
            y_desc.store([off_m, off_n], y.to(tl.bfloat16))
            h_desc.store([off_m, col], (acc * d_left).to(tl.bfloat16))
            h_desc.store([off_m, col + CHUNK], (acc * d_gate).to(tl.bfloat16))
        else:
            y_desc.store([off_m, off_n], acc.to(tl.bfloat16))


num_sms = torch.cuda.get_device_properties(0).multi_processor_count
for M, D, N in [(11136, 3584, 14336), (4096, 2048, 5632)]:
    dy = torch.randn(M, D, device="cuda", dtype=mod.DTYPE)
    wd = torch.randn(D, N, device="cuda", dtype=mod.DTYPE) / D**0.5
    h = torch.randn(M, 2 * N, device="cuda", dtype=mod.DTYPE)
    y = torch.empty(M, N, device="cuda", dtype=mod.DTYPE)
    ref = do_bench(lambda: torch.mm(dy, wd), warmup=25, rep=100, return_mode="median")
    print(f"experiments {M}x{D}x{N}: cuBLAS {ref:.3f} ms", flush=True)
    for bm, bn, bk, w, s in [(128, 128, 64, 8, 3), (128, 128, 64, 8, 4), (128, 64, 64, 4, 4)]:
        for prefetch, flatten, epi in [
            (0, 1, 1),
            (1, 1, 1),
            (0, 0, 1),
            (1, 0, 1),
            (0, 1, 0),
            (0, 0, 0),
        ]:
            descs = (
                TensorDescriptor.from_tensor(dy, [bm, bk]),
                TensorDescriptor.from_tensor(wd, [bk, bn]),
                TensorDescriptor.from_tensor(h, [bm, bn]),
                TensorDescriptor.from_tensor(y, [bm, bn]),
            )
            grid = (min(num_sms, triton.cdiv(M, bm) * (N // bn)),)
            try:
                ms = do_bench(
                    lambda: _exp_kernel[grid](
                        *descs,
                        M,
                        N,
                        D,
                        mod.CHUNK,
                        bm,
                        bn,
                        bk,
                        8,
                        num_sms,
                        prefetch,
                        flatten,
                        epi,
                        num_warps=w,
                        num_stages=s,
                    ),
                    warmup=25,
                    rep=100,
                    return_mode="median",
                )
                print(
                    f"  {(bm, bn, bk, w, s)} prefetch={prefetch} flatten={flatten} epilogue={epi}: {ms:.3f} = {ms / ref:.3f}x",
                    flush=True,
                )
            except Exception as e:  # noqa: BLE001
                print(
                    f"  {(bm, bn, bk, w, s)} {prefetch}{flatten}{epi}: {type(e).__name__}: {str(e)[:120]}",
                    flush=True,
                )
