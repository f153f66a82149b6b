"""The spec model: every axis is an enum, hardware facts are a per-arch table, and a
variant's name is its identity (file name, dedup key)."""

from __future__ import annotations

import builtins
import enum
import keyword
import math
import re
import sys
from dataclasses import asdict, dataclass, fields, replace

from .activations import ACTIVATIONS, Act, Activation


class DType(str, enum.Enum):
    BF16 = "bf16"
    FP16 = "fp16"

    @property
    def torch_name(self) -> str:
        return {"bf16": "torch.bfloat16", "fp16": "torch.float16"}[self.value]

    @property
    def itemsize(self) -> int:
        return 2


class Arch(str, enum.Enum):
    SM80 = "sm80"
    SM90 = "sm90"
    SM100 = "sm100"


class Math(str, enum.Enum):
    """How the kernels compute the activation's sigmoid (``sigmoid`` in the registry).

    PRECISE: 1 / (1 + exp(-x)), two special-function (MUFU) instructions per element (ex2 and
    the division's reciprocal), accurate to fp32 rounding in both tails.  APPROX: 0.5 + 0.5
    tanh(x / 2) with the GPU's tanh.approx.f32 (sm75+), one MUFU instruction: the forward's
    epilogue is shorter (H200: training forward 1.6-5.3% faster, inference up to 6%; perf log
    v0.16), at an absolute error of the sigmoid up to ~2.5e-4 (the instruction's 2^-11
    relative error of tanh; 1 + tanh cancels for x << 0, so far tails come out as ~0 rather
    than e^x).  Norm-relative errors of out and the factors stay ~1e-4, below bf16's rounding;
    element by element, the far negative tail can be off by up to |x| times that bound.
    Opt-in."""

    PRECISE = "precise"
    APPROX = "approx"

    @property
    def sigmoid_max_abs_error(self) -> float:
        """The module's SIGMOID_MAX_ABS_ERROR: fp32 rounding, or tanh.approx's 2^-11 halved."""
        return {"precise": 1e-6, "approx": 2.5e-4}[self.value]


@dataclass(frozen=True)
class ArchInfo:
    """Hardware facts and default tiling for one architecture."""

    capability: tuple[int, int]  # minimum torch.cuda.get_device_capability()
    tma: bool  # TMA tensor descriptors (host-side) for loads and stores
    persistent: bool  # one program per SM looping over tiles
    warp_specialize: bool  # producer/consumer warps on the tile loop (triton >= 3.4)
    flatten: bool  # flatten the tile and K loops so the next tile's loads overlap the epilogue
    smem_bytes: int  # shared memory a program may use (opt-in maximum)
    bm: int
    bk: int
    num_warps: int
    num_stages: int
    group_m: int
    # the MLP backward's dgrad GEMM dh = dY @ W_down (+ the GLU-derivative epilogue):
    # (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages); BLOCK_N is capped at the variant's CHUNK
    dgrad: tuple[int, int, int, int, int] = (128, 128, 64, 8, 3)
    # the grouped modules' own grouped GEMMs (pointer loads), run where torch._grouped_mm has
    # no fast path (it syncs there): (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages), the weight
    # gradient's tiles [BLOCK_M, BLOCK_N] with BLOCK_K rows per step
    grouped_gemm: tuple[int, int, int, int, int] = (128, 128, 32, 4, 4)
    # narrow chunks take a deeper K step: (largest bn, bk) pairs, the first that fits wins
    bk_by_bn: tuple[tuple[int, int], ...] = ()
    # what a large bf16/fp16 GEMM and a large copy reach on the arch's usual part (not the
    # datasheet peaks): the forward's choice between the fused kernel and GEMM + pass weighs
    # the fused kernel's idle last wave (GEMM time) against the pass's traffic (bytes)
    gemm_tflops: float = 0.0
    copy_tbps: float = 0.0


