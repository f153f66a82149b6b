"""swiglu-gen: renders specialised Triton kernels for GLU MLP up-projections."""

__version__ = "0.1.0"
