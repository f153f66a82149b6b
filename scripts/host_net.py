"""Host µs of a GLU training step, ours against eager (and Liger), with the implementations
issued as a network's layers issue them (codegen.bench.host_net_us: two layers of each, each
after a small attention block's forward and backward, the second timed, the implementations
in shuffled turns) and in the bench's batches (host_us_rounds), in the same process: the
per-cycle ratio over eager's, median [quartiles], and an A/A control ("ours again": the same
step under a second name, whose ratio to "ours" shows the method's own spread).

    [CYCLES=150] [PATHS=host_gap] PYTHONPATH=. python scripts/host_net.py [MODULE.py] [M,K,N ...]

PATHS=host_gap adds host_gap.py's paths (ours packed, minimal, bare, and where FusedGLU holds
two parts: ours with one buffer, bare parts with and without the split), .grad accumulated.

Results: $OUT/host_net.json (or build/).
"""

import os
import statistics
import sys

import torch

sys.path.insert(0, ".")
from codegen.bench import (  # noqa: E402
    _eager_glu,
    _liger,
    cuda_ms_per_call,
    fused_glu_call,
    glu_step_inputs,
    host_batch,
    host_net_us,
    host_us_rounds,
    other_layers,
    paired_quartiles,
    paired_ratio,
    script_args,
    write_results,
)

MODULE = "generated/glu_silu_bf16_bn128_sm90.py"
SHAPES = [(2048, 4096, 1408), (4096, 2048, 5632), (11136, 3584, 14336), (8192, 4096, 14336)]
CYCLES = int(os.environ.get("CYCLES", 150))


def steps_for(mod, M, K, N):
    """{name: a fwd+bwd step, gradients accumulated into .grad as the bench's}."""
    x, gate_w, up_w, dy = glu_step_inputs(mod, M, K, N)
    packed = mod.pack_weight(gate_w, up_w).contiguous()
    w_cat = torch.cat([up_w, gate_w]).contiguous().requires_grad_()
    ours, ours_inputs = fused_glu_call(mod, packed, x)
    calls = {"ours": (ours, ours_inputs), "eager": (_eager_glu(mod), (x, w_cat))}
    liger = _liger(mod.ACTIVATION)
    if liger is not None:
        calls["liger"] = (
            liger,
            (x, gate_w.clone().requires_grad_(), up_w.clone().requires_grad_()),
        )
    steps = {name: (lambda f=f, i=i: f(*i).backward(dy)) for name, (f, i) in calls.items()}
    steps["ours again"] = steps["ours"]
    if os.environ.get("PATHS") == "host_gap":
        import host_gap

        more = host_gap.steps_for(mod, M, K, N)
        steps.update({k: v for k, v in more.items() if k not in steps and "None" not in k})
    return steps


def main():
    mod, shapes = script_args(sys.argv[1:], MODULE, SHAPES)
    print(
        f"{torch.cuda.get_device_name()} torch {torch.__version__} triton {mod.triton.__version__}"
    )
    res = {"module": mod.SPEC["name"], "cycles": CYCLES, "shapes": []}
    for M, K, N in shapes:
        steps = steps_for(mod, M, K, N)
        step_ms = max(cuda_ms_per_call(s, 3) for s in steps.values())
        alt = host_net_us(steps, CYCLES, other_layers(dtype=mod.DTYPE))
        batch = host_us_rounds(steps, n=host_batch(step_ms), rounds=7)
        net_rows = {f"{k}_rounds": v for k, v in alt.items()}
        batch_rows = {f"{k}_rounds": v for k, v in batch.items()}
        print(f"{M}x{K}x{N}: host µs per step; x eager's (ours again: x ours), per cycle / round")
        print(f"  {'':12s} {'in network':>12s} {'median [q1, q3] x eager':>28s}   batches")
        for name in steps:
            base = "ours" if name == "ours again" else "eager"
            r = paired_quartiles(net_rows, name, base)
            b = paired_ratio(batch_rows, name, base)
            print(
                f"  {name:12s} {statistics.median(alt[name]):12.1f} "
                f"{r[0]:10.3f} [{r[1]:.3f}, {r[2]:.3f}]   {statistics.median(batch[name]):7.1f} "
                f"{b[0]:.3f} [{b[1]:.3f}, {b[2]:.3f}]"
            )
        res["shapes"].append(
            {"shape": [M, K, N], "step_ms": step_ms, "in_network": alt, "batches": batch}
        )
        del steps
        torch.cuda.empty_cache()
    print("results:", write_results("host_net.json", res))


if __name__ == "__main__":
    main()
