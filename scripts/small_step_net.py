"""Host µs of the small-step path against the general path, in a network (bench.host_net_us:
two layers of each implementation, each after a small attention block's fwd+bwd, the second
timed, shuffled turns), with eager's step and an A/A control beside them.

For each shape, the weight as FusedGLU holds it (``fused_glu_call``: one packed Parameter, or
two parts from PARTS_MIN_WEIGHT on, split where the step's rules split them), through the
module with SMALL_STEP_PATH on ("small step") and off ("general"), the same module again
("small step again", the A/A), eager PyTorch, and the minimal path (host_gap's: our two
launches behind a bare Function, one packed weight).

    [CYCLES=150] [INFER=1] [BASE=OTHER.py] PYTHONPATH=. python scripts/small_step_net.py \
        [MODULE.py] [M,K,N ...]

BASE=OTHER.py adds another file's module ("base": e.g. the module before a change) the same way.

INFER=1 times forwards under torch.no_grad() instead (a generation step's layer): eager's,
ours (FusedGLU's weight), and the minimal forward (the output allocated and one launch of the
module's forward kernel without factors); "general" is then ours with SMALL_STEP_PATH off.

Results: $OUT/small_step_net.json (or build/).
"""

import os
import statistics
import sys

import torch

sys.path.insert(0, ".")
sys.path.insert(0, "scripts")
from codegen.bench import (  # noqa: E402
    _eager_glu,
    fused_glu_call,
    glu_step_inputs,
    host_net_us,
    load_module,
    other_layers,
    paired_quartiles,
    script_args,
    write_results,
)

MODULE = "generated/glu_silu_bf16_bn128_sm90.py"
SHAPES = [(2048, 4096, 1408), (2048, 2048, 5632), (4096, 2048, 5632), (8192, 4096, 14336)]
CYCLES = int(os.environ.get("CYCLES", 150))
INFER = os.environ.get("INFER") == "1"


def steps_for(path, M, K, N):
    """{name: a fwd+bwd step, .grad accumulated}, and what the FusedGLU weight was."""
    import host_gap

    ours = load_module(path)
    general = load_module(path)
    general.SMALL_STEP_PATH = False
    x, gate_w, up_w, dy = glu_step_inputs(ours, M, K, N)
    packed = ours.pack_weight(gate_w, up_w).contiguous()
    w_cat = torch.cat([up_w, gate_w]).contiguous().requires_grad_()
    calls = {"eager": (_eager_glu(ours), (x, w_cat))}
    mods = [("small step", ours), ("general", general), ("small step again", ours)]
    if os.environ.get("BASE"):
        mods.append(("base", load_module(os.environ["BASE"])))
    for name, mod in mods:
        calls[name] = fused_glu_call(mod, packed, x)  # (each its own weight)
    mini = host_gap.minimal_function(ours).apply
    calls["minimal (packed)"] = (mini, (x, packed.detach().clone().requires_grad_()))
    parts = len(calls["small step"][1]) == 3
    if INFER:
        calls["minimal (packed)"] = (_minimal_forward(ours), (x, packed))
        return {name: _no_grad(f, i) for name, (f, i) in calls.items()}, parts
    steps = {name: (lambda f=f, i=i: f(*i).backward(dy)) for name, (f, i) in calls.items()}
    return steps, parts


def _no_grad(f, inputs):
    def forward():
        with torch.no_grad():
            f(*inputs)

    return forward


def _minimal_forward(mod):
    """out = glu(x, weight) as one launch of the module's forward kernel, nothing checked."""

    def forward(x, weight):
        N = weight.shape[0] // 2
        out = x.new_empty((x.shape[0], N))
        mod._launch_forward(x, weight, None, out, out, out, N, mod.WRITE_NOTHING)
        return out

    return forward


def main():
    mod, shapes = script_args(sys.argv[1:], MODULE, SHAPES)
    print(
        f"{torch.cuda.get_device_name()} torch {torch.__version__} triton {mod.triton.__version__}"
    )
    res = {"module": mod.SPEC["name"], "cycles": CYCLES, "infer": INFER, "shapes": []}
    for M, K, N in shapes:
        steps, parts = steps_for(mod.__file__, M, K, N)
        got = host_net_us(steps, CYCLES, other_layers(dtype=mod.DTYPE))
        rows = {f"{k}_rounds": v for k, v in got.items()}
        weight = "two parts" if parts else "one packed"
        what = "forward under no_grad" if INFER else "step"
        print(f"{M}x{K}x{N} (FusedGLU's weight: {weight}): host µs per {what} in a network")
        for k, v in got.items():
            e = paired_quartiles(rows, k, "eager")
            g = paired_quartiles(rows, k, "general")
            print(
                f"  {k:18s} {statistics.median(v):7.1f}  x eager {e[0]:.3f} [{e[1]:.3f}, "
                f"{e[2]:.3f}]  x general {g[0]:.3f} [{g[1]:.3f}, {g[2]:.3f}]"
            )
        res["shapes"].append({"shape": [M, K, N], "parts": parts, "in_network": got})
        del steps
        torch.cuda.empty_cache()
    name = "small_step_net_infer.json" if INFER else "small_step_net.json"
    print("results:", write_results(name, res))


if __name__ == "__main__":
    main()
