"""Issue 11: the CLI never replaces a file it did not write, never writes a module that cannot be
imported, takes no injection through -o, and answers every bad input with exit 2 naming the
option (no traceback, nothing written)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from codegen.cli import main

ROOT = Path(__file__).resolve().parent.parent


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def files(folder: Path) -> dict:
    if not folder.exists():
        return {}
    return {p.name: "<folder>" if p.is_dir() else p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("which", ["module", "test"])
def test_a_users_own_file_is_never_replaced(tmp_path, which):
    own = tmp_path / ("utils.py" if which == "module" else "test_utils.py")
    own.write_text("def helper():\n    return 42\n")
    before = files(tmp_path)
    result = run("--name", "utils", "-o", str(tmp_path))
    assert result.exit_code == 2 and "--name" in result.output and "not generated" in result.output
    assert files(tmp_path) == before
    result = run("--name", "utils", "-o", str(tmp_path), "--check")
    assert result.exit_code == 2 and files(tmp_path) == before


@pytest.mark.parametrize("out", ["k\nprint('INJECTED')", "k\n)", "k\rx", "k\x00x"])
def test_control_characters_in_out_are_rejected(tmp_path, out):
    os.chdir(tmp_path)
    result = run("-o", out)
    assert result.exit_code == 2 and "--out" in result.output and "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == []


def test_the_header_does_not_depend_on_how_out_is_spelled(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run("-o", "gen").exit_code == 0
    first = files(tmp_path / "gen")
    for spelling in ["gen/", "./gen", str(tmp_path / "gen"), "./gen/../gen"]:
        result = run("-o", spelling, "--check")
        assert result.exit_code == 0, (spelling, result.output)
        assert run("-o", spelling).exit_code == 0
        assert files(tmp_path / "gen") == first
    assert b"-o <this file's folder>" in next(iter(first.values()))


def test_a_path_with_code_in_it_stays_out_of_the_module(tmp_path):
    folder = tmp_path / "a'b\"c; print('INJECTED') #"
    assert run("-o", str(folder)).exit_code == 0
    module = next(folder.glob("glu_*.py"))
    proc = subprocess.run(
        [sys.executable, "-c", f"import ast; ast.parse(open({str(module)!r}).read())"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and "INJECTED" not in module.read_text()


@pytest.mark.parametrize(
    "field,value",
    [
        ("num_stages", "3.5"),
        ("num_warps", "8.0"),
        ("group_m", "2.5"),
        ("bn", "true"),
        ("bm", '"128"'),
    ],
)
def test_variants_fields_must_be_integers(tmp_path, field, value):
    variants = tmp_path / "v.toml"
    variants.write_text(f'[[variant]]\nact = "silu"\narch = "sm90"\n{field} = {value}\n')
    out = tmp_path / "out"
    result = run("--variants", str(variants), "-o", str(out))
    assert result.exit_code == 2 and f"--{field.replace('_', '-')}" in result.output
    assert not out.exists()


@pytest.mark.parametrize(
    "name",
    [
        "foo\n",
        "torch",
        "triton",
        "os",
        "class",
        "None",
        "match",
        "__init__",
        "print",
        "x" * 236,
        "glü",
        "test_x",
        "a-b",
        "",
    ],
)
def test_names_that_cannot_be_imported_or_shadow_an_import_are_rejected(tmp_path, name):
    out = tmp_path / "out"
    result = run("--name", name, "-o", str(out))
    assert result.exit_code == 2 and "--name" in result.output and "Traceback" not in result.output
    assert not out.exists()


def test_a_non_utf8_variants_file_is_exit_2(tmp_path):
    variants = tmp_path / "v.toml"
    variants.write_bytes(b'[[variant]]\nact = "\xff\xfe"\n')
    result = run("--variants", str(variants), "-o", str(tmp_path / "out"))
    assert result.exit_code == 2 and "--variants" in result.output


@pytest.mark.parametrize("check", [False, True])
def test_a_non_utf8_or_folder_target_is_exit_2(tmp_path, check):
    (tmp_path / "glu_silu_bf16_bn128_sm90.py").write_bytes(b"\xff\xfe binary")
    (tmp_path / "test_glu_silu_bf16_bn128_sm90.py").mkdir()
    before = files(tmp_path)
    result = run("-o", str(tmp_path), *(["--check"] if check else []))
    assert result.exit_code == 2 and "--name" in result.output and "Traceback" not in result.output
    assert files(tmp_path) == before


@pytest.mark.parametrize("check", [False, True])
def test_out_that_is_a_file_is_exit_2(tmp_path, check):
    somefile = tmp_path / "somefile"
    somefile.write_text("x")
    result = run("-o", str(somefile), *(["--check"] if check else []))
    assert result.exit_code == 2 and "--out" in result.output and somefile.read_text() == "x"


def test_every_module_written_imports(tmp_path):
    """Whatever exit 0 wrote can be imported (here: a spread of valid options)."""
    for args in (
        ["--act", "relu", "--bn", "16", "--arch", "sm80"],
        ["--name", "my_glu", "--dtype", "fp16"],
        ["--bm", "64", "--bk", "32", "--num-warps", "4", "--num-stages", "2", "--group-m", "1"],
    ):
        result = run(*args, "-o", str(tmp_path))
        assert result.exit_code == 0, result.output
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    for module in tmp_path.glob("[!t]*.py"):
        proc = subprocess.run(
            [sys.executable, "-c", f"import {module.stem}"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]


def test_bench_and_tune_are_click_commands():
    result = run("--help")
    assert "bench" in result.output and "tune" in result.output
    for command in ("bench", "tune"):
        result = run(command, "--help")
        assert result.exit_code == 0 and "--shape" in result.output
        result = run(command, "m.py", "--shape", "1,2")
        assert result.exit_code == 2 and "--shape" in result.output


def test_activation_parameters_from_the_command_line(tmp_path):
    result = run("--act", "swiglu_oai", "--bn", "64", "--limit", "10", "-o", str(tmp_path))
    assert result.exit_code == 0, result.output
    module = tmp_path / "glu_swiglu_oai_bf16_bn64_sm90_limit10p0.py"
    text = module.read_text()
    assert 'ACTIVATION_PARAMS = {"alpha": 1.702, "limit": 10.0}' in text
    assert "tl.where(gate > 10.0, 10.0, gate)" in text and "--limit 10.0" in text.splitlines()[1]
    result = run("--act", "silu", "--alpha", "1.0", "-o", str(tmp_path / "x"))
    assert result.exit_code == 2 and "--alpha" in result.output and not (tmp_path / "x").exists()
