"""Time the fused MLP's dgrad GEMM (dY @ W_down + GLU-derivative epilogue, in place) against
cuBLAS dY @ W_down over a few tilings (GPU).  Usage: python scripts/dgrad_sweep.py MODULE"""
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import load_module  # noqa: E402

mod = load_module(sys.argv[1])
CONFIGS = [(128, 128, 64, 8, 3), (128, 128, 64, 8, 4), (128, 128, 64, 4, 3), (128, 64, 64, 4, 4),
           (64, 128, 64, 4, 4), (128, 128, 128, 8, 2), (256, 128, 64, 8, 3), (128, 64, 128, 4, 3)]
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
                ms = do_bench(lambda: mod._launch_dgrad(dy, wd, h, y, write_y), warmup=25, rep=100, return_mode="median")
                print(f"  {cfg} write_y={write_y}: {ms:.3f} ms = {ms / ref:.3f}x", flush=True)
        except Exception as e:  # noqa: BLE001
            print(f"  {cfg}: {type(e).__name__}: {str(e)[:100]}", flush=True)
