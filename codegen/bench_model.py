"""A whole decoder's training step with the module's MLPs swapped in (`swiglu-gen bench-model`).

The GLU and MLP benches (codegen/bench.py) time one layer.  What a user sees is a model: many
layers, attention between the MLPs, every layer's saved activations alive at the start of the
backward.  This builds a transformers Llama-architecture decoder (LlamaModel: embeddings,
decoder layers, final norm) at a real model's hidden, intermediate and attention sizes, with
fewer layers, and times one training step (forward, a loss, backward; with ``optimizer``
an AdamW step too) with its
MLPs as they are (transformers' LlamaMLP, eager), swapped by the module's ``replace_mlps``
(FusedMLP), as FusedGLU + the down nn.Linear, and as Liger's elementwise kernel between the
Linears (when installed).
A mixture of experts is built as transformers' MixtralModel (Mixtral, Qwen3-MoE, OLMoE sizes)
or GptOssModel (gpt-oss) and timed with transformers' own experts (torch._grouped_mm where it
runs) and with the grouped module's ``replace_experts`` (FusedExperts).
All variants hold the same weights and run in one process in interleaved rounds; the table
gives step ms (wall), the step's GPU kernel time (profiled), host µs per step (one step per
timed batch: a step issues hundreds of kernels, more would fill the GPU's launch queue and time
the GPU instead), the step's peak memory, the activation memory kept between forward and
backward, and each variant's relative error (output, embedding gradient) against the same model
in float32.  The loss is a fixed random projection of the last hidden state (no LM head: the
MLPs' share of the step at its largest); with ``head`` (`--head`) the model is transformers'
causal LM instead (XForCausalLM: the LM head at the model's real vocabulary, tied where the
model ties it, and next-token cross-entropy, whose float32 logits often set the step's peak).

Needs a CUDA GPU, torch, triton and transformers (its device= and timer= arguments let the
CPU tests run it under the Triton interpreter).
"""

from __future__ import annotations

import copy
import json
import statistics
from pathlib import Path

from .bench import (
    MODELS,
    BenchError,
    _liger,
    _round_order,
    cuda_ms_per_call,
    host_us,
    profiled_kernels,
)

