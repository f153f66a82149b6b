"""Host µs of the pieces of our GLU and MLP training steps (no autograd around them), beside
the autograd engine's own cost, on the GPU host at a tiny shape (the GPU never limits).

    PYTHONPATH=. python scripts/host_pieces.py generated/glu_silu_bf16_bn128_sm90.py [M K N]
"""

import sys

import torch

from codegen.bench import load_module
from scripts.host_breakdown import _Noop, host_us


def main():
    mod = load_module(sys.argv[1])
    M, K, N = (int(v) for v in sys.argv[2:5]) if len(sys.argv) > 4 else (256, 512, 512)
    dev, dt = "cuda", mod.DTYPE
    xd = torch.randn(M, K, device=dev, dtype=dt)
    w = (torch.randn(2 * N, K, device=dev) / K**0.5).to(dt)
    wd = (torch.randn(K, N, device=dev) / N**0.5).to(dt)
    dy = torch.randn(M, N, device=dev, dtype=dt)
    dz = torch.randn(M, K, device=dev, dtype=dt)
    xg = xd.clone().requires_grad_()
    T = (True, True, True)

    def row(name, fn):
        print(f"{name:56s} {host_us(fn):8.1f} us", flush=True)

    row("x * 2 (C++ op, no grad)", lambda: xd * 2)
    row("(xg * 2).backward(dz): C++ autograd, one node", lambda: (xg * 2).backward(dz))
    row("_Noop.apply(xg).backward(dz): Python Function", lambda: _Noop.apply(xg).backward(dz))
    row(
        "torch.empty((M, 2N)) + _free",
        lambda: mod._free(torch.empty((M, 2 * N), device=dev, dtype=dt), True),
    )
    out = torch.empty((M, K), device=dev, dtype=dt)
    y = torch.empty((M, N), device=dev, dtype=dt)
    row("torch.mm(y, wd.t(), out=out)", lambda: torch.mm(y, wd.t(), out=out))
    row("torch.mm(y, wd.t())", lambda: torch.mm(y, wd.t()))
    row("glu _forward(save)", lambda: mod._forward(xd, w, None, True))
    fa = torch.empty((M, 2 * N), device=dev, dtype=dt)
    row("glu _backward (no free)", lambda: mod._backward(dy, xd, w, fa, None, T, False))
    row("mlp _mlp_forward(save)", lambda: mod._mlp_forward(xd, w, wd, True))
    h = torch.empty((M, 2 * N), device=dev, dtype=dt)
    row("mlp _mlp_backward (no free)", lambda: mod._mlp_backward(dz, xd, w, wd, h, T, False))
    y2 = torch.empty((M, N), device=dev, dtype=dt)
    row("_launch_dgrad", lambda: mod._launch_dgrad(dz, wd, h, y2))
    row("_check_mlp_inputs", lambda: mod._check_mlp_inputs(xd, w, wd))
    row(
        "torch.is_autocast_enabled + is_compiling + transforms",
        lambda: (
            torch.is_autocast_enabled("cuda"),
            torch.compiler.is_compiling(),
            mod._transforms_active(),
        ),
    )
    wg = w.clone().requires_grad_()
    wdg = wd.clone().requires_grad_()
    row("mlp training forward only", lambda: mod.mlp(xg, wg, wdg))
    row("glu training forward only", lambda: mod.glu(xg, wg))

    def mlp_step():
        mod.mlp(xg, wg, wdg).backward(dz)
        xg.grad = wg.grad = wdg.grad = None

    def glu_step():
        mod.glu(xg, wg).backward(dy)
        xg.grad = wg.grad = None

    row("mlp step", mlp_step)
    row("glu step", glu_step)
    with torch.autograd.profiler.profile() as prof:  # noqa: F841 - engine thread view
        for _ in range(50):
            mlp_step()
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))


if __name__ == "__main__":
    main()
