"""What the split factor buffers cost a big step, against Liger (GPU).

Big steps (>= LOW_PEAK_MIN_FLOP) run glu's backward as two autograd nodes and, where that lowers
the in-network peak by >= SPLIT_MIN_SAVING, keep the factors of the two halves of the hidden
units in separate buffers (more GEMM calls and a copy of grad_W: README "Peak memory").  Per
shape: fwd+bwd ms of the module as shipped, with SPLIT_FACTORS = False (two nodes, one buffer),
with LOW_PEAK_MIN_FLOP = inf (one node, one buffer), and Liger's SwiGLU (F.linear x2 +
LigerSiLUMulFunction) -- all in the same rounds, every other round reversed (medians of 6) --
and each one's in-network peak (dy made by the next node, as codegen.bench.in_network_step).

    PYTHONPATH=. python scripts/ab_split.py [M,K,N ...]

Results: $OUT/ab_split.json (or build/).  Needs liger-kernel for the Liger column.
"""

import math
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import (  # noqa: E402
    _interleaved,
    _liger,
    in_network_step,
    load_module,
    peak_mib,
    write_results,
)

MODULE = "generated/glu_silu_bf16_bn128_sm90.py"
SHAPES = [(8192, 4096, 14336), (11136, 3584, 14336), (12288, 4096, 11008)]


def with_flags(mod, fn, **flags):
    def run(*args):
        saved = {k: getattr(mod, k) for k in flags}
        for k, v in flags.items():
            setattr(mod, k, v)
        try:
            return fn(*args)
        finally:
            for k, v in saved.items():
                setattr(mod, k, v)

    return run


def main():
    shapes = [tuple(map(int, a.split(","))) for a in sys.argv[1:]] or SHAPES
    mod = load_module(MODULE)
    liger = _liger("silu")
    res = {}
    for M, K, N in shapes:
        torch.manual_seed(0)
        x = torch.randn(M, K, device="cuda", dtype=mod.DTYPE, requires_grad=True)
        gate_w = (torch.randn(N, K, device="cuda") / K**0.5).to(mod.DTYPE)
        up_w = (torch.randn(N, K, device="cuda") / K**0.5).to(mod.DTYPE)
        w = mod.pack_weight(gate_w, up_w).requires_grad_()
        gl, ul = gate_w.requires_grad_(), up_w.requires_grad_()
        dy = torch.randn(M, N, device="cuda", dtype=mod.DTYPE)
        calls = {
            "shipped": (mod.glu, (x, w)),
            "one_buffer": (with_flags(mod, mod.glu, SPLIT_FACTORS=False), (x, w)),
            "one_node": (with_flags(mod, mod.glu, LOW_PEAK_MIN_FLOP=math.inf), (x, w)),
        }
        if liger is not None:
            calls["liger"] = (liger, (x, gl, ul))

        def step(fn, inputs):
            def run():
                fn(*inputs).backward(dy)
                for t in inputs:
                    t.grad = None

            return run

        steps = {k: (step(f, a), None) for k, (f, a) in calls.items()}
        t = lambda fn, _: do_bench(fn, warmup=25, rep=100, return_mode="median")  # noqa: E731
        ms = _interleaved(steps, t, 6)
        peaks = {k: peak_mib(in_network_step(f, a, dy), list(a)) for k, (f, a) in calls.items()}
        split_n = mod._split_point(M, N, K)
        row = {"ms": ms, "in_network_peak_mib": peaks, "split": split_n < N}
        res[f"{M}x{K}x{N}"] = row
        print(
            f"{M}x{K}x{N} (split {'on' if split_n < N else 'off'}):",
            " ".join(f"{k} {ms[k]:.3f} ms / {peaks[k]:.0f} MiB;" for k in calls),
            flush=True,
        )
        del x, w, gl, ul, dy, gate_w, up_w, calls, steps
        torch.cuda.empty_cache()
    write_results("ab_split.json", res)


if __name__ == "__main__":
    main()
