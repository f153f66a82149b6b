"""Where FusedMLP's weight parts and preactivation split cost time (v0.50: on an H100 the split
step was 1.070x the one-Parameter step per round at 3001x4096x11008, 1.024x at 4096x2048x5632,
`scripts/mlp_parts_ab.py`): every kernel of one fwd+bwd step with its device time
(torch.profiler, CUDA activity, the median over the profiled steps), for FusedMLP with one packed
Parameter, with two parts as the rule takes them, with the split forced, and with one buffer
forced (PARTS_SPLIT_MIN_SAVING = inf); then the backward's GEMMs alone in both forms, timed
interleaved (grad_x as one GEMM or mm + addmm over the two buffers; the weight gradient as one
GEMM or two over the buffers' columns), so a slow form shows with its cuBLAS kernel.  GPU.

    PYTHONPATH=. python scripts/mlp_split_kernels.py [MODULE.py] [M,K,N ...]

Results: $OUT/mlp_split_kernels.json (or build/).
"""

import math
import statistics
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import (  # noqa: E402
    _interleaved_samples,
    _mlps,
    glu_step_inputs,
    kernels_per_step,
    script_args,
    with_constants,
    write_results,
)

MODULE = "generated/glu_silu_bf16_bn128_sm90.py"
SHAPES = [(3001, 4096, 11008), (4096, 2048, 5632)]
STEPS = 6


def main():
    mod, shapes = script_args(sys.argv[1:], MODULE, SHAPES)
    res = {}
    for M, K, N in shapes:
        x, gate_w, up_w, _ = glu_step_inputs(mod, M, K, N)
        down_w = (torch.randn(K, N, device="cuda") / N**0.5).to(mod.DTYPE)
        dz = torch.randn(M, K, device="cuda", dtype=mod.DTYPE)
        lins = _mlps(mod, gate_w, up_w, down_w, with_liger=False, do_compile=False)
        lins = lins["fused"].to_linears()  # (as scripts/mlp_parts_ab.py builds them)
        one = mod.FusedMLP.from_linears(*lins, weight_parts=False)
        parts = mod.FusedMLP.from_linears(*lins, weight_parts=True)
        n_w = mod._weight_split(N)
        split = mod._mlp_split_point(M, K, N, K, n_w)  # the rule's
        if split >= N:
            split = n_w  # (the forced split's, for the GEMMs below)

        def step(model, **constants):
            params = [x, *model.parameters()]
            run_step = with_constants(lambda: model(x).backward(dz), mod, **constants)

            def run():
                run_step()
                for p in params:
                    p.grad = None

            return run

        steps = {
            "one": step(one),
            "parts (rule)": step(parts),
            "parts split": step(parts, PARTS_SPLIT_ABOVE_UNFUSED=-1.0, PARTS_SPLIT_MIN_SAVING=-1.0),
            "parts one buffer": step(parts, PARTS_SPLIT_MIN_SAVING=math.inf),
        }
        row = {"split_point": split, "N": N, "kernels": {}}
        print(f"{M}x{K}x{N}: the split at {split} of {N} hidden units", flush=True)
        for name, run in steps.items():
            ks = kernels_per_step(run, STEPS)
            row["kernels"][name] = ks
            print(f"  {name}: {sum(t for _, t in ks):.1f} µs of kernels per step", flush=True)
            for k, t in ks:
                print(f"    {t:9.1f}  {k[:110]}", flush=True)
        t = lambda fn, _: do_bench(fn, warmup=25, rep=100, return_mode="median")  # noqa: E731
        samples = _interleaved_samples({k: (v, []) for k, v in steps.items()}, t, 4)
        row["step_ms"] = {k: statistics.median(v) for k, v in samples.items()}
        print("  step ms:", {k: round(v, 3) for k, v in row["step_ms"].items()}, flush=True)

        # the backward's GEMMs alone, one buffer vs two
        h = torch.randn(M, 2 * N, device="cuda", dtype=mod.DTYPE)
        ha, hb = h[:, : 2 * split].contiguous(), h[:, 2 * split :].contiguous()
        w = parts.weight.detach()
        wa, wb = w[: 2 * split], w[2 * split :]
        x2 = x.detach()
        gx = torch.empty(M, K, device="cuda", dtype=mod.DTYPE)
        gemms = {
            "grad_x one": lambda: torch.mm(h, w),
            "grad_x mm+addmm": lambda: torch.mm(ha, wa, out=gx).addmm_(hb, wb),
            "grad_W one": lambda: torch.mm(h.t(), x2),
            "grad_W two": lambda: (torch.mm(ha.t(), x2), torch.mm(hb.t(), x2)),
        }
        g = _interleaved_samples({k: (v, []) for k, v in gemms.items()}, t, 4)
        row["gemm_ms"] = {k: statistics.median(v) for k, v in g.items()}
        print("  GEMMs ms:", {k: round(v, 4) for k, v in row["gemm_ms"].items()}, flush=True)
        for name, fn in gemms.items():
            row["kernels"][name] = kernels_per_step(fn, STEPS)
            print(f"    {name}: " + "; ".join(f"{k[:70]} {t:.1f}" for k, t in row["kernels"][name]))
        res[f"{M}x{K}x{N}"] = row
        del x, gate_w, up_w, down_w, dz, one, parts, h, ha, hb, steps
        torch.cuda.empty_cache()
    write_results("mlp_split_kernels.json", {"device": torch.cuda.get_device_name(), "rows": res})


if __name__ == "__main__":
    main()
