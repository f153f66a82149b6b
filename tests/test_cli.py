"""The CLI through click's CliRunner: exit codes, messages, what is (not) written, --check."""

import ast
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from standalone import allowed_imports, top_level_imports

from codegen.cli import load_variants, main
from codegen.render import OUT_PLACEHOLDER
from codegen.render import black_format, render
from codegen.spec import Spec

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ROOT / "generated" / "variants.toml"


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def snapshot(folder: Path) -> dict:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def test_writes_module_and_test_and_prints_both_paths(tmp_path):
    result = run(
        "--act", "gelu", "--dtype", "fp16", "--bn", "64", "--arch", "sm80", "-o", str(tmp_path)
    )
    assert result.exit_code == 0, result.output
    module = tmp_path / "glu_gelu_fp16_bn64_sm80.py"
    test = tmp_path / "test_glu_gelu_fp16_bn64_sm80.py"
    assert str(module) in result.output and str(test) in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([module.name, test.name])


def test_second_run_rewrites_nothing(tmp_path):
    assert run("-o", str(tmp_path)).exit_code == 0
    before = snapshot(tmp_path)
    result = run("-o", str(tmp_path))
    assert result.exit_code == 0 and "(unchanged)" in result.output
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "args,option",
    [
        (["--bn", "100"], "--bn"),
        (["--bn", "256", "--arch", "sm90"], "--bn"),
        (["--bn", "abc"], "--bn"),
        (["--act", "swish"], "--act"),
        (["--num-warps", "3"], "--num-warps"),
        (["--num-stages", "9"], "--num-stages"),
        (["--arch", "sm90", "--bk", "256", "--num-stages", "4"], "--num-stages/--bm/--bn/--bk"),
        (["--name", "not-an-identifier"], "--name"),
        (["--act", "relu", "--math", "approx"], "--math"),
        (["--math", "fast"], "--math"),
    ],
)
def test_invalid_options_exit_2_and_write_nothing(tmp_path, args, option):
    out = tmp_path / "out"
    result = run(*args, "-o", str(out))
    assert result.exit_code == 2
    assert option in result.output
    assert not out.exists()


