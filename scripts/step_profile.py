"""Where does a training step's host time go?  torch.profiler (CPU) for ours and eager, plus a
check for device synchronisations (torch.cuda.set_sync_debug_mode)."""

import sys
import time
import warnings

import torch

from codegen.bench import load_module

mod = load_module(sys.argv[1])
M, K, N = (int(v) for v in sys.argv[2:5])
x = torch.randn(M, K, device="cuda", dtype=mod.DTYPE, requires_grad=True)
w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(mod.DTYPE).requires_grad_()
wc = w.detach().clone().requires_grad_()
dy = torch.randn(M, N, device="cuda", dtype=mod.DTYPE)


def ours():
    mod.glu(x, w).backward(dy)
    x.grad = w.grad = None


def eager():
    left, gate = torch.nn.functional.linear(x, wc).chunk(2, dim=-1)
    (left * torch.nn.functional.silu(gate)).backward(dy)
    x.grad = wc.grad = None


for name, fn in (("ours", ours), ("eager", eager)):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("warn")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    torch.cuda.set_sync_debug_mode(0)
    print(name, "synchronising calls:", [str(c.message)[:100] for c in caught])
    # split: forward vs backward host time
    fwd, bwd = [], []
    for _ in range(50):
        t0 = time.perf_counter()
        if name == "ours":
            out = mod.glu(x, w)
        else:
            left, gate = torch.nn.functional.linear(x, wc).chunk(2, dim=-1)
            out = left * torch.nn.functional.silu(gate)
        t1 = time.perf_counter()
        out.backward(dy)
        t2 = time.perf_counter()
        x.grad = w.grad = wc.grad = None
        fwd.append(t1 - t0)
        bwd.append(t2 - t1)
    torch.cuda.synchronize()
    fwd.sort()
    bwd.sort()
    print(f"{name}: forward {fwd[25]*1e6:.0f} us, backward {bwd[25]*1e6:.0f} us (medians)")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(50):
            fn()
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=18))
