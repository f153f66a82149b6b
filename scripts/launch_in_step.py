"""What one launch costs the host inside a training step, against what it costs in a loop (GPU).

v0.45's host_gap: our step's two Triton launches, through their launch plans, cost ~95-133 µs
of host time inside a step (its "minimal" path minus "bare") where host_call_costs, calling
each in a loop, prices them at 19 + 11 µs (the C launchers alone 7 + 7).  Here each candidate
call X runs once in the forward pass of a bare autograd.Function step, just before host_gap's
Bare (two allocations, the backward's two GEMMs, the leaves' gradient adds), and the step's host
µs is compared with the bare step's in the same rounds (bench.host_us_rounds: batches of queued
steps, every other round reversed; medians of the per-round differences).  The same X is also
timed in a loop.  The candidates: our forward and factor-pass launches through their plans,
each plan's C launcher alone (no Python of ours), a cuBLAS GEMM, an eager elementwise op, and
pairs of them.  The extra calls run on small persistent buffers (512 x 256 -> 2 x 256), so they
add ~nothing to the GPU's queue.

    [ROUNDS=11] PYTHONPATH=. python scripts/launch_in_step.py [MODULE.py] [M,K,N]

Results: $OUT/launch_in_step.json (or build/).
"""

import os
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, ".")
from codegen.bench import (  # noqa: E402
    glu_step_inputs,
    host_us_rounds,
    script_args,
    write_results,
)

import host_gap  # noqa: E402  (scripts/, beside this one)

MODULE = "generated/glu_silu_bf16_bn128_sm90.py"
SHAPES = [(2048, 4096, 1408)]
ROUNDS = int(os.environ.get("ROUNDS", 11))
BATCH, LOOP = 20, 200


def extras(mod):
    """{name: a call} on small persistent buffers, each plan recorded first."""
    dev, dt = "cuda", mod.DTYPE
    M, K, N = 512, 256, 2 * mod.CHUNK * getattr(mod, "TILE_CHUNKS", 1)
    a = torch.randn(M, K, device=dev, dtype=dt)
    w = torch.randn(2 * N, K, device=dev, dtype=dt)
    out = torch.empty(M, N, device=dev, dtype=dt)
    fa = torch.empty(M, 2 * N, device=dev, dtype=dt)
    g = torch.randn(M, N, device=dev, dtype=dt)
    bt = torch.randn(K, 2 * N, device=dev, dtype=dt)
    for _ in range(2):  # the first compiles (Triton's JIT launch), the second records the plan
        mod._launch_forward(a, w, None, out, fa, fa, N, mod.WRITE_FACTORS)
        mod._launch_backward(g, fa, None, N)
    stream = torch.cuda.current_stream().cuda_stream
    plans = {k[0]: v for k, v in mod._PLANS.items() if k[0] in ("forward", "backward")}

    def alone(kind):
        launcher, grid, tail = plans[kind]
        return lambda: launcher(*grid, stream, *tail)

    fwd_c, pass_c = alone("forward"), alone("backward")
    calls = {
        "forward launch (plan)": lambda: mod._launch_forward(
            a, w, None, out, fa, fa, N, mod.WRITE_FACTORS
        ),
        "factor pass launch (plan)": lambda: mod._launch_backward(g, fa, None, N),
        "forward: C launcher alone": fwd_c,
        "factor pass: C launcher alone": pass_c,
        "torch.mm (cuBLAS)": lambda: torch.mm(a, bt),
        "F.silu": lambda: F.silu(g),
    }
    calls["forward C launcher x2"] = lambda: (fwd_c(), fwd_c())
    calls["torch.mm + forward C launcher"] = lambda: (torch.mm(a, bt), fwd_c())
    return calls


def bare_with(extra):
    """host_gap's Bare step with ``extra()`` called in its forward pass (None: the bare step)."""
    if extra is None:
        return host_gap.Bare.apply

    def step(x, weight):
        extra()
        return host_gap.Bare.apply(x, weight)

    return step


def main():
    mod, shapes = script_args(sys.argv[1:], MODULE, SHAPES)
    print(
        f"{torch.cuda.get_device_name()} torch {torch.__version__} triton {mod.triton.__version__}"
    )
    calls = extras(mod)
    loop = host_us_rounds(calls, n=LOOP, rounds=ROUNDS)
    res = {"module": mod.SPEC["name"], "rounds": ROUNDS, "loop_us": loop, "shapes": []}
    for M, K, N in shapes:
        x, gate_w, up_w, dy = glu_step_inputs(mod, M, K, N)
        w = mod.pack_weight(gate_w, up_w).contiguous().requires_grad_()
        steps = {}
        for name, extra in {"bare": None, **calls}.items():
            f = bare_with(extra)
            steps[name] = lambda f=f: f(x, w).backward(dy)
        got = host_us_rounds(steps, n=BATCH, rounds=ROUNDS)
        print(f"{M}x{K}x{N}: host µs the call adds to a bare step / the call in a loop (medians)")
        print(f"  bare step {statistics.median(got['bare']):7.1f} µs")
        for name in calls:
            added = [s - b for s, b in zip(got[name], got["bare"])]
            print(
                f"  {name:32s} {statistics.median(added):7.1f} [{min(added):6.1f}, "
                f"{max(added):6.1f}]   loop {statistics.median(loop[name]):6.1f}"
            )
        res["shapes"].append({"shape": [M, K, N], "step_us": got})
    print("results:", write_results("launch_in_step.json", res))


if __name__ == "__main__":
    main()
