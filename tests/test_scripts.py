"""GPU scripts that the next device session runs as they are: each has a --smoke mode (tiny
shapes, CPU, TRITON_INTERPRET=1) so that CI finds a broken script before device time is spent."""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent


def smoke(script, results, tmp_path, args=(), stdout=None):
    """Run scripts/<script> [args] --smoke on the CPU; its results JSON (written to $OUT).
    ``stdout``: a list that receives the script's standard output."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OUT": str(tmp_path), "CUDA_VISIBLE_DEVICES": ""}
    result = subprocess.run(
        [sys.executable, f"scripts/{script}", *args, "--smoke"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    if stdout is not None:
        stdout.append(result.stdout)
    return json.loads((tmp_path / results).read_text())


def test_ab_math_smoke_runs_both_modules_and_checks_their_errors(tmp_path):
    rows = smoke("ab_math.py", "ab_math.json", tmp_path)
    assert len(rows) == 1
    row = next(iter(rows.values()))
    assert set(row["errors"]) == {"precise", "approx"}
    for errs in row["errors"].values():
        assert set(errs) == {"out", "grad_x", "grad_W"} and max(errs.values()) < 1e-2, errs
    assert set(row["approx_over_precise"]) == {"train_fwd", "infer_fwd", "glu_step", "mlp_step"}
    assert all(v > 0 for v in row["ms"].values())
    assert 0.1 < row["aa_train_fwd"] < 10  # the A/A control was timed


def test_layer_kernels_smoke_times_and_profiles_every_path(tmp_path):
    rows = smoke("layer_kernels.py", "layer_kernels.json", tmp_path)
    assert len(rows) == 1
    row = next(iter(rows.values()))
    paths = {"shipped", "one_buffer", "one_node"}  # and "liger" where Liger is installed
    assert paths <= set(row["ms"]) and set(row["ms"]) == set(row["kernels"])
    assert all(v > 0 for v in row["ms"].values())
    for name in paths:  # every path ran its forward and backward
        names = {k for k, _, _ in row["kernels"][name]}
        assert any("Backward" in k for k in names), (name, names)


def test_gpu_tests_script_runs_each_file_and_reports_failures(tmp_path):
    """scripts/gpu_tests.sh: one pytest process per file, a summary line per file with its
    failed tests, exit status 1 when any file failed (here with two small stand-in files)."""
    triton = pytest.importorskip("triton")
    (tmp_path / "test_good.py").write_text("def test_ok():\n    assert True\n")
    (tmp_path / "test_bad.py").write_text(
        "def test_ok():\n    assert True\n\n\ndef test_broken():\n    assert 1 == 2\n"
    )
    logs = tmp_path / "logs"
    env = {**os.environ, "LOGS": str(logs), "JOBS": "2", "FILE_TIMEOUT": "300"}
    env["PYTHONPATH"] = str(ROOT)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"  # python = this one
    result = subprocess.run(
        [
            "bash",
            "scripts/gpu_tests.sh",
            str(tmp_path / "test_good.py"),
            str(tmp_path / "test_bad.py"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    header, *summary = (logs / "summary.txt").read_text().splitlines()
    assert header.startswith("# python ") and f"triton {triton.__version__}" in header
    assert summary[0].startswith("test_good") and "rc=0" in summary[0] and "1 passed" in summary[0]
    assert summary[1].startswith("test_bad") and "rc=1" in summary[1] and "1 failed" in summary[1]
    assert "test_bad.py::test_broken" in summary[2]
    assert (logs / "test_good.log").exists() and (logs / "test_bad.log").exists()


def test_prologue_gemm_probe_smoke_matches_the_pass_then_gemm(tmp_path):
    rows = smoke("prologue_gemm_probe.py", "prologue.json", tmp_path)
    assert len(rows) == 2
    for row in rows.values():
        assert row["max_rel_err"] and max(row["max_rel_err"].values()) < 1e-2


def test_moe_experts_loop_smoke_times_every_variant_and_compares_their_gradients(tmp_path):
    rows = smoke("moe_experts_loop.py", "moe_experts_loop.json", tmp_path)
    assert len(rows) == 1
    row = next(iter(rows.values()))
    variants = {
        "fused, shipped",
        "fused, up loop only (v0.28)",
        "fused, no loop",
        "torchtitan-style",
    }
    assert set(row["ms"]) == variants and all(v > 0 for v in row["ms"].values())
    assert row["loops"] == {"up": False, "down": False}  # the rule never loops off CUDA
    assert row["errs"]["fused, up loop only (v0.28)"] == 0 and row["errs"]["fused, no loop"] == 0
    assert row["errs"]["torchtitan-style"] < 1e-2  # another GEMM order, the same function
    assert row["x_shipped"]["fused, shipped"] == [1.0, 1.0, 1.0]


def test_ab_grouped_tiling_smoke_times_both_tilings_and_compares_them(tmp_path):
    """scripts/ab_grouped_tiling.py OLD NEW --smoke: the grouped module as checked in against
    the same variant rendered with another tiling (4 stages, GROUP_M 8, 64-row tiles), every
    routing; both give the same out and gradients (tilings only reorder fp32 sums)."""
    from codegen.render import render
    from codegen.spec import Spec
    from codegen.variants import load_variants

    (spec,) = [
        s
        for s in load_variants(ROOT / "generated" / "variants.toml")
        if s.module_name == "glu_silu_bf16_bn128_sm90_grouped"
    ]
    other = Spec.create(
        **{**spec.to_dict(), "bm": 64, "num_stages": 4, "group_m": 8, "name": spec.module_name}
    )
    new = tmp_path / f"new_{spec.module_name}.py"
    new.write_text(render(other)[f"{spec.module_name}.py"])
    old = ROOT / "generated" / f"{spec.module_name}.py"
    printed = []
    args = (str(old), str(new))
    rows = smoke("ab_grouped_tiling.py", "ab_grouped_tiling.json", tmp_path, args, printed)
    assert {k.split()[1] for k in rows} == {"balanced", "skewed", "ragged"}
    for row in rows.values():
        assert row["rel_err"] < 1e-2, row
        assert {"old_fwd", "new_fwd", "old_step", "new_step", "titan_step"} <= set(row["ms"])
        assert all(v > 0 for v in row["ms"].values())
        lo_med_hi = row["new_over_old_step"]
        assert lo_med_hi[1] <= lo_med_hi[0] <= lo_med_hi[2]
    assert "| case |" in printed[0]


def test_grouped_wgrad_triton_smoke_checks_every_mode(tmp_path):
    """scripts/grouped_wgrad_triton.py --smoke: the Triton grouped weight gradient in each way
    of cutting the reduction at an expert's rows (masked pointers, per-expert device
    descriptors, masked TMA), flattened or not, against a float32 per-expert loop, with an
    empty expert and experts that are not a multiple of the row step."""
    rows = smoke("grouped_wgrad_triton.py", "grouped_wgrad_triton.json", tmp_path)
    (row,) = rows.values()
    modes = {name.split()[0] for name in row["rel_err"]}
    assert modes == {"ptr", "tma_dev", "tma_mask"}
    assert len(row["rel_err"]) == 6 and max(row["rel_err"].values()) < 1e-5, row["rel_err"]
    assert set(row["ms"]) == set(row["rel_err"])


def test_moe_no_fast_path_smoke_times_every_mode(tmp_path):
    """scripts/moe_no_fast_path.py MODULE --smoke: the grouped layer's step as shipped, with
    torch._grouped_mm's fast path forced off (the module's grouped GEMMs, and a per-expert
    loop), same gradients."""
    module = str(ROOT / "generated" / "glu_silu_bf16_bn128_sm90_grouped.py")
    rows = smoke("moe_no_fast_path.py", "moe_no_fast_path.json", tmp_path, (module,))
    (row,) = rows.values()
    assert set(row["ms"]) == {"shipped", "no_fast", "no_fast_loop"}
    assert all(v > 0 for v in row["ms"].values()) and row["rel_err"] < 1e-2
    assert set(row["host_us"]) == set(row["ms"]) and all(v > 0 for v in row["host_us"].values())


def test_grouped_gemm_tiles_smoke_checks_every_tiling(tmp_path):
    """scripts/grouped_gemm_tiles.py MODULE --smoke: the module's grouped GEMMs under two
    tilings, each of the three GEMMs checked against the per-expert loop."""
    module = str(ROOT / "generated" / "glu_silu_bf16_bn64_sm80_grouped.py")
    rows = smoke("grouped_gemm_tiles.py", "grouped_gemm_tiles.json", tmp_path, (module,))
    (row,) = rows.values()
    assert set(row) == {"grad_x", "wgrad", "down_fwd"}
    for gemm in row.values():
        assert len(gemm["ms"]) == 4 and max(gemm["rel_err"].values()) < 1e-2, gemm["rel_err"]


def _script_module(name):
    """scripts/<name>.py imported as a module (its functions, no main())."""
    from codegen.bench import load_module

    return load_module(ROOT / "scripts" / f"{name}.py")


def test_issue_targets_checks_each_bound_and_never_calls_a_missing_value_met():
    targets = _script_module("issue_targets").targets
    row = {
        "shape": [4096, 2048, 5632],
        "ours_fwd_bwd_ms": 0.93,
        "eager_fwd_bwd_ms": 1.15,
        "floor_ms": 0.84,
        "liger_fwd_bwd_ms": 0.96,
        "ours_fwd_bwd_rounds": [0.92, 0.94],
        "liger_fwd_bwd_rounds": [0.95, 0.97],
        "eager_fwd_bwd_rounds": [1.15, 0.94],
        "floor_gemm_rounds": [0.28, 0.30],
        "ours_host_us": 350.0,
        "eager_host_us": 330.0,
        "ours_host_us_rounds": [300.0, 600.0, 350.0],  # the host halved its speed in round 2
        "eager_host_us_rounds": [320.0, 640.0, 330.0],
        "ours_net_peak_mib": 132.0,
        "liger_net_peak_mib": 132.0,
        "ours_host_net_us_rounds": [300.0, 330.0, 600.0, 360.0, 390.0],  # one step per cycle
        "eager_host_net_us_rounds": [330.0, 300.0, 300.0, 360.0, 300.0],
    }
    got = {name: (value, bound, holds) for _, name, value, bound, holds in targets(row)}
    assert got["host µs <= eager's"] == (350.0, 330.0, False)
    assert got["host µs <= eager's, grads None"] == (None, None, None)  # not in this row
    # per round (ours and eager issued next to each other): below eager's in two rounds of three
    (median, low, high), bound, holds = got["  (host µs x eager's, per round)"]
    assert (median, low, high) == (600 / 640, 300 / 320, 350 / 330) and bound is holds is None
    assert got["  (host µs x eager's, grads None, per round)"][0] is None  # no rounds
    # in a network (a step per cycle): median [q1, q3] of the per-cycle ratios, not a target
    (median, q1, q3), bound, holds = got[
        "  (host µs x eager's in a network, per step: median [q1, q3])"
    ]
    assert median == 1.1 and q1 < 1.0 < 1.1 < q3 < 2.0 and bound is holds is None
    assert got["fwd+bwd x eager <= 0.95"][2] is True
    # the rounds' own ratios, median [min, max]: information beside the target, not a target
    (median, low, high), bound, holds = got["  (fwd+bwd x eager, per round)"]
    assert (low, high) == (0.92 / 1.15, 0.94 / 0.94) and bound is None and holds is None
    assert abs(median - (0.92 / 1.15 + 1.0) / 2) < 1e-12
    assert got["  (fwd+bwd x Liger, per round)"][0][1:] == (0.92 / 0.95, 0.94 / 0.97)
    # 0.97x Liger's time (in floor units 0.97 * 0.96 / 0.84) is the larger bound here
    value, bound, holds = got["fwd+bwd x floor <= max(0.97 Liger, 1.02 floor)"]
    assert abs(bound - 0.97 * 0.96 / 0.84) < 1e-12 and holds is (0.93 / 0.84 <= bound)
    assert got["baseline: fwd+bwd x floor <= 1.03"][2] is False  # a baseline shape
    # per round against the floor: 3 x that round's one GEMM
    (median, low, high), bound, _ = got["  (fwd+bwd x floor, per round)"]
    assert (low, high) == pytest.approx((0.94 / 0.90, 0.92 / 0.84)) and bound is None
    assert got["  (compiled MLP x eager MLP, per round)"][0] is None  # no MLP rounds in the row
    assert got["in-network peak <= Liger's (MiB)"][2] is True
    # what the row lacks (the MLP rows, --no-compile) is not measured, never met
    assert got["compiled MLP x eager MLP <= 1.01"][2] is None
    assert got["dgrad epilogue x cuBLAS <= 1.04"][2] is None
    rows = {n for _, n, *_ in targets({**row, "shape": [2048, 1024, 4096]})}
    assert not any(n.startswith("baseline") for n in rows)  # not a baseline shape


def _issue_targets_stdout(path):
    """scripts/issue_targets.py's report of the bench.json at ``path`` (relative to the repo or
    absolute), run as a user runs it."""
    result = subprocess.run(
        [sys.executable, "scripts/issue_targets.py", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_issue_targets_tallies_a_checked_in_bench(tmp_path):
    stdout = _issue_targets_stdout("docs/bench/h200-v0.37-bench-silu.json")
    # (perf log v0.37; a run without host µs for grads set to None has no bound for that check)
    assert "met 43, missed 22, not measured 0" in stdout


def test_issue_targets_checks_issue_10_on_the_grouped_rows():
    grouped_targets = _script_module("issue_targets").grouped_targets
    row = {
        "shape": [65536, 2048, 768, 128],
        "routing": "balanced",
        "ours_fwd_bwd_ms": 2.4,
        "floor_ms": 2.1,
        "titan_fwd_bwd_ms": 2.9,
        "ours_fwd_ms": 0.72,
        "gmm_ms": 0.7,
        "ours_kept_mib": 192.0,
        "titan_kept_mib": 288.0,
        "ours_fwd_bwd_rounds": [2.4, 2.5],
        "titan_fwd_bwd_rounds": [2.9, 2.8],
    }
    got = {name: (value, bound, holds) for _, name, value, bound, holds in grouped_targets(row)}
    assert got["fwd+bwd x grouped floor <= 1.05"] == (2.4 / 2.1, 1.05, False)
    assert got["torchtitan-style / ours >= 1.2"] == (2.9 / 2.4, 1.2, True)  # E=128: 1.2
    assert got["forward x gmm <= 1.05"] == (0.72 / 0.7, 1.05, True)
    assert got["kept x torchtitan-style's <= 0.70"][2] is True
    low, high = got["  (torchtitan-style / ours, per round)"][0][1:]
    assert (low, high) == (2.8 / 2.5, 2.9 / 2.4)
    assert got["  (fwd+bwd x grouped floor, per round)"][0] is None  # no gmm rounds in the row
    e8 = {n for _, n, *_ in grouped_targets({**row, "shape": [16384, 4096, 14336, 8]})}
    assert "torchtitan-style / ours >= 1.07" in e8  # E=8: 1.07
    missing = grouped_targets({"shape": [1, 2, 3, 32], "routing": "skewed"})
    assert all(holds is None for *_, holds in missing)  # not measured, never met


def test_issue_targets_tallies_a_checked_in_moe_bench():
    stdout = _issue_targets_stdout("docs/bench/h200-v0.28-bench-moe.json")
    # E=8 and E=128, balanced and skewed (the ragged rows are the bench's, not issue 10's)
    assert "65536x2048x768x128 silu, skewed routing" in stdout
    assert "ragged" not in stdout
    assert "met 14, missed 2, not measured 0" in stdout


def test_issue_targets_names_the_run_of_each_row_of_a_resumed_bench(tmp_path):
    """A bench.json continued with --resume holds rows of several runs (hosts): each row's
    header says its run and host; a one-run report's headers stay as they were."""
    data = json.loads((ROOT / "docs/bench/h200-v0.42-bench-small-both.json").read_text())
    first, second = data["results"][:2]
    data["meta"]["hosts"] = ["host-a", "host-b"]
    data["results"] = [{**first, "run": 0}, {**second, "run": 1}]
    report = tmp_path / "bench.json"
    report.write_text(json.dumps(data))

    def headers():
        stdout = _issue_targets_stdout(report)
        return [line for line in stdout.splitlines() if line.startswith("  2048x")]

    assert headers() == [
        "  2048x4096x1408 gelu_tanh (run 0, host host-a)",
        "  2048x4096x1408 silu (run 1, host host-b)",
    ]
    data["meta"]["hosts"] = ["host-a"]
    report.write_text(json.dumps(data))
    assert headers() == ["  2048x4096x1408 gelu_tanh", "  2048x4096x1408 silu"]


