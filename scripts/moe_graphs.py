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
    _torch_glu,
    host_us,
    load_module,
    parse_shape,
    routing_sizes,
    write_results,
)

SHAPES = [
    (4096, 2048, 768, 128),  # Qwen3-30B-A3B's experts at 512 tokens (top-8)
    (16384, 2048, 768, 128),  # ... at 2048 tokens
    (65536, 2048, 768, 128),  # issue 10's E=128 shape
    (8192, 2880, 2880, 32),  # gpt-oss-20b's experts at 2048 tokens (top-4)
    (16384, 4096, 14336, 8),  # issue 10's E=8 shape (GPU-bound)
]


def _captured(step, warm_up):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        warm_up()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph


def measure(mod, shape, routing, rounds, log=print):
    T, K, N, E = shape
    dev, dt = "cuda", mod.DTYPE
    bias = mod.ACTIVATION == "swiglu_oai"
    glu = _torch_glu(mod)
    torch.manual_seed(0)
    w1 = (torch.randn(E, N, K, device=dev) / K**0.5).to(dt)
    w3 = (torch.randn(E, N, K, device=dev) / K**0.5).to(dt)
    b1, b3 = ((torch.randn(E, N, device=dev) * 0.1).to(dt) for _ in range(2))
    packed_b = torch.stack([mod.pack_bias(b1[e], b3[e]) for e in range(E)]) if bias else None
    sizes = routing_sizes(T, E, routing)
    offs = torch.tensor(sizes, device=dev).cumsum(0).to(torch.int32)
    expert_of_row = torch.repeat_interleave(
        torch.arange(E, device=dev), torch.tensor(sizes, device=dev)
    )
    x = torch.randn(T, K, device=dev, dtype=dt)
    dy = torch.randn(T, N, device=dev, dtype=dt)
    xg = x.clone().requires_grad_()
    wg = mod.pack_grouped_weight(w1, w3).contiguous().requires_grad_()
    bg = packed_b.clone().requires_grad_() if bias else None
    w1g, w3g, b1g, b3g = (t.clone().requires_grad_() for t in (w1, w3, b1, b3))
    ours_leaves = [t for t in (xg, wg, bg) if t is not None]
    titan_leaves = [xg, w1g, w3g] + ([b1g, b3g] if bias else [])

    def titan_fwd():
        gate = torch._grouped_mm(xg, w1g.transpose(-2, -1), offs=offs)
        up = torch._grouped_mm(xg, w3g.transpose(-2, -1), offs=offs)
        if bias:
            gate, up = gate + b1g[expert_of_row], up + b3g[expert_of_row]
        return glu(up, gate)

    def step(forward, leaves):
        def run():
            for p in leaves:
                p.grad = None
            out = forward()
            out.backward(dy)
            return out

        return run

    ours_eager = step(lambda: mod.grouped_glu(xg, wg, offs, bg, check_offsets=False), ours_leaves)
    ours_capture = step(lambda: mod.grouped_glu(xg, wg, offs, bg), ours_leaves)
    titan_eager = step(titan_fwd, titan_leaves)
    graphs = {"ours": _captured(ours_capture, lambda: [ours_capture() for _ in range(3)])}

    # another routing of the same T, replayed vs eager (expert_of_row is the titan path's:
    # its check uses the captured routing only)
    other = routing_sizes(T, E, "skewed" if routing != "skewed" else "balanced")
    with torch.no_grad():
        offs.copy_(torch.tensor(other, device=dev).cumsum(0).to(torch.int32))
    graphs["ours"].replay()
    torch.cuda.synchronize()
    replay_grads = [p.grad.clone() for p in ours_leaves]
    xe, we = x.clone().requires_grad_(), wg.detach().clone().requires_grad_()
    be = bg.detach().clone().requires_grad_() if bias else None
    out_e = mod.grouped_glu(xe, we, offs, be)
    out_e.backward(dy)
    errs = []
    for got, ref in zip(replay_grads, [t.grad for t in (xe, we, be) if t is not None]):
        errs.append(
            ((got.float() - ref.float()).norm() / ref.float().norm().clamp_min(1e-30)).item()
        )
    assert max(errs) < 1e-3, errs
    with torch.no_grad():
        offs.copy_(torch.tensor(sizes, device=dev).cumsum(0).to(torch.int32))
    # (captured after the check: both steps share x's leaf, whose .grad the capture rebinds)
    graphs["titan"] = _captured(titan_eager, lambda: [titan_eager() for _ in range(3)])

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
