"""Checking pass: calls (P4_16 spec sections 6.8, 8.17, 8.20).

Every call is classified (`CallKind`) and its arguments are bound in
parameter order (named arguments reordered, defaults filled in), with type
arguments of generic externs inferred from the arguments.
"""

from __future__ import annotations

from typing import cast

from .. import ast as A
from .. import types as T
from ..ast import expr_text
from .base import Abort, CheckerBase, Expected
from .scope import Scope
from .typeops import POISON, contains_typevar, same_type, substitute


class CallChecks(CheckerBase):
    """Calls of actions, functions, extern functions and methods; argument binding."""

    def x_CallExpr(self, e: A.CallExpr, scope: Scope, expected: Expected) -> A.Expression:
        callee = e.callee
        e.type_args = [self.resolve(t, scope) for t in e.type_arg_refs]
        if isinstance(callee, A.TypeNameExpr):
            self.err(e.loc, "a constructor call is only allowed as an instantiation argument")
            raise Abort
        if isinstance(callee, A.MemberExpr):
            # checking a name or a member gives back the same node, annotated
            e.callee = callee = cast(A.MemberExpr, self.expr(callee, scope))
            if callee.type is POISON or callee.kind is not A.MemberKind.METHOD:
                if callee.type is not POISON:
                    self.err(e.loc, f"'{expr_text(callee)}' is not a method")
                raise Abort
            return self.method_call(e, callee, scope)
        if isinstance(callee, A.PathExpr):
            e.callee = callee = cast(A.PathExpr, self.expr(callee, scope))
            d = callee.decl
            if isinstance(d, A.ActionDecl):
                return self.action_call(e, d, scope)
            if isinstance(d, A.FunctionDecl):
                e.kind, e.target, e.method = A.CallKind.FUNCTION, d, d.name
                if d.type is None:
                    raise Abort
                e.params = d.type.params
                e.bound_args = self.bind_args(e.args, e.params, scope, e.loc, f"'{d.name}'")
                e.type = d.type.return_type
                return e
            if isinstance(d, A.ExternFunctionDecl):
                overloads = [x for x in scope.lookup(callee.name) if isinstance(x, A.ExternFunctionDecl)]
                return self.extern_call(e, overloads, scope)
            self.err(e.loc, f"'{callee.name}' is not callable")
            raise Abort
        self.err(e.loc, "this expression cannot be called")
        raise Abort

    def action_call(self, e: A.CallExpr, d: A.ActionDecl, scope: Scope) -> A.CallExpr:
        e.kind, e.target, e.method = A.CallKind.ACTION, d, d.name
        cur = self._current_fn
        if isinstance(cur, A.FunctionDecl) or self._in_parser:
            self.err(e.loc, "actions may only be called from controls and actions")
        if d.type is None:
            raise Abort
        e.params = d.type.params
        e.bound_args = self.bind_args(e.args, e.params, scope, e.loc, f"action '{d.name}'")
        e.type = T.VOID
        return e

    def extern_call(self, e: A.CallExpr, overloads: list[A.ExternFunctionDecl],
                    scope: Scope) -> A.CallExpr:
        cands = [d for d in overloads if d.type is not None and _arity_ok(d.type.params, e.args)]
        if not cands:
            self.err(e.loc, f"no overload of '{overloads[0].name}' takes {len(e.args)} argument(s)")
            raise Abort
        d = cands[-1] if len(cands) == 1 else max(cands, key=lambda c: len(c.type.params))
        e.kind, e.target, e.method = A.CallKind.EXTERN_FUNCTION, d, d.name
        self.generic_call(e, d.type, scope, {})
        if d.name == "digest":
            self.digest_calls.append(e)
        if d.name == "verify" and not self._in_parser:
            self.err(e.loc, "verify() may only be called in a parser")
        return e

    def method_call(self, e: A.CallExpr, callee: A.MemberExpr, scope: Scope) -> A.CallExpr:
        base = callee.expr
        bt = base.type
        mem = callee.member
        e.receiver = base
        e.method = mem
        if isinstance(bt, T.HeaderType | T.HeaderUnionType):
            kind = {"isValid": A.CallKind.HEADER_IS_VALID, "setValid": A.CallKind.HEADER_SET_VALID,
                    "setInvalid": A.CallKind.HEADER_SET_INVALID}[mem]
            e.kind = kind
            self.no_args(e, 0)
            if kind is A.CallKind.HEADER_IS_VALID:
                e.type = T.BOOL
            else:
                if isinstance(bt, T.HeaderUnionType):
                    self.err(e.loc, f"header_union has no '{mem}' (use its member headers)")
                self.check_writable(base, scope, f"call {mem}() on")
                e.type = T.VOID
            return e
        if isinstance(bt, T.HeaderStack):
            e.kind = A.CallKind.STACK_PUSH_FRONT if mem == "push_front" else A.CallKind.STACK_POP_FRONT
            self.no_args(e, 1)
            p = T.Param("count", "in", T.INFINT)
            e.params = [p]
            count = self.expr(e.args[0].value, scope)
            e.bound_args = [count]
            n = count.const_value
            if not isinstance(n, int) or isinstance(n, bool) or n < 0:
                self.err(e.args[0].loc, f"{mem} needs a non-negative compile-time integer")
            self.check_writable(base, scope, f"call {mem}() on")
            e.type = T.VOID
            return e
        if isinstance(bt, T.TableType):
            e.kind = A.CallKind.TABLE_APPLY
            e.target = bt.decl
            self.no_args(e, 0)
            if self._in_parser or isinstance(self._current_fn, A.FunctionDecl | A.ActionDecl):
                self.err(e.loc, "tables may only be applied in a control's apply block")
            e.type = T.TableResultType(bt.decl)
            return e
        inst = base.decl if isinstance(base, A.PathExpr) else None
        spec = bt if isinstance(bt, T.SpecializedType) else None
        ext = spec.base if spec else bt
        if isinstance(ext, T.ParserType) and mem == "apply":
            decl = ext.decl
            e.kind = A.CallKind.PARSER_APPLY if isinstance(decl, A.ParserDecl) and not isinstance(
                ext, T.ControlType) else A.CallKind.CONTROL_APPLY
            e.target = inst
            e.params = ext.params
            e.bound_args = self.bind_args(e.args, e.params, scope, e.loc, f"'{ext.name}.apply'")
            e.type = T.VOID
            return e
        if isinstance(ext, T.ExternType):
            env = {tv.name: a for tv, a in zip(ext.type_params, spec.args if spec else [],
                                                 strict=False)}
            methods = [m for m in ext.methods_named(mem) if _arity_ok(m.params, e.args)]
            if not methods:
                self.err(e.loc, f"no overload of '{ext.name}.{mem}' takes {len(e.args)} argument(s)")
                raise Abort
            m = methods[0]
            e.target = inst
            if ext.name == "packet_in":
                if not self._in_parser:
                    self.err(e.loc, f"packet_in.{mem} may only be used in a parser")
                e.kind = {"extract": A.CallKind.PACKET_EXTRACT,
                          "lookahead": A.CallKind.PACKET_LOOKAHEAD,
                          "advance": A.CallKind.PACKET_ADVANCE,
                          "length": A.CallKind.PACKET_LENGTH}.get(mem, A.CallKind.EXTERN_METHOD)
            elif ext.name == "packet_out":
                e.kind = A.CallKind.PACKET_EMIT
            else:
                e.kind = A.CallKind.EXTERN_METHOD
            self.generic_call(e, m, scope, env)
            if e.kind is A.CallKind.PACKET_EXTRACT:
                self.check_extract(e)
            elif e.kind is A.CallKind.PACKET_LOOKAHEAD:
                if not e.type_args or not T.strip_newtype(e.type_args[0]).is_fixed_width():
                    self.err(e.loc, "lookahead needs a fixed-width type argument, "
                                    "e.g. lookahead<bit<8>>()")
            elif e.kind is A.CallKind.PACKET_EMIT and e.bound_args and e.bound_args[0] is not None:
                at = e.bound_args[0].type
                if not isinstance(at, T.StructLike | T.HeaderStack) and at is not POISON:
                    self.err(e.bound_args[0].loc, f"emit needs a header, header stack, union "
                                                  f"or struct of them, not {at}")
            return e
        self.err(e.loc, f"{bt} has no method '{mem}'")
        raise Abort

    def check_extract(self, e: A.CallExpr) -> None:
        if not e.bound_args or e.bound_args[0] is None:
            return
        hdr = e.bound_args[0]
        ht = hdr.type
        if ht is POISON:
            return
        if not isinstance(ht, T.HeaderType):
            self.err(hdr.loc, f"extract needs a header, not {ht}")
            return
        has_varbit = any(isinstance(f.type, T.Varbit) for f in ht.fields)
        if len(e.args) == 1 and has_varbit:
            self.err(e.loc, f"header {ht} has a varbit field: extract it with two arguments")
        if len(e.args) == 2 and not has_varbit:
            self.err(e.loc, f"two-argument extract needs a header with a varbit field, not {ht}")

    def no_args(self, e: A.CallExpr, n: int) -> None:
        if len(e.args) != n:
            self.err(e.loc, f"'{e.method}' takes {n} argument(s), got {len(e.args)}")
            raise Abort

    def generic_call(self, e: A.CallExpr, m: T.MethodType, scope: Scope,
                     env: dict[str, T.P4Type]) -> None:
        """Bind arguments of a (possibly generic) extern method/function, inferring type vars."""
        env = dict(env)
        if e.type_args:
            if len(e.type_args) != len(m.type_params):
                self.err(e.loc, f"'{m.name}' takes {len(m.type_params)} type argument(s)")
                raise Abort
            for tv, a in zip(m.type_params, e.type_args, strict=True):
                env[tv.name] = a
        ordered = self.order_args(e.args, m.params, e.loc, f"'{m.name}'")
        bound: list[A.Expression | None] = [None] * len(m.params)
        # first the arguments that fix type variables, then unsized literals
        later = []
        for i, (p, a) in enumerate(zip(m.params, ordered, strict=True)):
            if a is None:
                continue
            pt = substitute(p.type, env)
            if contains_typevar(pt) and _is_unsized(a.value):
                later.append(i)
                continue
            bound[i] = self.bind_one(a.value, p, pt, scope, env)
        for i in later:
            p = m.params[i]
            pt = substitute(p.type, env)
            arg = ordered[i]
            assert arg is not None  # only given arguments were put off
            bound[i] = self.bind_one(arg.value, p, pt, scope, env)
        e.bound_args = bound
        e.params = [T.Param(p.name, p.direction, substitute(p.type, env), p.optional, p.default,
                            p.decl) for p in m.params]
        if not e.type_args:
            e.type_args = [env.get(tv.name, tv) for tv in m.type_params]
        for tv in m.type_params:
            if tv.name not in env:
                if not any(b is not None and b.type is POISON for b in bound):
                    self.err(e.loc, f"cannot infer type argument '{tv.name}' of '{m.name}'")
                raise Abort
        e.type = substitute(m.return_type, env)

    def bind_one(self, a: A.Expression, p: T.Param, pt: T.P4Type, scope: Scope,
                 env: dict[str, T.P4Type]) -> A.Expression:
        if isinstance(pt, T.TypeVar):
            a = self.expr(a, scope)
            at = a.type
            if isinstance(T.strip_newtype(at), T.InfInt):
                if pt.name not in env and a.const_value is not None and a.const_value >= 0:
                    # nothing else fixes the type variable: an index-like constant, as
                    # `r.read(v, 0)` on register<bit<32>>; v1model indexes are bit<32>
                    env[pt.name] = T.Bits(32)
                if pt.name in env:
                    a = self.coerce(a, env[pt.name], a.loc)
                else:
                    self.err(a.loc, f"argument '{p.name}' needs a width (cast the integer)")
            elif isinstance(at, T.StructInitType):
                self.err(a.loc, f"argument '{p.name}': cannot infer the struct type of this "
                                f"initializer")
            elif at is not POISON and pt.name not in env:
                env[pt.name] = at
            elif at is not POISON and not same_type(env[pt.name], at):
                a = self.coerce(a, env[pt.name], a.loc)
        else:
            a = self.coerce(self.expr(a, scope, pt), pt, a.loc)
        self.check_direction(a, p, scope)
        return a

    def check_direction(self, a: A.Expression, p: T.Param, scope: Scope) -> None:
        if p.direction in ("out", "inout"):
            if isinstance(a, A.DontCareExpr) and p.direction == "out":
                return
            self.check_writable(a, scope, f"pass as '{p.direction}' argument '{p.name}'")

    def order_args(self, args: list[A.Argument], params: list[T.Param], loc: A.Loc,
                   what: str) -> list[A.Argument | None]:
        """Match positional/named arguments to parameters (spec 6.8.1)."""
        out: list[A.Argument | None] = [None] * len(params)
        named = any(a.name for a in args)
        if named and not all(a.name for a in args):
            self.err(loc, f"{what}: do not mix named and positional arguments")
            raise Abort
        if len(args) > len(params):
            self.err(loc, f"{what} takes {len(params)} argument(s), got {len(args)}")
            raise Abort
        if named:
            for a in args:
                idx = next((i for i, p in enumerate(params) if p.name == a.name), None)
                if idx is None:
                    self.err(a.loc, f"{what} has no parameter '{a.name}'")
                    raise Abort
                if out[idx] is not None:
                    self.err(a.loc, f"argument '{a.name}' given twice")
                    raise Abort
                out[idx] = a
        else:
            for i, a in enumerate(args):
                out[i] = a
        for i, p in enumerate(params):
            if out[i] is None:
                if p.default is not None:
                    out[i] = A.Argument(loc=loc, value=p.default)
                elif not p.optional:
                    self.err(loc, f"{what}: missing argument '{p.name}'")
                    raise Abort
        return out

    def bind_args(self, args: list[A.Argument], params: list[T.Param], scope: Scope,
                  loc: A.Loc, what: str) -> list[A.Expression | None]:
        """Check arguments against non-generic parameters; returns them in parameter order."""
        try:
            ordered = self.order_args(args, params, loc, what)
        except Abort:
            return [None] * len(params)
        out: list[A.Expression | None] = []
        for p, a in zip(params, ordered, strict=True):
            if a is None:
                out.append(None)
                continue
            v = self.coerce(self.expr(a.value, scope, p.type), p.type, a.value.loc)
            self.check_direction(v, p, scope)
            out.append(v)
        return out


def _arity_ok(params: list[T.Param], args: list[A.Argument]) -> bool:
    if any(a.name for a in args):
        names = {p.name for p in params}
        return all(a.name in names for a in args)
    required = sum(1 for p in params if not p.optional and p.default is None)
    return required <= len(args) <= len(params)


def _is_unsized(e: A.Expression) -> bool:
    return isinstance(e, A.IntLiteral) and e.width is None
