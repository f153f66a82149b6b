"""Why our GLU step's host time sits above eager's at the big bench shapes (GPU).

v0.37's bench read ours - eager = +15 µs (4096x2048x5632), +75 (11136x3584x14336) and +258
(16384x8192x28672) of host time per queued step, while the CPU harness
(scripts/host_python_cpu.py) prices our Python at ~60 µs over a bare autograd.Function and
eager issues more launches than we do (11 vs 4-6).  Per shape, in interleaved rounds (the bench's
batches of 20 queued steps, every other round reversed, medians), host µs per step of:

- eager: the bench's eager step (one F.linear over [up; gate], chunk, act * mul);
- ours: the bench's call, the weight as FusedGLU holds it (two parts; since v0.38 only for layers
  from PARTS_MIN_WEIGHT on);
- ours packed: glu(x, packed) with one [2N, K] leaf;
- bare: an autograd.Function with our step's allocations and backward GEMMs, no Triton;
- minimal: bare plus our two launches, through the module's own launchers and launch plans
  (``_launch_forward``, ``_launch_backward``) and nothing else of its Python: ours packed minus
  minimal is what glu's checks, rules and bookkeeping cost the host, minimal minus bare what
  the two Triton launches cost;

each with gradients accumulated into .grad (the bench's way: one add per leaf) and with .grad
set to None before every step (zero_grad's way), as wall µs and as the process's CPU µs
(time.process_time: all threads, so the autograd engine's device thread counts; a host that
waits without spinning shows wall > CPU).  Then torch.profiler (CPU + CUDA activities) over
queued steps of eager, ours and bare (PROFILE: others): the CUDA runtime / driver calls each step makes (count,
µs) and the ops with the most self CPU time.

    [ROUNDS=9] [PROFILE="eager;ours;bare"] PYTHONPATH=. python scripts/host_gap.py [MODULE.py] [M,K,N ...]

Results: $OUT/host_gap.json (or build/).
"""

import os
import statistics
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, ".")
from codegen.bench import (  # noqa: E402
    _eager_glu,
    _round_order,
    fmt_ratio,
    fused_glu_call,
    glu_step_inputs,
    grads_to_none,
    paired_ratio,
    script_args,
    with_constants,
    write_results,
)

MODULE = "generated/glu_silu_bf16_bn128_sm90.py"
SHAPES = [(16384, 8192, 28672), (11136, 3584, 14336), (4096, 2048, 5632), (2048, 4096, 1408)]
ROUNDS = int(os.environ.get("ROUNDS", 9))
BATCH, PROFILED = 20, 20


