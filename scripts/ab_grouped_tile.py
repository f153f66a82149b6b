"""A/B: the grouped forward of 64-column chunks with one chunk per tile (128 x 128 accumulator,
BK 128) vs two chunks per tile (128 x 256, BK 64: the 128-column variants' GEMM shape), the
epilogue run per chunk at once (new) or one chunk after the other (new2).  gpt-oss E=32, with
and without the bias, three routings; against one torch._grouped_mm of the same routing.

    git show HEAD:generated/glu_swiglu_oai_bf16_bn64_sm90_grouped.py > build/ab/old_...py
    build/ab/new_...py, build/ab/new2_...py: the variants under test
    PYTHONPATH=. python scripts/ab_grouped_tile.py
"""

import statistics
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import load_module, routing_sizes

V = "glu_swiglu_oai_bf16_bn64_sm90_grouped"
mods = {k: load_module(f"build/ab/{k}_{V}.py") for k in sys.argv[1:] or ("old", "new", "new2")}
dev, dt = "cuda", torch.bfloat16
T, K, N, E = 32768, 2880, 2880, 32
for routing in ("balanced", "skewed", "ragged"):
    sizes = routing_sizes(T, E, routing)
    offs = torch.tensor(sizes, device=dev).cumsum(0).to(torch.int32)
    x = torch.randn(T, K, device=dev, dtype=dt)
    w = (torch.randn(E, 2 * N, K, device=dev) / K**0.5).to(dt)
    b = (torch.randn(E, 2 * N, device=dev) * 0.1).to(dt)
    wf = w.transpose(-2, -1)
    fns = {"gmm": lambda: torch._grouped_mm(x, wf, offs=offs)}
    for k, m in mods.items():
        fns[f"{k}_bias"] = lambda m=m: m._grouped_forward(x, w, offs, b, True)
        fns[f"{k}_nobias"] = lambda m=m: m._grouped_forward(x, w, offs, None, True)
    s = {k: [] for k in fns}
    for _ in range(5):
        for k, f in fns.items():
            s[k].append(do_bench(f, warmup=10, rep=60, return_mode="median"))
    r = {k: statistics.median(v) for k, v in s.items()}
    print(routing, " ".join(f"{k} {v:.3f} ({v / r['gmm']:.3f}x)" for k, v in r.items()), flush=True)
    ref_o, ref_f = mods["old"]._grouped_forward(x, w, offs, b, True)
    for k, m in mods.items():
        o, f = m._grouped_forward(x, w, offs, b, True)
        print(
            f"  {k}: out bit-identical {torch.equal(o, ref_o)}, factors {torch.equal(f, ref_f)},"
            f" max |d out| {(o.float() - ref_o.float()).abs().max().item():.3g}",
            flush=True,
        )
    del x, w, b, wf
    torch.cuda.empty_cache()
