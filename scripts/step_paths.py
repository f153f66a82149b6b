"""One training step (glu fwd+bwd) with the forward's fused kernel against the GEMM + pass path
(the wave rule on / off in the same module): do_bench of the step (interleaved medians, grads
set to None each step), and each path's GPU kernels from torch.profiler (name, µs, and the
step's GPU busy time against its wall time).

    PYTHONPATH=. python scripts/step_paths.py MODULE.py M,K,N [M,K,N ...]
"""

import statistics
import sys

import torch
from torch.profiler import ProfilerActivity, profile
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import load_module  # noqa: E402


def main():
    mod = load_module(sys.argv[1])
    rule = mod.UNFUSED_MIN_SAVING_US
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    for shape in sys.argv[2:]:
        M, K, N = map(int, shape.split(","))
        x = torch.randn(M, K, device="cuda", dtype=mod.DTYPE, requires_grad=True)
        w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(mod.DTYPE).requires_grad_()
        dy = torch.randn(M, N, device="cuda", dtype=mod.DTYPE)

        def step():
            mod.glu(x, w).backward(dy)
            x.grad = w.grad = None

        def with_rule(k):
            def run():
                mod.UNFUSED_MIN_SAVING_US = k
                try:
                    step()
                finally:
                    mod.UNFUSED_MIN_SAVING_US = rule

            return run

        paths = {
            "module's rule": with_rule(rule),
            "fused forward": with_rule(float("inf")),
            "GEMM + pass": with_rule(float("-inf")),
        }
        ms = {k: [] for k in paths}
        for _ in range(5):
            for k, f in paths.items():
                ms[k].append(do_bench(f, warmup=10, rep=50, return_mode="median"))
        print(f"{M}x{K}x{N}: fwd+bwd ms (do_bench, median of 5 interleaved)")
        for k in paths:
            print(f"  {k:16s} {statistics.median(ms[k]):.4f}")
        for k in ("fused forward", "GEMM + pass"):
            f = paths[k]
            for _ in range(5):
                f()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for _ in range(10):
                    f()
                torch.cuda.synchronize()
            events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
            busy = sum(e.device_time for e in events) / 10
            print(f"  {k}: GPU busy {busy:.1f} µs per step; kernels per step:")
            seen = {}
            for e in events:
                seen.setdefault(e.name, []).append(e.device_time)
            for name, times in seen.items():
                print(
                    f"    {len(times) / 10:4.1f} x {statistics.median(times):8.1f} µs  {name[:90]}"
                )


if __name__ == "__main__":
    main()
