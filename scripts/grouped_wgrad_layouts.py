"""The grouped weight gradient grad_W[e] = g_e^T @ x_e ([T, 2N] and [T, K] -> [E, 2N, K]) in
torch._grouped_mm with its operands in each layout it takes, against the forward-shaped grouped
GEMM (interleaved do_bench medians): is a layout faster than the backward's g.t() @ x, enough
to pay for a transposed copy of x?

    PYTHONPATH=. python scripts/grouped_wgrad_layouts.py
"""

import statistics

import torch
from triton.testing import do_bench

from codegen.bench import routing_sizes

SHAPES = [(16384, 4096, 14336, 8), (65536, 2048, 768, 128), (32768, 2880, 2880, 32)]


def main():
    print(torch.cuda.get_device_name(), torch.__version__)
    dt = torch.bfloat16
    for T, K, N, E in SHAPES:
        for routing in ("balanced", "ragged"):
            torch.manual_seed(0)
            sizes = routing_sizes(T, E, routing)
            offs = torch.tensor(sizes, device="cuda").cumsum(0).to(torch.int32)
            x = torch.randn(T, K, device="cuda", dtype=dt)
            w = torch.randn(E, 2 * N, K, device="cuda", dtype=dt)
            g = torch.randn(T, 2 * N, device="cuda", dtype=dt)
            x_cm = x.t().contiguous().t()  # [T, K], column-major
            g_cm = g.t().contiguous().t()
            ref = torch._grouped_mm(g.t(), x, offs=offs)
            cases = {
                "gmm forward x @ W^T": lambda: torch._grouped_mm(x, w.transpose(-2, -1), offs=offs),
                "g^T @ x (backward's)": lambda: torch._grouped_mm(g.t(), x, offs=offs),
                "g^T @ x, x column-major": lambda: torch._grouped_mm(g.t(), x_cm, offs=offs),
                "g^T @ x, g column-major": lambda: torch._grouped_mm(g_cm.t(), x, offs=offs),
                "g^T @ x, both column-major": lambda: torch._grouped_mm(g_cm.t(), x_cm, offs=offs),
                "x^T @ g ([E, K, 2N])": lambda: torch._grouped_mm(x.t(), g, offs=offs),
                "copy x to column-major": lambda: x.t().contiguous(),
            }
            for name in list(cases)[2:5]:
                try:
                    got = cases[name]()
                    assert torch.equal(got, ref) or (got - ref).abs().max() < 1e-2 * ref.abs().max()
                except (RuntimeError, AssertionError) as e:
                    print(f"  {name}: {type(e).__name__} {str(e)[:120]}")
                    del cases[name]
            ms = {k: [] for k in cases}
            for _ in range(5):
                for k, f in cases.items():
                    ms[k].append(do_bench(f, warmup=5, rep=30, return_mode="median"))
            unit = statistics.median(ms["gmm forward x @ W^T"])
            print(f"{T},{K},{N},{E} {routing}")
            for k in cases:
                m = statistics.median(ms[k])
                print(f"  {k:30s} {m:8.3f} ms  {m / unit:6.3f}x gmm", flush=True)
            del x, w, g, x_cm, g_cm, ref, cases
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
