"""Checking pass: expressions other than operators and calls (P4_16 spec section 8).

`expr` dispatches on the node class to an `x_<Class>` method (operators.py
and calls.py hold the rest of them); `coerce` applies the implicit
conversions P4 allows (unsized integers take the width of their context,
serializable enums become their underlying type).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import ast as A
from .. import types as T
from ..ast import expr_text
from .base import Abort, CheckerBase, Expected
from .scope import Scope, TypeParamDecl
from .typeops import POISON, same_type, wrap


class ExpressionChecks(CheckerBase):
    """Literals, names, member access, indexing, slices, list and struct initialisers, conversions."""

    def expr(self, e: A.Expression, scope: Scope, expected: T.P4Type | None = None) -> A.Expression:
        """Check `e`; returns the node to use in its place (possibly re-typed or wrapped)."""
        try:
            out = self._expr(e, scope, expected)
        except Abort:
            e.type = POISON
            return e
        if out.type is None:
            out.type = POISON
        return out

    def _expr(self, e: A.Expression, scope: Scope, expected: Expected) -> A.Expression:
        m: Callable[[Any, Scope, Expected], A.Expression] | None = getattr(
            self, "x_" + type(e).__name__, None)
        if m is None:
            self.unsupported(e.loc, f"expression {type(e).__name__}")
            e.type = POISON
            return e
        return m(e, scope, expected)

    # -- literals
    def x_IntLiteral(self, e: A.IntLiteral, scope: Scope, expected: Expected) -> A.Expression:
        if e.width is not None:
            if e.width <= 0:
                self.err(e.loc, "integer width must be positive")
                e.type = POISON
                return e
            t = T.Bits(e.width, e.signed)
            v = wrap(e.value, t)
            if v != e.value and not e.signed:
                self.r.warning(e.loc, f"value {shown(e.value)} does not fit in {t}; truncated")
            e.type, e.const_value = t, v
            return e
        e.type, e.const_value = T.INFINT, e.value
        return e

    def x_BoolLiteral(self, e: A.BoolLiteral, scope: Scope, expected: Expected) -> A.Expression:
        e.type, e.const_value = T.BOOL, e.value
        return e

    def x_StringLiteral(self, e: A.StringLiteral, scope: Scope, expected: Expected) -> A.Expression:
        e.type, e.const_value = T.STRING, e.value
        return e

    def x_DontCareExpr(self, e: A.DontCareExpr, scope: Scope, expected: Expected) -> A.Expression:
        e.type = T.DONTCARE
        return e

    def x_DefaultExpr(self, e: A.DefaultExpr, scope: Scope, expected: Expected) -> A.Expression:
        e.type = T.DONTCARE
        return e

    # -- names
    def x_PathExpr(self, e: A.PathExpr, scope: Scope, expected: Expected) -> A.Expression:
        found = (self.global_scope if e.absolute else scope).lookup(e.name)
        if not found:
            self.err(e.loc, f"unknown name '{e.name}'")
            raise Abort
        d = found[-1]
        e.decl = d
        if isinstance(d, A.Param | A.VariableDecl):
            e.type = d.type or POISON
        elif isinstance(d, A.ConstantDecl):
            e.type = d.type or POISON
            e.const_value = d.value.const_value if d.value is not None else None
        elif isinstance(d, A.ActionDecl):
            e.type = T.ActionType(d)
        elif isinstance(d, A.TableDecl):
            e.type = d.type
        elif isinstance(d, A.Instantiation):
            e.type = d.type or POISON
        elif isinstance(d, A.ValueSetDecl):
            e.type = d.type or POISON
        elif isinstance(d, A.ParserState):
            e.type = T.StateType()
        elif isinstance(d, A.FunctionDecl | A.ExternFunctionDecl):
            e.type = d.type or POISON
        elif isinstance(d, A.EnumDecl | A.HeaderDecl | A.TypedefDecl | A.ExternDecl |
                        A.ParserTypeDecl | A.ParserDecl | A.ControlDecl | TypeParamDecl):
            e.type = self.decl_type(d, e)
            e.is_type = True  # type: ignore[attr-defined]
        else:
            self.err(e.loc, f"'{e.name}' cannot be used here")
            raise Abort
        return e

    def x_TypeNameExpr(self, e: A.TypeNameExpr, scope: Scope, expected: Expected) -> A.Expression:
        e.type = self.resolve(e.type_ref, scope)
        e.decl = getattr(e.type, "decl", None)
        return e

    def x_MemberExpr(self, e: A.MemberExpr, scope: Scope, expected: Expected) -> A.Expression:
        base = e.expr
        if isinstance(base, A.TypeNameExpr) and isinstance(base.type_ref, A.NamedTypeRef) \
                and not base.type_ref.args:
            # `x.f` where x is also some type's name: a value in scope wins
            found = scope.lookup(base.type_ref.name)
            if found and isinstance(found[-1], A.Param | A.VariableDecl | A.ConstantDecl |
                                    A.Instantiation | A.TableDecl):
                e.expr = base = A.PathExpr(loc=base.loc, name=base.type_ref.name)
        # Type.member: enum and error members
        if isinstance(base, A.TypeNameExpr) or (isinstance(base, A.PathExpr) and isinstance(
                (scope.lookup(base.name) or [None])[-1], A.EnumDecl | A.TypedefDecl)):
            e.expr = base = self.expr(base, scope)
            return self.type_member(e, base.type)
        e.expr = base = self.expr(base, scope)
        bt = base.type
        if bt is POISON:
            raise Abort
        bt = T.strip_newtype(bt) if not isinstance(bt, T.NewType) else bt
        mem = e.member
        if isinstance(bt, T.StructLike):
            f = bt.field_named(mem)
            if f is not None:
                e.kind = A.MemberKind.FIELD
                e.field = f
                e.index = bt.fields.index(f)
                e.type = f.type
                return e
            if isinstance(bt, T.HeaderType | T.HeaderUnionType) and mem in (
                    "isValid", "setValid", "setInvalid"):
                e.kind = A.MemberKind.METHOD
                e.type = T.MethodType(mem)
                return e
            if mem in ("minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes"):
                self.unsupported(e.loc, f"'{mem}()'")
                raise Abort
            self.err(e.loc, f"{bt} has no field '{mem}'")
            raise Abort
        if isinstance(bt, T.HeaderStack):
            if mem in ("next", "last"):
                e.kind = A.MemberKind.STACK_NEXT if mem == "next" else A.MemberKind.STACK_LAST
                e.type = bt.element
                if mem == "next" and not self._in_parser:
                    self.err(e.loc, "'next' may only be used in a parser")
                return e
            if mem == "size":
                e.kind = A.MemberKind.STACK_SIZE
                e.type = T.Bits(32)
                e.const_value = bt.size
                return e
            if mem == "lastIndex":
                e.kind = A.MemberKind.STACK_LAST_INDEX
                e.type = T.Bits(32)
                if not self._in_parser:
                    self.err(e.loc, "'lastIndex' may only be used in a parser")
                return e
            if mem in ("push_front", "pop_front"):
                e.kind = A.MemberKind.METHOD
                e.type = T.MethodType(mem)
                return e
            self.err(e.loc, f"header stack has no member '{mem}'")
            raise Abort
        if isinstance(bt, T.TableType):
            if mem == "apply":
                e.kind = A.MemberKind.METHOD
                e.type = T.MethodType(mem)
                return e
            self.err(e.loc, f"table has no member '{mem}' (use {expr_text(base)}.apply().{mem})")
            raise Abort
        if isinstance(bt, T.TableResultType):
            if mem in ("hit", "miss"):
                e.kind = A.MemberKind.TABLE_HIT if mem == "hit" else A.MemberKind.TABLE_MISS
                e.type = T.BOOL
                return e
            if mem == "action_run":
                e.kind = A.MemberKind.TABLE_ACTION_RUN
                e.type = T.ActionEnumType(bt.table)
                return e
            self.err(e.loc, f"table apply result has no member '{mem}'")
            raise Abort
        ext = bt.base if isinstance(bt, T.SpecializedType) else bt
        if isinstance(ext, T.ExternType):
            if not ext.methods_named(mem):
                self.err(e.loc, f"extern '{ext.name}' has no method '{mem}'")
                raise Abort
            e.kind = A.MemberKind.METHOD
            e.type = T.MethodType(mem)
            return e
        if isinstance(ext, T.ParserType) and mem == "apply":
            e.kind = A.MemberKind.METHOD
            e.type = T.MethodType(mem)
            return e
        self.err(e.loc, f"{bt} has no member '{mem}'")
        raise Abort

    def type_member(self, e: A.MemberExpr, t: T.P4Type) -> A.MemberExpr:
        if isinstance(t, T.ErrorType):
            if e.member not in self.error_type.members:
                self.err(e.loc, f"unknown error '{e.member}'")
                raise Abort
            e.kind = A.MemberKind.ERROR_MEMBER
            e.type = self.error_type
            e.const_value = e.member
            return e
        if isinstance(t, T.EnumType):
            if e.member not in t.members:
                self.err(e.loc, f"enum '{t.name}' has no member '{e.member}'")
                raise Abort
            e.kind = A.MemberKind.ENUM_MEMBER
            e.type = t
            e.const_value = t.values.get(e.member) if t.underlying else e.member
            return e
        if t is not POISON:
            self.err(e.loc, f"type {t} has no member '{e.member}'")
        raise Abort

    def x_IndexExpr(self, e: A.IndexExpr, scope: Scope, expected: Expected) -> A.Expression:
        e.expr = self.expr(e.expr, scope)
        e.index = self.expr(e.index, scope)
        bt = e.expr.type
        if bt is POISON:
            raise Abort
        if not isinstance(bt, T.HeaderStack):
            self.err(e.loc, f"cannot index a value of type {bt}")
            raise Abort
        it = T.strip_newtype(e.index.type)
        if isinstance(it, T.EnumType) and it.underlying is not None:
            it = it.underlying  # a serializable enum indexes by its value (p4c accepts it)
        if isinstance(it, T.InfInt):
            idx = e.index.const_value
            if idx is not None and not (0 <= idx < bt.size):
                self.err(e.index.loc, f"index {shown(idx)} out of range for a stack of size {bt.size}")
            e.index = self.coerce(e.index, T.Bits(32), e.index.loc)
        elif not isinstance(it, T.Bits) and e.index.type is not POISON:
            self.err(e.index.loc, f"stack index must be an integer, not {e.index.type}")
        elif e.index.const_value is not None and not (0 <= e.index.const_value < bt.size):
            self.err(e.index.loc, f"index {shown(e.index.const_value)} out of range for a stack "
                                  f"of size {bt.size}")
        e.type = bt.element
        return e

    def x_SliceExpr(self, e: A.SliceExpr, scope: Scope, expected: Expected) -> A.Expression:
        e.expr = self.expr(e.expr, scope)
        hi = self.const_int(e.hi, scope, "slice bound")
        lo = self.const_int(e.lo, scope, "slice bound")
        bt = T.strip_newtype(e.expr.type)
        if hi is None or lo is None or bt is POISON:
            raise Abort
        if isinstance(bt, T.InfInt):
            if e.expr.const_value is None:
                raise Abort
            width = max(hi + 1, 1)
        elif isinstance(bt, T.Bits):
            width = bt.width
        else:
            self.err(e.loc, f"cannot slice a value of type {e.expr.type}")
            raise Abort
        if not (0 <= lo <= hi < width):
            self.err(e.loc, f"slice [{hi}:{lo}] out of range for {e.expr.type}")
            raise Abort
        e.hi_value, e.lo_value = hi, lo
        e.type = T.Bits(hi - lo + 1)
        if e.expr.const_value is not None:
            e.const_value = (e.expr.const_value >> lo) & ((1 << (hi - lo + 1)) - 1)
        return e

    def x_ListExpr(self, e: A.ListExpr, scope: Scope, expected: Expected) -> A.Expression:
        exp = T.strip_newtype(expected) if expected is not None else None
        if isinstance(exp, T.StructLike) and not isinstance(exp, T.HeaderUnionType):
            if len(e.items) != len(exp.fields):
                self.err(e.loc, f"{exp} has {len(exp.fields)} fields, the list has {len(e.items)}")
                raise Abort
            e.items = [self.coerce(self.expr(it, scope, f.type), f.type, it.loc)
                       for it, f in zip(e.items, exp.fields, strict=True)]
            e.type = expected
            return e
        if isinstance(exp, T.TupleType) and len(exp.elements) == len(e.items):
            e.items = [self.coerce(self.expr(it, scope, t), t, it.loc)
                       for it, t in zip(e.items, exp.elements, strict=True)]
            e.type = expected
            return e
        e.items = [self.expr(it, scope) for it in e.items]
        for it in e.items:
            if isinstance(T.strip_newtype(it.type), T.InfInt):
                # nothing gives this element a width (e.g. hash data {a, 5})
                self.err(it.loc, "list element needs a width; cast the integer, e.g. 8w5")
                raise Abort
        e.type = T.TupleType([it.type for it in e.items])
        return e

    def x_StructInitExpr(self, e: A.StructInitExpr, scope: Scope,
                         expected: Expected) -> A.Expression:
        exp = T.strip_newtype(expected) if expected is not None else None
        if not isinstance(exp, T.StructLike) or isinstance(exp, T.HeaderUnionType):
            e.fields = [(n, self.expr(v, scope)) for n, v in e.fields]
            e.type = T.StructInitType([T.Field(n, v.type) for n, v in e.fields])
            return e
        names = [n for n, _ in e.fields]
        want = [f.name for f in exp.fields]
        if sorted(names) != sorted(want) or len(set(names)) != len(names):
            missing = [n for n in want if n not in names]
            extra = [n for n in names if n not in want]
            detail = "; ".join(x for x in (
                f"missing {', '.join(missing)}" if missing else "",
                f"unknown {', '.join(extra)}" if extra else "") if x) or "duplicate fields"
            self.err(e.loc, f"initializer for {exp}: {detail}")
            raise Abort
        out = []
        for n, v in e.fields:
            f = exp.field_named(n)
            assert f is not None  # the names were compared above
            out.append((n, self.coerce(self.expr(v, scope, f.type), f.type, v.loc)))
        e.fields = out
        e.type = expected
        return e

    def x_MaskExpr(self, e: A.MaskExpr, scope: Scope, expected: Expected) -> A.Expression:
        self.err(e.loc, "'&&&' is only allowed in keysets")
        raise Abort

    def x_RangeExpr(self, e: A.RangeExpr, scope: Scope, expected: Expected) -> A.Expression:
        self.err(e.loc, "'..' is only allowed in keysets")
        raise Abort

    def x_SelectExpr(self, e: A.SelectExpr, scope: Scope, expected: Expected) -> A.Expression:
        self.err(e.loc, "select is only allowed in a transition")
        raise Abort

    # -- conversions
    def coerce(self, e: A.Expression, t: T.P4Type, loc: A.Loc) -> A.Expression:
        """Convert `e` to type `t` where P4 allows it implicitly, else report an error."""
        if e.type is POISON or t is POISON or t is None:
            return e
        if same_type(e.type, t):
            return e
        s, d = T.strip_newtype(e.type), T.strip_newtype(t)
        if isinstance(d, T.TypeVar):
            return e
        if isinstance(s, T.InfInt) and isinstance(d, T.Bits):
            v = e.const_value
            if v is None:
                self.err(loc, f"expected {t}, got an unsized integer expression")
                return e
            w = wrap(v, d)
            if (not d.signed and (v < 0 or v >= 1 << d.width)) or (
                    d.signed and not (-(1 << (d.width - 1)) <= v < (1 << (d.width - 1)))):
                self.r.warning(loc, f"value {shown(v)} does not fit in {d}; truncated to {shown(w)}")
            if isinstance(e, A.IntLiteral):
                e.type, e.const_value = t, w
                return e
            c = self.implicit_cast(e, t)
            c.const_value = w
            return c
        if isinstance(s, T.EnumType) and s.underlying is not None and same_type(s.underlying, d):
            c = self.implicit_cast(e, t)
            c.const_value = e.const_value
            return c
        if isinstance(d, T.StructLike | T.TupleType) and isinstance(
                e, A.ListExpr | A.StructInitExpr) and not same_type(e.type, t):
            return e
        if isinstance(s, T.DontCareType):
            return e
        if isinstance(e.type, T.NewType) or isinstance(t, T.NewType):
            self.err(loc, f"expected {t}, got {e.type}; cast explicitly")
            return e
        hint = ""
        if isinstance(s, T.Bits) and isinstance(d, T.Bits):
            hint = " (P4 does not change widths implicitly; cast it)"
        elif isinstance(s, T.Bits) and isinstance(d, T.BoolType):
            hint = " (bool and bit<1> are distinct; compare with 1)"
        self.err(loc, f"expected {t}, got {e.type}{hint}")
        return e

    def implicit_cast(self, e: A.Expression, t: T.P4Type) -> A.CastExpr:
        c = A.CastExpr(loc=e.loc, type_ref=None, expr=e, implicit=True)
        c.type = t
        return c


def shown(v: object) -> str:
    """A value for a message: very large integers abbreviated (CPython refuses to print an
    int of more than 4,300 decimal digits)."""
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > 256:
        return f"{hex(v)[:18]}... ({v.bit_length()} bits)"
    return str(v)
