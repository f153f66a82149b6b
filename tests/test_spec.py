import os
import subprocess
import sys

import pytest

from codegen.activations import ACTIVATIONS
from codegen.render import render
from codegen.spec import ARCHS, Arch, Math, Spec, SpecError, tiling_defaults


def test_defaults_come_from_the_arch_table():
    for arch, info in ARCHS.items():
        spec = Spec.create(arch=arch.value)
        assert (spec.bm, spec.bk, spec.num_warps, spec.num_stages, spec.group_m) == (
            info.bm,
            info.bk,
            info.num_warps,
            info.num_stages,
            info.group_m,
        )
        assert spec.is_default_tiling
        assert spec.slug == f"glu_silu_bf16_bn128_{arch.value}"


def test_narrow_chunks_take_the_arch_tables_deeper_k_step():
    # sm90: BN=64 defaults to BK=128 (measured: perf log v0.8); the name carries no tiling
    spec = Spec.create(act="swiglu_oai", bn=64, arch="sm90")
    assert spec.bk == 128 and spec.is_default_tiling
    assert spec.slug == "glu_swiglu_oai_bf16_bn64_sm90"
    assert tiling_defaults(Arch.SM90, 64)["bk"] == 128
    assert tiling_defaults(Arch.SM90, 128)["bk"] == ARCHS[Arch.SM90].bk
    # asking for the table's plain BK is then a non-default tiling, named as such
    plain = Spec.create(act="swiglu_oai", bn=64, arch="sm90", bk=64)
    assert not plain.is_default_tiling
    assert plain.slug == "glu_swiglu_oai_bf16_bn64_sm90_bm128_bk64_w8_s3_g16"
    assert Spec.create(**{k: v for k, v in plain.to_dict().items() if k != "name"}) == plain
    # arches without the entry keep their BK for narrow chunks
    assert Spec.create(bn=64, arch="sm80").bk == ARCHS[Arch.SM80].bk


def test_non_default_tiling_is_part_of_the_name():
    spec = Spec.create(act="gelu", dtype="fp16", bn=64, arch="sm80", num_stages=4)
    assert spec.slug == "glu_gelu_fp16_bn64_sm80_bm128_bk32_w8_s4_g8"
    assert Spec.create(**{k: v for k, v in spec.to_dict().items() if k != "name"}) == spec


def test_cli_args_round_trip():
    for kw in [
        dict(act="relu", arch="sm100"),
        dict(bn=32, bm=64, bk=32, num_warps=4),
        dict(name="mine"),
    ]:
        spec = Spec.create(**kw)
        args = spec.cli_args()
        rebuilt = {}
        for flag, value in zip(args[::2], args[1::2]):
            key = flag[2:].replace("-", "_")
            rebuilt[key] = int(value) if value.isdigit() else value
        assert Spec.create(**rebuilt) == spec


@pytest.mark.parametrize(
    "kw,option,text",
    [
        (dict(bn=100), "--bn", "power of two"),
        (dict(bn=512), "--bn", "16..256"),
        (dict(bn=8), "--bn", "16..256"),
        (dict(bn=256, arch="sm90"), "--bn", "TMA box"),
        (dict(bn=256, arch="sm100"), "--bn", "TMA box"),
        (dict(bm=48), "--bm", "power of two"),
        (dict(bk=512), "--bk", "16..256"),
        (dict(num_warps=3), "--num-warps", "one of"),
        (dict(num_stages=0), "--num-stages", "1..8"),
        (dict(group_m=0), "--group-m", "1..64"),
        (dict(act="swish"), "--act", "silu, gelu"),
        (dict(dtype="fp32"), "--dtype", "bf16, fp16"),
        (dict(arch="sm70"), "--arch", "sm80, sm90"),
        (dict(name="1bad"), "--name", "identifier"),
        (dict(name="test_x"), "--name", "test_"),
        (dict(bm=256, bn=128, num_warps=4), "--bm/--bn/--num-warps", "registers"),
        (dict(arch="sm90", bk=128, num_stages=5), "--num-stages/--bm/--bn/--bk", "shared memory"),
        (dict(dgrad_bn=96), "--dgrad-bn", "power of two"),
        (dict(bn=64, dgrad_bn=128), "--dgrad-bn", "must divide --bn 64"),
        (dict(dgrad_bm=512), "--dgrad-bm", "16..256"),
        (dict(dgrad_bk=8), "--dgrad-bk", "16..256"),
        (dict(dgrad_warps=3), "--dgrad-warps", "one of"),
        (dict(dgrad_stages=9), "--dgrad-stages", "1..8"),
        (dict(dgrad_stages=True), "--dgrad-stages", "integer"),
        (
            dict(dgrad_bm=256, dgrad_bn=128, dgrad_warps=4),
            "--dgrad-bm/--dgrad-bn/--dgrad-warps",
            "registers",
        ),
        (
            dict(dgrad_bk=256, dgrad_stages=8),
            "--dgrad-stages/--dgrad-bm/--dgrad-bn/--dgrad-bk",
            "shared memory",
        ),
        (dict(gmm_bm=64), "--gmm-bm", "only with --grouped"),
        (dict(gmm_stages=3), "--gmm-stages", "only with --grouped"),
        (dict(grouped=True, gmm_bn=96), "--gmm-bn", "power of two"),
        (dict(grouped=True, gmm_bk=8), "--gmm-bk", "16..256"),
        (dict(grouped=True, gmm_warps=3), "--gmm-warps", "one of"),
        (dict(grouped=True, gmm_stages=0), "--gmm-stages", "1..8"),
        (dict(grouped=True, gmm_stages=True), "--gmm-stages", "integer"),
        (
            dict(grouped=True, gmm_bm=256, gmm_bn=256, gmm_warps=8),
            "--gmm-bm/--gmm-bn/--gmm-warps",
            "registers",
        ),
        (
            dict(grouped=True, gmm_bm=256, gmm_bn=256, gmm_bk=128, gmm_warps=16, gmm_stages=2),
            "--gmm-stages/--gmm-bm/--gmm-bn/--gmm-bk",
            "shared memory",
        ),
    ],
)
def test_invalid_specs_name_the_option(kw, option, text):
    with pytest.raises(SpecError) as info:
        Spec.create(**kw)
    assert info.value.option == option
    assert text in info.value.message