def test_peak_snapshot_keeps_the_blocks_alive_at_the_peak():
    peak_blocks = _script_module("peak_snapshot").peak_blocks
    mib = 2**20
    ours = {"filename": "/repo/generated/glu.py", "line": 10, "name": "_forward"}
    torch_frame = {"filename": "/site/torch/nn/functional.py", "line": 5, "name": "linear"}
    events = [
        {"action": "free_completed", "addr": 99, "size": 8 * mib},  # allocated before the trace
        {"action": "alloc", "addr": 1, "size": 3 * mib, "frames": [torch_frame, ours]},
        {"action": "alloc", "addr": 2, "size": 2 * mib, "frames": [torch_frame]},
        {"action": "free_requested", "addr": 1, "size": 3 * mib},  # not yet given back
        {"action": "free_completed", "addr": 1, "size": 3 * mib},
        {"action": "alloc", "addr": 3, "size": 1 * mib, "frames": []},
    ]
    peak, blocks = peak_blocks(events)
    assert peak == 5.0
    assert blocks == [(3.0, "generated/glu.py:10 _forward"), (2.0, "functional.py:5 linear")]


def test_host_gap_skeletons_make_the_gradients_they_stand_for(monkeypatch):
    """host_gap's bare Functions: our step's allocations and GEMM calls without Triton.  Their
    buffers are uninitialised (only the host's work is theirs), so the check is on what they
    call and return: two GEMMs for one buffer, four (addmm_ for grad_x's second half) and both
    buffers freed for the split; the gradients' shapes are the leaves'."""
    host_gap = _script_module("host_gap")
    calls = []
    mm, addmm_ = torch.mm, torch.Tensor.addmm_
    monkeypatch.setattr(torch, "mm", lambda a, b: calls.append("mm") or mm(a, b))
    monkeypatch.setattr(
        torch.Tensor, "addmm_", lambda t, a, b: calls.append("addmm_") or addmm_(t, a, b)
    )
    x = torch.randn(5, 8, requires_grad=True)
    w = torch.randn(12, 8, requires_grad=True)  # [2N, K], N = 6
    host_gap.Bare.apply(x, w).backward(torch.ones(5, 6))
    assert calls == ["mm", "mm"] and x.grad.shape == x.shape and w.grad.shape == w.shape
    joined = torch.randn(12, 8)
    a, b = (joined[:4].clone().requires_grad_(), joined[4:].clone().requires_grad_())
    for split, want in ((False, ["mm", "mm"]), (True, ["mm", "mm", "addmm_", "mm"])):
        calls.clear()
        x.grad = a.grad = b.grad = None
        host_gap.BareParts.apply(x, a, b, joined, split).backward(torch.ones(5, 6))
        assert calls == want, split
        assert (x.grad.shape, a.grad.shape, b.grad.shape) == (x.shape, a.shape, b.shape)


