"""`swiglu-gen tune`: re-measure a generated module's tilings on this GPU and write the winners back
into the variants file, so that `make generate` reproduces them.

Two groups are tuned, each on its own kernel: the forward GEMM (BLOCK_M, BLOCK_K, NUM_WARPS,
NUM_STAGES, GROUP_M; timed: the training forward, or for a grouped module at T,K,N,E shapes
the grouped training forward in each --routing) and, when asked for (`--kernel dgrad`), the
MLP backward's fused dgrad GEMM (DG_BLOCK_M, DG_BLOCK_N, DG_BLOCK_K, DG_NUM_WARPS,
DG_NUM_STAGES; timed: dY @ W_down with its GLU epilogue; run only with FUSED_DGRAD = True) and,
for a grouped module (`--kernel gmm`), its own grouped GEMMs (GMM_BLOCK_M, GMM_BLOCK_N,
GMM_BLOCK_K, GMM_NUM_WARPS, GMM_NUM_STAGES; timed: the two GEMMs of a grouped backward, grad_x
= g_e @ W[e] and grad_W[e] = g_e^T @ x_e, at T,K,N,E shapes in each --routing; they run where
torch._grouped_mm has no fast path, so tuning them on the GPU that runs them is the point).
The constants are read at call time, so candidates are timed by setting them on the loaded
module: no re-rendering, no autotuning at import.  Each candidate is first checked against the
float32 reference.  The score is the geometric mean over the shapes of the kernel's time relative
to the module's current tiling; a winner must beat it by --min-gain to be written.
"""

from __future__ import annotations

import itertools
import math
import statistics
import sys
import tomllib
from pathlib import Path

from .bench import (
    DEFAULT_GROUPED_SHAPES,
    DEFAULT_SHAPES,
    ROUNDS,
    ROUTINGS,
    BenchError,
    check_routings,
    dgrad_step,
    grouped_case,
    load_module,
)
from .render import tma_tiling
from .spec import DGRAD, GMM, TILING, Spec, SpecError
from .variants import load_variants

CONSTANTS = {
    "bm": "BLOCK_M",
    "bk": "BLOCK_K",
    "num_warps": "NUM_WARPS",
    "num_stages": "NUM_STAGES",
    "group_m": "GROUP_M",
}
GRID = {
    "bm": (64, 128),
    "bk": (32, 64, 128),
    "num_warps": (4, 8),
    "num_stages": (2, 3, 4),
    "group_m": (4, 8, 16, 32),
}
# the MLP backward's dgrad GEMM (dgrad_bn must also divide the variant's bn: checked by Spec)
DGRAD_TILING = DGRAD
DGRAD_CONSTANTS = {
    "dgrad_bm": "DG_BLOCK_M",
    "dgrad_bn": "DG_BLOCK_N",
    "dgrad_bk": "DG_BLOCK_K",
    "dgrad_warps": "DG_NUM_WARPS",
    "dgrad_stages": "DG_NUM_STAGES",
}
DGRAD_GRID = {
    "dgrad_bm": (64, 128),
    "dgrad_bn": (64, 128),
    "dgrad_bk": (32, 64),
    "dgrad_warps": (4, 8),
    "dgrad_stages": (3, 4, 5),
}
# a grouped module's own grouped GEMMs (pointer loads; the arch table's grouped_gemm)
GMM_CONSTANTS = {
    "gmm_bm": "GMM_BLOCK_M",
    "gmm_bn": "GMM_BLOCK_N",
    "gmm_bk": "GMM_BLOCK_K",
    "gmm_warps": "GMM_NUM_WARPS",
    "gmm_stages": "GMM_NUM_STAGES",
}
GMM_GRID = {  # (H200, perf log v0.32-v0.33: 64-row and 64-column tiles lost everywhere;
    # 128x256x64, 8 warps, 4 stages won tune's A/B at E=128 and E=32: sm90's entry)
    "gmm_bm": (64, 128),
    "gmm_bn": (128, 256),
    "gmm_bk": (32, 64),
    "gmm_warps": (4, 8),
    "gmm_stages": (3, 4),
}
GROUPS = {  # group -> (fields, module constants, grid)
    "forward": (TILING, CONSTANTS, GRID),
    "dgrad": (DGRAD_TILING, DGRAD_CONSTANTS, DGRAD_GRID),
    "gmm": (GMM, GMM_CONSTANTS, GMM_GRID),
}


