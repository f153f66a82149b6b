"""The grouped backward's GEMMs as torch._grouped_mm against a loop of dense cuBLAS GEMMs, one per
expert (the offsets on the host: one sync), each timed alone, and the whole grouped step with
either (interleaved rounds, every other reversed, medians of do_bench medians).

    PYTHONPATH=. python scripts/moe_gemm_loop.py generated/glu_silu_bf16_bn128_sm90_grouped.py
        [--shape T,K,N,E ...] [--routing balanced,skewed,ragged] [--rounds 4]

Question (issue 10): at E=8 the weight gradient's grouped GEMM (a reduction over each expert's
rows) ran 1.09-1.14x the forward-shaped one (perf log v0.13/v0.14); is a dense cuBLAS GEMM per
expert faster there, and from how many rows per expert?  Prints each piece's ms and x gmm (the
forward-shaped grouped GEMM), and the module's step with its backward GEMMs as torch._grouped_mm
and as the loop (LOOP_MIN_EXPERT_FLOP = inf / 0; v0.28's modules).
"""

import statistics

import torch
from triton.testing import do_bench

from codegen.bench import load_module, routing_sizes

SHAPES = [
    (16384, 4096, 14336, 8),
    (8192, 4096, 14336, 8),
    (16384, 2048, 5632, 16),
    (32768, 2880, 2880, 32),
    (65536, 2048, 768, 128),
]


def main():
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("module")
    ap.add_argument("--shape", action="append")
    ap.add_argument("--routing", default="balanced,skewed,ragged")
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    mod = load_module(args.module)
    shapes = [tuple(int(v) for v in s.split(",")) for s in args.shape] if args.shape else SHAPES
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    shipped = mod._grouped_mm

    def loop_mm(a, b, offsets, transpose_a=False):  # the module's loop, offsets read now (a sync)
        return shipped(a, b, offsets, transpose_a=transpose_a, ends=offsets.tolist())

    shipped_least = getattr(mod, "LOOP_MIN_EXPERT_FLOP", float("inf"))
    for T, K, N, E in shapes:
        for routing in args.routing.split(","):
            torch.manual_seed(0)
            sizes = routing_sizes(T, E, routing)
            offs = torch.tensor(sizes, device="cuda").cumsum(0).to(torch.int32)
            x = torch.randn(T, K, device="cuda", dtype=mod.DTYPE)
            w = (torch.randn(E, 2 * N, K, device="cuda") / K**0.5).to(mod.DTYPE)
            g = torch.randn(T, 2 * N, device="cuda", dtype=mod.DTYPE)
            dy = torch.randn(T, N, device="cuda", dtype=mod.DTYPE)
            xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()

            # the loop's results against torch._grouped_mm's (bf16 GEMMs of the same operands)
            for ta, (a, b) in ((False, (g, w)), (True, (g, x))):
                ref = shipped(a, b, offs, transpose_a=ta)
                got = loop_mm(a, b, offs, transpose_a=ta)
                err = (
                    (got.float() - ref.float()).norm() / ref.float().norm().clamp_min(1e-30)
                ).item()
                assert err < 1e-2, (ta, err)

            def step(least):  # the module's step, LOOP_MIN_EXPERT_FLOP = least
                def run():
                    mod.LOOP_MIN_EXPERT_FLOP = least
                    try:
                        mod.grouped_glu(xg, wg, offs, None, check_offsets=False).backward(dy)
                    finally:
                        mod.LOOP_MIN_EXPERT_FLOP = shipped_least
                    xg.grad = wg.grad = None

                return run

            parts = {
                "gmm forward x @ W^T": lambda: torch._grouped_mm(x, w.transpose(-2, -1), offs=offs),
                "grad_x grouped_mm": lambda: shipped(g, w, offs),
                "grad_x loop": lambda: loop_mm(g, w, offs),
                "grad_W grouped_mm": lambda: shipped(g, x, offs, transpose_a=True),
                "grad_W loop": lambda: loop_mm(g, x, offs, transpose_a=True),
                "step, grouped_mm": step(float("inf")),
                "step, loop": step(0.0),
            }
            ms = {k: [] for k in parts}
            items = list(parts.items())
            for r in range(args.rounds):
                for k, f in items if r % 2 == 0 else items[::-1]:
                    ms[k].append(do_bench(f, warmup=5, rep=60, return_mode="median"))
            med = {k: statistics.median(v) for k, v in ms.items()}
            unit = med["gmm forward x @ W^T"]
            loops = mod._loop_over_experts(T, K, N, E, x.device)
            print(
                f"{T},{K},{N},{E} {routing} (rows per expert {min(sizes)}-{max(sizes)}; the rule loops: {loops})"
            )
            for k, v in med.items():
                spread = f"[{min(ms[k]) / unit:.3f}, {max(ms[k]) / unit:.3f}]"
                print(f"  {k:28s} {v:8.3f} ms  {v / unit:6.3f}x gmm {spread}", flush=True)
            for a, b in (("step, loop", "step, grouped_mm"),):
                ratios = [p / q for p, q in zip(ms[a], ms[b])]
                print(
                    f"  {a} / {b}: {statistics.median(ratios):.3f} "
                    f"[{min(ratios):.3f}, {max(ratios):.3f}] per round"
                )


if __name__ == "__main__":
    main()
