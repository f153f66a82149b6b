"""The backward's memory-bound passes against a copy of the same bytes (interleaved do_bench
medians): glu's factor pass (reads dy and the factors, writes grad_de: 5 MN elements) and the
MLP's pass (reads dh and the preactivation h, writes grad_de over h and y over dh: 6 MN).  The
copy moves the same bytes (a read and a write of half of them), so "x copy" near 1 is the
bandwidth bound.

    PYTHONPATH=. python scripts/pass_bandwidth.py MODULE.py [--shape M,N ...]
"""

import argparse
import statistics

import torch
from triton.testing import do_bench

from codegen.bench import load_module


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("module")
    ap.add_argument("--shape", action="append")
    args = ap.parse_args()
    mod = load_module(args.module)
    dt = mod.DTYPE
    shapes = (
        [tuple(map(int, s.split(","))) for s in args.shape]
        if args.shape
        else [
            (11136, 14336),
            (4096, 5632),
            (65536, 2816),
        ]
    )
    print(torch.cuda.get_device_name(), torch.__version__)
    for M, N in shapes:
        dy = torch.randn(M, N, device="cuda", dtype=dt)
        f = torch.randn(M, 2 * N, device="cuda", dtype=dt)
        h = torch.randn(M, 2 * N, device="cuda", dtype=dt)
        dh = torch.randn(M, N, device="cuda", dtype=dt)
        src5 = torch.empty(5 * M * N // 2, device="cuda", dtype=dt)
        dst5 = torch.empty_like(src5)
        src6 = torch.empty(3 * M * N, device="cuda", dtype=dt)
        dst6 = torch.empty_like(src6)
        fns = {
            "glu factor pass (5 MN)": lambda: mod._launch_backward(dy, f, None, N),
            "copy of 5 MN elements": lambda: dst5.copy_(src5),
            "MLP pass, y written (6 MN)": lambda: mod._launch_mlp_backward(dh, h, True),
            "copy of 6 MN elements": lambda: dst6.copy_(src6),
        }
        s = {k: [] for k in fns}
        for _ in range(5):
            for k, fn in fns.items():
                s[k].append(do_bench(fn, warmup=10, rep=40, return_mode="median"))
        r = {k: statistics.median(v) for k, v in s.items()}
        print(f"M={M} N={N}")
        for k, v in r.items():
            nbytes = (5 if "5 MN" in k else 6) * M * N * dt.itemsize
            print(f"  {k:28s} {v:7.3f} ms  {nbytes / v / 1e9:6.2f} TB/s", flush=True)
        print(
            f"  factor pass x copy {r['glu factor pass (5 MN)'] / r['copy of 5 MN elements']:.3f}, "
            f"MLP pass x copy {r['MLP pass, y written (6 MN)'] / r['copy of 6 MN elements']:.3f}"
        )
        del dy, f, h, dh, src5, dst5, src6, dst6
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
