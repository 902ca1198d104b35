"""Code generation: scalars packed into one integer (hash and checksum inputs, digests, keys).

BMv2 builds the input of a hash or checksum field by field, left-aligned, with
varbits at their current width and the fields of invalid headers left out;
`flatten_calc` and `calc_args` reproduce that, with a constant-width fast path.
"""

from __future__ import annotations

from typing import Any

from softswitch.frontend import ast as A
from softswitch.frontend import types as T

from ..errors import CompileError
from .base import CodegenBase
from .values import rt


class PackingCode(CodegenBase):
    """Flattening of lists, structs and headers into (value, width) pairs, and their packing."""

    def flatten(self, e: A.Expression) -> list[tuple[str, int]]:
        """(Python expression, width) of every scalar in a list/struct/header expression."""
        t = rt(e.type)
        if isinstance(e, A.ListExpr):
            out = []
            for it in e.items:
                out.extend(self.flatten(it))
            return out
        if isinstance(e, A.StructInitExpr):
            out = []
            for _, it in e.fields:
                out.extend(self.flatten(it))
            return out
        if isinstance(t, T.StructLike):
            base = self.expr(e)
            return self.flatten_value(base, t)
        if isinstance(t, T.BoolType):
            return [(f"(1 if {self.expr(e)} else 0)", 1)]
        if isinstance(t, T.Bits):
            v = self.expr(e)
            return [(f"({v} & {hex((1 << t.width) - 1)})" if t.signed else v, t.width)]
        if isinstance(t, T.EnumType | T.ErrorType):
            return self.flatten_value(self.expr(e), t)
        raise self.err(e, f"cannot use a {t} value as a field list")

    def flatten_value(self, base: str, t: T.P4Type) -> list[tuple[str, int]]:
        t = rt(t)
        if isinstance(t, T.StructLike):
            out = []
            for f in t.fields:
                out.extend(self.flatten_value(f"{base}.f_{f.name}", f.type))
            return out
        if isinstance(t, T.HeaderStack):
            out = []
            for i in range(t.size):
                out.extend(self.flatten_value(f"{base}.e[{i}]", t.element))
            return out
        if isinstance(t, T.BoolType):
            return [(f"(1 if {base} else 0)", 1)]
        if isinstance(t, T.Bits):
            return [(f"({base} & {hex((1 << t.width) - 1)})" if t.signed else base, t.width)]
        if isinstance(t, T.Varbit):
            return []
        if isinstance(t, T.EnumType | T.ErrorType):
            # as in BMv2's JSON, a member is its number in declaration order, in 32 bits
            return [(f"_midx({tuple(t.members)!r}, {base})", 32)]
        raise CompileError("?", f"cannot pack a {t} value")

    def flatten_calc(self, e: A.Expression) -> list[tuple[str, Any, str | None]]:
        """(value, width, validity) of every field a hash/checksum input holds, as BMv2's buffer
        builder sees them: varbits with their current width, header fields only while the
        header is valid (validity None = always included)."""
        if isinstance(e, A.ListExpr):
            return [x for it in e.items for x in self.flatten_calc(it)]
        if isinstance(e, A.StructInitExpr):
            return [x for _, it in e.fields for x in self.flatten_calc(it)]
        t = rt(e.type)
        if isinstance(t, T.StructLike | T.HeaderStack):
            return self.flatten_calc_value(self.expr(e), t, None)
        valid = None
        if isinstance(e, A.MemberExpr) and e.kind is A.MemberKind.FIELD and isinstance(rt(e.expr.type), T.HeaderType):
            base = self.expr(e.expr)
            valid = f"{base}._v"
            if isinstance(t, T.Varbit):
                return [(f"{base}.f_{e.member}", f"{base}.w_{e.member}", valid)]
        return [(v, w, valid) for v, w in self.flatten(e)]

    def flatten_calc_value(self, base: str, t: T.P4Type, valid: str | None) -> list[tuple[str, Any, str | None]]:
        t = rt(t)
        if isinstance(t, T.HeaderStack):
            return [x for i in range(t.size) for x in self.flatten_calc_value(f"{base}.e[{i}]", t.element, valid)]
        if isinstance(t, T.StructLike):
            own = f"{base}._v" if isinstance(t, T.HeaderType) else valid
            out = []
            for f in t.fields:
                ft = rt(f.type)
                if isinstance(ft, T.Varbit):
                    out.append((f"{base}.f_{f.name}", f"{base}.w_{f.name}", own))
                else:
                    out.extend(self.flatten_calc_value(f"{base}.f_{f.name}", ft, own))
            return out
        return [(v, w, valid) for v, w in self.flatten_value(base, t)]

    def calc_args(self, items: list[tuple[str, Any, str | None]]) -> str:
        """Code passing (packed value, bit count) of a hash/checksum input as two arguments."""
        conds = list(dict.fromkeys(ok for _, _, ok in items if ok is not None))
        if all(isinstance(w, int) for _, w, _ in items):
            packed, total = self.packed([(v, w) for v, w, _ in items])
            if not conds:
                return f"{packed}, {total}"
            fast = f"({packed}, {total})"
        else:
            fast = None
        dyn = "_dyn((" + "".join(f"({v}, {w}, {ok or 'True'}), " for v, w, ok in items) + "))"
        if fast is None:
            return f"*{dyn}"
        return f"*({fast} if {' and '.join(conds)} else {dyn})"

    def fields_tuple(self, pairs: list[tuple[str, int]]) -> str:
        return "(" + "".join(f"({v}, {w}), " for v, w in pairs) + ")"

    def packed(self, pairs: list[tuple[str, int]]) -> tuple[str, int]:
        """One integer expression with the scalars packed left to right, and its width."""
        total = sum(w for _, w in pairs)
        parts = []
        off = 0
        for v, w in pairs:
            shift = total - off - w
            parts.append(f"({v} << {shift})" if shift else v)
            off += w
        return ("(" + " | ".join(parts) + ")") if parts else "0", total
