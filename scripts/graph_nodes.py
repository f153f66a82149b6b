"""Captured steps take glu's two autograd nodes (v0.25): the in-network peak and the replay time
against the one-node rule before it (GPU).

A FusedGLU + down-projection MLP step (dz held by the caller; glu's dy made by the down
projection's backward inside the graph) is captured with torch.cuda.graph under each rule; the
peak is the capture's own (memory allocated during it, beyond what was allocated before; the
eager warm-up steps run before the measurement), the time that of graph.replay() (do_bench,
interleaved rounds, medians).  Prediction: the peak falls by [M, N] (dy) where the GEMMs' phase
sets it, and the replay time is the same (the same kernels; the second node is host work).

    PYTHONPATH=. python scripts/graph_nodes.py MODULE.py [--shape M,K,N ...] [--rounds R]

Results: $OUT/graph-nodes.json (or build/).
"""

import argparse
import statistics
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import (  # noqa: E402
    _interleaved_samples,
    cuda_graph,
    load_module,
    parse_shape,
    write_results,
)

SHAPES = [(4096, 2048, 5632), (3000, 2048, 8192), (4096, 2048, 8192), (2048, 4096, 1408)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("module")
    ap.add_argument("--shape", action="append", type=parse_shape)
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args()
    mod = load_module(args.module)
    new_rule = mod._two_nodes
    results = []
    for M, K, N in args.shape or SHAPES:
        torch.manual_seed(0)
        x = torch.randn(M, K, device="cuda", dtype=mod.DTYPE).requires_grad_()
        weight = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(mod.DTYPE).requires_grad_()
        down = torch.nn.Linear(N, K, bias=False, device="cuda", dtype=mod.DTYPE)
        dz = torch.randn(M, K, device="cuda", dtype=mod.DTYPE)
        leaves = (x, weight, down.weight)

        def step():
            down(mod.glu(x, weight)).backward(dz)

        def clear():
            for t in leaves:
                t.grad = None

        def warm_up():
            for _ in range(3):
                step()
                clear()

        graphs, peaks = {}, {}
        for name, rule in (
            ("two nodes (v0.25)", new_rule),
            ("one node (before)", lambda M, K, N: False),
        ):
            mod._two_nodes = rule
            cuda_graph(step, warm_up)
            clear()
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            graphs[name] = cuda_graph(step, lambda: None)
            torch.cuda.synchronize()
            peaks[name] = (torch.cuda.max_memory_allocated() - base) / 2**20
            clear()
        mod._two_nodes = new_rule
        steps = {name: (g.replay, None) for name, g in graphs.items()}
        t = lambda fn, _: do_bench(fn, warmup=10, rep=60, return_mode="median")  # noqa: E731
        samples = _interleaved_samples(steps, t, args.rounds)
        ms = {k: statistics.median(v) for k, v in samples.items()}
        ratios = [a / b for a, b in zip(*samples.values())]
        res = {"shape": [M, K, N], "peak_mib": peaks, "replay_ms": ms, "rounds": samples}
        res["dy_mib"] = M * N * 2 / 2**20
        results.append(res)
        print(
            f"{M}x{K}x{N}: captured peak MiB {peaks} (dy {res['dy_mib']:.1f}); replay ms {ms}; "
            f"two / one per round {statistics.median(ratios):.3f} [{min(ratios):.3f}, {max(ratios):.3f}]",
            flush=True,
        )
        del graphs, steps
        torch.cuda.empty_cache()
    print(write_results("graph-nodes.json", {"module": args.module, "results": results}))


if __name__ == "__main__":
    main()
