"""Time the grouped forward (with factors) of several module files against one
torch._grouped_mm of the same routing (interleaved rounds, medians), and check each variant's
out and factors against the first module's.

    PYTHONPATH=. python scripts/grouped_variants.py REF.py VARIANT.py ... [--shape T,K,N,E ...]
"""

import statistics
import sys

import torch
from triton.testing import do_bench

from codegen.bench import ROUTINGS, load_module, routing_sizes

SHAPES = [(16384, 4096, 14336, 8), (65536, 2048, 768, 128)]


def main():
    args = sys.argv[1:]
    paths = [a for a in args if a.endswith(".py")]
    shapes = [tuple(map(int, a.split(","))) for a in args if "," in a] or SHAPES
    mods = {p.rsplit("/", 1)[-1][:-3]: load_module(p) for p in paths}
    ref = next(iter(mods.values()))
    print(torch.cuda.get_device_name(), torch.__version__)
    for T, K, N, E in shapes:
        for routing in ROUTINGS:
            torch.manual_seed(0)
            sizes = routing_sizes(T, E, routing)
            offs = torch.tensor(sizes, device="cuda").cumsum(0).to(torch.int32)
            x = torch.randn(T, K, device="cuda", dtype=ref.DTYPE)
            w = (torch.randn(E, 2 * N, K, device="cuda") / K**0.5).to(ref.DTYPE)
            wt = w.transpose(-2, -1)
            fns = {"gmm": lambda: torch._grouped_mm(x, wt, offs=offs)}
            for name, m in mods.items():
                fns[name] = lambda m=m: m._grouped_forward(x, w, offs, None, True)
            want = ref._grouped_forward(x, w, offs, None, True)
            errs = {}
            for name, m in mods.items():
                got = m._grouped_forward(x, w, offs, None, True)
                errs[name] = max(
                    (a.float() - b.float()).abs().max().item() for a, b in zip(got, want)
                )
            ms = {k: [] for k in fns}
            for _ in range(5):
                for k, f in fns.items():
                    ms[k].append(do_bench(f, warmup=10, rep=40, return_mode="median"))
            gmm = statistics.median(ms["gmm"])
            print(f"{T},{K},{N},{E} {routing}: gmm {gmm:.3f} ms")
            for name in mods:
                t = statistics.median(ms[name])
                print(
                    f"  {name:24s} {t:8.3f} ms  {t / gmm:6.3f}x gmm  max|diff| {errs[name]:.3g}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
