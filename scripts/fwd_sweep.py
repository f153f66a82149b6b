"""Time the forward of several generated modules against cuBLAS in ONE process (GPU only).

    PYTHONPATH=. python scripts/fwd_sweep.py .sweep/*.py --shape 11136,3584,14336

For each module and shape: out relative error vs the float32 reference (a sanity check),
then median times of the cuBLAS GEMM x @ W^T, our training forward (factors written) and
inference forward.  Used to compare template / tiling variants before changing defaults.
"""

import argparse
import json
import os
import statistics
import sys

import torch
from triton.testing import do_bench

from codegen.bench import DEFAULT_SHAPES, load_module, parse_shape


def main():
    p = argparse.ArgumentParser()
    p.add_argument("modules", nargs="+")
    p.add_argument("--shape", action="append")
    p.add_argument("--json")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    shapes = [parse_shape(s) for s in args.shape] if args.shape else DEFAULT_SHAPES
    mods = [load_module(m) for m in args.modules]
    rows = []
    for M, K, N in shapes:
        torch.manual_seed(0)
        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(torch.bfloat16)
        ok = [m for m in mods if m.DTYPE == x.dtype and N % m.CHUNK == 0]
        errs = {}
        for mod in ok:
            xs = x[:2048]
            ref = mod.reference(xs, *mod.unpack_weight(w))
            errs[mod] = ((mod.glu(xs, w).float() - ref).norm() / ref.norm()).item()
        # interleaved rounds: cuBLAS, then every module, again and again; medians per entry
        fns = {"cublas": lambda: torch.nn.functional.linear(x, w)}
        for mod in ok:
            fns[(mod, "train")] = lambda mod=mod: mod.glu_forward(x, w, save_factors=True)
            fns[(mod, "infer")] = lambda mod=mod: mod.glu_forward(x, w, save_factors=False)
        samples = {k: [] for k in fns}
        for _ in range(args.rounds):
            for k, fn in fns.items():
                samples[k].append(do_bench(fn, warmup=25, rep=150, return_mode="median"))
        med = {k: statistics.median(v) for k, v in samples.items()}
        cublas = med["cublas"]
        for mod in ok:
            train, infer = med[(mod, "train")], med[(mod, "infer")]
            row = dict(
                shape=(M, K, N),
                module=os.path.basename(mod.__file__),
                err=errs[mod],
                cublas=cublas,
                train=train,
                infer=infer,
                train_samples=samples[(mod, "train")],
            )
            rows.append(row)
            print(
                f"{M}x{K}x{N} {row['module']:<28} err {row['err']:.4f} cuBLAS {cublas:.3f} "
                f"train {train:.3f} ({train / cublas:.3f}x) infer {infer:.3f} ({infer / cublas:.3f}x) "
                f"spread {min(samples[(mod, 'train')]):.3f}-{max(samples[(mod, 'train')]):.3f}",
                flush=True,
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
