"""`swiglu-gen tune`: candidate grid, choice of the winner, write-back into the variants file (so
`make generate` reproduces it), and its errors.  The GPU timing itself is injected here."""

import itertools
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from click.testing import CliRunner

from codegen import tune as tune_mod
from codegen.cli import load_variants, main
from codegen.render import render
from codegen.spec import Spec

ROOT = Path(__file__).resolve().parent.parent


def fake_module(spec: Spec):
    info = spec.to_dict()
    return SimpleNamespace(
        SPEC=info,
        BLOCK_M=spec.bm,
        BLOCK_K=spec.bk,
        NUM_WARPS=spec.num_warps,
        NUM_STAGES=spec.num_stages,
        GROUP_M=spec.group_m,
    )


def test_candidates_are_valid_specs_of_the_variant():
    spec = Spec.create(act="silu", arch="sm90")
    cands = tune_mod.candidates(spec)
    assert cands and all(Spec.create(**{**spec.to_dict(), **c}) for c in cands)
    # 3 stages of BK=128 tiles do not fit in sm90's shared memory: never a candidate
    assert not any(c["bk"] == 128 and c["num_stages"] == 3 and c["bm"] == 128 for c in cands)


def test_tune_picks_the_fastest_and_restores_the_module():
    spec = Spec.create(act="gelu", arch="sm90")
    mod = fake_module(spec)

    def timer(m, shape):  # GROUP_M=32 and 4 stages are "fastest"; BK=32 is "broken"
        return 1.0 - 0.05 * (m.GROUP_M == 32) - 0.02 * (m.NUM_STAGES == 4)

    def check(m):
        return m.BLOCK_K != 32

    baseline, best, rows = tune_mod.tune(
        mod, [(8, 8, 8), (16, 16, 16)], timer, check, log=lambda s: None
    )
    assert best["group_m"] == 32 and best["num_stages"] == 4 and best["bk"] != 32
    assert rows[0]["score"] == pytest.approx(0.93)
    assert tune_mod.current_tiling(mod) == baseline  # the module is left as it was


def test_tune_times_the_fused_kernel_whatever_the_shape():
    # a tune shape with few rows (or a short last wave of tiles) would time cuBLAS + the pass,
    # which no tiling changes: the module's forward rule is pinned to the fused kernel while
    # tuning, and restored after
    spec = Spec.create(act="silu", arch="sm90")
    mod = fake_module(spec)
    mod.UNFUSED_MAX_ROWS, mod.UNFUSED_MIN_SAVING_US = 256, 60.0
    seen = set()

    def timer(m, shape):
        seen.add((m.UNFUSED_MAX_ROWS, m.UNFUSED_MIN_SAVING_US))
        return 1.0

    tune_mod.tune(mod, [(64, 4096, 1408)], timer, lambda m: True, log=lambda s: None)
    assert seen == {(0, float("inf"))}
    assert (mod.UNFUSED_MAX_ROWS, mod.UNFUSED_MIN_SAVING_US) == (256, 60.0)


def test_apply_tiling_sets_the_tma_tiles_constants_as_rendered():
    """The TMA kernels read TILE_BLOCK_K (derived at render time): a candidate must change it
    as `make generate` would, or tune times the same kernel for every BK."""
    from codegen.bench import load_module

    mod = load_module(ROOT / "generated" / "glu_silu_bf16_bn128_sm90.py")
    base = tune_mod.current_tiling(mod)
    tune_mod.apply_tiling(mod, {**base, "bk": 32, "num_stages": 4})
    assert (mod.BLOCK_K, mod.TILE_BLOCK_K, mod.NUM_STAGES) == (32, 32, 4)
    mod._PLANS[("a recorded launch",)] = (print, (1, 1, 1), ())
    tune_mod.apply_tiling(mod, base)
    assert (mod.BLOCK_K, mod.TILE_BLOCK_K) == (64, 64)
    assert not mod._PLANS, "launch plans hold the old tiling: apply_tiling drops them"
    # two 64-column chunks per TMA tile: its K step is the arch table's, whatever BLOCK_K
    two = load_module(ROOT / "generated" / "glu_swiglu_oai_bf16_bn64_sm90.py")
    tune_mod.apply_tiling(two, {**tune_mod.current_tiling(two), "bk": 32})
    assert (two.BLOCK_K, two.TILE_BLOCK_K) == (32, 32)
    tune_mod.apply_tiling(two, {**tune_mod.current_tiling(two), "bk": 128})
    assert (two.BLOCK_K, two.TILE_BLOCK_K) == (128, 64)