def test_bn_256_is_fine_without_tma():
    spec = Spec.create(bn=256, arch="sm80", bm=64, bk=32, num_stages=2)
    assert spec.smem_estimate <= ARCHS[Arch.SM80].smem_bytes


def test_every_arch_default_is_valid_for_every_bn():
    for arch in ARCHS:
        for bn in (16, 32, 64, 128):
            Spec.create(arch=arch.value, bn=bn)


def test_activation_parameters_are_spec_fields():
    """gpt-oss's swiglu_oai takes alpha and limit (defaults 1.702, 7.0); they are part of the
    variant (its name when not the defaults, its regenerate command), and only that entry takes
    them."""
    default = Spec.create(act="swiglu_oai", bn=64)
    assert default.params == {"alpha": 1.702, "limit": 7.0}
    assert default.module_name == "glu_swiglu_oai_bf16_bn64_sm90"
    assert "--limit" not in default.cli_args() and "limit" in default.to_dict()
    glm = Spec.create(act="swiglu_oai", bn=64, limit=10)
    assert glm.limit == 10.0 and glm.module_name == "glu_swiglu_oai_bf16_bn64_sm90_limit10p0"
    assert glm.cli_args()[-2:] == ["--limit", "10.0"]
    assert Spec.create(**{k: v for k, v in glm.to_dict().items() if k != "name"}) == glm
    assert "alpha" not in Spec.create(act="silu").to_dict()


@pytest.mark.parametrize(
    "kw,option",
    [
        ({"act": "silu", "alpha": 1.0}, "--alpha"),
        ({"act": "gelu", "limit": 3.0}, "--limit"),
        ({"act": "swiglu_oai", "limit": 0.0}, "--limit"),
        ({"act": "swiglu_oai", "alpha": -1.0}, "--alpha"),
        ({"act": "swiglu_oai", "alpha": float("inf")}, "--alpha"),
        ({"act": "swiglu_oai", "limit": True}, "--limit"),
        ({"act": "swiglu_oai", "limit": "7"}, "--limit"),
    ],
)
def test_bad_activation_parameters_name_the_option(kw, option):
    with pytest.raises(SpecError) as e:
        Spec.create(**kw)
    assert e.value.option == option


def test_grouped_is_a_spec_axis():
    spec = Spec.create(act="silu", grouped=True)
    assert (
        spec.module_name == "glu_silu_bf16_bn128_sm90_grouped"
        and spec.cli_args()[-1] == "--grouped"
    )
    assert spec.to_dict()["grouped"] is True and "grouped" not in Spec.create().to_dict()
    with pytest.raises(SpecError) as e:
        Spec.create(grouped="yes")
    assert e.value.option == "--grouped"


def test_math_is_a_spec_axis():
    spec = Spec.create(act="silu", math="approx", grouped=True)
    assert spec.math is Math.APPROX
    assert spec.module_name == "glu_silu_bf16_bn128_sm90_approx_grouped"
    assert spec.cli_args()[-3:] == ["--math", "approx", "--grouped"]
    assert spec.to_dict()["math"] == "approx"
    # the default leaves names, headers and CLI arguments as they were
    plain = Spec.create(act="silu", math="precise")
    assert plain == Spec.create(act="silu") and plain.module_name == "glu_silu_bf16_bn128_sm90"
    assert "math" not in plain.to_dict() and "--math" not in plain.cli_args()
    assert Spec.create(**{**spec.to_dict(), "name": None}) == spec  # the header's spec rebuilds it


