"""Benchmark one generated module against cuBLAS, eager PyTorch, torch.compile and Liger-Kernel.

Everything runs in ONE process so that ratios hold on a noisy GPU.  Needs a CUDA GPU; imports
only torch / triton (and matplotlib for the plot) so it runs from a source tree on a GPU box:
    PYTHONPATH=. python -m codegen.bench generated/glu_silu_bf16_bn128_sm90.py
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

# The four baseline shapes, then two where a step is short and the host cost shows.
DEFAULT_SHAPES = [
    (11136, 3584, 14336),
    (8192, 4096, 14336),
    (4096, 2048, 5632),
    (16384, 8192, 28672),
    (2048, 4096, 1408),
]
# Grouped modules (mixture of experts): T, K, N, E of issue 10 (Mixtral-like, many small
# experts, gpt-oss); each in balanced, skewed and ragged routing.
DEFAULT_GROUPED_SHAPES = [
    (16384, 4096, 14336, 8),
    (65536, 2048, 768, 128),
    (32768, 2880, 2880, 32),
]
ROUTINGS = ("balanced", "skewed", "ragged")
# Real models' MLPs, from their Hugging Face configs: (K, N) = (hidden_size, intermediate_size);
# mixtures of experts (K, N, E) with N = the experts' intermediate size and E = routed experts.
# `swiglu-gen bench --model NAME[:TOKENS]` times M = TOKENS rows (T = TOKENS routed rows for a
# mixture of experts); the module's activation and CHUNK are the module's, not the model's
# (Gemma's MLPs are GeGLU-tanh; gpt-oss's N = 2880 needs a --bn 64 module).
MODELS = {
    "smollm2-135m": (576, 1536),
    "smollm2-360m": (960, 2560),
    "smollm2-1.7b": (2048, 8192),
    "qwen2.5-0.5b": (896, 4864),
    "qwen2.5-1.5b": (1536, 8960),
    "qwen2.5-3b": (2048, 11008),
    "qwen2.5-7b": (3584, 18944),
    "qwen2.5-14b": (5120, 13824),
    "qwen2.5-32b": (5120, 27648),
    "qwen2.5-72b": (8192, 29568),
    "tinyllama-1.1b": (2048, 5632),
    "llama-2-7b": (4096, 11008),
    "llama-2-13b": (5120, 13824),
    "llama-3.2-1b": (2048, 8192),
    "llama-3.2-3b": (3072, 8192),
    "llama-3.1-8b": (4096, 14336),
    "llama-3.1-70b": (8192, 28672),
    "mistral-7b": (4096, 14336),
    "phi-3-mini": (3072, 8192),
    "gemma-2-2b": (2304, 9216),
    "gemma-2-9b": (3584, 14336),
    "gemma-2-27b": (4608, 36864),
    "mixtral-8x7b": (4096, 14336, 8),
    "qwen3-30b-a3b": (2048, 768, 128),
    "olmoe-1b-7b": (2048, 1024, 64),
    "gpt-oss-20b": (2880, 2880, 32),
    "gpt-oss-120b": (2880, 2880, 128),
}
DEFAULT_MODEL_TOKENS = 4096


class BenchError(RuntimeError):
    """A problem the user must fix (no GPU, bad shape): reported without a traceback."""


def load_module(path: Path):
    path = Path(path)
    if not path.is_file():
        raise BenchError(f"no generated module at {path}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # torch.compile imports the module by name to trace it
    spec.loader.exec_module(module)
    return module


def parse_shape(text: str) -> tuple[int, ...]:
    """M,K,N (a dense shape) or T,K,N,E (a grouped one: T tokens over E experts)."""
    try:
        shape = tuple(int(v) for v in text.split(","))
    except ValueError:
        shape = ()
    if len(shape) not in (3, 4):
        raise BenchError(
            f"--shape takes M,K,N or, for grouped modules, T,K,N,E (integers), got {text!r}"
        )
    if min(shape) <= 0:
        raise BenchError(f"--shape {text}: sizes must be positive")
    return shape


def script_args(argv, module, shapes):
    """A measurement script's command line, ``[MODULE.py] [M,K,N ...]``: (the loaded module,
    its shapes), ``module`` and ``shapes`` where the line names none."""
    args = list(argv)
    path = args.pop(0) if args and args[0].endswith(".py") else module
    return load_module(path), [parse_shape(a) for a in args] or list(shapes)


def glu_step_inputs(mod, M, K, N, device="cuda"):
    """A dense GLU step's inputs, seeded (0) and in the module's dtype: x [M, K] requiring
    grad, the gate and up weights [N, K] (scaled by 1/sqrt(K), not requiring grad) and dy
    [M, N]."""
    import torch

    torch.manual_seed(0)
    x = torch.randn(M, K, device=device, dtype=mod.DTYPE, requires_grad=True)
    gate_w = (torch.randn(N, K, device=device) / K**0.5).to(mod.DTYPE)
    up_w = (torch.randn(N, K, device=device) / K**0.5).to(mod.DTYPE)
    dy = torch.randn(M, N, device=device, dtype=mod.DTYPE)
    return x, gate_w, up_w, dy


def parse_model(text: str) -> tuple[int, ...]:
    """NAME or NAME:TOKENS (a key of MODELS) -> its shape: M,K,N, or T,K,N,E for a mixture of
    experts, with M (T) = TOKENS rows, DEFAULT_MODEL_TOKENS when not given."""
    name, colon, tokens = text.partition(":")
    dims = MODELS.get(name.strip().lower())
    if dims is None:
        raise BenchError(f"--model {text}: unknown model {name!r}; known: {', '.join(MODELS)}")
    rows = DEFAULT_MODEL_TOKENS
    if colon:
        try:
            rows = int(tokens)
        except ValueError:
            rows = 0
        if rows <= 0:
            raise BenchError(f"--model {text}: TOKENS must be a positive integer, got {tokens!r}")
    return (rows, *dims)


def routing_sizes(T: int, E: int, routing: str) -> list[int]:
    """Tokens per expert: balanced; skewed (one expert takes half, two get none); or ragged
    (a fixed pseudo-random load of 0.5-1.5x the mean per expert, as a router gives: almost no
    expert gets a multiple of the row tile)."""
    if routing == "balanced" or E < 4:
        sizes = [T // E] * E
    elif routing == "skewed":
        sizes = [T // 2, 0, 0] + [(T - T // 2) // (E - 3)] * (E - 3)
    elif routing == "ragged":
        import random

        rng = random.Random(E)
        load = [rng.uniform(0.5, 1.5) for _ in range(E)]
        sizes = [int(T * w / sum(load)) for w in load]
    else:
        raise BenchError(f"routing {routing!r}: one of {', '.join(ROUTINGS)}")
    sizes[-1] += T - sum(sizes)
    return sizes


def _eager_glu(mod):
    """Eager PyTorch of the module's GLU: (x, w_cat = [up; gate] unpacked) -> out."""
    import torch.nn.functional as F

    glu = _torch_glu(mod)

    def eager(x, w_cat):
        left, gate = F.linear(x, w_cat).chunk(2, dim=-1)
        return glu(left, gate)

    return eager


def _liger(act_name):
    try:
        from liger_kernel.ops.geglu import LigerGELUMulFunction
        from liger_kernel.ops.swiglu import LigerSiLUMulFunction
    except Exception:  # noqa: BLE001 - optional baseline
        return None
    import torch.nn.functional as F

    fn = {"silu": LigerSiLUMulFunction, "gelu_tanh": LigerGELUMulFunction}.get(act_name)
    if fn is None:
        return None

    def liger(x, w_gate, w_up):
        return fn.apply(F.linear(x, w_gate), F.linear(x, w_up))

    return liger


# A batch of host_us queues its steps' GPU time, which the sync after it waits out: at
# 16384x8192x28672 (a 70-ms GLU step, 100-ms MLP steps) the bench's batches of 20 queue about
# 260 s of the row's 341 (2 x 143 steps of each of 3 GLU and 7 MLP steps; v0.43, an H100), for
# host µs that 4-6 steps per batch tell as well (a step issues in < 1 ms: the host never waits).
HOST_BATCH_MS = 400  # the GPU time one batch may queue: fewer steps per batch for long steps
HOST_MIN_STEPS = 4