def test_host_gap_reports_each_path_over_eager_in_the_same_round():
    """host_gap's report: beside each path's medians, its wall time over eager's batch of the
    same round (a path with grads None over eager's with grads None), median [min, max]; a host
    that halves its speed between rounds (here: round 2) cancels out of the ratios."""
    host_gap = _script_module("host_gap")
    got = {
        "eager": (300.0, 290.0, [300, 600, 310]),
        "eager, grad None": (280.0, 270.0, [280, 560, 290]),
        "ours": (330.0, 320.0, [270, 540, 330]),
        "ours, grad None": (250.0, 240.0, [252, 504, 261]),
    }
    lines = host_gap.report(got)
    assert lines[0].startswith("  path")
    row = {line.split()[0] + (" None" if "None" in line else ""): line for line in lines[1:]}
    assert row["eager"].endswith("1.000 [1.000, 1.000]")
    assert row["ours"].endswith("0.900 [0.900, 1.065]")  # 270/300, 540/600, 330/310
    assert row["ours, None"].endswith("0.900 [0.900, 0.900]")
    assert host_gap.report({"ours": (1.0, 1.0, [1.0])})[1].endswith("-")  # no eager to pair


def test_host_gap_minimal_function_gives_glus_outputs_and_gradients():
    """host_gap's "minimal" path (our two launches behind a bare Function) must compute what glu
    computes, or its host µs would price another step: under the interpreter (CPU, bf16 dots
    widened), out, grad_x and grad_W against glu's with the same packed weight."""
    code = """
import sys, torch
sys.path.insert(0, "tests")
from interpreter_patch import widen_bf16_dot
widen_bf16_dot()
from codegen.bench import load_module
mod = load_module("generated/glu_silu_bf16_bn128_sm90.py")
host_gap = load_module("scripts/host_gap.py")
torch.manual_seed(0)
M, K, N = 272, 32, 128  # more than UNFUSED_MAX_ROWS: the fused kernel
x0 = torch.randn(M, K).bfloat16()
w0 = (torch.randn(2 * N, K) / K**0.5).bfloat16()
dy = torch.randn(M, N).bfloat16()
got = []
for f in (mod.glu, host_gap.minimal_function(mod).apply):
    x, w = x0.clone().requires_grad_(), w0.clone().requires_grad_()
    out = f(x, w)
    out.backward(dy)
    got.append((out, x.grad, w.grad))
for a, b in zip(*got):
    assert a.shape == b.shape and torch.equal(a, b), (a - b).abs().max()
print("ok")
"""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TRITON_INTERPRET": "1",
        "CUDA_VISIBLE_DEVICES": "",
    }
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]


