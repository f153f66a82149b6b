"""Whole MoE experts layers (router output in, the k rows of each token summed out), trained
step by step: FusedExperts as shipped (grouped_glu's backward and the down projection's backward
as one dense GEMM per expert where the experts are big), FusedExperts with the down projection
through torch._grouped_mm's autograd (v0.28: only grouped_glu loops), FusedExperts with no loop
at all (LOOP_MIN_EXPERT_FLOP = inf), and a torchtitan-style experts layer (w1 / w3 / w2 through
torch._grouped_mm, silu(h1) * h3, autograd), the same routing and weights.

    PYTHONPATH=. python scripts/moe_experts_loop.py generated/glu_silu_bf16_bn128_sm90_grouped.py
        [--shape T,D,F,E,k ...] [--layers 2] [--rounds 6] [--steps 4] [--smoke]

Prints per shape the rule's decisions, then per variant the wall ms per step (a sync after each
batch of steps), its ratio to the shipped FusedExperts per round (median [min, max]), and the
host µs to queue one step.  The outputs and gradients of the variants are compared once.
--smoke: a tiny shape on the CPU under TRITON_INTERPRET=1 (no loop there: a check that the
script runs, not a measurement); results also in $OUT/moe_experts_loop.json (or build/).
"""

import argparse
import os
import statistics
import sys

SMOKE = "--smoke" in sys.argv
if SMOKE:
    os.environ["TRITON_INTERPRET"] = "1"  # before the module's kernels are decorated

import torch  # noqa: E402

sys.path.insert(0, ".")
sys.path.insert(0, "tests")
from codegen.bench import load_module, queued_rounds, write_results  # noqa: E402

DEVICE = "cpu" if SMOKE else "cuda"


def _sync():
    if not SMOKE:
        _sync()


def _top_k(T, E, k, gen):
    logits = torch.randn(T, E, generator=gen)
    weights, index = torch.topk(torch.softmax(logits, dim=-1), k, dim=-1)
    return index.to(DEVICE), weights.to(DEVICE)


