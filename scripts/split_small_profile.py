"""Where the parts' split loses at small steps (GPU): FusedGLU's weight in two parts, one buffer
against the split factors (LOW_PEAK_MIN_FLOP = 0), per shape: the step's kernels and their
device time (torch.profiler, CUDA activity, summed over the steps), the step's wall time
(do_bench) and the host's time to issue it (codegen.bench.host_us), interleaved.  If the
kernels' sums match and the wall times do not, the split's cost is the host's.

    PYTHONPATH=. python scripts/split_small_profile.py [MODULE.py] [M,K,N ...]

Results: $OUT/split_small_profile.json (or build/).
"""

import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import (  # noqa: E402
    _interleaved,
    fused_glu_call,
    glu_step_inputs,
    host_us,
    kernels_by_name,
    profiled_kernels,
    script_args,
    with_constants,
    write_results,
)

MODULE = "generated/glu_silu_bf16_bn128_sm90.py"
SHAPES = [(2048, 1024, 4096), (1000, 2048, 5632), (4096, 2048, 5632)]
STEPS = 20


def kernels(run, steps=STEPS):
    """{kernel name: device µs per step} and their sum, over ``steps`` steps."""
    per = {}
    for name, (_, us) in kernels_by_name(profiled_kernels(run, steps, warm=3), steps).items():
        per[name[:90]] = per.get(name[:90], 0.0) + us
    return per, sum(per.values())


def main():
    mod, shapes = script_args(sys.argv[1:], MODULE, SHAPES)
    res = {}
    for M, K, N in shapes:
        x, gate_w, up_w, dy = glu_step_inputs(mod, M, K, N)
        w = mod.pack_weight(gate_w, up_w)
        glu_parts, (_, *parts) = fused_glu_call(mod, w, x, parts=True)

        def step(fn):
            def run():
                fn(x, *parts).backward(dy)
                x.grad = None
                for p in parts:
                    p.grad = None

            return run

        paths = {
            "one_buffer": step(with_constants(glu_parts, mod, LOW_PEAK_MIN_FLOP=float("inf"))),
            "split": step(with_constants(glu_parts, mod, LOW_PEAK_MIN_FLOP=0)),
        }
        t = lambda fn, _: do_bench(fn, warmup=25, rep=100, return_mode="median")  # noqa: E731
        ms = _interleaved({k: (r, None) for k, r in paths.items()}, t, 6)
        host = host_us(paths)
        row = {"ms": ms, "host_us": host, "kernels_us": {}, "kernel_sum_us": {}}
        print(f"{M}x{K}x{N}: ms / host µs / kernels' device µs per step", flush=True)
        for k, run in paths.items():
            per, total = kernels(run)
            row["kernels_us"][k], row["kernel_sum_us"][k] = per, total
            print(f"  {k:10s} {ms[k]:7.3f} {host[k]:7.0f} {total:8.1f}", flush=True)
            for name, us in sorted(per.items(), key=lambda kv: -kv[1]):
                print(f"      {us:8.1f}  {name}")
        res[f"{M}x{K}x{N}"] = row
        del x, w, gate_w, up_w, dy, parts, paths
        torch.cuda.empty_cache()
    write_results("split_small_profile.json", res)


if __name__ == "__main__":
    main()