def host_batch(gpu_ms, n=20):
    """Steps per host_us batch where the longest step takes ``gpu_ms`` of GPU time: ``n``, or
    as many as HOST_BATCH_MS holds (at least HOST_MIN_STEPS)."""
    return max(HOST_MIN_STEPS, min(n, math.ceil(HOST_BATCH_MS / max(gpu_ms, 1e-3))))


def cuda_ms_per_call(fn, calls):
    """GPU ms per call of ``fn``: ``calls`` calls back to back between two CUDA events, after a
    synchronize (nothing queued before them is counted)."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / calls


def profiled_kernels(run, steps, warm=0, cpu=False):
    """[(name, µs)] for every kernel that ``steps`` calls of ``run()`` launch, in launch order,
    each with its device time (torch.profiler, CUDA activity), after ``warm`` calls that are not
    profiled.  With ``cpu``: every CPU operator with its self CPU time instead (a run under
    Triton's interpreter, which launches no kernel)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activity, kind = (
        (ProfilerActivity.CPU, torch.autograd.DeviceType.CPU)
        if cpu
        else (ProfilerActivity.CUDA, torch.autograd.DeviceType.CUDA)
    )
    sync = (lambda: None) if cpu else torch.cuda.synchronize
    for _ in range(warm):
        run()
    sync()
    with profile(activities=[activity]) as prof:
        for _ in range(steps):
            run()
        sync()
    events = sorted(
        (e for e in prof.events() if e.device_type == kind), key=lambda e: e.time_range.start
    )
    return [(e.name, e.self_cpu_time_total if cpu else e.device_time_total) for e in events]


def kernels_per_step(run, steps, warm=3):
    """[(kernel name, median device µs per step)] for the kernels one call of ``run()``
    launches, in launch order (profiled_kernels over ``steps`` calls after ``warm``), or one
    summed entry where the calls launched unequal numbers of kernels."""
    events = profiled_kernels(run, steps, warm=warm)
    per = len(events) // steps
    if per * steps != len(events):
        return [("(uneven steps)", sum(us for _, us in events) / steps)]
    return [
        (events[i][0], statistics.median(events[s * per + i][1] for s in range(steps)))
        for i in range(per)
    ]


def kernels_by_name(events, steps):
    """profiled_kernels' events of ``steps`` steps -> {name: (launches per step, µs per step)},
    in the order the names first ran."""
    total = {}
    for name, us in events:
        n, t = total.get(name, (0, 0.0))
        total[name] = (n + 1, t + us)
    return {name: (n / steps, t / steps) for name, (n, t) in total.items()}


def host_us(steps, n=20, rounds=7, warmup=3, sync=None, clock=None):
    """{name: CPU µs to issue one step}: the median of host_us_rounds' rounds."""
    samples = host_us_rounds(steps, n, rounds, warmup, sync, clock)
    return {name: statistics.median(v) for name, v in samples.items()}


def host_us_rounds(steps, n=20, rounds=7, warmup=3, sync=None, clock=None):
    """{name: [CPU µs to issue one step, per round]}: batches of n steps back to back, no
    synchronisation inside a batch; the implementations take turns batch by batch (interleaved
    rounds, every other round in reverse order: _round_order), so a host that slows down or
    speeds up (these VMs move by +-30-50%, and a whole host can halve its speed between two
    rounds: perf log v0.44) biases none of them, and two steps' batches of one round, issued
    next to each other, share the host's state (paired_ratio over these rounds).

    The GPU queue holds far more than n steps' launches, so this is what the host spends
    (Python, dispatch, autograd, launches), not what the GPU does.  ``sync`` (default
    torch.cuda.synchronize) drains the queue between batches; ``clock`` defaults to
    time.perf_counter."""
    if sync is None:
        import torch

        sync = torch.cuda.synchronize
    clock = clock or time.perf_counter
    for step in steps.values():
        for _ in range(warmup):
            step()
    sync()
    samples = {name: [] for name in steps}
    for r in range(rounds):
        for name, step in _round_order(steps, r):
            t0 = clock()
            for _ in range(n):
                step()
            samples[name].append((clock() - t0) / n * 1e6)
            sync()
    return samples


# Host µs in a network (v0.45): each step after the same small attention block, the
# implementations in turns step by step, at most HOST_NET_CYCLES cycles and about HOST_NET_S
# seconds of steps per row.
HOST_NET_CYCLES = 100
HOST_NET_S = 8.0


def other_layers(dev="cuda", dtype=None, T=256, D=512, heads=8):
    """A stand-in for the work between two MLP steps in a network (host_net_us's ``between``):
    a pre-norm causal attention block's forward and backward on T tokens of width D (norm, QKV
    and output projections, SDPA, residual): a few hundred µs of host time, little GPU time."""
    import torch
    import torch.nn.functional as F

    dtype = dtype or torch.bfloat16
    gen = torch.Generator(device=dev).manual_seed(1)
    x = torch.randn(1, T, D, device=dev, dtype=dtype, generator=gen, requires_grad=True)
    norm = torch.nn.LayerNorm(D, device=dev, dtype=dtype)
    qkv = torch.nn.Linear(D, 3 * D, bias=False, device=dev, dtype=dtype)
    proj = torch.nn.Linear(D, D, bias=False, device=dev, dtype=dtype)

    def block():
        q, k, v = qkv(norm(x)).view(1, T, 3, heads, D // heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        (x + proj(a.transpose(1, 2).reshape(1, T, D))).sum().backward()

    return block


def host_net_cycles(step_ms, n):
    """Cycles of host_net_us for n implementations whose longest step takes step_ms on the GPU
    (each cycle is synchronised and runs each step twice: about 2 n steps' GPU time)."""
    return max(20, min(HOST_NET_CYCLES, int(HOST_NET_S * 1e3 / max(2 * n * step_ms, 1e-3))))


def host_net_us(steps, cycles, between, sync=None, clock=None, seed=0):
    """{name: [host µs of its timed step in each cycle]}: the host µs of a step as a network's
    layers issue it.  In a network a layer's MLP step follows other work (attention) that
    followed the previous layer's MLP step, so each implementation runs as two layers in turn,
    between(), step(), between(), step(), and the second step is timed: it follows the same
    work as in a network.  The implementations take turns cycle by cycle in a shuffled order
    (``seed``), so their timed steps lie a few milliseconds apart (paired per cycle); the GPU
    queue is drained after each cycle (a GPU-bound step never fills the launch queue).

    Why: the bench's batches of 20 steps run each step after a copy of itself (warm caches, as
    in a loop, where every call costs the host 2-4x less than inside a step: perf log v0.45),
    and pair batches tens of milliseconds apart, between which a VM's host changes speed (the
    same step against itself read 0.83-0.95x in one run, v0.44).  A step right after the same
    code runs warmer even with other work between (an A/A pair in a fixed rotation read
    1.12x), so every timed step has the same predecessors here."""
    import random

    if sync is None:
        import torch

        sync = torch.cuda.synchronize
    clock = clock or time.perf_counter
    rng = random.Random(seed)
    names = list(steps)
    for name in names:
        between()
        steps[name]()
    sync()
    samples = {name: [] for name in names}
    for _ in range(cycles):
        rng.shuffle(names)
        for name in names:
            between()
            steps[name]()  # the previous layer's step
            between()
            t0 = clock()
            steps[name]()
            samples[name].append((clock() - t0) * 1e6)
        sync()
    return samples


def paired_quartiles(r, a, b):
    """(median, first quartile, third quartile) over the rounds (or cycles) of a / b, as
    paired_ratio pairs them; None where either has none.  For host_net_us's ~100 cycles, whose
    extremes are single descheduled steps."""
    xs, ys = r.get(f"{a}_rounds"), r.get(f"{b}_rounds")
    if not xs or not ys:
        return None
    ratios = [x / y for x, y in zip(xs, ys)]
    if len(ratios) < 2:
        return ratios[0], ratios[0], ratios[0]
    q = statistics.quantiles(ratios, n=4)
    return statistics.median(ratios), q[0], q[2]


def queued_rounds(steps, rounds, n, setup=None, sync=None, clock=None):
    """({name: [wall ms per step of each round]}, {name: [host µs per step of each round]}):
    per round (in _round_order), ``setup(name)`` if given, then the step n times back to back
    after a sync; host time to the return of its last call, wall time to a sync after it.  For
    steps whose host waits on the GPU (an event or a sync inside), which host_us's batches
    would not separate from the GPU's time."""
    if sync is None:
        import torch

        sync = torch.cuda.synchronize
    clock = clock or time.perf_counter
    wall, host = {name: [] for name in steps}, {name: [] for name in steps}
    for r in range(rounds):
        for name, step in _round_order(steps, r):
            if setup is not None:
                setup(name)
            sync()
            t0 = clock()
            for _ in range(n):
                step()
            t1 = clock()
            sync()
            t2 = clock()
            wall[name].append((t2 - t0) / n * 1e3)
            host[name].append((t1 - t0) / n * 1e6)
    return wall, host


def write_results(filename, data):
    """A measurement script's results as JSON: into $OUT (the device machine's folder that comes
    back) or build/ here; returns the path."""
    out_dir = os.environ.get("OUT", "build")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, filename)
    with open(path, "w") as fh:
        json.dump(data, fh, indent=1)
    return path


