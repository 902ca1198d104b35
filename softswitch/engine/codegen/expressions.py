"""Code generation: expressions and assignments (P4_16 spec section 8).

`expr` returns a Python expression for a checked P4 expression, dispatching on
the node class to an `x_<Class>` method; scalars are ints/bools/strs and
aggregates are references. Assignments copy aggregates (P4 has value semantics);
a parameter holding an aggregate is overwritten in place, never rebound.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from softswitch.frontend import ast as A
from softswitch.frontend import types as T

from .base import CodegenBase
from .values import is_agg, rt, width_of


class ExpressionCode(CodegenBase):
    """Expressions, their width wrapping, and assignment to l-values."""

    def const(self, v: Any) -> str:
        if isinstance(v, bool):
            return "True" if v else "False"
        if isinstance(v, int):
            return str(v) if -1000 < v < 1000 else hex(v)
        return repr(v)

    def expr(self, e: A.Expression) -> str:
        """Python expression computing `e` (scalars as int/bool/str, aggregates by reference)."""
        if e.const_value is not None and not isinstance(e, A.CallExpr):
            return self.const(e.const_value)
        m: Callable[[Any], str] | None = getattr(self, "x_" + type(e).__name__, None)
        if m is None:
            raise self.err(e, f"unsupported expression {type(e).__name__}")
        return m(e)

    def x_IntLiteral(self, e: A.IntLiteral) -> str:
        return self.const(e.value)

    def x_BoolLiteral(self, e: A.BoolLiteral) -> str:
        return "True" if e.value else "False"

    def x_StringLiteral(self, e: A.StringLiteral) -> str:
        return repr(e.value)

    def x_PathExpr(self, e: A.PathExpr) -> str:
        d = e.decl
        if isinstance(d, A.ConstantDecl):
            if d.value.const_value is None:  # a struct/tuple of constants: a fresh value
                return self.value_copy(d.value)
            return self.const(d.value.const_value)
        name = self.names.get(id(d))
        if name is None:
            raise self.err(e, f"cannot use {e.name} here")
        return name

    def x_MemberExpr(self, e: A.MemberExpr) -> str:
        k = e.kind
        if k is A.MemberKind.FIELD:
            return f"{self.expr(e.expr)}.f_{e.member}"
        base = self.expr(e.expr)
        if k is A.MemberKind.STACK_NEXT:
            return f"{base}.next_for_extract()"
        if k is A.MemberKind.STACK_LAST:
            return f"{base}.last()"
        if k is A.MemberKind.STACK_LAST_INDEX:
            return f"(({base}.n - 1) & 0xFFFFFFFF)"
        if k is A.MemberKind.STACK_SIZE:
            return f"len({base}.e)"
        if k is A.MemberKind.TABLE_HIT:
            return f"{base}[0]"
        if k is A.MemberKind.TABLE_MISS:
            return f"(not {base}[0])"
        if k is A.MemberKind.TABLE_ACTION_RUN:
            return f"{base}[1]"
        raise self.err(e, f"unsupported member access .{e.member}")

    def x_IndexExpr(self, e: A.IndexExpr) -> str:
        return f"{self.expr(e.expr)}.e[{self.expr(e.index)}]"

    def x_SliceExpr(self, e: A.SliceExpr) -> str:
        hi, lo = _slice_bounds(e)
        mask = (1 << (hi - lo + 1)) - 1
        inner = self.expr(e.expr)
        return f"(({inner} >> {lo}) & {hex(mask)})" if lo else f"({inner} & {hex(mask)})"

    def wrap(self, code: str, t: T.P4Type) -> str:
        """Reduce an exact integer result to the representation of type t."""
        t = rt(t)
        if isinstance(t, T.Bits):
            m = (1 << t.width) - 1
            if t.signed:
                h = 1 << (t.width - 1)
                return f"(((({code}) + {hex(h)}) & {hex(m)}) - {hex(h)})"
            return f"(({code}) & {hex(m)})"
        return code

    def x_UnaryExpr(self, e: A.UnaryExpr) -> str:
        v = self.expr(e.operand)
        t = rt(e.type)
        if e.op == "!":
            return f"(not {v})"
        if e.op == "+":
            return v
        if e.op == "-":
            return self.wrap(f"-{v}", t)
        if e.op == "~":
            if isinstance(t, T.Bits) and not t.signed:
                return f"({v} ^ {hex((1 << t.width) - 1)})"
            return f"(~{v})"
        raise self.err(e, f"unsupported operator {e.op}")

    def x_BinaryExpr(self, e: A.BinaryExpr) -> str:
        op = e.op
        if op == "&&":
            return f"({self.expr(e.left)} and {self.expr(e.right)})"
        if op == "||":
            return f"({self.expr(e.left)} or {self.expr(e.right)})"
        a = self.expr(e.left)
        b = self.expr(e.right)
        t = rt(e.type)
        if op in ("==", "!="):
            if is_agg(e.left.type):
                return f"(_aggf({a}) {op} _aggf({b}))"
            return f"({a} {op} {b})"
        if op in ("<", ">", "<=", ">="):
            return f"({a} {op} {b})"
        if not isinstance(t, T.Bits):
            raise self.err(e, f"operator {op} on {t}")
        w, signed = t.width, t.signed
        m = (1 << w) - 1
        if op in ("+", "-", "*"):
            return self.wrap(f"{a} {op} {b}", t)
        if op in ("&", "|", "^"):
            return f"({a} {op} {b})"
        if op == "/":
            return self.wrap(f"_div({a}, {b})", t)
        if op == "%":
            return self.wrap(f"_mod({a}, {b})", t)
        if op == "<<":
            rc = e.right.const_value
            if isinstance(rc, int):
                return "0" if rc >= w else self.wrap(f"{a} << {rc}", t)
            return self.wrap(f"_shl({a}, {b}, {w})", t)
        if op == ">>":
            rc = e.right.const_value
            if isinstance(rc, int):
                return f"({a} >> {min(rc, w)})"
            return f"({a} >> min({b}, {w}))"
        if op == "|+|":
            if signed:
                return f"_sat({a} + {b}, {w})"
            return f"min({a} + {b}, {hex(m)})"
        if op == "|-|":
            if signed:
                return f"_sat({a} - {b}, {w})"
            return f"max({a} - {b}, 0)"
        if op == "++":
            lw = width_of(e.right.type)
            lm = (1 << lw) - 1
            left_t = rt(e.left.type)
            left_m = (1 << left_t.width) - 1 if isinstance(left_t, T.Bits) else m
            code = f"((({a}) & {hex(left_m)}) << {lw}) | (({b}) & {hex(lm)})"
            return self.wrap(code, t) if signed else f"({code})"
        raise self.err(e, f"unsupported operator {op}")

    def x_TernaryExpr(self, e: A.TernaryExpr) -> str:
        return f"({self.expr(e.then)} if {self.expr(e.cond)} else {self.expr(e.otherwise)})"

    def x_CastExpr(self, e: A.CastExpr) -> str:
        v = self.expr(e.expr)
        dst = rt(e.type)
        src = rt(e.expr.type)
        if isinstance(dst, T.Bits):
            if isinstance(src, T.BoolType):
                return f"(1 if {v} else 0)"
            if isinstance(src, T.Bits) and not src.signed and not dst.signed and src.width <= dst.width:
                return v
            if isinstance(src, T.Bits) and src.signed and dst.signed and src.width <= dst.width:
                return v
            return self.wrap(v, dst)
        if isinstance(dst, T.BoolType):
            if isinstance(src, T.BoolType):
                return v
            return f"({v} != 0)"
        if isinstance(dst, T.InfInt):
            return v
        if type(dst) is type(src):
            return v
        raise self.err(e, f"unsupported cast from {src} to {dst}")

    def x_CallExpr(self, e: A.CallExpr) -> str:
        return self.call(e, want_value=True)

    def x_ListExpr(self, e: A.ListExpr) -> str:
        t = rt(e.type)
        if isinstance(t, T.StructLike):
            return self.build_struct(t, [(f.name, it) for f, it in zip(t.fields, e.items, strict=False)])
        return "(" + "".join(self.expr(i) + ", " for i in e.items) + ")"

    def x_StructInitExpr(self, e: A.StructInitExpr) -> str:
        t = rt(e.type)
        if not isinstance(t, T.StructLike):
            raise self.err(e, "struct initialiser without a struct type")
        return self.build_struct(t, list(e.fields))

    def build_struct(self, t: T.StructLike, items: list[tuple[str, A.Expression]]) -> str:
        """Expression building a header/struct value from (field, expression) pairs."""
        cls = self.class_for(t)
        args = ", ".join(
            f"({name!r}, {self.expr(x) + ('.copy()' if is_agg(x.type) else '')})" for name, x in items
        )
        valid = isinstance(t, T.HeaderType)
        return f"_mk({cls}, ({args}{',' if len(items) == 1 else ''}), {valid})"

    def assign(self, lhs: A.Expression, value: str) -> None:
        """Emit code storing `value` (already a Python expression) into lvalue `lhs`."""
        e = self.out
        if isinstance(lhs, A.DontCareExpr):
            e(f"_ = {value}")
            return
        if isinstance(lhs, A.SliceExpr):
            base = self.expr(lhs.expr)
            hi, lo = _slice_bounds(lhs)
            m = ((1 << (hi - lo + 1)) - 1) << lo
            self.assign(lhs.expr, f"(({base}) & ~{hex(m)}) | ((({value}) << {lo}) & {hex(m)})")
            return
        target = self.expr(lhs)
        if isinstance(lhs, A.MemberExpr) and lhs.kind is not A.MemberKind.FIELD:
            raise self.err(lhs, f"cannot assign to .{lhs.member}")
        if isinstance(lhs, A.PathExpr) and isinstance(lhs.decl, A.Param) and is_agg(lhs.type):
            # a parameter is the caller's object: overwrite it in place, never rebind
            e(f"_into({target}, {value})")
            return
        e(f"{target} = {value}")

    def assign_expr(self, lhs: A.Expression, rhs: A.Expression) -> None:
        """lhs = rhs with P4 copy semantics for aggregates."""
        lt = rt(lhs.type)
        if isinstance(lt, T.StructLike | T.HeaderStack):
            v = self.expr(rhs)
            if isinstance(rhs, A.ListExpr | A.StructInitExpr):
                self.assign(lhs, v)
            else:
                self.assign(lhs, f"{v}.copy()")
            return
        self.assign(lhs, self.expr(rhs))

    def value_copy(self, x: A.Expression) -> str:
        v = self.expr(x)
        if is_agg(x.type) and not isinstance(x, A.ListExpr | A.StructInitExpr):
            return f"{v}.copy()"
        return v


def _slice_bounds(e: A.SliceExpr) -> tuple[int, int]:
    """hi and lo of a slice (the checker folds both to constants)."""
    return cast(int, e.hi_value), cast(int, e.lo_value)
