"""Spec fuzzing (hypothesis): random valid and invalid combinations of every CLI option.

Each run ends either with exit 0 and a module that imports and passes a tiny interpreter smoke
test, or with exit 2 and a message naming an option; never a traceback, never a partial or changed
file in the output folder.  Plus: unwritable folders, name collisions, interrupted writes.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import codegen.write
from codegen.cli import main

OPTIONS = {
    "--act": st.sampled_from(
        ["silu", "gelu", "gelu_tanh", "relu", "sigmoid", "swiglu_oai", "swish", "", "SILU"]
    ),
    "--dtype": st.sampled_from(["bf16", "fp16", "fp32", "float16"]),
    "--bn": st.sampled_from(["16", "32", "64", "128", "256", "512", "8", "100", "0", "-64", "x"]),
    "--bm": st.sampled_from(["16", "32", "64", "128", "256", "48", "1024", "1.5"]),
    "--bk": st.sampled_from(["16", "32", "64", "128", "256", "24", "-1"]),
    "--num-warps": st.sampled_from(["1", "2", "4", "8", "16", "3", "32"]),
    "--num-stages": st.sampled_from(["1", "2", "3", "4", "5", "8", "0", "9"]),
    "--group-m": st.sampled_from(["1", "4", "8", "16", "64", "0", "65"]),
    "--arch": st.sampled_from(["sm80", "sm90", "sm100", "sm70", "hopper"]),
    "--name": st.sampled_from(["my_glu", "fused_mlp2", "1bad", "test_x", "with-dash", "ok_name"]),
    "--alpha": st.sampled_from(["1.702", "1", "0", "-2", "nan", "x"]),
    "--limit": st.sampled_from(["7", "10", "0", "inf", "x"]),
    "--dgrad-bm": st.sampled_from(["64", "128", "256", "96", "0"]),
    "--dgrad-bn": st.sampled_from(["16", "32", "64", "128", "256", "48"]),
    "--dgrad-bk": st.sampled_from(["16", "32", "64", "8", "x"]),
    "--dgrad-warps": st.sampled_from(["4", "8", "3"]),
    "--dgrad-stages": st.sampled_from(["2", "3", "4", "0", "9"]),
    # only with --grouped (not drawn here: the smoke run is the dense module's): exit 2 naming it
    "--gmm-bm": st.sampled_from(["64", "128", "96"]),
    "--gmm-stages": st.sampled_from(["3", "4", "9"]),
}
OPTION_NAMES = set(OPTIONS) | {"--out", "--variants", "--grouped"}
VALID = {
    "--act": {"silu", "gelu", "gelu_tanh", "relu", "sigmoid", "swiglu_oai"},
    "--dtype": {"bf16", "fp16"},
    "--bn": {"16", "32", "64", "128"},
    "--bm": {"16", "32", "64", "128"},
    "--bk": {"16", "32", "64"},
    "--num-warps": {"4", "8"},
    "--num-stages": {"1", "2", "3"},
    "--group-m": {"1", "4", "8", "16", "64"},
    "--arch": {"sm80", "sm90", "sm100"},
    "--name": {"my_glu", "fused_mlp2", "ok_name"},
    "--alpha": {"1.702", "1"},  # valid with --act swiglu_oai only (else exit 2 naming it)
    "--limit": {"7", "10"},
    "--dgrad-bm": {"64", "128"},
    "--dgrad-bn": {"16", "32"},  # must divide --bn
    "--dgrad-bk": {"16", "32", "64"},
    "--dgrad-warps": {"4", "8"},
    "--dgrad-stages": {"2", "3"},
    "--gmm-bm": {"64", "128"},
    "--gmm-stages": {"3", "4"},
}


def snapshot(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())} if folder.exists() else {}


SMOKE = r"""
import importlib.util, sys
import torch
sys.path.insert(0, sys.argv[2])
from interpreter_patch import widen_bf16_dot