def candidates(spec: Spec, group: str = "forward", only=None) -> list[dict]:
    """Every tiling of the group's grid that is a valid spec for this variant (shared memory,
    registers, dgrad_bn dividing bn).  ``only`` {field: values} replaces the grid's values of
    those fields (`tune --only bm=128`)."""
    fields_, _, grid = GROUPS[group]
    grid = {**grid, **{k: tuple(v) for k, v in (only or {}).items() if k in fields_}}
    out = []
    for values in itertools.product(*(grid[k] for k in fields_)):
        tiling = dict(zip(fields_, values))
        try:
            Spec.create(**{**spec.to_dict(), **tiling})
        except SpecError:
            continue
        out.append(tiling)
    return out


def current_tiling(module, group: str = "forward") -> dict:
    fields_, constants, _ = GROUPS[group]
    return {k: int(getattr(module, constants[k])) for k in fields_}


def apply_tiling(module, tiling: dict) -> None:
    """Set a tiling's constants on the module, and the TMA tiles' K step derived from it
    (TILE_BLOCK_K: what `make generate` would render for that tiling); the module's launch
    plans are dropped."""
    constants = {**CONSTANTS, **DGRAD_CONSTANTS, **GMM_CONSTANTS}
    for k, v in tiling.items():
        setattr(module, constants[k], v)
    if hasattr(module, "TILE_BLOCK_K"):  # TMA modules
        spec = Spec.create(**{**module.SPEC, **current_tiling(module)})
        derived = tma_tiling(spec, spec.arch_info)
        module.TILE_BLOCK_K = derived["tile_block_k"]
    if hasattr(module, "_clear_plans"):  # recorded launches hold the old tiling
        module._clear_plans()


def parse_only(items) -> dict:
    """`--only FIELD=V1,V2` options -> {field: (V1, V2)}; fields of the forward, dgrad or gmm
    grid."""
    known = {f for fields_, _, _ in GROUPS.values() for f in fields_}
    only = {}
    for item in items:
        field, sep, values = item.partition("=")
        field = field.strip()
        if not sep or field not in known:
            raise BenchError(
                f"--only {item!r}: expected FIELD=V1,V2 with FIELD one of {', '.join(sorted(known))}"
            )
        try:
            only[field] = tuple(int(v) for v in values.split(","))
        except ValueError:
            raise BenchError(f"--only {item!r}: the values must be integers") from None
    return only


# module constants that make every forward run the fused kernel
FUSED_ALWAYS = {"UNFUSED_MAX_ROWS": 0, "UNFUSED_MIN_SAVING_US": math.inf}


def pin_fused(module) -> dict:
    """Make every forward of ``module`` run the fused kernel (its few-row and last-wave rules
    off, where it has them); returns the values replaced, for ``restore``."""
    saved = {k: getattr(module, k) for k in FUSED_ALWAYS if hasattr(module, k)}
    for k in saved:
        setattr(module, k, FUSED_ALWAYS[k])
    return saved


def restore(module, saved: dict) -> None:
    for k, v in saved.items():
        setattr(module, k, v)


