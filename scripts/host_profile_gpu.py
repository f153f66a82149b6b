"""Where a GLU training step's host time goes on a GPU host, per backward path: one autograd node,
two nodes, two nodes with split factor buffers (forced by the module's constants), the module
as shipped with a packed weight and (v0.26) with FusedGLU's two weight parts, and eager PyTorch.  Host µs per step as the bench measures it (codegen.bench.host_us: batches of 20 queued
steps, interleaved, medians; grads set to None each step, as zero_grad does), then a cProfile of
each of our paths over queued steps (top functions by own time, launches and cuBLAS included).

    PYTHONPATH=. python scripts/host_profile_gpu.py MODULE.py --shape M,K,N [...] [--profile]
"""

import argparse
import cProfile
import math
import pstats
import statistics

import torch

from codegen.bench import _eager_glu, fused_glu_call, host_us, load_module

PATHS = {  # name: module constants
    "shipped": {},
    "one node": {"LOW_PEAK_MIN_FLOP": math.inf, "TWO_NODES_MIN_FLOP": math.inf},
    "two nodes": {"LOW_PEAK_MIN_FLOP": 0, "SPLIT_FACTORS": False},
    "two nodes, split": {
        "LOW_PEAK_MIN_FLOP": 0,
        "SPLIT_MIN_SAVING": -1.0,
        "SPLIT_MAX_OVER_FLOOR": math.inf,
    },
}


def path_modules(module):
    """{path: a copy of the module with that path's constants} (PATHS)."""
    mods = {}
    for name, constants in PATHS.items():
        mod = load_module(module)
        for k, v in constants.items():
            setattr(mod, k, v)
        mods[name] = mod
    return mods


def path_steps(mods, M, K, N):
    """{path: step()} for each module copy and "eager" (PyTorch): a glu training step on
    [M, K] x [2N, K] with a fixed dy, the gradients freed after it (as zero_grad does)."""
    dt = next(iter(mods.values())).DTYPE
    x = torch.randn(M, K, device="cuda", dtype=dt, requires_grad=True)
    w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(dt).requires_grad_()
    wc = w.detach().clone().requires_grad_()
    dy = torch.randn(M, N, device="cuda", dtype=dt)
    eager_glu = _eager_glu(next(iter(mods.values())))

    def reset():
        x.grad = w.grad = wc.grad = None

    steps = {}
    for name, mod in mods.items():

        def step(mod=mod):
            mod.glu(x, w).backward(dy)
            reset()

        steps[name] = step

    def eager():
        eager_glu(x, wc).backward(dy)
        reset()

    shipped = mods["shipped"]
    if hasattr(shipped, "_weight_split"):  # v0.26: the weight as FusedGLU holds it
        glu_parts, (_, *parts) = fused_glu_call(shipped, w, x)

        def parts_step():
            glu_parts(x, *parts).backward(dy)
            reset()
            for p in parts:
                p.grad = None

        steps["shipped, FusedGLU's parts"] = parts_step
    steps["eager"] = eager
    return steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("module")
    ap.add_argument("--shape", action="append", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    mods = path_modules(args.module)
    first = next(iter(mods.values()))
    print(
        f"{torch.cuda.get_device_name()} torch {torch.__version__} triton {first.triton.__version__}"
    )
    for shape in args.shape:
        M, K, N = map(int, shape.split(","))
        steps = path_steps(mods, M, K, N)
        for step in steps.values():
            step()
        torch.cuda.synchronize()
        us = {k: [] for k in steps}
        for _ in range(args.rounds):
            for k, v in host_us(steps, n=20, rounds=7).items():
                us[k].append(v)
        print(f"{M}x{K}x{N}: host µs per step (median of {args.rounds} host_us medians; each)")
        for k in steps:
            print(
                f"  {k:20s} {statistics.median(us[k]):7.1f}  ({' '.join(f'{v:.0f}' for v in us[k])})"
            )
        if args.profile:
            for name in steps:
                prof = cProfile.Profile()
                for _ in range(15):
                    prof.enable()
                    for _ in range(20):
                        steps[name]()
                    prof.disable()
                    torch.cuda.synchronize()
                print(f"--- {M}x{K}x{N} {name}: cProfile of 300 queued steps, by own time")
                pstats.Stats(prof).sort_stats("tottime").print_stats(18)
        del steps
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
