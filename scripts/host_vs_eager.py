"""Host us per training step, ours vs eager, in interleaved rounds (medians): the GLU issue's
"host cost below eager's" check at the shapes where a step is short."""

import sys

import torch

from codegen.bench import _eager_glu, host_us, load_module

mod = load_module(sys.argv[1])
for shape in sys.argv[2:]:
    M, K, N = map(int, shape.split(","))
    x = torch.randn(M, K, device="cuda", dtype=mod.DTYPE, requires_grad=True)
    w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(mod.DTYPE).requires_grad_()
    wc = w.detach().clone().requires_grad_()
    dy = torch.randn(M, N, device="cuda", dtype=mod.DTYPE)
    eager = _eager_glu(mod)

    def ours():
        mod.glu(x, w).backward(dy)
        x.grad = w.grad = None

    def ref():
        eager(x, wc).backward(dy)
        x.grad = wc.grad = None

    def ours_nograd():
        with torch.no_grad():
            mod.glu(x, w)

    def ref_nograd():
        with torch.no_grad():
            eager(x, wc)

    med = host_us(
        {"ours": ours, "eager": ref, "ours_nograd": ours_nograd, "eager_nograd": ref_nograd}
    )
    print(
        f"{shape}: host us per fwd+bwd ours {med['ours']:.0f} eager {med['eager']:.0f} "
        f"({med['ours'] / med['eager']:.2f}x); no_grad fwd ours {med['ours_nograd']:.0f} "
        f"eager {med['eager_nograd']:.0f}",
        flush=True,
    )
