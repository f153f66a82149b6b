"""A/B of the host cost of one training step (CPU us to issue it) under switches of the module."""

import sys

import torch

from codegen.bench import load_module
from scripts.host_breakdown import host_us

mod = load_module(sys.argv[1])
M, K, N = (int(v) for v in sys.argv[2:5])
x = torch.randn(M, K, device="cuda", dtype=mod.DTYPE, requires_grad=True)
w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(mod.DTYPE).requires_grad_()
dy = torch.randn(M, N, device="cuda", dtype=mod.DTYPE)


def step():
    mod.glu(x, w).backward(dy)
    x.grad = w.grad = None


def fwd_only():
    with torch.no_grad():
        mod.glu(x, w)


orig = dict(tma=getattr(mod, "_tma_ok", None), free=mod._free, launch=mod._launch, mm=torch.mm)
variants = {
    "as is": {},
    "SPLIT_FACTORS off": {"SPLIT_FACTORS": False},
    "no TMA (pointer kernel)": {"_tma_ok": lambda *t: False},
    "no storage free": {"_free": lambda t, eager: None},
    "no Triton launches": {"_launch": lambda *a: None},
}
for name, patch in variants.items():
    saved = {k: getattr(mod, k) for k in patch}
    for k, v in patch.items():
        setattr(mod, k, v)
    for n in (5, 20):
        print(
            f"{name:28s} steps={n:2d}: step {host_us(step, n=n):7.1f} us   no_grad fwd {host_us(fwd_only, n=n):6.1f} us",
            flush=True,
        )
    for k, v in saved.items():
        setattr(mod, k, v)
