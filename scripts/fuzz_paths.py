"""Differential fuzzing of a generated module's training and inference paths.

Each case draws:
- a shape: rows ragged or not, K aligned for TMA or not, 1-D / 2-D / 3-D x, x contiguous or a
  strided view, the functions' weight contiguous, a column slice of a wider tensor or
  transposed in memory;
- what is called: glu with one packed weight, FusedGLU's two parts as one tensor's rows, two
  tensors apart, a list, or a packed bias; a FusedGLU with one or two Parameters (and a bias);
  the whole MLP (mlp, FusedMLP); on a grouped module grouped_glu over five routings, T = 0 and
  experts without rows included, and FusedExperts (transformers' experts layer: top-k routing,
  skewed or not, with or without biases);
- which inputs want a gradient (or none, torch.no_grad or torch.inference_mode), autocast or not (and under it,
  float32 master weights: FusedGLU / FusedMLP / FusedExperts built in float32, or float32
  tensors to the functions), one step or two (the second adds into .grad, as over
  micro-batches of gradient accumulation; a gradient that reuses a buffer shows);
- one of the module's path switches (as generated, the general path, two autograd nodes, split
  factor buffers, dy kept, fused dgrad, the grouped GEMM switches) and which forward runs (the
  module's rule, the fused kernel, a cuBLAS GEMM and one pass);
- how it is called: as is, under activation checkpointing, compiled (fullgraph), through
  torch.func.vjp, or (GPU) captured in a CUDA graph and replayed.

It runs one fwd+bwd and checks:
- out and every gradient (x, each weight part, the bias, the down weight; after two steps,
  the second with half the output gradient, 1.5x the reference's) against a float32
  reference (``reference`` / ``reference_mlp`` through autograd; grouped: a loop over the
  experts) within the generated tests' tolerance (2x where per-part GEMMs round twice, as the
  tests allow, and for outputs of fewer than SMALL elements);
- no gradient where none was wanted, and the right shapes and dtypes (a float32 master
  weight's gradient is float32);
- where the step took the small-step path, the same step down the general path gives the same
  bits (the path's contract);
- a second backward through the same graph raises a RuntimeError (the factors are consumed);
- an expert without rows gets an exactly zero weight (and bias) gradient.

    PYTHONPATH=. python scripts/fuzz_paths.py MODULE.py [--seconds S] [--cases N] [--seed S]
        [--smoke] [--case JSON]

On a GPU it draws shapes up to a few thousand rows; with --smoke (or TRITON_INTERPRET=1) tiny
ones on the CPU, in Triton's interpreter (bf16 dots widened as the generated tests do).
Results: $OUT/fuzz_paths-MODULE.json (or build/; MODULE the module's file name without .py, so
that runs of several modules into one folder, in turn or side by side, keep each one's): every
case, what it drew, whether it took the small-step path, its errors and tolerances, its
failures.  Exit status 1 when a case failed; each failure is printed with the case (it
reproduces with the same --seed: cases are drawn in order; or alone with --case and the printed
JSON).  A run stops at a CUDA error (the context is unusable after it) and on SIGINT (e.g.
``timeout -s INT``), the case it was in recorded as failed with where it was; the results so
far are written either way."""

import argparse
import contextlib
import functools
import json
import math
import os
import random
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, ".")
if "--smoke" in sys.argv:  # before Triton is imported: its kernels then run in the interpreter
    os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402

from codegen.bench import load_module, module_constants  # noqa: E402

