"""A/B of forward kernels, old vs new generated modules in one process (interleaved rounds,
medians): grouped gpt-oss E=32 (three routings; training forward with and without the bias) and
the dense gpt-oss forward at three shapes (training with and without the bias, inference, and
the MLP's forward that writes the preactivation), outputs compared bit for bit.

The modules are read from build/ab/{old,new}_<variant>.py, e.g. for the change under test:
    git show HEAD:generated/<variant>.py > build/ab/old_<variant>.py
    cp generated/<variant>.py build/ab/new_<variant>.py
    PYTHONPATH=. python scripts/ab_forward.py     (needs a GPU; results in $OUT/ab.json)
v0.9 ran it twice (docs/bench/h200-v0.9-ab.txt); the first run also compared GeGLU (tanh)
activation forms (that part is no longer in the script: the old form is gone); v0.15 for the
joined stores and the chunk-by-chunk epilogue (docs/bench/h200-v0.15-ab-*.txt)."""

import json
import os
import statistics
import sys
import torch
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import load_module, routing_sizes


def t(fn):
    return do_bench(fn, warmup=10, rep=60, return_mode="median")


def inter(fns, rounds=5):
    s = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            s[k].append(t(f))
    return {k: statistics.median(v) for k, v in s.items()}


res = {}
dev, dt = "cuda", torch.bfloat16


def line(name, r, base):
    print(name, " ".join(f"{k} {v:.3f} ({v / r[base]:.3f}x)" for k, v in r.items()), flush=True)
    res[name] = r


# 1. grouped gpt-oss E=32
old = load_module("build/ab/old_glu_swiglu_oai_bf16_bn64_sm90_grouped.py")
new = load_module("build/ab/new_glu_swiglu_oai_bf16_bn64_sm90_grouped.py")
T, K, N, E = 32768, 2880, 2880, 32
for routing in ("balanced", "skewed", "ragged"):
    sizes = routing_sizes(T, E, routing)
    offs = torch.tensor(sizes, device=dev).cumsum(0).to(torch.int32)
    x = torch.randn(T, K, device=dev, dtype=dt)
    w = (torch.randn(E, 2 * N, K, device=dev) / K**0.5).to(dt)
    b = (torch.randn(E, 2 * N, device=dev) * 0.1).to(dt)
    wf = w.transpose(-2, -1)
    r = inter(
        {
            "gmm": lambda: torch._grouped_mm(x, wf, offs=offs),
            "old_bias": lambda: old._grouped_forward(x, w, offs, b, True),
            "new_bias": lambda: new._grouped_forward(x, w, offs, b, True),
            "old_nobias": lambda: old._grouped_forward(x, w, offs, None, True),
            "new_nobias": lambda: new._grouped_forward(x, w, offs, None, True),
        }
    )
    line(f"grouped E=32 {routing}", r, "gmm")
    o1, f1 = old._grouped_forward(x, w, offs, b, True)
    o2, f2 = new._grouped_forward(x, w, offs, b, True)
    print(
        "  bit-identical out, factors:",
        torch.equal(o1, o2),
        torch.equal(f1, f2),
        "max |old-new| out",
        (o1.float() - o2.float()).abs().max().item(),
        "rel",
        ((o1.float() - o2.float()).norm() / o1.float().norm()).item(),
    )
    del x, w, b, wf

# 2. dense with bias: gpt-oss bn64 and silu bn128
for name, shape in (
    ("glu_swiglu_oai_bf16_bn64_sm90", (32768, 2880, 2880)),
    ("glu_swiglu_oai_bf16_bn64_sm90", (8192, 4096, 14336)),
    ("glu_swiglu_oai_bf16_bn64_sm90", (4096, 2048, 5632)),
):
    old = load_module(f"build/ab/old_{name}.py")
    new = load_module(f"build/ab/new_{name}.py")
    M, K, N = shape
    x = torch.randn(M, K, device=dev, dtype=dt)
    w = (torch.randn(2 * N, K, device=dev) / K**0.5).to(dt)
    b = (torch.randn(2 * N, device=dev) * 0.1).to(dt)
    o = torch.empty(M, N, device=dev, dtype=dt)
    h = torch.empty(M, 2 * N, device=dev, dtype=dt)
    r = inter(
        {
            "cublas": lambda: torch.nn.functional.linear(x, w),
            "old_bias": lambda: old.glu_forward(x, w, bias=b, save_factors=True),
            "new_bias": lambda: new.glu_forward(x, w, bias=b, save_factors=True),
            "old_nobias": lambda: old.glu_forward(x, w, save_factors=True),
            "new_nobias": lambda: new.glu_forward(x, w, save_factors=True),
            "old_infer": lambda: old.glu_forward(x, w, bias=b),
            "new_infer": lambda: new.glu_forward(x, w, bias=b),
            # the MLP's forward: out and the preactivation (WRITE_PREACT)
            "old_preact": lambda: old._launch_forward(x, w, None, o, h, h, N, old.WRITE_PREACT),
            "new_preact": lambda: new._launch_forward(x, w, None, o, h, h, N, new.WRITE_PREACT),
        }
    )
    line(f"dense {name} {shape}", r, "cublas")
    same = [
        torch.equal(a, c)
        for a, c in zip(
            old.glu_forward(x, w, bias=b, save_factors=True),
            new.glu_forward(x, w, bias=b, save_factors=True),
        )
    ]
    print("  out, factors bit-identical old vs new:", same, flush=True)
    del x, w, b


json.dump(res, open(os.path.join(os.environ.get("OUT", "."), "ab.json"), "w"), indent=1)
