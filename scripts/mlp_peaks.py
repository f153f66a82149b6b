"""FusedMLP's peak during fwd+bwd in each backward order (DOWN_GRAD_ORDER first / last / auto)
against Liger's MLP and HF-style eager, measured as the bench measures its MLP rows (codegen.bench
peak_mib over model(x).backward(dz), dz held by the caller), and the model's prediction
(_mlp_peaks, in MiB, plus the weights' gradients' and x's that both orders hold), and beside
Liger's the split rule's model of it (_unfused_mlp_peak plus out, v0.50).  GPU.

    PYTHONPATH=. python scripts/mlp_peaks.py [MODULE.py] [M,K,N ...]

v0.48 predicted 380 / 1388 / 408 MiB for "auto" at 1024x4096x14336 / 512x8192x28672 /
3001x4096x11008 (Liger's MLP: 388 / 1397 / 392).  Results: $OUT/mlp_peaks.json (or build/).
"""

import sys

import torch

sys.path.insert(0, ".")
from codegen.bench import (  # noqa: E402
    _mlps,
    glu_step_inputs,
    peak_mib,
    script_args,
    write_results,
)

MODULE = "generated/glu_silu_bf16_bn128_sm90.py"
SHAPES = [(1024, 4096, 14336), (512, 8192, 28672), (3001, 4096, 11008), (65536, 1024, 2816)]


def main():
    mod, shapes = script_args(sys.argv[1:], MODULE, SHAPES)
    rows = []
    for M, K, N in shapes:
        x, gate_w, up_w, _ = glu_step_inputs(mod, M, K, N)
        down_w = (torch.randn(K, N, device="cuda") / N**0.5).to(mod.DTYPE)
        dz = torch.randn(M, K, device="cuda", dtype=mod.DTYPE)
        models = _mlps(mod, gate_w, up_w, down_w, with_liger=True, do_compile=False)
        row = {"shape": [M, K, N]}
        for name, model in models.items():
            params = [x, *model.parameters()]

            def step(model=model):
                model(x).backward(dz)

            if name != "fused":
                row[name] = peak_mib(step, params)
                continue
            for order in ("first", "last", "auto"):
                mod.DOWN_GRAD_ORDER = order
                step()  # the first call's workspaces are not the step's
                row[f"fused_{order}"] = peak_mib(step, params)
            mod.DOWN_GRAD_ORDER = "auto"
        first, last = mod._mlp_peaks(M, K, N, K)
        # (the model's elements, without out [M, K], which the step's caller holds too)
        row["model_first"], row["model_last"] = (e * 2 / 2**20 for e in (first, last))
        row["chosen"] = "last" if mod._down_grad_last(M, K, N, K) else "first"
        if hasattr(mod, "_unfused_mlp_peak"):  # (v0.50) the split rule's model of Liger's MLP
            row["model_unfused"] = (mod._unfused_mlp_peak(M, K, N, K) + M * K) * 2 / 2**20
        rows.append(row)
        print(
            f"{M}x{K}x{N}: fused first/last/auto {row['fused_first']:.0f}/{row['fused_last']:.0f}/"
            f"{row['fused_auto']:.0f} (model {row['model_first']:.0f}/{row['model_last']:.0f}, "
            f"auto -> {row['chosen']}); liger {row.get('liger', float('nan')):.0f} (model "
            f"{row.get('model_unfused', float('nan')):.0f}); "
            f"ours (FusedGLU + Linear) {row['ours']:.0f}; eager {row['eager']:.0f} MiB",
            flush=True,
        )
        del models, x, gate_w, up_w, down_w, dz
        torch.cuda.empty_cache()
    print(write_results("mlp_peaks.json", {"device": torch.cuda.get_device_name(), "rows": rows}))


if __name__ == "__main__":
    main()
