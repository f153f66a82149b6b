"""Big steps as one autograd node that frees dy itself (v0.36) against the module before it, whose
big steps (>= TWO_NODES_MIN_FLOP / LOW_PEAK_MIN_FLOP) ran glu's backward as two nodes: the
in-network peak (dy made by the next node's backward: codegen.bench.in_network_step), host µs
per queued in-network step, and the step's ms (interleaved rounds, per-round ratios to the old
module), with the packed weight and with FusedGLU's two parts (bench.fused_glu_call), beside
eager PyTorch's step.  Also a caller-held dy (out.backward(dy): never freed), whose peak must not
move.

    PYTHONPATH=. python scripts/ab_big_one_node.py OLD.py NEW.py [--shape M,K,N ...] [--rounds 5]

Paths: old / new (packed weight), old_parts / new_parts, new_two_nodes (RELEASE_DY off: the rule
before v0.36), eager."""

import argparse
import statistics

import torch
from triton.testing import do_bench

from codegen.bench import (
    _eager_glu,
    fused_glu_call,
    host_us,
    in_network_step,
    load_module,
    peak_mib,
    with_constants,
)

SHAPES = ["8192,4096,14336", "11136,3584,14336", "16384,8192,28672", "6144,5120,13824"]


def _nodes(f, inputs):
    """1 or 2: the autograd nodes of glu's backward in this step."""
    out = f(*inputs)
    name = type(out.grad_fn).__name__
    return 2 if name == "_GLUActFunctionBackward" else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--shape", action="append")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    old, new = load_module(args.old), load_module(args.new)
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    for s in args.shape or SHAPES:
        M, K, N = (int(v) for v in s.split(","))
        torch.manual_seed(0)
        x = torch.randn(M, K, device="cuda", dtype=new.DTYPE).requires_grad_()
        w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(new.DTYPE).requires_grad_()
        dy = torch.randn(M, N, device="cuda", dtype=new.DTYPE)
        calls = {
            "old": (old.glu, (x, w)),
            "new": (new.glu, (x, w)),
            "old_parts": fused_glu_call(old, w, x),
            "new_parts": fused_glu_call(new, w, x),
            "new_two_nodes": (with_constants(new.glu, new, RELEASE_DY=False), (x, w)),
            "eager": (_eager_glu(new), (x, w)),
        }
        steps, peaks, caller_peaks, nodes = {}, {}, {}, {}
        for name, (f, inputs) in calls.items():
            params = [t for t in inputs if t.requires_grad]
            step = in_network_step(f, inputs, dy)

            def clean(step=step, params=params):
                step()
                for p in params:
                    p.grad = None

            def caller(f=f, inputs=inputs):
                f(*inputs).backward(dy)

            steps[name] = clean
            peak_mib(step, params)  # (the first creates cuBLAS's workspaces)
            peaks[name] = peak_mib(step, params)
            caller_peaks[name] = peak_mib(caller, params)
            nodes[name] = "-" if name == "eager" else _nodes(f, inputs)
            torch.cuda.synchronize()
        host = host_us(steps, n=10 if 12 * M * K * N > 5e12 else 20, rounds=max(7, args.rounds))
        ms = {k: [] for k in steps}
        for r in range(args.rounds):
            order = list(steps.items())
            for name, fn in order if r % 2 == 0 else order[::-1]:
                ms[name].append(do_bench(fn, warmup=3, rep=100, return_mode="median"))
        print(
            f"{M}x{K}x{N} (12MKN = {12 * M * K * N:.2e} FLOP; dy = MN = {M * N * 2 / 2**20:.1f} MiB)"
        )
        for name in steps:
            base = "old_parts" if name.endswith("parts") else "old"
            ratio = sorted(a / b for a, b in zip(ms[name], ms[base]))
            print(
                f"  {name:14s} nodes {nodes[name]}  in-network peak {peaks[name]:8.1f} MiB  "
                f"caller's dy {caller_peaks[name]:8.1f} MiB  host {host[name]:7.1f} us  "
                f"step {statistics.median(ms[name]):8.3f} ms  x {base} {statistics.median(ratio):.3f} "
                f"[{ratio[0]:.3f}, {ratio[-1]:.3f}]",
                flush=True,
            )


if __name__ == "__main__":
    main()
