"""What the split factor layout (two [M, N] factor buffers, SPLIT_FACTORS) costs in GPU time, piece
by piece, against one [M, 2N] buffer; and the peaks of both.  One process, interleaved rounds.

    PYTHONPATH=. python scripts/split_cost.py generated/glu_silu_bf16_bn128_sm90.py M,K,N ...
"""

import statistics
import sys

import torch
from triton.testing import do_bench

from codegen.bench import load_module


def t(fn):
    return do_bench(fn, warmup=10, rep=50, return_mode="median")


def interleaved(fns, rounds=5):
    s = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            s[k].append(t(f))
    return {k: statistics.median(v) for k, v in s.items()}


def main(path, shapes):
    mod = load_module(path)
    dt = mod.DTYPE
    for M, K, N in shapes:
        torch.manual_seed(0)
        x = torch.randn(M, K, device="cuda", dtype=dt).requires_grad_()
        w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(dt).requires_grad_()
        dy = torch.randn(M, N, device="cuda", dtype=dt)

        def step(split):
            def run():
                mod.SPLIT_FACTORS = split
                try:
                    mod.glu(x, w).backward(dy)
                finally:
                    mod.SPLIT_FACTORS = True

            return run

        def fwd(split):
            def run():
                mod.SPLIT_FACTORS = split
                try:
                    mod._forward(x.detach(), w.detach(), None, True)
                finally:
                    mod.SPLIT_FACTORS = True

            return run

        xd, wd = x.detach(), w.detach()
        G = torch.randn(M, 2 * N, device="cuda", dtype=dt)
        fa, fb = G[:, :N].contiguous(), G[:, N:].contiguous()
        ga = torch.empty(M, K, device="cuda", dtype=dt)
        pieces = {
            "one: grad_x mm": lambda: torch.mm(G, wd),
            "one: grad_W mm": lambda: torch.mm(G.t(), xd),
            "split: grad_x mm+addmm": lambda: torch.mm(fa, wd[:N]).addmm_(fb, wd[N:]),
            "split: grad_W 2 mm + cat": lambda: torch.cat(
                [torch.mm(fa.t(), xd), torch.mm(fb.t(), xd)]
            ),
        }
        r = interleaved(
            {
                "fwd+bwd one": step(False),
                "fwd+bwd split": step(True),
                "fwd one": fwd(False),
                "fwd split": fwd(True),
                **pieces,
            }
        )
        peaks = {}
        for name, split in (("one", False), ("split", True)):
            x.grad = w.grad = None
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            step(split)()
            torch.cuda.synchronize()
            peaks[name] = (torch.cuda.max_memory_allocated() - base) / 2**20
            x.grad = w.grad = None
        print(f"{M}x{K}x{N} (split point {mod._split_point(M, N, K)} of {N}):", flush=True)
        for k, v in r.items():
            print(f"  {k:28s} {v:.3f} ms", flush=True)
        print(f"  peak MiB one {peaks['one']:.0f} split {peaks['split']:.0f}", flush=True)
        del x, w, dy, G, fa, fb, ga
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1], [tuple(int(v) for v in s.split(",")) for s in sys.argv[2:]])
