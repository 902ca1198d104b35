"""Checks specific to the v1model architecture's include file.

v1model.p4 declares `const bit<32> __v1model_version = V1MODEL_VERSION;`.
p4c checks that value before anything else uses it: a negative number, or a
version outside the range p4c knows, is an error (p4c's GetV1ModelVersion
pass, frontends/p4/getV1ModelVersion.h; its tests
testdata/p4_16_errors/issue5296_*.p4).
"""

from __future__ import annotations

from .. import ast as A
from .base import CheckerBase

VERSION_CONSTANT = "__v1model_version"
FIRST_VERSION = 20180101  # v1model as first released with p4c
LATEST_VERSION = 20200408  # index types as type parameters of counter/meter/register


def _written_value(e: A.Expression) -> object:
    """The constant as written, before the conversion to the constant's type."""
    if isinstance(e, A.CastExpr) and e.implicit:
        return e.expr.const_value
    if isinstance(e, A.IntLiteral) and e.width is None:
        return e.value
    if isinstance(e, A.UnaryExpr) and e.op == "-" and isinstance(e.operand, A.IntLiteral) \
            and e.operand.width is None:
        return -e.operand.value  # `-N` typed by its context: the number is what was written
    return e.const_value


class V1ModelChecks(CheckerBase):
    """The v1model version constant."""

    def v1model_version(self, d: A.ConstantDecl) -> None:
        """Check `__v1model_version` (after the constant itself was checked)."""
        value = _written_value(d.value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            shown = value if isinstance(value, int) else A.expr_text(d.value)
            self.err(d.value.loc, f"{shown}: expected v1model version to be a "
                                  f"non-negative number")
        elif not FIRST_VERSION <= value <= LATEST_VERSION:
            self.err(d.value.loc, f"{value}: unknown v1model version; initial supported version "
                                  f"is {FIRST_VERSION}, latest is {LATEST_VERSION}")
