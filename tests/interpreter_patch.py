"""Test-side workaround shared by the CPU tests that run kernels in subprocesses.

Triton's interpreter computes a bf16 ``tl.dot`` on the operands' raw uint16 bit patterns
(triton-lang/triton#11584, unsupported upstream).  ``widen_bf16_dot()`` makes it widen bf16 dot
operands to fp32 first; the kernels are unchanged.  (Each generated test carries the same patch
as a fixture, since it must run without this repo.)
"""


def widen_bf16_dot():
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    create_dot = interpreter.InterpreterBuilder.create_dot

    def widen(handle):
        if handle.dtype.scalar != tl.bfloat16:
            return handle
        bits = handle.data.astype(np.uint32) << 16
        return interpreter.TensorHandle(bits.view(np.float32), tl.float32)

    def patched(self, a, b, *args, **kwargs):
        return create_dot(self, widen(a), widen(b), *args, **kwargs)

    interpreter.InterpreterBuilder.create_dot = patched
