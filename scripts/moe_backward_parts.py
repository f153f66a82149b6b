"""The grouped backward's pieces on the GPU, each timed alone (interleaved rounds, medians):
the forward-shaped grouped GEMM (the floor's unit), grad_x = grad_de @ W (grouped), grad_W =
grad_de^T @ x (a reduction over each expert's tokens), the in-place factor pass, and the module's
whole backward (fwd+bwd minus the forward), and the step's kernels back to back without autograd
(the parts under the sustained load's clock).

    PYTHONPATH=. python scripts/moe_backward_parts.py generated/glu_silu_bf16_bn128_sm90_grouped.py
        [--shape T,K,N,E ...] [--routing balanced,ragged] [--bias]

--bias gives the step (and our forward) per-expert packed biases that require grad (gpt-oss).
"""

import statistics
import sys

import torch
from triton.testing import do_bench

from codegen.bench import load_module, routing_sizes

SHAPES = [(16384, 4096, 14336, 8), (65536, 2048, 768, 128)]


def main():
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("module")
    ap.add_argument("--shape", action="append")
    ap.add_argument("--routing", default="balanced,ragged")
    ap.add_argument("--bias", action="store_true")
    args = ap.parse_args()
    mod = load_module(args.module)
    shapes = [tuple(int(v) for v in s.split(",")) for s in args.shape] if args.shape else SHAPES
    print(torch.cuda.get_device_name(), torch.__version__)
    for T, K, N, E in shapes:
        for routing in args.routing.split(","):
            torch.manual_seed(0)
            offs = (
                torch.tensor(routing_sizes(T, E, routing), device="cuda").cumsum(0).to(torch.int32)
            )
            x = torch.randn(T, K, device="cuda", dtype=mod.DTYPE)
            w = (torch.randn(E, 2 * N, K, device="cuda") / K**0.5).to(mod.DTYPE)
            g = torch.randn(T, 2 * N, device="cuda", dtype=mod.DTYPE)
            dy = torch.randn(T, N, device="cuda", dtype=mod.DTYPE)
            xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
            b = torch.randn(E, 2 * N, device="cuda", dtype=mod.DTYPE) if args.bias else None
            bg = b.clone().requires_grad_() if args.bias else None

            def step():
                mod.grouped_glu(xg, wg, offs, bg, check_offsets=False).backward(dy)
                xg.grad = wg.grad = None
                if bg is not None:
                    bg.grad = None

            parts = {
                "gmm forward x @ W^T": lambda: torch._grouped_mm(x, w.transpose(-2, -1), offs=offs),
                "gmm grad_x = g @ W": lambda: torch._grouped_mm(g, w, offs=offs),
                "gmm grad_W = g^T @ x": lambda: torch._grouped_mm(g.t(), x, offs=offs),
                "factor pass (in place)": lambda: mod._launch_backward(dy, g, None, N),
                "ours forward (factors)": lambda: mod._grouped_forward(x, w, offs, b, True),
                "ours fwd+bwd": step,
            }

            def back_to_back():  # the step's kernels without autograd: what the GPU's clock
                # under sustained load makes of the parts (do_bench idles between its runs)
                _, f = mod._grouped_forward(x, w, offs, b, True)
                mod._grouped_factor_pass(dy, f, offs, args.bias)
                torch._grouped_mm(f, w, offs=offs)
                torch._grouped_mm(f.t(), x, offs=offs)

            parts["step's kernels back to back"] = back_to_back
            if args.bias:  # the pass that also sums each expert's bias gradient
                parts["factor pass + bias sums"] = lambda: mod._grouped_factor_pass(
                    dy, g, offs, True
                )
            ms = {k: [] for k in parts}
            for _ in range(5):
                for k, f in parts.items():
                    ms[k].append(do_bench(f, warmup=10, rep=40, return_mode="median"))
            med = {k: statistics.median(v) for k, v in ms.items()}
            unit = med["gmm forward x @ W^T"]
            print(f"{T},{K},{N},{E} {routing}")
            for k, v in med.items():
                print(f"  {k:26s} {v:8.3f} ms  {v / unit:6.3f}x gmm", flush=True)
            rest = med["ours fwd+bwd"] - med["ours forward (factors)"]
            known = (
                med["gmm grad_x = g @ W"]
                + med["gmm grad_W = g^T @ x"]
                + med["factor pass + bias sums" if args.bias else "factor pass (in place)"]
            )
            print(f"  backward {rest:.3f} ms = parts {known:.3f} + {rest - known:.3f} unattributed")
            b2b = med["step's kernels back to back"]
            print(
                f"  fwd+bwd {med['ours fwd+bwd']:.3f} ms = its kernels back to back {b2b:.3f} + "
                f"{med['ours fwd+bwd'] - b2b:.3f} (autograd, allocations, offsets clamp)"
            )


if __name__ == "__main__":
    main()
