"""`swiglu-gen compile-check`: compile a generated module's kernels for its GPU target on any
machine, GPU or not (Triton's MLIR passes and ptxas run on the CPU).

The module's own launchers run on small CPU tensors with the launch itself captured, so every
kernel is compiled with the arguments and constexprs its launcher really passes: the training
and inference forwards, the pointer-load fallback, the backward factor kernel, the MLP's dgrad
GEMM and the grouped forward, as the module has them.  A kernel that the installed Triton cannot
compile (a failing pass, "PassManager::run failed") or that needs more shared memory than the
architecture has is an error; registers and spills are reported (ptxas -v).

The GPU machines run one Triton version; this runs whatever the installed one is (CI: the newest
that the project supports), so both ends of the supported range get compiled.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .bench import load_module
from .spec import ARCHS, Arch


class CompileCheckError(Exception):
    """A problem the user must fix (exit status 2)."""


_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "int32": "i32", "int64": "i64"}


@dataclass
class Launch:
    what: str  # the scenario that launched it
    kernel: object  # the JITFunction
    args: tuple
    num_warps: int
    num_stages: int


@dataclass
class Result:
    kernel: str
    what: str
    ok: bool
    shared: int = 0
    usage: str = ""
    error: str = ""
    constexprs: dict = field(default_factory=dict)


def _scenarios(mod):
    """(what, call) pairs covering each launcher of the module on small CPU tensors."""
    import torch

    dt, chunk = mod.DTYPE, mod.CHUNK
    M, K, N, D = 300, 256, 2 * chunk, 192
    Kp = K + 4  # K * itemsize not a multiple of 16 bytes: no TMA, the pointer kernel
    x, xp = torch.randn(M, K).to(dt), torch.randn(M, Kp).to(dt)
    w, wp = torch.randn(2 * N, K).to(dt), torch.randn(2 * N, Kp).to(dt)
    bias = torch.randn(2 * N).to(dt)
    dy = torch.randn(M, N).to(dt)
    yield "forward, training", lambda: mod.glu_forward(x, w, save_factors=True)
    yield "forward, inference", lambda: mod.glu_forward(x, w)
    yield "forward, bias", lambda: mod.glu_forward(x, w, bias=bias, save_factors=True)
    yield "forward, pointer loads", lambda: mod.glu_forward(xp, wp, save_factors=True)
    yield "backward factors", lambda: mod.glu_backward_factors_(dy, torch.randn(M, 2 * N).to(dt))
    if hasattr(mod, "BIAS_ROWS"):  # modules generated since v0.11
        sums = torch.empty(mod._cdiv(M, mod.BIAS_ROWS), 2 * N)
        yield "backward factors + bias sums", lambda: mod._launch_backward(
            dy, torch.randn(M, 2 * N).to(dt), None, N, sums
        )
    if hasattr(mod, "UNFUSED_MAX_ROWS"):  # modules generated since v0.10
        m = min(16, mod.UNFUSED_MAX_ROWS)
        yield "forward, few rows (cuBLAS + pass)", lambda: mod.glu_forward(
            x[:m], w, save_factors=True
        )
    if hasattr(mod, "_launch_dgrad"):
        h = torch.randn(M, 2 * N).to(dt)
        out = torch.empty(M, N, dtype=dt)
        yield "MLP forward (preactivation)", lambda: mod._launch_forward(
            x, w, None, out, h, h, N, mod.WRITE_PREACT
        )
        if hasattr(mod, "_launch_mlp_backward"):  # modules generated since v0.9
            split = len(inspect.signature(mod._launch_mlp_backward).parameters) == 4  # v0.49 on
            yield "MLP backward pass", lambda: mod._launch_mlp_backward(
                torch.randn(M, N).to(dt), h, *((None,) if split else ()), True
            )
        for name, d in (("MLP dgrad", D), ("MLP dgrad, pointer loads", D + 4)):
            dz, wd = torch.randn(M, d).to(dt), torch.randn(d, N).to(dt)
            yield name, lambda dz=dz, wd=wd: mod._launch_dgrad(
                dz, wd, h, torch.empty(M, N, dtype=dt)
            )
    if hasattr(mod, "grouped_glu"):
        E = 3
        offs = torch.tensor([100, 100, M], dtype=torch.int32)
        we, wep = torch.randn(E, 2 * N, K).to(dt), torch.randn(E, 2 * N, Kp).to(dt)
        biases = torch.randn(E, 2 * N).to(dt)
        yield "grouped forward, training", lambda: mod._grouped_forward(x, we, offs, None, True)
        yield "grouped forward, inference", lambda: mod._grouped_forward(x, we, offs, None, False)
        yield "grouped forward, bias", lambda: mod._grouped_forward(x, we, offs, biases, True)
        yield "grouped forward, pointer loads", lambda: mod._grouped_forward(
            xp, wep, offs, None, True
        )
        if hasattr(mod, "_launch_grouped_backward_bias"):  # modules generated since v0.11
            yield "grouped backward + bias sums", lambda: mod._launch_grouped_backward_bias(
                dy, torch.randn(M, 2 * N).to(dt), offs
            )
        if hasattr(mod, "_launch_grouped_mm"):  # since v0.32: where torch._grouped_mm is slow
            g = torch.randn(M, 2 * N).to(dt)
            yield "grouped GEMM (no fast torch._grouped_mm)", lambda: mod._launch_grouped_mm(
                g, we, offs, False
            )
            yield "grouped weight gradient (no fast torch._grouped_mm)", (
                lambda: mod._launch_grouped_mm(g, x, offs, True)
            )


def capture_launches(path: Path) -> tuple[object, list[Launch]]:
    """Load the module and run its launchers with the kernel launch replaced by a recorder."""
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        raise CompileCheckError(
            "TRITON_INTERPRET is set: the kernels would be interpreted, not compiled; unset it"
        )
    mod = load_module(path)
    launches, current = [], [""]

    def record(kernel, grid, key, args, device, num_warps, num_stages, plan=None):
        # TMA descriptors come as (tensor, block shape) since v0.12: the module's own
        # _descriptors makes Triton's objects of them (older modules pass the objects)
        args = mod._descriptors(args) if hasattr(mod, "_descriptors") else tuple(args)
        launches.append(Launch(current[0], kernel, args, num_warps, num_stages))

    mod._launch = record
    mod._check_device = lambda device: 132  # the launchers' device check: no GPU here
    if hasattr(mod, "UNFUSED_MIN_SAVING_US"):  # these small steps would take the GEMM + pass
        mod.UNFUSED_MIN_SAVING_US = float("inf")  # (v0.13's wave rule): the fused kernels run
    for what, call in _scenarios(mod):
        current[0] = what
        call()
    return mod, launches


def _arg_type(value) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        return "*" + _DTYPES[str(value.dtype).split(".")[-1]]
    if type(value).__name__ == "TensorDescriptor":
        block = ", ".join(str(b) for b in value.block_shape)
        return f"tensordesc<{_DTYPES[str(value.base.dtype).split('.')[-1]]}[{block}]>"
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -(2**31) <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    raise CompileCheckError(f"no Triton type for an argument of type {type(value).__name__}")


def _divisible_by_16(value) -> bool:
    import torch

    if isinstance(value, torch.Tensor):
        return value.data_ptr() % 16 == 0
    return type(value) is int and value % 16 == 0


def _ptxas_usage(ptx: str, capability: int) -> str:
    """Registers and spill stores, as ptxas -v reports them (Triton's own ptxas)."""
    from triton.backends.nvidia.compiler import get_ptxas

    try:
        tool = get_ptxas(capability)  # triton >= 3.5
    except TypeError:
        tool = get_ptxas()
    exe = tool.path if hasattr(tool, "path") else tool[0]
    suffix = "a" if capability >= 90 else ""
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "k.ptx"
        src.write_text(ptx)
        res = subprocess.run(
            [
                exe,
                "-v",
                f"--gpu-name=sm_{capability}{suffix}",
                str(src),
                "-o",
                str(Path(d) / "k.o"),
            ],
            capture_output=True,
            text=True,
        )
    text = res.stderr + res.stdout
    regs = re.findall(r"Used (\d+) registers", text)
    spills = re.findall(r"(\d+) bytes spill stores", text)
    return f"{regs[-1] if regs else '?'} registers, {spills[-1] if spills else '?'} B spilled"


def compile_launches(mod, launches: list[Launch], usage: bool = True) -> list[Result]:
    """Compile each distinct (kernel, argument types, constexprs) for the module's arch."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    arch = Arch(mod.ARCH)
    capability = int(arch.value[2:])
    target = GPUTarget("cuda", capability, 32)
    results, seen = [], set()
    for launch in launches:
        fn = launch.kernel
        signature, constexprs, attrs = {}, {}, {}
        for i, (param, value) in enumerate(zip(fn.params, launch.args)):
            # Triton's own specialisation at a launch: constexprs, None and integers equal to
            # 1 are compiled in; 16-byte aligned pointers and integers divisible by 16 are
            # marked so (vectorised loads, cp.async pipelining on sm80 depend on it)
            if param.is_constexpr or value is None or (type(value) is int and value == 1):
                signature[param.name] = "constexpr"
                constexprs[(i,)] = value
                continue
            signature[param.name] = _arg_type(value)
            if _divisible_by_16(value):
                attrs[(i,)] = [["tt.divisibility", 16]]
        key = (fn.__name__, tuple(signature.items()), tuple(constexprs.items()), tuple(attrs))
        if key in seen:
            continue
        seen.add(key)
        named = {fn.params[i[0]].name: v for i, v in constexprs.items()}
        res = Result(fn.__name__, launch.what, True, constexprs=named)
        try:
            src = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
            options = {
                "num_warps": launch.num_warps,
                "num_stages": launch.num_stages,
                **getattr(mod, "_COMPILE_OPTIONS", {}),
            }
            compiled = triton.compile(src, target=target, options=options)
            res.shared = compiled.metadata.shared
            if res.shared > ARCHS[arch].smem_bytes:
                res.ok = False
                res.error = f"needs {res.shared} B of shared memory, {arch.value} has {ARCHS[arch].smem_bytes}"
            if usage:
                res.usage = _ptxas_usage(compiled.asm["ptx"], capability)
        except Exception as e:  # noqa: BLE001 - any compiler failure is the finding
            res.ok = False
            lines = [ln for ln in str(e).splitlines() if ln.strip()]
            res.error = (lines[0] if lines else type(e).__name__)[:300]
        results.append(res)
    return results


def run_cli(modules, usage=True, echo=print) -> bool:
    """`swiglu-gen compile-check`: True when every kernel of every module compiled."""
    import triton

    ok = True
    for path in modules:
        path = Path(path)
        mod, launches = capture_launches(path)
        echo(f"{mod.SPEC['name']} for {mod.ARCH} (triton {triton.__version__})")
        for r in compile_launches(mod, launches, usage):
            ok &= r.ok
            status = "ok  " if r.ok else "FAIL"
            detail = f"{r.shared} B shared" + (f", {r.usage}" if r.usage else "")
            echo(f"  {status} {r.kernel} ({r.what}): {detail if r.ok else r.error}")
    return ok