# split factor buffers wherever a step could split them
SPLIT = {
    "LOW_PEAK_MIN_FLOP": 0,
    "SPLIT_MIN_SAVING": -1.0,
    "SPLIT_MAX_OVER_FLOOR": math.inf,
    "PARTS_SPLIT_MIN_SAVING": -1.0,
    "PARTS_SPLIT_ABOVE_UNFUSED": -1.0,
}
# the module constants each path switch sets (the rest keep the module's values)
CONFIGS = {
    "default": {},
    "general": {"SMALL_STEP_PATH": False},
    "two_nodes": {"SMALL_STEP_PATH": False, "RELEASE_DY": False, "TWO_NODES_MIN_FLOP": 0},
    "split": SPLIT,
    "split_two_nodes": {**SPLIT, "RELEASE_DY": False},
    "keep_dy": {"RELEASE_DY": False},
    # grouped modules: their own Triton grouped GEMMs instead of torch._grouped_mm's fast path,
    # and the backward's per-expert loop of dense GEMMs at any size
    "no_grouped_mm": {"_GROUPED_MM_FAST": False},
    "expert_loop": {"LOOP_MIN_EXPERT_FLOP": 0},
    # mlp: dh in the Triton GEMM whose epilogue recomputes the GLU derivative
    "fused_dgrad": {"FUSED_DGRAD": True},
    # mlp: the down weight's gradient made after the packed weight's (the rule's few-rows order)
    "down_grad_last": {"DOWN_GRAD_ORDER": "last"},
}
# and the forward: as the module's rule picks it (on the CPU's few rows: always the unfused
# one), the fused kernel, or a cuBLAS GEMM and one pass
FORWARDS = {
    "rule": {},
    "fused": {"UNFUSED_MAX_ROWS": 0, "UNFUSED_MIN_SAVING_US": math.inf},
    "unfused": {"UNFUSED_MAX_ROWS": 1 << 40},
}
FORMS = ("packed", "parts", "apart", "list", "module", "module_parts", "bias", "module_bias")
GROUPED_FORMS = ("grouped", "grouped_bias")  # grouped_glu, where the module has it
# the whole MLP: mlp(x, packed, down), mlp(x, (part_a, part_b), down), FusedMLP with one packed
# weight and with two weight parts
MLP_FORMS = ("mlp", "mlp_parts", "fused_mlp", "fused_mlp_parts")
# transformers' experts layer as FusedExperts (grouped modules): top-k routing, grouped_glu, the
# down projection (and its bias), the routing weights, each token's k rows summed
EXPERTS_FORMS = ("experts", "experts_bias")
LONG_ON_CPU = 0.05  # the share of CPU cases with hundreds of rows (see draw)
SMALL = 64  # elements: a looser tolerance below (see check)
WRAPS = ("none", "checkpoint", "compile", "vjp", "graph")  # graph: a GPU's only
# Activations with a kink in the gate (relu at 0): a gate within rounding of it may land on
# either side in our kernels and in the float32 reference, and one such flip moves a gradient by
# about 1/sqrt(its elements) relative (v0.53, the GPU fuzzer on relu fp16: 3 cases of 1084 at
# 0.005-0.009 against 0.004, out within 4e-4).  Where a case's output is the GLU's own, its
# output gradient is zeroed at gates within KINK_BAND of a kink (_kink_free), so no flip reaches
# a gradient; the MLP and experts forms' inner gradient stays as drawn.  (swiglu_oai's clamps at
# +-limit = 7 are ~7 sigma out for these gates: never near.)
KINKS = {"relu": (0.0,)}
# The band, relative to each gate's terms: the product's rounding to DTYPE before a bias add
# (cuBLAS into the preactivation buffer) and the float32 accumulation's, with margin.
KINK_BAND = {"rounding": 4.0, "accumulation": 64 * 2.0**-24}
ROUTINGS = ("balanced", "skewed", "empty_experts", "one_expert", "random")


def configured(mod, config):
    """bench.module_constants for the constants of ``config`` the module has (an sm80 module has
    no persistent kernel's wave rule)."""
    return module_constants(mod, **{name: v for name, v in config.items() if hasattr(mod, name)})