# Attention sizes of the dense models in MODELS (num_attention_heads, num_key_value_heads,
# head_dim), from their Hugging Face configs.  The decoder built is Llama's architecture at
# these sizes: Qwen2's q/k/v biases and Gemma-2's extra norms, soft-capping and sliding windows
# are not modelled (the MLP, what the module replaces, is the same).
ATTENTION = {
    "smollm2-135m": (9, 3, 64),
    "smollm2-360m": (15, 5, 64),
    "smollm2-1.7b": (32, 32, 64),
    "qwen2.5-0.5b": (14, 2, 64),
    "qwen2.5-1.5b": (12, 2, 128),
    "qwen2.5-3b": (16, 2, 128),
    "qwen2.5-7b": (28, 4, 128),
    "qwen2.5-14b": (40, 8, 128),
    "qwen2.5-32b": (40, 8, 128),
    "qwen2.5-72b": (64, 8, 128),
    "tinyllama-1.1b": (32, 4, 64),
    "llama-2-7b": (32, 32, 128),
    "llama-2-13b": (40, 40, 128),
    "llama-3.2-1b": (32, 8, 64),
    "llama-3.2-3b": (24, 8, 128),
    "llama-3.1-8b": (32, 8, 128),
    "llama-3.1-70b": (64, 8, 128),
    "mistral-7b": (32, 8, 128),
    "phi-3-mini": (32, 32, 96),
    "gemma-2-2b": (8, 4, 256),
    "gemma-2-9b": (16, 8, 256),
    "gemma-2-27b": (32, 16, 128),
}
# Mixtures of experts in MODELS (num_attention_heads, num_key_value_heads, head_dim, experts per
# token), built as transformers' MixtralModel at these sizes (Qwen3-MoE's q/k norms, OLMoE's
# and Qwen's shared-expert details not modelled); gpt-oss as transformers' GptOssModel (its
# attention sinks need the eager attention; a --grouped swiglu_oai module).
MOE_ATTENTION = {
    "mixtral-8x7b": (32, 8, 128, 2),
    "qwen3-30b-a3b": (32, 4, 128, 8),
    "olmoe-1b-7b": (16, 16, 128, 8),
    "gpt-oss-20b": (64, 8, 64, 4),
    "gpt-oss-120b": (64, 8, 64, 4),
}
GPT_OSS = ("gpt-oss-20b", "gpt-oss-120b")
# (vocab_size, tie_word_embeddings) of every model in MODELS, from its Hugging Face config:
# the LM head that `--head` adds (mistral-7b: v0.3's vocabulary).
VOCABS = {
    "smollm2-135m": (49152, True),
    "smollm2-360m": (49152, True),
    "smollm2-1.7b": (49152, True),
    "qwen2.5-0.5b": (151936, True),
    "qwen2.5-1.5b": (151936, True),
    "qwen2.5-3b": (151936, True),
    "qwen2.5-7b": (152064, False),
    "qwen2.5-14b": (152064, False),
    "qwen2.5-32b": (152064, False),
    "qwen2.5-72b": (152064, False),
    "tinyllama-1.1b": (32000, False),
    "llama-2-7b": (32000, False),
    "llama-2-13b": (32000, False),
    "llama-3.2-1b": (128256, True),
    "llama-3.2-3b": (128256, True),
    "llama-3.1-8b": (128256, False),
    "llama-3.1-70b": (128256, False),
    "mistral-7b": (32768, False),
    "phi-3-mini": (32064, False),
    "gemma-2-2b": (256000, True),
    "gemma-2-9b": (256000, True),
    "gemma-2-27b": (256000, True),
    "mixtral-8x7b": (32000, False),
    "qwen3-30b-a3b": (151936, False),
    "olmoe-1b-7b": (50304, False),
    "gpt-oss-20b": (201088, False),
    "gpt-oss-120b": (201088, False),
}
DEFAULT_LAYERS = 4
DEFAULT_SEQ = 2048
VOCAB = 1024  # without --head the embedding only feeds the first layer
ROUNDS = 6  # wall-time rounds (even: _round_order's two orders alike)
STEPS_PER_SAMPLE = 3  # steps timed back to back per sample (CUDA events around them)


def parse_model(text: str, seq: int) -> tuple[str, int, int]:
    """NAME[:TOKENS] -> (name, batch, seq): TOKENS (default bench.DEFAULT_MODEL_TOKENS) rows
    as sequences of ``seq`` tokens (one shorter sequence when TOKENS < seq)."""
    from .bench import parse_model as parse_shape  # the name and TOKENS, checked

    rows = parse_shape(text)[0]  # every MODELS entry is in ATTENTION or MOE_ATTENTION
    name = text.partition(":")[0].strip().lower()
    if seq <= 0:
        raise BenchError(f"--seq must be positive, got {seq}")
    if rows <= seq:
        return name, 1, rows
    if rows % seq:
        raise BenchError(f"--model {text}: TOKENS = {rows} is not a multiple of --seq {seq}")
    return name, rows // seq, seq


def model_config(name: str, layers: int, hf_act: str | None, head: bool = False):
    """A transformers config at model ``name``'s sizes with ``layers`` decoder layers:
    LlamaConfig for a dense model, MixtralConfig for a mixture of experts, GptOssConfig for
    gpt-oss (``hf_act`` unused: its clamped SwiGLU is fixed); with ``head`` the model's own
    vocabulary and embedding tying (VOCABS), else a small vocabulary (VOCAB)."""
    from transformers import GptOssConfig, LlamaConfig, MixtralConfig

    moe = name in MOE_ATTENTION
    hidden, intermediate, *experts = MODELS[name]
    heads, kv_heads, head_dim, *top_k = (MOE_ATTENTION if moe else ATTENTION)[name]
    vocab, tied = VOCABS[name] if head else (VOCAB, False)
    common = dict(
        vocab_size=vocab,
        tie_word_embeddings=tied,
        num_hidden_layers=layers,
        max_position_embeddings=max(4096, DEFAULT_SEQ),
        use_cache=False,
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
    )
    if moe:
        common.update(num_local_experts=experts[0], num_experts_per_tok=top_k[0])
    if name in GPT_OSS:  # attention sinks: the eager attention
        return GptOssConfig(attn_implementation="eager", **common)
    common.update(hidden_act=hf_act, attn_implementation="sdpa")
    if moe:
        return MixtralConfig(router_jitter_noise=0.0, **common)
    return LlamaConfig(attention_bias=False, mlp_bias=False, **common)