ARCHS: dict[Arch, ArchInfo] = {
    # A100: 164 KiB of shared memory per SM, cp.async pipelining, no TMA.
    Arch.SM80: ArchInfo(
        capability=(8, 0),
        tma=False,
        persistent=False,
        warp_specialize=False,
        flatten=False,
        smem_bytes=166912,
        bm=128,
        bk=32,
        num_warps=8,
        num_stages=3,
        group_m=8,
        dgrad=(128, 128, 32, 8, 3),
        grouped_gemm=(128, 128, 32, 4, 4),  # Triton tutorial 03's A100 tiling
        gemm_tflops=280.0,  # A100 SXM: ~90% of 312
        copy_tbps=1.7,
    ),
    # H100/H200: 227 KiB per block, TMA + wgmma.  Measured on an H200 (docs/perf-log.md):
    # BM=128, BN=128 ([128, 256] accumulator), BK=64, 3 stages, 8 warps; GROUP_M=16 beat 8 by
    # 1-3% on all four baseline shapes; a flattened tile loop beat the nested one on three.
    Arch.SM90: ArchInfo(
        capability=(9, 0),
        tma=True,
        persistent=True,
        warp_specialize=False,
        flatten=True,
        smem_bytes=232448,
        bm=128,
        bk=64,
        num_warps=8,
        num_stages=3,
        group_m=16,
        # dgrad: 4 stages beat 3 by 10-15% (scripts/dgrad_sweep*.py, docs/perf-log.md)
        dgrad=(128, 128, 64, 8, 4),
        # `tune --kernel gmm` at E=128 and E=32, balanced and ragged (perf log v0.33): 0.917-0.935x
        # v0.32's pick (128, 128, 32, 4 warps, 4 stages) in bf16 and fp16; used for fp16 or
        # operands torch._grouped_mm does not take
        grouped_gemm=(128, 256, 64, 8, 4),
        # BN=64 ([128, 128] accumulator): BK=128 beat 64 in the forward by 6-11% dense and
        # 18-19% grouped (gpt-oss shapes, perf log v0.8)
        bk_by_bn=((64, 128),),
        # H200, measured: cuBLAS bf16 GEMMs 690-760 TFLOP/s at the power limit, copies ~4.1 TB/s
        gemm_tflops=700.0,
        copy_tbps=4.0,
    ),
    # B200: 228 KiB per SM, TMA + tcgen05 (accumulator in tensor memory), so a deeper
    # pipeline and warp specialisation of the tile loop.
    Arch.SM100: ArchInfo(
        capability=(10, 0),
        tma=True,
        persistent=True,
        warp_specialize=True,
        flatten=False,
        smem_bytes=232448,
        bm=128,
        bk=64,
        num_warps=8,
        num_stages=4,
        group_m=8,
        dgrad=(128, 128, 64, 8, 4),
        gemm_tflops=1800.0,  # B200: ~80% of 2250 dense (not measured here)
        copy_tbps=6.5,
    ),
}

DGRAD = ("dgrad_bm", "dgrad_bn", "dgrad_bk", "dgrad_warps", "dgrad_stages")
# a grouped module's own grouped GEMMs (where torch._grouped_mm has no fast path): only --grouped
GMM = ("gmm_bm", "gmm_bn", "gmm_bk", "gmm_warps", "gmm_stages")
TILING = ("bm", "bk", "num_warps", "num_stages", "group_m")


def tiling_defaults(arch: "Arch", bn: int) -> dict[str, int]:
    """The arch table's forward tiling for a variant of chunk width bn."""
    info = ARCHS[arch]
    bk = info.bk
    if isinstance(bn, int):
        bk = next((k for most, k in info.bk_by_bn if bn <= most), bk)
    return dict(zip(TILING, (info.bm, bk, info.num_warps, info.num_stages, info.group_m)))


def dgrad_defaults(arch: "Arch", bn: int) -> dict[str, int]:
    """The arch table's dgrad tiling for a variant of chunk width bn (BLOCK_N <= CHUNK)."""
    bm, dbn, bk, warps, stages = ARCHS[arch].dgrad
    return dict(zip(DGRAD, (bm, min(dbn, bn) if isinstance(bn, int) else dbn, bk, warps, stages)))


def gmm_defaults(arch: "Arch") -> dict[str, int]:
    """The arch table's tiling of a grouped module's own grouped GEMMs."""
    return dict(zip(GMM, ARCHS[arch].grouped_gemm))


