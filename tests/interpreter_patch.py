"""Test-side workarounds shared by the CPU tests that run kernels in subprocesses.

Triton's interpreter computes a bf16 ``tl.dot`` on the operands' raw uint16 bit patterns
(triton-lang/triton#11584, unsupported upstream), and converts fp32 -> bf16 by truncation where
the GPU rounds to nearest even.  ``widen_bf16_dot()`` makes it widen bf16 dot operands to fp32
first and round fp32 -> bf16 to nearest even; the kernels are unchanged.  (Each generated test
carries the same patch as a fixture, since it must run without this repo.)
"""


def widen_bf16_dot():
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    create_dot = interpreter.InterpreterBuilder.create_dot
    cast_impl = interpreter.InterpreterBuilder.cast_impl

    def widen(handle):
        if handle.dtype.scalar != tl.bfloat16:
            return handle
        bits = handle.data.astype(np.uint32) << 16
        return interpreter.TensorHandle(bits.view(np.float32), tl.float32)

    def patched(self, a, b, *args, **kwargs):
        return create_dot(self, widen(a), widen(b), *args, **kwargs)

    def rounded_cast(self, src, dst_type):
        if src.dtype.scalar != tl.float32 or dst_type.scalar != tl.bfloat16:
            return cast_impl(self, src, dst_type)
        data = np.asarray(src.data, dtype=np.float32)
        bits = data.view(np.uint32).astype(np.uint64)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
        quiet_nan = ((bits >> 16) | 0x40).astype(np.uint16)
        return interpreter.TensorHandle(np.where(np.isnan(data), quiet_nan, rounded), tl.bfloat16)

    interpreter.InterpreterBuilder.create_dot = patched
    interpreter.InterpreterBuilder.cast_impl = rounded_cast


def run_interpreted(code, *args, timeout=600):
    """``python -c code MODULE_ARGS...`` in a fresh process under Triton's interpreter without a
    GPU (TRITON_INTERPRET must be set before triton is first imported), the repository root on
    PYTHONPATH and this folder as the script's ``sys.argv[2]`` (``args[0]`` is its argv[1]);
    returns the CompletedProcess."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    here = Path(__file__).resolve().parent
    env = {
        **os.environ,
        "TRITON_INTERPRET": "1",
        "CUDA_VISIBLE_DEVICES": "",
        "PYTHONPATH": str(here.parent),
    }
    argv = [sys.executable, "-c", code, str(args[0]), str(here), *map(str, args[1:])]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
