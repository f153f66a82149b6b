"""--math precise vs approx on the GPU: the same variant rendered both ways, timed in one process
and checked against float64.  Each precise / approx pair is timed back to back, the pair's order
reversed every other round (medians of 6 rounds); the training forward has an A/A control (the
precise forward timed twice) whose ratio shows the spread.

Per shape: training and inference forward x cuBLAS F.linear, the GLU fwd+bwd step and the
FusedMLP fwd+bwd step (ms, both modules as generated: their own forward rules), and each
module's relative error of out, grad_x and grad_W against a float64 reference.  The v0.16
prediction under test (README "Fast math"): training forward -1.6..-5.3%, inference up to -6%,
a GLU step -0.5..-1.8%; errors ~1e-4 norm-relative.

    PYTHONPATH=. python scripts/ab_math.py [--quick] [--smoke]

--quick: two shapes; --smoke: tiny shapes on the CPU under TRITON_INTERPRET=1 (wall clock, a
check that the script runs, not a measurement).  Results: $OUT/ab_math.json (or build/).
"""

import os
import statistics
import sys
import time

SMOKE = "--smoke" in sys.argv
if SMOKE:
    os.environ["TRITON_INTERPRET"] = "1"  # before the modules' kernels are decorated

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, ".")
sys.path.insert(0, "tests")
from codegen.bench import _round_order, load_module, write_results  # noqa: E402

MODULES = {
    "precise": "generated/glu_silu_bf16_bn128_sm90.py",
    "approx": "generated/glu_silu_bf16_bn128_sm90_approx.py",
}
SHAPES = [
    (4096, 2048, 5632),
    (65536, 1024, 2816),
    (8192, 4096, 14336),
    (11136, 3584, 14336),
    (2048, 4096, 1408),
]
DEVICE = "cpu" if SMOKE else "cuda"


def timer():
    if SMOKE:

        def wall(fn):
            t0 = time.perf_counter()
            fn()
            return (time.perf_counter() - t0) * 1e3

        return wall
    from triton.testing import do_bench

    return lambda fn: do_bench(fn, warmup=10, rep=60, return_mode="median")


def rel(a, b):
    return ((a.double() - b).norm() / b.norm()).item()


def problem(M, K, N, dt):
    torch.manual_seed(0)
    x = torch.randn(M, K, device=DEVICE).to(dt)
    gate_w = (torch.randn(N, K, device=DEVICE) / K**0.5).to(dt)
    up_w = (torch.randn(N, K, device=DEVICE) / K**0.5).to(dt)
    down_w = (torch.randn(K, N, device=DEVICE) / N**0.5).to(dt)
    dy = torch.randn(M, N, device=DEVICE).to(dt)
    return x, gate_w, up_w, down_w, dy


def errors(mod, x, gate_w, up_w, dy):
    """out, grad_x, grad_W (packed) of glu against float64 autograd of the reference."""
    xd, gd, ud = (t.double().requires_grad_() for t in (x, gate_w, up_w))
    ref = (xd @ ud.t()) * F.silu(xd @ gd.t())  # float64: left * silu(gate)
    ref.backward(dy.double())
    packed = mod.pack_weight(gate_w, up_w).requires_grad_()
    xg = x.clone().requires_grad_()
    out = mod.glu(xg, packed)
    out.backward(dy)
    return {
        "out": rel(out, ref.detach()),
        "grad_x": rel(xg.grad, xd.grad),
        "grad_W": rel(packed.grad, mod.pack_weight(gd.grad, ud.grad)),
    }


WHAT = ("train_fwd", "infer_fwd", "glu_step", "mlp_step")


def paired_rounds(fns, t, rounds):
    """{name: median ms}: cuBLAS, then each group to compare (precise / approx; the training
    forward with the A/A control between them) timed back to back, the group's order reversed
    every other round, so that both sides of a ratio follow the same neighbours as often (on an
    H200 at its power limit the clock depends on what ran just before: perf log v0.18)."""
    groups = [("cublas",), ("train_fwd_precise", "train_fwd_again", "train_fwd_approx")]
    groups += [(f"{what}_precise", f"{what}_approx") for what in WHAT[1:]]
    samples = {k: [] for k in fns}
    for r in range(rounds):
        for group in groups:
            for name, fn in _round_order({name: fns[name] for name in group}, r):
                samples[name].append(t(fn))
    return {k: statistics.median(v) for k, v in samples.items()}


def main():
    mods = {k: load_module(v) for k, v in MODULES.items()}
    assert mods["precise"].MATH == "precise" and mods["approx"].MATH == "approx"
    dt = mods["precise"].DTYPE
    if SMOKE:
        from interpreter_patch import widen_bf16_dot

        widen_bf16_dot()
    shapes = [(70, 32, 2 * mods["precise"].CHUNK)] if SMOKE else SHAPES
    if "--quick" in sys.argv and not SMOKE:
        shapes = shapes[:2]
    t = timer()
    rounds = 1 if SMOKE else 6
    res = {}
    for M, K, N in shapes:
        x, gate_w, up_w, down_w, dy = problem(M, K, N, dt)
        row = {"errors": {k: errors(m, x, gate_w, up_w, dy) for k, m in mods.items()}}
        w = mods["precise"].pack_weight(gate_w, up_w)
        fns = {"cublas": lambda: F.linear(x, w)}
        for name, mod in mods.items():
            wg = w.clone().requires_grad_()
            xg = x.clone().requires_grad_()
            mlp = mod.FusedMLP(K, N, device=DEVICE)
            with torch.no_grad():
                mlp.weight.copy_(w)
                mlp.down_weight.copy_(down_w)
            dz = torch.randn(M, K, device=DEVICE).to(dt)

            def glu_step(mod=mod, wg=wg, xg=xg):
                mod.glu(xg, wg).backward(dy)
                xg.grad = wg.grad = None

            def mlp_step(mlp=mlp, xg=xg):
                mlp(xg).backward(dz)
                xg.grad = None
                for p in mlp.parameters():
                    p.grad = None

            fns[f"train_fwd_{name}"] = lambda mod=mod: mod.glu_forward(x, w, save_factors=True)
            fns[f"infer_fwd_{name}"] = lambda mod=mod: mod.glu_forward(x, w)
            fns[f"glu_step_{name}"] = glu_step
            fns[f"mlp_step_{name}"] = mlp_step
        # A/A control: the precise forward timed a second time (the spread of a ratio of equals)
        fns["train_fwd_again"] = fns["train_fwd_precise"]
        ms = paired_rounds(fns, t, rounds)
        row["ms"] = ms
        row["approx_over_precise"] = {
            what: ms[f"{what}_approx"] / ms[f"{what}_precise"] for what in WHAT
        }
        row["aa_train_fwd"] = ms["train_fwd_again"] / ms["train_fwd_precise"]
        print(
            f"{M}x{K}x{N}: cuBLAS {ms['cublas']:.3f} ms;",
            " ".join(
                f"{what} {ms[f'{what}_precise']:.3f} -> {ms[f'{what}_approx']:.3f} ({r:.3f}x)"
                for what, r in row["approx_over_precise"].items()
            ),
            f"| A/A train_fwd {row['aa_train_fwd']:.3f}x",
            "| errors",
            " ".join(
                f"{name} " + "/".join(f"{e:.1e}" for e in errs.values())
                for name, errs in row["errors"].items()
            ),
            flush=True,
        )
        res[f"{M}x{K}x{N}"] = row
        del x, gate_w, up_w, down_w, dy, w, fns
        if not SMOKE:
            torch.cuda.empty_cache()
    write_results("ab_math.json", res)


if __name__ == "__main__":
    main()
