"""GPU scripts that the next device session runs as they are: each has a --smoke mode (tiny
shapes, CPU, TRITON_INTERPRET=1) so that CI finds a broken script before device time is spent."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ab_math_smoke_runs_both_modules_and_checks_their_errors(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OUT": str(tmp_path), "CUDA_VISIBLE_DEVICES": ""}
    result = subprocess.run(
        [sys.executable, "scripts/ab_math.py", "--smoke"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rows = json.loads((tmp_path / "ab_math.json").read_text())
    assert len(rows) == 1
    row = next(iter(rows.values()))
    assert set(row["errors"]) == {"precise", "approx"}
    for errs in row["errors"].values():
        assert set(errs) == {"out", "grad_x", "grad_W"} and max(errs.values()) < 1e-2, errs
    assert set(row["approx_over_precise"]) == {"train_fwd", "infer_fwd", "glu_step", "mlp_step"}
    assert all(v > 0 for v in row["ms"].values())