def draw(rng, mod, gpu):
    """One random case (a dict of plain values: printable, replayable)."""
    chunk = mod.CHUNK
    if gpu:
        # (6145 and 12289 rows: weight gradients over them lost their last row to cuBLAS's
        # split-K on an H100, perf log v0.56)
        M = rng.choice(
            [1, 2, 7, 64, 127, 128, 129, 255, 256, 257, 300, 513, 1000, 2048, 3001, 6145, 12289]
        )
        K = rng.choice([8, 16, 64, 72, 100, 128, 200, 256, 520, 1024, 2048])
        n_chunks = rng.randint(1, 8)
    elif rng.random() < LONG_ON_CPU:  # many rows of a tiny weight: sums over rows show their
        M, K, n_chunks = rng.choice([300, 1100]), 8, 1  # accumulation (v0.47's down bias)
    else:
        M = rng.choice([1, 2, 3, 5, 9])
        K = rng.choice([8, 12, 16])
        n_chunks = rng.randint(1, 3)
    dims = 1 if M == 1 and rng.random() < 0.5 else rng.choice([2, 2, 3])
    lead = [M] if dims == 2 else ([] if dims == 1 else [1, M])
    if dims == 3 and M % 2 == 0 and rng.random() < 0.5:
        lead = [2, M // 2]
    grouped = hasattr(mod, "grouped_glu")
    form = rng.choice(
        FORMS + MLP_FORMS + (GROUPED_FORMS * 3 + EXPERTS_FORMS * 2 if grouped else ())
    )
    n = n_chunks * chunk
    sizes = None
    if form in GROUPED_FORMS:  # x [T, K], rows sorted by expert; the sizes of E experts
        E = rng.choice([1, 2, 3, 5, 8, 16] if gpu else [1, 2, 3])
        T = rng.choice([0, M, M, 3 * M + 1]) if gpu else rng.choice([0, M, 2 * M + 1])
        routing = rng.choice(ROUTINGS)
        sizes = route(rng, T, E, routing)
        lead = [T]
    experts = None
    if form in EXPERTS_FORMS:  # T tokens, each routed to k of E experts (skewed: expert 0 first)
        E = rng.choice([1, 2, 4, 8] if gpu else [1, 2, 3])
        experts = {"E": E, "k": rng.randint(1, min(E, 4)), "skewed": rng.random() < 0.3}
        lead = [rng.choice([0, M, M, 2 * M + 1])]
    if form in ("parts", "apart", "list", "module_parts") and mod._weight_split(n) >= n:
        form = "packed"  # one forward tile: no second part to hold
    if form in ("mlp_parts", "fused_mlp_parts") and mod._weight_split(n) >= n:
        form = form.removesuffix("_parts")
    inputs = ["x", "weight"] + (["bias"] if "bias" in form else [])
    inputs += ["down"] if form in MLP_FORMS + EXPERTS_FORMS else []
    wants = [name for name in inputs if rng.random() < 0.6]
    wrap = rng.choices(WRAPS, weights=(16, 2, 1, 2, 2 if gpu else 0))[0]
    if wrap == "vjp" and form.startswith(("module", "fused_mlp", "experts")):
        wrap = "none"  # torch.func over a module's Parameters: not drawn
    grad_mode = rng.choice(["train"] * 6 + ["no_grad", "inference_mode"])
    autocast = wrap != "graph" and rng.random() < 0.1  # (a capture: no autocast cache)
    return {
        "lead": lead,
        "K": K,
        "N": n,
        "form": form,
        "wants": wants,
        "grad_mode": grad_mode,
        "strided_x": rng.random() < 0.2,
        "autocast": autocast,
        "config": rng.choice(list(CONFIGS)),
        "forward": rng.choice(list(FORWARDS)),
        "sizes": sizes,
        "experts": experts,
        # how the step is called: as is, under activation checkpointing, compiled
        # (fullgraph), or through torch.func.vjp (functional forms only)
        "wrap": wrap,
        # a captured step's eager warm-ups: two training steps, or one and then a forward whose
        # backward never runs (its output, and what its nodes hold, freed inside the capture)
        "warm_up": rng.choice(["train", "forward"]) if wrap == "graph" else "train",
        "seed": rng.randrange(1 << 30),
        # float32 weights (the values DTYPE holds) cast by autocast, as mixed precision's
        # master weights are
        "master": autocast and rng.random() < 0.5,
        # a second fwd+bwd adds into .grad (not under torch.func or a captured graph)
        "steps": 2 if wrap in ("none", "checkpoint", "compile") and rng.random() < 0.2 else 1,
        # the functions' weight (glu, mlp, grouped_glu) as a strided view
        "weight_layout": rng.choice(["contiguous"] * 8 + ["col_slice", "transposed"]),
    }


def route(rng, T, E, routing):
    """Rows per expert (summing to T) for a routing."""
    if routing == "balanced":
        return [T // E + (e < T % E) for e in range(E)]
    if routing == "one_expert":
        sizes = [0] * E
        sizes[rng.randrange(E)] = T
        return sizes
    if routing == "skewed":  # one expert half the rows, the rest spread, the last two none
        sizes = [0] * E
        sizes[0] = T // 2 if E > 1 else T
        rest, others = T - sizes[0], list(range(1, max(1, E - 2)))
        for i, e in enumerate(others):
            sizes[e] = rest // len(others) + (i < rest % len(others))
        if not others:
            sizes[-1] += rest
        return sizes
    cuts = sorted(rng.randint(0, T) for _ in range(E - 1))  # random, or with empty experts
    if routing == "empty_experts":
        cuts = [c if rng.random() < 0.5 else (cuts[0] if cuts else 0) for c in cuts]
        cuts.sort()
    ends = cuts + [T]
    return [b - a for a, b in zip([0] + cuts, ends)]


def tensors(case, mod, device):
    """x (bf16 / fp16 values; float32 under autocast), the packed weight [2N, K] (grouped:
    [E, 2N, K]), the packed bias [2N] ([E, 2N]) or None, and the MLP's down weight [K, N] or
    None, drawn from the case's seed."""
    g = torch.Generator(device="cpu").manual_seed(case["seed"])
    K, N = case["K"], case["N"]
    experts = [] if case["sizes"] is None else [len(case["sizes"])]  # grouped: [E, 2N, K]
    x = torch.randn(*case["lead"], K, generator=g)
    weight = torch.randn(*experts, 2 * N, K, generator=g) / math.sqrt(K)
    bias = torch.randn(*experts, 2 * N, generator=g) * 0.1 if "bias" in case["form"] else None
    down = torch.randn(K, N, generator=g) / math.sqrt(N) if case["form"] in MLP_FORMS else None
    if case["experts"] is not None:  # [E, 2N, K] and [E, D = K, N], biases [E, 2N] and [E, K]
        E = case["experts"]["E"]
        weight = torch.randn(E, 2 * N, K, generator=g) / math.sqrt(K)
        down = torch.randn(E, K, N, generator=g) / math.sqrt(N)
        if bias is not None:
            bias = torch.randn(E, 2 * N, generator=g) * 0.1
            down = (down, torch.randn(E, K, generator=g) * 0.1)
    if case["strided_x"]:  # x as every other column of a wider tensor
        wide = torch.zeros(*case["lead"], 2 * K)
        wide[..., ::2] = x
        x = wide.to(device)[..., ::2]
    else:
        x = x.to(device)
    x = x if case["autocast"] else x.to(mod.DTYPE)

    def to(t):  # DTYPE's values; held in float32 as master weights
        t = t.to(device=device, dtype=mod.DTYPE)
        return t.float() if case.get("master") else t

    bias = None if bias is None else to(bias)
    if isinstance(down, tuple):
        down = tuple(to(t) for t in down)
    elif down is not None:
        down = to(down)
    return x, to(weight), bias, down


def routes(case, mod, device):
    """An experts case's top_k_index [T, k] (distinct experts per token; skewed: expert 0 first
    for most tokens) and top_k_weights [T, k] (softmax, in DTYPE), from its seed."""
    g = torch.Generator(device="cpu").manual_seed(case["seed"] + 2)
    E, k, T = case["experts"]["E"], case["experts"]["k"], case["lead"][0]
    index = torch.stack([torch.randperm(E, generator=g)[:k] for _ in range(T)] or [torch.empty(0)])
    index = index.long().reshape(T, k)
    if case["experts"]["skewed"] and T:
        tokens = torch.rand(T, generator=g) < 0.8
        has_zero = (index == 0).any(1)
        index[tokens & ~has_zero, 0] = 0  # (distinct still: 0 was not among them)
    weights = torch.softmax(torch.randn(T, k, generator=g), -1)
    return index.to(device), weights.to(device, mod.DTYPE)


def laid_out(weight, case):
    """A copy of ``weight`` in the case's memory layout: contiguous, a column slice of a wider
    tensor (rows 2K apart), or transposed storage (the last two dims swapped in memory)."""
    layout = case.get("weight_layout", "contiguous")
    if layout == "col_slice":
        wide = weight.new_zeros((*weight.shape[:-1], 2 * weight.shape[-1]))
        return wide[..., : weight.shape[-1]].copy_(weight)
    if layout == "transposed":
        return weight.transpose(-1, -2).contiguous().transpose(-1, -2)
    return weight.clone()


def run_ours(case, mod, x, weight, bias, down):
    """One fwd+bwd through the case's form: (out, grads by name, the function that backwards
    the same graph again, which path glu took)."""
    form, wants = case["form"], case["wants"]
    x = x.detach().requires_grad_("x" in wants)
    leaves = {"x": x}
    n_w = mod._weight_split(case["N"])
    if form in EXPERTS_FORMS:
        has_bias = bias is not None
        E = case["experts"]["E"]
        module = mod.FusedExperts(
            E, case["K"], case["N"], bias=has_bias, device=weight.device, dtype=weight.dtype
        )
        down_w, down_b = down if has_bias else (down, None)
        with torch.no_grad():
            module.weight.copy_(weight), module.down_weight.copy_(down_w)
            if has_bias:
                module.bias.copy_(bias), module.down_bias.copy_(down_b)
        for p in module.parameters():
            p.requires_grad_(False)
        module.weight.requires_grad_("weight" in wants)
        module.down_weight.requires_grad_("down" in wants)
        leaves["weight"], leaves["down"] = [module.weight], module.down_weight
        if has_bias:
            module.bias.requires_grad_("bias" in wants)
            module.down_bias.requires_grad_("down" in wants)
            leaves["bias"], leaves["down_bias"] = module.bias, module.down_bias
        call, args, arg_weight = module, (x, *routes(case, mod, x.device)), None
    elif form in MLP_FORMS:
        if form.startswith("fused_mlp"):
            module = mod.FusedMLP(
                case["K"],
                case["N"],
                device=weight.device,
                dtype=weight.dtype,
                weight_parts=form == "fused_mlp_parts",
            )
            module._copy_packed(weight)
            with torch.no_grad():
                module.down_weight.copy_(down)
            w = [p for p in (module.weight_a, module.weight_b) if p is not None]
            d = module.down_weight
            call, args = module, (x,)
        elif form == "mlp_parts":  # one tensor's consecutive rows (FusedMLP's layout), or apart
            if case["weight_layout"] == "contiguous":
                wc = weight.clone()
                w = [wc[: 2 * n_w].detach(), wc[2 * n_w :].detach()]
            else:
                w = [weight[: 2 * n_w].clone(), weight[2 * n_w :].clone()]
            d = down.clone()
            call, args = mod.mlp, (x, tuple(w), d)
        else:
            w = [laid_out(weight, case)]
            d = down.clone()
            call, args = mod.mlp, (x, w[0], d)
        for p in w:
            p.requires_grad_("weight" in wants)
        d.requires_grad_("down" in wants)
        leaves["weight"], leaves["down"], arg_weight = w, d, None
    elif form in GROUPED_FORMS:
        w = laid_out(weight, case).requires_grad_("weight" in wants)
        leaves["weight"] = [w]
        b = None
        if bias is not None:
            b = leaves["bias"] = bias.clone().requires_grad_("bias" in wants)
        offsets = torch.tensor(case["sizes"], dtype=torch.int64).cumsum(0)
        offsets = offsets.to(device=x.device, dtype=torch.int32)
        call, args, arg_weight = mod.grouped_glu, (x, w, offsets, b), None
    elif form.startswith("module"):
        module = mod.FusedGLU(
            case["K"],
            case["N"],
            bias=bias is not None,
            device=weight.device,
            dtype=weight.dtype,
            weight_parts=form == "module_parts",
        )
        module._copy_packed(weight)
        if bias is not None:
            with torch.no_grad():
                module.bias.copy_(bias)
        for p in module.parameters():
            p.requires_grad_(False)
        parts = [module.weight_a] + ([module.weight_b] if module.weight_b is not None else [])
        for p in parts:
            p.requires_grad_("weight" in wants)
        if module.bias is not None:
            module.bias.requires_grad_("bias" in wants)
            leaves["bias"] = module.bias
        leaves["weight"] = parts
        call, args = module, (x,)
        arg_weight = (module.weight_a, module.weight_b)
    else:
        if form in ("parts", "apart", "list"):
            if form == "parts":  # one tensor's consecutive rows (FusedGLU's layout)
                w = weight.clone()
                parts = [w[: 2 * n_w], w[2 * n_w :]]
            else:
                parts = [weight[: 2 * n_w].clone(), weight[2 * n_w :].clone()]
            parts = [p.detach().requires_grad_("weight" in wants) for p in parts]
            arg_weight = tuple(parts) if form != "list" else list(parts)
            leaves["weight"] = parts
        else:
            w = laid_out(weight, case).requires_grad_("weight" in wants)
            arg_weight, leaves["weight"] = w, [w]
        b = None
        if bias is not None:
            b = bias.clone().requires_grad_("bias" in wants)
            leaves["bias"] = b
        call, args = mod.glu, (x, arg_weight, b)
    wrap = case["wrap"]
    small = (  # whether glu takes the small-step path here (a wrapper changes what runs)
        wrap == "none"
        and arg_weight is not None
        and mod._small_step(x, arg_weight, leaves.get("bias")) is not None
    )
    grad_ctx = {"no_grad": torch.no_grad, "inference_mode": torch.inference_mode}.get(
        case["grad_mode"], contextlib.nullcontext
    )()
    cast = torch.autocast(x.device.type, dtype=mod.DTYPE) if case["autocast"] else None
    if wrap == "vjp" and case["grad_mode"] == "train" and wants:
        return _run_vjp(case, call, args, leaves, cast) + (False,)
    if wrap == "graph" and torch.cuda.is_available():
        return _run_graph(case, fn=call, args=args, leaves=leaves, grad_ctx=grad_ctx) + (False,)
    if wrap == "checkpoint":
        fn = functools.partial(torch.utils.checkpoint.checkpoint, call, use_reentrant=False)
    elif wrap == "compile":
        torch._dynamo.reset()  # every case its own graph (no recompile limit reached)
        backend = "aot_eager" if mod._INTERPRET else "inductor"
        fn = torch.compile(call, fullgraph=True, backend=backend)
    else:
        fn = call
    with grad_ctx, cast or contextlib.nullcontext():
        out = fn(*args)
    grads, again = {}, None
    if out.requires_grad:
        dy = _dy(case, out)
        out.backward(dy, retain_graph=True)
        for _ in range(case.get("steps", 1) - 1):  # again, half dy: .grad adds 0.5x the first
            with cast or contextlib.nullcontext():  # (a gradient that reuses a buffer shows)
                out = fn(*args)
            dy = dy * 0.5
            out.backward(dy, retain_graph=True)
        # checkpoint recomputes the forward (fresh factors) for each backward: a second one is
        # legitimate there
        again = None if wrap == "checkpoint" else lambda: out.backward(dy)
        for name, leaf in leaves.items():
            if isinstance(leaf, list):
                grads[name] = [p.grad for p in leaf]
            else:
                grads[name] = leaf.grad
    return out.detach(), grads, again, small


def _run_graph(case, fn, args, leaves, grad_ctx):
    """The step captured in a CUDA graph (warmed up on a side stream, gradients set to None
    before the capture, as a whole-network capture does) and replayed once: (out, grads by name,
    None: no second-backward check).  The warm-ups are two training steps or, with the case's
    ``warm_up`` "forward", a training step (everything the capture runs must have run once
    before it) and then a forward alone; either way the last one's output lives until the
    captured call replaces it, so it is freed inside the capture."""
    params = [p for leaf in leaves.values() for p in _flat(leaf)]

    def step():
        with grad_ctx:
            out = fn(*args)
        if out.requires_grad:
            out.backward(_dy(case, out) if dy is None else dy)
        return out

    dy = None
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for turn in range(2):
            if case.get("warm_up", "train") == "forward" and turn == 1:
                with grad_ctx:
                    out = fn(*args)
            else:
                out = step()
            if out.requires_grad and dy is None:
                dy = _dy(case, out)
            for p in params:
                p.grad = None
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = step()
    graph.replay()
    torch.cuda.synchronize()
    grads = {}
    if out.requires_grad:
        for name, leaf in leaves.items():
            grads[name] = [p.grad for p in leaf] if isinstance(leaf, list) else leaf.grad
    return out.detach(), grads, None


def _dy(case, out):
    """The step's output gradient, drawn from the case's seed (zero where _kink_free says)."""
    dy = torch.randn(out.shape, generator=torch.Generator().manual_seed(case["seed"] + 1))
    if _KEEP_DY is not None:  # (shaped as out: a mismatch is an error, not a skipped mask)
        dy = dy * _KEEP_DY
    return dy.to(out.device, out.dtype)


_KEEP_DY = None  # the current case's _kink_free mask (set by check for its duration)


def _kink_free(case, mod, x, weight, bias):
    """Where the case's output is the GLU's own and its activation has a kink (KINKS): a CPU
    mask over out's elements, False at gates within KINK_BAND of a kink (float64, from the
    values the kernels read); else None."""
    kinks = KINKS.get(getattr(mod, "ACTIVATION", None))
    if not kinks or case["form"] in MLP_FORMS + EXPERTS_FORMS:
        return None
    eps = torch.finfo(mod.DTYPE).eps
    xr = x.detach().to(mod.DTYPE).double().cpu().reshape(-1, case["K"])
    w = weight.detach().to(mod.DTYPE).double().cpu()
    b = None if bias is None else bias.detach().to(mod.DTYPE).double().cpu()
    grouped = case["sizes"] is not None
    rows = case["sizes"] if grouped else [xr.shape[0]]
    keep, start = [], 0
    for e, n in enumerate(rows):
        gate_w = mod.unpack_weight(w[e] if grouped else w)[0]
        xe = xr[start : start + n]
        product, terms = xe @ gate_w.t(), xe.abs() @ gate_w.abs().t()
        gate, scale = product, product.abs()
        if b is not None:
            gate_b = mod.unpack_bias(b[e] if grouped else b)[0]
            gate, scale = product + gate_b, scale + gate_b.abs()
        band = KINK_BAND["rounding"] * eps * scale + KINK_BAND["accumulation"] * terms
        near = torch.zeros_like(gate, dtype=torch.bool)
        for kink in kinks:
            near |= (gate - kink).abs() <= band
        keep.append(~near)
        start += n
    return torch.cat(keep).reshape(*case["lead"], case["N"]).float()


def _run_vjp(case, call, args, leaves, cast):
    """The step through torch.func.vjp with respect to the inputs that want a gradient: (out,
    grads by name, None: no second-backward check)."""
    wanted = {id(t) for name in case["wants"] for t in _flat(leaves[name])}
    primals = [t.detach() for t in _flat(args) if id(t) in wanted]
    order = [id(t) for t in _flat(args) if id(t) in wanted]

    def substitute(a, values):
        if isinstance(a, (tuple, list)):
            return type(a)(substitute(v, values) for v in a)
        return values.get(id(a), a) if isinstance(a, torch.Tensor) else a

    def fn(*values):
        return call(*substitute(args, dict(zip(order, values))))

    with cast or contextlib.nullcontext():
        out, vjp = torch.func.vjp(fn, *primals)
        got = dict(zip(order, vjp(_dy(case, out))))
    grads = {}
    for name, leaf in leaves.items():
        if isinstance(leaf, list):
            grads[name] = [got.get(id(p)) for p in leaf]
        else:
            grads[name] = got.get(id(leaf))
    return out.detach(), grads, None


def _flat(a):
    """The tensors in a nest of tuples and lists (None skipped)."""
    if isinstance(a, (tuple, list)):
        return [t for v in a for t in _flat(v)]
    return [a] if isinstance(a, torch.Tensor) else []


def reference(case, mod, x, weight, bias, down):
    """out and the gradients, in float32, through ``reference``."""
    # (under autocast x is cast to DTYPE, as the kernels read it: the reference reads the same
    # values, or a discontinuous activation (relu) flips where x's rounding moves a gate past 0)
    xr = x.detach().to(mod.DTYPE).float().requires_grad_(True)
    wr = weight.float().requires_grad_(True)
    br = None if bias is None else bias.float().requires_grad_(True)
    if case["experts"] is not None:  # per expert: its (token, slot) rows, weighted, summed
        down_w, down_b = down if isinstance(down, tuple) else (down, None)
        dr = down_w.float().requires_grad_(True)
        dbr = None if down_b is None else down_b.float().requires_grad_(True)
        index, weights = routes(case, mod, x.device)
        out = xr.new_zeros((xr.shape[0], xr.shape[1]))
        for e in range(case["experts"]["E"]):
            token, slot = (index == e).nonzero(as_tuple=True)
            gate_b, up_b = (None, None) if br is None else mod.unpack_bias(br[e])
            h = mod.reference(xr[token], *mod.unpack_weight(wr[e]), gate_b, up_b) @ dr[e].t()
            h = h if dbr is None else h + dbr[e]
            out = out.index_add(0, token, h * weights[token, slot].float()[:, None])
        out.backward(_dy(case, out).to(mod.DTYPE).float())
        grads = {"x": xr.grad, "weight": wr.grad, "down": dr.grad}
        grads["bias"], grads["down_bias"] = (None if t is None else t.grad for t in (br, dbr))
        return out.detach(), grads
    dr = None if down is None else down.float().requires_grad_(True)
    if dr is not None:
        out = mod.reference_mlp(xr, *mod.unpack_weight(wr), dr)
    elif case["sizes"] is None:
        gate_b, up_b = (None, None) if br is None else mod.unpack_bias(br)
        out = mod.reference(xr, *mod.unpack_weight(wr), gate_b, up_b)
    else:  # a loop over the experts of the dense reference
        outs, row = [], 0
        for e, rows in enumerate(case["sizes"]):
            gate_b, up_b = (None, None) if br is None else mod.unpack_bias(br[e])
            outs.append(
                mod.reference(xr[row : row + rows], *mod.unpack_weight(wr[e]), gate_b, up_b)
            )
            row += rows
        out = torch.cat(outs) if outs else xr.new_empty((0, case["N"]))
    out.backward(_dy(case, out).to(mod.DTYPE).float())  # (ours gets the same dy in DTYPE)
    grads = {"x": xr.grad, "weight": wr.grad}
    grads["bias"], grads["down"] = (None if t is None else t.grad for t in (br, dr))
    return out.detach(), grads


def rel_err(ours, ref):
    ours, ref = ours.double(), ref.double()
    den = ref.norm()
    if den > 0:
        return ((ours - ref).norm() / den).item()
    return (ours - ref).abs().max().item() if ref.numel() else 0.0  # an exact zero / nothing


def _same(a, b):
    """Both None, or the same bits."""
    return a is None and b is None or a is not None and b is not None and torch.equal(a, b)


def tolerances(case, out_numel, x_numel, tol):
    """(out's tolerance, the gradients') for a case whose dtype's tolerance is ``tol``."""
    # per-part GEMMs and addmm_ round twice: the tests allow 2 TOL there
    loose = 2 * tol if case["form"] != "packed" or "split" in case["config"] else tol
    # a norm-relative error over a few elements spreads more than over the tests' thousands
    # (an 8-element grad_x reached 1.05e-2 once in ~10^4 cases): 2x below SMALL elements
    if min(out_numel, x_numel) < SMALL:
        tol, loose = 2 * tol, 2 * loose
    return tol, loose


def worst_errors(results):
    """{name: (error, its tolerance, the case's index)}: each checked tensor's largest relative
    error over the results, with what it was held to and where (the case's JSON replays it)."""
    worst = {}
    for r in results:
        for name, err in r["errors"].items():
            held = r.get("tolerances", {}).get("out" if name == "out" else "grads")
            if name not in worst or err > worst[name][0]:
                worst[name] = (err, held, r["index"])
    return worst


def above_bar(results, bar):
    """[(case index, tensor, error)]: errors above the dtype's bar ``bar`` (the issues' 1e-2 in
    bf16) in cases that passed on the looser tolerance of two roundings (tolerances' 2x: parts,
    split factors, grouped forms), not counting cases under SMALL elements (held to 2x the bar
    for their spread: their out tolerance is not the bar).  v0.55: such a case (a grouped
    weight gradient at 0.0155) had shown only as a largest error."""
    return [
        (r["index"], name, err)
        for r in results
        if not r["failures"] and r.get("tolerances", {}).get("out") == bar
        for name, err in r["errors"].items()
        if err > bar
    ]


def _describe(results, worst):
    """The summary's words for worst_errors: error, tolerance, the case's rows x K -> N."""
    parts = []
    for name, (err, held, index) in worst.items():
        case = results[index]["case"]
        rows = math.prod(case["lead"])
        where = f"case {index}: {rows}x{case['K']} -> {case['N']}, {case['form']}"
        parts.append(f"{name} {err:.2g}" + (f" (tol {held:.2g}; {where})" if held else ""))
    return ", ".join(parts)


def _above(results, bar):
    """The summary's words for above_bar: none, or how many and the first five (the results
    file has them all: each case's errors and tolerances)."""
    found = above_bar(results, bar)
    listed = ", ".join(f"case {i} {name} {err:.2g}" for i, name, err in found[:5])
    return f"{len(found)} ({listed}{', ...' if len(found) > 5 else ''})" if found else "none"


def check(case, mod, device, tol):
    """(failures: a list of strings, empty when the case passed; whether it took the small-step
    path; {tensor: relative error}; the tolerances they were held to, out's and the gradients')."""
    global _KEEP_DY
    x, weight, bias, down = tensors(case, mod, device)
    failures, errors = [], {}
    config = {**CONFIGS[case["config"]], **FORWARDS[case["forward"]]}
    _KEEP_DY = _kink_free(case, mod, x, weight, bias)
    try:
        return _check(case, mod, tol, x, weight, bias, down, config, failures, errors)
    finally:
        _KEEP_DY = None


def _check(case, mod, tol, x, weight, bias, down, config, failures, errors):
    """check's body, with the case's tensors and _KEEP_DY set."""
    with configured(mod, config):
        out, grads, again, small = run_ours(case, mod, x, weight, bias, down)
    ref_out, ref_grads = reference(case, mod, x, weight, bias, down)
    tol, loose = tolerances(case, out.numel(), x.numel(), tol)
    if out.shape != ref_out.shape:
        failures.append(f"out shape {tuple(out.shape)} != {tuple(ref_out.shape)}")
    else:
        errors["out"] = rel_err(out, ref_out)
        if errors["out"] >= tol:
            failures.append(f"out: relative error {errors['out']:.3g}")
    training = case["grad_mode"] == "train" and bool(case["wants"])
    if case["experts"] is not None and case["lead"][0] == 0:
        training = False  # no tokens: zeros, no graph (as transformers' experts modules)
    if training != bool(grads):  # (grads: by name wherever out was differentiable)
        failures.append(f"out differentiable: {bool(grads)}, for wants {case['wants']}")
    steps = case.get("steps", 1)
    for name, got in grads.items():
        wanted = name in case["wants"] or name == "down_bias" and "down" in case["wants"]
        dtype = x.dtype if name == "x" else weight.dtype  # (each weight part's: before a cat)
        parts = got if isinstance(got, list) else [got]
        if wanted and any(g is not None and g.dtype != dtype for g in parts):
            failures.append(f"{name}: gradient dtype {[g.dtype for g in parts]} != {dtype}")
        if name == "weight":
            if wanted and any(g is None for g in got):
                failures.append("weight: a part got no gradient")
                continue
            got = None if not wanted or any(g is None for g in got) else torch.cat(got)
        if not wanted:
            if got is not None:
                failures.append(f"{name}: a gradient that was not wanted")
            continue
        if got is None:
            failures.append(f"{name}: no gradient")
        elif got.shape != ref_grads[name].shape:
            failures.append(f"{name}: shape {tuple(got.shape)} != {tuple(ref_grads[name].shape)}")
        else:
            errors[name] = rel_err(got, sum(0.5**i for i in range(steps)) * ref_grads[name])
            if errors[name] >= loose:
                failures.append(f"{name}: relative error {errors[name]:.3g}")
    if case["sizes"] is not None and "weight" in grads and grads["weight"][0] is not None:
        for e, rows in enumerate(case["sizes"]):  # an expert without rows: an exact zero
            if rows == 0 and grads["weight"][0][e].count_nonzero().item():
                failures.append(f"weight: expert {e} has no rows but a nonzero gradient")
            if rows == 0 and "bias" in grads and grads["bias"] is not None:
                if grads["bias"][e].count_nonzero().item():
                    failures.append(f"bias: expert {e} has no rows but a nonzero gradient")
    if case["experts"] is not None and not {"x", "weight", "bias"} & set(case["wants"]):
        again = None  # only the down projection differentiated: it consumes nothing
    if math.prod(case["lead"]) == 0 and case["wrap"] == "compile":
        # no rows: nothing consumed, the gradients empty or zero either way (eager raises;
        # Inductor's graph need not call the operator for empty tensors)
        again = None
    if again is not None:
        try:
            again()
            failures.append("a second backward did not raise")
        except RuntimeError:
            pass
    if small and again is not None and case["config"] in ("default", "split"):
        with configured(mod, {**config, "SMALL_STEP_PATH": False}):
            g_out, g_grads, _, _ = run_ours(case, mod, x, weight, bias, down)
        same = torch.equal(out, g_out)
        for name, got in grads.items():
            other = g_grads[name]
            if isinstance(got, list):
                same &= all(_same(a, b) for a, b in zip(got, other))
            else:
                same &= _same(got, other)
        if not same:
            failures.append("the small-step path's bits differ from the general path's")
    return failures, small, errors, {"out": tol, "grads": loose}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--cases", type=int, default=10**9)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--case", help="check only this case (a FAILED line's JSON), then exit")
    args = parser.parse_args()
    mod = load_module(args.module)
    gpu = torch.cuda.is_available() and not mod._INTERPRET
    if not gpu:
        from tests.interpreter_patch import widen_bf16_dot

        widen_bf16_dot()
    device = "cuda" if gpu else "cpu"
    tol = {torch.bfloat16: 1e-2, torch.float16: 2e-3}[mod.DTYPE]
    rng = random.Random(args.seed)
    t0, results = time.time(), []
    replay = [json.loads(args.case)] if args.case else []
    stop = None
    while (
        stop is None
        and len(results) < (len(replay) or args.cases)
        and time.time() - t0 < args.seconds
    ):
        case = replay[len(results)] if replay else draw(rng, mod, gpu)
        try:
            failures, small, errors, tols = check(case, mod, device, tol)
        except KeyboardInterrupt:  # (a timeout's SIGINT: the case it hung in is named)
            stop = "interrupted"
            failures = [f"interrupted while running: {traceback.format_exc(-6)}"]
            small, errors, tols = None, {}, {}
        except Exception as e:  # an error where none was expected is a failure too
            failures = [f"raised {type(e).__name__}: {e}", traceback.format_exc(-3)]
            small, errors, tols = None, {}, {}
            if "CUDA error" in str(e):  # the context is unusable: every later case would fail
                stop = "a CUDA error"
        results.append(
            {
                "index": len(results),
                "case": case,
                "small_step": small,
                "errors": errors,
                "tolerances": tols,
                "failures": failures,
            }
        )
        if failures:
            print(f"FAILED case {len(results) - 1} (seed {args.seed}): {json.dumps(case)}")
            for f in failures:
                print("   ", f)
    if stop:
        print(f"stopped after case {len(results) - 1}: {stop}")
    bad = [r for r in results if r["failures"]]
    by_config = {c: sum(r["case"]["config"] == c for r in results) for c in CONFIGS}
    forms = FORMS + MLP_FORMS + GROUPED_FORMS + EXPERTS_FORMS
    by_form = {f: sum(r["case"]["form"] == f for r in results) for f in forms}
    by_forward = {f: sum(r["case"]["forward"] == f for r in results) for f in FORWARDS}
    by_wrap = {w: sum(r["case"]["wrap"] == w for r in results) for w in WRAPS}
    print(
        f"{args.module}: {len(results)} cases in {time.time() - t0:.0f} s, {len(bad)} failed; "
        f"largest relative errors {_describe(results, worst_errors(results))}; "
        f"above {tol:g} in passed cases: {_above(results, tol)}; "
        f"small-step path {sum(bool(r['small_step']) for r in results)}; configs {by_config}; "
        f"forms {by_form}; forwards {by_forward}; wraps {by_wrap}"
    )
    out = Path(os.environ.get("OUT", "build"))
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"fuzz_paths-{Path(args.module).stem}.json", "w") as f:
        json.dump({"module": args.module, "seed": args.seed, "results": results}, f)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
