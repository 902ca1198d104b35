"""Checking pass: parsers, controls, actions, functions and instantiations (spec 12-14).

A parser or control declares its parameters and locals in a scope of its own;
parser states and select keysets are checked here, table declarations are
handed to tables.py, bodies to statements.py.
"""

from __future__ import annotations

from typing import Any, cast

from .. import ast as A
from .. import types as T
from .base import Abort, CheckerBase
from .scope import Scope
from .typeops import POISON, same_type, substitute


class BlockChecks(CheckerBase):
    """Parsers, controls, actions, functions, instantiations and the main package."""

    def instantiation(self, d: A.Instantiation, scope: Scope) -> None:
        t = self.resolve(d.type_ref, scope)
        d.type = t
        base = t.base if isinstance(t, T.SpecializedType) else t
        env: dict[str, T.P4Type] = {}
        if isinstance(t, T.SpecializedType):
            generic: Any = base  # a specialised type's base is generic (has type_params)
            env = {tv.name: a for tv, a in zip(generic.type_params, t.args, strict=False)}
        if t is POISON:
            return
        if isinstance(base, T.ExternType):
            ctors = [c for c in base.constructors if len(c.params) == len(d.args)]
            if not ctors:
                self.err(d.loc, f"no constructor of '{base.name}' takes {len(d.args)} argument(s)")
                return
            ctor = ctors[0]
            params = [T.Param(p.name, p.direction, substitute(p.type, env), p.optional,
                              p.default, p.decl) for p in ctor.params]
            d.bound_args = self.bind_args(d.args, params, scope, d.loc, f"'{base.name}'")
            self.instances.append(d)
        elif isinstance(base, T.PackageType):
            self.package_instance(d, base, scope)
        elif isinstance(base, T.ParserType):
            decl = base.decl
            if not isinstance(decl, A.ParserDecl | A.ControlDecl):
                self.err(d.loc, f"cannot instantiate the prototype '{base.name}'")
                return
            d.bound_args = self.ctor_args(d.args, decl, scope, d.loc)
            self.instances.append(d)
        else:
            self.err(d.loc, f"cannot instantiate {t}")

    def ctor_args(self, args: list[A.Argument], decl: A.ParserDecl | A.ControlDecl,
                  scope: Scope, loc: A.Loc) -> list[A.Expression | None]:
        """Constructor arguments of a parser or control (spec 14): compile-time values, or
        instances (of parsers, controls, externs) whose type fits the parameter."""
        t = decl.type
        params = t.ctor_params if isinstance(t, T.ParserType) else []
        try:
            ordered = self.order_args(args, params, loc, f"'{decl.name}'")
        except Abort:
            return [None] * len(params)
        out: list[A.Expression | None] = []
        for p, a in zip(params, ordered, strict=True):
            if a is None:
                out.append(None)
                continue
            pt = p.type
            base = pt.base if isinstance(pt, T.SpecializedType) else pt
            if isinstance(base, T.ParserType | T.ExternType):
                v = self.expr(a.value, scope)
                vt = v.type.base if isinstance(v.type, T.SpecializedType) else v.type
                ok = vt is POISON or (type(vt) is type(base) and (
                    isinstance(base, T.ExternType) and vt.name == base.name
                    or isinstance(base, T.ParserType) and isinstance(vt, T.ParserType)
                    and _same_apply(vt, base)))
                if not ok:
                    self.err(v.loc, f"constructor argument '{p.name}' must be a {pt}, not {v.type}")
                out.append(v)
                continue
            v = self.coerce(self.expr(a.value, scope, pt), pt, a.value.loc)
            if v.const_value is None and v.type is not POISON and not _is_ctor_param(v):
                self.err(v.loc, f"constructor argument '{p.name}' must be a compile-time constant")
            out.append(v)
        return out

    def package_instance(self, d: A.Instantiation, pkg: T.PackageType, scope: Scope) -> None:
        if len(d.args) != len(pkg.params):
            self.err(d.loc, f"package '{pkg.name}' takes {len(pkg.params)} argument(s), "
                            f"got {len(d.args)}")
            return
        blocks: list[A.ParserDecl | A.ControlDecl | None] = []
        for arg, p in zip(d.args, pkg.params, strict=True):
            v = arg.value
            if not (isinstance(v, A.CallExpr) and isinstance(v.callee, A.TypeNameExpr)):
                self.err(v.loc, f"argument '{p.name}' must instantiate a parser or control")
                blocks.append(None)
                continue
            bt = self.resolve(v.callee.type_ref, scope)
            v.callee.type = bt
            v.callee.decl = getattr(bt, "decl", None)
            v.kind = A.CallKind.CONSTRUCTOR
            v.type = bt
            decl = getattr(bt, "decl", None)
            v.target = decl
            if isinstance(decl, A.ParserDecl | A.ControlDecl):
                v.bound_args = self.ctor_args(v.args, decl, scope, v.loc)
            proto = p.type.base if isinstance(p.type, T.SpecializedType) else p.type
            if bt is POISON:
                blocks.append(None)
                continue
            if not isinstance(decl, A.ParserDecl | A.ControlDecl):
                self.err(v.loc, f"'{bt}' is not a parser or control declaration")
                blocks.append(None)
                continue
            want_parser = not isinstance(proto, T.ControlType)
            if want_parser != isinstance(decl, A.ParserDecl):
                self.err(v.loc, f"argument '{p.name}' of '{pkg.name}' must be a "
                                f"{'parser' if want_parser else 'control'}")
                blocks.append(None)
                continue
            if isinstance(proto, T.ParserType):
                self.match_block_signature(decl, proto, v.loc)
            blocks.append(decl)
        d.fqname = d.name
        d.bound_args = [a.value for a in d.args]
        if self.main_inst is None and d.name == "main":
            self.main_inst = d
            d.blocks = blocks  # type: ignore[attr-defined]

    def match_block_signature(self, decl: A.ParserDecl | A.ControlDecl, proto: T.ParserType,
                              loc: A.Loc) -> None:
        if len(decl.params) != len(proto.params):
            self.err(loc, f"'{decl.name}' has {len(decl.params)} parameter(s) but "
                          f"'{proto.name}' needs {len(proto.params)}")
            return
        for p, q in zip(decl.params, proto.params, strict=True):
            if p.direction != q.direction:
                self.err(p.loc, f"parameter '{p.name}' of '{decl.name}' must be "
                                f"'{q.direction or 'directionless'}' as in '{proto.name}'")
            elif not isinstance(q.type, T.TypeVar) and p.type is not POISON \
                    and not same_type(p.type, q.type):
                self.err(p.loc, f"parameter '{p.name}' of '{decl.name}' must have type {q.type}, "
                                f"not {p.type}")

    def _block_head(self, d: A.ParserDecl | A.ControlDecl, kind: str,
                    type_cls: type[T.ParserType]) -> Scope:
        """Type, parameters and locals of a parser or control; returns its scope."""
        if d.type_params:
            self.unsupported(d.loc, f"generic {kind} declarations")
        s = Scope(self.global_scope, kind=kind, owner=d)
        ps = self.params(d.params, s, kind)
        cps = self.params(d.ctor_params, s, kind)
        for cp in d.ctor_params:
            cp.is_ctor = True  # type: ignore[attr-defined]  # known when an instance is built
        d.type = type_cls(d.name, [], ps, cps, decl=d)
        self.types[d.name] = d.type
        for p in d.params + d.ctor_params:
            self.declare(s, p.name, p)
        for loc_decl in d.locals:
            self.local_decl(loc_decl, s, d)
        return s

    def parser_decl(self, d: A.ParserDecl) -> None:
        s = self._block_head(d, "parser", T.ParserType)
        names = set()
        for st in d.states:
            st.fqname = f"{d.name}.{st.name}"
            if st.name in names or st.name in ("accept", "reject"):
                self.err(st.loc, f"duplicate state '{st.name}'")
                continue
            names.add(st.name)
            self.declare(s, st.name, st)
        if "start" not in names:
            self.err(d.loc, f"parser '{d.name}' has no 'start' state")
        prev = self._in_parser
        self._in_parser = True
        try:
            for st in d.states:
                ss = Scope(s, kind="state", owner=st)
                for stmt in st.stmts:
                    self.stmt(stmt, ss)
                if st.transition is None:
                    self.err(st.loc, f"state '{st.name}' has no transition")
                elif isinstance(st.transition, A.SelectExpr):
                    self.select(st.transition, ss)
                else:  # the grammar allows a state name or a select
                    self.state_ref(cast(A.PathExpr, st.transition), ss)
        finally:
            self._in_parser = prev

    def state_ref(self, p: A.PathExpr, scope: Scope) -> None:
        found = scope.lookup(p.name)
        if not found or not isinstance(found[-1], A.ParserState):
            self.err(p.loc, f"unknown parser state '{p.name}'")
            p.type = POISON
            return
        p.decl = found[-1]
        p.type = T.StateType()

    def select(self, sel: A.SelectExpr, scope: Scope) -> None:
        key_types = []
        for i, k in enumerate(sel.keys):
            sel.keys[i] = k = self.expr(k, scope)
            kt = T.strip_newtype(k.type)
            if k.type is not POISON and not isinstance(kt, T.Bits | T.BoolType | T.EnumType |
                                                       T.ErrorType | T.InfInt):
                self.err(k.loc, f"select key must be bit<W>, int<W>, bool, enum or error, not {k.type}")
            if isinstance(kt, T.InfInt):
                self.err(k.loc, "select key needs a width (cast the integer)")
            key_types.append(k.type)
        sel.type = T.StateType()
        for case in sel.cases:
            case.keyset = self.keyset(case.keyset, key_types, scope)
            self.state_ref(case.state, scope)

    def keyset(self, ks: A.Expression, key_types: list[T.P4Type], scope: Scope) -> A.Expression:
        """Check a select or entry keyset against the key types (spec 13.6)."""
        if isinstance(ks, A.DefaultExpr | A.DontCareExpr):
            ks.type = T.DONTCARE
            return ks
        if len(key_types) == 1:
            if isinstance(ks, A.ListExpr) and len(ks.items) == 1:
                ks = ks.items[0]
            return self.simple_keyset(ks, key_types[0], scope)
        if not isinstance(ks, A.ListExpr):
            # a value set may cover a tuple of keys
            if isinstance(ks, A.PathExpr):
                e = self.expr(ks, scope)
                if isinstance(e.type, T.SetType):
                    return e
            self.err(ks.loc, f"keyset must be a tuple of {len(key_types)} elements")
            ks.type = POISON
            return ks
        if len(ks.items) != len(key_types):
            self.err(ks.loc, f"keyset has {len(ks.items)} elements, the key has {len(key_types)}")
            ks.type = POISON
            return ks
        ks.items = [self.simple_keyset(it, kt, scope)
                    for it, kt in zip(ks.items, key_types, strict=True)]
        ks.type = T.SetType(T.TupleType(list(key_types)))
        return ks

    def simple_keyset(self, ks: A.Expression, kt: T.P4Type, scope: Scope) -> A.Expression:
        if isinstance(ks, A.DefaultExpr | A.DontCareExpr):
            ks.type = T.DONTCARE
            return ks
        if isinstance(ks, A.MaskExpr):
            ks.value = self.const_operand(ks.value, kt, scope)
            ks.mask = self.const_operand(ks.mask, kt, scope)
            ks.type = T.SetType(kt)
            return ks
        if isinstance(ks, A.RangeExpr):
            ks.lo = self.const_operand(ks.lo, kt, scope)
            ks.hi = self.const_operand(ks.hi, kt, scope)
            ks.type = T.SetType(kt)
            return ks
        e = self.expr(ks, scope, kt)
        if isinstance(e.type, T.SetType):
            return e
        return self.const_operand(e, kt, scope, checked=True)

    def const_operand(self, e: A.Expression, t: T.P4Type, scope: Scope,
                      checked: bool = False) -> A.Expression:
        if not checked:
            e = self.expr(e, scope, t)
        e = self.coerce(e, t, e.loc)
        if e.const_value is None and e.type is not POISON:
            self.err(e.loc, "keyset value must be a compile-time constant")
        return e

    def local_decl(self, d: A.Declaration, scope: Scope, owner: Any) -> None:
        if isinstance(d, A.VariableDecl):
            self.var_decl(d, scope)
        elif isinstance(d, A.ConstantDecl):
            self.constant_decl(d, scope)
            self.declare(scope, d.name, d)
        elif isinstance(d, A.Instantiation):
            d.owner = owner
            self.instantiation(d, scope)
            d.fqname = self.fqname(d, owner)
            self.declare(scope, d.name, d)
        elif isinstance(d, A.ValueSetDecl):
            et = self.resolve(d.element, scope)
            n = self.const_int(d.size, scope, "value_set size")
            d.size_value = n or 0
            d.type = T.SetType(et)
            d.owner = owner
            d.fqname = self.fqname(d, owner)
            if not isinstance(owner, A.ParserDecl):
                self.err(d.loc, "value_set is only allowed in parsers")
            self.value_sets.append(d)
            self.declare(scope, d.name, d)
        elif isinstance(d, A.ActionDecl):
            self.declare(scope, d.name, d)
            self.action_decl(d, scope, owner)
        elif isinstance(d, A.TableDecl):
            self.declare(scope, d.name, d)
            self.table_decl(d, scope, owner)
        else:
            self.unsupported(d.loc, f"{type(d).__name__} here")

    def fqname(self, d: A.Declaration, owner: Any) -> str:
        """P4Info name: @name overrides (leading '.' = absolute), else Owner.local."""
        ann = A.find_annotation(d.annotations, "name")
        name = ann.string_arg() if ann is not None else None
        if name:
            if name.startswith("."):
                return name[1:]
            base = name
        else:
            base = d.name
        if owner is None:
            return base
        return f"{owner.name}.{base}"

    def var_decl(self, d: A.VariableDecl, scope: Scope) -> None:
        t = self.resolve(d.type_ref, scope)
        d.type = t
        if isinstance(t, T.InfInt):
            self.err(d.loc, f"variable '{d.name}' needs a fixed-width type, not int")
        if d.init is not None:
            d.init = self.coerce(self.expr(d.init, scope, t), t, d.init.loc)
        self.declare(scope, d.name, d)

    def control_decl(self, d: A.ControlDecl) -> None:
        s = self._block_head(d, "control", T.ControlType)
        for table, inst in self._synthesized:
            # anonymous table implementations become locals just before their table
            d.locals.insert(d.locals.index(table), inst)
        self._synthesized.clear()
        prev = self._current_fn
        self._current_fn = d
        try:
            self.block(d.body, Scope(s, kind="apply", owner=d))
        finally:
            self._current_fn = prev

    def action_decl(self, d: A.ActionDecl, scope: Scope, owner: Any = None) -> None:
        d.owner = owner
        d.fqname = self.fqname(d, owner)
        s = Scope(scope, kind="action", owner=d)
        ps = self.params(d.params, scope, "action")
        seen_data = False
        for p in d.params:
            if p.direction == "":
                seen_data = True
            elif seen_data:
                self.err(p.loc, "directional action parameters must come before action data")
            if p.direction == "" and p.type is not POISON and not isinstance(
                    T.strip_newtype(p.type), T.Bits | T.BoolType | T.EnumType):
                self.unsupported(p.loc, f"action data parameter of type {p.type}")
            self.declare(s, p.name, p)
        d.type = T.MethodType(d.name, [], ps, T.VOID, d)
        self.actions.append(d)
        prev = self._current_fn
        self._current_fn = d
        try:
            self.block(d.body, s)
        finally:
            self._current_fn = prev

    def function_decl(self, d: A.FunctionDecl) -> None:
        if d.type_params:
            self.unsupported(d.loc, "generic functions")
        s = Scope(self.global_scope, kind="function", owner=d)
        ps = self.params(d.params, s, "function")
        rt = self.resolve(d.return_type, s)
        d.type = T.MethodType(d.name, [], ps, rt, d)
        for p in d.params:
            self.declare(s, p.name, p)
        prev = self._current_fn
        self._current_fn = d
        try:
            self.block(d.body, s)
        finally:
            self._current_fn = prev
        if rt is not T.VOID and rt is not POISON and not _always_returns(d.body):
            self.err(d.loc, f"function '{d.name}' may end without returning a value")


def _same_apply(a: T.ParserType, b: T.ParserType) -> bool:
    """Whether a parser/control fits a prototype: apply parameters alike in direction and type."""
    if len(a.params) != len(b.params):
        return False
    return all(p.direction == q.direction and (isinstance(q.type, T.TypeVar) or
                                               same_type(p.type, q.type))
               for p, q in zip(a.params, b.params, strict=True))


def _is_ctor_param(e: A.Expression) -> bool:
    """A constructor parameter passed on: its value is known when the instance is built."""
    return isinstance(e, A.PathExpr) and isinstance(e.decl, A.Param) and e.decl.direction == "" \
        and getattr(e.decl, "is_ctor", False)


def _always_returns(st: A.Statement | None) -> bool:
    if st is None:
        return False
    if isinstance(st, A.ReturnStmt | A.ExitStmt):
        return True
    if isinstance(st, A.BlockStmt):
        return any(_always_returns(s) for s in st.stmts)
    if isinstance(st, A.IfStmt):
        return _always_returns(st.then) and _always_returns(st.otherwise)
    return False
