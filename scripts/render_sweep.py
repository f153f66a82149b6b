"""Render template / tiling variants for scripts/fwd_sweep.py into a folder (default .sweep/).

Arch-table facts (flatten, warp_specialize) are overridden here without touching the table,
so one GPU call can compare them.  Not part of the product; a tool for the perf log.
"""

import dataclasses
import sys
from pathlib import Path

from codegen import spec as spec_mod
from codegen.render import render
from codegen.activations import ACTIVATIONS, Act
from codegen.spec import Arch, Spec

VARIANTS = {
    # name: (arch-table overrides, spec fields)
    "v_silu_noflat": ({"flatten": False}, dict(act="silu")),
    "v_silu_flat": ({"flatten": True}, dict(act="silu")),
    "v_silu_flat_s4": ({"flatten": True}, dict(act="silu", num_stages=4)),
    "v_silu_flat_bm64": ({"flatten": True}, dict(act="silu", bm=64, num_warps=4)),
    "v_silu_flat_g16": ({"flatten": True}, dict(act="silu", group_m=16)),
    "v_silu_ws": ({"flatten": False, "warp_specialize": True}, dict(act="silu")),
    "v_gelu_flat": ({"flatten": True}, dict(act="gelu")),
    "v_gelu_as_flat": ({"flatten": True}, dict(act="gelu")),
}

# GeGLU with erf from Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7), sharing exp(-g^2/2)
# with the pdf, instead of libdevice's erf.
GELU_AS = dataclasses.replace(
    ACTIVATIONS[Act.GELU],
    temps=(
        ("e", "exp(-0.5 * gate * gate)"),
        ("t", "1.0 / (1.0 + 0.3275911 * 0.7071067811865476 * abs(gate))"),
        (
            "q",
            "0.5 * e * t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))",
        ),
        ("cdf", "where(gate >= 0.0, 1.0 - q, q)"),
        ("pdf", "0.3989422804014327 * e"),
    ),
)


def main(out="sweep"):
    out = Path(out)
    out.mkdir(exist_ok=True)
    original = spec_mod.ARCHS[Arch.SM90]
    for name, (overrides, fields) in VARIANTS.items():
        spec_mod.ARCHS[Arch.SM90] = dataclasses.replace(original, **overrides)
        gelu = ACTIVATIONS[Act.GELU]
        if "gelu_as" in name:
            ACTIVATIONS[Act.GELU] = GELU_AS
        try:
            spec = Spec.create(arch="sm90", name=name, **fields)
            text = render(spec, str(out))[f"{name}.py"]
        finally:
            spec_mod.ARCHS[Arch.SM90] = original
            ACTIVATIONS[Act.GELU] = gelu
        (out / f"{name}.py").write_text(text)
        print(out / f"{name}.py")


if __name__ == "__main__":
    main(*sys.argv[1:])