class Bare(torch.autograd.Function):
    """Our step's host skeleton: out [M, N] and one [M, 2N] buffer allocated in forward (no
    kernel), the two backward GEMMs (grad_x, grad_W) in backward."""

    @staticmethod
    def forward(ctx, x, weight):
        out = x.new_empty(x.shape[0], weight.shape[0] // 2)
        buf = x.new_empty(x.shape[0], weight.shape[0])
        ctx.save_for_backward(x, weight, buf)
        return out

    @staticmethod
    def backward(ctx, dy):
        x, weight, buf = ctx.saved_tensors
        return torch.mm(buf, weight), torch.mm(buf.t(), x)


class BareParts(torch.autograd.Function):
    """Bare with FusedGLU's two weight leaves (rows [0, 2 n_w) and the rest of one tensor,
    ``joined``): one [M, 2N] buffer and two GEMMs (grad_W's rows as the parts' views), or
    (``split``) our split's host skeleton: two buffers [M, 2 n_w] and [M, 2N - 2 n_w], four
    GEMM calls (grad_x's second half by addmm_), each buffer freed once used."""

    @staticmethod
    def forward(ctx, x, weight_a, weight_b, joined, split):
        M, rows = x.shape[0], joined.shape[0]
        out = x.new_empty(M, rows // 2)
        cols = (weight_a.shape[0], weight_b.shape[0]) if split else (rows,)
        ctx.bufs = [x.new_empty(M, c) for c in cols]
        ctx.save_for_backward(x, weight_a, weight_b, joined)
        return out

    @staticmethod
    def backward(ctx, dy):
        x, weight_a, weight_b, joined = ctx.saved_tensors
        bufs, ctx.bufs = ctx.bufs, None
        if len(bufs) == 1:
            grad_w = torch.mm(bufs[0].t(), x)
            rows = weight_a.shape[0]
            return torch.mm(bufs[0], joined), grad_w[:rows], grad_w[rows:], None, None
        fa, fb = bufs
        grad_x, grad_a = torch.mm(fa, weight_a), torch.mm(fa.t(), x)
        fa.untyped_storage().resize_(0)
        grad_x.addmm_(fb, weight_b)
        grad_b = torch.mm(fb.t(), x)
        fb.untyped_storage().resize_(0)
        return grad_x, grad_a, grad_b, None, None


def minimal_function(mod):
    """Bare with the module's two launches (the forward kernel into out and one factor buffer,
    the factor pass in place): the least Python our step can be made of."""

    class Minimal(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight):
            M, N = x.shape[0], weight.shape[0] // 2
            out = x.new_empty(M, N)
            buf = x.new_empty(M, 2 * N)
            mod._launch_forward(x, weight, None, out, buf, buf, N, mod.WRITE_FACTORS)
            ctx.save_for_backward(x, weight, buf)
            return out

        @staticmethod
        def backward(ctx, dy):
            x, weight, buf = ctx.saved_tensors
            mod._launch_backward(dy, buf, None, buf.shape[1] // 2)
            return torch.mm(buf, weight), wgrad(buf, x)

    # grad_W as the module makes it (v0.56: whole 128-row blocks and a tail, _mm_rows)
    wgrad = getattr(mod, "_mm_rows", lambda a, b: torch.mm(a.t(), b))
    return Minimal


def steps_for(mod, M, K, N):
    """{path: a step} for the paths above, each also with its leaves' gradients set to None."""
    x, gate_w, up_w, dy = glu_step_inputs(mod, M, K, N)
    packed = mod.pack_weight(gate_w, up_w).contiguous()
    w_cat = torch.cat([up_w, gate_w]).contiguous().requires_grad_()
    w_packed = packed.detach().clone().requires_grad_()
    ours, ours_inputs = fused_glu_call(mod, packed, x)
    calls = {
        "eager": (_eager_glu(mod), (x, w_cat)),
        "ours": (ours, ours_inputs),
        "ours packed": (mod.glu, (x, w_packed)),
        "bare": (Bare.apply, (x, w_packed)),
        "minimal": (minimal_function(mod).apply, (x, w_packed)),
    }
    if len(ours_inputs) == 3:  # FusedGLU's parts: the same without the split, and bare both ways
        joined = torch.cat([t.detach() for t in ours_inputs[1:]])
        parts = (x, *ours_inputs[1:], joined)
        calls["ours, one buffer"] = (with_constants(ours, mod, SPLIT_FACTORS=False), ours_inputs)
        calls["bare parts"] = (lambda *a: BareParts.apply(*a, False), parts)
        calls["bare parts, split"] = (lambda *a: BareParts.apply(*a, True), parts)
    steps = {}
    for name, (f, inputs) in calls.items():
        leaves = [t for t in inputs if isinstance(t, torch.Tensor) and t.requires_grad]

        def accumulate(f=f, inputs=inputs):
            f(*inputs).backward(dy)

        steps[name] = accumulate
        steps[f"{name}, grad None"] = grads_to_none(accumulate, leaves)
    return steps


def rounds(steps):
    """{name: (median wall µs per step, median process CPU µs per step, wall of each round)}."""
    for step in steps.values():
        for _ in range(3):
            step()
    torch.cuda.synchronize()
    wall = {k: [] for k in steps}
    cpu = {k: [] for k in steps}
    for r in range(ROUNDS):
        for name, step in _round_order(steps, r):
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(BATCH):
                step()
            t1, c1 = time.perf_counter(), time.process_time()
            wall[name].append((t1 - t0) / BATCH * 1e6)
            cpu[name].append((c1 - c0) / BATCH * 1e6)
            torch.cuda.synchronize()
    return {
        k: (statistics.median(wall[k]), statistics.median(cpu[k]), [round(v) for v in wall[k]])
        for k in steps
    }


def report(got):
    """rounds()' result as lines: each path's wall / CPU µs, and its wall over eager's batch of
    the same round (grads None: over eager's with grads None), median [min, max]: a host can
    halve its speed between two rounds, which moves two medians apart (perf log v0.44)."""
    lines = ["  path: wall / CPU µs; per round x eager's"]
    for k, (w, c, walls) in got.items():
        base = got.get("eager, grad None" if k.endswith("grad None") else "eager")
        rounds = {"a_rounds": walls, "b_rounds": base[2] if base else None}
        lines.append(f"  {k:22s} {w:7.1f} / {c:7.1f}   {fmt_ratio(paired_ratio(rounds, 'a', 'b'))}")
    return lines


def runtime_calls(step):
    """(CUDA runtime / driver calls per step: [name, count, µs], top self-CPU ops: same)."""
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(PROFILED):
            step()
        torch.cuda.synchronize()
    rows = [e for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CPU]
    calls = [
        [e.key, e.count / PROFILED, e.self_cpu_time_total / PROFILED]
        for e in rows
        if e.key.startswith("cu") and e.key != "cudaDeviceSynchronize"
    ]
    ops = sorted(rows, key=lambda e: -e.self_cpu_time_total)[:12]
    top = [[e.key, e.count / PROFILED, e.self_cpu_time_total / PROFILED] for e in ops]
    return sorted(calls, key=lambda c: -c[2]), top


def main():
    mod, shapes = script_args(sys.argv[1:], MODULE, SHAPES)
    print(
        f"{torch.cuda.get_device_name()} torch {torch.__version__} triton {mod.triton.__version__}"
    )
    res = {"module": mod.SPEC["name"], "rounds": ROUNDS, "batch": BATCH, "shapes": []}
    for M, K, N in shapes:
        steps = steps_for(mod, M, K, N)
        got = rounds(steps)
        print(f"{M}x{K}x{N}: µs per queued step, wall / process CPU (medians of {ROUNDS} rounds)")
        for line in report(got):
            print(line)
        row = {"shape": [M, K, N], "host": {k: list(v) for k, v in got.items()}, "profile": {}}
        for name in filter(None, os.environ.get("PROFILE", "eager;ours;bare").split(";")):
            calls, top = runtime_calls(steps[name])
            row["profile"][name] = {"runtime": calls, "top": top}
            print(f"  --- {name}: CUDA runtime/driver calls per step (count, µs, profiler on)")
            for key, n, us in calls:
                print(f"      {us:7.1f} µs {n:5.1f}x  {key}")
            print(f"  --- {name}: top self-CPU ops per step")
            for key, n, us in top:
                print(f"      {us:7.1f} µs {n:5.1f}x  {key[:80]}")
        res["shapes"].append(row)
        del steps
        torch.cuda.empty_cache()
    print("results:", write_results("host_gap.json", res))


if __name__ == "__main__":
    main()
