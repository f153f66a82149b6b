"""Every activation entry: its out / d_left / d_gate expressions against torch.autograd on its
torch reference (float64), and well-behaved fp32 values for large |gate|."""

import pytest
import torch
import torch.nn.functional as F

from codegen.activations import ACTIVATIONS, Act, evaluate, translate


def torch_reference(activation, left, gate):
    env = {"torch": torch, "F": F, "gate": gate}
    return left * eval(activation.torch_act, env)  # noqa: S307 - our own table


@pytest.mark.parametrize("act", list(Act))
def test_derivatives_match_autograd(act):
    activation = ACTIVATIONS[act]
    gen = torch.Generator().manual_seed(0)
    left = (torch.randn(4096, generator=gen, dtype=torch.float64) * 3).requires_grad_()
    gate = (torch.randn(4096, generator=gen, dtype=torch.float64) * 4).requires_grad_()
    ref = torch_reference(activation, left, gate)
    d_left_ref, d_gate_ref = torch.autograd.grad(ref.sum(), (left, gate))
    out, d_left, d_gate = evaluate(activation, left.detach(), gate.detach())
    torch.testing.assert_close(out, ref.detach(), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(d_left, d_left_ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(d_gate, d_gate_ref, rtol=1e-10, atol=1e-10)


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
        gate = torch.tensor([float("nan")])
        out, _, _ = evaluate(activation, torch.ones(1), gate)
        assert out.isnan().all(), act


def test_translation_targets():
    assert translate("exp(-gate) + erf(gate)", "triton") == "tl.exp(-gate) + tl.math.erf(gate)"
    assert translate("where(gate > 0.0, left, 0.0)", "torch") == "torch.where(gate > 0.0, left, 0.0)"
    with pytest.raises(ValueError, match="unknown function 'tanh'"):
        translate("tanh(gate)", "triton")
