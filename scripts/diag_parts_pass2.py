"""Diagnostic (v0.29): test_weight_in_two_parts[*-pass-apart-*] of the relu fp16 sm90 test file
still failed on the H200 with cuBLAS's fp16 reduced-precision reductions off and the gradients
compared at 2 TOL.  This replays the test's steps (the packed weight, then the same rows as two
Parameters apart in memory, the forward as a GEMM per part and the pass) and prints every
relative error: packed vs apart, and each against the float32 reference (run from the repo root,
PYTHONPATH=.).  Also the preactivations: the module's per-part addmm into the columns of one
buffer against one addmm of the packed weight, and how many relu signs differ."""

import math
import sys

import torch
from _pytest.monkeypatch import MonkeyPatch

sys.path.insert(0, "generated")
import test_glu_relu_fp16_bn128_sm90 as t  # noqa: E402

m = t.glu_mod


def case(path, bias, reduced):
    mp = MonkeyPatch()
    matmul = torch.backends.cuda.matmul
    before = matmul.allow_fp16_reduced_precision_reduction
    matmul.allow_fp16_reduced_precision_reduction = reduced
    try:
        mp.setattr(m, "UNFUSED_MAX_ROWS", 10**9)
        mp.setattr(m, "TWO_NODES_MIN_FLOP", math.inf if path == "one_node" else 0)
        mp.setattr(m, "LOW_PEAK_MIN_FLOP", math.inf)
        t._split_for_any_saving(mp)
        mp.setattr(m, "SPLIT_MAX_OVER_FLOOR", math.inf)
        M, K, N = 150, 40, 2 * m.SPLIT_COLUMNS
        n_w = m._weight_split(N)
        x, gate_w, up_w, packed = t.make_inputs((M,), K, N)
        biases = t._biases(N) if bias else None
        packed_b = m.pack_bias(*biases).requires_grad_() if bias else None
        dy = torch.randn(M, N, device=t.DEVICE).to(t.DTYPE)
        out = m.glu(x, packed, packed_b)
        out.backward(dy)
        a, b = (
            torch.nn.Parameter(packed.detach()[r].clone())
            for r in (slice(0, 2 * n_w), slice(2 * n_w, None))
        )
        x2 = x.detach().requires_grad_()
        b2 = packed_b.detach().requires_grad_() if bias else None
        out2 = m.glu(x2, (a, b), b2)
        out2.backward(dy)
        ref = t.reference_with_grads(x, gate_w, up_w, dy, biases)
        ref_w = m.pack_weight(ref[2], ref[3])
        rows = {
            "out": (out2, out, ref[0]),
            "grad_x": (x2.grad, x.grad, ref[1]),
            "grad_W": (torch.cat([a.grad, b.grad]), packed.grad, ref_w),
        }
        if bias:
            rows["grad_b"] = (b2.grad, packed_b.grad, m.pack_bias(ref[4], ref[5]))
        line = []
        for name, (apart, pk, r) in rows.items():
            line.append(
                f"{name}: apart~packed {t.rel_err(apart, pk):.2e} apart~ref {t.rel_err(apart, r):.2e} "
                f"packed~ref {t.rel_err(pk, r):.2e}"
            )
        # the preactivation as the module computes it: one addmm vs per-part addmm into columns
        with torch.no_grad():
            w = packed.detach()
            h1 = torch.empty(M, 2 * N, device=t.DEVICE, dtype=t.DTYPE)
            h2 = torch.empty_like(h1)
            if bias:
                torch.addmm(packed_b.detach(), x.detach(), w.t(), out=h1)
                torch.addmm(
                    packed_b.detach()[: 2 * n_w], x.detach(), a.detach().t(), out=h2[:, : 2 * n_w]
                )
                torch.addmm(
                    packed_b.detach()[2 * n_w :], x.detach(), b.detach().t(), out=h2[:, 2 * n_w :]
                )
            else:
                torch.mm(x.detach(), w.t(), out=h1)
                torch.mm(x.detach(), a.detach().t(), out=h2[:, : 2 * n_w])
                torch.mm(x.detach(), b.detach().t(), out=h2[:, 2 * n_w :])
            h64 = x.detach().double() @ w.double().t() + (packed_b.detach().double() if bias else 0)
            diff = (h1 != h2).sum().item()
            signs = ((h1 > 0) != (h2 > 0)).sum().item()
        line.append(
            f"preact: {diff} of {h1.numel()} differ, {signs} relu signs; "
            f"one~f64 {t.rel_err(h1, h64):.2e} parts~f64 {t.rel_err(h2, h64):.2e}"
        )
        print(
            f"{path:9s} bias={bias!s:5s} reduced={reduced!s:5s} | " + " | ".join(line), flush=True
        )
    finally:
        matmul.allow_fp16_reduced_precision_reduction = before
        mp.undo()


print(
    torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
    torch.__version__,
    "TOL",
    t.TOL,
)
for reduced in (False, True):
    for bias in (False, True):
        for path in ("one_node", "two_nodes"):
            case(path, bias, reduced)