def test_the_current_tiling_scores_one_on_a_drifting_clock():
    """The bias of issue 8: the baseline timed once up front on a cold/fast GPU, candidates later
    on a slower one, scored every candidate (the current tiling too) >= 1.06x.  Interleaved
    rounds see the same clock: the current tiling scores 1.00 and a real gain still shows."""
    spec = Spec.create(act="silu", arch="sm90")
    mod = fake_module(spec)
    baseline = tune_mod.current_tiling(mod)
    calls = []

    def timer(m, shape):  # the clock slows down by 1% per call; GROUP_M=32 is 3% faster
        calls.append(1)
        return (1.0 + 0.01 * len(calls)) * (0.97 if m.GROUP_M == 32 else 1.0)

    _, best, rows = tune_mod.tune(mod, [(8, 8, 8)], timer, log=lambda s: None, rounds=3)
    scores = {tuple(sorted(r["tiling"].items())): r["score"] for r in rows}
    assert scores[tuple(sorted(baseline.items()))] == pytest.approx(1.0, abs=0.015)
    assert best["group_m"] == 32 and min(scores.values()) < 0.985


def test_tune_alternates_which_tiling_is_timed_first():
    """A kernel timed right after another runs at that one's clock (perf log v0.18): with the
    baseline always first, a candidate identical to it but always timed second would score
    off 1.00.  Here the second of each pair is 4% slower; alternating the order cancels it."""
    spec = Spec.create(act="silu", arch="sm90")
    mod = fake_module(spec)
    baseline = tune_mod.current_tiling(mod)
    last = []

    def timer(m, shape):
        second = bool(last) and len(last) % 2 == 1  # the second timing of a pair
        last.append(m.GROUP_M)
        return 1.04 if second else 1.0

    _, _, rows = tune_mod.tune(mod, [(8, 8, 8)], timer, log=lambda s: None, rounds=4)
    scores = {tuple(sorted(r["tiling"].items())): r["score"] for r in rows}
    assert scores[tuple(sorted(baseline.items()))] == pytest.approx(1.0)
    assert all(s == pytest.approx(1.0) for s in scores.values())


def test_write_back_reproduces_the_winner_under_the_same_name(tmp_path):
    variants = tmp_path / "variants.toml"
    shutil.copy(ROOT / "generated" / "variants.toml", variants)
    before = load_variants(variants)
    best = {"bm": 128, "bk": 64, "num_warps": 8, "num_stages": 4, "group_m": 32}
    tune_mod.write_back(variants, "glu_gelu_bf16_bn128_sm90", best)
    after = load_variants(variants)
    assert len(after) == len(before)
    (tuned,) = [s for s in after if s.module_name == "glu_gelu_bf16_bn128_sm90"]
    assert (tuned.num_stages, tuned.group_m) == (4, 32) and tuned.name == "glu_gelu_bf16_bn128_sm90"
    assert [s for s in after if s.module_name != tuned.module_name] == [
        s for s in before if s.module_name != tuned.module_name
    ]
    assert variants.read_text().startswith("# The checked-in variants.")  # header kept
    module = render(tuned, "generated")["glu_gelu_bf16_bn128_sm90.py"]
    assert "NUM_STAGES = 4" in module and "GROUP_M = 32" in module


