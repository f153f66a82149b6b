"""fwd+bwd time and peak memory with the factors split in two freed halves vs one buffer (GPU)."""

import sys

import torch
from triton.testing import do_bench

from codegen.bench import load_module, peak_mib

mod = load_module(sys.argv[1])
for M, K, N in [(4096, 2048, 5632), (11136, 3584, 14336)]:
    x = torch.randn(M, K, device="cuda", dtype=mod.DTYPE).requires_grad_()
    w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(mod.DTYPE).requires_grad_()
    dy = torch.randn(M, N, device="cuda", dtype=mod.DTYPE)
    for split in (True, False, True):
        mod.SPLIT_FACTORS = split
        step = lambda: mod.glu(x, w).backward(dy)  # noqa: E731
        ms = do_bench(step, warmup=50, rep=300, grad_to_none=[x, w], return_mode="median")
        peak = peak_mib(step, [x, w])
        print(f"{M}x{K}x{N} split={split}: fwd+bwd {ms:.3f} ms, peak {peak:.0f} MiB", flush=True)
