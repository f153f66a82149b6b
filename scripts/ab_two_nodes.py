"""glu's backward as one autograd node (A) or two (B: the factor pass, then the GEMMs, so
that autograd frees dy in between), each with and without split factor buffers: fwd+bwd ms
(interleaved do_bench medians), host µs per step (codegen.bench.host_us), and the peak during
the step both ways the bench measures it: dy held by the caller (``out.backward(dy)``) and in a
network (codegen.bench.in_network_step: dy made by the next node, held by nothing else);
Liger and eager PyTorch beside them.

    PYTHONPATH=. python scripts/ab_two_nodes.py ONE_NODE.py TWO_NODES.py --shape M,K,N [...]
"""

import argparse
import statistics

import torch
from triton.testing import do_bench

from codegen.bench import _eager_glu, _liger, host_us, in_network_step, load_module, peak_mib


def with_split(mod, split):
    """glu with split factor buffers wherever the halves hold whole tiles and M > K, or one."""

    def f(x, w):
        over = getattr(mod, "SPLIT_MAX_OVER_FLOOR", None)  # (v0.21)
        saved = mod.SPLIT_FACTORS, mod.SPLIT_MIN_SAVING
        mod.SPLIT_FACTORS, mod.SPLIT_MIN_SAVING = split, -1.0
        mod.SPLIT_MAX_OVER_FLOOR = float("inf")
        try:
            return mod.glu(x, w)
        finally:
            mod.SPLIT_FACTORS, mod.SPLIT_MIN_SAVING = saved
            mod.SPLIT_MAX_OVER_FLOOR = over

    return f


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("one_node")
    ap.add_argument("two_nodes")
    ap.add_argument("--shape", action="append", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    one, two = load_module(args.one_node), load_module(args.two_nodes)
    for mod in (one, two):  # two nodes and the split at every size (SPLIT_MIN_FLOP: before v0.14)
        mod.SPLIT_MIN_FLOP = mod.LOW_PEAK_MIN_FLOP = 0
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    for text in args.shape:
        M, K, N = map(int, text.split(","))
        torch.manual_seed(0)
        x = torch.randn(M, K, device="cuda", dtype=two.DTYPE).requires_grad_()
        gate = (torch.randn(N, K, device="cuda") / K**0.5).to(two.DTYPE)
        up = (torch.randn(N, K, device="cuda") / K**0.5).to(two.DTYPE)
        w = two.pack_weight(gate, up).contiguous().requires_grad_()
        wg, wu = gate.clone().requires_grad_(), up.clone().requires_grad_()
        we = torch.cat([up, gate]).requires_grad_()
        dy = torch.randn(M, N, device="cuda", dtype=two.DTYPE)
        calls = {
            "1 node, split": (with_split(one, True), (x, w)),
            "1 node, one buffer": (with_split(one, False), (x, w)),
            "2 nodes, split": (with_split(two, True), (x, w)),
            "2 nodes, one buffer": (with_split(two, False), (x, w)),
            "eager": (_eager_glu(two), (x, we)),
        }
        liger = _liger(two.ACTIVATION)
        if liger is not None:
            calls["liger"] = (liger, (x, wg, wu))
        steps = {}
        for name, (f, ins) in calls.items():

            def step(f=f, ins=ins):
                f(*ins).backward(dy)

            steps[name] = (step, list(ins))
        ms = {k: [] for k in steps}
        for _ in range(args.rounds):
            for k, (step, ps) in steps.items():
                ms[k].append(
                    do_bench(step, warmup=10, rep=60, grad_to_none=ps, return_mode="median")
                )
        host = host_us({k: s for k, (s, _) in steps.items()})
        split_here = one._split_point(M, N, K) < N
        print(f"{M}x{K}x{N} (split point halves: {split_here})")
        print("  variant | fwd+bwd ms | host µs | peak MiB dy held / in a network")
        for k, (f, ins) in calls.items():
            held = peak_mib(steps[k][0], list(ins))
            net = peak_mib(in_network_step(f, ins, dy), list(ins))
            print(
                f"  {k} | {statistics.median(ms[k]):.3f} | {host[k]:.0f} | {held:.0f} / {net:.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
