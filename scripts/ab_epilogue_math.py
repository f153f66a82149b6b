"""How much of the training forward's exposed epilogue is the activation's math (GPU)?

The SwiGLU forward's epilogue computes sigmoid(g) = 1 / (1 + exp(-g)) per element: two
special-function (MUFU) instructions (ex2, rcp), whose throughput on an SM is an eighth of the
FMA pipes'.  Variants of generated/glu_silu_bf16_bn128_sm90.py, rendered here by rewriting
its ``_activation`` (module copies in build/ab/):

* ``exp``: the module as generated (1 / (1 + exp(-g)));
* ``tanh``: sigmoid(g) = 0.5 + 0.5 tanh.approx(g / 2): one MUFU instruction (not accurate in
  the far negative tail: 1 + tanh cancels; a measurement, not a candidate as is);
* ``nomath``: no activation at all (out = left * gate, factors = gate, left): the stores alone;
* ``nr3``, ``nr2``: accurate with one MUFU instruction: e = exp(-|g|), 1 / (1 + e) by three
  (two) Newton steps on the FMA pipes, sigmoid = r or e r (max relative error 1.8e-7 / 1.2e-5).

Training forward (factors saved) and inference forward against cuBLAS F.linear, interleaved
rounds, medians; results in $OUT/ab_epilogue_math.json.

    PYTHONPATH=. python scripts/ab_epilogue_math.py
"""

import json
import os
import re
import statistics
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import load_module  # noqa: E402
from codegen.tune import pin_fused  # noqa: E402

SOURCE = Path("generated/glu_silu_bf16_bn128_sm90.py")
BODY = re.compile(
    r"(def _activation\(left, gate\):\n    \"\"\".*?\"\"\"\n)(.*?)(    return out, d_left, d_gate\n)",
    re.S,
)
VARIANTS = {
    "exp": None,
    "tanh": (
        "    t = tl.inline_asm_elementwise(\n"
        '        "tanh.approx.f32 $0, $1;", "=f,f", [0.5 * gate], dtype=tl.float32, is_pure=True, pack=1\n'
        "    )\n"
        "    s = 0.5 + 0.5 * t\n"
        "    out = left * (gate * s)\n"
        "    d_left = gate * s\n"
        "    d_gate = left * s * (1.0 + gate * (1.0 - s))\n"
    ),
    "nomath": "    out = left * gate\n    d_left = gate\n    d_gate = left\n",
    # accurate, one MUFU instruction: e = exp(-|g|) in (0, 1], 1 / (1 + e) by Newton steps
    # from a linear guess on [1, 2] (error <= 1/17, squared by each step), sigmoid = r or e r
    "nr3": "    e = tl.exp(-tl.abs(gate))\n    d = 1.0 + e\n    r = 1.411764705882353 - 0.47058823529411764 * d\n    r = r + r * (1.0 - d * r)\n    r = r + r * (1.0 - d * r)\n    r = r + r * (1.0 - d * r)\n    s = tl.where(gate >= 0.0, r, e * r)\n    out = left * (gate * s)\n    d_left = gate * s\n    d_gate = left * s * (1.0 + gate * (1.0 - s))\n",
    "nr2": "    e = tl.exp(-tl.abs(gate))\n    d = 1.0 + e\n    r = 1.411764705882353 - 0.47058823529411764 * d\n    r = r + r * (1.0 - d * r)\n    r = r + r * (1.0 - d * r)\n    s = tl.where(gate >= 0.0, r, e * r)\n    out = left * (gate * s)\n    d_left = gate * s\n    d_gate = left * s * (1.0 + gate * (1.0 - s))\n",
}


def variant_module(name):
    body = VARIANTS[name]
    if body is None:
        return load_module(SOURCE)
    text = SOURCE.read_text()
    new, n = BODY.subn(lambda m: m.group(1) + body + m.group(3), text)
    assert n == 1, "no _activation to rewrite"
    path = Path("build/ab") / f"{name}_{SOURCE.name}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(new)
    return load_module(path)


def t(fn):
    return do_bench(fn, warmup=10, rep=60, return_mode="median")


def main():
    mods = {name: variant_module(name) for name in VARIANTS}
    for mod in mods.values():
        pin_fused(mod)  # the fused kernel at every shape (no last-wave rule)
    res = {}
    shapes = [
        (4096, 2048, 5632),
        (65536, 1024, 2816),
        (4000, 2048, 5632),
        (8192, 4096, 14336),
        (11136, 3584, 14336),
        (2048, 4096, 1408),
    ]
    for M, K, N in shapes:
        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(torch.bfloat16)
        ref_out, ref_fa, ref_fb = mods["exp"]._forward(x, w, None, True)
        ref_f = ref_fa if ref_fb is None else torch.cat([ref_fa, ref_fb], 1)
        out, fa, fb = mods["tanh"]._forward(x, w, None, True)
        f = fa if fb is None else torch.cat([fa, fb], 1)
        err = {
            "tanh out rel": (
                (out.float() - ref_out.float()).norm() / ref_out.float().norm()
            ).item(),
            "tanh factors rel": ((f.float() - ref_f.float()).norm() / ref_f.float().norm()).item(),
        }
        fns = {"cublas": lambda: F.linear(x, w)}
        for name, mod in mods.items():
            fns[f"train_{name}"] = lambda mod=mod: mod._forward(x, w, None, True)
            fns[f"infer_{name}"] = lambda mod=mod: mod._forward(x, w, None, False)
        samples = {k: [] for k in fns}
        for _ in range(5):
            for k, fn in fns.items():
                samples[k].append(t(fn))
        r = {k: statistics.median(v) for k, v in samples.items()}
        res[f"{M}x{K}x{N}"] = {"ms": r, **err}
        print(
            f"{M}x{K}x{N}",
            " ".join(f"{k} {v / r['cublas']:.3f}" for k, v in r.items()),
            " ".join(f"{k} {v:.1e}" for k, v in err.items()),
            flush=True,
        )
        del x, w, ref_out, ref_fa, ref_fb, out, fa, fb, f
        torch.cuda.empty_cache()
    with open(os.path.join(os.environ.get("OUT", "build"), "ab_epilogue_math.json"), "w") as fh:
        json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
