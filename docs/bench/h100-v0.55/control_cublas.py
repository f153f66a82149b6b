"""Plain PyTorch, no module: capture a training step whose backward never ran before the capture
(warm-ups: forwards alone). v0.55's question: is case 304's first-form failure (cublasCreate inside
the capture, in the backward) PyTorch's own warm-up requirement?"""
import torch
a = torch.randn(512, 512, device="cuda", dtype=torch.bfloat16, requires_grad=True)
b = torch.randn(512, 512, device="cuda", dtype=torch.bfloat16, requires_grad=True)
dy = torch.randn(512, 512, device="cuda", dtype=torch.bfloat16)
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(2):
        out = a @ b
torch.cuda.current_stream().wait_stream(side)
g = torch.cuda.CUDAGraph()
try:
    with torch.cuda.graph(g):
        out = a @ b
        out.backward(dy)
    g.replay(); torch.cuda.synchronize()
    print("PASS (no error)")
except Exception as e:
    print("FAIL", repr(e).splitlines()[0][:300])