TMA_BOX_MAX = 256  # a TMA box is at most 256 elements along each dimension
MAX_ACC_REGS_PER_THREAD = 128  # fp32 accumulator registers per thread we accept
POW2_RANGES = {k: (16, 256) for k in ("bn", "bm", "bk", "dgrad_bm", "dgrad_bn", "dgrad_bk")}
GMM_POW2_RANGES = {k: (16, 256) for k in ("gmm_bm", "gmm_bn", "gmm_bk")}
NUM_WARPS = (1, 2, 4, 8, 16)
NUM_STAGES = (1, 8)
GROUP_M = (1, 64)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# A module name must not shadow what the module (or its test) imports, nor a standard module:
# the generated file sits in a folder that is on sys.path when it runs.
_SHADOWED = frozenset(sys.stdlib_module_names) | {
    "torch",
    "triton",
    "numpy",
    "pytest",
    "jinja2",
    "click",
    "black",
    "hypothesis",
    "codegen",
    "conftest",
}
PARAMS = ("alpha", "limit")  # spec fields that are activation parameters
NAME_MAX = 200  # file names test_<name>.py and their temp files stay below 255 bytes


def _validate_name(name) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name) or not name.isascii():
        raise SpecError(
            "--name", f"{name!r} must be a Python identifier (ASCII letters, digits, _)"
        )
    if name.startswith("test_") or (name.startswith("__") and name.endswith("__")):
        raise SpecError("--name", f"{name!r} must not start with test_ or be a dunder name")
    if keyword.iskeyword(name) or keyword.issoftkeyword(name) or name in dir(builtins):
        raise SpecError(
            "--name",
            f"{name!r} is a Python keyword or builtin; the module could not be imported as it",
        )
    if name in _SHADOWED:
        raise SpecError(
            "--name", f"{name!r} would shadow the module {name!r} that Python code imports"
        )
    if len(name) > NAME_MAX:
        raise SpecError("--name", f"{len(name)} characters is too long (at most {NAME_MAX})")


class SpecError(ValueError):
    """An invalid spec; ``option`` names the CLI option at fault."""

    def __init__(self, option: str, message: str):
        super().__init__(f"{option}: {message}")
        self.option = option
        self.message = message


