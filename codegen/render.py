"""Rendering: a spec -> the text of its module and of its test (black-formatted)."""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import json
from pathlib import Path

import jinja2

from . import __version__
from .activations import substitute, translate
from .spec import Spec, gmm_defaults

MODULE_TEMPLATE = "module.py.j2"
TEST_TEMPLATE = "test_module.py.j2"
BLACK_LINE_LENGTH = 100
# Tiling of the memory-bound backward kernel: [32, 128] elements per program, or CHUNK wide.
BWD_BLOCK_M = 32
BWD_BLOCK_N_MAX = 128
# Rows per program of the backward pass when it also sums grad_de for the bias gradient (of
# one expert in the grouped pass): the partial sums are [M / BIAS_ROWS (+ E), 2N] float32,
# 1/128 of grad_de's bytes.  256 rows beat 64 on the H200 (gpt-oss dense and E=32 grouped,
# perf log v0.11).
BIAS_ROWS = 256
# The grouped forward loads a tile's packed bias before its K loop (hiding the load's latency)
# when the bias row is at most this many columns (2 * bn): measured on an H200 at bn 64, 6-8%
# faster; a 256-column bias held across the loop spills registers (bn 128: 456 B vs 92 B) and
# the same prefetch in the dense bn 128 kernel was 3% slower (docs/perf-log.md v0.9).
BIAS_PREFETCH_MAX_COLUMNS = 128
# The TMA forwards give 64-column chunks tiles of two chunks (a 128 x 256 accumulator, the K
# step of the arch table: the 128-column variants' GEMM shape): grouped gpt-oss E=32 forward
# 1.26 -> 1.10x one torch._grouped_mm (balanced), 1.14 -> 1.00x (skewed) on an H200, outputs
# bit-identical (docs/perf-log.md v0.10).
TILE_COLUMNS = 128


def template_dir():
    """The templates: shipped inside the installed package, or templates/ of a source tree."""
    try:
        return importlib.resources.files("codegen.templates")
    except ModuleNotFoundError:
        return Path(__file__).resolve().parent.parent / "templates"


@functools.lru_cache(maxsize=1)
def _environment() -> tuple[jinja2.Environment, str]:
    root = template_dir()
    sources = {
        p.name: p.read_text(encoding="utf-8")
        for p in sorted(root.iterdir(), key=lambda p: p.name)
        if p.name.endswith(".j2")
    }
    digest = hashlib.sha256()
    for name, text in sources.items():
        digest.update(name.encode() + b"\0" + text.encode() + b"\0")
    env = jinja2.Environment(
        loader=jinja2.DictLoader(sources),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    return env, digest.hexdigest()


def templates_hash() -> str:
    return _environment()[1]


def regenerate_command(spec: Spec) -> str:
    """The command that renders this variant again; the output folder is the one holding the
    file, whatever way -o was spelled (so the text never depends on it)."""
    return " ".join(["swiglu-gen", *spec.cli_args(), "-o", OUT_PLACEHOLDER])


OUT_PLACEHOLDER = "<this file's folder>"


def context(spec: Spec) -> dict:
    act = spec.activation
    info = spec.arch_info

    def kernel_expr(expr):
        return translate(substitute(expr, spec.params), "triton")

    spec_dict = spec.to_dict()
    return {
        "version": __version__,
        "command": regenerate_command(spec),
        "spec_json": json.dumps(spec_dict, sort_keys=True),
        "spec_repr": repr(spec_dict),
        "templates_hash": templates_hash(),
        "name": spec.module_name,
        "act": spec.act.value,
        "glu_name": act.glu_name,
        "description": act.description,
        "temps": [(n, kernel_expr(e)) for n, e in act.temps],
        "out_expr": kernel_expr(act.out),
        "d_left_expr": kernel_expr(act.d_left),
        "d_gate_expr": kernel_expr(act.d_gate),
        "torch_ref": substitute(act.reference_expr, spec.params),
        "uses_functional": "F." in act.reference_expr,
        "params_repr": repr(spec.params),
        "grouped": spec.grouped,
        "hf_act": act.hf_act,
        "math": spec.math.value,
        "sigmoid_max_abs_error": spec.math.sigmoid_max_abs_error,
        "uses_sigmoid": act.uses_sigmoid,
        "narrow_before_store": act.narrow_before_store,
        # the GLU in words: up(x) * act(gate(x)), or the entry's description when it also
        # transforms up (gpt-oss clamps it)
        "formula": (
            f"up(x) * {spec.act.value}(gate(x))" if act.torch_ref is None else act.description
        ),
        "formula_lg": (
            f"left * {spec.act.value}(gate)" if act.torch_ref is None else act.description
        ),
        "torch_dtype": spec.dtype.torch_name,
        "tl_dtype": {"bf16": "tl.bfloat16", "fp16": "tl.float16"}[spec.dtype.value],
        "dtype": spec.dtype.value,
        "arch": spec.arch.value,
        "capability": repr(tuple(info.capability)),
        "tma": info.tma,
        "persistent": info.persistent,
        "warp_specialize": info.warp_specialize,
        "flatten": info.flatten,
        "gemm_tflops": info.gemm_tflops,
        "copy_tbps": info.copy_tbps,
        "bn": spec.bn,
        "bm": spec.bm,
        "bk": spec.bk,
        "num_warps": spec.num_warps,
        "num_stages": spec.num_stages,
        "group_m": spec.group_m,
        **spec.dgrad_tiling,
        **(spec.gmm_tiling or gmm_defaults(spec.arch)),
        "bwd_block_m": BWD_BLOCK_M,
        "bias_rows": BIAS_ROWS,
        "bwd_block_n": min(spec.bn, BWD_BLOCK_N_MAX),
        "bias_before_loop": 2 * spec.bn <= BIAS_PREFETCH_MAX_COLUMNS,
        **tma_tiling(spec, info),
    }


def tma_tiling(spec: Spec, info) -> dict:
    """The TMA forwards' tile: 1 or 2 chunks (2 for 64-column chunks) and its K step; whether
    the grouped kernel loads its bias row before the K loop."""
    chunks = 2 if info.tma and spec.bn * 2 == TILE_COLUMNS else 1
    return {
        "tile_chunks": chunks,
        "tile_block_k": min(spec.bk, info.bk) if chunks == 2 else spec.bk,
        "grouped_bias_before_loop": 2 * spec.bn * chunks <= BIAS_PREFETCH_MAX_COLUMNS,
    }


def black_format(text: str) -> str:
    import black  # imported here: `swiglu-gen bench` on a GPU box needs no black

    mode = black.Mode(line_length=BLACK_LINE_LENGTH, target_versions={black.TargetVersion.PY310})
    return black.format_str(text, mode=mode)


def _render(template: str, ctx: dict) -> str:
    env, _ = _environment()
    return black_format(env.get_template(template).render(**ctx))


def module_filename(spec: Spec) -> str:
    return f"{spec.module_name}.py"


def test_filename(spec: Spec) -> str:
    return f"test_{spec.module_name}.py"


def render(spec: Spec, out_dir: str | None = None) -> dict[str, str]:
    """{file name: text} for the module and its test (``out_dir`` does not change the text)."""
    return dict(_render_cached(spec))


@functools.lru_cache(maxsize=64)
def _render_cached(spec: Spec) -> tuple[tuple[str, str], ...]:
    # black dominates the cost; a spec's text depends only on (spec, templates).
    ctx = context(spec)
    return tuple(
        {
            module_filename(spec): _render(MODULE_TEMPLATE, ctx),
            test_filename(spec): _render(TEST_TEMPLATE, ctx),
        }.items()
    )
