"""`swiglu-gen bench-model`: the whole-decoder training-step bench (CPU: parsing, errors, and
one tiny run end to end under the Triton interpreter)."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from interpreter_patch import run_interpreted

from codegen import bench, bench_model
from codegen.cli import main

ROOT = Path(__file__).resolve().parent.parent
SWIGLU = str(ROOT / "generated" / "glu_silu_bf16_bn128_sm90.py")


def test_every_model_has_its_attention_sizes_and_vocabulary():
    dense = {name for name, dims in bench.MODELS.items() if len(dims) == 2}
    assert set(bench_model.ATTENTION) == dense
    moe = {name for name, dims in bench.MODELS.items() if len(dims) == 3}
    assert set(bench_model.MOE_ATTENTION) == moe
    assert set(bench_model.VOCABS) == set(bench.MODELS)
    for name, (vocab, tied) in bench_model.VOCABS.items():
        assert 32000 <= vocab <= 262144 and isinstance(tied, bool), name
    for name, (heads, kv_heads, head_dim) in bench_model.ATTENTION.items():
        hidden = bench.MODELS[name][0]
        assert heads % kv_heads == 0, name  # grouped-query attention
        if not name.startswith("gemma-2"):  # Gemma-2's head_dim is its own (256, 128)
            assert heads * head_dim == hidden, name


@pytest.mark.parametrize(
    "text, seq, want",
    [
        ("llama-3.2-1b", 2048, ("llama-3.2-1b", 2, 2048)),
        ("Llama-3.2-1B:8192", 2048, ("llama-3.2-1b", 4, 2048)),
        ("qwen2.5-0.5b:1000", 2048, ("qwen2.5-0.5b", 1, 1000)),
        ("smollm2-135m:4096", 4096, ("smollm2-135m", 1, 4096)),
    ],
)
def test_model_parse(text, seq, want):
    assert bench_model.parse_model(text, seq) == want


@pytest.mark.parametrize(
    "text, seq, message",
    [
        ("llama-9", 2048, "unknown model 'llama-9'"),
        ("llama-3.2-1b:5000", 2048, "not a multiple of --seq 2048"),
        ("llama-3.2-1b:0", 2048, "TOKENS must be a positive integer"),
        ("llama-3.2-1b:many", 2048, "TOKENS must be a positive integer"),
        ("llama-3.2-1b", 0, "--seq must be positive"),
    ],
)
def test_model_parse_errors(text, seq, message):
    with pytest.raises(bench.BenchError, match=message):
        bench_model.parse_model(text, seq)


def test_config_has_the_models_sizes():
    config = bench_model.model_config("llama-3.1-8b", 2, "silu")
    assert (config.hidden_size, config.intermediate_size) == (4096, 14336)
    assert (config.num_attention_heads, config.num_key_value_heads, config.head_dim) == (32, 8, 128)
    assert config.num_hidden_layers == 2 and config.hidden_act == "silu"
    moe = bench_model.model_config("qwen3-30b-a3b", 2, "silu")
    assert type(moe).__name__ == "MixtralConfig"
    assert (moe.hidden_size, moe.intermediate_size, moe.num_local_experts) == (2048, 768, 128)
    assert (moe.num_experts_per_tok, moe.head_dim, moe.router_jitter_noise) == (8, 128, 0.0)
    oss = bench_model.model_config("gpt-oss-20b", 2, None)
    assert type(oss).__name__ == "GptOssConfig" and oss._attn_implementation == "eager"
    assert (oss.hidden_size, oss.num_local_experts, oss.num_experts_per_tok) == (2880, 32, 4)
    assert config.vocab_size == moe.vocab_size == oss.vocab_size == bench_model.VOCAB
    # --head: the model's own vocabulary, its embedding tied to the head where the model ties it
    for name, vocab, tied in (("llama-3.1-8b", 128256, False), ("llama-3.2-1b", 128256, True)):
        config = bench_model.model_config(name, 2, "silu", head=True)
        assert (config.vocab_size, config.tie_word_embeddings) == (vocab, tied), name
    oss = bench_model.model_config("gpt-oss-20b", 2, None, head=True)
    assert (oss.vocab_size, oss.tie_word_embeddings) == (201088, False)


def _invoke(args, monkeypatch, cuda=True):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    return CliRunner().invoke(main, ["bench-model", *args])


def test_cli_errors_exit_2_without_a_traceback(monkeypatch, tmp_path):
    out = ["--out", str(tmp_path)]
    cases = [
        (
            [SWIGLU.replace(".py", "_grouped.py"), "--model", "gpt-oss-20b", *out],
            True,
            "computes silu",
        ),
        ([SWIGLU, "--model", "mixtral-8x7b", *out], True, "needs a grouped module"),
        ([SWIGLU, "--model", "llama-3.2-1b", "--layers", "0", *out], True, "--layers"),
        ([SWIGLU, "--model", "llama-3.2-1b", *out], False, "needs a CUDA GPU"),
        ([str(tmp_path / "nope.py"), "--model", "llama-3.2-1b", *out], True, "no generated module"),
        (
            [str(ROOT / "generated" / "glu_swiglu_oai_bf16_bn64_sm90.py"), "--model", "gemma-2-2b"]
            + out,
            True,
            "none of transformers' ACT2FN",
        ),
    ]
    for args, cuda, message in cases:
        result = _invoke(args, monkeypatch, cuda)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)
        assert "Traceback" not in result.output
    result = CliRunner().invoke(main, ["bench-model", SWIGLU])
    assert result.exit_code == 2 and "--model" in result.output  # required


TINY_RUN = r"""
import json, sys, time
sys.path.insert(0, sys.argv[2])
from interpreter_patch import widen_bf16_dot