@dataclass(frozen=True)
class Spec:
    act: Act = Act.SILU
    dtype: DType = DType.BF16
    bn: int = 128
    arch: Arch = Arch.SM90
    bm: int | None = None
    bk: int | None = None
    num_warps: int | None = None
    num_stages: int | None = None
    group_m: int | None = None
    name: str | None = None
    # parameters of the activation (only for activations that declare them, e.g. swiglu_oai)
    alpha: float | None = None
    limit: float | None = None
    # the module also provides grouped_glu (mixture of experts: one packed weight per expert)
    grouped: bool = False
    # the activation's sigmoid: exact form or one approximate instruction (Math)
    math: Math = Math.PRECISE
    # tiling of the MLP backward's dgrad GEMM (arch-table defaults, dgrad_bn divides bn)
    dgrad_bm: int | None = None
    dgrad_bn: int | None = None
    dgrad_bk: int | None = None
    dgrad_warps: int | None = None
    dgrad_stages: int | None = None
    # tiling of the grouped modules' own grouped GEMMs (arch-table defaults; --grouped only:
    # None in a dense variant)
    gmm_bm: int | None = None
    gmm_bn: int | None = None
    gmm_bk: int | None = None
    gmm_warps: int | None = None
    gmm_stages: int | None = None

    # -- construction ---------------------------------------------------------------
    @classmethod
    def create(cls, **kw) -> "Spec":
        """Build, fill arch defaults, validate.  Raises SpecError."""
        enums = {"act": Act, "dtype": DType, "arch": Arch, "math": Math}
        for key, enum_cls in enums.items():
            if key in kw and kw[key] is not None and not isinstance(kw[key], enum_cls):
                try:
                    kw[key] = enum_cls(kw[key])
                except ValueError:
                    allowed = ", ".join(e.value for e in enum_cls)
                    raise SpecError(
                        f"--{key.replace('_', '-')}",
                        f"{kw[key]!r} is not one of {allowed}",
                    ) from None
        kw = {k: v for k, v in kw.items() if v is not None}
        unknown = set(kw) - {f.name for f in fields(cls)}
        if unknown:
            raise SpecError("spec", f"unknown field(s) {', '.join(sorted(unknown))}")
        spec = cls(**kw)
        params = ACTIVATIONS[spec.act].defaults()
        for key in PARAMS:
            value = getattr(spec, key)
            if key not in params:
                if value is not None:
                    takes = ", ".join(
                        a.value for a, e in ACTIVATIONS.items() if key in e.defaults()
                    )
                    raise SpecError(
                        f"--{key}",
                        f"--act {spec.act.value} has no parameter {key} (used by: {takes})",
                    )
                continue
            if value is None:
                value = params[key]
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value <= 0
            ):
                raise SpecError(f"--{key}", f"{value!r} must be a positive finite number")
            spec = replace(spec, **{key: float(value)})
        filled = tiling_defaults(spec.arch, spec.bn)
        filled.update(dgrad_defaults(spec.arch, spec.bn))
        if spec.grouped is True:  # (validate() names a grouped value that is no bool)
            filled.update(gmm_defaults(spec.arch))
        filled = {
            k: getattr(spec, k) if getattr(spec, k) is not None else v for k, v in filled.items()
        }
        spec = cls(**{**asdict(spec), **filled})
        spec.validate()
        return spec

    # -- derived --------------------------------------------------------------------
    @property
    def arch_info(self) -> ArchInfo:
        return ARCHS[self.arch]

    @property
    def activation(self) -> Activation:
        return ACTIVATIONS[self.act]

    @property
    def is_default_tiling(self) -> bool:
        return {k: getattr(self, k) for k in TILING} == tiling_defaults(self.arch, self.bn)

    @property
    def dgrad_tiling(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in DGRAD}

    @property
    def is_default_dgrad(self) -> bool:
        return self.dgrad_tiling == dgrad_defaults(self.arch, self.bn)

    @property
    def gmm_tiling(self) -> dict[str, int]:
        """The grouped GEMMs' tiling ({} in a dense variant)."""
        return {k: getattr(self, k) for k in GMM} if self.grouped else {}

    @property
    def is_default_gmm(self) -> bool:
        return not self.grouped or self.gmm_tiling == gmm_defaults(self.arch)

    @property
    def slug(self) -> str:
        """The identity derived from the spec (used when --name is not given)."""
        base = f"glu_{self.act.value}_{self.dtype.value}_bn{self.bn}_{self.arch.value}"
        if not self.is_default_tiling:
            base += f"_bm{self.bm}_bk{self.bk}_w{self.num_warps}_s{self.num_stages}_g{self.group_m}"
        if not self.is_default_dgrad:
            base += "_dg{}x{}x{}_w{}_s{}".format(*self.dgrad_tiling.values())
        for key, value in self.non_default_params.items():
            base += f"_{key}{repr(value).replace('.', 'p').replace('-', 'm').replace('+', '')}"
        if self.math is not Math.PRECISE:
            base += f"_{self.math.value}"
        if self.grouped:
            if not self.is_default_gmm:
                base += "_gmm{}x{}x{}_w{}_s{}".format(*self.gmm_tiling.values())
            base += "_grouped"
        return base

    @property
    def params(self) -> dict[str, float]:
        """The activation's parameters of this variant (name -> value)."""
        return {k: getattr(self, k) for k in PARAMS if getattr(self, k) is not None}

    @property
    def non_default_params(self) -> dict[str, float]:
        defaults = self.activation.defaults()
        return {k: v for k, v in self.params.items() if v != defaults[k]}

    @property
    def module_name(self) -> str:
        return self.name or self.slug

    @property
    def smem_estimate(self) -> int:
        """Shared memory of the main loop's ring buffer (+ the TMA store staging tile)."""
        item = self.dtype.itemsize
        ring = self.num_stages * (self.bm + 2 * self.bn) * self.bk * item
        epilogue = self.bm * self.bn * item if self.arch_info.tma else 0
        return ring + epilogue

    @property
    def dgrad_smem_estimate(self) -> int:
        """The dgrad GEMM's ring buffer (+ the TMA staging of its epilogue's three tiles)."""
        item = self.dtype.itemsize
        ring = self.dgrad_stages * (self.dgrad_bm + self.dgrad_bn) * self.dgrad_bk * item
        epilogue = 3 * self.dgrad_bm * self.dgrad_bn * item if self.arch_info.tma else 0
        return ring + epilogue

    @property
    def gmm_smem_estimate(self) -> int:
        """The grouped GEMMs' ring buffer (pointer loads: [BM, BK] and [BK, BN] per stage)."""
        if not self.grouped:
            return 0
        return self.gmm_stages * (self.gmm_bm + self.gmm_bn) * self.gmm_bk * self.dtype.itemsize

    def to_dict(self) -> dict:
        """The whole spec, plain types, in a stable order (goes into the header and SPEC)."""
        d = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if (f.name in PARAMS + GMM and v is None) or (f.name == "grouped" and not v):
                continue
            if f.name == "math" and v is Math.PRECISE:  # the default: names and headers as before
                continue
            d[f.name] = v.value if isinstance(v, enum.Enum) else v
        d["name"] = self.module_name
        return d

    def cli_args(self) -> list[str]:
        """The CLI arguments that regenerate exactly this variant."""
        args = ["--act", self.act.value, "--dtype", self.dtype.value, "--bn", str(self.bn)]
        args += ["--arch", self.arch.value]
        if not self.is_default_tiling:
            args += ["--bm", str(self.bm), "--bk", str(self.bk), "--num-warps", str(self.num_warps)]
            args += ["--num-stages", str(self.num_stages), "--group-m", str(self.group_m)]
        if not self.is_default_dgrad:
            for key, value in self.dgrad_tiling.items():
                args += [f"--{key.replace('_', '-')}", str(value)]
        for key, value in self.non_default_params.items():
            args += [f"--{key}", repr(value)]
        if self.math is not Math.PRECISE:
            args += ["--math", self.math.value]
        if self.grouped:
            args += ["--grouped"]
            if not self.is_default_gmm:
                for key, value in self.gmm_tiling.items():
                    args += [f"--{key.replace('_', '-')}", str(value)]
        if self.name:
            args += ["--name", self.name]
        return args

    # -- validation -----------------------------------------------------------------
    def validate(self) -> None:
        if not isinstance(self.grouped, bool):
            raise SpecError("--grouped", f"{self.grouped!r} must be true or false")
        if not isinstance(self.math, Math):
            allowed = ", ".join(m.value for m in Math)
            raise SpecError("--math", f"{self.math!r} is not one of {allowed}")
        if self.math is Math.APPROX and not self.activation.uses_sigmoid:
            takes = ", ".join(a.value for a, e in ACTIVATIONS.items() if e.uses_sigmoid)
            raise SpecError(
                "--math",
                f"approx changes nothing for --act {self.act.value}: it approximates the "
                f"sigmoid, and {self.act.value}'s math has none (sigmoid-based: {takes})",
            )
        self._check_integers(("bn", "bm", "bk", "num_warps", "num_stages", "group_m", *DGRAD))
        self._check_powers_of_two(POW2_RANGES)
        if self.bn % self.dgrad_bn != 0:
            raise SpecError(
                "--dgrad-bn",
                f"{self.dgrad_bn} must divide --bn {self.bn}: a dgrad tile reads one chunk's [up | gate] columns",
            )
        self._check_warps_and_stages("dgrad_warps", "dgrad_stages")
        self._check_warps_and_stages("num_warps", "num_stages")
        lo, hi = GROUP_M
        if not lo <= self.group_m <= hi:
            raise SpecError("--group-m", f"{self.group_m!r} must be in {lo}..{hi}")
        if self.name is not None:
            _validate_name(self.name)
        self._validate_gmm()
        info = self.arch_info
        if info.tma and 2 * self.bn > TMA_BOX_MAX:
            raise SpecError(
                "--bn",
                f"{self.bn} is too wide for {self.arch.value}: the packed [left|gate] tile has "
                f"2*BN = {2 * self.bn} rows and a TMA box holds at most {TMA_BOX_MAX}; use --bn <= {TMA_BOX_MAX // 2}",
            )
        acc_regs = self.bm * 2 * self.bn // (self.num_warps * 32)
        if acc_regs > MAX_ACC_REGS_PER_THREAD:
            raise SpecError(
                "--bm/--bn/--num-warps",
                f"the [BM, 2*BN] = [{self.bm}, {2 * self.bn}] fp32 accumulator needs {acc_regs} registers "
                f"per thread with {self.num_warps} warps; at most {MAX_ACC_REGS_PER_THREAD} are allowed "
                "(lower --bm or --bn, or raise --num-warps)",
            )
        if self.smem_estimate > info.smem_bytes:
            raise SpecError(
                "--num-stages/--bm/--bn/--bk",
                f"{self.num_stages} stages of [{self.bm}, {self.bk}] + [{2 * self.bn}, {self.bk}] tiles need "
                f"{self.smem_estimate} bytes of shared memory; {self.arch.value} has {info.smem_bytes}",
            )
        dg_regs = self.dgrad_bm * self.dgrad_bn // (self.dgrad_warps * 32)
        if 3 * dg_regs > 2 * MAX_ACC_REGS_PER_THREAD:  # accumulator + the [up | gate] tiles
            raise SpecError(
                "--dgrad-bm/--dgrad-bn/--dgrad-warps",
                f"the dgrad epilogue holds three [{self.dgrad_bm}, {self.dgrad_bn}] fp32 tiles: {3 * dg_regs} "
                f"registers per thread with {self.dgrad_warps} warps (at most {2 * MAX_ACC_REGS_PER_THREAD})",
            )
        if self.dgrad_smem_estimate > info.smem_bytes:
            raise SpecError(
                "--dgrad-stages/--dgrad-bm/--dgrad-bn/--dgrad-bk",
                f"{self.dgrad_stages} stages of [{self.dgrad_bm}, {self.dgrad_bk}] + [{self.dgrad_bk}, "
                f"{self.dgrad_bn}] tiles need {self.dgrad_smem_estimate} bytes of shared memory; "
                f"{self.arch.value} has {info.smem_bytes}",
            )

    def _check_integers(self, keys) -> None:
        """Each field in ``keys`` an int (not a bool)."""
        for key in keys:
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool):
                raise SpecError(f"--{key.replace('_', '-')}", f"{v!r} must be an integer")

    def _check_powers_of_two(self, ranges: dict) -> None:
        """Each field of ``ranges`` ({field: (lo, hi)}) a power of two in lo..hi."""
        for key, (lo, hi) in ranges.items():
            v = getattr(self, key)
            if not isinstance(v, int) or v < lo or v > hi or v & (v - 1):
                raise SpecError(
                    f"--{key.replace('_', '-')}", f"{v!r} must be a power of two in {lo}..{hi}"
                )

    def _check_warps_and_stages(self, warps_field: str, stages_field: str) -> None:
        """A kernel's warps (one of NUM_WARPS) and pipelining stages (in NUM_STAGES)."""
        warps, stages = getattr(self, warps_field), getattr(self, stages_field)
        if warps not in NUM_WARPS:
            raise SpecError(
                f"--{warps_field.replace('_', '-')}",
                f"{warps!r} must be one of {', '.join(map(str, NUM_WARPS))}",
            )
        lo, hi = NUM_STAGES
        if not lo <= stages <= hi:
            raise SpecError(
                f"--{stages_field.replace('_', '-')}", f"{stages!r} must be in {lo}..{hi}"
            )

    def _validate_gmm(self) -> None:
        """The grouped GEMMs' tiling: only in a grouped variant; powers of two, warps, stages,
        the accumulator's registers and the ring buffer's shared memory."""
        if not self.grouped:
            given = [f"--{k.replace('_', '-')}" for k in GMM if getattr(self, k) is not None]
            if given:
                raise SpecError(
                    given[0],
                    "tiles the grouped modules' own grouped GEMMs: only with --grouped",
                )
            return
        self._check_integers(GMM)
        self._check_powers_of_two(GMM_POW2_RANGES)
        self._check_warps_and_stages("gmm_warps", "gmm_stages")
        regs = self.gmm_bm * self.gmm_bn // (self.gmm_warps * 32)
        if regs > MAX_ACC_REGS_PER_THREAD:
            raise SpecError(
                "--gmm-bm/--gmm-bn/--gmm-warps",
                f"the [{self.gmm_bm}, {self.gmm_bn}] fp32 accumulator needs {regs} registers per "
                f"thread with {self.gmm_warps} warps; at most {MAX_ACC_REGS_PER_THREAD} are allowed",
            )
        if self.gmm_smem_estimate > self.arch_info.smem_bytes:
            raise SpecError(
                "--gmm-stages/--gmm-bm/--gmm-bn/--gmm-bk",
                f"{self.gmm_stages} stages of [{self.gmm_bm}, {self.gmm_bk}] + [{self.gmm_bk}, "
                f"{self.gmm_bn}] tiles need {self.gmm_smem_estimate} bytes of shared memory; "
                f"{self.arch.value} has {self.arch_info.smem_bytes}",
            )