def _hf_act(mod) -> str:
    from .activations import ACTIVATIONS, Act

    hf_act = ACTIVATIONS[Act(mod.ACTIVATION)].hf_act
    if hf_act is None or not hasattr(mod, "replace_mlps"):
        raise BenchError(
            f"{mod.SPEC['name']}: its activation ({mod.ACTIVATION}) is none of transformers' "
            "ACT2FN, so there is no Hugging Face MLP to swap (the module has no replace_mlps)"
        )
    return hf_act


def _require_experts(mod, what):
    """BenchError unless ``mod`` is a grouped module (it has replace_experts)."""
    if not hasattr(mod, "replace_experts"):
        raise BenchError(
            f"{what}: a mixture of experts needs a grouped module (swiglu-gen --grouped, which "
            f"has replace_experts); {mod.SPEC['name']} is not one"
        )


def _model_act(mod, name) -> str | None:
    """The hidden_act for model ``name`` built for module ``mod`` (None for gpt-oss); raises
    BenchError where the module cannot replace that model's MLPs or experts."""
    if name in MOE_ATTENTION:
        _require_experts(mod, f"--model {name}")
    if name in GPT_OSS:
        if mod.ACTIVATION != "swiglu_oai":
            raise BenchError(
                f"--model {name}: gpt-oss's experts compute swiglu_oai; {mod.SPEC['name']} "
                f"computes {mod.ACTIVATION}"
            )
        return None
    return _hf_act(mod)


def _model_class(config, head):
    """transformers' decoder for ``config`` (LlamaModel, MixtralModel, GptOssModel) or, with
    ``head``, its causal LM (LlamaForCausalLM, ...: the decoder as .model, then the LM head)."""
    import transformers

    family = type(config).__name__.removesuffix("Config")
    return getattr(transformers, family + ("ForCausalLM" if head else "Model"))


def decoder(model):
    """The decoder (embeddings, layers, norm) of a model built here: a causal LM's .model."""
    return model.model if hasattr(model, "lm_head") else model


def _swapped(model, replace, layers):
    """A copy of ``model`` with the module's ``replace`` (replace_mlps, replace_experts) applied:
    one module swapped per decoder layer, else BenchError (exit 2)."""
    fused = copy.deepcopy(model)
    name = replace.__name__
    try:
        swapped = replace(fused)
    except ValueError as e:
        raise BenchError(f"{name}: {e}") from None
    if len(swapped) != layers:
        raise BenchError(f"{name} swapped {len(swapped)} modules, expected one per layer")
    return fused