def _round_order(steps, r):
    """Round r's (name, step) pairs: the given order in even rounds, reversed in odd ones.

    On an H200 at its power limit what ran just before moves a kernel's time by a few percent
    either way (perf log v0.18: a forward timed after a whole MLP step 0.99-1.05x its time
    after a GEMM), so with one fixed order the step listed after a heavy one would follow it in
    every round.  Reversed every other round, the steps on either side of it follow it equally
    often; list the implementations to compare next to each other.  With an even number of
    rounds each order is timed equally often (the bench and tune use 4)."""
    items = list(steps.items())
    return items if r % 2 == 0 else items[::-1]


def _interleaved_samples(steps, t, rounds):
    """{name: [ms of each round]}: `rounds` rounds, every implementation once per round (in
    the order of _round_order)."""
    samples = {k: [] for k in steps}
    for r in range(rounds):
        for name, (fn, grads) in _round_order(steps, r):
            samples[name].append(t(fn, grads))
    return samples


def _interleaved(steps, t, rounds):
    """{name: median ms} over `rounds` interleaved rounds (_interleaved_samples)."""
    samples = _interleaved_samples(steps, t, rounds)
    return {name: statistics.median(v) for name, v in samples.items()}


def measure_steps(steps, prefix, t, rounds, res, floors=None, between=None):
    """Median fwd+bwd ms (interleaved rounds), host µs and peak MiB of each named step; each
    round's ms too (``{prefix}{name}_fwd_bwd_rounds``, for paired_ratio); the host µs in
    batches of ``{prefix}host_batch`` steps (host_batch of the longest step), each round's too
    (``{prefix}{name}_host_us_rounds``, ``{prefix}{name}_host_none_us_rounds``).  With
    ``between`` (other layers' work) also the host µs in a network (host_net_us, .grad
    accumulated): ``{prefix}{name}_host_net_us`` and each cycle's (``..._host_net_us_rounds``).

    ``floors`` ({name: (fn, None)}, optional): the floor's GEMMs, timed in the same rounds
    (listed first, next to the first step) into ``{prefix}{name}_ms``: on an H200 at its power
    limit one GEMM timed alone moves by up to +-9% with what ran before it (perf log v0.18), so
    a floor timed elsewhere is not the floor of these rounds."""
    floors = floors or {}
    samples = _interleaved_samples({**floors, **steps}, t, rounds)
    key = {n: f"{prefix}{n}_ms" if n in floors else f"{prefix}{n}_fwd_bwd_ms" for n in samples}
    res.update(_medians_and_rounds({key[n]: v for n, v in samples.items()}))
    n = res[f"{prefix}host_batch"] = host_batch(max(res[key[name]] for name in steps))
    # with .grad accumulated, and as a training loop with zero_grad(set_to_none=True) runs it
    # (no .grad to add into); each with its rounds (paired_ratio(r, "ours_host_us", ...))
    none = {name: grads_to_none(step, params) for name, (step, params) in steps.items()}
    for what, batch in (
        ("host_us", {name: s for name, (s, _) in steps.items()}),
        ("host_none_us", none),
    ):
        for name, us in host_us_rounds(batch, n=n).items():
            res[f"{prefix}{name}_{what}"] = statistics.median(us)
            res[f"{prefix}{name}_{what}_rounds"] = us
    if between is not None:
        longest = max(res[key[name]] for name in steps)
        cycles = res[f"{prefix}host_net_cycles"] = host_net_cycles(longest, len(steps))
        net = host_net_us({name: s for name, (s, _) in steps.items()}, cycles, between)
        for name, us in net.items():
            res[f"{prefix}{name}_host_net_us"] = statistics.median(us)
            res[f"{prefix}{name}_host_net_us_rounds"] = us
    for name, (step, params) in steps.items():
        res[f"{prefix}{name}_peak_mib"] = peak_mib(step, params)
        for p in params:
            p.grad = None


def _medians_and_rounds(samples):
    """{"<what>_ms": [ms of each round]} -> {"<what>_ms": median, "<what>_rounds": the rounds}."""
    res = {}
    for key, v in samples.items():
        res[key] = statistics.median(v)
        res[key.removesuffix("_ms") + "_rounds"] = v
    return res


def paired_ratio(r, a, b):
    """(median, min, max) over the rounds of ``a``'s time / ``b``'s in the same round (keys
    without "_ms": e.g. "ours_fwd_bwd", "liger_fwd_bwd"), or None where either has no rounds
    (not timed, or a report from before v0.23).  Two steps timed back to back share the card's
    clock and power state, which moves a kernel by up to 10% within seconds on an H200 (perf
    log v0.23), so the per-round ratio is steadier than the ratio of the two medians, and its
    spread says whether a difference of a few percent is one."""
    xs, ys = r.get(f"{a}_rounds"), r.get(f"{b}_rounds")
    if not xs or not ys:
        return None
    ratios = [x / y for x, y in zip(xs, ys)]
    return statistics.median(ratios), min(ratios), max(ratios)


def fmt_ratio(ratio):
    """paired_ratio's (median, min, max) as "median [min, max]"; None as "-"."""
    return "-" if ratio is None else f"{ratio[0]:.3f} [{ratio[1]:.3f}, {ratio[2]:.3f}]"


def _fmt_paired(r, a, b):
    return fmt_ratio(paired_ratio(r, a, b))


def grads_to_none(step, params):
    """step() with the gradients of ``params`` set to None before it, as an optimizer's
    zero_grad(set_to_none=True) leaves them: the backward's gradients are then taken as they
    are, not added into the ones of the step before (one more kernel and node work per leaf;
    ``measure_steps``'s host µs are taken both ways)."""

    def step_from_none():
        for p in params:
            p.grad = None
        step()

    return step_from_none


def peak_mib(step, params, warm=False):
    """MiB allocated at the peak of ``step()`` beyond what was allocated before it, with the
    gradients of ``params`` freed before and after.  ``warm``: one step first, so that what a
    first call allocates and keeps (a library's workspace) is not counted as the step's.  (The
    allocator counts whole blocks: a cached block up to 1 MiB larger than asked for is handed out
    unsplit, so two steps with the same tensors can read up to ~1 MiB apart; v0.37-v0.38's
    914.5 vs Liger's 913.5 MiB at 11136x3584x14336 stayed with warm=True, while the allocator's
    trace, which records the sizes asked for, gives both 913.5: scripts/peak_snapshot.py.)
    Garbage in reference cycles (an earlier shape's graph, closures) is collected before the
    reading: freed by the cyclic collector inside the step, it would lower the allocation under
    the base and hide the step's own peak (v0.40: ab_split's first "dy held" reading of its
    second shape was 0.0 MiB, most likely so)."""
    import gc

    import torch

    if warm:
        grads_to_none(step, params)()
    for p in params:
        p.grad = None
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    step()
    torch.cuda.synchronize()
    extra = (torch.cuda.max_memory_allocated() - base) / 2**20
    for p in params:
        p.grad = None
    return extra


