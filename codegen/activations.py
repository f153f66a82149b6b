"""The activation registry: an activation is data, never a copied kernel.

Each entry gives, for ``out = left * act(gate)``:

* ``temps``: named fp32 sub-expressions, evaluated in order (shared by the three below);
* ``out``, ``d_left`` (= d out / d left) and ``d_gate`` (= d out / d gate);
* ``torch_act``: the activation applied to ``gate`` in plain torch (the reference), or, for an
  activation that also transforms ``left`` (gpt-oss clamps it), ``torch_ref``: the whole GLU
  ``out`` over ``left`` and ``gate``;
* ``params``: named float parameters with defaults (gpt-oss: ``alpha``, ``limit``), used by name
  in every expression above and substituted as constants when a variant is rendered (a variant's
  values are part of its spec and name).

Expressions are written over ``left``, ``gate``, the temps and a tiny vocabulary
(``exp``, ``erf``, ``where``, ``abs``, ``sigmoid``) that maps both to Triton (for the kernels)
and to torch (for the derivative test in tests/test_activations.py).  ``sigmoid`` is the
module's own ``_sigmoid``: 1 / (1 + exp(-x)) as rendered by default, a one-instruction
approximation with ``--math approx`` (spec.Math), so an entry written with it gets both.
Adding an activation is one entry in ``ACTIVATIONS``.  All math runs in fp32; forms are chosen
so that |gate| up to ~80 neither overflows nor produces NaN (``exp`` of a large argument gives
+inf, and ``1 / (1 + inf)`` is 0), and ``out`` multiplies ``left`` by the finished
``act(gate)`` so that ``left * gate`` cannot overflow where the reference does not.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass


class Act(str, enum.Enum):
    SILU = "silu"
    GELU = "gelu"
    GELU_TANH = "gelu_tanh"
    RELU = "relu"
    SIGMOID = "sigmoid"
    SWIGLU_OAI = "swiglu_oai"


@dataclass(frozen=True)
class Activation:
    act: Act
    glu_name: str  # what the GLU is usually called
    description: str
    temps: tuple[tuple[str, str], ...]
    out: str
    d_left: str
    d_gate: str
    torch_act: str  # torch expression over `gate` (module prefix: torch / F)
    # Absolute error of act(gate) and act'(gate) against the exact function, for entries
    # that use an approximation (0.0: exact up to fp rounding).
    max_abs_error: float = 0.0
    params: tuple[tuple[str, float], ...] = ()  # (name, default)
    torch_ref: str | None = None  # out over `left` and `gate`; default left * torch_act
    hf_act: str | None = None  # its name in Hugging Face transformers' ACT2FN (config.hidden_act)
    # The TMA forward's epilogue converts out and both factors to the storage dtype before its
    # first store (fewer live registers while the serialised stores wait) instead of at each
    # store.  True where that measured faster on the H200 (perf log v0.10: GeGLU erf / tanh
    # and ReGLU 1-17% faster training forward; SwiGLU 0-2% slower, gpt-oss mixed).
    narrow_before_store: bool = False

    @property
    def reference_expr(self) -> str:
        """The torch expression of out over ``left`` and ``gate`` (params by name)."""
        return self.torch_ref or f"left * ({self.torch_act})"

    def defaults(self) -> dict[str, float]:
        return dict(self.params)

    @property
    def uses_sigmoid(self) -> bool:
        """Whether its math calls ``sigmoid`` (what ``--math approx`` approximates)."""
        exprs = (*(e for _, e in self.temps), self.out, self.d_left, self.d_gate)
        return any(m.group(1) == "sigmoid" for e in exprs for m in _CALL.finditer(e))


# Vocabulary of the expressions: name -> (Triton spelling, torch spelling).
VOCABULARY: dict[str, tuple[str, str]] = {
    "exp": ("tl.exp", "torch.exp"),
    "erf": ("tl.math.erf", "torch.erf"),
    "where": ("tl.where", "torch.where"),
    "abs": ("tl.abs", "torch.abs"),
    "sigmoid": ("_sigmoid", "torch.sigmoid"),
}

_SQRT_2_OVER_PI = "0.7978845608028654"
# GeGLU (tanh): 2u = 2 sqrt(2/pi) (g + 0.044715 g^3) = g (A + B g^2), d(2u)/dg = A + 3 B g^2
_GELU_TANH_A = 2 * 0.7978845608028654
_GELU_TANH_B = _GELU_TANH_A * 0.044715
_INV_SQRT_2 = "0.7071067811865476"
_INV_SQRT_2PI = "0.3989422804014327"

ACTIVATIONS: dict[Act, Activation] = {
    a.act: a
    for a in [
        Activation(
            act=Act.SILU,
            glu_name="SwiGLU",
            description="silu(g) = g * sigmoid(g)",
            temps=(("s", "sigmoid(gate)"),),
            out="left * (gate * s)",
            d_left="gate * s",
            d_gate="left * s * (1.0 + gate * (1.0 - s))",
            torch_act="F.silu(gate)",
            hf_act="silu",
        ),
        Activation(
            act=Act.GELU,
            glu_name="GeGLU",
            description="gelu(g) = g * Phi(g), exact (erf) form",
            # erf(|g| / sqrt 2) by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7, fp32 level),
            # which shares exp(-g^2 / 2) with the pdf: one exp per element instead of a
            # libdevice erf plus an exp.  Phi(g) = 1 - q for g >= 0, q for g < 0.
            temps=(
                ("e", "exp(-0.5 * gate * gate)"),
                ("t", f"1.0 / (1.0 + 0.3275911 * {_INV_SQRT_2} * abs(gate))"),
                (
                    "q",
                    "0.5 * e * t * (0.254829592 + t * (-0.284496736 + t * (1.421413741"
                    " + t * (-1.453152027 + t * 1.061405429))))",
                ),
                ("cdf", "where(gate >= 0.0, 1.0 - q, q)"),
                ("pdf", f"{_INV_SQRT_2PI} * e"),
            ),
            out="left * (gate * cdf)",
            d_left="gate * cdf",
            d_gate="left * (cdf + gate * pdf)",
            torch_act="F.gelu(gate)",
            hf_act="gelu",
            narrow_before_store=True,
            max_abs_error=7.5e-8,
        ),
        Activation(
            act=Act.GELU_TANH,
            glu_name="GeGLU (tanh)",
            description=(
                "gelu(g) with the tanh approximation, u = sqrt(2/pi) (g + 0.044715 g^3):"
                " 0.5 g (1 + tanh u) = g * sigmoid(2u)"
            ),
            # The sigmoid form: one exp and one division, no 1 + tanh(u) cancelling for g << 0,
            # and fewer live temporaries in the forward's epilogue than the tanh form.
            temps=(
                ("g2", "gate * gate"),
                ("s", f"sigmoid(gate * ({_GELU_TANH_A!r} + {_GELU_TANH_B!r} * g2))"),
                ("gs", "gate * s"),
            ),
            out="left * gs",
            d_left="gs",
            d_gate=f"left * (s + gs * (1.0 - s) * ({_GELU_TANH_A!r} + {3 * _GELU_TANH_B!r} * g2))",
            torch_act='F.gelu(gate, approximate="tanh")',
            hf_act="gelu_pytorch_tanh",
            narrow_before_store=True,
        ),
        Activation(
            act=Act.RELU,
            glu_name="ReGLU",
            description="relu(g) = max(g, 0); NaN in gate propagates",
            temps=(("pos", "where(gate > 0.0, gate, where(gate == gate, 0.0, gate))"),),
            out="left * pos",
            d_left="pos",
            d_gate="where(gate > 0.0, left, 0.0 * gate)",
            torch_act="F.relu(gate)",
            hf_act="relu",
            narrow_before_store=True,
        ),
        Activation(
            act=Act.SWIGLU_OAI,
            glu_name="SwiGLU (gpt-oss, clamped)",
            description="g = min(gate, limit), l = clamp(up, -limit, limit): g * sigmoid(alpha g) * (l + 1)",
            # The clamps pass NaN through (where(NaN > limit) is false) and, like torch.clamp's
            # gradient, let the derivative through at the limits themselves.
            temps=(
                ("g", "where(gate > limit, limit, gate)"),
                ("l", "where(left > limit, limit, where(left < -limit, -limit, left))"),
                ("s", "sigmoid(alpha * g)"),
                ("glu", "g * s"),
                ("in_g", "where(gate > limit, 0.0, 1.0)"),
                ("in_l", "where(left > limit, 0.0, where(left < -limit, 0.0, 1.0))"),
            ),
            out="glu * (l + 1.0)",
            d_left="glu * in_l",
            d_gate="(l + 1.0) * (s + alpha * g * s * (1.0 - s)) * in_g",
            torch_act="",
            torch_ref=(
                "torch.clamp(gate, max=limit) * torch.sigmoid(alpha * torch.clamp(gate, max=limit))"
                " * (torch.clamp(left, -limit, limit) + 1)"
            ),
            params=(("alpha", 1.702), ("limit", 7.0)),
        ),
        Activation(
            act=Act.SIGMOID,
            glu_name="GLU",
            description="sigmoid(g) = 1 / (1 + exp(-g))",
            temps=(("s", "sigmoid(gate)"),),
            out="left * s",
            d_left="s",
            d_gate="left * s * (1.0 - s)",
            torch_act="torch.sigmoid(gate)",
            hf_act="sigmoid",
        ),
    ]
}

_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


def substitute(expr: str, params: dict[str, float]) -> str:
    """Replace parameter names in ``expr`` by their values (float literals)."""
    for name, value in params.items():
        expr = re.sub(rf"\b{name}\b", repr(float(value)), expr)
    return expr


def translate(expr: str, target: str) -> str:
    """Rewrite the vocabulary calls of ``expr`` for ``target`` ("triton" or "torch")."""
    index = {"triton": 0, "torch": 1}[target]

    def sub(m: re.Match) -> str:
        name = m.group(1)
        if name not in VOCABULARY:
            raise ValueError(f"unknown function {name!r} in activation expression {expr!r}")
        return VOCABULARY[name][index] + "("

    return _CALL.sub(sub, expr)


def evaluate(activation: Activation, left, gate, params: dict[str, float] | None = None):
    """Evaluate (out, d_left, d_gate) of an entry with torch (any dtype, e.g. float64)."""
    import torch  # only the tests need torch here

    env = {"torch": torch, "left": left, "gate": gate, **activation.defaults(), **(params or {})}
    for name, expr in activation.temps:
        env[name] = eval(translate(expr, "torch"), env)  # noqa: S307 - our own table
    return tuple(
        eval(translate(e, "torch"), env)  # noqa: S307
        for e in (activation.out, activation.d_left, activation.d_gate)
    )
