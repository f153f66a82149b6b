"""Two ranks on torch.distributed: tensor parallel (shard_packed_weight, shard_down_weight) and
FSDP2 over FusedGLU and FusedMLP.

On a CPU machine: gloo with TRITON_INTERPRET=1 and tiny shapes; with 2+ GPUs the same worker runs
on NCCL (tests/distributed/worker.py; NCCL_NVLS_ENABLE=0 is kept)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / "tests" / "distributed" / "worker.py"
TOL = {"bf16": 1e-2, "fp16": 2e-3}


@pytest.mark.parametrize("module", ["glu_silu_fp16_bn64_sm80", "glu_gelu_bf16_bn128_sm90"])
def test_two_ranks(tmp_path, module):
    if torch.cuda.is_available() and torch.cuda.device_count() < 2:
        pytest.skip("one GPU: the two-rank run needs two GPUs (or no GPU, for gloo on the CPU)")
    env = {**os.environ, "NCCL_NVLS_ENABLE": "0", "OMP_NUM_THREADS": "1"}
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        str(WORKER),
        str(ROOT / "generated" / f"{module}.py"),
        str(tmp_path / "r"),
    ]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    written = [(tmp_path / f"r.rank{rank}.json").exists() for rank in range(2)]
    assert result.returncode == 0, f"results written per rank: {written}\n{result.stderr[-4000:]}"
    assert "returned a view tensor" not in result.stderr
    tol = TOL[module.split("_")[-3]]
    for rank in range(2):
        data = json.loads((tmp_path / f"r.rank{rank}.json").read_text())
        assert data["world_size"] == 2 and "fsdp2_error" not in data, data
        for part in ("tensor_parallel", "fsdp2", "mlp_tensor_parallel", "mlp_fsdp2"):
            for what, err in data[part].items():
                assert err < tol, (rank, part, what, err)
