"""Can the backward's factor pass hide under its GEMMs? (A probe; nothing in the module uses it.)

The backward is pass (grad_de = dy * factors, in place, memory-bound) -> grad_x = grad_de @ W ->
grad_W = grad_de^T @ x (cuBLAS, compute-bound), one after the other on one stream.  Here the
pass runs on a side stream by row chunks, and grad_x's GEMM of chunk i (rows are independent)
starts on the main stream as soon as the pass of chunk i is done, while the pass of chunk i + 1
runs beside it.  Only the first chunk's pass is exposed, if the GPU runs the two kernels at once
(a cuBLAS GEMM that fills every SM leaves room for the pass's blocks only at its wave tails).

Dense: pass on the module's factor kernel (_launch_backward on row views), grad_x by
torch.mm(out=row view), grad_W after (or, with "+w", accumulated per chunk by addmm_, so the
pass of chunk i + 1 also runs beside chunk i's weight-gradient GEMM).  Grouped (--grouped
MODULE, balanced routing): chunks of experts, grad_x per chunk by torch._grouped_mm with local
offsets (outputs left apart: a lower bound of the cost), grad_W whole after.

Each timed backward starts from fresh factors (copied in before its start event), per-rep CUDA
events, variants interleaved over rounds; results checked against the serial backward.

    PYTHONPATH=. python scripts/pass_overlap_probe.py [--dense MODULE] [--grouped MODULE]
        [--shape M,K,N ...] [--gshape T,K,N,E ...] [--rounds 5] [--reps 20]
"""

import argparse
import statistics

import torch

from codegen.bench import load_module

DENSE = ["11136,3584,14336", "8192,4096,14336", "4096,2048,5632"]
GROUPED = ["65536,2048,768,128", "16384,4096,14336,8"]


LOOP = False


def _timed(fn, restore, reps):
    """Median ms of fn over reps, each after restore() (outside the events).  With LOOP
    (--loop): the reps back to back, no sync between them, the restores timed with them and
    their own time (timed the same way) taken off: the GPU as busy as in training."""
    if LOOP:
        a, b, c = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        a.record()
        for _ in range(reps):
            restore()
            fn()
        b.record()
        for _ in range(reps):
            restore()
        c.record()
        torch.cuda.synchronize()
        return (a.elapsed_time(b) - b.elapsed_time(c)) / reps
    ts = []
    for _ in range(reps):
        restore()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


def _rounds(variants, restore, rounds, reps):
    ms = {k: [] for k in variants}
    for r in range(rounds):
        order = list(variants.items())
        for name, fn in order if r % 2 == 0 else order[::-1]:
            ms[name].append(_timed(fn, restore, reps))
    return ms


def _report(title, ms, unit_name):
    med = {k: statistics.median(v) for k, v in ms.items()}
    base = ms[unit_name]
    print(title, flush=True)
    for k, v in ms.items():
        per_round = sorted(a / b for a, b in zip(v, base))
        print(
            f"  {k:28s} {med[k]:8.3f} ms  x serial {statistics.median(per_round):.3f} "
            f"[{per_round[0]:.3f}, {per_round[-1]:.3f}]",
            flush=True,
        )


def _check_and_time(title, variants, restore, grads, run_pass, rounds, reps):
    """Each variant's (grad_x, grad_W) (``grads()`` after it ran) against the serial backward's,
    then every variant and the pass alone timed (after one warm-up each: cuBLAS heuristics,
    Triton compiles), reported per round against the serial backward."""
    restore()
    variants["serial"]()
    torch.cuda.synchronize()
    refs = [g.float().clone() for g in grads()]
    for name, fn in variants.items():
        restore()
        fn()
        torch.cuda.synchronize()
        errs = [((g.float() - r).norm() / r.norm()).item() for g, r in zip(grads(), refs)]
        assert max(errs) < 1e-2, (name, errs)
        print(f"  check {name}: grad_x {errs[0]:.1e}, grad_W {errs[1]:.1e}")
    for fn in [*variants.values(), run_pass]:
        restore()
        fn()
    torch.cuda.synchronize()
    ms = _rounds(variants, restore, rounds, reps)
    pass_ms = _rounds({"pass": run_pass}, restore, rounds, reps)["pass"]
    _report(f"{title} (pass alone {statistics.median(pass_ms):.3f} ms)", ms, "serial")


