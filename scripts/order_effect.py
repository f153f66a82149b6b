"""Does what ran just before change a kernel's measured time? (GPU)

On an H200 at its power limit the SM clock follows the recent load (perf log v0.13: sustained
loops at 690-699 W and 1420-1660 MHz).  Here the SwiGLU training forward is timed (do_bench,
its own 10 ms warm-up, median of 60 ms) right after a light predecessor (one cuBLAS F.linear of
the same shape, timed the same way), right after a heavy one (a FusedMLP fwd+bwd step, timed
the same way) and after 0.2 s idle, the patterns in turn (every other round reversed), 8 rounds; medians per pattern, and the same for cuBLAS F.linear
itself.  A ratio heavy / light above the A/A spread means a fixed measuring order biases
comparisons (what codegen.bench._round_order and ab_math's paired rounds avoid).

    PYTHONPATH=. python scripts/order_effect.py [M,K,N ...]

Results: $OUT/order_effect.json (or build/).
"""

import statistics
import sys
import time

import torch
import torch.nn.functional as F
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import load_module, write_results  # noqa: E402

MODULE = "generated/glu_silu_bf16_bn128_sm90.py"
SHAPES = [(11136, 3584, 14336), (4096, 2048, 5632), (65536, 1024, 2816)]


def t(fn):
    return do_bench(fn, warmup=10, rep=60, return_mode="median")


def main():
    shapes = [tuple(map(int, a.split(","))) for a in sys.argv[1:]] or SHAPES
    mod = load_module(MODULE)
    res = {}
    for M, K, N in shapes:
        x = torch.randn(M, K, device="cuda", dtype=mod.DTYPE)
        w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(mod.DTYPE)
        mlp = mod.FusedMLP(K, N, device="cuda")
        xg = x.clone().requires_grad_()
        dz = torch.randn(M, K, device="cuda", dtype=mod.DTYPE)

        def light():
            F.linear(x, w)

        def heavy():
            mlp(xg).backward(dz)
            xg.grad = None
            for p in mlp.parameters():
                p.grad = None

        targets = {
            "train_fwd": lambda: mod.glu_forward(x, w, save_factors=True),
            "cublas": light,
        }

        def idle():
            torch.cuda.synchronize()
            time.sleep(0.2)

        patterns = (("after_light", lambda: t(light)), ("after_heavy", lambda: t(heavy)))
        patterns += (("after_idle", idle),)
        samples = {(k, p): [] for k in targets for p, _ in patterns}
        for r in range(8):
            for pattern, before in patterns if r % 2 == 0 else patterns[::-1]:
                for name, fn in targets.items():
                    before()
                    samples[(name, pattern)].append(t(fn))
        row = {}
        for name in targets:
            lo = statistics.median(samples[(name, "after_light")])
            hi = statistics.median(samples[(name, "after_heavy")])
            idle_ms = statistics.median(samples[(name, "after_idle")])
            row[name] = {
                "after_light_ms": lo,
                "after_heavy_ms": hi,
                "after_idle_ms": idle_ms,
                "heavy_over_light": hi / lo,
                "idle_over_light": idle_ms / lo,
            }
        res[f"{M}x{K}x{N}"] = row
        print(
            f"{M}x{K}x{N}:",
            " ".join(
                f"{k} after light / heavy / idle {v['after_light_ms']:.3f} / "
                f"{v['after_heavy_ms']:.3f} / {v['after_idle_ms']:.3f} ms "
                f"(heavy {v['heavy_over_light']:.3f}x, idle {v['idle_over_light']:.3f}x light)"
                for k, v in row.items()
            ),
            flush=True,
        )
        del x, w, mlp, xg, dz
        torch.cuda.empty_cache()
    write_results("order_effect.json", res)


if __name__ == "__main__":
    main()
