"""A stack of MoE layers (grouped_glu up-projection + torch._grouped_mm down-projection, the
routing shared) trained step by step, with the up-projection's backward GEMMs as
torch._grouped_mm, as a per-expert loop that reads the offsets with a sync in the backward, and as
the loop with the offsets copied to the host by the forward (v0.28's shipped path).

    PYTHONPATH=. python scripts/moe_layers_sync.py generated/glu_silu_bf16_bn128_sm90_grouped.py
        [--shape T,K,N,E] [--layers 4] [--routing ragged] [--rounds 6] [--steps 4]

Prints, per variant, the wall ms per step (a sync after each batch of steps) and the host µs to
queue one step (time to return from the batch's last backward, before the sync): a sync inside
the backward makes the host wait for the GPU, so the host cannot run ahead of it.
"""

import statistics

import torch

from codegen.bench import load_module, queued_rounds, routing_sizes


def main():
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("module")
    ap.add_argument("--shape", default="16384,4096,14336,8")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--routing", default="ragged")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--steps", type=int, default=4)
    args = ap.parse_args()
    mod = load_module(args.module)
    T, K, N, E = (int(v) for v in args.shape.split(","))
    torch.manual_seed(0)
    offs = torch.tensor(routing_sizes(T, E, args.routing), device="cuda").cumsum(0).to(torch.int32)
    ups = [
        ((torch.randn(E, 2 * N, K, device="cuda") / K**0.5).to(mod.DTYPE)).requires_grad_()
        for _ in range(args.layers)
    ]
    downs = [
        ((torch.randn(E, K, N, device="cuda") / N**0.5).to(mod.DTYPE)).requires_grad_()
        for _ in range(args.layers)
    ]
    x0 = torch.randn(T, K, device="cuda", dtype=mod.DTYPE).requires_grad_()
    shipped_least, shipped_copy = mod.LOOP_MIN_EXPERT_FLOP, mod._HostEnds.for_backward

    def configure(variant):
        mod.LOOP_MIN_EXPERT_FLOP = float("inf") if variant == "grouped_mm" else shipped_least
        mod._HostEnds.for_backward = (
            classmethod(lambda cls, *a: None)
            if variant == "loop, sync in backward"
            else shipped_copy
        )

    def step():
        h = x0
        for up, down in zip(ups, downs):
            y = mod.grouped_glu(h, up, offs, check_offsets=False)
            h = h + torch._grouped_mm(y, down.transpose(1, 2), offs=offs)
        h.float().square().mean().backward()
        for p in (x0, *ups, *downs):
            p.grad = None

    variants = ["grouped_mm", "loop, sync in backward", "loop, forward copies the offsets"]
    print(torch.cuda.get_device_name(), torch.__version__, f"T,K,N,E = {T},{K},{N},{E}", flush=True)
    print(
        f"{args.layers} layers, {args.routing} routing, rule loops: "
        f"{mod._loop_over_experts(T, K, N, E, x0.device)}"
    )
    for v in variants:  # warm-up (compiles, allocator, cuBLAS heuristics)
        configure(v)
        step()
        step()
    torch.cuda.synchronize()
    wall, host = queued_rounds(
        {v: step for v in variants}, args.rounds, args.steps, setup=configure
    )
    configure("loop, forward copies the offsets")
    base = wall["grouped_mm"]
    for v in variants:
        ratios = [a / b for a, b in zip(wall[v], base)]
        print(
            f"  {v:34s} {statistics.median(wall[v]):8.3f} ms/step "
            f"(x grouped_mm per round {statistics.median(ratios):.3f} "
            f"[{min(ratios):.3f}, {max(ratios):.3f}])  host {statistics.median(host[v]):9.0f} us/step "
            f"queued",
            flush=True,
        )


if __name__ == "__main__":
    main()
