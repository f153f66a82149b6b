"""Why does the direct launch path not engage? (one-off diagnostic)"""
import sys
import torch
import triton
from codegen.bench import load_module

mod = load_module(sys.argv[1])
rt = triton.knobs.runtime
for name in ("launch_enter_hook", "launch_exit_hook"):
    h = getattr(rt, name)
    print(name, type(h), getattr(h, "calls", "no calls attr"), h)

x = torch.randn(300, 256, device="cuda", dtype=mod.DTYPE, requires_grad=True)
w = torch.randn(4 * mod.CHUNK, 256, device="cuda", dtype=mod.DTYPE, requires_grad=True)
mod.glu(x, w).sum().backward()
print("compiled entries", len(mod._COMPILED))
for k, v in mod._COMPILED.items():
    print(type(v), k[:4])
import time
for name, fn in [("forward only", lambda: mod.glu(x, w)), ("fwd+bwd", lambda: mod.glu(x, w).sum().backward())]:
    n0 = len(mod._COMPILED)
    fn(); torch.cuda.synchronize()
    print(name, "entries", n0, "->", len(mod._COMPILED))
