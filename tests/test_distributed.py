"""Two ranks on torch.distributed: tensor parallel (shard_packed_weight, shard_down_weight) and
FSDP2 over FusedGLU and FusedMLP; for a grouped module, tensor parallel inside the experts
(shard_grouped_weight, shard_grouped_down_weight), expert parallel (grouped_glu and
grouped_linear on each rank's experts, tokens exchanged by all-to-all) and FSDP2 over
FusedExperts.

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


DENSE = ("tensor_parallel", "fsdp2", "mlp_tensor_parallel", "mlp_fsdp2", "mlp_fsdp2_parts")
PARTS = {
    "glu_silu_fp16_bn64_sm80": DENSE,
    "glu_gelu_bf16_bn128_sm90": DENSE,
    "glu_silu_bf16_bn128_sm90_grouped": (
        "grouped_tensor_parallel",
        "grouped_expert_parallel",
        "grouped_fsdp2",
    ),
}


@pytest.mark.parametrize("module", list(PARTS))
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
    (tol,) = (TOL[part] for part in module.split("_") if part in TOL)
    for rank in range(2):
        data = json.loads((tmp_path / f"r.rank{rank}.json").read_text())
        assert data["world_size"] == 2 and "fsdp2_error" not in data, data
        assert set(PARTS[module]) <= set(data), (rank, sorted(data))
        for part in PARTS[module]:
            for what, err in data[part].items():
                assert err < tol, (rank, part, what, err)
                assert "zero-row" not in what or err == 0, (rank, part, what, err)  # exact
