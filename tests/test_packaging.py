"""`pip install .` (not editable) gives a swiglu-gen that works from any folder: the
templates ship inside the package."""

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_ships_templates_and_cli_works_from_elsewhere(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheels),
            str(ROOT),
        ],
        check=True,
        cwd=tmp_path,
    )
    (wheel,) = wheels.glob("swiglu_gen-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    templates = {p.name for p in (ROOT / "templates").glob("*.j2")}
    assert templates and {f"codegen/templates/{t}" for t in templates} <= set(names)

    site = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    code = "import sys; from codegen.cli import main; sys.exit(main())"
    args = [
        "--act",
        "gelu",
        "--dtype",
        "fp16",
        "--bn",
        "64",
        "--arch",
        "sm80",
        "-o",
        "vendor/kernels",
    ]
    result = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=elsewhere, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    module = elsewhere / "vendor" / "kernels" / "glu_gelu_fp16_bn64_sm80.py"
    assert module.exists() and (module.parent / "test_glu_gelu_fp16_bn64_sm80.py").exists()
    # The installed package renders exactly what the source tree renders.
    from codegen.render import render
    from codegen.spec import Spec

    expected = render(Spec.create(act="gelu", dtype="fp16", bn=64, arch="sm80"), "vendor/kernels")
    assert module.read_text() == expected[module.name]
    assert (
        str(site)
        in subprocess.run(
            [sys.executable, "-c", "import codegen; print(codegen.__file__)"],
            cwd=elsewhere,
            env=env,
            capture_output=True,
            text=True,
        ).stdout
    )
