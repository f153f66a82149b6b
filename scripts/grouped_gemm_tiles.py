"""The grouped modules' own grouped GEMMs (run where torch._grouped_mm has no fast path:
_grouped_mm_kernel, _grouped_wgrad_kernel) timed against torch._grouped_mm and against a
per-expert cuBLAS loop, for a set of tilings (the arch table's GMM_* constants patched into the
module): grad_x = g @ W[e] ([T, 2N] x [E, 2N, K]), the weight gradient g_e^T @ x_e, and the down
projection's forward y @ down[e]^T ([T, N] x [E, K, N]^T).  Interleaved rounds, do_bench medians;
each result checked against torch._grouped_mm (or the loop).

    PYTHONPATH=. python scripts/grouped_gemm_tiles.py MODULE.py [--shape T,K,N,E ...]
        [--routing ragged] [--rounds 3] [--smoke]

Results: $OUT/grouped_gemm_tiles.json (or build/), a table on stdout."""

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, ".")
if "--smoke" in sys.argv:  # before Triton is imported: its kernels then run in the interpreter
    os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402

from codegen.bench import load_module, parse_shape, routing_sizes  # noqa: E402

TILINGS = [  # (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages)
    (128, 128, 32, 4, 4),
    (128, 128, 64, 4, 3),
    (128, 128, 64, 8, 3),
    (128, 256, 64, 8, 3),
    (64, 128, 32, 4, 4),
    (128, 64, 32, 4, 4),
]
NAMES = ("GMM_BLOCK_M", "GMM_BLOCK_N", "GMM_BLOCK_K", "GMM_NUM_WARPS", "GMM_NUM_STAGES")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("module")
    p.add_argument("--shape", action="append", default=[])
    p.add_argument("--routing", default="ragged")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--smoke", action="store_true")
    a = p.parse_args()
    mod = load_module(Path(a.module))
    if a.smoke:
        from tests.interpreter_patch import widen_bf16_dot

        widen_bf16_dot()
        dev, rounds, shapes, tilings = (
            "cpu",
            1,
            [(100, 32, 48, 4)],
            [(32, 32, 16, 4, 1), (16, 32, 32, 4, 1)],
        )
    else:
        dev, rounds, tilings = "cuda", a.rounds, TILINGS
        shapes = [parse_shape(s) for s in a.shape] or [
            (65536, 2048, 768, 128),
            (32768, 2880, 2880, 32),
            (16384, 4096, 14336, 8),
        ]
    dt = mod.DTYPE
    shipped = tuple(getattr(mod, n) for n in NAMES)
    results = {}
    for T, K, N, E in shapes:
        torch.manual_seed(0)
        sizes = routing_sizes(T, E, a.routing)
        T = sum(sizes)
        offsets = torch.tensor(sizes, device=dev).cumsum(0).to(torch.int32)
        ends = offsets.tolist()
        g = torch.randn(T, 2 * N, device=dev, dtype=dt)
        x = torch.randn(T, K, device=dev, dtype=dt)
        w = torch.randn(E, 2 * N, K, device=dev, dtype=dt) / K**0.5
        y = torch.randn(T, N, device=dev, dtype=dt)
        down = torch.randn(E, K, N, device=dev, dtype=dt) / N**0.5
        gemms = {  # name: (a, b, transpose_a)
            "grad_x": (g, w, False),
            "wgrad": (g, x, True),
            "down_fwd": (y, down.transpose(1, 2), False),
        }

        def reference(name):
            a_, b_, t = gemms[name]
            if dev == "cuda":
                return lambda: torch._grouped_mm(a_.t() if t else a_, b_, offs=offsets)
            return lambda: mod._expert_loop(a_, b_, ends, t)

        def loop(name):
            a_, b_, t = gemms[name]
            return lambda: mod._expert_loop(a_, b_, ends, t)

        def ours(name, tiling):
            a_, b_, t = gemms[name]

            def run():
                for n, v in zip(NAMES, tiling):
                    setattr(mod, n, v)
                try:
                    return mod._launch_grouped_mm(a_, b_, offsets, t)
                finally:
                    for n, v in zip(NAMES, shipped):
                        setattr(mod, n, v)

            return run

        case = f"{T},{K},{N},{E} {a.routing}"
        results[case] = {}
        for name in gemms:
            fns = {"torch": reference(name), "loop": loop(name)}
            fns.update({"x".join(map(str, tl)): ours(name, tl) for tl in tilings})
            want = fns["torch"]().float()
            errs = {k: float((f().float() - want).norm() / want.norm()) for k, f in fns.items()}
            per = {k: [] for k in fns}
            for r in range(rounds):
                for k in list(fns) if r % 2 == 0 else list(reversed(fns)):
                    if a.smoke:
                        per[k].append(1.0)
                    else:
                        from triton.testing import do_bench

                        per[k].append(do_bench(fns[k], warmup=5, rep=40))
            ms = {k: statistics.median(v) for k, v in per.items()}
            results[case][name] = {"ms": ms, "rel_err": errs}
            base = ms["torch"]
            cells = ", ".join(f"{k} {ms[k] / base:.3f}" for k in fns if k != "torch")
            print(
                f"{case} {name}: torch {base:.3f} ms; x torch: {cells}; max err {max(errs.values()):.1e}"
            )
            sys.stdout.flush()
    out = Path(os.environ.get("OUT", "build"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "grouped_gemm_tiles.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