def in_network_step(forward, inputs, grad):
    """A fwd+bwd step as inside a network: out is held by nothing after the forward, and its
    gradient (a fresh copy of ``grad``) is made by the next node's backward and held by
    nothing else, as a following layer hands it over (``out.backward(grad)`` keeps both
    alive to the end: the caller holds them)."""
    import torch

    class NextLayer(torch.autograd.Function):
        @staticmethod
        def forward(ctx, out):
            return out.new_zeros(())

        @staticmethod
        def backward(ctx, _):
            return grad.clone()

    def step():
        NextLayer.apply(forward(*inputs)).backward()

    return step


# Interleaved rounds per measurement, the bench's and tune's (even: each of _round_order's two
# orders equally often), and how this version times (bench.json's meta: runs of other versions are not comparable).
ROUNDS = 4
METHOD = (
    "interleaved rounds, every other reversed; floors timed in the steps' rounds (v0.18); "
    "host µs in batches of at most HOST_BATCH_MS of GPU time (v0.43); "
    "host µs in a network: two layers of a step, each after an attention block, the second "
    "timed, implementations in shuffled turns (v0.45); ours called as FusedGLU.forward calls "
    "glu, one packed weight as (weight, None) (v0.46)"
)


def fused_glu_call(mod, packed, x, parts=None):
    """(forward, inputs) of glu with ``packed`` [2N, K] held as FusedGLU holds its weight: since
    v0.26 two Parameters, one tensor's consecutive rows (older modules: the packed tensor);
    since v0.38 only where the layer is big enough for them (the module's
    _weight_parts_wanted), else the packed tensor.  ``parts=True``: the two parts whatever the
    layer's size, as FusedGLU(..., weight_parts=True) holds them (where the module has parts
    and N spans more than one forward tile).  The call is FusedGLU.forward's: glu(x, (weight_a,
    weight_b)), weight_b None for one packed Parameter."""
    import torch

    rows = packed.detach().clone()
    N, K = packed.shape[0] // 2, packed.shape[1]
    wanted = getattr(mod, "_weight_parts_wanted", lambda K, N: True)
    split = (
        2 * mod._weight_split(N)
        if hasattr(mod, "_weight_split") and (parts or wanted(K, N))
        else len(rows)
    )
    if split == len(rows):
        if not hasattr(mod, "_weight_parts"):  # (before v0.26: FusedGLU passes the tensor)
            return mod.glu, (x, torch.nn.Parameter(rows))

        def glu_packed(x, weight):  # as FusedGLU.forward passes one packed Parameter
            return mod.glu(x, (weight, None))

        return glu_packed, (x, torch.nn.Parameter(rows))
    parts = (torch.nn.Parameter(rows[:split]), torch.nn.Parameter(rows[split:]))

    def glu_parts(x, weight_a, weight_b):
        return mod.glu(x, (weight_a, weight_b))

    return glu_parts, (x, *parts)


def bench_shape(mod, shape, do_compile=True, rounds=ROUNDS, log=print):
    import torch
    from triton.testing import do_bench

    M, K, N = shape
    if N % mod.CHUNK:
        raise BenchError(f"shape {shape}: N must be a multiple of CHUNK = {mod.CHUNK}")
    dev, dt = "cuda", mod.DTYPE
    torch.manual_seed(0)
    x = torch.randn(M, K, device=dev, dtype=dt)
    gate_w = (torch.randn(N, K, device=dev) / K**0.5).to(dt)
    up_w = (torch.randn(N, K, device=dev) / K**0.5).to(dt)
    down_w = (torch.randn(K, N, device=dev) / N**0.5).to(dt)
    packed = mod.pack_weight(gate_w, up_w).contiguous()
    w_cat = torch.cat([up_w, gate_w]).contiguous()
    dy = torch.randn(M, N, device=dev, dtype=dt)
    dz = torch.randn(M, K, device=dev, dtype=dt)
    flop_fwd = 2.0 * M * K * 2 * N
    res = {"shape": [M, K, N], "activation": mod.ACTIVATION, "module": mod.SPEC["name"]}
    if hasattr(mod, "_unfused"):  # which forward the module's rule takes here (v0.10+)
        sms = torch.cuda.get_device_properties(dev).multi_processor_count
        res["forward_path"] = "pass" if mod._unfused(M, N, K, sms) else "fused"

    def t(fn, grad_to_none=None):
        return do_bench(fn, warmup=25, rep=100, grad_to_none=grad_to_none, return_mode="median")

    def fwd_bwd(forward, inputs, grad):
        def step():
            forward(*inputs).backward(grad)

        return step

    # cuBLAS and our forwards are timed in interleaved rounds (median of each): the ratios
    # that the targets are about then see the same clocks.
    log(f"  {shape}: cuBLAS GEMM vs ours (train fwd / infer fwd), {rounds} interleaved rounds")
    fwd = {
        "cublas_ms": (lambda: torch.nn.functional.linear(x, packed), None),
        "ours_train_fwd_ms": (lambda: mod.glu_forward(x, packed, save_factors=True), None),
        "ours_infer_fwd_ms": (lambda: mod.glu_forward(x, packed, save_factors=False), None),
    }
    res.update(_interleaved(fwd, t, rounds))

    # ---- the GLU up-projection, fwd+bwd: every implementation in interleaved rounds --------
    xg = x.clone().requires_grad_()
    we = w_cat.clone().requires_grad_()
    eager = _eager_glu(mod)
    calls = {"ours": fused_glu_call(mod, packed, xg), "eager": (eager, (xg, we))}
    if do_compile:
        calls["compile"] = (torch.compile(eager), (xg, we))
    liger = _liger(mod.ACTIVATION)
    if liger is not None:
        wgl = gate_w.clone().requires_grad_()
        wul = up_w.clone().requires_grad_()
        calls["liger"] = (liger, (xg, wgl, wul))
    glu = {name: (fwd_bwd(f, inputs, dy), list(inputs)) for name, (f, inputs) in calls.items()}
    # The floors, timed in the steps' own rounds: one GEMM x @ W^T (the floor is 3 of it), and
    # the step's own three GEMMs (x @ W^T, g @ W, g^T @ x) back to back: what cuBLAS itself
    # reaches for them (3 x one GEMM timed alone understates a sustained step; perf log v0.13)
    g = torch.randn(M, 2 * N, device=dev, dtype=dt)
    floors = {
        "floor_gemm": (lambda: torch.nn.functional.linear(x, packed), None),
        "step_gemms": (
            lambda: (
                torch.nn.functional.linear(x, packed),
                torch.mm(g, packed),
                torch.mm(g.t(), x),
            ),
            None,
        ),
    }
    log(f"  {shape}: GLU fwd+bwd ({', '.join(glu)}) and floors, {rounds} interleaved rounds")
    measure_steps(glu, "", t, rounds, res, floors, between=other_layers(dev, dt))
    del g, floors
    res["floor_ms"] = 3 * res["floor_gemm_ms"]
    for name, (f, inputs) in calls.items():  # dy held by the caller above; here by no one
        net = in_network_step(f, inputs, dy)  # warmed: the steady state's peak, not a first call's
        res[f"{name}_net_peak_mib"] = peak_mib(net, list(inputs), warm=True)
    if liger is not None:
        res["liger_fwd_ms"] = t(lambda: liger(x, gate_w, up_w))
    res.update(_backward_parts(mod, x, packed, dy, t))

    # ---- the whole MLP (gate/up/down), fwd+bwd ---------------------------------------------
    mlp = _mlps(mod, gate_w, up_w, down_w, liger is not None, do_compile)
    mlp_steps = {}
    for name, model in mlp.items():
        params = [xg, *model.parameters()]
        mlp_steps[name] = (fwd_bwd(model, (xg,), dz), params)
    if "fused" in mlp and hasattr(mod, "FUSED_DGRAD"):  # FusedMLP with the other dgrad path
        step, params = mlp_steps["fused"]
        mlp_steps["fused_alt_dgrad"] = (_flag_flipped(mod, "FUSED_DGRAD", step), params)
    log(f"  {shape}: MLP fwd+bwd ({', '.join(mlp)}) and floor, {rounds} interleaved rounds")
    # the MLP's floor: 3 x (the up-projection's GEMM + the down projection's), same rounds
    up_down = (
        lambda: (torch.nn.functional.linear(x, packed), torch.nn.functional.linear(dy, down_w)),
        None,
    )
    measure_steps(mlp_steps, "mlp_", t, rounds, res, {"floor_gemms": up_down})
    res["mlp_floor_ms"] = 3 * res["mlp_floor_gemms_ms"]
    for name, model in mlp.items():
        res[f"mlp_{name}_kept_mib"] = _kept_mib(lambda: model(xg))
    if hasattr(mod, "_launch_dgrad"):
        res.update(_dgrad_parts(mod, x, packed, down_w, dz, t, rounds))

    res["cublas_tflops"] = flop_fwd / res["cublas_ms"] / 1e9
    res["ours_train_fwd_tflops"] = flop_fwd / res["ours_train_fwd_ms"] / 1e9
    res["ours_fwd_bwd_tflops"] = 3 * flop_fwd / res["ours_fwd_bwd_ms"] / 1e9
    return res


