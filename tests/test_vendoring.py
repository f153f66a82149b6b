"""Vendoring: a generated module and its test, copied into an empty folder outside the repo,
run there with only torch and triton (and pytest for the test) importable, and refer to nothing
in the repo."""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STDLIB_OK = {"math", "os", "importlib", "pathlib"}

RUNNER = r"""
import sys
BLOCKED = {"codegen", "jinja2", "click", "black", "hypothesis"}

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is not available in a vendoring repo")
        return None

sys.meta_path.insert(0, Blocker())
import pytest
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-k", sys.argv[1], sys.argv[2]]))
"""


@pytest.mark.parametrize("name", ["glu_gelu_fp16_bn64_sm80", "glu_silu_bf16_bn128_sm90"])
def test_vendored_module_runs_alone(tmp_path, name):
    vendor = tmp_path / "elsewhere" / "vendor" / "kernels"
    vendor.mkdir(parents=True)
    (vendor / "__init__.py").write_text("")
    for file in (f"{name}.py", f"test_{name}.py"):
        shutil.copy(ROOT / "generated" / file, vendor / file)
        text = (vendor / file).read_text()
        assert str(ROOT) not in text and "codegen" not in text
        imports = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                imports |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                imports.add(node.module.split(".")[0])
        allowed = {"torch", "triton"} | STDLIB_OK | ({"pytest", "numpy"} if file.startswith("test_") else set())
        assert imports <= allowed, (file, imports - allowed)
    env = {"PATH": "/usr/bin:/bin", "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": "", "HOME": str(tmp_path),
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # plain pytest: no plugins of this venv
    result = subprocess.run(
        [sys.executable, "-I", "-c", RUNNER, "forward_backward or pack or second_backward", f"test_{name}.py"],
        cwd=vendor, env=env, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert " passed" in result.stdout and "failed" not in result.stdout
