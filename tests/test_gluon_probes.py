"""The Gluon probes (scripts/gluon_*_probe.py, perf log v0.16) still compile for sm90 with the
installed Triton, every config within the H200's shared memory.

They run on a GPU only by hand, so without this they would rot silently as Gluon's experimental
API moves (triton 3.9 renamed the TMA copies; scripts/gluon_common.py bridges it).  `--compile`
needs no GPU: Triton's passes and ptxas run on the CPU.  Subprocesses, without TRITON_INTERPRET
(the generated tests set it when pytest imports them, and the interpreter compiles nothing).
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SM90_SHARED = 232448  # bytes of shared memory a block may use on sm90 (227 KB)

# probe: its configs, by the names it prints
PROBES = {
    "gluon_forward_probe": {"1acc_s3e1", "1acc_s3e2", "2acc_s3e1", "2acc_s3e2", "1acc_s4e1"},
    "gluon_ws_probe": {
        "ws_s4e1",
        "ws_s4e1_unordered",
        "ws_s3e2_unordered",
        "ws_s3e1_unordered",
        "ws_s4e1_infer",
        "ws_s4e1_unordered_tanh",
        "ws_s4e1_unordered_nomath",
    },
    "gluon_ws_dgrad_probe": {"ws_s4", "ws_s3"},
}
LINE = re.compile(r"^(\S+) shared (\d+) (\d+) registers, (\d+) B spilled$")


@pytest.mark.parametrize("probe", sorted(PROBES))
def test_probe_compiles_for_sm90(probe):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    res = subprocess.run(
        [sys.executable, f"scripts/{probe}.py", "--compile"],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=ROOT,
    )
    out = res.stdout
    assert res.returncode == 0, out[-3000:] + res.stderr[-3000:]
    assert "FAILED" not in out, out[-3000:]
    compiled = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            compiled[m.group(1)] = tuple(int(v) for v in m.groups()[1:])
    assert set(compiled) == PROBES[probe], out
    for name, (shared, registers, _) in compiled.items():
        assert 0 < shared <= SM90_SHARED, (name, shared)
        assert 0 < registers <= 255, (name, registers)
