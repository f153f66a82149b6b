"""Issues 8, 9 and 10's "done when" targets, checked against `swiglu-gen bench` results
(bench.json: a dense module's rows for 8 and 9; a grouped module's MoE rows, balanced and
skewed routing, for 10), shape by shape: each target's measured value, its bound and
whether it holds.  No GPU needed: it reads what the bench wrote.

    python scripts/issue_targets.py BENCH.json [BENCH.json ...]

Ratios to Liger are the medians of the per-round ratios (the bench's interleaved rounds), as the
bench's "ours/liger per round" column; the rest are the bench's medians.  Lines in parentheses
are not targets: the per-round ratios' median [min, max] (to Liger, to eager, to the floors, the
compiled MLP to the eager one, the torchtitan-style path to ours), which say whether a target
met or missed by a few percent is told apart by the run.  A target whose inputs a row lacks
(no Liger, --no-compile) is reported as not measured, never as met.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from codegen.bench import DEFAULT_SHAPES, fmt_ratio, paired_quartiles, paired_ratio  # noqa: E402

BASELINE = {tuple(s) for s in DEFAULT_SHAPES[:4]}  # the four baseline shapes (issue 8 / 9)
SMALL = {(4096, 2048, 5632), (2048, 4096, 1408)}  # issue 8's small bench shapes


def per_round(r, a, b, spread=False):
    """Median over the bench's rounds of a / b (``x_ms``: its rounds are ``x_rounds``; None if
    not measured); ``spread``: the bench's paired_ratio, (median, min, max)."""
    paired = paired_ratio(r, a.removesuffix("_ms"), b.removesuffix("_ms"))
    return paired if spread or paired is None else paired[0]


def per_round_x_floor(r, a, floor):
    """(median, min, max) over the rounds of a / (3 x ``floor``: one GEMM's ms, or the MLP's
    up + down GEMMs, timed in the same rounds), or None where either has no rounds."""
    paired = per_round(r, a, floor, spread=True)
    return None if paired is None else tuple(v / 3 for v in paired)


def ratio(r, a, b):
    """r[a] / r[b] (None if either is missing)."""
    if r.get(a) is None or not r.get(b):
        return None
    return r[a] / r[b]


def _target(issue, name, value, bound, le=True):
    """One line of the report: (issue, target, value, bound, holds); holds None (not measured)
    where the value or the bound is missing; ``le``: the value must be at most the bound, else
    at least."""
    holds = None if value is None or bound is None else (value <= bound if le else value >= bound)
    return issue, name, value, bound, holds


def _spread(issue, what, rounds):
    """An informative line, not a target: ``rounds`` (median, min, max) of ``what`` per round."""
    return issue, f"  ({what}, per round)", rounds, None, None


def targets(r):
    """[(issue, target, value, bound, holds)] for one bench row (holds None: not measured)."""
    shape = tuple(r["shape"])
    out = []

    def check(issue, name, value, bound, le=True):
        out.append(_target(issue, name, value, bound, le))

    # issue 8: the GLU step
    check(8, "host µs <= eager's", r.get("ours_host_us"), r.get("eager_host_us"))
    # ours / eager in each round of host_us_rounds (a host can halve its speed between two
    # rounds, which moves two medians apart: perf log v0.44)
    out.append(_spread(8, "host µs x eager's", paired_ratio(r, "ours_host_us", "eager_host_us")))
    check(
        8,
        "host µs <= eager's, grads None",
        r.get("ours_host_none_us"),
        r.get("eager_host_none_us"),
    )
    none_rounds = paired_ratio(r, "ours_host_none_us", "eager_host_none_us")
    out.append(_spread(8, "host µs x eager's, grads None", none_rounds))
    # in a network: each step after an attention block, in turns (v0.45); the host targets
    # above stay on the batches' medians, this says how a network's steps compare
    net = paired_quartiles(r, "ours_host_net_us", "eager_host_net_us")
    out.append(
        (8, "  (host µs x eager's in a network, per step: median [q1, q3])", net, None, None)
    )
    check(8, "fwd+bwd x eager <= 0.95", ratio(r, "ours_fwd_bwd_ms", "eager_fwd_bwd_ms"), 0.95)
    # how far the rounds agree (a host-bound step moves with the host: perf log v0.41)
    x_eager = per_round(r, "ours_fwd_bwd_ms", "eager_fwd_bwd_ms", spread=True)
    out.append(_spread(8, "fwd+bwd x eager", x_eager))
    x_liger = per_round(r, "ours_fwd_bwd_ms", "liger_fwd_bwd_ms", spread=True)
    x_floor = ratio(r, "ours_fwd_bwd_ms", "floor_ms")
    # <= 0.97x Liger or <= 1.02x the floor, whichever is larger: in floor units
    liger_x_floor = ratio(r, "liger_fwd_bwd_ms", "floor_ms")
    bound = None if liger_x_floor is None else max(0.97 * liger_x_floor, 1.02)
    check(8, "fwd+bwd x floor <= max(0.97 Liger, 1.02 floor)", x_floor, bound)
    out.append(_spread(8, "fwd+bwd x Liger", x_liger))
    if shape in BASELINE:
        check(8, "baseline: fwd+bwd x floor <= 1.03", x_floor, 1.03)
    floor_rounds = per_round_x_floor(r, "ours_fwd_bwd_ms", "floor_gemm_ms")
    out.append(_spread(8, "fwd+bwd x floor", floor_rounds))
    check(
        8,
        "in-network peak <= Liger's (MiB)",
        r.get("ours_net_peak_mib"),
        r.get("liger_net_peak_mib"),
    )
    check(8, "MLP ms <= Liger's MLP", r.get("mlp_ours_fwd_bwd_ms"), r.get("mlp_liger_fwd_bwd_ms"))
    compiled = ratio(r, "mlp_ours_compiled_fwd_bwd_ms", "mlp_ours_fwd_bwd_ms")
    check(8, "compiled MLP x eager MLP <= 1.01", compiled, 1.01)
    compiled_rounds = per_round(r, "mlp_ours_compiled_fwd_bwd_ms", "mlp_ours_fwd_bwd_ms", True)
    out.append(_spread(8, "compiled MLP x eager MLP", compiled_rounds))
    # issue 9: FusedMLP
    fused_x_floor = ratio(r, "mlp_fused_fwd_bwd_ms", "mlp_floor_ms")
    if shape in BASELINE:
        check(9, "baseline: FusedMLP x 6-GEMM floor <= 1.02", fused_x_floor, 1.02)
    fused_rounds = per_round_x_floor(r, "mlp_fused_fwd_bwd_ms", "mlp_floor_gemms_ms")
    out.append(_spread(9, "FusedMLP x 6-GEMM floor", fused_rounds))
    liger_mlp_x_floor = ratio(r, "mlp_liger_fwd_bwd_ms", "mlp_floor_ms")
    need = None if liger_mlp_x_floor is None else (1 / 1.02 if liger_mlp_x_floor > 1.04 else 1.0)
    check(
        9,
        "FusedMLP x Liger MLP (per round) <= bound",
        per_round(r, "mlp_fused_fwd_bwd_ms", "mlp_liger_fwd_bwd_ms"),
        need,
    )
    if shape in SMALL:
        check(
            9,
            "small: FusedMLP <= eager MLP",
            r.get("mlp_fused_fwd_bwd_ms"),
            r.get("mlp_eager_fwd_bwd_ms"),
        )
    kept_liger = ratio(r, "mlp_fused_kept_mib", "mlp_liger_kept_mib")
    kept_eager = ratio(r, "mlp_fused_kept_mib", "mlp_eager_kept_mib")
    check(9, "kept x Liger's <= 0.70", kept_liger, 0.70)
    check(9, "kept x eager's <= 0.55", kept_eager, 0.55)
    check(9, "MLP peak <= Liger's (MiB)", r.get("mlp_fused_peak_mib"), r.get("mlp_liger_peak_mib"))
    check(
        9, "dgrad epilogue x cuBLAS <= 1.04", ratio(r, "mlp_dgrad_ms", "mlp_dgrad_cublas_ms"), 1.04
    )
    return out


