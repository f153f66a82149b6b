"""What the low-peak paths cost a step, against Liger and eager PyTorch (GPU).

Big steps (>= LOW_PEAK_MIN_FLOP) run glu's backward as two autograd nodes and, where that lowers
the in-network peak by >= SPLIT_MIN_SAVING to within SPLIT_MAX_OVER_FLOOR of 3MN (v0.21), keep the
factors of the two halves of the hidden units in separate buffers (more GEMM calls and a copy of
grad_W: README "Peak memory").  Per
shape, the module as shipped and each path forced: one node (LOW_PEAK_MIN_FLOP = TWO_NODES_MIN_FLOP = inf), two
nodes with one buffer (LOW_PEAK_MIN_FLOP = 0, SPLIT_FACTORS = False), the low-peak rule as a big
step gets it (LOW_PEAK_MIN_FLOP = 0: two nodes, split where it saves); since v0.26 the weight in
two parts as FusedGLU holds it (glu(x, (weight_a, weight_b)): "parts", one tensor's rows, and
"parts_apart", two allocations: the kernels then read two weights; "parts_low_peak": the parts
under the low-peak rule, "parts_split_any": split wherever it saves anything, v0.27; the parts at any size, also below
PARTS_MIN_WEIGHT, where FusedGLU holds one Parameter since v0.38), beside Liger's SwiGLU
(F.linear x2 + LigerSiLUMulFunction) and eager PyTorch: fwd+bwd ms (same rounds, every other
round reversed, medians of 6), host µs per step (codegen.bench.host_us, interleaved), and
peaks: in a network (dy made by the next node, as codegen.bench.in_network_step) and with dy
held by the caller.

    PYTHONPATH=. python scripts/ab_split.py [MODULE.py] [M,K,N ...]

Results: $OUT/ab_split.json (or build/).  Needs liger-kernel for the Liger column.
"""

import math
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import (  # noqa: E402
    _eager_glu,
    _interleaved,
    host_us,
    _liger,
    fused_glu_call,
    glu_step_inputs,
    in_network_step,
    script_args,
    peak_mib,
    with_constants,
    write_results,
)

MODULE = "generated/glu_silu_bf16_bn128_sm90.py"
SHAPES = [(8192, 4096, 14336), (11136, 3584, 14336), (12288, 4096, 11008)]


def main():
    mod, shapes = script_args(sys.argv[1:], MODULE, SHAPES)
    liger = _liger(mod.ACTIVATION)
    res = {}
    for M, K, N in shapes:
        x, gate_w, up_w, dy = glu_step_inputs(mod, M, K, N)
        w = mod.pack_weight(gate_w, up_w).requires_grad_()
        gl, ul = gate_w.requires_grad_(), up_w.requires_grad_()
        calls = {
            "shipped": (mod.glu, (x, w)),
            "one_node": (
                with_constants(
                    mod.glu, mod, LOW_PEAK_MIN_FLOP=math.inf, TWO_NODES_MIN_FLOP=math.inf
                ),
                (x, w),
            ),
            "two_nodes": (
                with_constants(mod.glu, mod, LOW_PEAK_MIN_FLOP=0, SPLIT_FACTORS=False),
                (x, w),
            ),
            "low_peak_rule": (with_constants(mod.glu, mod, LOW_PEAK_MIN_FLOP=0), (x, w)),
        }
        if liger is not None:
            calls["liger"] = (liger, (x, gl, ul))
        if hasattr(mod, "_weight_split"):  # v0.26: the weight in two parts, as FusedGLU's
            glu_parts, (_, *parts) = fused_glu_call(mod, w, x, parts=True)
            apart = [torch.nn.Parameter(p.detach().clone()) for p in parts]
            calls["parts"] = (glu_parts, (x, *parts))
            calls["parts_low_peak"] = (
                with_constants(glu_parts, mod, LOW_PEAK_MIN_FLOP=0),
                (x, *parts),
            )
            anywhere = dict(LOW_PEAK_MIN_FLOP=0, SPLIT_MIN_SAVING=0.0)
            if hasattr(mod, "PARTS_SPLIT_MIN_SAVING"):  # v0.27: the parts' own threshold
                anywhere["PARTS_SPLIT_MIN_SAVING"] = 0.0
            calls["parts_split_any"] = (with_constants(glu_parts, mod, **anywhere), (x, *parts))
            calls["parts_apart"] = (glu_parts, (x, *apart))
        w_cat = torch.cat([up_w, gate_w]).detach().requires_grad_()
        calls["eager"] = (_eager_glu(mod), (x, w_cat))

        def step(fn, inputs):
            def run():
                fn(*inputs).backward(dy)
                for t in inputs:
                    t.grad = None

            return run

        steps = {k: (step(f, a), None) for k, (f, a) in calls.items()}
        t = lambda fn, _: do_bench(fn, warmup=25, rep=100, return_mode="median")  # noqa: E731
        ms = _interleaved(steps, t, 6)
        host = host_us({k: run for k, (run, _) in steps.items()})
        peaks = {k: peak_mib(in_network_step(f, a, dy), list(a)) for k, (f, a) in calls.items()}
        held = {k: peak_mib(steps[k][0], list(a)) for k, (f, a) in calls.items()}
        with_split = with_constants(mod._split_point, mod, LOW_PEAK_MIN_FLOP=0)(M, N, K) < N
        row = {
            "ms": ms,
            "host_us": host,
            "in_network_peak_mib": peaks,
            "dy_held_peak_mib": held,
            "shipped_low_peak": mod._low_peak(M, K, N),
            "shipped_two_nodes": getattr(mod, "_two_nodes", mod._low_peak)(M, K, N),  # v0.24
            "rule_splits": with_split,
            "parts_split": hasattr(mod, "_weight_split")
            and mod._split_point(M, N, K, n_w=mod._weight_split(N)) < N,
            "parts_low_peak_splits": hasattr(mod, "_weight_split")
            and with_constants(mod._split_point, mod, LOW_PEAK_MIN_FLOP=0)(
                M, N, K, False, mod._weight_split(N)
            )
            < N,
        }
        res[f"{M}x{K}x{N}"] = row
        print(
            f"{M}x{K}x{N} (shipped: {'two nodes' if row['shipped_two_nodes'] else 'one node'}"
            f"{', may split' if row['shipped_low_peak'] else ''}; "
            f"the low-peak rule {'splits' if with_split else 'keeps one buffer'}): ms / host µs / "
            "peak MiB in a network, dy held",
            flush=True,
        )
        for k in calls:
            print(
                f"  {k:14s} {ms[k]:8.3f} {host[k]:7.0f} {peaks[k]:7.0f} {held[k]:7.0f}", flush=True
            )
        parts = apart = None  # (v0.26's columns)
        del x, w, w_cat, gl, ul, dy, gate_w, up_w, calls, steps
        torch.cuda.empty_cache()
    write_results("ab_split.json", res)


if __name__ == "__main__":
    main()