def tune(
    module, shapes, timer, check=None, log=print, rounds=ROUNDS, group="forward", only=None
) -> tuple[dict, dict, list]:
    """Returns (baseline tiling, best tiling, rows) of ``group`` ("forward" or "dgrad").
    ``timer(module, shape) -> ms`` times the group's kernel with the module's current constants;
    ``check(module) -> bool`` validates.

    Each candidate is timed against the current tiling in interleaved rounds (baseline then
    candidate, then candidate then baseline, ...) and scored by the ratio of the medians, so both
    see the same clocks and neighbours and the current tiling scores 1.00 within noise."""
    spec = Spec.create(**{k: v for k, v in module.SPEC.items()})
    baseline = current_tiling(module, group)
    rows = []
    # the tiling is the fused kernel's: no step of the tune shapes may take the cuBLAS + pass
    # forward (few rows, or a short last wave of tiles), whose time no tiling changes
    saved = pin_fused(module)
    try:
        for tiling in candidates(spec, group, only):
            apply_tiling(module, tiling)
            try:
                if check is not None and not check(module):
                    log(f"  {tiling}: wrong results, skipped")
                    continue
                ratios = []
                for shape in shapes:
                    base, cand = [], []
                    for r in range(rounds):
                        # baseline first in even rounds, the candidate first in odd ones: on an
                        # H200 a kernel's time depends on what ran just before (perf log v0.18)
                        for which in (0, 1) if r % 2 == 0 else (1, 0):
                            apply_tiling(module, (baseline, tiling)[which])
                            (base, cand)[which].append(timer(module, shape))
                    ratios.append((statistics.median(cand), statistics.median(base)))
            except Exception as e:  # noqa: BLE001 - e.g. out of resources: not a candidate here
                log(f"  {tiling}: {type(e).__name__}, skipped")
                continue
            score = math.exp(sum(math.log(c / b) for c, b in ratios) / len(ratios))
            rows.append({"tiling": tiling, "score": score, "ms": [c for c, _ in ratios]})
            per_shape = " / ".join(f"{c / b:.3f}" for c, b in ratios)
            log(f"  {tiling}: {score:.3f}x the current tiling (per shape: {per_shape})")
    finally:
        apply_tiling(module, baseline)
        restore(module, saved)
    rows.sort(key=lambda r: r["score"])
    best = rows[0]["tiling"] if rows else baseline
    return baseline, best, rows


def write_back(variants_path: Path, name: str, tiling: dict) -> str:
    """Set ``tiling`` (and the module's name, so the file name stays) on the [[variant]] of the
    variants file that renders ``name``; returns the new text (written in place)."""
    path = Path(variants_path)
    text = path.read_text(encoding="utf-8")
    entries = tomllib.loads(text)["variant"]
    specs = load_variants(path)
    matches = [i for i, s in enumerate(specs) if s.module_name == name]
    if not matches:
        raise BenchError(f"--variants: no variant in {path} renders {name}.py")
    entry = dict(entries[matches[0]])
    entry.update(tiling)
    entry["name"] = name
    entries[matches[0]] = entry
    header = text[: text.index("[[variant]]")] if "[[variant]]" in text else ""
    blocks = []
    for e in entries:
        lines = ["[[variant]]"] + [f"{k} = {_toml_value(v)}" for k, v in e.items()]
        blocks.append("\n".join(lines))
    new_text = header + "\n\n".join(blocks) + "\n"
    tomllib.loads(new_text)  # must stay valid TOML
    path.write_text(new_text, encoding="utf-8")
    return new_text


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _rel_err(got, ref) -> float:
    """||got - ref|| / ||ref||, got taken to ref's dtype (the checks' float32/float64 references)."""
    return ((got.to(ref.dtype) - ref).norm() / ref.norm()).item()


def _gpu_timer(module, shape):
    import torch
    from triton.testing import do_bench

    M, K, N = shape
    key = (shape, module.DTYPE)
    cache = _gpu_timer.__dict__.setdefault("inputs", {})
    if key not in cache:
        x = torch.randn(M, K, device="cuda", dtype=module.DTYPE)
        w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(module.DTYPE)
        cache[key] = (x, w)
    x, w = cache[key]
    return do_bench(
        lambda: module.glu_forward(x, w, save_factors=True),
        warmup=25,
        rep=100,
        return_mode="median",
    )


def _gpu_dgrad_timer(module, shape):
    """The dgrad GEMM dY [M, K] @ W_down [K, N] with its epilogue, in place on a preactivation."""
    import torch
    from triton.testing import do_bench

    M, K, N = shape
    key = ("dgrad", shape, module.DTYPE)
    cache = _gpu_timer.__dict__.setdefault("inputs", {})
    if key not in cache:
        dy = torch.randn(M, K, device="cuda", dtype=module.DTYPE)
        wd = (torch.randn(K, N, device="cuda") / K**0.5).to(module.DTYPE)
        cache[key] = dgrad_step(module, dy, wd)
    return do_bench(cache[key], warmup=25, rep=100, return_mode="median")