widen_bf16_dot()
spec = importlib.util.spec_from_file_location("smoke", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
K, N = 24, mod.CHUNK
x = torch.randn(5, K).to(mod.DTYPE).requires_grad_()
gate_w = (torch.randn(N, K) / K**0.5).to(mod.DTYPE)
up_w = (torch.randn(N, K) / K**0.5).to(mod.DTYPE)
packed = mod.pack_weight(gate_w, up_w).requires_grad_()
out = mod.glu(x, packed)
ref = mod.reference(x.detach(), gate_w, up_w)
err = ((out.float() - ref).norm() / ref.norm()).item()
assert err < 2e-2, err
out.sum().backward()
assert torch.isfinite(x.grad).all() and torch.isfinite(packed.grad).all()
# the whole MLP (its dgrad GEMM has the variant's dgrad tiling)
down_w = (torch.randn(K, N) / N**0.5).to(mod.DTYPE).requires_grad_()
out = mod.mlp(x, packed, down_w)
ref = mod.reference_mlp(x.detach(), gate_w, up_w, down_w.detach())
err_mlp = ((out.float() - ref).norm() / ref.norm()).item()
assert err_mlp < 2e-2, err_mlp
out.sum().backward()
assert torch.isfinite(down_w.grad).all() and down_w.grad.abs().sum() > 0
print("smoke ok", err, err_mlp)
"""


def smoke_test(module_path: Path):
    """Import the module and run it under the interpreter, in a fresh process (TRITON_INTERPRET
    must be set before triton is first imported, and no GPU is used)."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    tests_dir = str(Path(__file__).resolve().parent)
    result = subprocess.run(
        [sys.executable, "-c", SMOKE, str(module_path), tests_dir],
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0 and "smoke ok" in result.stdout, result.stderr[-3000:]


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_random_option_combinations(tmp_path_factory, data):
    out = tmp_path_factory.mktemp("fuzz")
    (out / "keep.txt").write_text("a file of the user's\n")
    args = []
    valid_only = data.draw(st.booleans(), label="valid values only")
    for option, values in OPTIONS.items():
        if data.draw(st.booleans(), label=f"use {option}"):
            if valid_only:
                values = values.filter(lambda v, o=option: v in VALID[o])
            args += [option, data.draw(values, label=option)]
    before = snapshot(out)
    result = CliRunner().invoke(main, [*args, "-o", str(out)])
    assert result.exit_code in (0, 2), (args, result.output, result.exception)
    event(f"exit {result.exit_code}")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    leftovers = [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
    assert not leftovers
    if result.exit_code == 2:
        error = [line for line in result.output.splitlines() if line.startswith("Error:")]
        assert len(error) == 1, result.output
        named = set(re.findall(r"--[a-z][a-z-]*", error[0]))
        assert named and named <= OPTION_NAMES, (args, result.output)
        assert snapshot(out) == before
        return
    after = snapshot(out)
    new = sorted(set(after) - set(before))
    assert len(new) == 2 and after["keep.txt"] == before["keep.txt"], new
    (module,) = [n for n in new if not n.startswith("test_")]
    smoke_test(out / module)


def test_unwritable_output_is_exit_2_and_leaves_nothing(tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(codegen.write.tempfile, "mkstemp", refuse)
    result = CliRunner().invoke(main, ["-o", str(out)])
    assert (
        result.exit_code == 2 and "--out" in result.output and "Permission denied" in result.output
    )
    assert snapshot(out) == {}


@pytest.mark.parametrize("when", [1, 2])
def test_interrupted_write_rolls_back(tmp_path, monkeypatch, when):
    out = tmp_path / "out"
    assert (
        CliRunner().invoke(main, ["--act", "relu", "--name", "mlp", "-o", str(out)]).exit_code == 0
    )
    before = snapshot(out)
    calls = []
    real_replace = os.replace

    def interrupted(src, dst):
        calls.append(dst)
        if len(calls) == when:
            raise KeyboardInterrupt
        real_replace(src, dst)

    monkeypatch.setattr(codegen.write.os, "replace", interrupted)
    # a changed template output for the same variant: both files would change
    monkeypatch.setattr("codegen.render.__version__", "9.9.9")
    import codegen.render as r

    r._render_cached.cache_clear()
    try:
        result = CliRunner().invoke(main, ["--act", "relu", "--name", "mlp", "-o", str(out)])
    finally:
        r._render_cached.cache_clear()
    assert result.exit_code == 1 and "Aborted" in result.output  # click's answer to Ctrl-C
    assert len(calls) == when
    assert snapshot(out) == before  # neither file changed, no temp file left


def test_collision_with_another_variant_leaves_folder_unchanged(tmp_path):
    out = tmp_path / "out"
    assert (
        CliRunner().invoke(main, ["--name", "shared", "--act", "gelu", "-o", str(out)]).exit_code
        == 0
    )
    before = snapshot(out)
    result = CliRunner().invoke(main, ["--name", "shared", "--act", "silu", "-o", str(out)])
    assert result.exit_code == 2 and "--name" in result.output
    assert snapshot(out) == before
