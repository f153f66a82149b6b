"""A/B (not yet run on a GPU): the training forward with out and the two factors converted to the
storage dtype right after the activation (before the first TMA store) vs at each store.

    git show HEAD:generated/glu_<v>.py > build/ab/old_glu_<v>.py   (the current template)
    # edit templates/module_kernels.j2 (_glu_fwd_tma_tiles: convert the three results at once),
    # make generate, then: cp generated/glu_<v>.py build/ab/new_glu_<v>.py
    PYTHONPATH=. python scripts/ab_store_dtype.py
for v in gelu_bf16_bn128_sm90, silu_bf16_bn128_sm90, gelu_tanh_bf16_bn128_sm90 (docs/perf-log.md v0.9).
"""

import statistics, sys
import torch
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import load_module

dev = "cuda"
variants = sys.argv[1:] or (
    "gelu_bf16_bn128_sm90",
    "silu_bf16_bn128_sm90",
    "gelu_tanh_bf16_bn128_sm90",
)
for v in variants:
    old = load_module(f"build/ab/old_{v}.py")
    new = load_module(f"build/ab/new_{v}.py")
    dt = old.DTYPE
    for M, K, N in ((8192, 4096, 14336), (4096, 2048, 5632), (65536, 1024, 2816)):
        x = torch.randn(M, K, device=dev, dtype=dt)
        w = (torch.randn(2 * N, K, device=dev) / K**0.5).to(dt)
        fns = {
            "cublas": lambda: torch.nn.functional.linear(x, w),
            "old": lambda: old.glu_forward(x, w, save_factors=True),
            "new": lambda: new.glu_forward(x, w, save_factors=True),
        }
        s = {k: [] for k in fns}
        for _ in range(5):
            for k, f in fns.items():
                s[k].append(do_bench(f, warmup=10, rep=40, return_mode="median"))
        r = {k: statistics.median(x) for k, x in s.items()}
        o1, f1 = old.glu_forward(x, w, save_factors=True)
        o2, f2 = new.glu_forward(x, w, save_factors=True)
        same = torch.equal(o1, o2) and torch.equal(f1, f2)
        print(
            f"{v} {M}x{K}x{N}: cublas {r['cublas']:.3f} old {r['old']/r['cublas']:.3f}x new {r['new']/r['cublas']:.3f}x bit-identical {same}",
            flush=True,
        )