def _gpu_dgrad_check(module):
    import torch

    K, N, M = 512, 4 * module.CHUNK, 1000
    x = torch.randn(M, K, device="cuda", dtype=module.DTYPE, requires_grad=True)
    gate_w = (torch.randn(N, K, device="cuda") / K**0.5).to(module.DTYPE)
    up_w = (torch.randn(N, K, device="cuda") / K**0.5).to(module.DTYPE)
    down_w = (torch.randn(K, N, device="cuda") / N**0.5).to(module.DTYPE)
    dy = torch.randn(M, K, device="cuda", dtype=module.DTYPE)
    module.mlp(x, module.pack_weight(gate_w, up_w), down_w).backward(dy)
    xr = x.detach().float().requires_grad_()
    module.reference_mlp(xr, gate_w, up_w, down_w).backward(dy.float())
    return _rel_err(x.grad, xr.grad) < 1e-2


def _gpu_check(module):
    import torch

    K, N = 512, 4 * module.CHUNK
    x = torch.randn(1000, K, device="cuda", dtype=module.DTYPE)
    gate_w = (torch.randn(N, K, device="cuda") / K**0.5).to(module.DTYPE)
    up_w = (torch.randn(N, K, device="cuda") / K**0.5).to(module.DTYPE)
    out, _ = module.glu_forward(x, module.pack_weight(gate_w, up_w), save_factors=True)
    ref = module.reference(x, gate_w, up_w)
    return _rel_err(out, ref) < 1e-2


def _gpu_grouped_timer(module, case):
    """The grouped training forward (the GEMM, the activation, out and the factors: what the
    bench's "fwd x gmm" column times) at ``case`` = (T, K, N, E, routing)."""
    from triton.testing import do_bench

    return do_bench(grouped_forward_step(module, case), warmup=25, rep=100, return_mode="median")


def grouped_forward_step(module, case, device="cuda"):
    """A callable running the grouped training forward at ``case`` = (T, K, N, E, routing) on
    the bench's inputs for it (seed 0; built once per module, case and device)."""
    key = ("grouped", module.SPEC["name"], tuple(case), device)
    cache = _gpu_timer.__dict__.setdefault("inputs", {})
    if key not in cache:
        c = grouped_case(module, tuple(case[:4]), case[4], device)
        cache[key] = (c.x, c.packed, c.offs, c.packed_b)
    x, packed, offs, bias = cache[key]
    return lambda: module._grouped_forward(x, packed, offs, bias, True)


def grouped_check(module, device="cuda"):
    """The grouped forward (out and both factor halves are what a tiling can break) against a
    float32 per-expert loop of the dense reference, ragged routing with an empty expert and
    experts of fewer rows than a tile (the bench's inputs, grouped_case): relative error of out
    < 1e-2, and the factors give grad_x within 1e-2 of the reference's."""
    import torch

    sizes = [0, 37, 300, 163]
    c = grouped_case(module, (sum(sizes), 256, 2 * module.CHUNK, 4), None, device, sizes)
    out = c.ours(check_offsets=True)
    out.backward(c.dy)
    x = c.ours_leaves[0]
    xr = x.detach().float().requires_grad_()
    refs, start = [], 0
    for e, n in enumerate(sizes):
        biases = (c.b1[e], c.b3[e]) if c.bias else (None, None)
        refs.append(module.reference(xr[start : start + n], c.w1[e], c.w3[e], *biases))
        start += n
    ref = torch.cat(refs)
    ref.backward(c.dy.float())
    return _rel_err(out, ref) < 1e-2 and _rel_err(x.grad, xr.grad) < 1e-2


def _gpu_gmm_timer(module, case):
    """The module's own grouped GEMMs of a grouped backward at ``case`` = (T, K, N, E,
    routing): grad_x = g_e @ W[e] and grad_W[e] = g_e^T @ x_e, back to back."""
    from triton.testing import do_bench

    return do_bench(gmm_step(module, case), warmup=25, rep=100, return_mode="median")


