"""Every activation entry: its out / d_left / d_gate expressions against torch.autograd on its
torch reference (float64), and well-behaved fp32 values for large |gate|."""

import pytest
import torch
import torch.nn.functional as F

from codegen.activations import ACTIVATIONS, Act, evaluate, translate


def torch_reference(activation, left, gate):
    env = {"torch": torch, "F": F, "left": left, "gate": gate, **activation.defaults()}
    return eval(activation.reference_expr, env)  # noqa: S307 - our own table


@pytest.mark.parametrize("act", list(Act))
def test_derivatives_match_autograd(act):
    activation = ACTIVATIONS[act]
    gen = torch.Generator().manual_seed(0)
    left = (torch.randn(4096, generator=gen, dtype=torch.float64) * 3).requires_grad_()
    gate = (torch.randn(4096, generator=gen, dtype=torch.float64) * 4).requires_grad_()
    ref = torch_reference(activation, left, gate)
    d_left_ref, d_gate_ref = torch.autograd.grad(ref.sum(), (left, gate))
    out, d_left, d_gate = evaluate(activation, left.detach(), gate.detach())
    # act and act' within the entry's declared error (exact entries: fp64 rounding only)
    l, g = left.detach().abs(), gate.detach().abs()
    err = activation.max_abs_error
    for ours, ref_, scale in (
        (out, ref.detach(), l * (1 + g)),
        (d_left, d_left_ref, 1 + g),
        (d_gate, d_gate_ref, l * (1 + g)),
    ):
        bound = 1e-10 * (1 + ref_.abs()) + err * scale
        assert ((ours - ref_).abs() <= bound).all(), (act, (ours - ref_).abs().max().item())


def test_approximations_are_declared():
    # the erf approximation of GeGLU is the only approximated entry; its bound is tight
    approximated = {a for a, e in ACTIVATIONS.items() if e.max_abs_error}
    assert approximated == {Act.GELU}
    gate = torch.linspace(-12, 12, 200001, dtype=torch.float64)
    out, _, _ = evaluate(ACTIVATIONS[Act.GELU], torch.ones_like(gate), gate)
    cdf_err = (out / torch.where(gate == 0, 1.0, gate) - 0.5 * (1 + torch.erf(gate / 2**0.5))).abs()
    assert cdf_err[gate != 0].max().item() <= ACTIVATIONS[Act.GELU].max_abs_error


@pytest.mark.parametrize("act", list(Act))
def test_large_gates_stay_finite_in_fp32(act):
    activation = ACTIVATIONS[act]
    gate = torch.tensor([-80.0, -30.0, -1e-3, 0.0, 1e-3, 30.0, 80.0])
    left = torch.full_like(gate, 1.5)
    results = evaluate(activation, left, gate)
    refs = [torch_reference(activation, left.double(), gate.double())]
    for value in results:
        assert torch.isfinite(value).all(), (act, value)
    torch.testing.assert_close(results[0].double(), refs[0], rtol=1e-5, atol=1e-6)


def test_nan_gate_propagates():
    for act, activation in ACTIVATIONS.items():
        gate = torch.tensor([float("nan")])  # (and a NaN in left, where the entry clamps it)
        out, _, _ = evaluate(activation, torch.ones(1), gate)
        assert out.isnan().all(), act


def test_translation_targets():
    assert translate("exp(-gate) + erf(gate)", "triton") == "tl.exp(-gate) + tl.math.erf(gate)"
    assert (
        translate("where(gate > 0.0, left, 0.0)", "torch") == "torch.where(gate > 0.0, left, 0.0)"
    )
    # sigmoid is the module's own _sigmoid (its body follows the spec's --math)
    assert translate("sigmoid(2.0 * gate)", "triton") == "_sigmoid(2.0 * gate)"
    assert translate("sigmoid(gate)", "torch") == "torch.sigmoid(gate)"
    with pytest.raises(ValueError, match="unknown function 'tanh'"):
        translate("tanh(gate)", "triton")


def test_swiglu_oai_clamps_like_gpt_oss():
    """gpt-oss's activation written out (its reference implementation), the derivatives zero
    where the clamps cut, and other parameter values taken by name."""
    act = ACTIVATIONS[Act.SWIGLU_OAI]
    assert act.defaults() == {"alpha": 1.702, "limit": 7.0}
    gate = torch.tensor([-10.0, -1.0, 0.0, 0.5, 6.9, 7.0, 7.5, 100.0], dtype=torch.float64)
    up = torch.tensor([-9.0, -7.0, -0.5, 0.0, 3.0, 6.99, 8.0, -100.0], dtype=torch.float64)
    out, d_left, d_gate = evaluate(act, up, gate)
    g = gate.clamp(max=7.0)
    expected = g * torch.sigmoid(1.702 * g) * (up.clamp(-7.0, 7.0) + 1)
    torch.testing.assert_close(out, expected)
    assert d_left[0] == 0 and d_left[6] == 0 and d_left[7] == 0 and d_left[1] != 0  # |up| > limit
    assert d_gate[6] == 0 and d_gate[7] == 0 and d_gate[5] != 0  # gate > limit (7.0 itself passes)
    out10, _, _ = evaluate(act, up, gate, {"alpha": 1.0, "limit": 10.0})
    g10 = gate.clamp(max=10.0)
    torch.testing.assert_close(out10, g10 * torch.sigmoid(g10) * (up.clamp(-10.0, 10.0) + 1))