def dense(mod, shapes, rounds, reps):
    side = torch.cuda.Stream()
    for s in shapes:
        M, K, N = (int(v) for v in s.split(","))
        torch.manual_seed(0)
        x = torch.randn(M, K, device="cuda", dtype=mod.DTYPE)
        w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(mod.DTYPE)
        f0 = torch.randn(M, 2 * N, device="cuda", dtype=mod.DTYPE)
        dy = torch.randn(M, N, device="cuda", dtype=mod.DTYPE)
        f = torch.empty_like(f0)
        gx = torch.empty(M, K, device="cuda", dtype=mod.DTYPE)
        gw = torch.empty(2 * N, K, device="cuda", dtype=mod.DTYPE)

        def restore():
            f.copy_(f0)

        def serial():
            mod._launch_backward(dy, f, None, N)
            torch.mm(f, w, out=gx)
            torch.mm(f.t(), x, out=gw)

        def overlapped(c, with_w, first=None, same_stream=False):
            """c chunks of rows (a first chunk of ``first`` rows, the rest in c - 1 equal ones);
            ``same_stream``: the same chunked launches on the main stream (the control)."""
            if first is None:
                bounds = [M * i // c for i in range(c + 1)]
            else:
                bounds = [0] + [first + (M - first) * i // (c - 1) for i in range(c)]
            rows = [slice(a, b) for a, b in zip(bounds, bounds[1:])]

            def run():
                main = torch.cuda.current_stream()
                side.wait_stream(main)
                events = []
                with torch.cuda.stream(main if same_stream else side):
                    for r in rows:
                        mod._launch_backward(dy[r], f[r], None, N)
                        ev = torch.cuda.Event()
                        ev.record(side)
                        events.append(ev)
                for i, (r, ev) in enumerate(zip(rows, events)):
                    main.wait_event(ev)
                    torch.mm(f[r], w, out=gx[r])
                    if with_w:
                        if i == 0:
                            torch.mm(f[r].t(), x[r], out=gw)
                        else:
                            gw.addmm_(f[r].t(), x[r])
                if not with_w:
                    torch.mm(f.t(), x, out=gw)

            return run

        variants = {"serial": serial}
        for c in (4, 8, 16):
            variants[f"overlap {c} chunks"] = overlapped(c, False)
        variants["overlap 2 chunks +w"] = overlapped(2, True)
        variants["same stream 8 chunks"] = overlapped(8, False, same_stream=True)
        first = max(128, M // 32 // 128 * 128)
        variants[f"overlap {first} rows + 4"] = overlapped(5, False, first=first)
        variants[f"overlap {first} rows + 8"] = overlapped(9, False, first=first)
        _check_and_time(
            f"dense {M}x{K}x{N}",
            variants,
            restore,
            lambda: (gx, gw),
            lambda: mod._launch_backward(dy, f, None, N),
            rounds,
            reps,
        )


def grouped(mod, shapes, rounds, reps):
    side = torch.cuda.Stream()
    for s in shapes:
        T, K, N, E = (int(v) for v in s.split(","))
        torch.manual_seed(0)
        per = T // E
        offs = torch.arange(1, E + 1, device="cuda", dtype=torch.int32) * per
        x = torch.randn(T, K, device="cuda", dtype=mod.DTYPE)
        w = (torch.randn(E, 2 * N, K, device="cuda") / K**0.5).to(mod.DTYPE)
        f0 = torch.randn(T, 2 * N, device="cuda", dtype=mod.DTYPE)
        dy = torch.randn(T, N, device="cuda", dtype=mod.DTYPE)
        f = torch.empty_like(f0)

        def restore():
            f.copy_(f0)

        out = {}

        def serial():
            mod._launch_backward(dy, f, None, N)
            out["x"] = [torch._grouped_mm(f, w, offs=offs)]
            out["w"] = torch._grouped_mm(f.t(), x, offs=offs)

        def overlapped(c):
            ebounds = [E * i // c for i in range(c + 1)]
            chunks = []
            for e0, e1 in zip(ebounds, ebounds[1:]):
                r = slice(e0 * per, e1 * per)
                local = (offs[e0:e1] - e0 * per).contiguous()
                chunks.append((r, e0, e1, local))

            def run():
                main = torch.cuda.current_stream()
                side.wait_stream(main)
                events = []
                with torch.cuda.stream(side):
                    for r, *_ in chunks:
                        mod._launch_backward(dy[r], f[r], None, N)
                        ev = torch.cuda.Event()
                        ev.record(side)
                        events.append(ev)
                xs = []
                for (r, e0, e1, local), ev in zip(chunks, events):
                    main.wait_event(ev)
                    xs.append(torch._grouped_mm(f[r], w[e0:e1], offs=local))
                out["x"] = xs
                out["w"] = torch._grouped_mm(f.t(), x, offs=offs)

            return run

        variants = {"serial": serial}
        for c in (2, 4, 8):
            if E % c == 0:
                variants[f"overlap {c} expert chunks"] = overlapped(c)
        _check_and_time(
            f"grouped {T},{K},{N},{E} balanced",
            variants,
            restore,
            lambda: (torch.cat(out["x"]), out["w"]),
            lambda: mod._launch_backward(dy, f, None, N),
            rounds,
            reps,
        )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dense")
    ap.add_argument("--grouped")
    ap.add_argument("--shape", action="append")
    ap.add_argument("--gshape", action="append")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--loop", action="store_true")
    args = ap.parse_args()
    global LOOP
    LOOP = args.loop
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    if args.dense:
        dense(load_module(args.dense), args.shape or DENSE, args.rounds, args.reps)
    if args.grouped:
        grouped(load_module(args.grouped), args.gshape or GROUPED, args.rounds, args.reps)


if __name__ == "__main__":
    main()
