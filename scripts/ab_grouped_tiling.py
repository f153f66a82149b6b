"""A/B of two grouped modules' tilings on the grouped training step (fwd+bwd) and forward, with
the torchtitan-style path and the grouped floor's unit (one torch._grouped_mm of the fused
up-projection) timed in the same interleaved rounds; every other round reversed.  Checks that
both modules give the same out and gradients (their tilings only reorder fp32 sums).

    PYTHONPATH=. python scripts/ab_grouped_tiling.py OLD.py NEW.py [--shape T,K,N,E ...]
        [--routing R ...] [--rounds 6] [--smoke]

OLD.py / NEW.py: the same variant rendered with two tilings (e.g. `git show
HEAD~1:generated/X.py > build/ab/old_X.py`).  Default shapes: the bench's MoE shapes that the
modules' CHUNK divides.  Results: $OUT/ab_grouped_tiling.json (or build/), a table on stdout:
per case, ms medians and new / old per round (median [min, max]).  --smoke: tiny shapes on the
CPU under TRITON_INTERPRET=1 (CI runs it)."""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, ".")
from codegen.bench import (  # noqa: E402
    DEFAULT_GROUPED_SHAPES,
    ROUTINGS,
    grouped_case,
    load_module,
    parse_shape,
)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--shape", action="append", default=[])
    p.add_argument("--routing", action="append", default=[], choices=ROUTINGS)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--smoke", action="store_true")
    a = p.parse_args()
    if a.smoke:
        os.environ["TRITON_INTERPRET"] = "1"
        from tests.interpreter_patch import widen_bf16_dot

        widen_bf16_dot()
    import torch

    mods = {"old": load_module(Path(a.old)), "new": load_module(Path(a.new))}
    chunk = mods["old"].CHUNK
    if a.smoke:
        dev, shapes, rounds = "cpu", [(300, 64, 2 * chunk, 4)], 2
    else:
        dev, rounds = "cuda", a.rounds
        shapes = [parse_shape(s) for s in a.shape] or [
            s for s in DEFAULT_GROUPED_SHAPES if s[2] % chunk == 0
        ]
    routings = a.routing or list(ROUTINGS)

    def timer(fn):
        if dev == "cpu":
            t0 = time.perf_counter()
            fn()
            return (time.perf_counter() - t0) * 1e3
        from triton.testing import do_bench

        return do_bench(fn, warmup=10, rep=60, return_mode="median")

    results = {}
    for shape in shapes:
        for routing in routings:
            cases = {k: grouped_case(m, shape, routing, dev) for k, m in mods.items()}
            titan = cases["old"]
            x, offs = titan.x, titan.offs
            w_fused = torch.cat([titan.w3, titan.w1], 1)

            def step(c):
                def run():
                    c.ours().backward(c.dy)
                    for leaf in c.ours_leaves:
                        leaf.grad = None

                return run

            def titan_step():
                titan.titan().backward(titan.dy)
                for leaf in titan.titan_leaves:
                    leaf.grad = None

            def fwd(k):
                m, c = mods[k], cases[k]
                return lambda: m._grouped_forward(c.x, c.packed, c.offs, c.packed_b, True)

            steps = {
                "gmm": lambda: torch._grouped_mm(x, w_fused.transpose(-2, -1), offs=offs),
                "old_fwd": fwd("old"),
                "new_fwd": fwd("new"),
                "old_step": step(cases["old"]),
                "new_step": step(cases["new"]),
                "titan_step": titan_step,
            }
            if dev == "cpu":  # torch._grouped_mm has no CPU kernel here: its floor is not timed
                del steps["gmm"]
            samples = {k: [] for k in steps}
            for r in range(rounds):
                order = list(steps) if r % 2 == 0 else list(reversed(steps))
                for k in order:
                    samples[k].append(timer(steps[k]))
            # both tilings compute the same thing
            outs = {}
            for k, c in cases.items():
                out = c.ours()
                out.backward(c.dy)
                outs[k] = [out.detach().float()] + [leaf.grad.float() for leaf in c.ours_leaves]
                for leaf in c.ours_leaves:
                    leaf.grad = None
            err = max(
                ((o - n).norm() / n.norm().clamp_min(1e-30)).item()
                for o, n in zip(outs["old"], outs["new"])
            )
            row = {"ms": {k: statistics.median(v) for k, v in samples.items()}, "rel_err": err}
            for what in ("fwd", "step"):
                ratios = [n / o for n, o in zip(samples[f"new_{what}"], samples[f"old_{what}"])]
                row[f"new_over_old_{what}"] = [statistics.median(ratios), min(ratios), max(ratios)]
            ratios = [t / n for t, n in zip(samples["titan_step"], samples["new_step"])]
            row["titan_over_new_step"] = [statistics.median(ratios), min(ratios), max(ratios)]
            if "gmm" in samples:
                gmm = row["ms"]["gmm"]
                row["new_step_x_floor"] = row["ms"]["new_step"] / (3 * gmm)
                row["old_step_x_floor"] = row["ms"]["old_step"] / (3 * gmm)
                row["new_fwd_x_gmm"] = row["ms"]["new_fwd"] / gmm
                row["old_fwd_x_gmm"] = row["ms"]["old_fwd"] / gmm
            results[f"{','.join(map(str, shape))} {routing}"] = row
            print(f"{shape} {routing}: {json.dumps(row)}", flush=True)
            del cases, steps, samples, outs
            if dev == "cuda":
                torch.cuda.empty_cache()
    out_dir = Path(os.environ.get("OUT") or "build")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "ab_grouped_tiling.json").write_text(json.dumps(results, indent=1))

    def f(v):
        return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"

    print("| case | old / new step ms | new/old step | new/old fwd | titan/new step | err |")
    print("|---|---|---|---|---|---|")
    for k, row in results.items():
        ms = row["ms"]
        print(
            f"| {k} | {ms['old_step']:.3f} / {ms['new_step']:.3f} | "
            f"{f(row['new_over_old_step'])} | {f(row['new_over_old_fwd'])} | "
            f"{f(row['titan_over_new_step'])} | {row['rel_err']:.1e} |"
        )


if __name__ == "__main__":
    main()
