"""Host µs, GPU ms and peak MiB of a GLU training step with the factors in one [M, 2N] buffer
or split in two halves, against eager PyTorch; host µs measured two ways:

- queued: batches of 20 steps back to back (the bench's way): at a GPU-bound shape the launch
  queue may fill, and then a launch waits for the GPU (the host time includes GPU time);
- idle: one step at a time after a synchronize: the CPU time to issue one step from an empty
  queue (nothing waits for the GPU).

    PYTHONPATH=. python scripts/host_split.py generated/glu_silu_bf16_bn128_sm90.py [M,K,N ...]
"""

import sys

import torch
from triton.testing import do_bench

from codegen.bench import _eager_glu, load_module
from codegen.bench import host_us as bench_host_us

SHAPES = ["11136,3584,14336", "4096,2048,5632", "16384,8192,28672", "2048,4096,1408"]


def main():
    mod = load_module(sys.argv[1])
    shapes = [tuple(int(v) for v in s.split(",")) for s in (sys.argv[2:] or SHAPES)]
    print(f"{torch.cuda.get_device_name()} torch {torch.__version__} {mod.SPEC['name']}")
    for M, K, N in shapes:
        dev, dt = "cuda", mod.DTYPE
        x = torch.randn(M, K, device=dev, dtype=dt, requires_grad=True)
        w = (torch.randn(2 * N, K, device=dev) / K**0.5).to(dt).requires_grad_()
        wc = w.detach().clone().requires_grad_()
        dy = torch.randn(M, N, device=dev, dtype=dt)
        eager_glu = _eager_glu(mod)

        def ours(split):
            def step():
                mod.SPLIT_FACTORS, mod.LOW_PEAK_MIN_FLOP = split, 0.0
                mod.glu(x, w).backward(dy)
                x.grad = w.grad = None

            return step

        def eager():
            eager_glu(x, wc).backward(dy)
            x.grad = wc.grad = None

        steps = {"one": ours(False), "split": ours(True), "eager": eager}
        queued = bench_host_us(steps, n=20, rounds=7, warmup=3)
        idle = bench_host_us(steps, n=1, rounds=41, warmup=3)
        gpu = {k: [] for k in steps}
        for _ in range(3):
            for name, step in steps.items():
                gpu[name].append(do_bench(step, warmup=10, rep=50, return_mode="median"))
        peak = {}
        for name, step in steps.items():
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            step()
            torch.cuda.synchronize()
            peak[name] = (torch.cuda.max_memory_allocated() - base) / 2**20
        print(f"{M}x{K}x{N}")
        for name in steps:
            ms = sorted(gpu[name])[1]
            print(
                f"  {name:6s} host queued {queued[name]:7.1f} us  idle {idle[name]:7.1f} us"
                f"  fwd+bwd {ms:8.3f} ms  peak {peak[name]:7.1f} MiB",
                flush=True,
            )
        mod.SPLIT_FACTORS, mod.LOW_PEAK_MIN_FLOP = True, 1e12
        del x, w, wc, dy


if __name__ == "__main__":
    main()
