"""Which form of the capture-after-looping-warm-ups scenario fails on a module (v0.55 probe).
usage: probe_capture.py MODULE '{"sizes": [...], "K": .., "N": .., "bias": bool, "down": bool,
"warm": "train"|"forward", "ref": bool, "sync_before_ref": bool}'   -> prints PASS / FAIL <error>"""
import json, sys, traceback
sys.path.insert(0, ".")
import torch
from codegen.bench import load_module

mod = load_module(sys.argv[1])
p = json.loads(sys.argv[2])
mod.LOOP_MIN_EXPERT_FLOP = 0
dev, dt = "cuda", mod.DTYPE
g = torch.Generator().manual_seed(0)
sizes, K, N, D = p["sizes"], p["K"], p["N"], 64
E, T = len(sizes), sum(sizes)
offsets = torch.tensor(sizes, dtype=torch.int32).cumsum(0).to(torch.int32).to(dev)
w = (torch.randn(E, 2 * N, K, generator=g) / K**0.5).to(dev, dt).requires_grad_()
b = (torch.randn(E, 2 * N, generator=g) / 4).to(dev, dt).requires_grad_() if p["bias"] else None
down = (torch.randn(E, D, N, generator=g) / N**0.5).to(dev, dt).requires_grad_() if p["down"] else None
x = torch.randn(T, K, generator=g).to(dev, dt).requires_grad_()
dz = torch.randn(T, D if p["down"] else N, generator=g).to(dev, dt)
leaves = [t for t in (x, w, b, down) if t is not None]


def fwd():
    y = mod.grouped_glu(x, w, offsets, b)
    return mod.grouped_linear(y, down, offsets) if p["down"] else y


def step():
    z = fwd()
    z.backward(dz)
    return z


try:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for turn in range(2):
            out = fwd() if (p["warm"] == "forward" and turn == 1) else step()
            for t in leaves:
                t.grad = None
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = step()
    graph.replay()
    if p.get("sync_before_ref", True):
        torch.cuda.synchronize()
    if p["ref"]:
        got = [out.detach().clone()] + [t.grad.clone() for t in leaves]
        for t in leaves:
            t.grad = None
        z = step()
        torch.cuda.synchronize()
        want = [z.detach()] + [t.grad for t in leaves]
        errs = [((a.float() - b.float()).norm() / b.float().norm()).item() for a, b in zip(got, want)]
        assert max(errs) < 4e-3, errs
    torch.cuda.synchronize()
    print("PASS")
except Exception as e:
    print("FAIL", repr(e).splitlines()[0][:200])