def test_make_tune_flow_regenerates_the_retuned_module(tmp_path):
    """`make tune` = `tune --write` then `make generate`: the variants file gets the winner and
    generating into a folder that holds the module as it was rewrites it with the new tiling
    (v0.30: refused, "holds another variant", the tiling counted as the variant's identity)."""
    name = "glu_silu_bf16_bn128_sm90"
    out = tmp_path / "generated"
    out.mkdir()
    for f in (f"{name}.py", f"test_{name}.py"):
        shutil.copy(ROOT / "generated" / f, out / f)
    variants = tmp_path / "variants.toml"
    variants.write_text('[[variant]]\nact = "silu"\ndtype = "bf16"\nbn = 128\narch = "sm90"\n')
    best = {"bm": 128, "bk": 64, "num_warps": 8, "num_stages": 4, "group_m": 8}
    tune_mod.write_back(variants, name, best)
    result = CliRunner().invoke(main, ["--variants", str(variants), "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = (out / f"{name}.py").read_text()
    assert "NUM_STAGES = 4" in text and "GROUP_M = 8" in text
    check = CliRunner().invoke(main, ["--variants", str(variants), "-o", str(out), "--check"])
    assert check.exit_code == 0, check.output


def test_write_back_of_an_unknown_module(tmp_path):
    variants = tmp_path / "variants.toml"
    shutil.copy(ROOT / "generated" / "variants.toml", variants)
    with pytest.raises(tune_mod.BenchError, match="no variant"):
        tune_mod.write_back(variants, "glu_nope", {"group_m": 4})


def test_cli_without_gpu_exits_2(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    result = CliRunner().invoke(
        main, ["tune", "generated/glu_silu_bf16_bn128_sm90.py"], catch_exceptions=False
    )
    assert result.exit_code == 2 and "needs a CUDA GPU" in result.output
    result = CliRunner().invoke(
        main, ["tune", "generated/glu_silu_bf16_bn128_sm90.py", "--shape", "1,2"]
    )
    assert result.exit_code == 2 and "--shape" in result.output


def fake_mlp_module(spec: Spec):
    mod = fake_module(spec)
    for field, const in tune_mod.DGRAD_CONSTANTS.items():
        setattr(mod, const, getattr(spec, field))
    return mod


def test_dgrad_candidates_respect_the_chunk_and_shared_memory():
    for bn in (64, 128):
        spec = Spec.create(act="silu", arch="sm90", bn=bn)
        cands = tune_mod.candidates(spec, "dgrad")
        assert cands and all(bn % c["dgrad_bn"] == 0 for c in cands)
        assert all(Spec.create(**{**spec.to_dict(), **c}) for c in cands)
    assert not any(
        c["dgrad_bn"] == 128 for c in tune_mod.candidates(Spec.create(act="silu", bn=64), "dgrad")
    )


def test_dgrad_group_is_tuned_alone_and_written_back(tmp_path):
    spec = Spec.create(act="gelu", arch="sm90")
    mod = fake_mlp_module(spec)
    forward_before = tune_mod.current_tiling(mod)

    def timer(m, shape):  # 5 stages and 64-row tiles are "fastest" for the dgrad GEMM
        return 1.0 - 0.04 * (m.DG_NUM_STAGES == 5) - 0.02 * (m.DG_BLOCK_M == 64)

    baseline, best, rows = tune_mod.tune(mod, [(8, 8, 8)], timer, log=lambda s: None, group="dgrad")
    assert set(best) == set(tune_mod.DGRAD_TILING)
    assert best["dgrad_stages"] == 5 and best["dgrad_bm"] == 64
    assert (
        tune_mod.current_tiling(mod, "dgrad") == baseline
        and tune_mod.current_tiling(mod) == forward_before
    )
    variants = tmp_path / "variants.toml"
    shutil.copy(ROOT / "generated" / "variants.toml", variants)
    tune_mod.write_back(variants, "glu_gelu_bf16_bn128_sm90", best)
    (tuned,) = [s for s in load_variants(variants) if s.module_name == "glu_gelu_bf16_bn128_sm90"]
    assert tuned.dgrad_stages == 5 and tuned.dgrad_bm == 64
    module = render(tuned, "generated")["glu_gelu_bf16_bn128_sm90.py"]
    assert "DG_NUM_STAGES = 5" in module and "DG_BLOCK_M = 64" in module
    # the non-default dgrad tiling is in the regenerate command
    assert "--dgrad-stages 5" in module


def fake_grouped_module(spec: Spec):
    mod = fake_module(spec)
    for field, const in tune_mod.GMM_CONSTANTS.items():
        setattr(mod, const, getattr(spec, field))
    return mod


def test_gmm_candidates_are_valid_grouped_specs():
    spec = Spec.create(act="silu", arch="sm80", grouped=True)
    cands = tune_mod.candidates(spec, "gmm")
    assert cands and all(Spec.create(**{**spec.to_dict(), **c}) for c in cands)
    # [128, 256] fp32 tiles need 8 warps (256 registers per thread with 4): never a candidate
    assert not any(c["gmm_bm"] * c["gmm_bn"] // (c["gmm_warps"] * 32) > 128 for c in cands)
    assert len(cands) < len(list(itertools.product(*tune_mod.GMM_GRID.values())))


def test_gmm_group_is_tuned_alone_and_written_back(tmp_path):
    spec = Spec.create(act="silu", arch="sm80", bn=64, grouped=True)
    mod = fake_grouped_module(spec)
    forward_before = tune_mod.current_tiling(mod)

    def timer(m, case):  # 256-column tiles and 3 stages are "fastest" for the grouped GEMMs
        return 1.0 - 0.04 * (m.GMM_BLOCK_N == 256) - 0.02 * (m.GMM_NUM_STAGES == 3)

    cases = [(4096, 512, 768, 16, "ragged")]
    baseline, best, rows = tune_mod.tune(mod, cases, timer, log=lambda s: None, group="gmm")
    assert set(best) == set(tune_mod.GMM) and baseline == spec.gmm_tiling
    assert best["gmm_bn"] == 256 and best["gmm_stages"] == 3
    assert (
        tune_mod.current_tiling(mod, "gmm") == baseline
        and tune_mod.current_tiling(mod) == forward_before
    )
    name = "glu_silu_bf16_bn64_sm80_grouped"
    variants = tmp_path / "variants.toml"
    shutil.copy(ROOT / "generated" / "variants.toml", variants)
    tune_mod.write_back(variants, name, best)
    (tuned,) = [s for s in load_variants(variants) if s.module_name == name]
    assert tuned.gmm_tiling == best
    module = render(tuned, "generated")[f"{name}.py"]
    assert "GMM_BLOCK_N = 256" in module and "GMM_NUM_STAGES = 3" in module
    assert "--gmm-bn 256" in module and "--gmm-stages 3" in module  # the regenerate command


def test_cli_tune_gmm_needs_a_grouped_module_and_grouped_shapes(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    dense = ROOT / "generated" / "glu_silu_bf16_bn128_sm90.py"
    result = CliRunner().invoke(main, ["tune", str(dense), "--kernel", "gmm"])
    assert (
        result.exit_code == 2 and "--kernel gmm" in result.output and "--grouped" in result.output
    )
    result = CliRunner().invoke(
        main, ["tune", str(GROUPED), "--kernel", "gmm", "--shape", "64,128,256"]
    )
    assert result.exit_code == 2 and "--shape" in result.output
    seen = {}

    def fake_tune(
        module, cases, timer, check=None, log=print, rounds=4, group="forward", only=None
    ):
        seen.setdefault("groups", []).append((group, timer, check, cases))
        base = tune_mod.current_tiling(module, group)
        return base, base, []

    monkeypatch.setattr(tune_mod, "tune", fake_tune)
    result = CliRunner().invoke(
        main, ["tune", str(GROUPED), "--kernel", "gmm", "--routing", "ragged"]
    )
    assert result.exit_code == 0, result.output
    ((group, timer, check, cases),) = seen["groups"]
    assert group == "gmm" and timer is tune_mod._gpu_gmm_timer and check is tune_mod.gmm_check
    assert cases and all(len(c) == 5 and c[4] == "ragged" for c in cases)  # the MoE shapes
    # ... but not E=8's: its big experts loop in cuBLAS, where no tiling of the kernels counts
    assert (16384, 4096, 14336, 8, "ragged") not in cases and "not timed at" in result.output
    result = CliRunner().invoke(
        main, ["tune", str(GROUPED), "--kernel", "gmm", "--shape", "16384,4096,14336,8"]
    )
    assert result.exit_code == 2 and "per-expert" in result.output


def test_gmm_cases_keep_where_the_grouped_gemms_run():
    from codegen.bench import load_module

    mod = load_module(GROUPED)
    cases = [(16384, 4096, 14336, 8, "balanced"), (65536, 2048, 768, 128, "balanced")]
    assert tune_mod.gmm_cases(mod, cases, log=lambda s: None) == cases[1:]
    # the rule is the module's (LOOP_MIN_EXPERT_FLOP), read when tune runs
    mod.LOOP_MIN_EXPERT_FLOP = float("inf")
    assert tune_mod.gmm_cases(mod, cases, log=lambda s: None) == cases


def test_cli_tune_kernel_option_is_validated():
    result = CliRunner().invoke(
        main, ["tune", "generated/glu_silu_bf16_bn128_sm90.py", "--kernel", "nope"]
    )
    assert result.exit_code == 2 and "--kernel" in result.output


def test_only_narrows_the_grid_of_its_group():
    spec = Spec.create(act="silu", arch="sm90")
    only = tune_mod.parse_only(["bm=128", "num_stages=3,4", "dgrad_bk=64"])
    assert only == {"bm": (128,), "num_stages": (3, 4), "dgrad_bk": (64,)}
    cands = tune_mod.candidates(spec, "forward", only)
    assert (
        cands and {c["bm"] for c in cands} == {128} and {c["num_stages"] for c in cands} <= {3, 4}
    )
    assert len(cands) < len(tune_mod.candidates(spec, "forward"))
    dgrad = tune_mod.candidates(spec, "dgrad", only)  # forward fields leave the dgrad grid alone
    assert {c["dgrad_bk"] for c in dgrad} == {64} and {c["dgrad_bm"] for c in dgrad} == {64, 128}


@pytest.mark.parametrize("bad", ["bm", "bq=1", "bm=big", "bm=128,x"])
def test_only_rejects_what_it_cannot_use(bad):
    with pytest.raises(tune_mod.BenchError, match="--only"):
        tune_mod.parse_only([bad])
    result = CliRunner().invoke(
        main, ["tune", "generated/glu_silu_bf16_bn128_sm90.py", "--only", bad]
    )
    assert result.exit_code == 2 and "--only" in result.output


GROUPED = ROOT / "generated" / "glu_silu_bf16_bn128_sm90_grouped.py"
DENSE = ROOT / "generated" / "glu_silu_bf16_bn128_sm90.py"


def test_tune_cases_time_the_grouped_forward_of_a_grouped_module():
    from codegen.bench import DEFAULT_GROUPED_SHAPES, ROUTINGS, load_module

    grouped, dense = load_module(GROUPED), load_module(DENSE)
    # no shape: the bench's MoE shapes this module can run, in every routing (gpt-oss's
    # N = 2880 only for a 64-column module)
    cases, kind = tune_mod.tune_cases(grouped, [], ())
    assert kind == "grouped"
    fit = [s for s in DEFAULT_GROUPED_SHAPES if s[2] % 128 == 0]
    assert fit != DEFAULT_GROUPED_SHAPES
    assert cases == [(*s, r) for s in fit for r in ROUTINGS]
    oai = load_module(ROOT / "generated" / "glu_swiglu_oai_bf16_bn64_sm90_grouped.py")
    assert len(tune_mod.tune_cases(oai, [], ())[0]) == 3 * len(DEFAULT_GROUPED_SHAPES)
    cases, kind = tune_mod.tune_cases(grouped, [(65536, 2048, 768, 128)], ("balanced", "ragged"))
    assert cases == [(65536, 2048, 768, 128, "balanced"), (65536, 2048, 768, 128, "ragged")]
    # M,K,N shapes time a grouped module's dense forward (its constants serve both)
    assert tune_mod.tune_cases(grouped, [(64, 128, 256)], ()) == ([(64, 128, 256)], "dense")
    assert tune_mod.tune_cases(dense, [], ())[1] == "dense"


@pytest.mark.parametrize(
    "path, shapes, routings, match",
    [
        (DENSE, [(64, 128, 256, 4)], (), "--grouped"),
        (GROUPED, [(64, 128, 256), (64, 128, 256, 4)], (), "not both"),
        (GROUPED, [(64, 128, 256)], ("balanced",), "--routing is for"),
        (GROUPED, [(64, 128, 200, 4)], (), "multiple of CHUNK"),
        (GROUPED, [(64, 128, 256, 4)], ("sorted",), "--routing 'sorted'"),
        (GROUPED, [(64, 128)], (), "--shape"),
    ],
)
def test_tune_cases_reject_what_cannot_be_timed(path, shapes, routings, match):
    from codegen.bench import load_module

    with pytest.raises(tune_mod.BenchError, match=match):
        tune_mod.tune_cases(load_module(path), shapes, routings)


def test_cli_tune_routing_is_validated(monkeypatch):
    result = CliRunner().invoke(main, ["tune", str(GROUPED), "--routing", "sorted"])
    assert result.exit_code == 2 and "--routing" in result.output
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    result = CliRunner().invoke(main, ["tune", str(GROUPED), "--shape", "64,128,256,4"])
    assert result.exit_code == 2 and "needs a CUDA GPU" in result.output


def test_tune_scores_grouped_cases_per_routing():
    """tune() takes (T, K, N, E, routing) cases as it takes dense shapes: each is timed against
    the current tiling in its own interleaved rounds; the score is the geometric mean."""
    spec = Spec.create(act="silu", arch="sm90", grouped=True)
    mod = fake_module(spec)
    seen = set()

    def timer(m, case):  # 64-row tiles 10% faster at balanced routing, 10% slower at ragged
        seen.add(case)
        if m.BLOCK_M == 64:
            return 0.9 if case[4] == "balanced" else 1.1
        return 1.0 - 0.03 * (m.NUM_STAGES == 4)

    cases = [(65536, 2048, 768, 128, "balanced"), (65536, 2048, 768, 128, "ragged")]
    _, best, rows = tune_mod.tune(mod, cases, timer, log=lambda s: None, rounds=2)
    assert seen == set(cases)
    assert best["num_stages"] == 4 and best["bm"] == 128
    by = {tuple(sorted(r["tiling"].items())): r["score"] for r in rows}
    # scored against the current tiling (3 stages): 64-row tiles win one routing, lose the other
    assert by[tuple(sorted({**best, "bm": 64}.items()))] == pytest.approx((0.9 * 1.1) ** 0.5)


GROUPED_CHECK = r"""
import sys
sys.path.insert(0, ".")
from tests.interpreter_patch import widen_bf16_dot
widen_bf16_dot()
from codegen import tune
from codegen.bench import load_module
mod = load_module(sys.argv[1])
assert tune.grouped_check(mod, device="cpu"), "the module's own tiling fails the check"
# a candidate tiling: the check and one timed step run with it
tune.apply_tiling(mod, {**tune.current_tiling(mod), "bm": 64, "group_m": 4})
assert tune.grouped_check(mod, device="cpu"), "a 64-row tiling fails the check"
out, factors = tune.grouped_forward_step(mod, (300, 128, 2 * mod.CHUNK, 4, "ragged"), "cpu")()
assert out.shape == (300, 2 * mod.CHUNK) and factors.shape == (300, 4 * mod.CHUNK)
# the own grouped GEMMs (tune --kernel gmm): the check passes with the module's tiling and a
# candidate, fails for a kernel that drops an expert's rows; the timed step runs
assert tune.gmm_check(mod, device="cpu"), "the own grouped GEMMs fail the check"
tune.apply_tiling(mod, {**tune.current_tiling(mod, "gmm"), "gmm_bm": 64, "gmm_bk": 64, "gmm_stages": 3})
assert tune.gmm_check(mod, device="cpu"), "a 64-row grouped GEMM tiling fails the check"
tune.gmm_step(mod, (300, 128, 2 * mod.CHUNK, 4, "ragged"), "cpu")()
launch = mod._launch_grouped_mm
mod._launch_grouped_mm = lambda a, b, offs, t: launch(a, b, offs.clamp(max=int(offs[-2])), t)
assert not tune.gmm_check(mod, device="cpu"), "a GEMM that drops the last expert passes"
mod._launch_grouped_mm = launch
# a broken forward fails it: the weight's halves swapped (left <-> gate)
pack = mod.pack_grouped_weight
mod.pack_grouped_weight = lambda gate, up: pack(up, gate)
assert not tune.grouped_check(mod, device="cpu"), "swapped halves pass the check"
print("ok")
"""


@pytest.mark.parametrize("name", [GROUPED.name, "glu_swiglu_oai_bf16_bn64_sm90_grouped.py"])
def test_grouped_check_and_step_run_the_module_under_the_interpreter(name):
    """What `tune` runs for each grouped candidate, on the CPU (TRITON_INTERPRET=1, bf16 dots
    widened as in the generated tests): the check against a float32 per-expert loop passes for
    the module's tiling and a 64-row one, and fails for a broken forward; the timed step runs."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    result = subprocess.run(
        [sys.executable, "-c", GROUPED_CHECK, str(ROOT / "generated" / name)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]


def test_cli_tune_rounds_reach_the_timing_and_are_validated(monkeypatch):
    seen = {}

    def fake_tune(
        module, cases, timer, check=None, log=print, rounds=4, group="forward", only=None
    ):
        seen.update(rounds=rounds, cases=cases, group=group)
        base = tune_mod.current_tiling(module, group)
        return base, base, []

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(tune_mod, "tune", fake_tune)
    args = ["tune", str(GROUPED), "--shape", "4096,512,768,16", "--routing", "ragged"]
    result = CliRunner().invoke(main, [*args, "--rounds", "2"])
    assert result.exit_code == 0, result.output
    assert seen == {"rounds": 2, "cases": [(4096, 512, 768, 16, "ragged")], "group": "forward"}
    assert "no candidate ran" in result.output
    CliRunner().invoke(main, args)
    assert seen["rounds"] == tune_mod.ROUNDS == 4
    result = CliRunner().invoke(main, [*args, "--rounds", "0"])
    assert result.exit_code == 2 and "--rounds" in result.output