def test_fuzz_paths_smoke_checks_every_path_and_form_against_the_reference(tmp_path):
    """scripts/fuzz_paths.py MODULE --smoke: random steps through every weight form, path switch
    and forward, each checked against the float32 reference (and the small-step path's bits
    against the general path's); none fails, and every axis was drawn."""
    module = str(ROOT / "generated" / "glu_silu_bf16_bn128_sm90.py")
    args = (module, "--cases", "150", "--seed", "7")
    run = smoke("fuzz_paths.py", "fuzz_paths-glu_silu_bf16_bn128_sm90.json", tmp_path, args)
    results = run["results"]
    assert len(results) == 150
    assert [r for r in results if r["failures"]] == []
    for axis in ("form", "config", "forward", "grad_mode"):
        drawn = {r["case"][axis] for r in results}
        assert len(drawn) > 1, (axis, drawn)
    sys.path.insert(0, str(ROOT / "scripts"))
    import fuzz_paths

    assert {r["case"]["form"] for r in results} == {*fuzz_paths.FORMS, *fuzz_paths.MLP_FORMS}
    assert {r["case"]["config"] for r in results} == set(fuzz_paths.CONFIGS)
    assert sum(bool(r["small_step"]) for r in results) >= 10  # the path and its bit check ran
    # float32 master weights under autocast, and two steps adding into .grad, checked too
    assert any(r["case"]["master"] and r["errors"] for r in results)
    assert any(r["case"]["steps"] == 2 and r["errors"].get("weight") for r in results)
    trained = [r for r in results if r["errors"].get("x") is not None]
    assert len(trained) >= 20 and max(r["errors"]["x"] for r in trained) < 1e-2