@pytest.mark.parametrize("act", ["relu", "gelu"])
def test_approx_math_is_refused_where_it_changes_nothing(act):
    with pytest.raises(SpecError) as e:
        Spec.create(act=act, math="approx")
    assert e.value.option == "--math" and "changes nothing" in e.value.message
    assert not ACTIVATIONS[Spec.create(act=act).act].uses_sigmoid


def test_every_sigmoid_activation_takes_approx_math():
    for act, entry in ACTIVATIONS.items():
        if entry.uses_sigmoid:
            bn = 64 if act.value == "swiglu_oai" else 128
            assert Spec.create(act=act.value, bn=bn, math="approx").slug.endswith("_approx")
    with pytest.raises(SpecError) as e:
        Spec.create(math="fast")
    assert e.value.option == "--math" and "precise, approx" in e.value.message


def test_dgrad_tiling_defaults_names_and_cli_args():
    for arch, info in ARCHS.items():
        for bn in (32, 64, 128):
            spec = Spec.create(arch=arch.value, bn=bn)
            bm, dbn, bk, warps, stages = info.dgrad
            assert spec.dgrad_tiling == {
                "dgrad_bm": bm,
                "dgrad_bn": min(dbn, bn),
                "dgrad_bk": bk,
                "dgrad_warps": warps,
                "dgrad_stages": stages,
            }
            assert spec.is_default_dgrad and "_dg" not in spec.slug
    spec = Spec.create(act="silu", dgrad_stages=5, dgrad_bn=64)
    assert spec.slug == "glu_silu_bf16_bn128_sm90_dg128x64x64_w8_s5"
    args = spec.cli_args()
    assert (
        args[args.index("--dgrad-stages") + 1] == "5" and args[args.index("--dgrad-bn") + 1] == "64"
    )
    rebuilt = {}
    for flag, value in zip(args[::2], args[1::2]):
        rebuilt[flag[2:].replace("-", "_")] = int(value) if value.isdigit() else value
    assert Spec.create(**rebuilt) == spec
    # the dgrad tiling's defaults follow the chunk width: bn=64 caps dgrad_bn at 64
    assert Spec.create(bn=64).dgrad_bn == 64


def test_grouped_gemm_tiling_defaults_names_and_cli_args():
    """The grouped modules' own grouped GEMMs: arch-table defaults in a grouped variant (not
    named), nothing in a dense one (its SPEC and header unchanged); a non-default tiling names
    the variant and is in its regenerate command."""
    for arch, info in ARCHS.items():
        dense = Spec.create(arch=arch.value)
        assert dense.gmm_tiling == {} and not any(k.startswith("gmm") for k in dense.to_dict())
        spec = Spec.create(arch=arch.value, grouped=True)
        assert tuple(spec.gmm_tiling.values()) == info.grouped_gemm
        assert spec.is_default_gmm and "_gmm" not in spec.slug and "--gmm-bm" not in spec.cli_args()
    tiling = dict(gmm_bm=64, gmm_bn=256, gmm_bk=32, gmm_warps=8, gmm_stages=5)
    spec = Spec.create(act="silu", grouped=True, **tiling)
    assert spec.slug == "glu_silu_bf16_bn128_sm90_gmm64x256x32_w8_s5_grouped"
    args = spec.cli_args()
    assert args[args.index("--gmm-stages") + 1] == "5" and args[args.index("--gmm-bn") + 1] == "256"
    rebuilt, i = {}, 0
    while i < len(args):  # flags with a value, and the --grouped flag
        key = args[i][2:].replace("-", "_")
        if key == "grouped":
            rebuilt[key], i = True, i + 1
            continue
        value = args[i + 1]
        rebuilt[key], i = (int(value) if value.isdigit() else value), i + 2
    assert Spec.create(**rebuilt) == spec
    # a grouped spec read back from its SPEC dict (what tune does) is the same spec
    assert Spec.create(**spec.to_dict()).gmm_tiling == spec.gmm_tiling


@pytest.mark.parametrize(
    "options",
    [
        {"act": "gelu_tanh", "dtype": "fp16", "bn": 64, "arch": "sm80"},
        {"act": "swiglu_oai", "bn": 64, "arch": "sm90"},
        {"act": "sigmoid", "bn": 64, "arch": "sm90", "grouped": True},
    ],
    ids=lambda o: o["act"],
)
def test_approx_variants_of_other_activations_pass_their_tests(tmp_path, options):
    """The checked-in approx variant is SwiGLU; the other sigmoid activations (another dtype,
    the pointer kernels, the clamps, the grouped kernels) rendered with --math approx pass the
    generated correctness, large-gate and element-wise sigmoid-bound tests under the
    interpreter."""
    spec = Spec.create(**options, math="approx")
    for name, text in render(spec, str(tmp_path)).items():
        (tmp_path / name).write_text(text)
    tests = "sigmoid_error or large_gates or forward_backward_matches_reference or grouped_matches"
    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", tests],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "failed" not in result.stdout
