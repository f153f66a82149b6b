"""Vendoring: a generated module and its test, copied into an empty folder outside the repo,
run there with only torch and triton (and pytest for the test) importable, and refer to nothing
in the repo."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from standalone import allowed_imports, top_level_imports

ROOT = Path(__file__).resolve().parent.parent

# Run with `python -I -S` (no site-packages, no .pth files, so no editable install of this
# repo) and a sys.path made of a folder that links every installed package except the
# generator's own tooling: torch, triton and their dependencies stay importable.
# transformers too: the test that trains an HF Llama must skip cleanly where it is not installed.
HIDDEN = (
    "codegen",
    "swiglu_gen",
    "__editable__",
    "click",
    "black",
    "hypothesis",
    "_hypothesis",
    "transformers",
)
RUNNER = r"""
import sys
sys.path.insert(0, sys.argv[3])
import pytest
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-k", sys.argv[1], sys.argv[2]]))
"""


def _site_without_tooling(dest: Path) -> Path:
    import site

    dest.mkdir()
    for root in map(Path, site.getsitepackages()):
        for entry in root.iterdir():
            if (
                entry.suffix == ".pth"
                or entry.name.startswith(HIDDEN)
                or (dest / entry.name).exists()
            ):
                continue
            (dest / entry.name).symlink_to(entry)
    return dest


@pytest.mark.parametrize("name", ["glu_gelu_fp16_bn64_sm80", "glu_silu_bf16_bn128_sm90"])
def test_vendored_module_runs_alone(tmp_path, name):
    vendor = tmp_path / "elsewhere" / "vendor" / "kernels"
    vendor.mkdir(parents=True)
    (vendor / "__init__.py").write_text("")
    for file in (f"{name}.py", f"test_{name}.py"):
        shutil.copy(ROOT / "generated" / file, vendor / file)
        text = (vendor / file).read_text()
        assert str(ROOT) not in text and "codegen" not in text
        imports, allowed = top_level_imports(text), allowed_imports(file)
        assert imports <= allowed, (file, imports - allowed)
    site_dir = _site_without_tooling(tmp_path / "site")
    env = {
        "PATH": "/usr/bin:/bin",
        "TRITON_INTERPRET": "1",
        "CUDA_VISIBLE_DEVICES": "",
        "HOME": str(tmp_path),
    }
    probe = "import importlib.util as u; print([m for m in ('codegen', 'click', 'black', 'hypothesis') if u.find_spec(m)])"
    seen = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            f"import sys; sys.path.insert(0, {str(site_dir)!r}); {probe}",
        ],
        cwd=vendor,
        env=env,
        capture_output=True,
        text=True,
    )
    assert seen.stdout.strip() == "[]", seen.stdout + seen.stderr
    result = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            RUNNER,
            "forward_backward or pack or second_backward or hf_llama",
            f"test_{name}.py",
            str(site_dir),
        ],
        cwd=vendor,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert " passed" in result.stdout and "failed" not in result.stdout
    assert "1 skipped" in result.stdout  # the HF Llama test, without transformers
