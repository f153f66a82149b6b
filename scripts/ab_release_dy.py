"""One autograd node that frees dy itself (v0.35's _release) against the module before it and
against the two-node path, at steps below TWO_NODES_MIN_FLOP (one node by default): the
in-network peak (dy made by the next node's backward: codegen.bench.in_network_step), host µs
per queued in-network step, and the step's ms (interleaved rounds, per-round ratios to the old
module), beside eager PyTorch's step.

    PYTHONPATH=. python scripts/ab_release_dy.py OLD.py NEW.py [--shape M,K,N ...] [--rounds 5]

Paths: old (one node, dy held through the GEMMs), new (one node, dy freed after the pass),
new_two_nodes (TWO_NODES_MIN_FLOP = LOW_PEAK_MIN_FLOP = 0 with SPLIT_FACTORS off: the two
nodes alone), eager."""

import argparse
import statistics

import torch
from triton.testing import do_bench

from codegen.bench import (
    _eager_glu,
    host_us,
    in_network_step,
    load_module,
    peak_mib,
    with_constants,
)

SHAPES = ["4096,2048,5632", "2048,4096,1408", "2048,1024,4096", "4000,2048,5632"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--shape", action="append")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    old, new = load_module(args.old), load_module(args.new)
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    two = dict(TWO_NODES_MIN_FLOP=0, LOW_PEAK_MIN_FLOP=0, SPLIT_FACTORS=False)
    for s in args.shape or SHAPES:
        M, K, N = (int(v) for v in s.split(","))
        torch.manual_seed(0)
        x = torch.randn(M, K, device="cuda", dtype=new.DTYPE).requires_grad_()
        w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(new.DTYPE).requires_grad_()
        dy = torch.randn(M, N, device="cuda", dtype=new.DTYPE)
        params = [x, w]

        def glu_of(mod, forced=None):
            return mod.glu if forced is None else with_constants(mod.glu, mod, **forced)

        forwards = {
            "old": glu_of(old),
            "new": glu_of(new),
            "new_two_nodes": glu_of(new, two),
            "eager": _eager_glu(new),  # (on the packed weight as is: the same work)
        }
        steps = {}
        for name, f in forwards.items():
            step = in_network_step(f, (x, w), dy)

            def clean(step=step):
                step()
                x.grad = w.grad = None

            steps[name] = clean
        peaks = {
            name: peak_mib(in_network_step(f, (x, w), dy), params) for name, f in forwards.items()
        }
        for name, f in forwards.items():  # second measurement: cuBLAS workspaces exist now
            peaks[name] = peak_mib(in_network_step(f, (x, w), dy), params)
        host = host_us(steps, rounds=max(7, args.rounds))
        ms = {k: [] for k in steps}
        for r in range(args.rounds):
            order = list(steps.items())
            for name, fn in order if r % 2 == 0 else order[::-1]:
                ms[name].append(do_bench(fn, warmup=5, rep=30, return_mode="median"))
        print(f"{M}x{K}x{N} (12MKN = {12 * M * K * N:.2e} FLOP)", flush=True)
        for name in steps:
            ratio = sorted(a / b for a, b in zip(ms[name], ms["old"]))
            print(
                f"  {name:14s} in-network peak {peaks[name]:8.1f} MiB  host {host[name]:7.1f} us  "
                f"step {statistics.median(ms[name]):7.3f} ms  x old {statistics.median(ratio):.3f} "
                f"[{ratio[0]:.3f}, {ratio[-1]:.3f}]",
                flush=True,
            )
        MN = M * N * 2 / 2**20
        print(f"  (dy = MN = {MN:.1f} MiB)", flush=True)


if __name__ == "__main__":
    main()
