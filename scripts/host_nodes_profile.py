"""What the low-peak paths of glu's backward cost on a GPU host, op by op: the host µs per
queued step of one node, two nodes (one factor buffer), two nodes with split buffers and eager
PyTorch (codegen.bench.host_us, interleaved, three medians; the paths of host_profile_gpu.py),
then a torch.profiler CPU trace of 40 queued steps of each path: every ATen op, autograd node
and Python-side record function with its self CPU time per step, the largest first.

    PYTHONPATH=. python scripts/host_nodes_profile.py [MODULE.py] [--shape M,K,N]

Results: $OUT/host_nodes_profile.json (or build/).
"""

import argparse
import statistics
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, ".")
from codegen.bench import host_us, write_results  # noqa: E402
from scripts.host_profile_gpu import path_modules, path_steps  # noqa: E402

STEPS = 40


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("module", nargs="?", default="generated/glu_silu_bf16_bn128_sm90.py")
    ap.add_argument("--shape", default="8192,4096,14336")
    args = ap.parse_args()
    M, K, N = map(int, args.shape.split(","))
    mods = path_modules(args.module)
    first = next(iter(mods.values()))
    steps = path_steps(mods, M, K, N)
    for step in steps.values():
        for _ in range(3):
            step()
    torch.cuda.synchronize()
    us = {k: [] for k in steps}
    for _ in range(3):
        for k, v in host_us(steps, n=20, rounds=7).items():
            us[k].append(v)
    print(
        f"{torch.cuda.get_device_name()} torch {torch.__version__} triton {first.triton.__version__}"
    )
    print(f"{M}x{K}x{N}: host µs per step (median of 3 host_us medians; each)")
    res = {"shape": [M, K, N], "host_us": {}, "ops": {}}
    for k in steps:
        res["host_us"][k] = us[k]
        print(f"  {k:18s} {statistics.median(us[k]):7.1f}  ({' '.join(f'{v:.0f}' for v in us[k])})")
    for name, step in steps.items():
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(STEPS):
                step()
        torch.cuda.synchronize()
        rows = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
        total = sum(e.self_cpu_time_total for e in rows) / STEPS
        print(f"--- {name}: {total:.1f} µs of self CPU time per step (under the profiler)")
        res["ops"][name] = []
        for e in rows[:22]:
            per_step = e.self_cpu_time_total / STEPS
            res["ops"][name].append([e.key, e.count / STEPS, per_step])
            print(f"  {per_step:8.1f} µs  {e.count / STEPS:4.1f}x  {e.key[:90]}")
    print("results:", write_results("host_nodes_profile.json", res))


if __name__ == "__main__":
    main()