def test_unwritable_folder_exits_2(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = run("-o", str(blocker / "sub"))
    assert result.exit_code == 2
    assert "--out" in result.output and "cannot write" in result.output


def test_name_collision_with_another_variant_exits_2(tmp_path):
    assert run("--name", "mlp", "-o", str(tmp_path)).exit_code == 0
    before = snapshot(tmp_path)
    result = run("--name", "mlp", "--act", "relu", "-o", str(tmp_path))
    assert result.exit_code == 2 and "another variant named 'mlp'" in result.output
    assert snapshot(tmp_path) == before
    assert run("--name", "mlp", "-o", str(tmp_path)).exit_code == 0  # same spec: fine


def test_a_new_tiling_of_the_same_variant_overwrites_its_file(tmp_path):
    """`swiglu-gen tune --write` changes a variant's tiling in the variants file and `make
    generate` must then rewrite its module (v0.30 found it refused: "holds another variant");
    a changed activation parameter under the same name still collides."""
    assert run("--act", "swiglu_oai", "--bn", "64", "--grouped", "-o", str(tmp_path)).exit_code == 0
    name = "glu_swiglu_oai_bf16_bn64_sm90_grouped"
    tuned = (
        "--bk",
        "64",
        "--num-stages",
        "4",
        "--group-m",
        "8",
        "--dgrad-stages",
        "3",
        "--gmm-stages",
        "3",
        "--name",
        name,
    )
    result = run("--act", "swiglu_oai", "--bn", "64", "--grouped", *tuned, "-o", str(tmp_path))
    assert result.exit_code == 0, result.output
    text = (tmp_path / f"{name}.py").read_text()
    assert "NUM_STAGES = 4" in text and "GROUP_M = 8" in text and "DG_NUM_STAGES = 3" in text
    assert "GMM_NUM_STAGES = 3" in text
    before = snapshot(tmp_path)
    other = ("--limit", "10.0", "--name", name)  # GLM's clamp: another variant
    result = run("--act", "swiglu_oai", "--bn", "64", "--grouped", *other, "-o", str(tmp_path))
    assert result.exit_code == 2 and f"another variant named '{name}'" in result.output
    assert snapshot(tmp_path) == before


def test_changed_arch_default_is_not_a_collision(tmp_path, monkeypatch):
    import dataclasses

    from codegen import spec as spec_mod
    from codegen.spec import Arch

    assert run("-o", str(tmp_path)).exit_code == 0
    old = spec_mod.ARCHS[Arch.SM90]
    monkeypatch.setitem(
        spec_mod.ARCHS, Arch.SM90, dataclasses.replace(old, group_m=old.group_m * 2)
    )
    result = run("-o", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert f"GROUP_M = {old.group_m * 2}" in (tmp_path / "glu_silu_bf16_bn128_sm90.py").read_text()


def test_check_clean_stale_missing(tmp_path):
    args = ["--act", "relu", "-o", str(tmp_path)]
    result = run(*args, "--check")
    assert result.exit_code == 1 and "missing:" in result.output
    assert not any(tmp_path.iterdir())
    assert run(*args).exit_code == 0
    assert run(*args, "--check").exit_code == 0
    module = tmp_path / "glu_relu_bf16_bn128_sm90.py"
    module.write_text(module.read_text().replace("CHUNK = 128", "CHUNK = 64"))
    result = run(*args, "--check")
    assert result.exit_code == 1
    assert "-CHUNK = 64" in result.output and "+CHUNK = 128" in result.output
    assert "swiglu-gen --act relu --dtype bf16 --bn 128 --arch sm90 -o" in result.output
    assert "CHUNK = 64" in module.read_text()  # --check never writes


def test_variants_mode_reports_and_removes_orphans(tmp_path):
    variants = tmp_path / "variants.toml"
    variants.write_text('[[variant]]\nact = "silu"\n\n[[variant]]\nact = "relu"\narch = "sm80"\n')
    out = tmp_path / "gen"
    assert run("--variants", str(variants), "-o", str(out)).exit_code == 0
    assert len(list(out.glob("*.py"))) == 4
    orphan = out / "glu_old.py"
    orphan.write_text("# @generated by swiglu-gen 0.0.0 -- DO NOT EDIT.\n")
    user_file = out / "helper.py"
    user_file.write_text("# written by a person\n")
    result = run("--variants", str(variants), "-o", str(out), "--check")
    assert result.exit_code == 1 and "orphan" in result.output and "glu_old.py" in result.output
    assert "make generate" in result.output
    assert "helper.py" not in result.output
    assert run("--variants", str(variants), "-o", str(out)).exit_code == 0
    assert not orphan.exists() and user_file.exists()
    assert run("--variants", str(variants), "-o", str(out), "--check").exit_code == 0


def test_variants_file_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[variant]]\nact = "silu"\nbn = 100\n')
    result = run("--variants", str(bad), "-o", str(tmp_path / "o"))
    assert result.exit_code == 2 and "variant 1" in result.output and "--bn" in result.output
    dup = tmp_path / "dup.toml"
    dup.write_text('[[variant]]\nname = "a"\n\n[[variant]]\nname = "a"\nact = "relu"\n')
    result = run("--variants", str(dup), "-o", str(tmp_path / "o"))
    assert result.exit_code == 2 and "both named 'a'" in result.output
    result = run("--variants", str(dup), "--act", "relu")
    assert result.exit_code == 2 and "--act" in result.output
    assert not (tmp_path / "o").exists()


def test_checked_in_set_is_up_to_date(monkeypatch):
    """generated/ is exactly what the templates render (same as `make check`)."""
    monkeypatch.chdir(ROOT)
    result = run("--variants", "generated/variants.toml", "-o", "generated", "--check")
    assert result.exit_code == 0, result.output[-3000:]


def test_checked_in_set_covers_every_axis():
    specs = load_variants(VARIANTS)
    assert {s.act for s in specs} == set(type(specs[0].act))
    assert {s.arch for s in specs} == set(type(specs[0].arch))
    assert {s.dtype for s in specs} == set(type(specs[0].dtype))
    assert any(s.slug == "glu_silu_bf16_bn128_sm100" for s in specs)
    assert {s.math for s in specs} == set(type(specs[0].math))


@pytest.mark.parametrize("spec", load_variants(VARIANTS), ids=lambda s: s.module_name)
def test_generated_files_are_standalone_formatted_and_stamped(spec):
    files = render(spec, "generated")
    for name, text in files.items():
        assert black_format(text) == text
        lines = text.splitlines()
        assert lines[0].startswith("# @generated by swiglu-gen") and "DO NOT EDIT" in lines[0]
        assert (
            lines[1]
            == f"# Regenerate with: swiglu-gen {' '.join(spec.cli_args())} -o {OUT_PLACEHOLDER}"
        )
        assert lines[2].startswith("# spec: {") and re.match(
            r"# templates-sha256: [0-9a-f]{64}$", lines[3]
        )
        assert not re.search(
            r"20\d\d-\d\d-\d\d", text
        ), "no timestamps: regeneration is byte-identical"
        assert top_level_imports(text) <= allowed_imports(name), name
        # one definition per name: the templates are included into one file, where a second
        # def silently replaces the first (v0.47: a Python helper named like a @triton.jit
        # function of another template broke the kernels that call it)
        defined = [
            node.name
            for node in ast.parse(text).body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))
        ]
        assert not {n for n in defined if defined.count(n) > 1}, name
    assert render(spec, "generated") == files