def build_variants(mod, config, device, with_liger=True, compile_backend=None, head=False):
    """{variant: LlamaModel (LlamaForCausalLM with ``head``)}: the same weights in each, the
    MLPs swapped per variant; with a ``compile_backend`` also eager's and FusedMLP's models
    under torch.compile.  A mixture of experts (a MixtralConfig, GptOssConfig): transformers'
    experts and replace_experts' FusedExperts instead."""
    import torch

    moe = hasattr(config, "num_local_experts")  # Mixtral, gpt-oss
    if moe:
        _require_experts(mod, type(config).__name__)
    torch.manual_seed(0)
    eager = _model_class(config, head)(config).to(device=device, dtype=mod.DTYPE)
    layers = config.num_hidden_layers
    if moe:  # transformers' own experts (torch._grouped_mm where it runs) and FusedExperts
        fused = _swapped(eager, mod.replace_experts, layers)
        return _trained({"eager": eager, "fused_experts": fused}, compile_backend, "fused_experts")
    models = {"eager": eager, "fused_mlp": _swapped(eager, mod.replace_mlps, layers)}

    class FusedGLUMLP(torch.nn.Module):  # README's drop-in: FusedGLU + the down nn.Linear
        def __init__(self, mlp):
            super().__init__()
            self.gate_up = mod.FusedGLU.from_linears(mlp.gate_proj, mlp.up_proj)
            self.down_proj = mlp.down_proj

        def forward(self, x):
            return self.down_proj(self.gate_up(x))

    fused_glu = copy.deepcopy(eager)
    for layer in decoder(fused_glu).layers:
        layer.mlp = FusedGLUMLP(layer.mlp)
    models["fused_glu"] = fused_glu

    liger = _liger(mod.ACTIVATION) if with_liger else None
    if liger is not None:

        class LigerMLP(torch.nn.Module):  # Liger's SwiGLU / GeGLU MLP: its kernel between Linears
            def __init__(self, mlp):
                super().__init__()
                self.gate_proj, self.up_proj, self.down_proj = (
                    mlp.gate_proj,
                    mlp.up_proj,
                    mlp.down_proj,
                )

            def forward(self, x):
                return self.down_proj(liger(x, self.gate_proj.weight, self.up_proj.weight))

        liger_model = copy.deepcopy(eager)
        for layer in decoder(liger_model).layers:
            layer.mlp = LigerMLP(layer.mlp)
        models["liger"] = liger_model
    return _trained(models, compile_backend, "fused_mlp")


def _trained(models, compile_backend, ours):
    """``models`` in training mode, with ``compile_backend`` also eager's and ``ours`` compiled
    (copies: "<variant>_compiled")."""
    import torch

    for model in models.values():
        model.train()
    if compile_backend is not None:
        for variant in ("eager", ours):
            models[f"{variant}_compiled"] = torch.compile(
                copy.deepcopy(models[variant]), backend=compile_backend
            )
    return models


def _forward(model, ids, probe):
    """(output, loss) of one forward.  With a ``probe`` the output is the last hidden state and
    the loss <h, probe> / numel for that fixed random tensor, so that its gradient reaches every
    hidden unit (the mean of squares would not: after the final RMSNorm it is ~constant).
    Without one (a causal LM, --head) the output is the logits and the loss transformers'
    next-token cross-entropy of ``ids``."""
    if probe is None:
        out = model(input_ids=ids, labels=ids)
        return out.logits, out.loss
    h = model(input_ids=ids).last_hidden_state
    return h, (h.float() * probe).mean()


def _step(model, ids, probe, opt=None):
    def step():  # as in a training loop: the last step's gradients freed first, the output
        model.zero_grad(set_to_none=True)  # dropped before the backward; the optimizer last
        _forward(model, ids, probe)[1].backward()
        if opt is not None:
            opt.step()

    return step


def _adamw(model):
    """A training loop's optimizer for ``model``: AdamW (a small learning rate: the timed
    steps barely move the weights)."""
    import torch

    return torch.optim.AdamW(model.parameters(), lr=1e-6)


def _rel(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-30)).item()


def _errors(models, ids, probe):
    """{variant: (output rel error, embedding-gradient rel error)} against the eager model in
    float32 (the same weights; its attention and MLPs in float32 throughout).  One variant's
    output at a time besides the reference's (a causal LM's logits are large)."""
    reference = copy.deepcopy(models["eager"]).float()

    def run(model):
        model.zero_grad(set_to_none=True)
        out, loss = _forward(model, ids, probe)
        loss.backward()
        grad = model.get_input_embeddings().weight.grad.float()
        model.zero_grad(set_to_none=True)
        return out.detach().float(), grad

    ref_out, ref_grad = run(reference)
    del reference
    res = {}
    for name, model in models.items():
        out, grad = run(model)
        res[name] = (_rel(out, ref_out), _rel(grad, ref_grad))
        del out, grad
    return res


def _cuda_timer(fn):
    return cuda_ms_per_call(fn, STEPS_PER_SAMPLE)


