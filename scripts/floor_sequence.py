"""Is "3 x one GEMM timed alone" a floor that back-to-back work can reach?  The bench's floors
time one GEMM alone (do_bench: an L2 flush and an idle gap before each call) and multiply by 3;
a training step runs its GEMMs back to back.  This times, interleaved (medians):

- the GEMM alone (the floor's unit), and 3 of them back to back in one timed call;
- our step's work back to back without autograd (the module's _forward and _backward), and
  the autograd step itself (fwd+bwd);
- the baseline's fwd+bwd (eager for dense shapes, the torchtitan-style path for grouped ones);

and, for each, a sustained loop of ~1.5 s while nvidia-smi samples the SM clock and the power
draw (mean over the loop), to see whether back-to-back work runs at lower clocks.

    PYTHONPATH=. python scripts/floor_sequence.py DENSE.py GROUPED.py
"""

import csv
import datetime
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F
from triton.testing import do_bench

from codegen.bench import _eager_glu, load_module, routing_sizes


def dense_cases(mod, M, K, N):
    x = torch.randn(M, K, device="cuda", dtype=mod.DTYPE)
    w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(mod.DTYPE)
    dy = torch.randn(M, N, device="cuda", dtype=mod.DTYPE)
    xg, wg, wc = (t.clone().requires_grad_() for t in (x, w, w))
    eager = _eager_glu(mod)

    def gemm():
        return F.linear(x, w)

    def three():
        gemm(), gemm(), gemm()

    g = torch.randn(M, 2 * N, device="cuda", dtype=mod.DTYPE)

    def step_gemms():  # the step's own three GEMMs: x @ W^T, g @ W, g^T @ x
        gemm(), torch.mm(g, w), torch.mm(g.t(), x)

    def parts():  # the step's work without autograd: the module's forward and backward
        out, fa, fb = mod._forward(x, w, None, True)
        mod._backward(dy, x, w, fa, fb, (True, True, False), eager=True)

    def ours():
        mod.glu(xg, wg).backward(dy)
        xg.grad = wg.grad = None

    def base():
        eager(xg, wc).backward(dy)
        xg.grad = wc.grad = None

    return {
        "gemm alone": gemm,
        "3 gemm back to back": three,
        "the step's 3 GEMMs back to back": step_gemms,
        "our parts back to back": parts,
        "ours fwd+bwd": ours,
        "eager fwd+bwd": base,
    }


def grouped_cases(mod, T, K, N, E, routing="balanced"):
    offs = torch.tensor(routing_sizes(T, E, routing), device="cuda").cumsum(0).to(torch.int32)
    x = torch.randn(T, K, device="cuda", dtype=mod.DTYPE)
    w = (torch.randn(E, 2 * N, K, device="cuda") / K**0.5).to(mod.DTYPE)
    dy = torch.randn(T, N, device="cuda", dtype=mod.DTYPE)
    xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
    w1 = w[:, :N].clone().requires_grad_()  # torchtitan-style gate / up weights [E, N, K]
    w3 = w[:, N:].clone().requires_grad_()

    def gmm():
        return torch._grouped_mm(x, w.transpose(-2, -1), offs=offs)

    def three():
        gmm(), gmm(), gmm()

    g = torch.randn(T, 2 * N, device="cuda", dtype=mod.DTYPE)

    def step_gemms():  # the step's own three grouped GEMMs
        gmm(), torch._grouped_mm(g, w, offs=offs), torch._grouped_mm(g.t(), x, offs=offs)

    def parts():  # the step's work without autograd: the module's forward and backward
        out, f = mod._grouped_forward(x, w, offs, None, True)
        mod._grouped_backward(dy, x, w, offs, f, (True, True, False), eager=True)

    def ours():
        mod.grouped_glu(xg, wg, offs, check_offsets=False).backward(dy)
        xg.grad = wg.grad = None

    def titan():
        h = F.silu(torch._grouped_mm(xg, w1.transpose(-2, -1), offs=offs))
        (h * torch._grouped_mm(xg, w3.transpose(-2, -1), offs=offs)).backward(dy)
        xg.grad = w1.grad = w3.grad = None

    return {
        "gmm alone": gmm,
        "3 gmm back to back": three,
        "the step's 3 GEMMs back to back": step_gemms,
        "our parts back to back": parts,
        "ours fwd+bwd": ours,
        "torchtitan-style fwd+bwd": titan,
    }


def sustained(fn, seconds=1.5):
    """Run fn back to back for ~seconds; (start, end) wall-clock times."""
    fn()
    torch.cuda.synchronize()
    t0 = time.time()
    while time.time() - t0 < seconds:
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
    return t0, time.time()


def main():
    dense, grouped = load_module(sys.argv[1]), load_module(sys.argv[2])
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    log = tempfile.NamedTemporaryFile(suffix=".csv", delete=False).name
    smi = subprocess.Popen(
        [
            "nvidia-smi",
            "--query-gpu=timestamp,clocks.sm,power.draw",
            "--format=csv,noheader,nounits",
            "-lms",
            "50",
        ],
        stdout=open(log, "w"),
    )
    cases = [
        ("dense 11136x3584x14336", dense_cases(dense, 11136, 3584, 14336)),
        ("dense 8192x4096x14336", dense_cases(dense, 8192, 4096, 14336)),
        ("dense 4096x2048x5632", dense_cases(dense, 4096, 2048, 5632)),
        ("grouped 16384,4096,14336,8 balanced", grouped_cases(grouped, 16384, 4096, 14336, 8)),
        ("grouped 65536,2048,768,128 balanced", grouped_cases(grouped, 65536, 2048, 768, 128)),
    ]
    try:
        for title, fns in cases:
            ms = {k: [] for k in fns}
            for _ in range(5):
                for k, f in fns.items():
                    ms[k].append(do_bench(f, warmup=5, rep=40, return_mode="median"))
            windows = {k: sustained(f) for k, f in fns.items()}
            time.sleep(0.3)
            samples = _samples(log)
            unit = statistics.median(ms["gemm alone" if "gemm alone" in ms else "gmm alone"])
            print(f"{title}: ms (median of 5 interleaved do_bench) / x the unit / mean SM MHz, W")
            for k in fns:
                t0, t1 = windows[k]
                inside = [(c, p) for t, c, p in samples if t0 + 0.2 <= t <= t1]
                mhz = statistics.mean(c for c, _ in inside) if inside else float("nan")
                watts = statistics.mean(p for _, p in inside) if inside else float("nan")
                m = statistics.median(ms[k])
                print(f"  {k:30s} {m:8.3f} ms  {m / unit:6.3f}x  {mhz:6.0f} MHz  {watts:5.0f} W")
            print(flush=True)
            del fns
            torch.cuda.empty_cache()
    finally:
        smi.terminate()


def _samples(path):
    out = []
    with open(path) as f:
        for row in csv.reader(f):
            try:
                stamp = datetime.datetime.strptime(row[0].strip(), "%Y/%m/%d %H:%M:%S.%f")
                out.append((stamp.timestamp(), float(row[1]), float(row[2])))
            except (ValueError, IndexError):
                continue
    return out


if __name__ == "__main__":
    main()
