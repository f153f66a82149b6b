"""`swiglu-gen compile-check` on this machine (no GPU needed): every checked-in variant's kernels
compile for their GPU target with the installed Triton, with the arguments their launchers pass.

The GPU machines run one Triton version; CI installs another (the newest supported), so this is
where the other end of the supported range gets compiled.  Subprocesses: the generated test
files set TRITON_INTERPRET=1 when pytest imports them, and interpreted kernels compile nothing.
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULES = sorted((ROOT / "generated").glob("glu_*.py"))


def _compile_check(*args, interpret=False):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    cmd = [sys.executable, "-m", "codegen.cli", "compile-check", "--no-usage", *map(str, args)]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800, cwd=ROOT)


def test_every_checked_in_variant_compiles_for_its_gpu():
    res = _compile_check(*MODULES)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
    report = res.stdout
    assert "FAIL" not in report
    for path in MODULES:
        name = path.stem
        start = report.index(f"{name} for ")
        section = report[start:].split("\n", 1)[1].split("\nglu_", 1)[0]
        kernels = {line.split()[1] for line in section.splitlines() if line.startswith("  ok")}
        tma = "_sm80" not in name
        expected = {"_glu_fwd_kernel", "_glu_bwd_kernel", "_mlp_dgrad_kernel"}
        if tma:
            expected |= {"_glu_fwd_tma_kernel", "_mlp_dgrad_tma_kernel"}
        if name.endswith("_grouped"):
            expected |= {"_grouped_glu_fwd_kernel"} | (
                {"_grouped_glu_fwd_tma_kernel"} if tma else set()
            )
        assert expected <= kernels, (name, sorted(expected - kernels))


def test_a_kernel_that_does_not_fit_is_a_failure(tmp_path):
    # 12 pipeline stages of the sm80 forward need more shared memory than an A100 has
    src = (ROOT / "generated" / "glu_silu_fp16_bn64_sm80.py").read_text()
    assert "\nNUM_STAGES = 3\n" in src
    bad = tmp_path / "glu_silu_fp16_bn64_sm80_deep.py"
    bad.write_text(src.replace("\nNUM_STAGES = 3\n", "\nNUM_STAGES = 12\n"))
    res = _compile_check(bad)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "FAIL _glu_fwd_kernel" in res.stdout and "of shared memory, sm80 has" in res.stdout


def test_the_interpreter_and_missing_files_are_clear_errors(tmp_path):
    res = _compile_check(MODULES[0], interpret=True)
    assert res.returncode == 2 and "TRITON_INTERPRET is set" in res.stderr
    res = _compile_check(tmp_path / "nope.py")
    assert res.returncode == 2 and "no generated module at" in res.stderr