def _kernel_ms(step, steps=2):
    """GPU kernel time of one step (torch.profiler, CUDA activity: the sum of the step's kernel
    durations).  Unlike the step's wall time, which moved +-3% between runs of the same
    variants on an H200 (8B-sized layers), this sum repeated within 0.3%: it resolves the 1-2%
    an MLP makes in a whole decoder.  It leaves out the GPU's idle gaps (a host-bound step)."""
    return sum(us for _, us in profiled_kernels(step, steps, warm=1)) / steps / 1e3


def _memory(model, ids, probe, opt=None):
    """(peak MiB of a step, kept MiB between forward and backward), gradients freed before;
    with ``opt`` its step too (its state, made by earlier steps, counts as allocated before)."""
    import torch

    model.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out, loss = _forward(model, ids, probe)
    torch.cuda.synchronize()
    kept = torch.cuda.memory_allocated() - base - out.untyped_storage().nbytes()
    del out  # as in _step: only the loss lives on to the backward
    loss.backward()
    if opt is not None:
        opt.step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    model.zero_grad(set_to_none=True)
    return peak / 2**20, kept / 2**20


def bench_model(
    mod,
    name,
    batch,
    seq,
    layers=DEFAULT_LAYERS,
    rounds=ROUNDS,
    device="cuda",
    timer=None,
    log=print,
    config=None,
    compile_backend=None,
    head=False,
    optimizer=False,
):
    """One row: every variant's step at model ``name``'s sizes, ``layers`` layers, ``batch``
    sequences of ``seq`` tokens (``config``: another LlamaConfig, the CPU tests' tiny one;
    ``compile_backend``: also the compiled models, e.g. "inductor"; ``head``: the causal LM
    and its cross-entropy loss instead of the decoder and a probe loss; ``optimizer``: each
    step ends with an AdamW step, torch's default implementation for the device, after the
    errors are measured: every variant starts from the same weights)."""
    import torch

    config = config or model_config(name, layers, _model_act(mod, name), head)
    layers = config.num_hidden_layers
    if config.intermediate_size % mod.CHUNK:
        raise BenchError(
            f"{name}: intermediate size {config.intermediate_size} is not a multiple of "
            f"{mod.SPEC['name']}'s CHUNK = {mod.CHUNK} (generate a variant with a --bn that "
            "divides it)"
        )
    models = build_variants(mod, config, device, compile_backend=compile_backend, head=head)
    gen = torch.Generator(device="cpu").manual_seed(1)
    ids = torch.randint(0, config.vocab_size, (batch, seq), generator=gen).to(device)
    probe = None if head else torch.randn(batch, seq, config.hidden_size, generator=gen).to(device)
    res = {
        "model": name,
        "head": head,
        "vocab": config.vocab_size,
        "optimizer": "AdamW" if optimizer else None,
        "module": mod.SPEC["name"],
        "tokens": batch * seq,
        "batch": batch,
        "seq": seq,
        "layers": layers,
        "shape": [batch * seq, config.hidden_size, config.intermediate_size]
        + (
            [config.num_local_experts, config.num_experts_per_tok]
            if hasattr(config, "num_local_experts")
            else []
        ),
        "variants": list(models),
    }
    if compile_backend is not None:  # compile (first step), counting Dynamo's graph breaks
        from torch._dynamo.utils import counters

        for variant in [v for v in models if v.endswith("_compiled")]:
            before = sum(counters["graph_break"].values())
            _step(models[variant], ids, probe)()
            res[f"{variant}_graph_breaks"] = sum(counters["graph_break"].values()) - before
    for variant, (out_err, grad_err) in _errors(models, ids, probe).items():
        res[f"{variant}_out_rel_err"] = out_err
        res[f"{variant}_grad_rel_err"] = grad_err
    opts = {v: _adamw(model) if optimizer else None for v, model in models.items()}
    steps = {v: _step(model, ids, probe, opts[v]) for v, model in models.items()}
    for step in steps.values():  # warm-up: compiles the kernels, fills the launch plans (and
        # makes the optimizer's state)
        step()
    timer = timer or _cuda_timer
    samples = {variant: [] for variant in steps}
    for r in range(rounds):
        for variant, step in _round_order(steps, r):
            samples[variant].append(timer(step))
    for variant, v in samples.items():
        res[f"{variant}_ms"] = statistics.median(v)
    if device != "cpu":
        for variant, step in steps.items():
            res[f"{variant}_kernel_ms"] = _kernel_ms(step)
        for variant, us in host_us(steps, n=1, rounds=2 * rounds + 1).items():
            res[f"{variant}_host_us"] = us
        for variant, model in models.items():
            peak_kept = _memory(model, ids, probe, opts[variant])
            res[f"{variant}_peak_mib"], res[f"{variant}_kept_mib"] = peak_kept
    for model in models.values():
        model.zero_grad(set_to_none=True)
    log(f"{name}: {batch}x{seq} tokens, {layers} layers: done")
    return res


