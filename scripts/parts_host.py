"""Where FusedGLU's two-part weight costs host time (GPU): glu(x, packed) against glu(x, (weight_a,
weight_b)) (one tensor's rows, as FusedGLU holds them) at host-bound shapes.  The parts are
forced at every size (fused_glu_call(..., parts=True)): since v0.38 FusedGLU holds one packed Parameter
below it, and this script prices what the parts would cost there.

v0.26 and v0.27's ab_split runs measured the parts' step 100-200 µs of host time above the packed
weight's at small shapes (2048x1024x4096: 260 vs 464 µs, wall 0.289 vs 0.470 ms) where the CPU
harness (scripts/host_python_cpu.py --parts) sees +4-16 µs.  Per shape: fwd+bwd ms (interleaved
rounds) and host µs of packed / parts / parts with _joined memoised (the join computed once per
pair of parts) / eager; whether each part's gradient was stolen by AccumulateGrad (no copy);
then a torch.profiler table of the packed and the parts steps (CPU ops by self time, and the
CUDA kernels each step launched).

    PYTHONPATH=. python scripts/parts_host.py [MODULE.py] [M,K,N ...]

Results: $OUT/parts_host.json (or build/).
"""

import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import (  # noqa: E402
    _eager_glu,
    _interleaved,
    fused_glu_call,
    host_us,
    script_args,
    write_results,
)

MODULE = "generated/glu_silu_bf16_bn128_sm90.py"
SHAPES = [(2048, 1024, 4096), (2048, 4096, 1408)]


def memoised_join(mod):
    """mod._joined with its answer kept per pair of parts (keyed by the tensors' ids and
    addresses): what a cached join would save."""
    real, memo = mod._joined, {}

    def joined(weight, weight_b):
        if weight_b is None:
            return real(weight, weight_b)
        key = (id(weight), id(weight_b), weight.data_ptr(), weight_b.data_ptr())
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = real(weight, weight_b)
        return hit

    return joined


def main():
    mod, shapes = script_args(sys.argv[1:], MODULE, SHAPES)
    res = {}
    for M, K, N in shapes:
        torch.manual_seed(0)
        x = torch.randn(M, K, device="cuda", dtype=mod.DTYPE, requires_grad=True)
        w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(mod.DTYPE).requires_grad_()
        dy = torch.randn(M, N, device="cuda", dtype=mod.DTYPE)
        glu_parts, (_, *parts) = fused_glu_call(mod, w, x, parts=True)  # at any size (v0.38)
        real_join = mod._joined
        fast_join = memoised_join(mod)

        def parts_memo(x, wa, wb):
            mod._joined = fast_join
            try:
                return glu_parts(x, wa, wb)
            finally:
                mod._joined = real_join

        calls = {
            "packed": (mod.glu, (x, w)),
            "parts": (glu_parts, (x, *parts)),
            "parts_memo_join": (parts_memo, (x, *parts)),
            "eager": (_eager_glu(mod), (x, w)),
        }

        def step(fn, inputs):
            def run():
                fn(*inputs).backward(dy)
                for t in inputs:
                    t.grad = None

            return run

        steps = {k: (step(f, a), None) for k, (f, a) in calls.items()}
        for run, _ in steps.values():
            run()
        t = lambda fn, _: do_bench(fn, warmup=25, rep=100, return_mode="median")  # noqa: E731
        ms = _interleaved(steps, t, 6)
        host = host_us({k: run for k, (run, _) in steps.items()})
        # did AccumulateGrad steal each part's gradient (a view of one [2N, K] GEMM result)?
        glu_parts(x, *parts).backward(dy)
        ga, gb = parts[0].grad, parts[1].grad
        stolen = {
            "a_is_view": ga._is_view(),
            "b_is_view": gb._is_view(),
            "adjacent": gb.data_ptr() == ga.data_ptr() + ga.numel() * ga.element_size(),
        }
        x.grad = None
        for p in parts:
            p.grad = None
        print(f"{M}x{K}x{N}: ms / host µs; grads of the parts: {stolen}", flush=True)
        for k in calls:
            print(f"  {k:16s} {ms[k]:8.3f} {host[k]:7.0f}", flush=True)
        tables = {}
        for k in ("packed", "parts"):
            run = steps[k][0]
            torch.cuda.synchronize()
            with torch.profiler.profile(
                activities=[
                    torch.profiler.ProfilerActivity.CPU,
                    torch.profiler.ProfilerActivity.CUDA,
                ]
            ) as prof:
                for _ in range(20):
                    run()
                torch.cuda.synchronize()
            table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=22)
            tables[k] = table
            print(f"--- {M}x{K}x{N} {k}: torch.profiler, 20 steps", flush=True)
            print(table, flush=True)
        res[f"{M}x{K}x{N}"] = {"ms": ms, "host_us": host, "grads": stolen, "profiles": tables}
    write_results("parts_host.json", res)


if __name__ == "__main__":
    main()