@contextlib.contextmanager
def module_constants(mod, **values):
    """The module's constants (``RELEASE_DY=False``, ...) set to ``values`` for the block's
    duration, restored after it."""
    saved = {k: getattr(mod, k) for k in values}
    for k, v in values.items():
        setattr(mod, k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(mod, k, v)


def with_constants(f, mod, **values):
    """f with the module's constants set to ``values`` while each call runs."""

    def run(*args):
        with module_constants(mod, **values):
            return f(*args)

    return run


def _flag_flipped(mod, flag, step):
    """step() with the module's boolean ``flag`` flipped for its duration."""

    def flipped():
        with module_constants(mod, **{flag: not getattr(mod, flag)}):
            step()

    return flipped


def _kept_mib(forward):
    """Activation memory a forward (a call with no arguments, its inputs allocated before)
    keeps for its backward: memory_allocated after it minus before it, minus the output."""
    import torch

    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    out = forward()
    torch.cuda.synchronize()
    kept = torch.cuda.memory_allocated() - before - out.numel() * out.element_size()
    del out
    return kept / 2**20


def _dgrad_parts(mod, x, packed, down_w, dz, t, rounds):
    """The fused MLP's dgrad GEMM (dY @ W_down with the GLU-derivative epilogue, in place on a
    preactivation buffer) against the plain cuBLAS GEMM dY @ W_down, interleaved."""
    import torch

    down_w = down_w.contiguous()
    parts = {
        "mlp_dgrad_ms": (dgrad_step(mod, dz, down_w), None),
        "mlp_dgrad_cublas_ms": (lambda: torch.mm(dz, down_w), None),
    }
    return _interleaved(parts, t, rounds)


def dgrad_step(mod, dy, down_w):
    """A call of the module's dgrad GEMM dy [M, K] @ down_w [K, N] with its epilogue, in place
    on a preactivation buffer of its own (repeated, the values overflow; the GEMM's time does
    not depend on them)."""
    import torch

    M, N = dy.shape[0], down_w.shape[1]
    h = torch.randn(M, 2 * N, device=dy.device, dtype=mod.DTYPE)
    y = torch.empty(M, N, device=dy.device, dtype=mod.DTYPE)
    return lambda: mod._launch_dgrad(dy, down_w, h, y)


def _mlps(mod, gate_w, up_w, down_w, with_liger, do_compile):
    """The whole MLP: FusedMLP (and compiled), FusedGLU + nn.Linear (and compiled), Liger,
    HF-style eager; the same weights."""
    import torch

    glu = _torch_glu(mod)

    def linear(w):
        lin = torch.nn.Linear(w.shape[1], w.shape[0], bias=False, device=w.device, dtype=w.dtype)
        with torch.no_grad():
            lin.weight.copy_(w)
        return lin

    class Ours(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gate_up = mod.FusedGLU.from_linears(linear(gate_w), linear(up_w))
            self.down_proj = linear(down_w)

        def forward(self, x):
            return self.down_proj(self.gate_up(x))

    class Eager(torch.nn.Module):  # HF LlamaMLP
        def __init__(self):
            super().__init__()
            self.gate_proj, self.up_proj, self.down_proj = (
                linear(gate_w),
                linear(up_w),
                linear(down_w),
            )

        def forward(self, x):
            return self.down_proj(glu(self.up_proj(x), self.gate_proj(x)))

    models = {"ours": Ours(), "eager": Eager()}
    if hasattr(mod, "FusedMLP"):
        models["fused"] = mod.FusedMLP.from_linears(linear(gate_w), linear(up_w), linear(down_w))
    if with_liger:
        liger = _liger(mod.ACTIVATION)

        class Liger(Eager):
            def forward(self, x):
                return self.down_proj(liger(x, self.gate_proj.weight, self.up_proj.weight))

        models["liger"] = Liger()
    if do_compile:
        models["ours_compiled"] = torch.compile(Ours(), fullgraph=True)
        if "fused" in models:
            fused = mod.FusedMLP.from_linears(linear(gate_w), linear(up_w), linear(down_w))
            models["fused_compiled"] = torch.compile(fused, fullgraph=True)
    return models


def _torch_glu(mod):
    """(left, gate) -> out in plain torch ops: the activation registry's reference expression
    with the module's parameters (F.silu(gate) * left for SwiGLU, as in HF's LlamaMLP)."""
    import torch
    import torch.nn.functional as F

    from .activations import ACTIVATIONS, Act

    entry = ACTIVATIONS[Act(mod.ACTIVATION)]
    # a real function (not an eval per call), so that torch.compile traces it with fullgraph
    code = compile(f"lambda left, gate: ({entry.reference_expr})", f"<{mod.ACTIVATION}>", "eval")
    env = {"torch": torch, "F": F, **getattr(mod, "ACTIVATION_PARAMS", {})}
    return eval(code, env)  # noqa: S307


def _backward_parts(mod, x, packed, dy, t):
    """The backward's pieces on their own, and the device copy bandwidth of a same-size buffer."""
    import torch

    M, N = dy.shape
    _, factors = mod.glu_forward(x, packed, save_factors=True)
    res = {
        "ours_bwd_act_ms": t(lambda: mod.glu_backward_factors_(dy, factors)),
        "bwd_gemm_grad_x_ms": t(lambda: factors @ packed),
        "bwd_gemm_grad_w_ms": t(lambda: factors.t() @ x),
    }
    src = torch.empty_like(factors)
    dst = torch.empty_like(factors)
    res["copy_ms"] = t(lambda: dst.copy_(src))
    act_bytes = (M * N + 2 * 2 * M * N) * dy.element_size()  # dy read, factors read + written
    res["bwd_act_gbps"] = act_bytes / res["ours_bwd_act_ms"] / 1e6
    res["copy_gbps"] = 2 * src.numel() * src.element_size() / res["copy_ms"] / 1e6
    return res


def _fmt(v, digits):
    return "-" if v is None else f"{v:.{digits}f}"


# fwd+bwd over the step's own three GEMMs run back to back (reports from before v0.13: -)
STEP_GEMMS_COLUMN = (
    "x step GEMMs",
    lambda r: f"{r['ours_fwd_bwd_ms'] / r['step_gemms_ms']:.3f}x" if "step_gemms_ms" in r else "-",
)


def table(results) -> str:
    cols = [
        ("shape", lambda r: "x".join(map(str, r["shape"]))),
        ("act", lambda r: r["activation"]),
        ("cuBLAS", lambda r: f"{r['cublas_ms']:.3f}"),
        (  # ", pass": the step ran cuBLAS + the elementwise pass instead of the fused kernel
            "train fwd",
            lambda r: f"{r['ours_train_fwd_ms']:.3f} ({r['ours_train_fwd_ms'] / r['cublas_ms']:.3f}x"
            + (", pass)" if r.get("forward_path") == "pass" else ")"),
        ),
        (
            "infer fwd",
            lambda r: f"{r['ours_infer_fwd_ms']:.3f} ({r['ours_infer_fwd_ms'] / r['cublas_ms']:.3f}x)",
        ),
        (
            "fwd+bwd",
            lambda r: f"{r['ours_fwd_bwd_ms']:.3f} ({r['ours_fwd_bwd_ms'] / r['floor_ms']:.3f}x floor)",
        ),
        STEP_GEMMS_COLUMN,
        ("eager", lambda r: f"{r['eager_fwd_bwd_ms']:.3f}"),
        (
            "compile",
            lambda r: f"{r['compile_fwd_bwd_ms']:.3f}" if "compile_fwd_bwd_ms" in r else "-",
        ),
        ("liger", lambda r: f"{r['liger_fwd_bwd_ms']:.3f}" if "liger_fwd_bwd_ms" in r else "-"),
        (  # median [min, max] of the rounds' own ratios (reports before v0.23: -)
            "ours/liger per round",
            lambda r: _fmt_paired(r, "ours_fwd_bwd", "liger_fwd_bwd"),
        ),
        ("bwd act/copy BW", lambda r: f"{r['bwd_act_gbps'] / r['copy_gbps']:.2f}"),
        (
            "peak MiB ours/liger/eager",
            lambda r: f"{r['ours_peak_mib']:.0f}/{r.get('liger_peak_mib', float('nan')):.0f}/{r['eager_peak_mib']:.0f}",
        ),
        (  # dy made by the graph, as in a network (reports before v0.14: -)
            "in-network peak MiB ours/liger/eager",
            lambda r: "/".join(
                _fmt(r.get(f"{k}_net_peak_mib"), 0) for k in ("ours", "liger", "eager")
            ),
        ),
        (
            "host us ours/liger/eager",
            lambda r: "/".join(_fmt(r.get(f"{k}_host_us"), 0) for k in ("ours", "liger", "eager")),
        ),
        (  # as a network's layers issue it: host_net_us (reports before v0.45: -)
            "host us in a network ours/liger/eager",
            lambda r: "/".join(
                _fmt(r.get(f"{k}_host_net_us"), 0) for k in ("ours", "liger", "eager")
            ),
        ),
        (  # grads set to None before each step (reports before v0.38: -)
            "host us, grads None",
            lambda r: "/".join(
                _fmt(r.get(f"{k}_host_none_us"), 0) for k in ("ours", "liger", "eager")
            ),
        ),
        (
            "MLP ms ours/compiled/liger/eager",
            lambda r: "/".join(
                _fmt(r.get(f"mlp_{k}_fwd_bwd_ms"), 3)
                for k in ("ours", "ours_compiled", "liger", "eager")
            ),
        ),
        (
            "MLP host us ours/liger/eager",
            lambda r: "/".join(
                _fmt(r.get(f"mlp_{k}_host_us"), 0) for k in ("ours", "liger", "eager")
            ),
        ),
        (
            "FusedMLP ms (x floor)",
            lambda r: (
                f"{r['mlp_fused_fwd_bwd_ms']:.3f} ({r['mlp_fused_fwd_bwd_ms'] / r['mlp_floor_ms']:.3f}x)"
                if "mlp_fused_fwd_bwd_ms" in r
                else "-"
            ),
        ),
        (
            "FusedMLP/liger MLP per round",
            lambda r: _fmt_paired(r, "mlp_fused_fwd_bwd", "mlp_liger_fwd_bwd"),
        ),
        (
            "FusedMLP other dgrad ms",  # FUSED_DGRAD flipped: the path the module does not take
            lambda r: _fmt(r.get("mlp_fused_alt_dgrad_fwd_bwd_ms"), 3),
        ),
        (
            "FusedMLP compiled/host us",
            lambda r: f"{_fmt(r.get('mlp_fused_compiled_fwd_bwd_ms'), 3)}/{_fmt(r.get('mlp_fused_host_us'), 0)}",
        ),
        (
            "MLP kept MiB fused/liger/eager",
            lambda r: "/".join(
                _fmt(r.get(f"mlp_{k}_kept_mib"), 0) for k in ("fused", "liger", "eager")
            ),
        ),
        (
            "MLP peak MiB ours/fused/liger",
            lambda r: "/".join(
                _fmt(r.get(f"mlp_{k}_peak_mib"), 0) for k in ("ours", "fused", "liger")
            ),
        ),
        (
            "dgrad/cuBLAS",
            lambda r: (
                f"{r['mlp_dgrad_ms'] / r['mlp_dgrad_cublas_ms']:.3f}"
                if "mlp_dgrad_ms" in r
                else "-"
            ),
        ),
    ]
    return _format(cols, results)


def _format(cols, results) -> str:
    rows = [[c[0] for c in cols]] + [[c[1](r) for c in cols] for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(cols))]
    lines = [" | ".join(v.ljust(w) for v, w in zip(row, widths)) for row in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def plot(results, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    impls = [
        ("ours_fwd_bwd_ms", "ours"),
        ("liger_fwd_bwd_ms", "Liger"),
        ("compile_fwd_bwd_ms", "torch.compile"),
        ("eager_fwd_bwd_ms", "eager"),
        ("floor_ms", "3x cuBLAS floor"),
    ]
    mems = [
        ("ours_peak_mib", "ours"),
        ("liger_peak_mib", "Liger"),
        ("compile_peak_mib", "torch.compile"),
        ("eager_peak_mib", "eager"),
    ]
    labels = [f"{r['activation']} " + "x".join(map(str, r["shape"])) for r in results]
    fig, axes = plt.subplots(1, 2, figsize=(14, 6))
    for ax, series, unit in (
        (axes[0], impls, "fwd+bwd time / floor"),
        (axes[1], mems, "peak extra MiB"),
    ):
        width = 0.8 / len(series)
        for i, (key, name) in enumerate(series):
            vals = [
                r.get(key, float("nan")) / (r["floor_ms"] if unit.startswith("fwd") else 1)
                for r in results
            ]
            ax.bar([j + i * width for j in range(len(results))], vals, width, label=name)
        ax.set_xticks(
            [j + 0.4 - width / 2 for j in range(len(results))],
            labels,
            fontsize=7,
            rotation=45,
            ha="right",
        )
        ax.set_ylabel(unit)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def check_routings(routings) -> None:
    """BenchError for a routing that is not one of ROUTINGS (the CLI's choices check it too)."""
    bad = [r for r in routings if r not in ROUTINGS]
    if bad:
        raise BenchError(f"--routing {bad[0]!r}: one of {', '.join(ROUTINGS)}")


def grouped_case(mod, shape, routing, device="cuda", sizes=None):
    """The inputs of a grouped step at ``shape`` (T, K, N, E) and ``routing`` (or the rows per
    expert ``sizes``, summing to T, where given), made from seed 0,
    and its two implementations: ``ours()`` (grouped_glu, offsets unchecked, as
    FusedGroupedGLU calls it) and ``titan()`` (torchtitan-style: two torch._grouped_mm + the
    activation, autograd), each on its own leaves (``ours_leaves``, ``titan_leaves``: x and the
    weights, with their biases for gpt-oss's swiglu_oai).  Also x, dy, the packed weight and
    biases as plain tensors (per projection: b1, b3), the sizes, offsets and each row's
    expert."""
    import types

    import torch

    T, K, N, E = shape
    if N % mod.CHUNK:
        raise BenchError(f"shape {shape}: N must be a multiple of CHUNK = {mod.CHUNK}")
    dev, dt = device, mod.DTYPE
    c = types.SimpleNamespace(bias=mod.ACTIVATION == "swiglu_oai")
    glu = _torch_glu(mod)
    torch.manual_seed(0)
    c.w1 = (torch.randn(E, N, K, device=dev) / K**0.5).to(dt)  # gate
    c.w3 = (torch.randn(E, N, K, device=dev) / K**0.5).to(dt)  # up
    c.packed = mod.pack_grouped_weight(c.w1, c.w3).contiguous()
    b1, b3 = ((torch.randn(E, N, device=dev) * 0.1).to(dt) for _ in range(2))
    c.b1, c.b3 = b1, b3
    c.packed_b = torch.stack([mod.pack_bias(b1[e], b3[e]) for e in range(E)]) if c.bias else None
    c.sizes = list(sizes) if sizes is not None else routing_sizes(T, E, routing)
    c.offs = torch.tensor(c.sizes, device=dev).cumsum(0).to(torch.int32)
    expert_of_row = torch.repeat_interleave(
        torch.arange(E, device=dev), torch.tensor(c.sizes, device=dev)
    )
    c.x = torch.randn(T, K, device=dev, dtype=dt)
    c.dy = torch.randn(T, N, device=dev, dtype=dt)
    xg = c.x.clone().requires_grad_()
    wg = c.packed.clone().requires_grad_()
    bg = c.packed_b.clone().requires_grad_() if c.bias else None
    w1g, w3g, b1g, b3g = (t.clone().requires_grad_() for t in (c.w1, c.w3, b1, b3))
    c.ours_leaves = [xg, wg, bg] if c.bias else [xg, wg]
    c.titan_leaves = [xg, w1g, w3g, b1g, b3g] if c.bias else [xg, w1g, w3g]

    def ours(check_offsets=False):
        return mod.grouped_glu(xg, wg, c.offs, bg, check_offsets=check_offsets)

    def titan():
        gate = torch._grouped_mm(xg, w1g.transpose(-2, -1), offs=c.offs)
        up = torch._grouped_mm(xg, w3g.transpose(-2, -1), offs=c.offs)
        if c.bias:
            gate, up = gate + b1g[expert_of_row], up + b3g[expert_of_row]
        return glu(up, gate)

    c.ours, c.titan = ours, titan
    return c


def cuda_graph(step, warm_up=None):
    """A torch.cuda.CUDAGraph of ``step()`` (captured once), after ``warm_up()`` (default: three
    steps) ran on a side stream: compiles, caches and the allocator's warm-up happen outside
    the capture."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        if warm_up is None:
            for _ in range(3):
                step()
        else:
            warm_up()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph


def bench_grouped_shape(mod, shape, routing, rounds=ROUNDS, log=print, device="cuda", timer=None):
    """grouped_glu fwd+bwd vs a torchtitan-style path (two torch._grouped_mm + the activation,
    autograd), the grouped floor (3 x one torch._grouped_mm of the fused [T, K] x [E, K, 2N])
    and the step's own three grouped GEMMs back to back (x @ W^T, g @ W, g^T @ x);
    the forward vs one grouped GEMM; activation memory kept between forward and backward.
    gpt-oss's activation (swiglu_oai) runs with its packed biases."""
    import torch
    from triton.testing import do_bench

    T, K, N, E = shape
    c = grouped_case(mod, shape, routing, device)
    x, offs, ours, titan = c.x, c.offs, c.ours, c.titan
    w_fused = torch.cat([c.w3, c.w1], 1)  # [E, 2N, K]: the fused up-projection's GEMM work

    def step(fn, params):
        def run():
            fn().backward(c.dy)
            for p in params:
                p.grad = None

        return run

    def t(fn, grads=None):
        if timer is not None:
            return timer(fn)
        return do_bench(fn, warmup=10, rep=60, return_mode="median")

    g = torch.randn(T, 2 * N, device=device, dtype=mod.DTYPE)

    def gmm():  # the fused up-projection's grouped GEMM: the floor's unit
        return torch._grouped_mm(x, w_fused.transpose(-2, -1), offs=offs)

    def step_gemms():  # the step's own three grouped GEMMs back to back
        gmm()
        torch._grouped_mm(g, w_fused, offs=offs)
        torch._grouped_mm(g.t(), x, offs=offs)

    steps = {
        "gmm_ms": (gmm, None),
        "step_gemms_ms": (step_gemms, None),
        "ours_fwd_ms": (lambda: mod._grouped_forward(x, c.packed, offs, c.packed_b, True), None),
        "ours_fwd_bwd_ms": (step(ours, c.ours_leaves), None),
        "titan_fwd_bwd_ms": (step(titan, c.titan_leaves), None),
    }
    log(
        f"  {shape} {routing}: grouped fwd+bwd (ours, torchtitan-style), {rounds} interleaved rounds"
    )
    res = {
        "shape": list(shape),
        "routing": routing,
        "activation": mod.ACTIVATION,
        "bias": c.bias,
        "module": mod.SPEC["name"],
        **_medians_and_rounds(_interleaved_samples(steps, t, rounds)),
    }
    del g
    res["floor_ms"] = 3 * res["gmm_ms"]
    if timer is None:  # on the GPU: the host's µs per step too (a CPU timer has no CUDA queue)
        fwd_bwd = {"ours": steps["ours_fwd_bwd_ms"][0], "titan": steps["titan_fwd_bwd_ms"][0]}
        for name, us in host_us_rounds(fwd_bwd, n=5, rounds=5).items():
            res[f"{name}_host_us"] = statistics.median(us)
            res[f"{name}_host_us_rounds"] = us
    res["ours_kept_mib"] = _kept_mib(ours)
    res["titan_kept_mib"] = _kept_mib(titan)
    with torch.no_grad():
        a, b = ours().float(), titan().float()
        res["rel_err_vs_titan"] = ((a - b).norm() / b.norm()).item()
    return res


def grouped_table(results) -> str:
    cols = [
        ("T,K,N,E", lambda r: ",".join(map(str, r["shape"]))),
        ("routing", lambda r: r["routing"]),
        ("act", lambda r: r["activation"] + (" +bias" if r["bias"] else "")),
        (
            "fwd+bwd (x floor)",
            lambda r: f"{r['ours_fwd_bwd_ms']:.3f} ({r['ours_fwd_bwd_ms'] / r['floor_ms']:.3f}x)",
        ),
        STEP_GEMMS_COLUMN,
        (
            "torchtitan",
            lambda r: f"{r['titan_fwd_bwd_ms']:.3f} ({r['titan_fwd_bwd_ms'] / r['ours_fwd_bwd_ms']:.2f}x ours)",
        ),
        (  # the speed-up, median [min, max] of the rounds' own ratios (before v0.23: -)
            "titan/ours per round",
            lambda r: _fmt_paired(r, "titan_fwd_bwd", "ours_fwd_bwd"),
        ),
        ("fwd / gmm", lambda r: f"{r['ours_fwd_ms']:.3f} ({r['ours_fwd_ms'] / r['gmm_ms']:.3f}x)"),
        ("kept MiB ours/titan", lambda r: f"{r['ours_kept_mib']:.0f}/{r['titan_kept_mib']:.0f}"),
        (
            "host us ours/titan",
            lambda r: "/".join(_fmt(r.get(f"{k}_host_us"), 0) for k in ("ours", "titan")),
        ),
        ("err vs titan", lambda r: f"{r['rel_err_vs_titan']:.4f}"),
    ]
    return _format(cols, results)


def require_cuda(what, packages=("torch", "triton")):
    """Imports ``packages`` and checks that a CUDA GPU is visible; BenchError (exit 2, no
    traceback) naming ``what`` needs them otherwise."""
    import importlib

    try:
        for package in packages:
            importlib.import_module(package)
    except ImportError as e:
        raise BenchError(f"{what} needs {' and '.join(packages)} installed ({e})") from None
    import torch

    if not torch.cuda.is_available():
        raise BenchError(
            f"{what} needs a CUDA GPU; none is visible (torch.cuda.is_available() is False)"
        )


def run(
    modules,
    shapes,
    out_dir: Path,
    do_compile=True,
    log=print,
    defaults=False,
    routings=(),
    resume=False,
    time_limit=None,
):
    """``defaults``: the shapes are the default set, and a module skips those whose N is not a
    multiple of its CHUNK (gpt-oss's N = 2880 with a 128-column module); given shapes raise.
    ``routings``: those of the T,K,N,E shapes (default: all of ROUTINGS).  ``resume``: keep
    the rows of ``out_dir``'s bench.json (measured with the same GPU model, versions and
    method: _resumed) and time only the (module, shape, routing) it lacks.  ``time_limit``
    (seconds from the start of this call): a row is not started where it would end past it
    (its time guessed by _row_guess); the rows left are logged and returned in
    meta["not_started"] (not saved: a --resume run times them)."""
    if time_limit is not None and not time_limit > 0:
        raise BenchError(f"--time-limit must be a positive number of seconds, got {time_limit}")
    start = time.perf_counter()
    check_routings(routings)
    if routings and not any(len(s) == 4 for s in shapes):
        raise BenchError("--routing is for T,K,N,E shapes (grouped modules); none is timed")
    require_cuda("the bench")
    import torch
    import triton

    mods = [load_module(p) for p in modules]
    grouped_shapes = [s for s in shapes if len(s) == 4]
    if grouped_shapes and not any(hasattr(m, "grouped_glu") for m in mods):
        raise BenchError(
            "--shape T,K,N,E (and a mixture-of-experts --model) is for grouped modules "
            "(generated with --grouped); none was given"
        )
    meta = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "rounds": ROUNDS,
        "method": METHOD,
    }
    meta, results, grouped = _resumed(out_dir / "bench.json", meta) if resume else (meta, [], [])
    meta["hosts"] = [*meta.get("hosts", []), host_id()]  # run i's rows: "run": i
    run_index = len(meta["hosts"]) - 1
    done = {_row_key(r) for r in [*results, *grouped]}
    took = {_row_key(r): r["bench_s"] for r in [*results, *grouped] if r.get("bench_s")}
    not_started = []
    out_dir.mkdir(parents=True, exist_ok=True)

    def save():  # after every shape: a run stopped part-way keeps what it measured
        data = {"meta": meta, "results": results, **({"grouped": grouped} if grouped else {})}
        (out_dir / "bench.json").write_text(json.dumps(data, indent=1))

    def measure(rows, key, bench):
        """rows += bench()'s row (with its run and seconds), then saved; False where --resume
        kept the row of ``key`` (module, shape, routing or None) from bench.json."""
        what = f"{key[1]}" + (f" {key[2]}" if key[2] else "")  # the shape (and the routing)
        if key in done:
            log(f"  {what}: kept from bench.json (--resume)")
            return False
        t0 = time.perf_counter()
        guess = _row_guess(key, took)
        if time_limit is not None and t0 - start + guess > time_limit:
            log(f"  {what}: not started (--time-limit {time_limit:g} s: ~{guess:.0f} s more)")
            not_started.append(key)
            return False
        rows.append(bench())
        rows[-1].update(run=run_index, bench_s=round(time.perf_counter() - t0, 1))
        took[key] = rows[-1]["bench_s"]
        log(f"  {what}: {rows[-1]['bench_s']:.0f} s")
        torch.cuda.empty_cache()
        save()
        return True

    for mod in mods:
        log(f"{mod.SPEC['name']} on {torch.cuda.get_device_name()}")
        for shape in shapes:
            if defaults and shape[2] % mod.CHUNK:
                log(f"  {shape}: skipped, N is not a multiple of CHUNK = {mod.CHUNK}")
                continue
            if len(shape) == 4:
                if not hasattr(mod, "grouped_glu"):
                    continue
                for routing in routings or ROUTINGS:
                    key = (mod.SPEC["name"], tuple(shape), routing)
                    if measure(
                        grouped, key, lambda: bench_grouped_shape(mod, shape, routing, log=log)
                    ):
                        log(grouped_table(grouped[-1:]))
                continue
            key = (mod.SPEC["name"], tuple(shape), None)
            if measure(
                results, key, lambda: bench_shape(mod, shape, do_compile=do_compile, log=log)
            ):
                log(table(results[-1:]))
        direct, compiled = launch_paths(mod)
        launches = meta.setdefault("direct_launches", {})
        if compiled or mod.SPEC["name"] not in launches:  # (a resumed run may time nothing)
            launches[mod.SPEC["name"]] = f"{direct}/{compiled}"
        save()
    if results:
        plot(results, out_dir / "bench.png")
    if not_started:  # (returned, not saved: the file holds what was measured)
        log(f"--time-limit: {len(not_started)} row(s) not started; --resume times them")
        return {**meta, "not_started": not_started}, results, grouped
    return meta, results, grouped


def _row_guess(key, took):
    """Seconds the row ``key`` (module, shape, routing) may take, for --time-limit, from the rows
    of its kind (dense or grouped) timed so far, in this run or the file it resumes: a row's
    time is a fixed part (compiles, warm-up, the rounds' floor) plus a part that grows with
    its size M K N (T K N), so a row no bigger than a timed one takes at most that one's time
    and a row k times bigger at most k times it; the guess is the least of these bounds (0
    before any row: the first always starts).  (v0.43, an H100: 23, 58, 81 and 341 s for
    4.7e10, 4.8e11, 5.7e11 and 3.9e12 M K N; the longest alone kept a 27-s row from 280 s.)"""
    size = math.prod(key[1][:3])
    bounds = [
        seconds * max(1.0, size / math.prod(k[1][:3]))
        for k, seconds in took.items()
        if (k[2] is None) == (key[2] is None)
    ]
    return min(bounds, default=0.0)


def host_id():
    """Which machine a run was on, for telling runs apart: the node name, the boot id's first
    8 hex digits (device VMs are all named "vm"; each boot has its own id) and the CPU model
    (host µs depend on it).  Parts not available on this OS are left out."""
    parts = [platform.node()]
    try:
        parts.append(Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8])
    except OSError:
        pass
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                parts.append(line.split(":", 1)[1].strip())
                break
    except OSError:
        pass
    return " ".join(p for p in parts if p)


# What two runs must share for their rows to sit in one bench.json (--resume): the host and
# the card itself may differ (each row says its run; meta["hosts"] names the runs' hosts).
RESUME_KEYS = ("gpu", "torch", "triton", "rounds", "method")


def _row_key(row):
    """(module, shape, routing or None): what a bench.json row measured."""
    return row["module"], tuple(row["shape"]), row.get("routing")


def _resumed(path, meta):
    """(meta, results, grouped) of the bench.json at ``path`` for a run to go on with: its
    rows, and its meta with this run's added; a missing file starts afresh.  Raises BenchError
    where the file was measured otherwise (RESUME_KEYS) or is not a bench.json."""
    if not path.is_file():
        return meta, [], []
    try:
        data = json.loads(path.read_text())
        old, results, grouped = data["meta"], data["results"], data.get("grouped", [])
        keys = [_row_key(r) for r in [*results, *grouped]]
    except (ValueError, KeyError, TypeError) as e:
        raise BenchError(f"--resume: {path} is not a bench report ({e!r})") from None
    differ = [k for k in RESUME_KEYS if old.get(k) != meta[k]]
    if differ:
        said = ", ".join(f"{k} {old.get(k)!r} there, {meta[k]!r} here" for k in differ)
        raise BenchError(
            f"--resume: {path} was measured otherwise ({said}); its rows would not compare "
            "with this run's: give another --out"
        )
    if len(set(keys)) != len(keys):
        raise BenchError(f"--resume: {path} has a row twice")
    hosts = old.get("hosts", [None])  # (a report from before --resume: one run, host unsaid)
    return {**old, **meta, "hosts": hosts}, results, grouped


def launch_paths(mod):
    """(direct, compiled): of the kernels the module has compiled in this process, how many
    launch through Triton's C launcher directly (with launch plans) rather than through
    CompiledKernel.run, which an unknown Triton launcher layout falls back to (~10-40 µs more
    host time per launch)."""
    entries = list(getattr(mod, "_COMPILED", {}).values())
    return sum(1 for entry in entries if entry[1] is not None), len(entries)


def run_cli(
    modules, shapes, out_dir: Path, do_compile=True, routings=(), resume=False, time_limit=None
) -> None:
    """`swiglu-gen bench`: raises BenchError for what the user must fix (exit 2)."""
    defaults = not shapes
    if defaults:  # the dense defaults, and the MoE shapes when a grouped module is benched
        grouped = any(
            Path(m).is_file() and "def grouped_glu" in Path(m).read_text(errors="replace")
            for m in modules
        )
        shapes = DEFAULT_SHAPES + (DEFAULT_GROUPED_SHAPES if grouped else [])
    meta, results, grouped = run(
        modules,
        shapes,
        Path(out_dir),
        do_compile,
        log=lambda s: print(s, file=sys.stderr, flush=True),
        defaults=defaults,
        routings=tuple(routings),
        resume=resume,
        time_limit=time_limit,
    )
    print(f"{meta['gpu']}, torch {meta['torch']}, triton {meta['triton']}")
    for name, counts in meta.get("direct_launches", {}).items():
        print(f"{name}: {counts} compiled kernels launched through Triton's C launcher directly")
    if results:
        print(table(results))
    if grouped:
        print(grouped_table(grouped))
    for name, shape, routing in meta.get("not_started", []):
        said = "x".join(map(str, shape)) + (f" {routing}" if routing else "")
        print(f"not started (--time-limit): {name} {said}; run again with --resume")


if __name__ == "__main__":  # python -m codegen.bench ... == swiglu-gen bench ...
    from .cli import main

    main(["bench", *sys.argv[1:]])
