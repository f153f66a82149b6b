"""Where one GLU layer's training step (fwd+bwd) spends its GPU time: every kernel of a few
profiled steps (torch.profiler, CUDA activity), per path of the module (as shipped; one factor
buffer; one autograd node) and Liger's, with each path's step time in interleaved rounds.

    PYTHONPATH=. python scripts/layer_kernels.py MODULE.py --shape 8192,4096,14336 [--rounds 8]
        [--smoke]

--smoke: a tiny shape on the CPU under TRITON_INTERPRET=1 (wall clock, the profiler's CPU
activity: a check that the script runs, not a measurement).  Results: $OUT/layer_kernels.json
(or build/) as well as the printed tables.
"""

import argparse
import collections
import os
import statistics
import sys
import time

SMOKE = "--smoke" in sys.argv
if SMOKE:
    os.environ["TRITON_INTERPRET"] = "1"  # before the module's kernels are decorated

import torch  # noqa: E402

sys.path.insert(0, ".")
sys.path.insert(0, "tests")
from codegen.bench import (  # noqa: E402
    _liger,
    _round_order,
    cuda_ms_per_call,
    kernels_by_name,
    load_module,
    profiled_kernels,
    write_results,
)

DEVICE = "cpu" if SMOKE else "cuda"


def steps(mod, M, K, N):
    """{path: step()} for the shape; each step is forward, then backward of a fixed dy (the
    gradients freed after it, as a training loop's zero_grad does)."""
    gen = torch.Generator(device=DEVICE).manual_seed(0)

    def randn(*shape, scale=1.0):
        return (torch.randn(*shape, device=DEVICE, generator=gen) * scale).to(mod.DTYPE)

    x = randn(M, K).requires_grad_()
    gate, up = randn(N, K, scale=K**-0.5), randn(N, K, scale=K**-0.5)
    packed = mod.pack_weight(gate, up).requires_grad_()
    dy = randn(M, N)

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
                x.grad = packed.grad = None

        return step

    paths = {
        "shipped": with_flags(),
        "one_buffer": with_flags(SPLIT_FACTORS=False),
        "one_node": with_flags(LOW_PEAK_MIN_FLOP=float("inf"), TWO_NODES_MIN_FLOP=float("inf")),
    }
    liger = _liger(mod.ACTIVATION)
    if liger is not None:
        g = gate.clone().requires_grad_()
        u = up.clone().requires_grad_()

        def liger_step():
            liger(x, g, u).backward(dy)
            x.grad = g.grad = u.grad = None

        paths["liger"] = liger_step
    return paths


def timed(step, n=5):
    """ms per step, ``n`` steps back to back (CUDA events; the wall clock with --smoke)."""
    if SMOKE:
        t0 = time.perf_counter()
        step()
        return (time.perf_counter() - t0) * 1e3
    return cuda_ms_per_call(step, n)


def kernels(step, n=3):
    """[(kernel name, calls per step, µs per step)], longest first (with --smoke: the CPU
    operators' own time instead)."""
    per = kernels_by_name(profiled_kernels(step, n, warm=1, cpu=SMOKE), n)
    return sorted(((name, c, us) for name, (c, us) in per.items()), key=lambda r: -r[2])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("module", nargs="?", default="generated/glu_silu_bf16_bn128_sm90.py")
    ap.add_argument("--shape", action="append")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    mod = load_module(args.module)
    if SMOKE:
        from interpreter_patch import widen_bf16_dot

        widen_bf16_dot()
        shapes, rounds = [(40, 32, 2 * mod.CHUNK)], 2
    else:
        if not args.shape:
            ap.error("--shape M,K,N is required (one or more)")
        shapes, rounds = [tuple(map(int, s.split(","))) for s in args.shape], args.rounds
    gpu = "CPU (smoke)" if SMOKE else torch.cuda.get_device_name()
    print(f"{mod.SPEC['name']}, {gpu}, torch {torch.__version__}")
    res = {}
    for M, K, N in shapes:
        paths = steps(mod, M, K, N)
        for step in paths.values():  # warm-up: compiles, fills the launch plans
            step()
        samples = collections.defaultdict(list)
        for r in range(rounds):
            for name, step in _round_order(paths, r):
                samples[name].append(timed(step))
        print(f"\n## {M}x{K}x{N}: step ms (median of {rounds} interleaved rounds)")
        row = {"ms": {}, "kernels": {}}
        for name, v in samples.items():
            row["ms"][name] = statistics.median(v)
            print(f"{name:12s} {statistics.median(v):8.3f}  (min {min(v):.3f}, max {max(v):.3f})")
        for name, step in paths.items():
            rows = kernels(step)
            row["kernels"][name] = rows
            print(f"\n{name}: {sum(r[2] for r in rows) / 1e3:.3f} ms of kernels per step")
            for kname, calls, us in rows:
                print(f"  {us:9.1f} us  {calls:4.1f}x  {kname[:110]}")
        res[f"{M}x{K}x{N}"] = row
    write_results("layer_kernels.json", res)


if __name__ == "__main__":
    main()