def test_fuzz_paths_replays_one_case(tmp_path):
    """--case JSON checks that case alone (a FAILED line's JSON, here a FusedExperts step with
    D = 100, which torch._grouped_mm's own backward does not take on a GPU)."""
    module = str(ROOT / "generated" / "glu_swiglu_oai_bf16_bn64_sm90_grouped.py")
    case = {
        **_fuzz_case(lead=[20], K=100, N=128, form="experts_bias", wants=["x", "weight", "bias"]),
        "experts": {"E": 2, "k": 1, "skewed": True},
        "steps": 2,
    }
    name = "fuzz_paths-glu_swiglu_oai_bf16_bn64_sm90_grouped.json"
    run = smoke("fuzz_paths.py", name, tmp_path, (module, "--case", json.dumps(case)))
    [result] = run["results"]
    assert result["case"] == case and result["failures"] == []
    assert set(result["errors"]) == {"out", "x", "weight", "bias"}


def test_fuzz_paths_smoke_checks_grouped_glu_over_every_routing(tmp_path):
    """The same on a grouped module: grouped_glu steps (balanced, skewed, empty experts, one
    expert, T = 0) against a per-expert loop of the reference, zero-row experts' gradients
    exactly zero, its GEMM switches drawn too."""
    module = str(ROOT / "generated" / "glu_silu_bf16_bn128_sm90_grouped.py")
    name = "fuzz_paths-glu_silu_bf16_bn128_sm90_grouped.json"  # (one file per module)
    run = smoke("fuzz_paths.py", name, tmp_path, (module, "--cases", "120"))
    results = run["results"]
    assert [r for r in results if r["failures"]] == []
    grouped = [r for r in results if r["case"]["sizes"] is not None]
    assert len(grouped) >= 20
    assert any(0 in r["case"]["sizes"] for r in grouped)  # an expert without rows
    assert any(sum(r["case"]["sizes"]) == 0 for r in grouped)  # T = 0
    assert {"no_grouped_mm", "expert_loop"} <= {r["case"]["config"] for r in grouped}
    experts = [r for r in results if r["case"]["experts"] is not None]  # FusedExperts
    assert len(experts) >= 10 and any(r["errors"].get("down") for r in experts)


