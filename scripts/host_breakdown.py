"""Host (CPU) µs of each piece of a GLU / MLP training step on the GPU host, at a shape so small
that the GPU never holds the host back; then a cProfile of our step.

    PYTHONPATH=. python scripts/host_breakdown.py generated/glu_silu_bf16_bn128_sm90.py [M K N]

Each row: median over 7 rounds of 300 calls (no synchronisation inside a round).
"""

import cProfile
import io
import pstats
import sys

import torch
import torch.nn.functional as F

from codegen.bench import _eager_glu, load_module
from codegen.bench import host_us as bench_host_us


def host_us(fn, n=300, rounds=7):
    """Median host µs per call of ``fn`` (codegen.bench.host_us for one callable)."""
    return bench_host_us({"fn": fn}, n=n, rounds=rounds, warmup=30)["fn"]


class _Noop(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.empty_like(x)

    @staticmethod
    def backward(ctx, g):
        return g


def main():
    mod = load_module(sys.argv[1])
    M, K, N = (int(v) for v in sys.argv[2:5]) if len(sys.argv) > 4 else (256, 512, 512)
    dev, dt = "cuda", mod.DTYPE
    x = torch.randn(M, K, device=dev, dtype=dt, requires_grad=True)
    w = (torch.randn(2 * N, K, device=dev) / K**0.5).to(dt).requires_grad_()
    wc = w.detach().clone().requires_grad_()
    wd = (torch.randn(K, N, device=dev) / N**0.5).to(dt).requires_grad_()
    dy = torch.randn(M, N, device=dev, dtype=dt)
    dz = torch.randn(M, K, device=dev, dtype=dt)
    print(
        f"{torch.cuda.get_device_name()} torch {torch.__version__} module {mod.SPEC['name']} {M}x{K}x{N}"
    )
    rows = {}

    def row(name, fn):
        rows[name] = host_us(fn)
        print(f"{name:52s} {rows[name]:8.1f} us", flush=True)

    xd = x.detach()
    wdet = w.detach()
    out = torch.empty((M, N), device=dev, dtype=dt)
    fac = torch.empty((M, 2 * N), device=dev, dtype=dt)
    row("torch.empty", lambda: torch.empty((M, N), device=dev, dtype=dt))
    row("torch.mm", lambda: torch.mm(fac, wdet))
    row("x.stride(0); x.data_ptr()", lambda: (xd.stride(0), xd.data_ptr()))
    row(
        "trivial autograd.Function fwd+bwd", lambda: _Noop.apply(x).backward(dy[:, :1].expand(M, K))
    )
    if hasattr(mod, "_descriptor"):
        row("_descriptor", lambda: mod._descriptor(xd, [mod.BLOCK_M, mod.BLOCK_K]))
        row(
            "TensorDescriptor.from_tensor",
            lambda: mod.TensorDescriptor.from_tensor(xd, [mod.BLOCK_M, mod.BLOCK_K]),
        )
    fwd = lambda: mod._launch_forward(xd, wdet, None, out, fac, fac, N, mod.WRITE_FACTORS)
    row("_launch_forward (TMA)", fwd)
    bwd = lambda: mod._launch_backward(dy, fac, fac, N)
    row("_launch_backward", bwd)
    tma_ok = getattr(mod, "_tma_ok", None)
    if tma_ok is not None:
        mod._tma_ok = lambda *t: False
        row("_launch_forward (pointer kernel)", fwd)
        mod._tma_ok = tma_ok

    def ours():
        mod.glu(x, w).backward(dy)
        x.grad = w.grad = None

    eager_glu = _eager_glu(mod)

    def eager():
        eager_glu(x, wc).backward(dy)
        x.grad = wc.grad = None

    def ours_fwd():
        with torch.no_grad():
            mod.glu(xd, wdet)

    def eager_fwd():
        with torch.no_grad():
            eager_glu(xd, wdet)

    for _ in range(2):  # interleaved twice
        row("GLU step ours", ours)
        row("GLU step eager", eager)
    row("GLU no_grad ours", ours_fwd)
    row("GLU no_grad eager", eager_fwd)
    if tma_ok is not None:
        mod._tma_ok = lambda *t: False
        row("GLU step ours, pointer kernel", ours)
        mod._tma_ok = tma_ok

    def ours_mlp():
        mod.mlp(x, w, wd).backward(dz)
        x.grad = w.grad = wd.grad = None

    def eager_mlp():
        F.linear(eager_glu(x, wc), wd).backward(dz)
        x.grad = wc.grad = wd.grad = None

    for _ in range(2):
        row("MLP step FusedMLP", ours_mlp)
        row("MLP step eager", eager_mlp)

    for name, fn in (("GLU step ours", ours), ("MLP step FusedMLP", ours_mlp)):
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(300):
            fn()
        prof.disable()
        torch.cuda.synchronize()
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(28)
        print(f"--- cProfile, 300 x {name} (tottime) ---")
        print("\n".join(s.getvalue().splitlines()[6:40]))


if __name__ == "__main__":
    main()
