"""What is allocated at the peak of a training step (GPU): the CUDA caching allocator's trace
(torch.cuda.memory._record_memory_history) over one in-network step (codegen.bench's
in_network_step: dy made by the next node), ours (FusedGLU's two weight parts, as the bench)
and Liger's, then the blocks the step allocated that were alive at its peak, largest first, each
with the first frame of its Python stack in this repository (or the last one).

    PYTHONPATH=. python scripts/peak_snapshot.py [MODULE.py] [M,K,N ...]

E.g. v0.37's bench: 11136x3584x14336 in a network peaks at 914.5 MiB for ours, 913.5 for Liger
(3MN = 913.5): which 1 MiB?  Results: $OUT/peak_snapshot.json (or build/).
"""

import sys

import torch

sys.path.insert(0, ".")
from codegen.bench import (  # noqa: E402
    _liger,
    fused_glu_call,
    glu_step_inputs,
    in_network_step,
    script_args,
    write_results,
)

MODULE = "generated/glu_silu_bf16_bn128_sm90.py"
SHAPES = [(11136, 3584, 14336)]


def _where(frames):
    """The first frame in this repository's code, else the innermost one, as file:line name."""
    for f in frames:
        name = f.get("filename", "")
        if "/generated/" in name or "/codegen/" in name or "/scripts/" in name:
            return f"{name.rsplit('/', 2)[-2]}/{name.rsplit('/', 1)[-1]}:{f.get('line')} {f.get('name')}"
    if frames:
        f = frames[0]
        return f"{f.get('filename', '?').rsplit('/', 1)[-1]}:{f.get('line')} {f.get('name')}"
    return "?"


def live_at_peak(step):
    """(peak MiB above the step's start, [(MiB, where) of the blocks alive at the peak])."""
    step()  # warm: caches, workspaces, plans
    torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(stacks="python", max_entries=200000)
    try:
        step()
        torch.cuda.synchronize()
        snap = torch.cuda.memory._snapshot()
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)
    return peak_blocks(snap["device_traces"][torch.cuda.current_device()])


def peak_blocks(events):
    """(peak MiB, [(MiB, where) of the blocks alive at the peak], largest first) from a
    device trace: allocations and completed frees in order; frees of blocks allocated before
    the trace began are not counted (the step's own allocations only)."""
    live, total, peak, at_peak = {}, 0, 0, {}
    for e in events:
        if e["action"] == "alloc":
            live[e["addr"]] = (e["size"], _where(e.get("frames", [])))
            total += e["size"]
            if total > peak:
                peak, at_peak = total, dict(live)
        elif e["action"] == "free_completed" and e["addr"] in live:
            total -= live.pop(e["addr"])[0]
    blocks = sorted(((s / 2**20, w) for s, w in at_peak.values()), reverse=True)
    return peak / 2**20, blocks


def main():
    mod, shapes = script_args(sys.argv[1:], MODULE, SHAPES)
    liger = _liger(mod.ACTIVATION)
    res = {}
    for M, K, N in shapes:
        x, gate_w, up_w, dy = glu_step_inputs(mod, M, K, N)
        glu_parts, inputs = fused_glu_call(mod, mod.pack_weight(gate_w, up_w), x)
        calls = {"ours": (glu_parts, inputs)}
        if liger is not None:
            calls["liger"] = (liger, (x, gate_w.requires_grad_(), up_w.requires_grad_()))
        row = {}
        for name, (fn, args_) in calls.items():
            net = in_network_step(fn, args_, dy)

            def step(net=net, args_=args_):
                net()
                for t in args_:
                    t.grad = None

            peak, blocks = live_at_peak(step)
            row[name] = {"peak_mib": peak, "live_at_peak": blocks}
            print(f"{M}x{K}x{N} {name}: peak {peak:.3f} MiB above the step's start; alive then:")
            for mib, where in blocks[:12]:
                print(f"    {mib:10.3f} MiB  {where}")
        res[f"{M}x{K}x{N}"] = row
        del x, gate_w, up_w, dy, calls, inputs
        torch.cuda.empty_cache()
    write_results("peak_snapshot.json", res)


if __name__ == "__main__":
    main()
