"""Which pieces of our GLU step's Python cost the host what, inside a network (GPU): the step
(glu with one packed weight, .grad accumulated) in module copies that each have one piece
knocked out (a check made a no-op, a rule pinned to its answer at this shape), timed as a
network's layers issue them (codegen.bench.host_net_us: each step after an attention block,
the copies in shuffled turns), against the whole step and host_gap's "minimal" path (the two
launches alone behind a bare Function).  Knock-outs are a measurement, not code to ship: each
removes something the module needs somewhere (a check, the memory release, a rule).

    [CYCLES=150] PYTHONPATH=. python scripts/host_knockouts.py [MODULE.py] [M,K,N ...]

Results: $OUT/host_knockouts.json (or build/).
"""

import os
import statistics
import sys

import torch

sys.path.insert(0, ".")
from codegen.bench import (  # noqa: E402
    glu_step_inputs,
    host_net_us,
    load_module,
    other_layers,
    paired_quartiles,
    script_args,
    write_results,
)

MODULE = "generated/glu_silu_bf16_bn128_sm90.py"
SHAPES = [(2048, 4096, 1408)]
CYCLES = int(os.environ.get("CYCLES", 150))


def _none(*args, **kwargs):
    return None


def knockouts():
    """{name: {module attribute: replacement}}: one piece of the step's Python each."""
    out = {
        "whole step": {},
        "no input checks": {"_check_inputs": _none},
        "no two-node rule (capture check)": {"_two_nodes": lambda *a, **k: False},
        "no dy release": {"_release": _none},
        "no buffer free": {"_free": _none},
        "no split rule": {"_split_point": lambda M, N, K, compiled=False, n_w=None: N},
        "no saved check": {"_saved": lambda ctx, *a, **k: ctx.saved_tensors},
        "no transforms check": {"_transforms_active": lambda: False},
        "no launch hooks check": {"_launch_hooks": lambda: (None, None)},
    }
    every = {}
    for patch in out.values():
        every.update(patch)
    out["all knock-outs"] = every
    return out


def main():
    mod, shapes = script_args(sys.argv[1:], MODULE, SHAPES)
    path = mod.__file__
    print(
        f"{torch.cuda.get_device_name()} torch {torch.__version__} triton {mod.triton.__version__}"
    )
    import host_gap

    res = {"module": mod.SPEC["name"], "cycles": CYCLES, "shapes": []}
    for M, K, N in shapes:
        x, gate_w, up_w, dy = glu_step_inputs(mod, M, K, N)
        packed = mod.pack_weight(gate_w, up_w).contiguous()
        steps = {}
        for name, patch in knockouts().items():
            m = load_module(path)  # its own globals, plans and compiled kernels
            for attr, value in patch.items():
                setattr(m, attr, value)
            w = packed.detach().clone().requires_grad_()
            steps[name] = lambda m=m, w=w: m.glu(x, w).backward(dy)
        minimal = host_gap.minimal_function(load_module(path)).apply
        w_min = packed.detach().clone().requires_grad_()
        steps["minimal (launches only)"] = lambda: minimal(x, w_min).backward(dy)
        got = host_net_us(steps, CYCLES, other_layers(dtype=mod.DTYPE))
        base = statistics.median(got["whole step"])
        print(f"{M}x{K}x{N}: host µs per step in a network; the piece's cost = whole - knock-out")
        row = {f"{k}_host_net_us_rounds": v for k, v in got.items()}
        for name, us in got.items():
            q = paired_quartiles(row, f"{name}_host_net_us", "whole step_host_net_us")
            print(
                f"  {name:34s} {statistics.median(us):7.1f}  saves {base - statistics.median(us):6.1f}"
                f"   x whole per cycle {q[0]:.3f} [{q[1]:.3f}, {q[2]:.3f}]"
            )
        res["shapes"].append({"shape": [M, K, N], "host_net_us": got})
    print("results:", write_results("host_knockouts.json", res))


if __name__ == "__main__":
    main()
