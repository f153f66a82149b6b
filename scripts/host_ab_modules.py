"""Host µs per training step (CPU time to issue one fwd+bwd) of several builds of one module
beside eager PyTorch, all in the same interleaved rounds (codegen.bench.host_us), and the
step's fwd+bwd ms (do_bench medians, interleaved): an A/B of a host-cost change.

    PYTHONPATH=. python scripts/host_ab_modules.py OLD.py NEW.py [...] --shape M,K,N [...]
        [--mlp] [--compiled] [--rounds R]

--mlp adds each module's FusedMLP step (mlp()) and an eager MLP; --compiled the whole MLP under
torch.compile(fullgraph=True) for each module (FusedGLU + nn.Linear, and mlp()) beside the same
MLPs in eager mode and a compiled eager (HF-style) MLP.  Give A/B copies distinct file names
(torch.compile finds a module by its name)."""

import argparse
import statistics

import torch
import torch.nn.functional as F
from triton.testing import do_bench

from codegen.bench import _eager_glu, host_us, load_module


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("modules", nargs="+")
    ap.add_argument("--shape", action="append", required=True)
    ap.add_argument("--mlp", action="store_true")
    ap.add_argument("--compiled", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--stubbed",
        action="store_true",
        help="also each module with its Triton launches stubbed out (the Python and cuBLAS alone)",
    )
    args = ap.parse_args()
    mods = {f"{i}:{p.rsplit('/', 1)[-1]}": load_module(p) for i, p in enumerate(args.modules)}
    first = next(iter(mods.values()))
    print(
        f"{torch.cuda.get_device_name()} torch {torch.__version__} triton {first.triton.__version__}"
    )
    for shape in args.shape:
        M, K, N = map(int, shape.split(","))
        dt = first.DTYPE
        x = torch.randn(M, K, device="cuda", dtype=dt, requires_grad=True)
        w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(dt).requires_grad_()
        wd = (torch.randn(K, N, device="cuda") / N**0.5).to(dt).requires_grad_()
        wc = w.detach().clone().requires_grad_()
        dy = torch.randn(M, N, device="cuda", dtype=dt)
        dz = torch.randn(M, K, device="cuda", dtype=dt)
        eager_glu = _eager_glu(first)
        steps = {}
        for name, mod in mods.items():

            def step(mod=mod):
                mod.glu(x, w).backward(dy)

            steps[name] = step
        if args.stubbed:
            for name, path in zip(list(mods), args.modules):
                stub = load_module(path)  # its own copy: only this one's launches are stubbed
                stub._launch = lambda *a, **k: None
                steps[f"{name}, launches stubbed"] = lambda stub=stub: stub.glu(x, w).backward(dy)

        class Bare(torch.autograd.Function):  # the Function, its buffers and the two GEMMs
            @staticmethod
            def forward(ctx, x, w):
                f = torch.empty((M, 2 * N), device=x.device, dtype=dt)
                ctx.save_for_backward(x, w, f)
                return torch.empty((M, N), device=x.device, dtype=dt)

            @staticmethod
            def backward(ctx, g):
                x, w, f = ctx.saved_tensors
                return torch.mm(f, w), torch.mm(f.t(), x)

        steps["bare Function + 2 mm"] = lambda: Bare.apply(x, w).backward(dy)
        steps["eager"] = lambda: eager_glu(x, wc).backward(dy)
        if args.mlp:
            for name, mod in mods.items():
                steps[f"mlp {name}"] = lambda mod=mod: mod.mlp(x, w, wd).backward(dz)
            steps["mlp eager"] = lambda: F.linear(eager_glu(x, wc), wd).backward(dz)
        if args.compiled:
            for name, mod in mods.items():
                steps.update(_compiled_mlps(name, mod, x, w, wd, dz))

            def eager_mlp(x):  # SwiGLU in plain ops (the registry's expression uses eval)
                left, gate = F.linear(x, wc).chunk(2, dim=-1)
                return F.linear(F.silu(gate) * left, wd)

            steps["mlp eager (HF-style)"] = lambda: eager_mlp(x).backward(dz)
            compiled = torch.compile(eager_mlp, fullgraph=True)
            steps["mlp eager (HF-style), compiled"] = lambda: compiled(x).backward(dz)
        for step in steps.values():  # compile / warm up; the grads accumulate from here on
            step()
        torch.cuda.synchronize()
        us = {k: [] for k in steps}
        for _ in range(args.rounds):
            for k, v in host_us(steps, n=20, rounds=7).items():
                us[k].append(v)
        ms = {k: [] for k in steps}
        for _ in range(args.rounds):
            for k, step in steps.items():
                ms[k].append(do_bench(step, warmup=10, rep=50, return_mode="median"))
        print(
            f"{M}x{K}x{N}: host µs per step (median of {args.rounds} host_us medians; each) | fwd+bwd ms"
        )
        for k in steps:
            print(
                f"  {k:44s} {statistics.median(us[k]):7.1f}  ({' '.join(f'{v:.0f}' for v in us[k])})"
                f" | {statistics.median(ms[k]):.4f}"
            )


def _compiled_mlps(name, mod, x, w, wd, dz):
    """The module's MLPs (FusedGLU + nn.Linear; mlp()) in eager mode and compiled."""

    def glu_linear(x):
        return F.linear(mod.glu(x, w), wd)

    def fused(x):
        return mod.mlp(x, w, wd)

    steps = {}
    for what, fn in (("glu+linear", glu_linear), ("mlp()", fused)):
        compiled = torch.compile(fn, fullgraph=True)
        steps[f"mlp {what} {name}"] = lambda fn=fn: fn(x).backward(dz)
        steps[f"mlp {what} {name}, compiled"] = lambda c=compiled: c(x).backward(dz)
    return steps


if __name__ == "__main__":
    main()
