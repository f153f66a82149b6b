"""Grouped forward: 64-row tiles against the module's 128 where experts get few rows (GPU).

v0.25's odd-shape sweep found the grouped forward at 1.225x one torch._grouped_mm at 8192 x
2048 x 1408 with E = 60, balanced (136.5 rows per expert): with 128-row tiles each expert runs
two (the second shifted back over the first), 1.88x the rows' MMA work.  64-row tiles would run
three (1.41x).  The grouped kernels take BLOCK_M as a constexpr and the launcher builds the
descriptors' block shapes from the module's BLOCK_M, so each config here is the module with
BLOCK_M / NUM_WARPS / NUM_STAGES set (launch plans off: they do not key on the tiling).

Prints, per shape and routing, the forward with factors (ms, x gmm) of every config, in
interleaved rounds (medians), and each config's largest difference from the module's own
output and factors.

    PYTHONPATH=. python scripts/ab_grouped_bm.py MODULE.py [--shape T,K,N,E ...] [--rounds R]

Results: $OUT/ab-grouped-bm.json (or build/).
"""

import argparse
import statistics
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import (
    _interleaved_samples,
    load_module,
    parse_shape,
    routing_sizes,
    write_results,
)  # noqa: E402

SHAPES = [
    (8192, 2048, 1408, 60),  # 136.5 rows per expert (balanced)
    (4096, 2048, 768, 128),  # Qwen3-30B-A3B at 512 tokens: 32 rows per expert
    (16384, 2048, 768, 128),  # ... at 2048 tokens: 128
    (65536, 2048, 768, 128),  # issue 10's: 512
    (16384, 4096, 14336, 8),  # issue 10's E=8: 2048 (64-row tiles should lose here)
    (8192, 2880, 2880, 32),  # gpt-oss-20b at 2048 tokens: 256
    (32768, 2880, 2880, 32),  # issue 10's gpt-oss shape: 1024
]
CONFIGS = {
    "bm128 w8 s3": (128, 8, 3),
    "bm64 w4 s4": (64, 4, 4),
    "bm64 w4 s3": (64, 4, 3),
    "bm64 w8 s3": (64, 8, 3),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("module")
    ap.add_argument("--shape", action="append", type=parse_shape)
    ap.add_argument("--routing", action="append")
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    mod = load_module(args.module)
    mod._replay = lambda plan, device: False
    own = (mod.BLOCK_M, mod.NUM_WARPS, mod.NUM_STAGES)
    assert own == CONFIGS["bm128 w8 s3"], own
    bias = mod.ACTIVATION == "swiglu_oai"
    results = []
    for shape in args.shape or [s for s in SHAPES if s[2] % mod.CHUNK == 0]:
        T, K, N, E = shape
        torch.manual_seed(0)
        w = (torch.randn(E, 2 * N, K, device="cuda") / K**0.5).to(mod.DTYPE)
        b = (torch.randn(E, 2 * N, device="cuda") * 0.1).to(mod.DTYPE) if bias else None
        x = torch.randn(T, K, device="cuda", dtype=mod.DTYPE)
        for routing in args.routing or ["balanced", "ragged", "skewed"]:
            sizes = routing_sizes(T, E, routing)
            offs = torch.tensor(sizes, device="cuda").cumsum(0).to(torch.int32)

            def forward(config):
                def run():
                    mod.BLOCK_M, mod.NUM_WARPS, mod.NUM_STAGES = config
                    return mod._grouped_forward(x, w, offs, b, True)

                return run

            ref = forward(own)()
            errs = {}
            for name, config in CONFIGS.items():
                out, f = forward(config)()
                errs[name] = max(
                    (out.float() - ref[0].float()).abs().max().item(),
                    (f.float() - ref[1].float()).abs().max().item(),
                )
            gmm = (lambda: torch._grouped_mm(x, w.transpose(-2, -1), offs=offs), None)
            steps = {"gmm": gmm, **{name: (forward(c), None) for name, c in CONFIGS.items()}}
            t = lambda fn, _: do_bench(fn, warmup=10, rep=50, return_mode="median")  # noqa: E731
            samples = _interleaved_samples(steps, t, args.rounds)
            mod.BLOCK_M, mod.NUM_WARPS, mod.NUM_STAGES = own
            ms = {k: statistics.median(v) for k, v in samples.items()}
            res = {
                "shape": list(shape),
                "routing": routing,
                "ms": ms,
                "rounds": samples,
                "max_abs_diff": errs,
            }
            results.append(res)
            cols = "  ".join(
                f"{k} {v:.3f} ({v / ms['gmm']:.3f}x)" for k, v in ms.items() if k != "gmm"
            )
            print(
                f"{shape} {routing}: gmm {ms['gmm']:.3f}  {cols}  diff {max(errs.values()):.1e}",
                flush=True,
            )
    print(write_results("ab-grouped-bm.json", {"module": args.module, "results": results}))


if __name__ == "__main__":
    main()