def _fmt(v, digits):
    return "-" if v is None else f"{v:.{digits}f}"


def table(rows) -> str:
    """One line per (model, variant): step ms, kernel ms, host µs, peak and kept MiB, errors
    (of the output: the last hidden state, or with an LM head the logits)."""
    head = (
        "| model (tokens, layers) | variant | step ms | x eager | kernel ms | x eager | host µs "
        "| peak MiB | kept MiB | out / embedding grad rel err vs float32 |"
    )
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        base, kernels = r["eager_ms"], r.get("eager_kernel_ms")
        where = f"{r['tokens']}, {r['layers']}" + (
            f", LM head {r['vocab']}" if r.get("head") else ""
        )
        where += f", {r['optimizer']}" if r.get("optimizer") else ""
        for v in r["variants"]:
            k = r.get(f"{v}_kernel_ms")
            breaks = r.get(f"{v}_graph_breaks")
            label = v if breaks is None else f"{v} ({breaks} graph breaks)"
            lines.append(
                f"| {r['model']} ({where}) | {label} "
                f"| {_fmt(r[f'{v}_ms'], 3)} "
                f"| {_fmt(r[f'{v}_ms'] / base, 3)} | {_fmt(k, 3)} "
                f"| {_fmt(k / kernels if k is not None else None, 3)} "
                f"| {_fmt(r.get(f'{v}_host_us'), 0)} "
                f"| {_fmt(r.get(f'{v}_peak_mib'), 0)} "
                f"| {_fmt(r.get(f'{v}_kept_mib'), 0)} "
                f"| {r[f'{v}_out_rel_err']:.1e} / {r[f'{v}_grad_rel_err']:.1e} |"
            )
    return "\n".join(lines)


def run_cli(
    module,
    models,
    layers,
    seq,
    out_dir: Path,
    log=print,
    compile=False,
    head=False,
    optimizer=False,
) -> list[dict]:
    """`swiglu-gen bench-model`: raises BenchError for what the user must fix (exit 2)."""
    from .bench import load_module, require_cuda

    parsed = [parse_model(m, seq) for m in models]  # every --model checked before any run
    if layers <= 0:
        raise BenchError(f"--layers must be positive, got {layers}")
    require_cuda("bench-model", ("torch", "triton", "transformers"))
    import torch
    import transformers
    import triton

    mod = load_module(module)
    for name, _, _ in parsed:
        _model_act(mod, name)
    out_dir.mkdir(parents=True, exist_ok=True)
    meta = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "transformers": transformers.__version__,
        "rounds": ROUNDS,
    }
    rows = []
    for name, batch, s in parsed:
        backend = "inductor" if compile else None
        rows.append(
            bench_model(
                mod,
                name,
                batch,
                s,
                layers,
                log=log,
                compile_backend=backend,
                head=head,
                optimizer=optimizer,
            )
        )
        torch.cuda.empty_cache()
        (out_dir / "bench-model.json").write_text(
            json.dumps({"meta": meta, "rows": rows}, indent=1)
        )
        log(table(rows[-1:]))
    print(f"{meta['gpu']}, torch {meta['torch']}, triton {meta['triton']}")
    print(table(rows))
    return rows
