"""A/B: gpt-oss's 64-column-chunk TMA forwards (dense and grouped, training forward with factors)
at the checked-in tiling vs 64-row tiles (BM 64 with 8 or 4 warps: a [64, 256] accumulator, half
the registers per thread with 8 warps, twice the tiles), set on loaded copies of the modules
as `swiglu-gen tune` sets them; against cuBLAS F.linear / one torch._grouped_mm.

    PYTHONPATH=. python scripts/ab_tile_rows.py
"""

import statistics
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import load_module, routing_sizes  # noqa: E402
from codegen.tune import apply_tiling  # noqa: E402

TILINGS = {
    "bm128 (checked in)": {},
    "bm64 w8 s3": {"bm": 64, "num_warps": 8, "num_stages": 3},
    "bm64 w8 s4": {"bm": 64, "num_warps": 8, "num_stages": 4},
    "bm64 w4 s4": {"bm": 64, "num_warps": 4, "num_stages": 4},
}


def loaded(path):
    mods = {}
    for name, tiling in TILINGS.items():
        mod = load_module(path)
        apply_tiling(mod, tiling)
        mods[name] = mod
    return mods


def report(label, fns, check):
    s = {k: [] for k in fns}
    for _ in range(5):
        for k, f in fns.items():
            s[k].append(do_bench(f, warmup=10, rep=60, return_mode="median"))
    r = {k: statistics.median(v) for k, v in s.items()}
    base = next(iter(r.values()))
    print(label, " | ".join(f"{k} {v:.3f} ({v / base:.3f}x)" for k, v in r.items()), flush=True)
    ref = None
    for k, outs in check():
        if ref is None:
            ref = outs
            continue
        same = all(torch.equal(a, b) for a, b in zip(outs, ref))
        diff = max((a.float() - b.float()).abs().max().item() for a, b in zip(outs, ref))
        print(f"    {k}: bit-identical {same}, max |diff| {diff:.3g}", flush=True)


def main():
    dev, dt = "cuda", torch.bfloat16
    which = sys.argv[1:] or ["oai", "silu"]
    if "silu" in which:  # 128-column chunks: one chunk per tile, [BM, 256]
        silu = loaded("generated/glu_silu_bf16_bn128_sm90.py")
        for M, K, N in ((4096, 2048, 5632), (8192, 4096, 14336)):
            x = torch.randn(M, K, device=dev, dtype=dt)
            w = (torch.randn(2 * N, K, device=dev) / K**0.5).to(dt)
            fns = {"cublas": lambda: torch.nn.functional.linear(x, w)}
            for k, m in silu.items():
                fns[k] = lambda m=m: m.glu_forward(x, w, save_factors=True)
            report(
                f"SwiGLU dense {M}x{K}x{N}, x cuBLAS:",
                fns,
                lambda: ((k, m.glu_forward(x, w, save_factors=True)) for k, m in silu.items()),
            )
        silu_g = loaded("generated/glu_silu_bf16_bn128_sm90_grouped.py")
        T, K, N, E = 65536, 2048, 768, 128
        offs = torch.tensor(routing_sizes(T, E, "balanced"), device=dev).cumsum(0).to(torch.int32)
        x = torch.randn(T, K, device=dev, dtype=dt)
        w = (torch.randn(E, 2 * N, K, device=dev) / K**0.5).to(dt)
        wf = w.transpose(-2, -1)
        fns = {"gmm": lambda: torch._grouped_mm(x, wf, offs=offs)}
        for k, m in silu_g.items():
            fns[k] = lambda m=m: m._grouped_forward(x, w, offs, None, True)
        report(
            f"SwiGLU grouped E={E} balanced, x gmm:",
            fns,
            lambda: ((k, m._grouped_forward(x, w, offs, None, True)) for k, m in silu_g.items()),
        )
    if "oai" not in which:
        return
    dense = loaded("generated/glu_swiglu_oai_bf16_bn64_sm90.py")
    for M, K, N in ((32768, 2880, 2880), (8192, 4096, 14336), (4096, 2048, 5632)):
        x = torch.randn(M, K, device=dev, dtype=dt)
        w = (torch.randn(2 * N, K, device=dev) / K**0.5).to(dt)
        b = (torch.randn(2 * N, device=dev) * 0.1).to(dt)
        fns = {"cublas": lambda: torch.nn.functional.linear(x, w)}
        for k, m in dense.items():
            fns[k] = lambda m=m: m.glu_forward(x, w, bias=b, save_factors=True)
        report(
            f"dense {M}x{K}x{N} bias, x cuBLAS:",
            fns,
            lambda: ((k, m.glu_forward(x, w, bias=b, save_factors=True)) for k, m in dense.items()),
        )
    grouped = loaded("generated/glu_swiglu_oai_bf16_bn64_sm90_grouped.py")
    T, K, N, E = 32768, 2880, 2880, 32
    for routing in ("balanced", "skewed", "ragged"):
        offs = torch.tensor(routing_sizes(T, E, routing), device=dev).cumsum(0).to(torch.int32)
        x = torch.randn(T, K, device=dev, dtype=dt)
        w = (torch.randn(E, 2 * N, K, device=dev) / K**0.5).to(dt)
        b = (torch.randn(E, 2 * N, device=dev) * 0.1).to(dt)
        wf = w.transpose(-2, -1)
        fns = {"gmm": lambda: torch._grouped_mm(x, wf, offs=offs)}
        for k, m in grouped.items():
            fns[k] = lambda m=m: m._grouped_forward(x, w, offs, b, True)
        report(
            f"grouped E={E} {routing} bias, x gmm:",
            fns,
            lambda: ((k, m._grouped_forward(x, w, offs, b, True)) for k, m in grouped.items()),
        )


if __name__ == "__main__":
    main()
