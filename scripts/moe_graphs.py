"""What a CUDA graph buys a mixture-of-experts training step (GPU).

Since v0.25 grouped_glu can be captured: its offsets' host check is skipped while capturing, and
the kernels and torch._grouped_mm read the offsets on the GPU, so one graph of a step replays
any routing of the same T.  Per shape and routing this times, in interleaved rounds (medians,
ms per step from triton's do_bench: a host-bound step shows as the GPU waiting for it):

- ours, eager: grouped_glu fwd+bwd (check_offsets=False, as FusedGroupedGLU calls it);
- ours, graph: the same step captured once (grouped_glu's default check_offsets) and replayed;
- the torchtitan-style path (two torch._grouped_mm + the activation, autograd), eager and
  captured;

and the host µs to issue one eager step (codegen.bench.host_us).  Before timing, a replay with
another routing is checked against an eager step (out bit for bit, gradients within 1e-3).

    PYTHONPATH=. python scripts/moe_graphs.py MODULE.py [--shape T,K,N,E ...] [--rounds R]

(default: the SHAPES below whose N the module's CHUNK divides)

Results: $OUT/moe-graphs.json (or build/).  gpt-oss's activation (swiglu_oai) runs with biases.
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
    grouped_case,
    host_us,
    load_module,
    parse_shape,
    routing_sizes,
    write_results,
)
from codegen.bench_model import _rel  # noqa: E402

SHAPES = [
    (4096, 2048, 768, 128),  # Qwen3-30B-A3B's experts at 512 tokens (top-8)
    (16384, 2048, 768, 128),  # ... at 2048 tokens
    (65536, 2048, 768, 128),  # issue 10's E=128 shape
    (8192, 2880, 2880, 32),  # gpt-oss-20b's experts at 2048 tokens (top-4)
    (16384, 4096, 14336, 8),  # issue 10's E=8 shape (GPU-bound)
]


def measure(mod, shape, routing, rounds, log=print):
    T, K, N, E = shape
    c = grouped_case(mod, shape, routing)

    def step(forward, leaves):
        def run():
            for p in leaves:
                p.grad = None
            out = forward()
            out.backward(c.dy)
            return out

        return run

    ours_eager = step(c.ours, c.ours_leaves)
    ours_capture = step(lambda: c.ours(check_offsets=True), c.ours_leaves)  # grouped_glu's default
    titan_eager = step(c.titan, c.titan_leaves)
    graphs = {"ours": cuda_graph(ours_capture)}

    # another routing of the same T, replayed vs eager (the titan path's row-to-expert map is
    # the captured routing's: it is not checked here)
    other = routing_sizes(T, E, "skewed" if routing != "skewed" else "balanced")
    with torch.no_grad():
        c.offs.copy_(torch.tensor(other, device="cuda").cumsum(0).to(torch.int32))
    graphs["ours"].replay()
    torch.cuda.synchronize()
    replay_grads = [p.grad.clone() for p in c.ours_leaves]
    eager_leaves = [p.detach().clone().requires_grad_() for p in c.ours_leaves]
    out_e = mod.grouped_glu(eager_leaves[0], eager_leaves[1], c.offs, *eager_leaves[2:])
    out_e.backward(c.dy)
    errs = [_rel(got, t.grad) for got, t in zip(replay_grads, eager_leaves)]
    assert max(errs) < 1e-3, errs
    with torch.no_grad():
        c.offs.copy_(torch.tensor(c.sizes, device="cuda").cumsum(0).to(torch.int32))
    # (captured after the check: both steps share x's leaf, whose .grad the capture rebinds)
    graphs["titan"] = cuda_graph(titan_eager)

    steps = {
        "ours_eager": (ours_eager, None),
        "ours_graph": (graphs["ours"].replay, None),
        "titan_graph": (graphs["titan"].replay, None),
        "titan_eager": (titan_eager, None),
    }
    samples = _interleaved_samples(
        steps, lambda fn, _: do_bench(fn, warmup=10, rep=60, return_mode="median"), rounds
    )
    res = {"shape": list(shape), "routing": routing, "replay_grad_rel_err_max": max(errs)}
    for name, v in samples.items():
        res[f"{name}_ms"] = statistics.median(v)
        res[f"{name}_rounds"] = v
    res.update(
        {
            f"{k}_host_us": v
            for k, v in host_us({"ours_eager": ours_eager, "titan_eager": titan_eager}).items()
        }
    )
    log(
        f"{shape} {routing}: ms ours eager {res['ours_eager_ms']:.3f} / graph {res['ours_graph_ms']:.3f}; "
        f"titan eager {res['titan_eager_ms']:.3f} / graph {res['titan_graph_ms']:.3f}; host us ours "
        f"{res['ours_eager_host_us']:.0f} titan {res['titan_eager_host_us']:.0f}; replay err {max(errs):.1e}"
    )
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("module")
    ap.add_argument("--shape", action="append", type=parse_shape)
    ap.add_argument("--routing", action="append")
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    mod = load_module(args.module)
    results = []
    for shape in args.shape or [s for s in SHAPES if s[2] % mod.CHUNK == 0]:
        for routing in args.routing or ["balanced", "skewed"]:
            results.append(measure(mod, shape, routing, args.rounds))
            torch.cuda.empty_cache()
    print(write_results("moe-graphs.json", {"module": args.module, "results": results}))


if __name__ == "__main__":
    main()
