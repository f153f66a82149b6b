"""The host cost of the torch.compile path, measured on any CPU: the module's kernel launches
are stubbed out (tiny CPU tensors, one thread), so what is timed is Python and dispatch.

1. The operator calls from the dispatcher (torch.ops.<OP_NAMESPACE>.glu_fwd; glu_bwd_pass +
   glu_bwd_gemms, or a module's glu_bwd before v0.23, as a compiled graph calls them) against
   the Python functions they run (_forward / _backward).
2. A whole MLP training step (gate/up + down) eager and under torch.compile(fullgraph=True):
   FusedGLU + nn.Linear, and a plain-ops (HF-style) SwiGLU MLP for torch.compile's own cost.

    PYTHONPATH=. python scripts/host_compile_cpu.py MODULE.py [MODULE.py ...] [--profile]

µs per call / step: medians of interleaved rounds, every module's calls in the same rounds (an
A/B of two builds: give them distinct file names)."""

import cProfile
import pstats
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, ".")
from codegen.bench import load_module  # noqa: E402
from codegen.tune import pin_fused  # noqa: E402


def timed(fns, calls, rounds):
    for f in list(fns.values()) * 20:
        f()
    t = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                f()
            t[k].append((time.perf_counter() - t0) / calls * 1e6)
    return {k: statistics.median(v) for k, v in t.items()}


def no_grad(fn):
    def run():
        with torch.no_grad():
            fn()

    return run


def op_calls(tag, mod, x, w, dy):
    ops = getattr(torch.ops, mod.OP_NAMESPACE)
    _, fa, _ = mod._forward(x, w, None, True)
    fwd_args = (x, w, None, True)
    if any(a.name == "n_a" for a in ops.glu_fwd.default._schema.arguments):  # v0.24: n_a
        fwd_args += (w.shape[0] // 2,)

    def backward():  # glu_bwd_pass + glu_bwd_gemms (v0.23), or one glu_bwd (a module before it)
        if hasattr(ops, "glu_bwd_pass"):
            sums = ops.glu_bwd_pass.default(dy, fa, None, False)
            return ops.glu_bwd_gemms.default(x, w, fa, None, sums, True, True, False)
        return ops.glu_bwd.default(dy, x, w, fa, None, True, True, False)

    return {
        f"{tag} _forward": no_grad(lambda: mod._forward(x, w, None, True)),
        f"{tag} glu_fwd operator": no_grad(lambda: ops.glu_fwd.default(*fwd_args)),
        f"{tag} _backward": no_grad(
            lambda: mod._backward(dy, x, w, fa, None, (True, True, False), False)
        ),
        f"{tag} backward operator(s)": no_grad(backward),
    }


def main():
    paths = [a for a in sys.argv[1:] if not a.startswith("--")]
    mods = {f"{i}:{p.rsplit('/', 1)[-1]}": load_module(p) for i, p in enumerate(paths)}
    for mod in mods.values():
        mod._check_device = lambda device: 132  # no CUDA device here
        mod._launch = lambda *a, **k: None  # the kernel launch itself
        pin_fused(mod)  # the fused forward, whatever the rows or tile waves
    torch.set_num_threads(1)
    first = next(iter(mods.values()))
    M, K, N = 8, 16, first.CHUNK
    dt = first.DTYPE
    x = torch.randn(M, K, dtype=dt, requires_grad=True)
    w = torch.randn(2 * N, K, dtype=dt, requires_grad=True)
    dy = torch.randn(M, N, dtype=dt)
    dz = torch.randn(M, K, dtype=dt)
    calls = {}
    for tag, mod in mods.items():
        calls.update(op_calls(tag, mod, x, w, dy))
    real_mm = torch.mm
    torch.mm = lambda a, b, out=None: a.new_empty((a.shape[0], b.shape[1]))  # no CPU GEMM
    try:
        med = timed(calls, 2000, 9)
    finally:
        torch.mm = real_mm
    print("µs per call (launches and the backward's GEMMs stubbed)")
    for k, v in med.items():
        print(f"  {k:50s} {v:7.1f}")

    def linear(i, o):
        return torch.nn.Linear(i, o, bias=False, dtype=dt)

    class Ours(torch.nn.Module):
        def __init__(self, mod):
            super().__init__()
            self.gate_up = mod.FusedGLU.from_linears(linear(K, N), linear(K, N))
            self.down_proj = linear(N, K)

        def forward(self, x):
            return self.down_proj(self.gate_up(x))

    class Plain(torch.nn.Module):  # HF-style SwiGLU MLP in plain ops
        def __init__(self):
            super().__init__()
            self.g, self.u, self.d = linear(K, N), linear(K, N), linear(N, K)

        def forward(self, x):
            return self.d(F.silu(self.g(x)) * self.u(x))

    models = {}
    for tag, mod in mods.items():
        models[f"{tag} FusedGLU + Linear"] = Ours(mod)
        models[f"{tag} FusedGLU + Linear, compiled"] = torch.compile(Ours(mod), fullgraph=True)
    models.update(
        {
            "plain MLP": Plain(),
            "plain MLP, compiled": torch.compile(Plain(), fullgraph=True),
        }
    )

    def step(m):
        params = list(m.parameters())

        def run():
            m(x).backward(dz)
            x.grad = None
            for p in params:
                p.grad = None

        return run

    steps = {k: step(m) for k, m in models.items()}
    med = timed(steps, 300, 9)
    print("µs per MLP training step (launches stubbed; CPU GEMMs of 8x16x128)")
    for k, v in med.items():
        print(f"  {k:50s} {v:7.1f}")
    if "--profile" in sys.argv:
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(1000):
            steps[f"{next(iter(mods))} FusedGLU + Linear, compiled"]()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