def gmm_step(module, case, device="cuda"):
    """A callable running the two grouped GEMMs of grouped_glu's backward on the module's own
    kernels (_launch_grouped_mm; the bench's inputs at ``case``, grad_de standing in as a
    random [T, 2N]; built once per module, case and device)."""
    import torch

    key = ("gmm", module.SPEC["name"], tuple(case), device)
    cache = _gpu_timer.__dict__.setdefault("inputs", {})
    if key not in cache:
        c = grouped_case(module, tuple(case[:4]), case[4], device)
        g = torch.randn(c.x.shape[0], c.packed.shape[1], device=device, dtype=module.DTYPE)
        cache[key] = (g, c.packed, c.x, c.offs)
    g, packed, x, offs = cache[key]

    def step():
        module._launch_grouped_mm(g, packed, offs, False)
        module._launch_grouped_mm(g, x, offs, True)

    return step


def gmm_check(module, device="cuda"):
    """The module's own grouped GEMMs against a float64 per-expert loop: ragged rows with an
    empty expert and experts of fewer rows than a tile, offsets ending before T (rows of no
    expert get zeros); relative error < 1e-2 for both products, an exact zero for the empty
    expert's weight gradient."""
    import torch

    sizes, T, K, two_n = [0, 37, 300, 163], 520, 96, 4 * module.CHUNK
    gen = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(T, two_n, generator=gen).to(device, module.DTYPE)
    x = torch.randn(T, K, generator=gen).to(device, module.DTYPE)
    w = (torch.randn(len(sizes), two_n, K, generator=gen) / two_n**0.5).to(device, module.DTYPE)
    ends = torch.tensor(sizes).cumsum(0)
    offs = ends.to(device, torch.int32)
    gx = module._launch_grouped_mm(a, w, offs, False).double().cpu()
    gw = module._launch_grouped_mm(a, x, offs, True).double().cpu()
    a64, x64, w64 = (t.double().cpu() for t in (a, x, w))
    ref_x, ref_w, start = torch.zeros(T, K, dtype=torch.float64), torch.zeros_like(w64), 0
    for e, end in enumerate(ends.tolist()):
        ref_x[start:end] = a64[start:end] @ w64[e]
        ref_w[e] = a64[start:end].t() @ x64[start:end]
        start = end
    return _rel_err(gx, ref_x) < 1e-2 and _rel_err(gw, ref_w) < 1e-2 and bool((gw[0] == 0).all())


def gmm_cases(module, cases, log=print, device_type="cuda") -> list:
    """The grouped cases where the module's own grouped GEMMs run: not where its experts are
    big enough for the per-expert cuBLAS loop (_loop_over_experts: E=8-sized experts), whose
    time no tiling changes.  Raises BenchError when no case is left."""
    import torch

    loops = getattr(module, "_loop_over_experts", None)
    device = torch.device(device_type)
    kept = [c for c in cases if loops is None or not loops(*c[:4], device)]
    dropped = sorted({tuple(c[:4]) for c in cases} - {tuple(c[:4]) for c in kept})
    if dropped:
        log(
            "gmm: not timed at " + ", ".join(map(str, dropped)) + " (big experts: the backward "
            "loops over them in cuBLAS, not the grouped GEMMs)"
        )
    if not kept:
        raise BenchError(
            "--kernel gmm: at every --shape the experts are big enough for the per-expert "
            "cuBLAS loop (LOOP_MIN_EXPERT_FLOP), so the grouped GEMMs never run there: give "
            "shapes with smaller experts, e.g. --shape 65536,2048,768,128"
        )
    return kept


def tune_cases(module, shapes, routings) -> tuple[list, str]:
    """What ``run_cli`` times, and how: (cases, kind).  M,K,N shapes time the dense training
    forward (kind "dense"); T,K,N,E shapes a grouped module's grouped training forward, once per
    routing (cases (T, K, N, E, routing), kind "grouped").  No shape: the bench's defaults of
    the module's kind (a grouped module: the MoE shapes)."""
    grouped = hasattr(module, "grouped_glu")
    chunk = int(module.CHUNK)
    if not shapes:  # the defaults this module can run (gpt-oss's N = 2880 needs CHUNK = 64)
        shapes = DEFAULT_GROUPED_SHAPES if grouped else DEFAULT_SHAPES
        shapes = [s for s in shapes if s[2] % chunk == 0]
        if not shapes:
            raise BenchError(f"no default shape has N a multiple of CHUNK = {chunk}: give --shape")
    lengths = {len(s) for s in shapes}
    if lengths - {3, 4}:
        raise BenchError("--shape: M,K,N (dense) or T,K,N,E (grouped modules)")
    if len(lengths) > 1:
        raise BenchError("--shape: all M,K,N or all T,K,N,E, not both in one run")
    if 4 in lengths and not grouped:
        raise BenchError(
            "--shape T,K,N,E times the grouped forward: the module must be generated with "
            "--grouped"
        )
    if 3 in lengths:
        if routings:
            raise BenchError("--routing is for T,K,N,E shapes of a grouped module")
        return [tuple(s) for s in shapes], "dense"
    check_routings(routings)
    for s in shapes:
        if s[2] % chunk:
            raise BenchError(f"--shape {s}: N must be a multiple of CHUNK = {chunk}")
    return [(*s, r) for s in shapes for r in (routings or ROUTINGS)], "grouped"


