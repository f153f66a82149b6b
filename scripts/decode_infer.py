"""Inference forward at decode / small-batch sizes (M = 1 .. 512 tokens): ours vs cuBLAS and eager.

GPU time from CUDA-graph replays (no host cost), and eager-mode time per call (do_bench: at these
sizes the host may be slower than the GPU, so this is what a user's loop sees).

    PYTHONPATH=. python scripts/decode_infer.py generated/glu_silu_bf16_bn128_sm90.py
"""

import statistics
import sys

import torch
from triton.testing import do_bench

from codegen.bench import _eager_glu, load_module
from codegen.tune import pin_fused, restore


def graph_ms(fn, reps=50):
    """GPU ms per call: fn captured `reps` times in one CUDA graph, replayed."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            fn()
    return do_bench(g.replay, warmup=5, rep=50, return_mode="median") / reps


def main(module_path):
    mod = load_module(module_path)
    dev, dt = "cuda", mod.DTYPE
    eager = _eager_glu(mod)
    print(f"{mod.SPEC['name']}: inference forward, GPU us (graph replay) and eager us per call")
    print(
        "M x K x N | cuBLAS GEMM | eager GLU | ours (default path) | ours fused | ours cuBLAS+pass"
        " | train fwd fused / cuBLAS+pass | ours/eager (GPU) | eager-mode us: eager / ours"
    )

    def path(rows, fn):
        """fn with the rows threshold ``rows``: 0 forces the fused kernel (pin_fused: the wave
        rule off too), a huge one the GEMM + pass."""

        def run():
            saved = pin_fused(mod) if rows == 0 else {"UNFUSED_MAX_ROWS": mod.UNFUSED_MAX_ROWS}
            mod.UNFUSED_MAX_ROWS = rows
            try:
                return fn()
            finally:
                restore(mod, saved)

        return run

    for K, N in ((4096, 14336), (2048, 5632), (8192, 28672)):
        w = (torch.randn(2 * N, K, device=dev) / K**0.5).to(dt)
        w_cat = torch.cat([w[:N], w[N:]])  # any [2N, K] weight: timing only
        for M in (1, 16, 64, 128, 256, 384, 512, 1024):
            x = torch.randn(M, K, device=dev, dtype=dt)
            with torch.no_grad():
                fns = {
                    "cublas": lambda: torch.nn.functional.linear(x, w),
                    "eager": lambda: eager(x, w_cat),
                    "ours": lambda: mod.glu(x, w),
                    "fused": path(0, lambda: mod.glu(x, w)),
                    "unfused": path(1 << 30, lambda: mod.glu(x, w)),
                    "train_fused": path(0, lambda: mod.glu_forward(x, w, save_factors=True)),
                    "train_unfused": path(
                        1 << 30, lambda: mod.glu_forward(x, w, save_factors=True)
                    ),
                }
                g = {k: [] for k in fns}
                e = {k: [] for k in fns}
                for _ in range(3):
                    for k, f in fns.items():
                        g[k].append(graph_ms(f) * 1e3)
                        if k in ("eager", "ours"):
                            e[k].append(do_bench(f, warmup=10, rep=30, return_mode="median") * 1e3)
                g = {k: statistics.median(v) for k, v in g.items()}
                e = {k: statistics.median(v) for k, v in e.items() if v}
            print(
                f"{M}x{K}x{N} | {g['cublas']:.1f} | {g['eager']:.1f} | {g['ours']:.1f} | "
                f"{g['fused']:.1f} | {g['unfused']:.1f} | {g['train_fused']:.1f} / "
                f"{g['train_unfused']:.1f} | "
                f"{g['ours'] / g['eager']:.2f} | {e['eager']:.1f} / {e['ours']:.1f}",
                flush=True,
            )


if __name__ == "__main__":
    torch.manual_seed(0)
    with torch.no_grad():
        main(sys.argv[1])
