"""FusedMLP with its packed weight as one Parameter or in two parts (v0.49: the parts' own
gradients let a big step's backward keep the preactivation in two buffers, each freed once its
part's gradient is made: module_mlp's _mlp_split_point), against Liger's MLP (its SwiGLU
between two nn.Linear) and HF-style eager: fwd+bwd ms (interleaved rounds, every other one
reversed, medians of 4; each round's parts / one ratio), host µs per step (codegen.bench.host_us,
interleaved), and the peak during model(x).backward(dz) with dz held by the caller (the bench's
MLP peak).  GPU.

    PYTHONPATH=. python scripts/mlp_parts_ab.py [MODULE.py] [M,K,N ...]

Results: $OUT/mlp_parts_ab.json (or build/).  Needs liger-kernel for the Liger column.
"""

import statistics
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import (  # noqa: E402
    _interleaved_samples,
    _mlps,
    glu_step_inputs,
    host_us,
    peak_mib,
    script_args,
    write_results,
)

MODULE = "generated/glu_silu_bf16_bn128_sm90.py"
SHAPES = [(3001, 4096, 11008), (8192, 4096, 14336), (4096, 2048, 5632)]


def main():
    mod, shapes = script_args(sys.argv[1:], MODULE, SHAPES)
    res = {}
    for M, K, N in shapes:
        x, gate_w, up_w, _ = glu_step_inputs(mod, M, K, N)
        down_w = (torch.randn(K, N, device="cuda") / N**0.5).to(mod.DTYPE)
        dz = torch.randn(M, K, device="cuda", dtype=mod.DTYPE)
        models = _mlps(mod, gate_w, up_w, down_w, with_liger=True, do_compile=False)
        models.pop("ours")  # (FusedGLU + nn.Linear: the bench's row)
        one = models.pop("fused")
        lins = one.to_linears()
        models = {
            "one": mod.FusedMLP.from_linears(*lins, weight_parts=False),
            "parts": mod.FusedMLP.from_linears(*lins, weight_parts=True),
            **models,
        }
        assert models["parts"].weight_b is not None and models["one"].weight_b is None

        def step(model):
            params = [x, *model.parameters()]

            def run():
                model(x).backward(dz)
                for p in params:
                    p.grad = None

            return run, params

        steps = {k: step(m) for k, m in models.items()}
        t = lambda fn, _: do_bench(fn, warmup=25, rep=100, return_mode="median")  # noqa: E731
        samples = _interleaved_samples(steps, t, 4)
        host = host_us({k: run for k, (run, _) in steps.items()})
        peaks = {k: peak_mib(run, params) for k, (run, params) in steps.items()}
        n_w = mod._weight_split(N)
        ratios = [p / o for p, o in zip(samples["parts"], samples["one"])]
        row = {
            "ms": {k: statistics.median(v) for k, v in samples.items()},
            "ms_rounds": samples,
            "parts_over_one": statistics.median(ratios),
            "parts_over_one_range": [min(ratios), max(ratios)],
            "host_us": host,
            "peak_mib": peaks,
            "splits": mod._mlp_split_point(M, K, N, K, n_w) < N,
            "model_mib": {
                "one": mod._mlp_peak(M, K, N, K) * 2 / 2**20,
                "parts": mod._mlp_peak(M, K, N, K, mod._mlp_split_point(M, K, N, K, n_w))
                * 2
                / 2**20,
            },
        }
        res[f"{M}x{K}x{N}"] = row
        print(
            f"{M}x{K}x{N} ({'splits' if row['splits'] else 'one buffer'}; parts/one per round "
            f"{row['parts_over_one']:.3f} [{min(ratios):.3f}, {max(ratios):.3f}]): "
            f"ms / host µs / peak MiB (model one {row['model_mib']['one']:.0f}, parts "
            f"{row['model_mib']['parts']:.0f})",
            flush=True,
        )
        for k in models:
            print(f"  {k:8s} {row['ms'][k]:8.3f} {host[k]:7.0f} {peaks[k]:7.0f}", flush=True)
        del x, gate_w, up_w, down_w, dz, models, steps, one, lins
        torch.cuda.empty_cache()
    write_results("mlp_parts_ab.json", {"device": torch.cuda.get_device_name(), "rows": res})


if __name__ == "__main__":
    main()