ISSUE_10_ROUTINGS = ("balanced", "skewed")  # the issue's routings (the bench adds ragged)


def grouped_targets(r):
    """[(issue, target, value, bound, holds)] for one grouped bench row (issue 10's "done when";
    the errors against float32 are the generated tests', not the bench's)."""
    speedup = 1.07 if r["shape"][3] == 8 else 1.2  # over the torchtitan-style path: E=8; E=32, 128
    return [
        _target(
            10, "fwd+bwd x grouped floor <= 1.05", ratio(r, "ours_fwd_bwd_ms", "floor_ms"), 1.05
        ),
        _spread(10, "fwd+bwd x grouped floor", per_round_x_floor(r, "ours_fwd_bwd_ms", "gmm_ms")),
        _target(
            10,
            f"torchtitan-style / ours >= {speedup}",
            ratio(r, "titan_fwd_bwd_ms", "ours_fwd_bwd_ms"),
            speedup,
            le=False,
        ),
        _spread(
            10,
            "torchtitan-style / ours",
            per_round(r, "titan_fwd_bwd_ms", "ours_fwd_bwd_ms", spread=True),
        ),
        _target(10, "forward x gmm <= 1.05", ratio(r, "ours_fwd_ms", "gmm_ms"), 1.05),
        _spread(10, "forward x gmm", per_round(r, "ours_fwd_ms", "gmm_ms", spread=True)),
        _target(
            10,
            "kept x torchtitan-style's <= 0.70",
            ratio(r, "ours_kept_mib", "titan_kept_mib"),
            0.70,
        ),
    ]


def _fmt(v):
    if v is None:
        return "-"
    if isinstance(v, tuple):  # an informative line's (median, min, max) over the rounds
        return fmt_ratio(v)
    return f"{v:.3f}" if abs(v) < 100 else f"{v:.0f}"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for path in sys.argv[1:]:
        data = json.loads(Path(path).read_text())
        meta = data.get("meta", {})
        print(
            f"{path}: {meta.get('gpu', '?')}, torch {meta.get('torch', '?')}, triton {meta.get('triton', '?')}"
        )
        tally = {True: 0, False: 0, None: 0}
        hosts = meta.get("hosts", [])
        rows = [(r, targets) for r in data.get("results", []) if len(r.get("shape", ())) == 3]
        rows += [
            (r, grouped_targets)
            for r in data.get("grouped", [])
            if r.get("routing") in ISSUE_10_ROUTINGS
        ]
        for r, checks in rows:
            run = r.get("run")  # bench --resume: the rows of one file from several runs
            where = f" (run {run}, host {hosts[run]})" if run is not None and len(hosts) > 1 else ""
            what = r.get("activation", "")
            if "routing" in r:
                what += f"{' + bias' if r.get('bias') else ''}, {r['routing']} routing"
            print(f"  {'x'.join(map(str, r['shape']))} {what}{where}")
            for issue, name, value, bound, holds in checks(r):
                mark = {True: "met", False: "MISSED", None: ""}[holds] if bound is not None else ""
                if bound is not None:
                    tally[holds] += 1
                print(f"    #{issue} {name:52s} {_fmt(value):>9s} {_fmt(bound):>9s}  {mark}")
        print(f"  met {tally[True]}, missed {tally[False]}, not measured {tally[None]}")


if __name__ == "__main__":
    main()