class _FakeModule:
    """The module surface fuzz_paths.check() uses, its glu the plain reference."""

    CHUNK, DTYPE, _INTERPRET = 4, torch.float32, True
    SMALL_STEP_PATH = True

    @staticmethod
    def _weight_split(n):
        return n // 2

    @staticmethod
    def _small_step(x, w, b):
        return None

    @staticmethod
    def unpack_weight(w):
        return w[w.shape[0] // 2 :], w[: w.shape[0] // 2]

    @staticmethod
    def reference(x, gate_w, up_w, gate_b=None, up_b=None):
        return (x @ up_w.t()) * torch.nn.functional.silu(x @ gate_w.t())


def _fuzz_case(**changes):
    """A dense fuzz_paths case: x [3, 8], N = 8, packed weight, x and the weight trained."""
    case = {
        "lead": [3],
        "K": 8,
        "N": 8,
        "form": "packed",
        "wants": ["x", "weight"],
        "grad_mode": "train",
        "strided_x": False,
        "autocast": False,
        "config": "default",
        "forward": "rule",
        "sizes": None,
        "experts": None,
        "wrap": "none",
        "seed": 1,
        "master": False,
        "steps": 1,
    }
    return {**case, **changes}


def test_fuzz_paths_reports_a_gradient_added_twice_over_two_steps():
    """Two steps adding into .grad: a glu whose backward adds the weight's .grad itself (which
    autograd adds again) passes one step and fails the second."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import fuzz_paths

    class AddsGradItself(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return _FakeModule.reference(x, *_FakeModule.unpack_weight(w))

        @staticmethod
        def backward(ctx, dy):
            x, w = ctx.saved_tensors
            with torch.enable_grad():
                xr, wr = x.detach().requires_grad_(), w.detach().requires_grad_()
                out = _FakeModule.reference(xr, *_FakeModule.unpack_weight(wr))
                grad_x, grad_w = torch.autograd.grad(out, (xr, wr), dy)
            if w.grad is not None:  # the bug: an "accumulating" backward
                grad_w = grad_w + w.grad
            return grad_x, grad_w

    class Fake(_FakeModule):
        @staticmethod
        def glu(x, w, b=None):
            return AddsGradItself.apply(x, w)

    assert fuzz_paths.check(_fuzz_case(), Fake, "cpu", 1e-2)[0] == [
        "a second backward did not raise"  # (a plain Function keeps what it saved)
    ]
    failures, _, errors, _ = fuzz_paths.check(_fuzz_case(steps=2), Fake, "cpu", 1e-2)
    assert [f.split(":")[0] for f in failures] == ["weight", "a second backward did not raise"]
    assert abs(errors["weight"] - 2 / 3) < 1e-3 and errors["x"] < 1e-6  # 2.5x against 1.5x


def test_fuzz_paths_reports_a_wrong_gradient(monkeypatch):
    """The fuzzer's check fails a path whose gradient is off by 5% (in-process, on the CPU's
    reference path: a module whose glu returns a scaled output)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import fuzz_paths

    class Fake(_FakeModule):  # a glu that is 5% off
        @classmethod
        def glu(cls, x, w, b=None):
            return 1.05 * cls.reference(x, *cls.unpack_weight(w))

    case = _fuzz_case()
    failures, small, errors, tols = fuzz_paths.check(case, Fake, "cpu", 1e-2)
    assert not small
    assert {f.split(":")[0] for f in failures} == {
        "out",
        "x",
        "weight",
        "a second backward did not raise",
    }
    assert 0.04 < errors["out"] < 0.06
    # x [3, 8] -> out [3, 8]: under SMALL elements, so held to twice bf16's 1e-2 (packed: the
    # gradients too); the summary names the case behind each largest error and its tolerance
    assert tols == {"out": 2e-2, "grads": 2e-2}
    assert fuzz_paths.tolerances({**case, "form": "parts"}, 4096, 4096, 1e-2) == (1e-2, 2e-2)
    results = [
        {"index": 0, "case": case, "errors": {"out": 0.001}, "tolerances": {"out": 1e-2}},
        {"index": 1, "case": case, "errors": errors, "tolerances": tols},
    ]
    worst = fuzz_paths.worst_errors(results)
    assert worst["out"] == (errors["out"], 2e-2, 1) and worst["x"][1:] == (2e-2, 1)
    assert fuzz_paths._describe(results, {"out": worst["out"]}) == (
        f"out {errors['out']:.2g} (tol 0.02; case 1: 3x8 -> 8, packed)"
    )
    # errors above the bf16 bar that passed on two roundings' 2x are listed; a small case's
    # (its out held to 2x the bar) and a failed case's are not
    grouped = {"out": 1e-2, "grads": 2e-2}
    results = [
        {
            "index": 0,
            "errors": {"out": 0.004, "weight": 0.0155},
            "tolerances": grouped,
            "failures": [],
        },
        {
            "index": 1,
            "errors": {"out": 0.004, "weight": 0.008},
            "tolerances": grouped,
            "failures": [],
        },
        {
            "index": 2,
            "errors": {"out": 0.015},
            "tolerances": {"out": 2e-2, "grads": 2e-2},
            "failures": [],
        },
        {"index": 3, "errors": {"x": 0.05}, "tolerances": grouped, "failures": ["x 0.05"]},
    ]
    assert fuzz_paths.above_bar(results, 1e-2) == [(0, "weight", 0.0155)]
    assert fuzz_paths._above(results, 1e-2) == "1 (case 0 weight 0.015)"
    assert fuzz_paths._above(results[:1] * 6, 1e-2).endswith("weight 0.015, ...)")
    assert fuzz_paths._above(results[1:], 1e-2) == "none"


