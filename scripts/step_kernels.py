"""Every GPU kernel of one training step, with its device time (torch.profiler, CUDA
activity): what a fwd+bwd step runs beyond the GEMMs and the module's own kernels (a copy in
AccumulateGrad, a memset, a cast).  Dense glu or grouped_glu (with --grouped T,K,N,E[,routing]).

    PYTHONPATH=. python scripts/step_kernels.py MODULE.py --shape M,K,N [--bias]
    PYTHONPATH=. python scripts/step_kernels.py MODULE_grouped.py --grouped T,K,N,E,ragged [--bias]
"""

import argparse

import torch
from torch.profiler import ProfilerActivity, profile

from codegen.bench import load_module, routing_sizes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("module")
    ap.add_argument("--shape")
    ap.add_argument("--grouped")
    ap.add_argument("--bias", action="store_true")
    ap.add_argument("--steps", type=int, default=5)
    args = ap.parse_args()
    mod = load_module(args.module)
    dt = mod.DTYPE
    if args.grouped:
        T, K, N, E, *routing = args.grouped.split(",")
        T, K, N, E = int(T), int(K), int(N), int(E)
        sizes = routing_sizes(T, E, routing[0] if routing else "balanced")
        offs = torch.tensor(sizes, device="cuda").cumsum(0).to(torch.int32)
        x = torch.randn(T, K, device="cuda", dtype=dt, requires_grad=True)
        w = (torch.randn(E, 2 * N, K, device="cuda") / K**0.5).to(dt).requires_grad_()
        b = (
            torch.randn(E, 2 * N, device="cuda", dtype=dt, requires_grad=True)
            if args.bias
            else None
        )
        dy = torch.randn(T, N, device="cuda", dtype=dt)

        def fwd():
            return mod.grouped_glu(x, w, offs, b, check_offsets=False)

        label = f"grouped {args.grouped}"
    else:
        M, K, N = (int(v) for v in args.shape.split(","))
        x = torch.randn(M, K, device="cuda", dtype=dt, requires_grad=True)
        w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(dt).requires_grad_()
        b = torch.randn(2 * N, device="cuda", dtype=dt, requires_grad=True) if args.bias else None
        dy = torch.randn(M, N, device="cuda", dtype=dt)

        def fwd():
            return mod.glu(x, w, b)

        label = f"dense {args.shape}"

    def step():
        fwd().backward(dy)
        x.grad = w.grad = None
        if b is not None:
            b.grad = None

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(args.steps):
            step()
        torch.cuda.synchronize()
    print(f"{label}: {args.steps} steps, kernels by device time", flush=True)
    print(
        prof.key_averages().table(
            sort_by="self_cuda_time_total", row_limit=25, max_name_column_width=70
        )
    )
    print("grad strides:", end=" ")
    step_out = fwd()
    step_out.backward(dy)
    print("x", tuple(x.grad.stride()), "w", tuple(w.grad.stride()), "w param", tuple(w.stride()))


if __name__ == "__main__":
    main()
