"""The bench's argument handling, its no-GPU error and its report (CPU; the timing needs a GPU)."""

import json
import types
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from codegen import bench
from codegen.cli import main

MODULE = "generated/glu_silu_bf16_bn128_sm90.py"


def invoke(*args):
    return CliRunner().invoke(main, ["bench", *args], catch_exceptions=False)


def test_no_gpu_is_a_clear_error_not_a_traceback(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    result = invoke(MODULE, "--out", str(tmp_path / "r"))
    assert result.exit_code == 2
    assert "needs a CUDA GPU" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("shape", ["1,2", "a,b,c", "0,4,4", "4,-1,4", "1,2,3,4,5", "8,8,8,0"])
def test_bad_shapes_exit_2(shape):
    result = invoke(MODULE, "--shape", shape)
    assert result.exit_code == 2 and "--shape" in result.output


def test_shapes_parse_and_default():
    assert bench.parse_shape("11136,3584,14336") == (11136, 3584, 14336)
    assert bench.parse_shape("65536,2048,768,128") == (65536, 2048, 768, 128)  # T,K,N,E
    assert len(bench.DEFAULT_SHAPES) == 5 and (2048, 4096, 1408) in bench.DEFAULT_SHAPES
    assert (65536, 2048, 768, 128) in bench.DEFAULT_GROUPED_SHAPES


def test_script_args_and_step_inputs():
    # a measurement script's [MODULE.py] [M,K,N ...]: defaults where it names none
    path = "generated/glu_silu_bf16_bn128_sm90.py"
    mod, shapes = bench.script_args(["4096,2048,5632", "8,16,256"], path, [(1, 2, 3)])
    assert shapes == [(4096, 2048, 5632), (8, 16, 256)] and mod.CHUNK == 128
    _, shapes = bench.script_args([path], path, [(1, 2, 3)])
    assert shapes == [(1, 2, 3)]
    with pytest.raises(bench.BenchError):
        bench.script_args(["4096x2048"], path, [])
    x, gate_w, up_w, dy = bench.glu_step_inputs(mod, 8, 16, 256, device="cpu")
    assert x.shape == (8, 16) and x.requires_grad and x.dtype == mod.DTYPE
    assert gate_w.shape == up_w.shape == (256, 16) and not gate_w.requires_grad
    assert dy.shape == (8, 256) and not torch.equal(gate_w, up_w)
    assert torch.equal(bench.glu_step_inputs(mod, 8, 16, 256, device="cpu")[1], gate_w)  # seeded


def test_models_give_their_mlp_shapes():
    assert bench.parse_model("llama-3.1-8b") == (bench.DEFAULT_MODEL_TOKENS, 4096, 14336)
    assert bench.parse_model("Llama-3.1-8B:8192") == (8192, 4096, 14336)
    assert bench.parse_model("qwen3-30b-a3b:65536") == (65536, 2048, 768, 128)  # T,K,N,E
    for name, dims in bench.MODELS.items():
        assert name == name.lower() and len(dims) in (2, 3)
        assert dims[1] % 64 == 0  # some module's CHUNK divides N (gpt-oss's 2880: --bn 64)
        assert dims[1] % 128 == 0 or name.startswith("gpt-oss")
    for bad in ["llama-9", "llama-3.1-8b:0", "llama-3.1-8b:x", "llama-3.1-8b:-5", ":4096"]:
        with pytest.raises(bench.BenchError, match="--model"):
            bench.parse_model(bad)


def test_model_option(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(bench, "run_cli", lambda modules, shapes, *a: seen.append(shapes))
    result = invoke(MODULE, "--shape", "64,32,128", "--model", "gemma-2-2b:1000")
    assert result.exit_code == 0 and seen == [[(64, 32, 128), (1000, 2304, 9216)]]
    result = invoke(MODULE, "--model", "llama-9")
    assert result.exit_code == 2 and "--model" in result.output and "llama-3.1-8b" in result.output
    result = CliRunner().invoke(main, ["bench", "--list-models"])
    assert result.exit_code == 0 and all(name in result.output for name in bench.MODELS)
    assert "E=128 (grouped)" in result.output
    assert CliRunner().invoke(main, ["bench"]).exit_code == 2  # no module, no --list-models


def test_mixture_of_experts_models_need_a_grouped_module(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    result = invoke(MODULE, "--model", "mixtral-8x7b", "--out", str(tmp_path / "r"))
    assert result.exit_code == 2 and "grouped modules" in result.output


def test_routings_cover_every_token():
    for T, E in [(16384, 8), (65536, 128), (1001, 3), (7, 5)]:
        for routing in bench.ROUTINGS:
            sizes = bench.routing_sizes(T, E, routing)
            assert len(sizes) == E and sum(sizes) == T and min(sizes) >= 0
    skewed = bench.routing_sizes(16384, 8, "skewed")
    assert skewed[0] == 8192 and skewed[1] == skewed[2] == 0  # one expert half, two none


def test_grouped_shapes_need_a_grouped_module(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    result = invoke(MODULE, "--shape", "64,32,128,4", "--out", str(tmp_path / "r"))
    assert result.exit_code == 2 and "grouped modules" in result.output
    # tune times a grouped module's grouped forward at T,K,N,E; a dense module has none
    result = CliRunner().invoke(main, ["tune", MODULE, "--shape", "64,32,128,4"])
    assert result.exit_code == 2 and "--grouped" in result.output


def test_grouped_table():
    row = {
        "shape": [65536, 2048, 768, 128],
        "routing": "skewed",
        "activation": "silu",
        "bias": False,
        "ours_fwd_bwd_ms": 2.0,
        "floor_ms": 1.9,
        "titan_fwd_bwd_ms": 3.0,
        "ours_fwd_ms": 0.7,
        "gmm_ms": 0.65,
        "step_gemms_ms": 1.6,
        "ours_kept_mib": 192.0,
        "titan_kept_mib": 288.0,
        "rel_err_vs_titan": 0.0039,
    }
    text = bench.grouped_table([row])
    assert "65536,2048,768,128" in text and "1.053x" in text and "1.50x ours" in text
    assert "192/288" in text and "0.0039" in text and "1.250x" in text  # x the step's GEMMs
    assert "titan/ours per round" in text  # "-": no rounds kept (a report from before v0.23)
    row.update({"titan_fwd_bwd_rounds": [3.0, 3.3], "ours_fwd_bwd_rounds": [2.0, 2.0]})
    assert "1.575 [1.500, 1.650]" in bench.grouped_table([row])


def test_missing_module_and_generation_options(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    result = invoke(str(tmp_path / "nope.py"))
    assert result.exit_code == 2 and "no generated module" in result.output
    result = CliRunner().invoke(main, ["--act", "relu", "bench", MODULE])
    assert result.exit_code == 2 and "--act" in result.output


def test_table_and_json_report():
    row = {
        "shape": [8, 16, 128],
        "activation": "silu",
        "module": "m",
        "cublas_ms": 1.0,
        "floor_ms": 3.0,
        "ours_train_fwd_ms": 1.05,
        "ours_infer_fwd_ms": 1.01,
        "ours_fwd_bwd_ms": 3.3,
        "eager_fwd_bwd_ms": 4.0,
        "bwd_act_gbps": 3900.0,
        "copy_gbps": 4300.0,
        "ours_peak_mib": 10.0,
        "eager_peak_mib": 20.0,
    }
    text = bench.table([row])
    assert "8x16x128" in text and "1.050x" in text and "1.100x floor" in text and "0.91" in text
    assert "10/nan/20" in text
    assert "-/-/-" in text  # the in-network peaks: a report from before them
    row.update({"ours_net_peak_mib": 7.0, "liger_net_peak_mib": 8.0, "eager_net_peak_mib": 12.0})
    assert "7/8/12" in bench.table([row])
    assert "x step GEMMs" in text and "| -" in text  # a report from before the column
    row["step_gemms_ms"] = 3.125
    assert "1.056x" in bench.table([row])
    row["forward_path"] = "pass"  # the forward ran cuBLAS + the pass at this shape
    assert "1.050 (1.050x, pass)" in bench.table([row])
    json.dumps(row)
    # the fused MLP's columns: time vs the 6-GEMM floor, kept activation memory, dgrad vs cuBLAS
    row.update(
        {
            "mlp_floor_ms": 6.0,
            "mlp_fused_fwd_bwd_ms": 6.06,
            "mlp_fused_kept_mib": 200.0,
            "mlp_liger_kept_mib": 300.0,
            "mlp_eager_kept_mib": 400.0,
            "mlp_dgrad_ms": 1.02,
            "mlp_dgrad_cublas_ms": 1.0,
        }
    )
    text = bench.table([row])
    assert "6.060 (1.010x)" in text and "200/300/400" in text and "1.020" in text
    # and the other dgrad path's time (FUSED_DGRAD flipped), when it was measured
    row["mlp_fused_alt_dgrad_fwd_bwd_ms"] = 6.543
    assert "6.543" in bench.table([row])
    # the per-round ratios to Liger (GLU and MLP), when the rounds were kept (v0.23 on)
    assert "ours/liger per round" in text and "FusedMLP/liger MLP per round" in text
    row.update({"ours_fwd_bwd_rounds": [3.3, 3.4], "liger_fwd_bwd_rounds": [3.0, 3.4]})
    row.update({"mlp_fused_fwd_bwd_rounds": [6.0], "mlp_liger_fwd_bwd_rounds": [6.5]})
    text = bench.table([row])
    assert "1.050 [1.000, 1.100]" in text and "0.923 [0.923, 0.923]" in text


def test_launch_paths_count_the_direct_launches():
    direct, fallback = object(), None  # a _DirectLaunch, or CompiledKernel.run's path
    mod = types.SimpleNamespace(_COMPILED={1: ("k", direct), 2: ("k", fallback), 3: ("k", direct)})
    assert bench.launch_paths(mod) == (2, 3)
    assert bench.launch_paths(types.SimpleNamespace()) == (0, 0)  # a module from before


def test_flag_flipped_runs_the_step_with_the_flag_flipped_and_restores_it():
    mod = types.SimpleNamespace(FUSED_DGRAD=False)
    seen = []
    step = bench._flag_flipped(mod, "FUSED_DGRAD", lambda: seen.append(mod.FUSED_DGRAD))
    step()
    assert seen == [True] and mod.FUSED_DGRAD is False

    def boom():
        raise RuntimeError("step failed")

    with pytest.raises(RuntimeError, match="step failed"):
        bench._flag_flipped(mod, "FUSED_DGRAD", boom)()
    assert mod.FUSED_DGRAD is False  # restored even when the step raises


GROUPED_RUN = r"""
import json, sys, time
import torch
sys.path.insert(0, sys.argv[2])
from interpreter_patch import widen_bf16_dot

widen_bf16_dot()
from codegen import bench

torch.cuda.synchronize = lambda *a, **k: None  # no GPU: memory accounting reads 0
torch.cuda.memory_allocated = lambda *a, **k: 0
torch.cuda.empty_cache = lambda *a, **k: None
mod = bench.load_module(sys.argv[1])

def timer(fn):
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3

rows = [bench.bench_grouped_shape(mod, (70, 32, 2 * mod.CHUNK, 4), r, rounds=1, log=lambda s: None,
                                  device="cpu", timer=timer) for r in bench.ROUTINGS]
print(bench.grouped_table(rows))
print("JSON" + json.dumps(rows))
"""


@pytest.mark.parametrize(
    "module", ["glu_silu_bf16_bn128_sm90_grouped", "glu_swiglu_oai_bf16_bn64_sm90_grouped"]
)
def test_grouped_bench_rows_compare_like_with_like(module):
    """The grouped bench end to end under the interpreter (tiny shapes, a wall-clock timer):
    our grouped_glu and the torchtitan-style path it is timed against compute the same thing
    (gate/up not swapped, gpt-oss's biases gathered per expert), in both routings."""
    from pathlib import Path

    from interpreter_patch import run_interpreted

    root = Path(__file__).resolve().parent.parent
    result = run_interpreted(GROUPED_RUN, root / "generated" / f"{module}.py")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = json.loads(result.stdout.split("JSON", 1)[1])
    assert [r["routing"] for r in rows] == list(bench.ROUTINGS)
    for r in rows:
        assert r["rel_err_vs_titan"] < 1e-2, r
        assert r["bias"] == module.startswith("glu_swiglu_oai")
        assert (
            r["floor_ms"] == 3 * r["gmm_ms"]
            and r["step_gemms_ms"] > 0
            and r["ours_fwd_bwd_ms"] > 0
            and r["titan_fwd_bwd_ms"] > 0
        )
    assert "70,32," in result.stdout  # the table


def test_host_us_interleaves_and_takes_medians():
    """A host whose speed drifts (here: each batch slower than the last) biases no
    implementation: they take turns batch by batch, and one slow outlier batch does not move
    the median."""
    from codegen.bench import host_us

    now = [0.0]
    order = []
    cost = {"a": 100e-6, "b": 200e-6}
    batch = [0]

    def step_of(name):
        def step():
            order.append(name)
            drift = 1 + 0.01 * batch[0]  # the host slows down over the run
            spike = 20.0 if (name == "b" and batch[0] == 3) else 1.0  # one descheduled batch
            now[0] += cost[name] * drift * spike

        return step

    def sync():
        batch[0] += 1

    res = host_us(
        {"a": step_of("a"), "b": step_of("b")},
        n=5,
        rounds=7,
        warmup=2,
        sync=sync,
        clock=lambda: now[0],
    )
    assert order[:4] == ["a", "a", "b", "b"]  # warm-up, then batches in turns
    assert order[4:24] == ["a"] * 5 + ["b"] * 5 + ["b"] * 5 + ["a"] * 5  # every other reversed
    assert res["b"] / res["a"] == pytest.approx(2.0, rel=0.02)
    assert 100 <= res["a"] <= 110 and 200 <= res["b"] <= 225


def test_host_us_rounds_keep_each_round_for_paired_ratios():
    """A host that halves its speed between two rounds (perf log v0.44: a VM's rounds went from
    ~350 to ~650 µs mid-run) moves the medians of two steps apart when their rounds fall on
    either side of it; the rounds, kept, pair each step's batch with the other's of the same
    round, and the ratio per round cancels the host's speed."""
    from codegen import bench

    now, batch = [0.0], [0]
    cost = {"ours": 100e-6, "eager": 110e-6}

    def step_of(name):
        def step():
            slow = 2.0 if batch[0] >= 9 else 1.0  # half speed from round 4 on (1 + 2 syncs each)
            now[0] += cost[name] * slow

        return step

    def sync():
        batch[0] += 1

    steps = {name: step_of(name) for name in cost}
    rounds = bench.host_us_rounds(steps, n=4, rounds=7, warmup=1, sync=sync, clock=lambda: now[0])
    assert [len(v) for v in rounds.values()] == [7, 7]
    assert rounds["ours"][:3] == pytest.approx([100.0] * 3)
    assert rounds["ours"][-3:] == pytest.approx([200.0] * 3)
    row = {f"{k}_host_us_rounds": v for k, v in rounds.items()}
    median, low, high = bench.paired_ratio(row, "ours_host_us", "eager_host_us")
    assert (median, low, high) == pytest.approx((100 / 110,) * 3)


def test_host_net_us_rounds_bound_the_time_and_quartiles_pair_the_cycles():
    """host_net_us: at most HOST_NET_CYCLES cycles, at least 20, fewer where the steps are long
    (each cycle synchronised: about n steps' GPU time); paired_quartiles: the per-cycle ratios'
    median and quartiles (their extremes are single descheduled steps)."""
    from codegen import bench

    assert bench.host_net_cycles(0.3, 4) == bench.HOST_NET_CYCLES
    assert bench.host_net_cycles(30.0, 4) == int(bench.HOST_NET_S * 1e3 / 240)
    assert bench.host_net_cycles(1e4, 4) == 20
    # two layers per implementation and cycle, each after the work between, the second timed;
    # the implementations in a shuffled order per cycle, a sync after each cycle
    now, calls, syncs = [0.0], [], [0]
    cost = {"ours": 100e-6, "eager": 125e-6, "between": 1e-3}

    def call(name):
        def run():
            calls.append(name)
            now[0] += cost[name]

        return run

    steps = {"ours": call("ours"), "eager": call("eager")}

    def sync():
        syncs[0] += 1

    got = bench.host_net_us(steps, 8, call("between"), sync=sync, clock=lambda: now[0])
    assert calls[:4] == ["between", "ours", "between", "eager"] and syncs[0] == 1 + 8
    cycles = [calls[4 + 8 * c : 12 + 8 * c] for c in range(8)]
    for c in cycles:
        first, second = c[1], c[5]
        assert c == ["between", first, "between", first, "between", second, "between", second]
    assert {c[1] for c in cycles} == {"ours", "eager"}  # the order is shuffled
    assert got["ours"] == pytest.approx([100.0] * 8) and got["eager"] == pytest.approx([125.0] * 8)
    row = {"a_rounds": [1.0, 2.0, 3.0, 4.0, 50.0], "b_rounds": [1.0] * 5}
    assert bench.paired_quartiles(row, "a", "b") == (3.0, 1.5, 27.0)
    assert bench.paired_quartiles(row, "a", "c") is None
    assert bench.paired_quartiles({"a_rounds": [2.0], "b_rounds": [1.0]}, "a", "b") == (2.0,) * 3


def test_other_layers_runs_an_attention_blocks_forward_and_backward():
    """host_net_us's work between two steps: a small attention block, forward and backward."""
    import torch

    from codegen.bench import other_layers

    block = other_layers(dev="cpu", dtype=torch.float32, T=16, D=32, heads=4)
    block()
    block()  # gradients accumulate into its own leaves, step after step


def test_queued_rounds_time_the_host_to_its_last_call_and_the_wall_to_the_sync():
    """A step whose host waits on the GPU (the MoE loop's event): the host time stops at the
    batch's last return, the wall time at the sync after it; setup runs before each batch, in
    _round_order, outside both."""
    from codegen.bench import queued_rounds

    now = [0.0]
    events = []
    gpu_tail = {"a": 3e-3, "b": 1e-3}  # what the GPU still has queued when the host returns

    def step_of(name):
        def step():
            events.append(name)
            now[0] += 1e-3

        return step

    last = [None]

    def setup(name):
        events.append(f"setup {name}")
        now[0] += 5.0  # never timed
        last[0] = name

    def sync():
        now[0] += gpu_tail[last[0]] if last[0] and events and events[-1] == last[0] else 0.0

    wall, host = queued_rounds(
        {"a": step_of("a"), "b": step_of("b")},
        rounds=2,
        n=2,
        setup=setup,
        sync=sync,
        clock=lambda: now[0],
    )
    assert events == [
        "setup a",
        "a",
        "a",
        "setup b",
        "b",
        "b",
        "setup b",
        "b",
        "b",
        "setup a",
        "a",
        "a",
    ]
    assert host["a"] == pytest.approx([1000.0, 1000.0]) and host["b"] == pytest.approx(
        [1000.0, 1000.0]
    )
    assert wall["a"] == pytest.approx([2.5, 2.5]) and wall["b"] == pytest.approx([1.5, 1.5])


def test_interleaved_rounds_treat_both_neighbours_of_a_heavy_step_alike():
    """On a GPU at its power limit a kernel timed right after a heavy one can run at other
    clocks (perf log v0.18).  With one fixed order the step listed after the heavy one would
    follow it in every round and the one before it never; every other round is reversed, so
    both follow it equally often and two equal implementations come out equal."""
    from codegen.bench import _interleaved

    order = []

    def t(fn, grads):
        slowed = bool(order) and order[-1] == "heavy"  # the clock after a heavy predecessor
        order.append(fn)
        return {"heavy": 10.0}.get(fn, 1.0) * (1.05 if slowed else 1.0)

    steps = {name: (name, None) for name in ("a", "heavy", "b")}
    res = _interleaved(steps, t, rounds=4)
    assert order[:6] == ["a", "heavy", "b", "b", "heavy", "a"]
    assert res["a"] == pytest.approx(res["b"])


def test_floors_are_timed_in_the_rounds_of_the_steps_they_divide(monkeypatch):
    """measure_steps(floors=...): the floor's GEMMs take turns with the steps (listed first, so
    next to the first step), under their own keys; host time and peak only for the steps."""
    from codegen import bench

    order, batches = [], []
    monkeypatch.setattr(
        bench,
        "host_us_rounds",
        lambda steps, n: batches.append(n) or {k: [1.0, 3.0, 2.0] for k in steps},
    )
    monkeypatch.setattr(bench, "peak_mib", lambda step, params: 2.0)

    def t(fn, grads):
        order.append(fn)
        return {"floor_gemm": 1.0, "ours": 3.5, "eager": 4.0}[fn]

    res = {}
    steps = {"ours": ("ours", []), "eager": ("eager", [])}
    bench.measure_steps(steps, "mlp_", t, 2, res, {"floor_gemm": ("floor_gemm", None)})
    assert order == ["floor_gemm", "ours", "eager", "eager", "ours", "floor_gemm"]
    assert res["mlp_floor_gemm_ms"] == 1.0 and res["mlp_ours_fwd_bwd_ms"] == 3.5
    assert "mlp_floor_gemm_host_us" not in res and "mlp_floor_gemm_peak_mib" not in res
    assert res["mlp_ours_host_us"] == 2.0 and res["mlp_eager_peak_mib"] == 2.0  # the median
    assert res["mlp_ours_host_none_us"] == 2.0 and "mlp_floor_gemm_host_none_us" not in res
    assert res["mlp_eager_host_us_rounds"] == res["mlp_ours_host_none_us_rounds"] == [1, 3, 2]
    assert (
        res["mlp_ours_fwd_bwd_rounds"] == [3.5, 3.5] and res["mlp_floor_gemm_rounds"] == [1.0] * 2
    )
    assert batches == [20, 20] and res["mlp_host_batch"] == 20  # short steps: batches of 20


def test_host_batches_of_long_steps_queue_a_bounded_gpu_time():
    """host_us's batches queue at most HOST_BATCH_MS of GPU time (the sync after a batch waits
    it out: 20 steps of a 100-ms MLP step were 2 s per batch), at least HOST_MIN_STEPS steps."""
    from codegen import bench

    assert bench.host_batch(0.3) == bench.host_batch(10.0) == 20
    assert bench.host_batch(70.0) == 6 and bench.host_batch(100.0) == bench.HOST_MIN_STEPS == 4
    assert bench.host_batch(5000.0) == 4 and bench.host_batch(0.0) == 20
    assert bench.host_batch(30.0, n=5) == 5


def test_paired_ratio_divides_within_each_round():
    """ours / Liger per round: a clock that moves both steps of a round alike cancels, where
    the ratio of the two medians would keep it; its spread is printed beside it."""
    from codegen import bench

    row = {
        "ours_fwd_bwd_rounds": [10.0, 11.0, 9.0, 12.0],  # the card slower in rounds 2 and 4
        "liger_fwd_bwd_rounds": [10.0, 11.5, 9.0, 12.6],
    }
    median, lo, hi = bench.paired_ratio(row, "ours_fwd_bwd", "liger_fwd_bwd")
    assert (lo, hi) == (pytest.approx(12.0 / 12.6), 1.0)
    assert median == pytest.approx((11.0 / 11.5 + 1.0) / 2)
    assert bench.paired_ratio(row, "ours_fwd_bwd", "eager_fwd_bwd") is None  # not timed
    assert bench._fmt_paired(row, "ours_fwd_bwd", "liger_fwd_bwd") == "0.978 [0.952, 1.000]"
    assert bench._fmt_paired({}, "ours_fwd_bwd", "liger_fwd_bwd") == "-"  # a report from before


@pytest.fixture
def fake_gpu(monkeypatch):
    """bench.run's view of the machine on a CPU: a CUDA device named "Fake GPU", no cache to
    empty, no plot."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "Fake GPU")
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(bench, "plot", lambda results, path: False)


def test_bench_json_says_how_it_was_timed(monkeypatch, tmp_path, fake_gpu):
    """bench.json's meta names the rounds and the timing method: a report from another version
    of the bench (other floors, other ordering) is not comparable ratio for ratio."""
    from pathlib import Path

    module = Path(__file__).resolve().parent.parent / MODULE
    seen = []

    def fake_shape(mod, shape, do_compile=True, rounds=bench.ROUNDS, log=print):
        seen.append(rounds)
        return {"shape": list(shape), "activation": "silu", "module": "m", "floor_ms": 3.0}

    monkeypatch.setattr(bench, "bench_shape", fake_shape)
    monkeypatch.setattr(bench, "table", lambda rows: "")
    bench.run([module], [(256, 64, 128)], tmp_path, log=lambda s: None)
    meta = json.loads((tmp_path / "bench.json").read_text())["meta"]
    assert meta["gpu"] == "Fake GPU" and meta["rounds"] == bench.ROUNDS == 4 == seen[0]
    assert "reversed" in meta["method"] and "floors" in meta["method"]


def test_resume_keeps_the_rows_measured_and_times_only_the_rest(monkeypatch, tmp_path, fake_gpu):
    """bench --resume: a run cut off part-way (a device's time limit) goes on in another
    process, perhaps on another host of the same GPU model: the rows already in bench.json are
    kept, each row says which run made it, and a file measured otherwise is refused."""
    from pathlib import Path

    module = Path(__file__).resolve().parent.parent / MODULE
    monkeypatch.setattr(bench, "table", lambda rows: "")
    timed, said = [], []

    def fake_shape(mod, shape, do_compile=True, rounds=bench.ROUNDS, log=print):
        timed.append(tuple(shape))
        return {"shape": list(shape), "activation": "silu", "module": mod.SPEC["name"]}

    monkeypatch.setattr(bench, "bench_shape", fake_shape)
    a, b, c = (256, 64, 128), (512, 64, 256), (128, 64, 128)
    hosts = iter(["host-1", "host-2", "host-3", "host-4"])
    monkeypatch.setattr(bench, "host_id", lambda: next(hosts))
    report = tmp_path / "bench.json"

    bench.run([module], [a, b], tmp_path, log=said.append)  # the first run
    bench.run([module], [a, b, c], tmp_path, log=said.append, resume=True)
    assert timed == [a, b, c]  # a and b not again
    data = json.loads(report.read_text())
    assert [(tuple(r["shape"]), r["run"]) for r in data["results"]] == [(a, 0), (b, 0), (c, 1)]
    assert all(r["bench_s"] >= 0 for r in data["results"])  # what each shape took, for planning
    assert data["meta"]["hosts"] == ["host-1", "host-2"]
    assert sum("kept from bench.json" in line for line in said) == 2
    assert data["meta"]["direct_launches"]  # kept where the resumed run compiled nothing

    # without --resume the report is replaced
    bench.run([module], [c], tmp_path, log=said.append)
    data = json.loads(report.read_text())
    assert [tuple(r["shape"]) for r in data["results"]] == [c]
    assert data["meta"]["hosts"] == ["host-3"]

    # measured otherwise (another Triton, another card): refused, the file untouched
    for key, value in [("triton", "0.0"), ("gpu", "Other GPU")]:
        report.write_text(json.dumps({**data, "meta": {**data["meta"], key: value}}))
        before = report.read_text()
        with pytest.raises(bench.BenchError, match=f"--resume: .*{key} '{value}' there"):
            bench.run([module], [a], tmp_path, log=said.append, resume=True)
        assert report.read_text() == before
    report.write_text("{not json")
    with pytest.raises(bench.BenchError, match="not a bench report"):
        bench.run([module], [a], tmp_path, log=said.append, resume=True)

    # a report from before --resume (no hosts): its rows count as one run of an unsaid host
    report.write_text(
        json.dumps(
            {
                "meta": {k: data["meta"][k] for k in bench.RESUME_KEYS},
                "results": [{k: v for k, v in r.items() if k != "run"} for r in data["results"]],
            }
        )
    )
    timed.clear()
    bench.run([module], [a, c], tmp_path, log=said.append, resume=True)
    data = json.loads(report.read_text())
    assert timed == [a] and data["meta"]["hosts"] == [None, "host-4"]
    assert [r.get("run") for r in data["results"]] == [None, 1]


def test_host_id_tells_machines_of_one_name_apart(monkeypatch):
    host = bench.host_id()
    assert host.startswith(bench.platform.node())
    monkeypatch.setattr(bench.platform, "node", lambda: "vm")
    assert bench.host_id().startswith("vm")
    if Path("/proc/sys/kernel/random/boot_id").is_file():  # Linux: the boot's id follows
        boot = Path("/proc/sys/kernel/random/boot_id").read_text()[:8]
        assert bench.host_id().split()[1] == boot


def test_resume_and_time_limit_options_reach_the_bench(monkeypatch):
    seen = []
    monkeypatch.setattr(bench, "run_cli", lambda *args: seen.append(args))
    for flags, resume, limit in [
        ([], False, None),
        (["--resume"], True, None),
        (["--time-limit", "500", "--resume"], True, 500.0),
    ]:
        result = invoke(MODULE, "--shape", "256,64,128", *flags)
        assert result.exit_code == 0, result.output
        assert seen[-1][-2:] == (resume, limit)
    result = invoke(MODULE, "--shape", "256,64,128", "--time-limit", "soon")
    assert result.exit_code == 2 and "soon" in result.output


def test_time_limit_stops_between_shapes_and_resume_goes_on(
    monkeypatch, tmp_path, capsys, fake_gpu
):
    """bench --time-limit: under a device's time limit a run starts no shape it cannot finish
    (bounded from the shapes timed so far by their sizes, the resumed file's included), lists
    what it left, and a --resume run times exactly that."""
    from pathlib import Path
    from types import SimpleNamespace

    module = Path(__file__).resolve().parent.parent / MODULE
    monkeypatch.setattr(bench, "table", lambda rows: "")
    clock = [0.0]
    monkeypatch.setattr(bench, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    # sizes M K N: b is 4x a, c half of a
    cost = {(256, 64, 128): 100.0, (512, 64, 256): 150.0, (128, 64, 128): 40.0}
    timed, said = [], []

    def fake_shape(mod, shape, do_compile=True, rounds=bench.ROUNDS, log=print):
        timed.append(tuple(shape))
        clock[0] += cost[tuple(shape)]
        return {"shape": list(shape), "activation": "silu", "module": mod.SPEC["name"]}

    monkeypatch.setattr(bench, "bench_shape", fake_shape)
    a, b, c = cost
    # a starts (nothing known yet) and ends at 100 s; b may take 4 x 100 s: 500 > 260, not
    # started; c (smaller than a) at most a's 100 s: 200 <= 260, timed
    meta, results, _ = bench.run([module], [a, b, c], tmp_path, log=said.append, time_limit=260)
    assert timed == [a, c] and len(results) == 2
    name = results[0]["module"]
    assert meta["not_started"] == [(name, b, None)]
    assert any("not started" in line and "--time-limit 260" in line for line in said)
    data = json.loads((tmp_path / "bench.json").read_text())
    assert "not_started" not in data["meta"] and len(data["results"]) == 2  # what was measured
    # resumed: a and c kept; b's bound is min(4 x 100, 8 x 40) = 320 s, within 400
    timed.clear()
    clock[0] = 0.0
    meta, results, _ = bench.run(
        [module], [a, b, c], tmp_path, log=said.append, resume=True, time_limit=400
    )
    assert timed == [b] and "not_started" not in meta and len(results) == 3
    assert bench._row_guess((name, (64, 64, 64), None), {}) == 0.0
    data = json.loads((tmp_path / "bench.json").read_text())
    # the resumed file's times count: with only b's 150 s there, a (smaller) may take 150 s
    rows = [r for r in data["results"] if tuple(r["shape"]) == b]
    (tmp_path / "bench.json").write_text(json.dumps({**data, "results": rows}))
    timed.clear()
    clock[0] = 0.0
    meta, _, _ = bench.run([module], [a, b], tmp_path, log=said.append, resume=True, time_limit=120)
    assert timed == [] and meta["not_started"] == [(name, a, None)]
    # the CLI lists what is left
    monkeypatch.setattr(bench, "launch_paths", lambda mod: (0, 0))
    clock[0] = 0.0
    bench.run_cli([str(module)], [a, b], tmp_path, resume=True, time_limit=120)
    assert f"not started (--time-limit): {name} 256x64x128; run again with --resume" in (
        capsys.readouterr().out
    )
    with pytest.raises(bench.BenchError, match="positive"):
        bench.run([module], [a], tmp_path, log=said.append, time_limit=0)


def test_default_shapes_skip_what_a_module_cannot_run(monkeypatch, tmp_path, fake_gpu):
    """The default MoE set has gpt-oss's N = 2880, which a 128-column grouped module cannot
    run: with the defaults it is skipped (and said), a given shape still raises."""
    from pathlib import Path

    module = (
        Path(__file__).resolve().parent.parent / "generated/glu_silu_bf16_bn128_sm90_grouped.py"
    )
    monkeypatch.setattr(bench, "launch_paths", lambda mod: (0, 0))
    timed, said = [], []

    def fake_grouped(mod, shape, routing, rounds=bench.ROUNDS, log=print):
        if shape[2] % mod.CHUNK:
            raise bench.BenchError(f"shape {shape}: N must be a multiple of CHUNK")
        timed.append((shape, routing))
        return {"shape": list(shape), "routing": routing, "module": mod.SPEC["name"]}

    monkeypatch.setattr(bench, "bench_grouped_shape", fake_grouped)
    monkeypatch.setattr(bench, "grouped_table", lambda rows: "")
    shapes = bench.DEFAULT_GROUPED_SHAPES
    bench.run([module], shapes, tmp_path, log=said.append, defaults=True)
    assert {s for s, _ in timed} == {s for s in shapes if s[2] % 128 == 0} != set(shapes)
    assert any("skipped" in line and "2880" in line for line in said)
    with pytest.raises(bench.BenchError, match="CHUNK"):
        bench.run([module], shapes, tmp_path, log=said.append)
    # --routing: only those routings are timed
    timed.clear()
    bench.run([module], shapes[:1], tmp_path, log=said.append, routings=("ragged", "skewed"))
    assert timed == [(shapes[0], "ragged"), (shapes[0], "skewed")]
    # --resume: a grouped row is its (module, shape, routing); only the routing missing is timed
    timed.clear()
    bench.run([module], shapes[:1], tmp_path, log=said.append, resume=True)
    assert timed == [(shapes[0], r) for r in bench.ROUTINGS if r not in ("ragged", "skewed")]
    rows = json.loads((tmp_path / "bench.json").read_text())["grouped"]
    assert sorted(r["routing"] for r in rows) == sorted(bench.ROUTINGS)


@pytest.mark.parametrize(
    "shapes, routings, match",
    [
        ([(64, 32, 128, 4)], ("sorted",), "--routing 'sorted'"),
        ([(64, 32, 128)], ("ragged",), "none"),
    ],
)
def test_bench_routing_is_validated(shapes, routings, match, tmp_path):
    with pytest.raises(bench.BenchError, match=match):
        bench.run([MODULE], shapes, tmp_path, routings=routings)
    if routings != ("sorted",):  # the CLI: a dense run with --routing exits 2 before any GPU use
        result = CliRunner().invoke(
            main, ["bench", MODULE, "--shape", "64,32,128", "--routing", "ragged"]
        )
        assert result.exit_code == 2 and "--routing" in result.output


def test_grads_to_none_clears_every_gradient_before_the_step():
    from codegen.bench import grads_to_none

    a, b = torch.zeros(2, requires_grad=True), torch.zeros(3, requires_grad=True)
    a.grad, b.grad = torch.ones(2), torch.ones(3)
    seen = []
    grads_to_none(lambda: seen.append((a.grad, b.grad)), [a, b])()
    assert seen == [(None, None)]


@pytest.fixture
def fake_cuda_memory(monkeypatch):
    """torch.cuda's memory counters as a dict that a test's step changes: "allocated" (bytes
    allocated now) and "peak" (since the last reset_peak_memory_stats); synchronize does nothing."""
    state = {"allocated": 0, "peak": 0}

    def reset():
        state["peak"] = state["allocated"]

    cuda = torch.cuda
    monkeypatch.setattr(cuda, "synchronize", lambda: None)
    monkeypatch.setattr(cuda, "reset_peak_memory_stats", reset)
    monkeypatch.setattr(cuda, "memory_allocated", lambda: state["allocated"])
    monkeypatch.setattr(cuda, "max_memory_allocated", lambda: state["peak"])
    return state


def test_peak_mib_warm_leaves_out_what_a_first_call_keeps(fake_cuda_memory):
    """A step whose first call allocates a workspace it keeps (1 MiB, as a library's) and whose
    every call peaks at 8 MiB of its own: warm=True reads 8, a first call 9."""
    from codegen import bench

    mib = 2**20
    state = fake_cuda_memory
    state["calls"] = 0

    def step():
        if state["calls"] == 0:
            state["allocated"] += mib  # kept
        state["calls"] += 1
        state["peak"] = max(state["peak"], state["allocated"] + 8 * mib)

    p = torch.zeros(1, requires_grad=True)
    p.grad = torch.ones(1)
    assert bench.peak_mib(step, [p]) == 9.0
    state.update(allocated=0, peak=0, calls=0)
    assert bench.peak_mib(step, [p], warm=True) == 8.0 and state["calls"] == 2
    assert p.grad is None


def test_peak_mib_collects_garbage_before_its_base(monkeypatch, fake_cuda_memory):
    """Memory held only by a reference cycle is freed before the base is read, not inside the
    step: a step that peaks at 8 MiB of its own reads 8, even when 16 MiB of garbage would be
    collected while it runs (v0.40: such a reading was 0.0)."""
    import gc

    from codegen import bench

    mib = 2**20
    state = fake_cuda_memory
    state.update(allocated=16 * mib, peak=16 * mib, garbage=True)

    def collect(*_):
        if state["garbage"]:
            state["garbage"] = False
            state["allocated"] -= 16 * mib
        return 0

    def step():
        collect()  # what the cyclic collector would do mid-step, were the garbage still there
        state["peak"] = max(state["peak"], state["allocated"] + 8 * mib)

    monkeypatch.setattr(gc, "collect", collect)
    assert bench.peak_mib(step, []) == 8.0 and not state["garbage"]


def test_fused_glu_call_holds_the_weight_as_fused_glu_does():
    """Two parts where the module gives FusedGLU two (v0.26; since v0.38 only layers of at least
    PARTS_MIN_WEIGHT), else the packed tensor as one Parameter, passed as FusedGLU.forward
    passes it: (weight, None) (a module from before v0.26: the tensor)."""
    from codegen.bench import fused_glu_call

    calls = []
    mod = types.SimpleNamespace(
        glu=lambda x, w: calls.append(w),
        _weight_split=lambda N: N // 2,
        _weight_parts_wanted=lambda K, N: K * N >= 64,
        _weight_parts=None,
    )
    x = torch.zeros(3, 8)
    small, big = torch.randn(8, 4), torch.randn(16, 8)  # [2N, K]: K N = 16, 64
    f, inputs = fused_glu_call(mod, small, x)
    assert len(inputs) == 2 and torch.equal(inputs[1], small)
    f(*inputs)
    assert type(calls[-1]) is tuple and calls[-1][0] is inputs[1] and calls[-1][1] is None
    old = types.SimpleNamespace(glu=mod.glu)
    f, inputs = fused_glu_call(old, small, x)
    assert f is mod.glu and len(inputs) == 2 and torch.equal(inputs[1], small)
    f, inputs = fused_glu_call(mod, big, x)
    assert len(inputs) == 3 and [t.shape[0] for t in inputs[1:]] == [8, 8]
    f(*inputs)
    assert isinstance(calls[-1], tuple) and torch.equal(torch.cat(calls[-1]), big)
    f, inputs = fused_glu_call(mod, small, x, parts=True)  # the parts below the rule's size
    assert len(inputs) == 3 and [t.shape[0] for t in inputs[1:]] == [4, 4]
    f(*inputs)
    assert isinstance(calls[-1], tuple) and torch.equal(torch.cat(calls[-1]), small)
    del mod._weight_parts_wanted  # a module from before v0.38: parts whatever the size
    assert len(fused_glu_call(mod, small, x)[1]) == 3


def test_cuda_ms_per_call_times_the_calls_between_two_events_after_a_sync(monkeypatch):
    """cuda_ms_per_call (the bench-model timer and the scripts' one): a synchronize, then the
    start event, ``calls`` calls, the end event; the elapsed time divided by the calls."""
    import torch

    from codegen import bench

    log = []

    class Event:
        def __init__(self, enable_timing):
            assert enable_timing
            self.t = None

        def record(self):
            log.append("record")
            self.t = len(log)

        def synchronize(self):
            log.append("end sync")

        def elapsed_time(self, end):
            return 6.0 * (end.t - self.t - 1)  # 6 ms per call logged in between

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: log.append("sync"))
    assert bench.cuda_ms_per_call(lambda: log.append("call"), 3) == 6.0
    assert log == ["sync", "record", "call", "call", "call", "record", "end sync"]


def test_profiled_kernels_lists_each_launch_in_order_and_kernels_by_name_averages_them():
    # on the CPU the profiler's operators stand in for kernels (profiled_kernels(cpu=True))
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    calls = []

    def step():
        calls.append(1)
        torch.mm(a, b)
        torch.sub(a, b)
        torch.sub(a, b)

    events = bench.profiled_kernels(step, 3, warm=2, cpu=True)
    assert len(calls) == 5  # two warm calls, three profiled
    names = [name for name, _ in events if name in ("aten::mm", "aten::sub")]
    assert names == ["aten::mm", "aten::sub", "aten::sub"] * 3  # (mm's own children aside)
    assert all(us >= 0 for _, us in events)
    per = bench.kernels_by_name(events, 3)
    assert [name for name in per if name in ("aten::mm", "aten::sub")] == ["aten::mm", "aten::sub"]
    assert per["aten::mm"][0] == 1.0 and per["aten::sub"][0] == 2.0
    total = sum(us for name, us in events if name == "aten::sub")
    assert per["aten::sub"][1] == pytest.approx(total / 3)