def test_fuzz_paths_draws_forward_only_warm_ups_for_captured_steps():
    """A captured step (wrap "graph", drawn where a GPU is) is warmed up by two training steps or
    by a training step and then a forward alone (v0.54: a copy held by a forward whose backward
    never runs was freed inside the capture); the other wraps have no warm-up to draw."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import fuzz_paths

    rng = random.Random(3)
    cases = [fuzz_paths.draw(rng, _FakeModule, gpu=True) for _ in range(600)]
    graph = [case for case in cases if case["wrap"] == "graph"]
    assert len(graph) >= 10 and {case["warm_up"] for case in graph} == {"train", "forward"}
    assert {case["warm_up"] for case in cases if case["wrap"] != "graph"} == {"train"}
    cpu = [fuzz_paths.draw(rng, _FakeModule, gpu=False) for _ in range(200)]
    assert {case["wrap"] for case in cpu} <= {"none", "checkpoint", "compile", "vjp"}


def test_fuzz_paths_zeroes_the_output_gradient_at_gates_on_a_kink():
    """A relu gate within rounding of 0 may land on either side in our kernels and in the
    reference (v0.53: relu fp16 on the GPU, 3 cases in 1084 off by one flip): where the case's
    output is the GLU's own, its output gradient is zero there; elsewhere, for a smooth
    activation and for the MLP's forms, as drawn."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import fuzz_paths

    class Relu(_FakeModule):
        ACTIVATION, DTYPE = "relu", torch.bfloat16

        @staticmethod
        def unpack_bias(b):
            return b[b.shape[0] // 2 :], b[: b.shape[0] // 2]

    case = _fuzz_case(lead=[2], K=2, N=2)
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    weight = torch.tensor([[3.0, 1.0], [2.0, 2.0], [1.0, 0.0], [0.0, 0.5]])  # [up; gate]
    keep = fuzz_paths._kink_free(case, Relu, x, weight, None)  # gates [[1, 0], [0, 0.5]]
    assert keep.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    bias = torch.tensor([0.0, 0.0, -1.0, 0.25])  # gates [[0, 0.25], [-1, 0.75]]
    assert fuzz_paths._kink_free(case, Relu, x, weight, bias).tolist() == [[0.0, 1.0], [1.0, 1.0]]
    # within the band (4 eps of bf16 times the gate's terms, ~0.06 here): a gate of 2^-7
    near = torch.tensor([0.0, 0.0, -1.0 + 2**-7, 0.25])
    assert fuzz_paths._kink_free(case, Relu, x, weight, near)[0, 0] == 0.0
    assert fuzz_paths._kink_free(case, _FakeModule, x, weight, None) is None  # no kink
    assert fuzz_paths._kink_free({**case, "form": "mlp"}, Relu, x, weight, None) is None
    out = torch.empty(2, 2)
    drawn = fuzz_paths._dy(case, out)
    fuzz_paths._KEEP_DY = keep
    try:
        assert torch.equal(fuzz_paths._dy(case, out), drawn * keep)
    finally:
        fuzz_paths._KEEP_DY = None
    assert torch.equal(fuzz_paths._dy(case, out), drawn)


@pytest.mark.parametrize("stop", ["cuda_error", "sigint"])
def test_fuzz_paths_stops_at_a_cuda_error_or_sigint_and_writes_its_results(
    stop, tmp_path, monkeypatch
):
    """A CUDA error leaves the context unusable (v0.53: a dense case after one failed on it),
    so the run stops there; a timeout's SIGINT (``timeout -s INT``) stops it too, the case it
    was in recorded as failed.  Either way the results so far are written and the exit status
    is 1."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import fuzz_paths

    class Fake(_FakeModule):
        DTYPE = torch.bfloat16

    calls = []

    def check(case, mod, device, tol):
        calls.append(case)
        if len(calls) == 3:
            if stop == "sigint":
                raise KeyboardInterrupt
            raise RuntimeError("CUDA error: invalid argument")
        return [], False, {"out": 1e-3}, {"out": tol, "grads": tol}

    monkeypatch.setattr(fuzz_paths, "check", check)
    monkeypatch.setattr(fuzz_paths, "load_module", lambda path: Fake)
    monkeypatch.setattr(fuzz_paths, "draw", lambda rng, mod, gpu: _fuzz_case())
    monkeypatch.setenv("OUT", str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["fuzz_paths.py", "fake.py", "--cases", "10", "--smoke"])
    assert fuzz_paths.main() == 1 and len(calls) == 3
    results = json.loads((tmp_path / "fuzz_paths-fake.json").read_text())["results"]
    assert [bool(r["failures"]) for r in results] == [False, False, True]
    want = "interrupted while running" if stop == "sigint" else "raised RuntimeError: CUDA error"
    assert results[2]["failures"][0].startswith(want)