def test_math_changes_only_the_sigmoid():
    """--math approx renders the same module but for _sigmoid (tanh.approx.f32 on a GPU, its
    stand-in under the interpreter), the MATH constants and the variant's name."""
    precise = render(Spec.create(), "generated")["glu_silu_bf16_bn128_sm90.py"]
    approx = render(Spec.create(math="approx"), "generated")["glu_silu_bf16_bn128_sm90_approx.py"]
    assert '"tanh.approx.f32 $0, $1;"' in approx and "inline_asm" not in precise
    assert "return 1.0 / (1.0 + tl.exp(-x))" in precise and "tl.exp(-x)" not in approx
    assert "s = _sigmoid(gate)" in precise and "s = _sigmoid(gate)" in approx

    def rest(text):
        body = text.split("\n", 4)[4]  # past the header (command, spec, hash)
        head, kernels = body.split("# Kernels\n", 1)
        kernels = kernels[kernels.index("@triton.jit\ndef _activation(") :]
        head = re.sub(r"\nMATH = .*?\nSIGMOID_MAX_ABS_ERROR = \S+", "", head, flags=re.S)
        head = head.replace('\n    "math": "approx",', "")  # SPEC names the axis when not default
        return (head + kernels).replace(
            "glu_silu_bf16_bn128_sm90_approx", "glu_silu_bf16_bn128_sm90"
        )

    assert rest(approx) == rest(precise)


def test_header_hash_follows_templates_and_spec(monkeypatch):
    import codegen.render as r

    a = render(Spec.create(), "generated")
    b = render(Spec.create(act="relu"), "generated")
    hash_line = lambda files: next(iter(files.values())).splitlines()[3]  # noqa: E731
    assert hash_line(a) == hash_line(b)  # same templates
    env, digest = r._environment()
    monkeypatch.setattr(r, "_environment", lambda: (env, "0" * 64))
    r._render_cached.cache_clear()
    assert hash_line(render(Spec.create(), "generated")) == "# templates-sha256: " + "0" * 64
    r._render_cached.cache_clear()


def test_regenerate_command_reproduces_the_file(tmp_path):
    spec = Spec.create(act="gelu_tanh", bn=64, arch="sm80", num_stages=2)
    text = render(spec, str(tmp_path))[f"{spec.module_name}.py"]
    command = text.splitlines()[1].removeprefix("# Regenerate with: swiglu-gen ")
    command = command.replace(OUT_PLACEHOLDER, "OUT").split()
    assert command[-2:] == ["-o", "OUT"]
    assert run(*command[:-1], str(tmp_path)).exit_code == 0
    assert (tmp_path / f"{spec.module_name}.py").read_text() == text


def test_help_lists_every_option():
    result = run("--help")
    for option in [
        "--act",
        "--dtype",
        "--bn",
        "--bm",
        "--bk",
        "--num-warps",
        "--num-stages",
        "--group-m",
        "--arch",
        "--out",
        "--name",
        "--check",
        "--variants",
        "--math",
    ]:
        assert option in result.output


def test_the_generator_tests_and_scripts_are_black_formatted():
    # `make format` keeps them so; the generated modules are checked above
    import black

    mode = black.Mode(line_length=100)
    unformatted = [
        str(p.relative_to(ROOT))
        for folder in ("codegen", "tests", "scripts")
        for p in sorted((ROOT / folder).glob("*.py"))
        if black.format_str(p.read_text(encoding="utf-8"), mode=mode)
        != p.read_text(encoding="utf-8")
    ]
    assert not unformatted, f"run `make format`: {unformatted}"
