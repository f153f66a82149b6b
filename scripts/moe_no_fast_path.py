"""What a GPU without torch._grouped_mm's fast path (an A100, sm12x) costs a grouped layer,
approximated on a GPU that has it: one grouped_glu + grouped_linear training step (the
torchtitan-style experts layer) as shipped; with `_grouped_mm_fast` forced off (the module's own
Triton grouped GEMMs, v0.32); and forced off with those kernels off too (a per-expert loop that
reads the offsets in every call, as torch's own fallback and v0.30 did).  Interleaved rounds,
every other reversed; ms (do_bench medians) and host µs per queued step.

    PYTHONPATH=. python scripts/moe_no_fast_path.py MODULE.py [--shape T,K,N,E ...] [--rounds 5]
        [--smoke]

Results: $OUT/moe_no_fast_path.json (or build/), a table on stdout."""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, ".")
if "--smoke" in sys.argv:  # before Triton is imported: its kernels then run in the interpreter
    os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402

from codegen.bench import (  # noqa: E402
    host_us,
    load_module,
    module_constants,
    parse_shape,
    routing_sizes,
)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("module")
    p.add_argument("--shape", action="append", default=[])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--smoke", action="store_true")
    a = p.parse_args()
    mod = load_module(Path(a.module))
    if a.smoke:
        from tests.interpreter_patch import widen_bf16_dot

        widen_bf16_dot()
        dev, rounds, shapes = "cpu", 1, [(100, 32, 2 * mod.CHUNK, 4)]
    else:
        dev, rounds = "cuda", a.rounds
        shapes = [parse_shape(s) for s in a.shape] or [
            (65536, 2048, 768, 128),
            (16384, 2048, 768, 32),
            (16384, 4096, 14336, 8),
        ]
    dt = mod.DTYPE
    never, always = (lambda t: False), (lambda t: True)  # noqa: E731
    patches = {  # what each mode replaces in the module
        "shipped": {},
        # as on an A100 now (the CPU smoke run: the kernels in the interpreter)
        "no_fast": {"_grouped_mm_fast": never, "_triton_grouped_mm": always},
        "no_fast_loop": {"_grouped_mm_fast": never, "_triton_grouped_mm": never},  # as in v0.30
    }

    results = {}
    for T, K, N, E in shapes:
        torch.manual_seed(0)
        sizes = routing_sizes(T, E, "ragged")
        offsets = torch.tensor(sizes, device=dev).cumsum(0).to(torch.int32)
        x = torch.randn(T, K, device=dev, dtype=dt, requires_grad=True)
        w = (torch.randn(E, 2 * N, K, device=dev, dtype=dt) / K**0.5).requires_grad_()
        down = (torch.randn(E, K, N, device=dev, dtype=dt) / N**0.5).requires_grad_()
        dz = torch.randn(T, K, device=dev, dtype=dt)

        def step(name):
            def run():
                with module_constants(mod, **patches[name]):
                    y = mod.grouped_glu(x, w, offsets, check_offsets=False)
                    mod.grouped_linear(y, down, offsets, check_offsets=False).backward(dz)
                x.grad = w.grad = down.grad = None

            return run

        steps = {name: step(name) for name in patches}
        grads = {}
        for name in patches:  # warm-up, and each mode's gradients
            with module_constants(mod, **patches[name]):
                y = mod.grouped_glu(x, w, offsets, check_offsets=False)
                mod.grouped_linear(y, down, offsets, check_offsets=False).backward(dz)
            grads[name] = [t.grad.float() for t in (x, w, down)]
            x.grad = w.grad = down.grad = None
        err = max(
            float((g - s).norm() / s.norm())
            for name in ("no_fast", "no_fast_loop")
            for g, s in zip(grads[name], grads["shipped"])
        )
        per = {name: [] for name in patches}
        if a.smoke:
            for name, fn in steps.items():
                t0 = time.perf_counter()
                fn()
                per[name].append((time.perf_counter() - t0) * 1e3)
            # the same host timing as on the GPU, one step per mode (no CUDA queue to drain)
            host = host_us(steps, n=1, rounds=1, warmup=0, sync=lambda: None)
        else:
            from triton.testing import do_bench

            for r in range(rounds):
                for name in list(steps) if r % 2 == 0 else list(reversed(steps)):
                    per[name].append(do_bench(steps[name], warmup=5, rep=50))
            host = host_us(steps, n=5, rounds=3)  # {mode: median µs}
        ms = {name: statistics.median(v) for name, v in per.items()}
        case = f"{T},{K},{N},{E} ragged"
        results[case] = {
            "ms": ms,
            "host_us": host,
            "rel_err": err,
            "rows_min_max": [min(sizes), max(sizes)],
        }
        cells = ", ".join(f"{k} {ms[k]:.3f} ms / {host[k]:.0f} us" for k in patches)
        print(f"{case}: {cells}; gradients' max rel err vs shipped {err:.1e}")
        sys.stdout.flush()
    out = Path(os.environ.get("OUT", "build"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "moe_no_fast_path.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