def _titan(hidden, index, weights, w1, w3, w2):
    """torchtitan's GroupedExperts with transformers' token permutation around it."""
    T, k = index.shape
    expert_ids, perm = torch.sort(index.reshape(-1))
    x = hidden[perm // k]
    ids = expert_ids.int() if expert_ids.is_cuda else expert_ids.float()  # (histc's CPU kernel)
    counts = torch.histc(ids, bins=w1.shape[0], min=0, max=w1.shape[0] - 1)
    offs = torch.cumsum(counts, dim=0, dtype=torch.int32)
    h = torch.nn.functional.silu(torch._grouped_mm(x, w1.transpose(1, 2), offs=offs))
    h = h * torch._grouped_mm(x, w3.transpose(1, 2), offs=offs)
    out = torch._grouped_mm(h, w2.transpose(1, 2), offs=offs)
    out = out * weights.reshape(-1)[perm].unsqueeze(-1)
    inverse = torch.empty_like(perm)
    inverse[perm] = torch.arange(perm.numel(), device=perm.device)
    return out[inverse].view(T, k, -1).sum(dim=1)


def run_shape(mod, T, D, F, E, k, args):
    gen = torch.Generator().manual_seed(0)
    layers = [mod.FusedExperts(E, D, F, device=DEVICE, dtype=mod.DTYPE) for _ in range(args.layers)]
    titan = []
    for layer in layers:
        gate, up = mod.unpack_grouped_weight(layer.weight.detach())
        titan.append([t.clone().requires_grad_() for t in (gate, up, layer.down_weight.detach())])
    hidden = torch.randn(T, D, generator=gen).to(DEVICE, mod.DTYPE).requires_grad_()
    routes = [(i, w.to(mod.DTYPE)) for i, w in (_top_k(T, E, k, gen) for _ in layers)]
    shipped_least, shipped_down = mod.LOOP_MIN_EXPERT_FLOP, mod._grouped_linear

    def plain_down(y, down, offsets):
        return mod._grouped_mm(y, down.transpose(1, 2), offsets)

    def configure(variant):
        mod.LOOP_MIN_EXPERT_FLOP = float("inf") if variant == "fused, no loop" else shipped_least
        mod._grouped_linear = (
            plain_down if variant == "fused, up loop only (v0.28)" else shipped_down
        )

    def forward(variant):
        h = hidden
        for i, layer in enumerate(layers):
            index, weights = routes[i]
            if variant == "torchtitan-style":
                h = h + _titan(h, index, weights, *titan[i])
            else:
                h = h + layer(h, index, weights)
        return h

    def step(variant):
        forward(variant).float().square().mean().backward()

    def grads(variant):
        params = [hidden]
        if variant == "torchtitan-style":
            params += [t for ts in titan for t in ts]
            return [p.grad for p in params]
        out = [hidden.grad]
        for layer in layers:
            g, u = mod.unpack_grouped_weight(layer.weight.grad)
            out += [g, u, layer.down_weight.grad]
        return out

    def zero():
        hidden.grad = None
        for layer in layers:
            layer.zero_grad(set_to_none=True)
        for ts in titan:
            for t in ts:
                t.grad = None

    variants = [
        "fused, shipped",
        "fused, up loop only (v0.28)",
        "fused, no loop",
        "torchtitan-style",
    ]
    S = T * k
    print(
        f"T,D,F,E,k = {T},{D},{F},{E},{k}: {args.layers} layers, S = {S} rows; rule loops: "
        f"up {mod._loop_over_experts(S, D, F, E, hidden.device)}, "
        f"down {mod._loop_pays(2 * S * F * D, E, hidden.device)}",
        flush=True,
    )
    row = {"loops": {"up": mod._loop_over_experts(S, D, F, E, hidden.device)}, "errs": {}}
    row["loops"]["down"] = mod._loop_pays(2 * S * F * D, E, hidden.device)
    ref = None
    for v in variants:  # warm-up, and the results compared once
        configure(v)
        zero()
        step(v)
        got = [g.float() for g in grads(v)]
        if ref is None:
            ref = got
        else:
            errs = [((a - b).norm() / b.norm()).item() for a, b in zip(got, ref)]
            row["errs"][v] = max(errs)
            print(f"  {v:30s} gradients vs shipped: max rel err {max(errs):.2e}")
        zero()
        step(v)
        zero()
    _sync()
    steps = {v: (lambda v=v: (step(v), zero())) for v in variants}
    wall, host = queued_rounds(steps, args.rounds, args.steps, setup=configure, sync=_sync)
    configure("fused, shipped")
    base = wall["fused, shipped"]
    row["ms"] = {v: statistics.median(wall[v]) for v in variants}
    row["host_us"] = {v: statistics.median(host[v]) for v in variants}
    row["x_shipped"] = {}
    for v in variants:
        ratios = [a / b for a, b in zip(wall[v], base)]
        row["x_shipped"][v] = (statistics.median(ratios), min(ratios), max(ratios))
        print(
            f"  {v:30s} {statistics.median(wall[v]):8.3f} ms/step "
            f"(x shipped per round {statistics.median(ratios):.3f} "
            f"[{min(ratios):.3f}, {max(ratios):.3f}])  host {statistics.median(host[v]):8.0f} us/step queued",
            flush=True,
        )
    del layers, titan
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("module", nargs="?", default="generated/glu_silu_bf16_bn128_sm90_grouped.py")
    ap.add_argument(
        "--shape",
        action="append",
        help="T,D,F,E,k (tokens, hidden size, expert intermediate size, experts, experts per token)",
    )
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    mod = load_module(args.module)
    if SMOKE:
        from interpreter_patch import widen_bf16_dot

        widen_bf16_dot()
        shapes = [f"24,32,{2 * mod.CHUNK},4,2"]
        args.layers, args.rounds, args.steps = 1, 2, 1
    else:
        shapes = args.shape or [
            "8192,4096,14336,8,2",
            "8192,6144,10752,16,4",
            "8192,2048,768,128,8",
        ]
    print("CPU (smoke)" if SMOKE else torch.cuda.get_device_name(), torch.__version__, flush=True)
    res = {}
    for text in shapes:
        res[text] = run_shape(mod, *(int(v) for v in text.split(",")), args)
        if not SMOKE:
            torch.cuda.empty_cache()
    write_results("moe_experts_loop.json", res)


if __name__ == "__main__":
    main()
