"""The compiled FusedGLU + nn.Linear MLP with split factor buffers (as shipped since v0.24: the
backward's GEMM operator makes grad_x and the first half of grad_W, the compiled graph frees the
first buffer, glu_bwd_wgrad_b makes grad_W) against the same MLP compiled with one buffer
(SPLIT_FACTORS = False in a second copy of the module: v0.23's compiled path), beside the eager
FusedGLU MLP (split), the HF-style eager MLP and that MLP compiled (torch.compile's own cost:
at host-bound shapes the compiled steps' host µs are its runtime's, whatever the graph holds).

Per shape: fwd+bwd ms in interleaved rounds (medians, and the per-round ratio split / one
buffer), host µs per step, and the peak MiB of a step beyond what was allocated before it
(codegen.bench.peak_mib; dy held by the caller, as in the bench's MLP rows).

    PYTHONPATH=. python scripts/ab_compiled_split.py [M,K,N ...] [--rounds 8]

Results: $OUT/ab_compiled_split.json (or build/).
"""

import argparse
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import (  # noqa: E402
    _interleaved_samples,
    _medians_and_rounds,
    _mlps,
    host_us,
    load_module,
    paired_ratio,
    parse_shape,
    peak_mib,
    write_results,
)

MODULE = "generated/glu_silu_bf16_bn128_sm90.py"
SHAPES = ["8192,4096,14336", "16384,8192,28672"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shapes", nargs="*", default=SHAPES)
    ap.add_argument("--module", default=MODULE)
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    split_mod = load_module(args.module)
    one_mod = load_module(args.module)  # a second copy (own operators): one buffer always
    one_mod.SPLIT_FACTORS = False
    results = []
    for text in args.shapes:
        M, K, N = parse_shape(text)
        gen = torch.Generator(device="cuda").manual_seed(0)

        def randn(*shape, scale=1.0):
            return (torch.randn(*shape, device="cuda", generator=gen) * scale).to(split_mod.DTYPE)

        x = randn(M, K).requires_grad_()
        gate_w, up_w, down_w = (
            randn(N, K, scale=K**-0.5),
            randn(N, K, scale=K**-0.5),
            randn(K, N, scale=N**-0.5),
        )
        dz = randn(M, K)
        split_n = split_mod._split_point(M, N, K, compiled=True)
        models = {
            "compiled_split": _mlps(split_mod, gate_w, up_w, down_w, False, True)["ours_compiled"],
            "compiled_one_buffer": _mlps(one_mod, gate_w, up_w, down_w, False, True)[
                "ours_compiled"
            ],
        }
        eager = _mlps(split_mod, gate_w, up_w, down_w, False, False)
        models["eager_fusedglu"], models["eager_hf"] = eager["ours"], eager["eager"]
        models["compiled_hf"] = torch.compile(eager["eager"], fullgraph=True)

        steps = {}
        for name, model in models.items():
            params = [x, *model.parameters()]

            def step(model=model, params=params):
                model(x).backward(dz)
                for p in params:
                    p.grad = None

            for _ in range(3):  # compiles, warms up
                step()
            steps[name] = (step, params)

        def t(fn, _grads=None):
            return do_bench(fn, warmup=5, rep=40)

        res = {"shape": [M, K, N], "compiled_split_point": split_n, "N": N}
        res.update(
            _medians_and_rounds(
                {f"{k}_ms": v for k, v in _interleaved_samples(steps, t, args.rounds).items()}
            )
        )
        res["split_over_one_buffer"] = paired_ratio(res, "compiled_split", "compiled_one_buffer")
        res["split_over_eager_fusedglu"] = paired_ratio(res, "compiled_split", "eager_fusedglu")
        res["compiled_hf_over_eager_hf"] = paired_ratio(res, "compiled_hf", "eager_hf")
        res.update(
            {f"{k}_host_us": v for k, v in host_us({k: s for k, (s, _) in steps.items()}).items()}
        )
        for name, (step, params) in steps.items():
            res[f"{name}_peak_mib"] = peak_mib(step, params)
        results.append(res)
        print(f"{M}x{K}x{N} (compiled split point {split_n} of {N})")
        for name in steps:
            print(
                f"  {name:22s} {res[name + '_ms']:9.3f} ms  host {res[name + '_host_us']:7.1f} us"
                f"  peak {res[name + '_peak_mib']:8.1f} MiB"
            )
        for key in (
            "split_over_one_buffer",
            "split_over_eager_fusedglu",
            "compiled_hf_over_eager_hf",
        ):
            med, lo, hi = res[key]
            print(f"  {key}: {med:.3f} [{lo:.3f}, {hi:.3f}] per round")
        del models, steps, eager
    print("results:", write_results("ab_compiled_split.json", results))


if __name__ == "__main__":
    main()