widen_bf16_dot()
from transformers import GptOssConfig, LlamaConfig, MixtralConfig
from codegen import bench, bench_model as bm

mod = bench.load_module(sys.argv[1])
backend = None if sys.argv[3] == "none" else sys.argv[3]
head = sys.argv[5] == "true"
optimizer = sys.argv[6] == "true"
sizes = dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
             num_key_value_heads=1, head_dim=16, use_cache=False, tie_word_embeddings=head)
if sys.argv[4] == "gpt_oss":
    config = GptOssConfig(intermediate_size=mod.CHUNK, num_local_experts=4, num_experts_per_tok=2,
                          layer_types=["full_attention"] * 2, attn_implementation="eager", **sizes)
elif sys.argv[4] == "moe":
    config = MixtralConfig(intermediate_size=mod.CHUNK, num_local_experts=4, num_experts_per_tok=2,
                           router_jitter_noise=0.0, hidden_act=bm._hf_act(mod),
                           attn_implementation="sdpa", **sizes)
else:
    config = LlamaConfig(intermediate_size=2 * mod.CHUNK, hidden_act=bm._hf_act(mod),
                         attn_implementation="sdpa", **sizes)

def timer(fn):
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3

row = bm.bench_model(mod, "tiny", 2, 8, rounds=1, device="cpu", timer=timer, config=config,
                     log=lambda s: None, compile_backend=backend, head=head, optimizer=optimizer)
models = bm.build_variants(mod, config, "cpu", head=head)
def swapped(model):  # the second layer's MLP, or its experts
    mlp = bm.decoder(model).layers[1].mlp
    return mlp if sys.argv[4] == "dense" else mlp.experts

