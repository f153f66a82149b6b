"""FusedMLP against FusedGLU + nn.Linear, kernel by kernel (v0.53: at 16384x8192x28672 on an
H100 FusedMLP's step took 106.4 / 106.1 ms against 103.0 / 101.8 for FusedGLU + nn.Linear, SwiGLU
/ GeGLU-tanh, while at 11136x3584x14336 and 8192x4096x14336 it was at or below it; by traffic
the two steps differ by one [M, N] write, ~0.3 ms there).  For each shape: every kernel of one
fwd+bwd step with its device time (torch.profiler, CUDA activity, the median over the profiled
steps), for both MLPs and for FusedMLP with the other dgrad path (FUSED_DGRAD flipped), .grad
accumulated as the bench's step does; then the steps timed in interleaved rounds (CUDA events,
``STEPS_PER_ROUND`` back-to-back steps per sample), so a kernel-sum gap can be set against the
step's.  GPU.

    PYTHONPATH=. python scripts/mlp_vs_glu_kernels.py [MODULE.py] [M,K,N ...]

Results: $OUT/mlp_vs_glu_kernels.json (or build/).
"""

import statistics
import sys

import torch

sys.path.insert(0, ".")
from codegen.bench import (  # noqa: E402
    _flag_flipped,
    _interleaved_samples,
    _mlps,
    cuda_ms_per_call,
    glu_step_inputs,
    kernels_per_step,
    paired_ratio,
    script_args,
    write_results,
)

MODULE = "generated/glu_silu_bf16_bn128_sm90.py"
SHAPES = [(16384, 8192, 28672), (11136, 3584, 14336)]
STEPS = 4
ROUNDS = 8
STEPS_PER_ROUND = 3


def event_ms(fn, _grads=None, n=STEPS_PER_ROUND):
    """ms per call of fn (bench.cuda_ms_per_call over n calls, after one warm call)."""
    fn()
    return cuda_ms_per_call(fn, n)


def short(name, width=96):
    return name if len(name) <= width else name[: width - 3] + "..."


def main():
    mod, shapes = script_args(sys.argv[1:], MODULE, SHAPES)
    print(torch.cuda.get_device_name(), torch.__version__, mod.SPEC["name"], flush=True)
    res = {}
    for M, K, N in shapes:
        x, gate_w, up_w, _ = glu_step_inputs(mod, M, K, N)
        down_w = (torch.randn(K, N, device="cuda") / N**0.5).to(mod.DTYPE)
        dz = torch.randn(M, K, device="cuda", dtype=mod.DTYPE)
        models = _mlps(mod, gate_w, up_w, down_w, with_liger=False, do_compile=False)

        def step(model):
            return lambda: model(x).backward(dz)  # .grad accumulated, as the bench's step

        steps = {
            "ours (FusedGLU + nn.Linear)": step(models["ours"]),
            "fused (FusedMLP)": step(models["fused"]),
            f"fused, FUSED_DGRAD={not mod.FUSED_DGRAD}": _flag_flipped(
                mod, "FUSED_DGRAD", step(models["fused"])
            ),
        }
        row = {"kernels": {}}
        print(f"{M}x{K}x{N}", flush=True)
        for name, run in steps.items():
            ks = kernels_per_step(run, STEPS, warm=2)
            row["kernels"][name] = ks
            print(f"  {name}: {sum(t for _, t in ks) / 1e3:.3f} ms of kernels per step", flush=True)
            for k, t in ks:
                print(f"    {t:10.1f}  {short(k)}", flush=True)
        samples = _interleaved_samples({k: (v, []) for k, v in steps.items()}, event_ms, ROUNDS)
        row["step_ms_rounds"] = samples
        row["step_ms"] = {k: statistics.median(v) for k, v in samples.items()}
        rounds = {f"{k}_rounds": v for k, v in samples.items()}
        for k in samples:
            med, lo, hi = paired_ratio(rounds, k, "ours (FusedGLU + nn.Linear)")
            print(
                f"  step {k}: {row['step_ms'][k]:.3f} ms; x ours per round "
                f"{med:.3f} [{lo:.3f}, {hi:.3f}]",
                flush=True,
            )
        res[f"{M}x{K}x{N}"] = row
        del x, gate_w, up_w, down_w, dz, models, steps
        torch.cuda.empty_cache()
    path = write_results(
        "mlp_vs_glu_kernels.json", {"device": torch.cuda.get_device_name(), "rows": res}
    )
    print("->", path)


if __name__ == "__main__":
    main()
