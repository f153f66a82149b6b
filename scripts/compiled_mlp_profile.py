"""Where a compiled FusedGLU + nn.Linear MLP's GPU time goes, against the same MLP eager: the
bench's "compiled MLP x eager MLP" (issue 8: <= 1.01) read 1.043 [1.007, 1.198] per round at
8192x4096x14336 (v0.40, an H200) and 1.070 [1.048, 1.224] (v0.43, an H100), a GPU-bound step of
~12.5 ms, so not torch.compile's host cost.

    PYTHONPATH=. python scripts/compiled_mlp_profile.py MODULE.py [M,K,N ...]

Per shape: the bench's MLPs (codegen.bench._mlps: "ours" = FusedGLU + nn.Linear, its
torch.compile(fullgraph=True), the HF-style eager MLP), the same weights and inputs; each step
out.backward(dz) with the gradients set to None after it.  Prints (1) ms per step, medians of
ROUNDS interleaved rounds of STEPS steps (CUDA events), (2) each model's CUDA kernels in one
profiled step (torch.profiler, mean of PROFILED steps): name, calls, µs, against the same
model's other kernels, so that a kernel the compiled graph adds or runs slower shows by name.
Run with TORCH_LOGS=output_code to get the graph Inductor wrote."""

import statistics
import sys

import torch

sys.path.insert(0, ".")
from codegen.bench import (  # noqa: E402
    _interleaved_samples,
    _mlps,
    cuda_ms_per_call,
    fmt_ratio,
    kernels_by_name,
    load_module,
    profiled_kernels,
)

ROUNDS, STEPS, PROFILED = 8, 10, 3
NAMES = ("ours", "ours_compiled", "eager")


def _step(model, x, dz):
    params = [x, *model.parameters()]

    def step():
        model(x).backward(dz)
        for p in params:
            p.grad = None

    return step


def interleaved_ms(fns, calls, rounds):
    """{name: [ms per call in each round]}: the bench's interleaved rounds (every other one
    reversed) of ``calls`` calls of each function."""
    timed = {name: (fn, None) for name, fn in fns.items()}
    return _interleaved_samples(timed, lambda fn, _: cuda_ms_per_call(fn, calls), rounds)


def per_round(xs, ys):
    """ "median [min, max]" of xs[i] / ys[i] over the rounds."""
    ratios = [x / y for x, y in zip(xs, ys)]
    return fmt_ratio((statistics.median(ratios), min(ratios), max(ratios)))


def main(path, shapes):
    mod = load_module(path)
    print(f"{mod.SPEC['name']} on {torch.cuda.get_device_name()}, torch {torch.__version__}")
    torch.manual_seed(0)
    for M, K, N in shapes:
        dev, dt = "cuda", mod.DTYPE
        gate_w, up_w = (torch.randn(N, K, device=dev, dtype=dt) / K**0.5 for _ in range(2))
        down_w = torch.randn(K, N, device=dev, dtype=dt) / N**0.5
        x = torch.randn(M, K, device=dev, dtype=dt).requires_grad_()
        dz = torch.randn(M, K, device=dev, dtype=dt)
        models = _mlps(mod, gate_w, up_w, down_w, False, True)
        steps = {name: _step(models[name], x, dz) for name in NAMES}
        for step in steps.values():  # compile, warm up
            for _ in range(3):
                step()
        torch.cuda.synchronize()
        times = interleaved_ms(steps, STEPS, ROUNDS)
        print(f"\n{M}x{K}x{N}: ms per step, median [min, max] of {ROUNDS} rounds")
        for name in NAMES:
            ts = times[name]
            print(
                f"  {name:14s} {statistics.median(ts):8.3f} [{min(ts):.3f}, {max(ts):.3f}]"
                f"   x ours per round {per_round(ts, times['ours'])}"
            )
        for name in NAMES:
            ks = kernels_by_name(profiled_kernels(steps[name], PROFILED), PROFILED)
            total = sum(us for _, us in ks.values())
            print(f"\n  {name}: {total:.0f} µs of kernels per step, {len(ks)} kernels")
            for k, (calls, us) in sorted(ks.items(), key=lambda kv: -kv[1][1]):
                print(f"    {us:9.1f} µs  {calls:4.1f}x  {k[:110]}")
        del models, steps
        torch.cuda.empty_cache()


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    shapes = [tuple(int(v) for v in s.split(",")) for s in args[1:]] or [(8192, 4096, 14336)]
    main(args[0], shapes)
