"""Time the forward of several generated modules against cuBLAS in ONE process (GPU only).

    PYTHONPATH=. python scripts/fwd_sweep.py .sweep/*.py --shape 11136,3584,14336

For each module and shape: out relative error vs the float32 reference (a sanity check),
then median times of the cuBLAS GEMM x @ W^T, our training forward (factors written) and
inference forward.  Used to compare template / tiling variants before changing defaults.
"""

import argparse
import json
import os
import sys

import torch
from triton.testing import do_bench

from codegen.bench import DEFAULT_SHAPES, load_module, parse_shape


def main():
    p = argparse.ArgumentParser()
    p.add_argument("modules", nargs="+")
    p.add_argument("--shape", action="append")
    p.add_argument("--json")
    args = p.parse_args()
    shapes = [parse_shape(s) for s in args.shape] if args.shape else DEFAULT_SHAPES
    mods = [load_module(m) for m in args.modules]
    rows = []
    for M, K, N in shapes:
        torch.manual_seed(0)
        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(torch.bfloat16)
        cublas = do_bench(lambda: torch.nn.functional.linear(x, w), warmup=50, rep=300, return_mode="median")
        for mod in mods:
            if mod.DTYPE != x.dtype or N % mod.CHUNK:
                continue
            xs, ws = x[:2048], w
            gate_w, up_w = mod.unpack_weight(ws)
            err = (mod.glu(xs, ws).float() - mod.reference(xs, gate_w, up_w)).norm() / mod.reference(
                xs, gate_w, up_w
            ).norm()
            train = do_bench(lambda: mod.glu_forward(x, w, save_factors=True), warmup=50, rep=300, return_mode="median")
            infer = do_bench(lambda: mod.glu_forward(x, w, save_factors=False), warmup=50, rep=300, return_mode="median")
            row = dict(shape=(M, K, N), module=os.path.basename(mod.__file__), err=err.item(), cublas=cublas,
                       train=train, infer=infer)
            rows.append(row)
            print(f"{M}x{K}x{N} {row['module']:<40} err {row['err']:.4f} cuBLAS {cublas:.3f} "
                  f"train {train:.3f} ({train / cublas:.3f}x) infer {infer:.3f} ({infer / cublas:.3f}x)", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
