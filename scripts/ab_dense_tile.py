"""A/B: the dense TMA forward of 64-column chunks, one chunk per tile (128 x 128, BK 128) vs two
(128 x 256, BK 64), training forward with and without a bias, against cuBLAS F.linear.

    git show <before>:generated/glu_swiglu_oai_bf16_bn64_sm90.py > build/ab/old_glu_swiglu_oai_bf16_bn64_sm90.py
    cp generated/glu_swiglu_oai_bf16_bn64_sm90.py build/ab/new_glu_swiglu_oai_bf16_bn64_sm90.py
    PYTHONPATH=. python scripts/ab_dense_tile.py
"""

import statistics
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import load_module

V = "glu_swiglu_oai_bf16_bn64_sm90"
old, new = (load_module(f"build/ab/{k}_{V}.py") for k in ("old", "new"))
dev, dt = "cuda", torch.bfloat16
for M, K, N in ((32768, 2880, 2880), (8192, 4096, 14336), (4096, 2048, 5632), (65536, 1024, 2816)):
    x = torch.randn(M, K, device=dev, dtype=dt)
    w = (torch.randn(2 * N, K, device=dev) / K**0.5).to(dt)
    b = (torch.randn(2 * N, device=dev) * 0.1).to(dt)
    fns = {"cublas": lambda: torch.nn.functional.linear(x, w)}
    for k, m in (("old", old), ("new", new)):
        fns[f"{k}"] = lambda m=m: m.glu_forward(x, w, save_factors=True)
        fns[f"{k}_bias"] = lambda m=m: m.glu_forward(x, w, bias=b, save_factors=True)
        fns[f"{k}_infer"] = lambda m=m: m.glu_forward(x, w)
    s = {k: [] for k in fns}
    for _ in range(5):
        for k, f in fns.items():
            s[k].append(do_bench(f, warmup=10, rep=50, return_mode="median"))
    r = {k: statistics.median(v) for k, v in s.items()}
    print(
        f"{M}x{K}x{N} "
        + " ".join(f"{k} {v / r['cublas']:.3f}x" for k, v in r.items() if k != "cublas"),
        f"(cublas {r['cublas']:.3f} ms)",
        flush=True,
    )
    o1, f1 = old.glu_forward(x, w, bias=b, save_factors=True)
    o2, f2 = new.glu_forward(x, w, bias=b, save_factors=True)
    print(f"  bit-identical out {torch.equal(o1, o2)} factors {torch.equal(f1, f2)}", flush=True)