def run_cli(
    module_path: Path,
    shapes,
    variants_path: Path,
    write: bool,
    min_gain: float,
    groups=("forward",),
    only=(),
    routings=(),
    rounds=ROUNDS,
) -> None:
    """`swiglu-gen tune`: raises BenchError (or the variants file's GenError) for what the user
    must fix."""
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    only = parse_only(only)
    if any(len(s) not in (3, 4) for s in shapes):
        raise BenchError("--shape: M,K,N (dense) or T,K,N,E (grouped modules)")
    try:
        import torch
    except ImportError as e:
        raise BenchError(f"tune needs torch and triton installed ({e})") from None
    if not torch.cuda.is_available():
        raise BenchError(
            "tune needs a CUDA GPU; none is visible (torch.cuda.is_available() is False)"
        )
    module = load_module(module_path)
    if not shapes and groups and set(groups) <= {"dgrad"}:  # the dgrad GEMM alone: dense shapes
        shapes = DEFAULT_SHAPES
    cases, kind = tune_cases(module, list(shapes), tuple(routings))
    if kind == "grouped" and "dgrad" in groups:
        raise BenchError("--kernel dgrad times the dense MLP's dgrad GEMM: give M,K,N shapes")
    if "gmm" in groups and kind != "grouped":
        raise BenchError(
            "--kernel gmm times a grouped module's own grouped GEMMs: a module generated with "
            "--grouped, and --shape T,K,N,E (or none: the MoE shapes)"
        )
    winners = {}
    timers = {
        "forward": (_gpu_timer, _gpu_check),
        "dgrad": (_gpu_dgrad_timer, _gpu_dgrad_check),
        "gmm": (_gpu_gmm_timer, gmm_check),
    }
    if kind == "grouped":
        # a grouped module's constants serve its grouped and its dense forward alike: tuned
        # on MoE shapes, the tiling is the grouped kernel's pick
        timers["forward"] = (_gpu_grouped_timer, grouped_check)
        what = {"forward": "the grouped training forward", "gmm": "the own grouped GEMMs"}
        for group in (g for g in groups if g in what):
            log(f"{group}: timing {what[group]} at " + ", ".join(map(str, cases)))
    for group in groups:
        if group == "dgrad" and not hasattr(module, "DG_BLOCK_M"):
            log("dgrad: this module has no MLP backward (generated before FusedMLP); skipped")
            continue
        if group == "gmm" and not hasattr(module, "GMM_BLOCK_M"):
            log(
                "gmm: this module has no grouped GEMMs of its own (generated before v0.32); skipped"
            )
            continue
        group_cases = cases
        if group == "gmm":
            group_cases = gmm_cases(module, cases, log)
        log(f"{group}:")
        timer, check = timers[group]
        baseline, best, rows = tune(
            module, group_cases, timer, check, log=log, rounds=rounds, group=group, only=only
        )
        gain = 1 - rows[0]["score"] if rows else 0.0
        print(
            f"{group}: current tiling {baseline}; best {best} ({rows[0]['score']:.3f}x)"
            if rows
            else f"{group}: no candidate ran"
        )
        if rows and best != baseline and gain >= min_gain:
            winners.update(best)
        else:
            print(f"{group}: the best tiling is not {min_gain:.0%} faster than the current one")
    if write and winners:
        write_back(variants_path, module.SPEC["name"], winners)
        print(
            f"wrote {winners} for {module.SPEC['name']} into {variants_path}; now run: make generate"
        )
    elif write:
        print("nothing written")
