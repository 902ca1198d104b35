"""Checking pass: operators, casts and `?:` (P4_16 spec sections 8.5-8.11).

Operands are unified with the width rules of spec 8.9.2 (no implicit width or
signedness change), results of constant operands are folded.
"""

from __future__ import annotations

from .. import ast as A
from .. import types as T
from .base import Abort, CheckerBase, Expected
from .scope import Scope
from .typeops import POISON, castable, fold, same_type, wrap


class OperatorChecks(CheckerBase):
    """Unary and binary operators, shifts, concatenation, `?:` and casts."""

    # -- operators
    def x_UnaryExpr(self, e: A.UnaryExpr, scope: Scope, expected: Expected) -> A.Expression:
        exp = expected if e.op != "!" else T.BOOL
        e.operand = o = self.expr(e.operand, scope, exp)
        t = T.strip_newtype(o.type)
        v = o.const_value
        if o.type is POISON:
            raise Abort
        if e.op == "!":
            if not isinstance(t, T.BoolType):
                self.err(e.loc, f"'!' needs a bool operand, not {o.type}")
                raise Abort
            e.type = T.BOOL
            e.const_value = (not v) if v is not None else None
            return e
        if isinstance(t, T.InfInt) and isinstance(expected, T.Bits):
            e.operand = o = self.coerce(o, expected, o.loc)
            t = expected
            v = o.const_value
        if not isinstance(t, T.Bits | T.InfInt):
            self.err(e.loc, f"'{e.op}' needs an integer operand, not {o.type}")
            raise Abort
        if e.op == "~" and isinstance(t, T.InfInt):
            self.err(e.loc, "'~' needs a sized operand (bit<W> or int<W>)")
            raise Abort
        e.type = o.type
        if v is not None:
            r = {"-": -v, "+": v, "~": ~v}[e.op]
            e.const_value = wrap(r, t) if isinstance(t, T.Bits) else r
        return e

    _ARITH = {"+", "-", "*", "/", "%", "&", "|", "^", "|+|", "|-|"}

    _REL = {"<", ">", "<=", ">="}

    def x_BinaryExpr(self, e: A.BinaryExpr, scope: Scope, expected: Expected) -> A.Expression:
        op = e.op
        if op in ("&&", "||"):
            e.left = self.bool_expr(e.left, scope, f"operand of '{op}'")
            e.right = self.bool_expr(e.right, scope, f"operand of '{op}'")
            e.type = T.BOOL
            lv, rv = e.left.const_value, e.right.const_value
            if lv is not None and rv is not None:
                e.const_value = (lv and rv) if op == "&&" else (lv or rv)
            return e
        sub_expected = expected if op in self._ARITH else None
        if op in ("<<", ">>"):
            e.left = self.expr(e.left, scope, expected)
            e.right = self.expr(e.right, scope)
            return self.shift(e, expected)
        e.left = self.expr(e.left, scope, sub_expected)
        if op in ("==", "!=") and isinstance(e.right, A.ListExpr | A.StructInitExpr) and \
                isinstance(T.strip_newtype(e.left.type), T.StructLike):
            sub_expected = e.left.type  # `h == {1, 2}`: the initializer is an h
        e.right = self.expr(e.right, scope, sub_expected)
        if e.left.type is POISON or e.right.type is POISON:
            raise Abort
        if op == "++":
            return self.concat(e)
        if op in ("==", "!="):
            # headers, unions, structs, stacks and tuples compare field by field (spec 8.12,
            # 8.17-8.20); an initializer on one side takes the type of the other
            ls, rs = T.strip_newtype(e.left.type), T.strip_newtype(e.right.type)
            if isinstance(ls, T.StructLike) and not isinstance(rs, T.StructLike):
                e.right = self.coerce(e.right, e.left.type, e.right.loc)
            elif isinstance(rs, T.StructLike) and not isinstance(ls, T.StructLike):
                e.left = self.coerce(e.left, e.right.type, e.left.loc)
            self.unify(e)
            e.type = T.BOOL
            lv, rv = e.left.const_value, e.right.const_value
            if lv is not None and rv is not None:
                e.const_value = (lv == rv) if op == "==" else (lv != rv)
            return e
        t = self.unify(e)
        st = T.strip_newtype(t)
        if not isinstance(st, T.Bits | T.InfInt):
            self.err(e.loc, f"'{op}' needs integer operands, not {e.left.type} and {e.right.type}")
            raise Abort
        lv, rv = e.left.const_value, e.right.const_value
        if op in self._REL:
            e.type = T.BOOL
            if lv is not None and rv is not None:
                e.const_value = {"<": lv < rv, ">": lv > rv, "<=": lv <= rv, ">=": lv >= rv}[op]
            return e
        e.type = t
        if op in ("/", "%"):
            # unsigned operands only, at run time too (spec 8.5; p4c: "Cannot operate on
            # signed values")
            if isinstance(st, T.Bits) and st.signed:
                self.err(e.loc, f"'{op}' cannot operate on signed values ({e.left.type})")
                raise Abort
            if rv == 0:
                self.err(e.loc, "division by zero")
                raise Abort
            if (lv is not None and lv < 0) or (rv is not None and rv < 0):
                self.err(e.loc, f"'{op}' needs non-negative operands")
                raise Abort
        if op in ("|+|", "|-|") and isinstance(st, T.InfInt):
            self.err(e.loc, f"'{op}' needs sized operands")
            raise Abort
        if lv is not None and rv is not None:
            e.const_value = fold(op, lv, rv, st)
        return e

    def shift(self, e: A.BinaryExpr, expected: Expected) -> A.BinaryExpr:
        lt = T.strip_newtype(e.left.type)
        rt = T.strip_newtype(e.right.type)
        if e.left.type is POISON or e.right.type is POISON:
            raise Abort
        if not isinstance(lt, T.Bits | T.InfInt):
            self.err(e.left.loc, f"cannot shift a value of type {e.left.type}")
            raise Abort
        if isinstance(rt, T.Bits) and rt.signed:
            self.err(e.right.loc, "shift amount must be unsigned")
            raise Abort
        if not isinstance(rt, T.Bits | T.InfInt):
            self.err(e.right.loc, f"shift amount must be an integer, not {e.right.type}")
            raise Abort
        if isinstance(rt, T.InfInt) and e.right.const_value is not None and e.right.const_value < 0:
            self.err(e.right.loc, "negative shift amount")
            raise Abort
        if isinstance(lt, T.InfInt) and e.left.const_value is not None and e.right.const_value is None:
            self.err(e.left.loc, "shifting an unsized integer by a run-time amount; cast it first")
            raise Abort
        e.type = e.left.type
        lv, rv = e.left.const_value, e.right.const_value
        if lv is not None and rv is not None:
            r = lv << rv if e.op == "<<" else lv >> rv
            e.const_value = wrap(r, lt) if isinstance(lt, T.Bits) else r
        return e

    def concat(self, e: A.BinaryExpr) -> A.BinaryExpr:
        lt, rt = T.strip_newtype(e.left.type), T.strip_newtype(e.right.type)
        for side, t in ((e.left, lt), (e.right, rt)):
            if isinstance(t, T.InfInt):
                self.err(side.loc, "'++' needs sized operands; give the integer a width")
                raise Abort
            if not isinstance(t, T.Bits):
                self.err(side.loc, f"'++' needs bit<W> or int<W> operands, not {side.type}")
                raise Abort
        assert isinstance(lt, T.Bits) and isinstance(rt, T.Bits)  # for mypy: checked above
        e.type = T.Bits(lt.width + rt.width, lt.signed)
        lv, rv = e.left.const_value, e.right.const_value
        if lv is not None and rv is not None:
            mask = (1 << rt.width) - 1
            e.const_value = wrap(((lv & ((1 << lt.width) - 1)) << rt.width) | (rv & mask), e.type)
        return e

    def unify(self, e: A.BinaryExpr) -> T.P4Type:
        """Make both operands the same type, converting unsized integers (spec 8.9.2)."""
        lt: T.P4Type = e.left.type
        rt: T.P4Type = e.right.type
        if same_type(lt, rt):
            return lt
        ls, rs = T.strip_newtype(lt), T.strip_newtype(rt)
        if isinstance(ls, T.InfInt) and isinstance(rs, T.Bits | T.EnumType | T.InfInt):
            target = rt if not isinstance(rs, T.EnumType) else rs.underlying
            if target is not None:
                e.left = self.coerce(e.left, rt, e.left.loc)
                return rt
        if isinstance(rs, T.InfInt) and isinstance(ls, T.Bits | T.EnumType):
            e.right = self.coerce(e.right, lt, e.right.loc)
            return lt
        if isinstance(ls, T.EnumType) and ls.underlying is not None and same_type(ls.underlying, rt):
            e.left = self.implicit_cast(e.left, rt)
            return rt
        if isinstance(rs, T.EnumType) and rs.underlying is not None and same_type(rs.underlying, lt):
            e.right = self.implicit_cast(e.right, lt)
            return lt
        self.err(e.loc, f"'{e.op}': operand types differ: {lt} and {rt}"
                        + ("; cast one side" if isinstance(ls, T.Bits) and isinstance(rs, T.Bits)
                           else ""))
        raise Abort

    def x_TernaryExpr(self, e: A.TernaryExpr, scope: Scope, expected: Expected) -> A.Expression:
        e.cond = self.bool_expr(e.cond, scope, "condition of '?:'")
        e.then = self.expr(e.then, scope, expected)
        e.otherwise = self.expr(e.otherwise, scope, expected)
        if e.then.type is POISON or e.otherwise.type is POISON:
            raise Abort
        tt, ot = T.strip_newtype(e.then.type), T.strip_newtype(e.otherwise.type)
        if isinstance(tt, T.InfInt) and isinstance(ot, T.InfInt) and e.cond.const_value is None:
            if expected is not None and isinstance(T.strip_newtype(expected), T.Bits):
                e.then = self.coerce(e.then, expected, e.then.loc)
                e.otherwise = self.coerce(e.otherwise, expected, e.otherwise.loc)
            else:
                self.err(e.loc, "'?:' with unsized integer branches needs a width")
                raise Abort
        elif isinstance(tt, T.InfInt):
            e.then = self.coerce(e.then, e.otherwise.type, e.then.loc)
        elif isinstance(ot, T.InfInt):
            e.otherwise = self.coerce(e.otherwise, e.then.type, e.otherwise.loc)
        elif not same_type(e.then.type, e.otherwise.type):
            self.err(e.loc, f"'?:' branches differ: {e.then.type} and {e.otherwise.type}")
            raise Abort
        e.type = e.then.type
        c = e.cond.const_value
        if c is not None:
            e.const_value = (e.then if c else e.otherwise).const_value
        return e

    def x_CastExpr(self, e: A.CastExpr, scope: Scope, expected: Expected) -> A.Expression:
        t = self.resolve(e.type_ref, scope) if e.type_ref is not None else e.type
        e.expr = self.expr(e.expr, scope, t if isinstance(T.strip_newtype(t), T.StructLike)
                           else None)
        if t is POISON or e.expr.type is POISON:
            raise Abort
        src = e.expr.type
        e.type = t
        if not castable(src, t):
            self.err(e.loc, f"cannot cast {src} to {t}")
            raise Abort
        v = e.expr.const_value
        if v is not None:
            dt = T.strip_newtype(t)
            if isinstance(dt, T.Bits):
                if isinstance(v, bool):
                    v = int(v)
                if isinstance(v, int):
                    e.const_value = wrap(v, dt)
            elif isinstance(dt, T.BoolType) and isinstance(v, int):
                e.const_value = bool(v)
            elif isinstance(dt, T.EnumType) and isinstance(v, int):
                e.const_value = v
            elif same_type(dt, T.strip_newtype(src)):
                e.const_value = v
        return e
