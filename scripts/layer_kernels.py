"""Where one GLU layer's training step (fwd+bwd) spends its GPU time: every kernel of a few
profiled steps (torch.profiler, CUDA activity), per path of the module (as shipped; one factor
buffer; one autograd node) and Liger's, with each path's step time in interleaved rounds.

    PYTHONPATH=. python scripts/layer_kernels.py MODULE.py --shape 8192,4096,14336 [--rounds 8]
"""

import argparse
import collections
import statistics

import torch
from torch.profiler import ProfilerActivity, profile

from codegen.bench import _liger, load_module


def steps(mod, M, K, N):
    """{path: step()} for the shape; each step is forward, then backward of a fixed dy."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(M, K, device="cuda", dtype=mod.DTYPE, generator=gen).requires_grad_()
    gate = torch.randn(N, K, device="cuda", dtype=mod.DTYPE, generator=gen) * K**-0.5
    up = torch.randn(N, K, device="cuda", dtype=mod.DTYPE, generator=gen) * K**-0.5
    packed = mod.pack_weight(gate, up).requires_grad_()
    dy = torch.randn(M, N, device="cuda", dtype=mod.DTYPE, generator=gen)

    def with_flags(**flags):
        def step():
            old = {k: getattr(mod, k) for k in flags}
            for k, v in flags.items():
                setattr(mod, k, v)
            try:
                mod.glu(x, packed).backward(dy)
            finally:
                for k, v in old.items():
                    setattr(mod, k, v)

        return step

    paths = {
        "shipped": with_flags(),
        "one_buffer": with_flags(SPLIT_FACTORS=False),
        "one_node": with_flags(LOW_PEAK_MIN_FLOP=float("inf")),
    }
    liger = _liger(mod.ACTIVATION)
    if liger is not None:
        g = gate.clone().requires_grad_()
        u = up.clone().requires_grad_()
        paths["liger"] = lambda: liger(x, g, u).backward(dy)
    return paths


def timed(step, n=5):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(n):
        step()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / n


def kernels(step, n=3):
    """[(kernel name, calls per step, µs per step)], longest first."""
    step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            step()
        torch.cuda.synchronize()
    total = collections.defaultdict(lambda: [0, 0.0])
    cuda = torch.autograd.DeviceType.CUDA
    for e in prof.events():
        if e.device_type == cuda:
            total[e.name][0] += 1
            total[e.name][1] += e.device_time_total
    rows = [(name, c / n, us / n) for name, (c, us) in total.items()]
    return sorted(rows, key=lambda r: -r[2])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("module")
    ap.add_argument("--shape", action="append", required=True)
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    mod = load_module(args.module)
    print(f"{mod.SPEC['name']}, {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for text in args.shape:
        M, K, N = map(int, text.split(","))
        paths = steps(mod, M, K, N)
        for step in paths.values():  # warm-up: compiles, fills the launch plans
            step()
        samples = collections.defaultdict(list)
        for r in range(args.rounds):
            order = list(paths.items())
            for name, step in order if r % 2 == 0 else order[::-1]:
                samples[name].append(timed(step))
        print(f"\n## {M}x{K}x{N}: step ms (median of {args.rounds} interleaved rounds)")
        for name, v in samples.items():
            print(f"{name:12s} {statistics.median(v):8.3f}  (min {min(v):.3f}, max {max(v):.3f})")
        for name, step in paths.items():
            rows = kernels(step)
            print(f"\n{name}: {sum(r[2] for r in rows) / 1e3:.3f} ms of kernels per step")
            for kname, calls, us in rows:
                print(f"  {us:9.1f} us  {calls:4.1f}x  {kname[:110]}")


if __name__ == "__main__":
    main()
