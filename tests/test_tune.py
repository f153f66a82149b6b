"""`swiglu-gen tune`: candidate grid, choice of the winner, write-back into the variants file (so
`make generate` reproduces it), and its errors.  The GPU timing itself is injected here."""

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