mlps = {k: type(swapped(m)).__name__ for k, m in models.items()}
mlps["classes"] = sorted({type(m).__name__ for m in models.values()})
print(bm.table([row]))
print("JSON" + json.dumps({"row": row, "mlps": mlps}))
"""


@pytest.mark.parametrize(
    "module, backend, kind, head, optimizer",
    [
        ("glu_silu_bf16_bn128_sm90", None, "dense", False, False),
        ("glu_gelu_tanh_bf16_bn128_sm90", None, "dense", False, False),
        ("glu_silu_bf16_bn128_sm90", "aot_eager", "dense", False, False),  # --compile's
        ("glu_silu_bf16_bn128_sm90", None, "dense", True, True),  # --head --optimizer, tied
        ("glu_silu_bf16_bn128_sm90_grouped", None, "moe", False, False),
        ("glu_silu_bf16_bn128_sm90_grouped", None, "moe", True, False),
        ("glu_swiglu_oai_bf16_bn64_sm90_grouped", None, "gpt_oss", True, True),
    ],
)
def test_tiny_decoder_end_to_end(module, backend, kind, head, optimizer):
    """A two-layer decoder (with ``head`` the causal LM, its loss the cross-entropy) under the
    interpreter: every variant runs, its MLPs (experts) are the swapped ones, and its output and
    embedding gradient are within bf16's tolerance of the float32 model's, no further than eager
    bf16's (with slack)."""
    module_path = ROOT / "generated" / f"{module}.py"
    flags = str(head).lower(), str(optimizer).lower()
    result = run_interpreted(TINY_RUN, module_path, backend or "none", kind, *flags)
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout.split("JSON", 1)[1])
    row, mlps = data["row"], data["mlps"]
    suffix = "ForCausalLM" if head else "Model"
    family = {"dense": "Llama", "moe": "Mixtral", "gpt_oss": "GptOss"}[kind]
    assert mlps.pop("classes") == [family + suffix]
    assert row["head"] is head and row["vocab"] == 64
    assert row["optimizer"] == ("AdamW" if optimizer else None)
    if kind != "dense":
        theirs = "MixtralExperts" if kind == "moe" else "GptOssExperts"
        assert mlps == {"eager": theirs, "fused_experts": "FusedExperts"}
        assert row["variants"] == ["eager", "fused_experts"] and row["shape"][3:] == [4, 2]
        ours = ["fused_experts"]
    else:
        assert mlps["eager"] == "LlamaMLP"
        assert mlps["fused_mlp"] == "FusedMLP"
        assert mlps["fused_glu"] == "FusedGLUMLP"
        assert row["variants"][:3] == ["eager", "fused_mlp", "fused_glu"]
        ours = ["fused_mlp", "fused_glu"]
    compiled = ["eager_compiled", "fused_mlp_compiled"]
    assert (row["variants"][-2:] == compiled) == (backend is not None)
    if backend:  # FusedMLP's operators add no graph break to the model's own
        assert row["fused_mlp_compiled_graph_breaks"] == row["eager_compiled_graph_breaks"]
        ours += compiled
    assert row["tokens"] == 16 and row["layers"] == 2
    for v in row["variants"]:
        assert row[f"{v}_ms"] > 0
        assert row[f"{v}_out_rel_err"] < 2e-2 and row[f"{v}_grad_rel_err"] < 2e-2, (v, row)
    for v in ours:  # no further from float32 than eager bf16 (2x: slack)
        for what in ("out", "grad"):
            assert row[f"{v}_{what}_rel_err"] <= 2 * row[f"eager_{what}_rel_err"], (v, row)
    where = "16, 2" + (", LM head 64" if head else "") + (", AdamW" if optimizer else "")
    assert f"| tiny ({where}) | {ours[0]} |" in result.stdout


def test_a_step_ends_with_the_optimizer_step():
    """--optimizer: zero_grad, forward, backward, then the optimizer's step, each step."""
    import torch

    calls = []

    class Decoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(3))

        def forward(self, input_ids):
            calls.append("forward")
            h = (input_ids[..., None].float() * self.w).requires_grad_()
            h.register_hook(lambda g: calls.append("backward"))
            return type("Out", (), {"last_hidden_state": h})

    class Opt:
        def step(self):
            calls.append("step")

    model = Decoder()
    step = bench_model._step(model, torch.ones(1, 2), torch.ones(1, 2, 3), Opt())
    step()
    step()
    assert calls == ["forward", "backward", "step"] * 2
    assert model.w.grad is not None
    assert isinstance(bench_model._adamw(model), torch.optim.AdamW)


def test_table_has_every_column_and_ratios_to_eager():
    row = {"model": "llama-3.2-1b", "tokens": 4096, "layers": 4, "variants": ["eager", "fused_mlp"]}
    for v, ms, kernel, host, peak, kept, err in (
        ("eager", 20.0, 16.0, 18000.0, 1907.0, 1747.0, 1.5e-2),
        ("fused_mlp", 19.0, 15.6, 18500.0, 1395.0, 1235.0, 1.3e-2),
    ):
        row.update(
            {
                f"{v}_ms": ms,
                f"{v}_kernel_ms": kernel,
                f"{v}_host_us": host,
                f"{v}_peak_mib": peak,
                f"{v}_kept_mib": kept,
                f"{v}_out_rel_err": err,
                f"{v}_grad_rel_err": err,
            }
        )
    lines = bench_model.table([row]).splitlines()
    assert len(lines) == 4 and lines[0].count("|") == lines[1].count("|") == 11
    assert lines[3] == (
        "| llama-3.2-1b (4096, 4) | fused_mlp | 19.000 | 0.950 | 15.600 | 0.975 | 18500 "
        "| 1395 | 1235 | 1.3e-02 / 1.3e-02 |"
    )
