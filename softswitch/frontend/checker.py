"""Name resolution, type checking and constant folding (P4_16 spec sections 6-14).

The checker walks the AST once in declaration order (P4 requires declaration
before use), annotating nodes in place as promised in ast.py, and reports every
problem it finds to the Reporter, continuing after errors where it can.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from . import ast as A
from . import types as T
from .diagnostics import Reporter


class _Poison(T.P4Type):
    """Type of an expression that already produced an error (suppresses follow-on errors)."""

    def __str__(self) -> str:
        return "<error>"


POISON = _Poison()

_TABLE_PROPS = {"key", "actions", "default_action", "entries", "size", "implementation",
                "counters", "meters", "support_timeout", "idle_timeout"}


class _TypeParamDecl:
    """A generic type parameter in scope."""

    def __init__(self, name: str):
        self.name = name
        self.type = T.TypeVar(name)


class _BuiltinState(A.ParserState):
    """`accept` / `reject`."""


class Scope:
    """A lexical scope: names to declarations, with a parent."""

    def __init__(self, parent: Scope | None = None, kind: str = "block", owner: Any = None):
        self.parent = parent
        self.names: dict[str, list[Any]] = {}
        self.kind = kind
        self.owner = owner

    def declare(self, name: str, decl: Any) -> None:
        self.names.setdefault(name, []).append(decl)

    def lookup(self, name: str) -> list[Any]:
        s: Scope | None = self
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        return []

    def root(self) -> Scope:
        s = self
        while s.parent is not None:
            s = s.parent
        return s

    def enclosing(self, kind: str) -> Any:
        s: Scope | None = self
        while s is not None:
            if s.kind == kind:
                return s.owner
            s = s.parent
        return None


def wrap(value: int, t: T.P4Type) -> int:
    """Reduce an integer to the range of bit<W>/int<W> (two's complement, spec 8.5/8.6)."""
    t = T.strip_newtype(t)
    if isinstance(t, T.Bits):
        value &= (1 << t.width) - 1
        if t.signed and t.width and value >> (t.width - 1):
            value -= 1 << t.width
    return value


def same_type(a: T.P4Type, b: T.P4Type) -> bool:
    """Structural equality for unnamed types, identity for named ones."""
    if a is b:
        return True
    if isinstance(a, T.Bits | T.Varbit | T.BoolType | T.InfInt | T.StringType | T.VoidType):
        return a == b
    if isinstance(a, T.ErrorType) and isinstance(b, T.ErrorType):
        return True
    if isinstance(a, T.HeaderStack) and isinstance(b, T.HeaderStack):
        return a.size == b.size and same_type(a.element, b.element)
    if isinstance(a, T.TupleType) and isinstance(b, T.TupleType):
        return len(a.elements) == len(b.elements) and all(
            same_type(x, y) for x, y in zip(a.elements, b.elements, strict=True))
    if isinstance(a, T.SpecializedType) and isinstance(b, T.SpecializedType):
        return a.base is b.base and len(a.args) == len(b.args) and all(
            same_type(x, y) for x, y in zip(a.args, b.args, strict=True))
    return False


def expr_text(e: A.Expression) -> str:
    """The source-like text of an expression (p4c's P4Info key names)."""
    if isinstance(e, A.PathExpr):
        return ("." if e.absolute else "") + e.name
    if isinstance(e, A.MemberExpr):
        if isinstance(e.expr, A.TypeNameExpr):
            return f"{_tref_text(e.expr.type_ref)}.{e.member}"
        return f"{expr_text(e.expr)}.{e.member}"
    if isinstance(e, A.IndexExpr):
        return f"{expr_text(e.expr)}[{expr_text(e.index)}]"
    if isinstance(e, A.SliceExpr):
        return f"{expr_text(e.expr)}[{expr_text(e.hi)}:{expr_text(e.lo)}]"
    if isinstance(e, A.CallExpr):
        return f"{expr_text(e.callee)}(" + ", ".join(expr_text(a.value) for a in e.args) + ")"
    if isinstance(e, A.IntLiteral):
        return e.text or str(e.value)
    if isinstance(e, A.BoolLiteral):
        return "true" if e.value else "false"
    if isinstance(e, A.CastExpr) and e.type_ref is not None:
        return f"({_tref_text(e.type_ref)})({expr_text(e.expr)})"
    if isinstance(e, A.CastExpr):
        return expr_text(e.expr)
    if isinstance(e, A.BinaryExpr):
        return f"{expr_text(e.left)} {e.op} {expr_text(e.right)}"
    if isinstance(e, A.UnaryExpr):
        return f"{e.op}{expr_text(e.operand)}"
    return "?"


def _tref_text(t: A.TypeRef) -> str:
    if isinstance(t, A.NamedTypeRef):
        return t.name
    if isinstance(t, A.BaseTypeRef):
        return t.name
    if isinstance(t, A.BitsTypeRef):
        w = t.width.value if isinstance(t.width, A.IntLiteral) else "?"
        return f"{'int' if t.signed else 'bit'}<{w}>"
    return "?"


def _contains_typevar(t: T.P4Type) -> bool:
    if isinstance(t, T.TypeVar):
        return True
    if isinstance(t, T.SpecializedType):
        return any(_contains_typevar(a) for a in t.args)
    if isinstance(t, T.TupleType):
        return any(_contains_typevar(a) for a in t.elements)
    if isinstance(t, T.HeaderStack):
        return _contains_typevar(t.element)
    return False


def substitute(t: T.P4Type, env: dict[str, T.P4Type]) -> T.P4Type:
    """Replace type variables bound in `env`."""
    if isinstance(t, T.TypeVar):
        return env.get(t.name, t)
    if isinstance(t, T.SpecializedType):
        return T.SpecializedType(t.base, [substitute(a, env) for a in t.args])
    if isinstance(t, T.TupleType):
        return T.TupleType([substitute(a, env) for a in t.elements])
    if isinstance(t, T.HeaderStack):
        return T.HeaderStack(substitute(t.element, env), t.size)
    return t


class Checker:
    """Checks one parsed program; results are annotations on the AST plus diagnostics."""

    def __init__(self, reporter: Reporter):
        self.r = reporter
        self.error_type = T.ErrorType()
        self.match_kind_type = T.MatchKindType()
        self.global_scope = Scope(kind="global")
        self.types: dict[str, T.P4Type] = {}
        self.main_inst: A.Instantiation | None = None
        self.tables: list[A.TableDecl] = []
        self.actions: list[A.ActionDecl] = []
        self.instances: list[A.Instantiation] = []
        self.value_sets: list[A.ValueSetDecl] = []
        self.digest_calls: list[A.CallExpr] = []
        self._current_fn: Any = None  # function/action/control being checked
        self._synthesized: list[tuple[A.TableDecl, A.Instantiation]] = []  # anonymous instances
        self._in_parser = False
        self._writes_allowed = True
        for st in ("accept", "reject"):
            self.global_scope.declare(st, _BuiltinState(name=st, loc=A.NOWHERE))

    # ================================================================ driver

    def check(self, prog: A.P4Program) -> None:
        """Check every top-level declaration in order."""
        for d in prog.decls:
            try:
                self.top_decl(d)
            except _Abort:
                pass
            except RecursionError:
                self.err(d.loc, "declaration nested too deeply")
            except Exception as exc:  # a checker bug must not become a traceback
                self.err(d.loc, f"internal error while checking this declaration: "
                                f"{type(exc).__name__}: {exc}")

    def err(self, loc: A.Loc, msg: str) -> None:
        self.r.error(loc, msg)

    def unsupported(self, loc: A.Loc, what: str) -> None:
        self.r.unsupported(loc, what)

    def declare(self, scope: Scope, name: str, decl: Any, overload: bool = False) -> None:
        existing = scope.names.get(name)
        if existing and not overload:
            self.err(decl.loc, f"duplicate declaration of '{name}'")
            return
        scope.declare(name, decl)

    # ================================================================ top level

    def top_decl(self, d: A.Declaration) -> None:
        g = self.global_scope
        if isinstance(d, A.ErrorDecl):
            for m in d.members:
                if m in self.error_type.members:
                    self.err(d.loc, f"duplicate error member '{m}'")
                else:
                    self.error_type.members.append(m)
        elif isinstance(d, A.MatchKindDecl):
            for m in d.members:
                if m in self.match_kind_type.members:
                    self.err(d.loc, f"duplicate match_kind member '{m}'")
                else:
                    self.match_kind_type.members.append(m)
        elif isinstance(d, A.HeaderDecl):
            self.declare(g, d.name, d)
            self.struct_like(d, g)
        elif isinstance(d, A.EnumDecl):
            self.declare(g, d.name, d)
            self.enum_decl(d, g)
        elif isinstance(d, A.TypedefDecl):
            self.declare(g, d.name, d)
            self.typedef(d, g)
        elif isinstance(d, A.ExternDecl):
            self.declare(g, d.name, d)
            self.extern_decl(d)
        elif isinstance(d, A.ExternFunctionDecl):
            self.declare(g, d.name, d, overload=True)
            self.extern_function(d)
        elif isinstance(d, A.ParserTypeDecl):  # also control/package prototypes
            self.declare(g, d.name, d)
            self.block_type_decl(d)
        elif isinstance(d, A.ParserDecl):
            self.declare(g, d.name, d)
            self.parser_decl(d)
        elif isinstance(d, A.ControlDecl):
            self.declare(g, d.name, d)
            self.control_decl(d)
        elif isinstance(d, A.ActionDecl):
            self.declare(g, d.name, d)
            self.action_decl(d, g)
        elif isinstance(d, A.FunctionDecl):
            self.declare(g, d.name, d)
            self.function_decl(d)
        elif isinstance(d, A.ConstantDecl):
            self.constant_decl(d, g)
            self.declare(g, d.name, d)
        elif isinstance(d, A.Instantiation):
            self.instantiation(d, g)
            if d.fqname is None:
                d.fqname = self.fqname(d, None)
            self.declare(g, d.name, d)
        else:
            self.unsupported(d.loc, f"top-level {type(d).__name__}")

    # ================================================================ types

    def resolve(self, tref: A.TypeRef, scope: Scope) -> T.P4Type:
        """Resolve a written type to a P4Type (typedefs expanded); errors give POISON."""
        t = self._resolve(tref, scope)
        tref.resolved = t
        return t

    def _resolve(self, tref: A.TypeRef, scope: Scope) -> T.P4Type:
        if isinstance(tref, A.BitsTypeRef):
            w = self.const_int(tref.width, scope, "width")
            if w is None:
                return POISON
            if w <= 0 or (tref.signed and w < 1):
                self.err(tref.loc, f"width must be positive, got {w}")
                return POISON
            return T.Bits(w, tref.signed)
        if isinstance(tref, A.VarbitTypeRef):
            w = self.const_int(tref.width, scope, "width")
            if w is None or w <= 0:
                if w is not None:
                    self.err(tref.loc, "varbit width must be positive")
                return POISON
            return T.Varbit(w)
        if isinstance(tref, A.BaseTypeRef):
            return {
                "bool": T.BOOL, "int": T.INFINT, "string": T.STRING, "void": T.VOID,
                "error": self.error_type, "match_kind": self.match_kind_type, "_": T.DONTCARE,
            }[tref.name]
        if isinstance(tref, A.StackTypeRef):
            el = self.resolve(tref.element, scope)
            n = self.const_int(tref.size, scope, "stack size")
            if n is None or el is POISON:
                return POISON
            if not isinstance(el, T.HeaderType | T.HeaderUnionType):
                self.err(tref.loc, f"header stack element must be a header, not {el}")
                return POISON
            if n <= 0:
                self.err(tref.loc, "header stack size must be positive")
                return POISON
            return T.HeaderStack(el, n)
        if isinstance(tref, A.TupleTypeRef):
            return T.TupleType([self.resolve(a, scope) for a in tref.args])
        if isinstance(tref, A.NamedTypeRef):
            found = scope.lookup(tref.name)
            if not found:
                self.err(tref.loc, f"unknown type '{tref.name}'")
                return POISON
            d = found[-1]
            base = self.decl_type(d, tref)
            if base is POISON:
                return POISON
            if tref.args:
                args = [self.resolve(a, scope) for a in tref.args]
                params = getattr(base, "type_params", None)
                # fewer arguments than parameters: the rest are inferred at each call
                # (p4c accepts `register<bit<32>>(N)` for `register<T, I>`)
                if params is not None and len(args) > len(params):
                    self.err(tref.loc, f"'{tref.name}' takes {len(params)} type argument(s), "
                                       f"got {len(args)}")
                    return POISON
                return T.SpecializedType(base, args)
            return base
        self.err(tref.loc, "unsupported type")
        return POISON

    def decl_type(self, d: Any, where: A.Node) -> T.P4Type:
        if isinstance(d, _TypeParamDecl):
            return d.type
        if isinstance(d, A.TypedefDecl | A.HeaderDecl | A.EnumDecl | A.ExternDecl |
                      A.ParserTypeDecl | A.ParserDecl | A.ControlDecl):
            return d.type if d.type is not None else POISON
        self.err(where.loc, f"'{getattr(d, 'name', '?')}' is not a type")
        return POISON

    def struct_like(self, d: A.HeaderDecl, scope: Scope) -> None:
        cls = {A.HeaderUnionDecl: T.HeaderUnionType, A.StructDecl: T.StructType}.get(
            type(d), T.HeaderType)
        t = cls(d.name, decl=d)
        d.type = t
        self.types[d.name] = t
        seen = set()
        varbits = 0
        for f in d.fields:
            ft = self.resolve(f.type_ref, scope)
            if f.name in seen:
                self.err(f.loc, f"duplicate field '{f.name}'")
                continue
            seen.add(f.name)
            if cls is T.HeaderType:
                if isinstance(ft, T.Varbit):
                    varbits += 1
                    if varbits > 1:
                        self.err(f.loc, "a header may have at most one varbit field")
                elif ft is not POISON and not isinstance(
                        T.strip_newtype(ft), T.Bits | T.BoolType | T.EnumType):
                    self.err(f.type_ref.loc, f"header field '{f.name}' must be bit<W>, int<W>, "
                                             f"bool, varbit or a serializable enum, not {ft}")
                elif isinstance(ft, T.EnumType) and ft.underlying is None:
                    self.err(f.type_ref.loc, f"enum '{ft}' in a header must be serializable")
            elif cls is T.HeaderUnionType and ft is not POISON and not isinstance(ft, T.HeaderType):
                self.err(f.type_ref.loc, f"header_union field '{f.name}' must be a header")
            t.fields.append(T.Field(f.name, ft, f.annotations, f))

    def enum_decl(self, d: A.EnumDecl, scope: Scope) -> None:
        t = T.EnumType(d.name, [m.name for m in d.members], decl=d)
        d.type = t
        self.types[d.name] = t
        if d.underlying is not None:
            ut = self.resolve(d.underlying, scope)
            if ut is POISON:
                return
            if not isinstance(ut, T.Bits):
                self.err(d.underlying.loc, f"enum underlying type must be bit<W> or int<W>, not {ut}")
                return
            t.underlying = ut
            for m in d.members:
                v = self.const_int(m.value, scope, "enum value", expected=ut)
                if v is not None:
                    t.values[m.name] = wrap(v, ut)
        if len(set(t.members)) != len(t.members):
            self.err(d.loc, f"duplicate member in enum '{d.name}'")

    def typedef(self, d: A.TypedefDecl, scope: Scope) -> None:
        ut = self.resolve(d.type_ref, scope)
        if d.newtype and ut is not POISON:
            d.type = T.NewType(d.name, ut, decl=d)
            if not isinstance(ut, T.Bits | T.BoolType):
                self.unsupported(d.loc, f"'type' over {ut} (only bit<W>, int<W>, bool)")
        else:
            d.type = ut
        self.types[d.name] = d.type

    def _type_params(self, names: list[str], scope: Scope) -> tuple[Scope, list[T.TypeVar]]:
        s = Scope(scope, kind="generic")
        tvs = []
        for n in names:
            p = _TypeParamDecl(n)
            s.declare(n, p)
            tvs.append(p.type)
        return s, tvs

    def params(self, params: list[A.Param], scope: Scope, ctx: str) -> list[T.Param]:
        out = []
        seen = set()
        for p in params:
            pt = self.resolve(p.type_ref, scope)
            p.type = pt
            if p.name in seen:
                self.err(p.loc, f"duplicate parameter '{p.name}'")
            seen.add(p.name)
            optional = A.find_annotation(p.annotations, "optional") is not None
            if p.default is not None:
                self.expr(p.default, scope, pt)
            out.append(T.Param(p.name, p.direction, pt, optional, p.default, p))
        return out

    def extern_decl(self, d: A.ExternDecl) -> None:
        s, tvs = self._type_params(d.type_params, self.global_scope)
        t = T.ExternType(d.name, tvs, decl=d)
        d.type = t
        self.types[d.name] = t
        for m in d.methods:
            if m.is_constructor:
                if m.name != d.name:
                    self.err(m.loc, f"constructor name '{m.name}' must match extern '{d.name}'")
                ps = self.params(m.params, s, "constructor")
                t.constructors.append(T.MethodType(m.name, [], ps, T.VOID, m))
            else:
                ms, mtvs = self._type_params(m.type_params, s)
                ps = self.params(m.params, ms, "method")
                rt = self.resolve(m.return_type, ms)
                t.methods.append(T.MethodType(m.name, mtvs, ps, rt, m))

    def extern_function(self, d: A.ExternFunctionDecl) -> None:
        s, tvs = self._type_params(d.type_params, self.global_scope)
        ps = self.params(d.params, s, "function")
        rt = self.resolve(d.return_type, s)
        d.type = T.MethodType(d.name, tvs, ps, rt, d)

    def block_type_decl(self, d: A.ParserTypeDecl) -> None:
        s, tvs = self._type_params(d.type_params, self.global_scope)
        ps = self.params(d.params, s, "block")
        if isinstance(d, A.PackageTypeDecl):
            d.type = T.PackageType(d.name, tvs, ps, decl=d)
        elif isinstance(d, A.ControlTypeDecl):
            d.type = T.ControlType(d.name, tvs, ps, decl=d)
        else:
            d.type = T.ParserType(d.name, tvs, ps, decl=d)
        self.types[d.name] = d.type

    # ================================================================ constants

    def const_int(self, e: A.Expression | None, scope: Scope, what: str,
                  expected: T.P4Type | None = None) -> int | None:
        """Check `e` and return its value when it is a compile-time integer."""
        if e is None:
            return None
        self.expr(e, scope, expected)
        v = e.const_value
        if isinstance(v, bool) or not isinstance(v, int):
            if e.type is not POISON:
                self.err(e.loc, f"{what} must be a compile-time integer constant")
            return None
        return v

    def constant_decl(self, d: A.ConstantDecl, scope: Scope) -> None:
        t = self.resolve(d.type_ref, scope)
        d.type = t
        d.value = self.coerce(self.expr(d.value, scope, t), t, d.value.loc)
        if d.value.const_value is None and d.value.type is not POISON:
            self.err(d.value.loc, f"value of constant '{d.name}' is not a compile-time constant")

    # ================================================================ blocks

    def instantiation(self, d: A.Instantiation, scope: Scope) -> None:
        t = self.resolve(d.type_ref, scope)
        d.type = t
        base = t.base if isinstance(t, T.SpecializedType) else t
        env: dict[str, T.P4Type] = {}
        if isinstance(t, T.SpecializedType):
            env = {tv.name: a for tv, a in zip(base.type_params, t.args, strict=False)}
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
            if d.args or decl.ctor_params:
                self.unsupported(d.loc, "constructor parameters of parsers/controls")
            self.instances.append(d)
        else:
            self.err(d.loc, f"cannot instantiate {t}")

    def package_instance(self, d: A.Instantiation, pkg: T.PackageType, scope: Scope) -> None:
        if len(d.args) != len(pkg.params):
            self.err(d.loc, f"package '{pkg.name}' takes {len(pkg.params)} argument(s), "
                            f"got {len(d.args)}")
            return
        blocks = []
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
            if v.args or (isinstance(decl, A.ParserDecl | A.ControlDecl) and decl.ctor_params):
                self.unsupported(v.loc, "constructor parameters of parsers/controls")
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

    def match_block_signature(self, decl, proto: T.ParserType, loc: A.Loc) -> None:
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

    def _block_head(self, d: A.ParserDecl | A.ControlDecl, kind: str, type_cls) -> Scope:
        """Type, parameters and locals of a parser or control; returns its scope."""
        if d.type_params:
            self.unsupported(d.loc, f"generic {kind} declarations")
        s = Scope(self.global_scope, kind=kind, owner=d)
        ps = self.params(d.params, s, kind)
        cps = self.params(d.ctor_params, s, kind)
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
                else:
                    self.state_ref(st.transition, ss)
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

    # ================================================================ tables

    def table_decl(self, d: A.TableDecl, scope: Scope, owner: Any) -> None:
        d.owner = owner
        d.fqname = self.fqname(d, owner)
        d.type = T.TableType(d)
        self.tables.append(d)
        seen: set[str] = set()
        key_types: list[T.P4Type] = []
        for prop in d.properties:
            if prop.name in seen:
                self.err(prop.loc, f"duplicate table property '{prop.name}'")
                continue
            seen.add(prop.name)
            if prop.name not in _TABLE_PROPS:
                self.err(prop.loc, f"unknown table property '{prop.name}'")
                continue
            if prop.name in ("support_timeout", "idle_timeout"):
                self.unsupported(prop.loc, f"table property '{prop.name}'")
                continue
            if prop.name == "key":
                d.keys = prop.value
                for k in d.keys:
                    k.expr = self.expr(k.expr, scope)
                    kt = T.strip_newtype(k.expr.type)
                    if k.expr.type is not POISON and not isinstance(
                            kt, T.Bits | T.BoolType | T.EnumType | T.ErrorType):
                        self.err(k.expr.loc, f"table key must be bit<W>, int<W>, bool, "
                                             f"enum or error, not {k.expr.type}")
                    if isinstance(kt, T.EnumType) and kt.underlying is None:
                        self.unsupported(k.expr.loc, "non-serializable enum as table key")
                    if k.match_kind not in self.match_kind_type.members:
                        self.err(k.loc, f"unknown match kind '{k.match_kind}'")
                    ann = A.find_annotation(k.annotations, "name")
                    k.name = (ann.string_arg() if ann else None) or expr_text(k.expr)
                    key_types.append(k.expr.type)
            elif prop.name == "actions":
                d.actions = prop.value
                names = set()
                for ref in d.actions:
                    self.action_ref(ref, scope, bind_all=False)
                    if ref.action is not None:
                        if ref.action.name in names:
                            self.err(ref.loc, f"action '{ref.action.name}' listed twice")
                        names.add(ref.action.name)
        for prop in d.properties:
            if prop.name == "default_action" and prop.name in seen:
                d.default_action = self.action_call_prop(prop.value, scope, d, "default_action")
                d.default_action_const = prop.const
            elif prop.name == "entries":
                d.entries = prop.value
                d.entries_const = prop.const
                if not prop.const:
                    self.unsupported(prop.loc, "non-const table entries")
                for en in d.entries:
                    self.table_entry(en, d, key_types, scope)
            elif prop.name == "size":
                d.size = prop.value
                d.size_value = self.const_int(prop.value, scope, "table size")
            elif prop.name == "implementation":
                d.implementation = self.table_extern_prop(
                    prop, scope, ("action_profile", "action_selector"), d, owner)
            elif prop.name == "counters":
                d.counters = self.table_extern_prop(prop, scope, ("direct_counter",), d, owner)
            elif prop.name == "meters":
                d.meters = self.table_extern_prop(prop, scope, ("direct_meter",), d, owner)
        if not d.actions and "actions" not in seen:
            self.err(d.loc, f"table '{d.name}' has no 'actions' property")
        has_selector = any(k.match_kind == "selector" for k in d.keys)
        impl_name = _extern_name(d.implementation)
        if has_selector and impl_name != "action_selector":
            self.err(d.loc, f"table '{d.name}' has 'selector' keys but no action_selector")
        if impl_name == "action_selector" and not has_selector:
            self.err(d.loc, f"table '{d.name}' uses an action_selector but has no 'selector' key")

    def table_extern_prop(self, prop: A.TableProperty, scope: Scope, kinds: tuple[str, ...],
                          table: A.TableDecl, owner: Any) -> A.Expression:
        e = prop.value
        if isinstance(e, A.CallExpr) and isinstance(e.callee, A.TypeNameExpr):
            # an anonymous instance (`implementation = action_profile(128);`): declared here
            # as a local of the control, named like p4c: @name on the property, else the
            # table's name
            inst = A.Instantiation(loc=e.loc, name=table.name, annotations=list(prop.annotations),
                                   type_ref=e.callee.type_ref, args=e.args, owner=owner)
            self.instantiation(inst, scope)
            if inst.type is POISON or inst.type is None:
                e.type = POISON
                return e
            inst.fqname = self.fqname(inst, owner)
            self._synthesized.append((table, inst))
            e = A.PathExpr(loc=e.loc, name=table.name, decl=inst)
            e.type = inst.type
        else:
            e = self.expr(e, scope)
        name = _extern_name(e)
        if e.type is not POISON and name not in kinds:
            self.err(e.loc, f"table property '{prop.name}' must name a {' or '.join(kinds)} "
                            f"instance")
        return e

    def action_ref(self, ref: A.ActionRef, scope: Scope, bind_all: bool) -> None:
        found = scope.lookup(ref.name.name)
        if ref.name.absolute:
            found = self.global_scope.lookup(ref.name.name)
        if not found or not isinstance(found[-1], A.ActionDecl):
            self.err(ref.name.loc, f"unknown action '{ref.name.name}'")
            return
        act = found[-1]
        ref.action = act
        ref.name.decl = act
        ref.name.type = T.ActionType(act)
        call = A.CallExpr(loc=ref.loc, callee=ref.name, args=ref.args)
        call.kind = A.CallKind.ACTION
        call.target = act
        call.method = act.name
        params = act.type.params if act.type else []
        if not bind_all:
            dir_params = [p for p in params if p.direction]
            if ref.has_args or dir_params:
                if len(ref.args) != len(dir_params):
                    self.err(ref.loc, f"action '{act.name}' in a table list needs its "
                                      f"{len(dir_params)} directional argument(s)")
                else:
                    call.bound_args = self.bind_args(ref.args, dir_params, scope, ref.loc,
                                                     f"action '{act.name}'")
            call.params = dir_params
        else:
            call.bound_args = self.bind_args(ref.args, params, scope, ref.loc, f"action '{act.name}'")
            call.params = params
        call.type = T.VOID
        ref.call = call

    def action_call_prop(self, e: A.Expression, scope: Scope, table: A.TableDecl,
                         what: str) -> A.ActionRef | None:
        if isinstance(e, A.CallExpr) and isinstance(e.callee, A.PathExpr):
            ref = A.ActionRef(loc=e.loc, name=e.callee, args=e.args, has_args=True)
        elif isinstance(e, A.PathExpr):
            ref = A.ActionRef(loc=e.loc, name=e, args=[])
        else:
            self.err(e.loc, f"{what} must be an action call")
            return None
        self.action_ref(ref, scope, bind_all=True)
        if ref.action is None:
            return ref
        if isinstance(e, A.CallExpr) and ref.call is not None:
            # the property's own expression mirrors the call built for the engine
            e.kind, e.target, e.method = ref.call.kind, ref.call.target, ref.call.method
            e.params, e.bound_args, e.type = ref.call.params, ref.call.bound_args, T.VOID
        listed = [r.action for r in table.actions]
        if ref.action not in listed:
            self.err(ref.loc, f"{what} '{ref.action.name}' is not in the actions of "
                              f"table '{table.name}'")
        if ref.call is not None:
            for p, a in zip(ref.call.params, ref.call.bound_args, strict=False):
                if p.direction == "" and a is not None and a.const_value is None \
                        and a.type is not POISON:
                    self.err(a.loc, f"argument '{p.name}' of {what} must be a constant")
        return ref

    def table_entry(self, en: A.TableEntry, table: A.TableDecl, key_types: list[T.P4Type],
                    scope: Scope) -> None:
        if not key_types:
            self.err(en.loc, f"table '{table.name}' has entries but no key")
            return
        en.keyset = self.keyset(en.keyset, key_types, scope)
        e = A.CallExpr(loc=en.action.loc, callee=en.action.name, args=en.action.args) \
            if en.action.has_args else en.action.name
        ref = self.action_call_prop(e, scope, table, "entry action")
        if ref is not None:
            ref.annotations = en.action.annotations
            en.action = ref
        prio = en.priority
        ann = A.find_annotation(en.annotations, "priority")
        if prio is not None:
            en.priority_value = self.const_int(prio, scope, "priority")
        elif ann is not None and ann.args and isinstance(ann.args[0], int):
            en.priority_value = ann.args[0]
        elif ann is not None:
            self.err(ann.loc, "@priority needs an integer")

    # ================================================================ statements

    def block(self, b: A.BlockStmt, scope: Scope) -> None:
        s = Scope(scope, kind="block", owner=scope.owner)
        for st in b.stmts:
            self.stmt(st, s)

    def stmt(self, st: A.Statement, scope: Scope) -> None:
        try:
            self._stmt(st, scope)
        except _Abort:
            pass

    def _stmt(self, st: A.Statement, scope: Scope) -> None:
        if isinstance(st, A.AssignStmt):
            st.lhs = self.expr(st.lhs, scope)
            self.check_writable(st.lhs, scope)
            st.rhs = self.coerce(self.expr(st.rhs, scope, st.lhs.type), st.lhs.type, st.rhs.loc)
        elif isinstance(st, A.CallStmt):
            st.call = self.expr(st.call, scope)
            if not isinstance(st.call, A.CallExpr):
                self.err(st.loc, "statement must be a call or an assignment")
        elif isinstance(st, A.IfStmt):
            st.cond = self.bool_expr(st.cond, scope, "if condition")
            self.stmt_in_scope(st.then, scope)
            if st.otherwise is not None:
                self.stmt_in_scope(st.otherwise, scope)
        elif isinstance(st, A.BlockStmt):
            self.block(st, scope)
        elif isinstance(st, A.SwitchStmt):
            self.switch(st, scope)
        elif isinstance(st, A.ExitStmt):
            if self._in_parser:
                self.err(st.loc, "exit is not allowed in a parser")
            elif isinstance(self._current_fn, A.FunctionDecl):
                self.err(st.loc, "exit is not allowed in a function")
        elif isinstance(st, A.ReturnStmt):
            self.return_stmt(st, scope)
        elif isinstance(st, A.EmptyStmt):
            pass
        elif isinstance(st, A.DeclStmt):
            d = st.decl
            if isinstance(d, A.VariableDecl):
                self.var_decl(d, scope)
            elif isinstance(d, A.ConstantDecl):
                self.constant_decl(d, scope)
                self.declare(scope, d.name, d)
            else:
                self.err(d.loc, "instantiations are not allowed inside a block")
        else:
            self.unsupported(st.loc, type(st).__name__)

    def stmt_in_scope(self, st: A.Statement, scope: Scope) -> None:
        self.stmt(st, Scope(scope, kind="block", owner=scope.owner))

    def return_stmt(self, st: A.ReturnStmt, scope: Scope) -> None:
        fn = self._current_fn
        if self._in_parser:
            self.err(st.loc, "return is not allowed in a parser")
            return
        if isinstance(fn, A.FunctionDecl):
            rt = fn.type.return_type if fn.type else POISON
            if st.value is None:
                if rt is not T.VOID:
                    self.err(st.loc, f"function '{fn.name}' must return a {rt}")
            else:
                st.value = self.coerce(self.expr(st.value, scope, rt), rt, st.value.loc)
        elif st.value is not None:
            self.err(st.loc, "return with a value outside a function")

    def switch(self, st: A.SwitchStmt, scope: Scope) -> None:
        st.expr = self.expr(st.expr, scope)
        t = st.expr.type
        seen: set[Any] = set()
        if isinstance(t, T.ActionEnumType):
            table = t.table
            allowed = {r.action.name: r.action for r in table.actions if r.action is not None}
            for c in st.cases:
                if isinstance(c.label, A.DefaultExpr):
                    c.label.type = T.DONTCARE
                    key: Any = "default"
                elif isinstance(c.label, A.PathExpr) and c.label.name in allowed:
                    c.action = allowed[c.label.name]
                    c.label.decl = c.action
                    c.label.type = t
                    key = c.action
                else:
                    self.err(c.label.loc, f"'{expr_text(c.label)}' is not an action of table "
                                          f"'{table.name}'")
                    continue
                if key in seen:
                    self.err(c.label.loc, "duplicate switch label")
                seen.add(key)
        elif t is POISON:
            return
        else:
            st_t = T.strip_newtype(t)
            if not isinstance(st_t, T.Bits | T.EnumType | T.ErrorType):
                self.err(st.expr.loc, f"cannot switch on a value of type {t}")
                return
            for c in st.cases:
                if isinstance(c.label, A.DefaultExpr):
                    c.label.type = T.DONTCARE
                    key = "default"
                else:
                    c.label = self.coerce(self.expr(c.label, scope, t), t, c.label.loc)
                    key = c.label.const_value
                    if key is None and c.label.type is not POISON:
                        self.err(c.label.loc, "switch label must be a compile-time constant")
                if key in seen:
                    self.err(c.label.loc, "duplicate switch label")
                seen.add(key)
        for i, c in enumerate(st.cases):
            if isinstance(c.label, A.DefaultExpr) and i != len(st.cases) - 1:
                self.err(c.loc, "'default' must be the last switch label")
            if c.body is not None:
                self.block(c.body, scope)
        if st.cases and st.cases[-1].body is None:
            self.err(st.cases[-1].loc, "the last switch label needs a body")

    def bool_expr(self, e: A.Expression, scope: Scope, what: str) -> A.Expression:
        e = self.expr(e, scope, T.BOOL)
        if e.type is not POISON and not isinstance(e.type, T.BoolType):
            self.err(e.loc, f"{what} must be bool, not {e.type}")
        return e

    def check_writable(self, e: A.Expression, scope: Scope, what: str = "assign to") -> None:
        if e.type is POISON:
            return
        reason = self.not_writable(e)
        if reason:
            self.err(e.loc, f"cannot {what} {reason}")

    def not_writable(self, e: A.Expression) -> str | None:
        if isinstance(e, A.PathExpr):
            d = e.decl
            if isinstance(d, A.VariableDecl):
                return None
            if isinstance(d, A.Param):
                if d.direction in ("out", "inout"):
                    return None
                kind = "action data" if d.direction == "" else "an 'in'"
                return f"{kind} parameter '{d.name}'"
            if isinstance(d, A.ConstantDecl):
                return f"constant '{d.name}'"
            return f"'{e.name}'"
        if isinstance(e, A.MemberExpr):
            if e.kind in (A.MemberKind.FIELD, A.MemberKind.STACK_NEXT, A.MemberKind.STACK_LAST):
                return self.not_writable(e.expr)
            return f"'{expr_text(e)}'"
        if isinstance(e, A.IndexExpr | A.SliceExpr):
            return self.not_writable(e.expr)
        if isinstance(e, A.DontCareExpr):
            return None
        return f"'{expr_text(e)}' (not an l-value)"

    # ================================================================ expressions

    def expr(self, e: A.Expression, scope: Scope, expected: T.P4Type | None = None) -> A.Expression:
        """Check `e`; returns the node to use in its place (possibly re-typed or wrapped)."""
        try:
            out = self._expr(e, scope, expected)
        except _Abort:
            e.type = POISON
            return e
        if out.type is None:
            out.type = POISON
        return out

    def _expr(self, e: A.Expression, scope: Scope, expected: T.P4Type | None) -> A.Expression:
        m = getattr(self, "x_" + type(e).__name__, None)
        if m is None:
            self.unsupported(e.loc, f"expression {type(e).__name__}")
            e.type = POISON
            return e
        return m(e, scope, expected)

    # -- literals
    def x_IntLiteral(self, e: A.IntLiteral, scope, expected):
        if e.width is not None:
            if e.width <= 0:
                self.err(e.loc, "integer width must be positive")
                e.type = POISON
                return e
            t = T.Bits(e.width, e.signed)
            v = wrap(e.value, t)
            if v != e.value and not e.signed:
                self.r.warning(e.loc, f"value {e.value} does not fit in {t}; truncated")
            e.type, e.const_value = t, v
            return e
        e.type, e.const_value = T.INFINT, e.value
        return e

    def x_BoolLiteral(self, e, scope, expected):
        e.type, e.const_value = T.BOOL, e.value
        return e

    def x_StringLiteral(self, e, scope, expected):
        e.type, e.const_value = T.STRING, e.value
        return e

    def x_DontCareExpr(self, e, scope, expected):
        e.type = T.DONTCARE
        return e

    def x_DefaultExpr(self, e, scope, expected):
        e.type = T.DONTCARE
        return e

    # -- names
    def x_PathExpr(self, e: A.PathExpr, scope: Scope, expected):
        found = (self.global_scope if e.absolute else scope).lookup(e.name)
        if not found:
            self.err(e.loc, f"unknown name '{e.name}'")
            raise _Abort
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
                        A.ParserTypeDecl | A.ParserDecl | A.ControlDecl | _TypeParamDecl):
            e.type = self.decl_type(d, e)
            e.is_type = True  # type: ignore[attr-defined]
        else:
            self.err(e.loc, f"'{e.name}' cannot be used here")
            raise _Abort
        return e

    def x_TypeNameExpr(self, e: A.TypeNameExpr, scope, expected):
        e.type = self.resolve(e.type_ref, scope)
        e.decl = getattr(e.type, "decl", None)
        return e

    def x_MemberExpr(self, e: A.MemberExpr, scope: Scope, expected):
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
            raise _Abort
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
                raise _Abort
            self.err(e.loc, f"{bt} has no field '{mem}'")
            raise _Abort
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
            raise _Abort
        if isinstance(bt, T.TableType):
            if mem == "apply":
                e.kind = A.MemberKind.METHOD
                e.type = T.MethodType(mem)
                return e
            self.err(e.loc, f"table has no member '{mem}' (use {expr_text(base)}.apply().{mem})")
            raise _Abort
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
            raise _Abort
        ext = bt.base if isinstance(bt, T.SpecializedType) else bt
        if isinstance(ext, T.ExternType):
            if not ext.methods_named(mem):
                self.err(e.loc, f"extern '{ext.name}' has no method '{mem}'")
                raise _Abort
            e.kind = A.MemberKind.METHOD
            e.type = T.MethodType(mem)
            return e
        if isinstance(ext, T.ParserType) and mem == "apply":
            e.kind = A.MemberKind.METHOD
            e.type = T.MethodType(mem)
            return e
        self.err(e.loc, f"{bt} has no member '{mem}'")
        raise _Abort

    def type_member(self, e: A.MemberExpr, t: T.P4Type) -> A.MemberExpr:
        if isinstance(t, T.ErrorType):
            if e.member not in self.error_type.members:
                self.err(e.loc, f"unknown error '{e.member}'")
                raise _Abort
            e.kind = A.MemberKind.ERROR_MEMBER
            e.type = self.error_type
            e.const_value = e.member
            return e
        if isinstance(t, T.EnumType):
            if e.member not in t.members:
                self.err(e.loc, f"enum '{t.name}' has no member '{e.member}'")
                raise _Abort
            e.kind = A.MemberKind.ENUM_MEMBER
            e.type = t
            e.const_value = t.values.get(e.member) if t.underlying else e.member
            return e
        if t is not POISON:
            self.err(e.loc, f"type {t} has no member '{e.member}'")
        raise _Abort

    def x_IndexExpr(self, e: A.IndexExpr, scope, expected):
        e.expr = self.expr(e.expr, scope)
        e.index = self.expr(e.index, scope)
        bt = e.expr.type
        if bt is POISON:
            raise _Abort
        if not isinstance(bt, T.HeaderStack):
            self.err(e.loc, f"cannot index a value of type {bt}")
            raise _Abort
        it = T.strip_newtype(e.index.type)
        if isinstance(it, T.InfInt):
            idx = e.index.const_value
            if idx is not None and not (0 <= idx < bt.size):
                self.err(e.index.loc, f"index {idx} out of range for a stack of size {bt.size}")
            e.index = self.coerce(e.index, T.Bits(32), e.index.loc)
        elif not isinstance(it, T.Bits) and e.index.type is not POISON:
            self.err(e.index.loc, f"stack index must be an integer, not {e.index.type}")
        elif e.index.const_value is not None and not (0 <= e.index.const_value < bt.size):
            self.err(e.index.loc, f"index {e.index.const_value} out of range for a stack "
                                  f"of size {bt.size}")
        e.type = bt.element
        return e

    def x_SliceExpr(self, e: A.SliceExpr, scope, expected):
        e.expr = self.expr(e.expr, scope)
        hi = self.const_int(e.hi, scope, "slice bound")
        lo = self.const_int(e.lo, scope, "slice bound")
        bt = T.strip_newtype(e.expr.type)
        if hi is None or lo is None or bt is POISON:
            raise _Abort
        if isinstance(bt, T.InfInt):
            if e.expr.const_value is None:
                raise _Abort
            width = max(hi + 1, 1)
        elif isinstance(bt, T.Bits):
            width = bt.width
        else:
            self.err(e.loc, f"cannot slice a value of type {e.expr.type}")
            raise _Abort
        if not (0 <= lo <= hi < width):
            self.err(e.loc, f"slice [{hi}:{lo}] out of range for {e.expr.type}")
            raise _Abort
        e.hi_value, e.lo_value = hi, lo
        e.type = T.Bits(hi - lo + 1)
        if e.expr.const_value is not None:
            e.const_value = (e.expr.const_value >> lo) & ((1 << (hi - lo + 1)) - 1)
        return e

    # -- operators
    def x_UnaryExpr(self, e: A.UnaryExpr, scope, expected):
        exp = expected if e.op != "!" else T.BOOL
        e.operand = o = self.expr(e.operand, scope, exp)
        t = T.strip_newtype(o.type)
        v = o.const_value
        if o.type is POISON:
            raise _Abort
        if e.op == "!":
            if not isinstance(t, T.BoolType):
                self.err(e.loc, f"'!' needs a bool operand, not {o.type}")
                raise _Abort
            e.type = T.BOOL
            e.const_value = (not v) if v is not None else None
            return e
        if isinstance(t, T.InfInt) and isinstance(expected, T.Bits):
            e.operand = o = self.coerce(o, expected, o.loc)
            t = expected
            v = o.const_value
        if not isinstance(t, T.Bits | T.InfInt):
            self.err(e.loc, f"'{e.op}' needs an integer operand, not {o.type}")
            raise _Abort
        if e.op == "~" and isinstance(t, T.InfInt):
            self.err(e.loc, "'~' needs a sized operand (bit<W> or int<W>)")
            raise _Abort
        e.type = o.type
        if v is not None:
            r = {"-": -v, "+": v, "~": ~v}[e.op]
            e.const_value = wrap(r, t) if isinstance(t, T.Bits) else r
        return e

    _ARITH = {"+", "-", "*", "/", "%", "&", "|", "^", "|+|", "|-|"}
    _REL = {"<", ">", "<=", ">="}

    def x_BinaryExpr(self, e: A.BinaryExpr, scope, expected):
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
        e.right = self.expr(e.right, scope, sub_expected)
        if e.left.type is POISON or e.right.type is POISON:
            raise _Abort
        if op == "++":
            return self.concat(e)
        if op in ("==", "!="):
            self.unify(e)
            lt = T.strip_newtype(e.left.type)
            if isinstance(lt, T.StructLike | T.HeaderStack | T.TupleType):
                self.unsupported(e.loc, f"'{op}' on {e.left.type}")
            e.type = T.BOOL
            lv, rv = e.left.const_value, e.right.const_value
            if lv is not None and rv is not None:
                e.const_value = (lv == rv) if op == "==" else (lv != rv)
            return e
        t = self.unify(e)
        st = T.strip_newtype(t)
        if not isinstance(st, T.Bits | T.InfInt):
            self.err(e.loc, f"'{op}' needs integer operands, not {e.left.type} and {e.right.type}")
            raise _Abort
        lv, rv = e.left.const_value, e.right.const_value
        if op in self._REL:
            e.type = T.BOOL
            if lv is not None and rv is not None:
                e.const_value = {"<": lv < rv, ">": lv > rv, "<=": lv <= rv, ">=": lv >= rv}[op]
            return e
        e.type = t
        if op in ("/", "%"):
            if lv is None or rv is None:
                self.unsupported(e.loc, f"'{op}' on values not known at compile time")
                raise _Abort
            if rv == 0:
                self.err(e.loc, "division by zero")
                raise _Abort
            if lv < 0 or rv < 0:
                self.err(e.loc, f"'{op}' needs non-negative operands")
                raise _Abort
        if op in ("|+|", "|-|") and isinstance(st, T.InfInt):
            self.err(e.loc, f"'{op}' needs sized operands")
            raise _Abort
        if lv is not None and rv is not None:
            e.const_value = _fold(op, lv, rv, st)
        return e

    def shift(self, e: A.BinaryExpr, expected) -> A.BinaryExpr:
        lt = T.strip_newtype(e.left.type)
        rt = T.strip_newtype(e.right.type)
        if e.left.type is POISON or e.right.type is POISON:
            raise _Abort
        if not isinstance(lt, T.Bits | T.InfInt):
            self.err(e.left.loc, f"cannot shift a value of type {e.left.type}")
            raise _Abort
        if isinstance(rt, T.Bits) and rt.signed:
            self.err(e.right.loc, "shift amount must be unsigned")
            raise _Abort
        if not isinstance(rt, T.Bits | T.InfInt):
            self.err(e.right.loc, f"shift amount must be an integer, not {e.right.type}")
            raise _Abort
        if isinstance(rt, T.InfInt) and e.right.const_value is not None and e.right.const_value < 0:
            self.err(e.right.loc, "negative shift amount")
            raise _Abort
        if isinstance(lt, T.InfInt) and e.left.const_value is not None and e.right.const_value is None:
            self.err(e.left.loc, "shifting an unsized integer by a run-time amount; cast it first")
            raise _Abort
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
                raise _Abort
            if not isinstance(t, T.Bits):
                self.err(side.loc, f"'++' needs bit<W> or int<W> operands, not {side.type}")
                raise _Abort
        e.type = T.Bits(lt.width + rt.width, lt.signed)
        lv, rv = e.left.const_value, e.right.const_value
        if lv is not None and rv is not None:
            mask = (1 << rt.width) - 1
            e.const_value = wrap(((lv & ((1 << lt.width) - 1)) << rt.width) | (rv & mask), e.type)
        return e

    def unify(self, e: A.BinaryExpr) -> T.P4Type:
        """Make both operands the same type, converting unsized integers (spec 8.9.2)."""
        lt, rt = e.left.type, e.right.type
        if same_type(lt, rt):
            return lt
        ls, rs = T.strip_newtype(lt), T.strip_newtype(rt)
        if isinstance(ls, T.InfInt) and isinstance(rs, T.Bits | T.EnumType | T.InfInt):
            target = rt if not isinstance(rs, T.EnumType) else rs.underlying
            if target is not None:
                e.left = self.coerce(e.left, rt if not isinstance(rs, T.EnumType) else rt,
                                     e.left.loc)
                return rt
        if isinstance(rs, T.InfInt) and isinstance(ls, T.Bits | T.EnumType):
            e.right = self.coerce(e.right, lt, e.right.loc)
            return lt
        if isinstance(ls, T.EnumType) and ls.underlying is not None and same_type(ls.underlying, rt):
            e.left = self._implicit_cast(e.left, rt)
            return rt
        if isinstance(rs, T.EnumType) and rs.underlying is not None and same_type(rs.underlying, lt):
            e.right = self._implicit_cast(e.right, lt)
            return lt
        self.err(e.loc, f"'{e.op}': operand types differ: {lt} and {rt}"
                        + ("; cast one side" if isinstance(ls, T.Bits) and isinstance(rs, T.Bits)
                           else ""))
        raise _Abort

    def x_TernaryExpr(self, e: A.TernaryExpr, scope, expected):
        e.cond = self.bool_expr(e.cond, scope, "condition of '?:'")
        e.then = self.expr(e.then, scope, expected)
        e.otherwise = self.expr(e.otherwise, scope, expected)
        if e.then.type is POISON or e.otherwise.type is POISON:
            raise _Abort
        tt, ot = T.strip_newtype(e.then.type), T.strip_newtype(e.otherwise.type)
        if isinstance(tt, T.InfInt) and isinstance(ot, T.InfInt) and e.cond.const_value is None:
            if expected is not None and isinstance(T.strip_newtype(expected), T.Bits):
                e.then = self.coerce(e.then, expected, e.then.loc)
                e.otherwise = self.coerce(e.otherwise, expected, e.otherwise.loc)
            else:
                self.err(e.loc, "'?:' with unsized integer branches needs a width")
                raise _Abort
        elif isinstance(tt, T.InfInt):
            e.then = self.coerce(e.then, e.otherwise.type, e.then.loc)
        elif isinstance(ot, T.InfInt):
            e.otherwise = self.coerce(e.otherwise, e.then.type, e.otherwise.loc)
        elif not same_type(e.then.type, e.otherwise.type):
            self.err(e.loc, f"'?:' branches differ: {e.then.type} and {e.otherwise.type}")
            raise _Abort
        e.type = e.then.type
        c = e.cond.const_value
        if c is not None:
            e.const_value = (e.then if c else e.otherwise).const_value
        return e

    def x_CastExpr(self, e: A.CastExpr, scope, expected):
        t = self.resolve(e.type_ref, scope) if e.type_ref is not None else e.type
        e.expr = self.expr(e.expr, scope, t if isinstance(T.strip_newtype(t), T.StructLike)
                           else None)
        if t is POISON or e.expr.type is POISON:
            raise _Abort
        src = e.expr.type
        e.type = t
        if not self.castable(src, t):
            self.err(e.loc, f"cannot cast {src} to {t}")
            raise _Abort
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

    def castable(self, src: T.P4Type, dst: T.P4Type) -> bool:
        """Explicit casts allowed by spec 8.11."""
        s, d = T.strip_newtype(src), T.strip_newtype(dst)
        if same_type(s, d):
            return True
        if isinstance(d, T.Bits):
            return isinstance(s, T.Bits | T.InfInt) or (isinstance(s, T.BoolType) and d.width == 1) \
                or (isinstance(s, T.EnumType) and s.underlying is not None)
        if isinstance(d, T.BoolType):
            return (isinstance(s, T.Bits) and s.width == 1 and not s.signed) or isinstance(s, T.InfInt)
        if isinstance(d, T.EnumType) and d.underlying is not None:
            return isinstance(s, T.Bits | T.InfInt)
        if isinstance(d, T.StructLike) and isinstance(s, T.StructLike | T.TupleType):
            return True
        return False

    def x_ListExpr(self, e: A.ListExpr, scope, expected):
        exp = T.strip_newtype(expected) if expected is not None else None
        if isinstance(exp, T.StructLike) and not isinstance(exp, T.HeaderUnionType):
            if len(e.items) != len(exp.fields):
                self.err(e.loc, f"{exp} has {len(exp.fields)} fields, the list has {len(e.items)}")
                raise _Abort
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
                raise _Abort
        e.type = T.TupleType([it.type for it in e.items])
        return e

    def x_StructInitExpr(self, e: A.StructInitExpr, scope, expected):
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
            raise _Abort
        out = []
        for n, v in e.fields:
            f = exp.field_named(n)
            out.append((n, self.coerce(self.expr(v, scope, f.type), f.type, v.loc)))
        e.fields = out
        e.type = expected
        return e

    def x_MaskExpr(self, e, scope, expected):
        self.err(e.loc, "'&&&' is only allowed in keysets")
        raise _Abort

    def x_RangeExpr(self, e, scope, expected):
        self.err(e.loc, "'..' is only allowed in keysets")
        raise _Abort

    def x_SelectExpr(self, e, scope, expected):
        self.err(e.loc, "select is only allowed in a transition")
        raise _Abort

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
                self.r.warning(loc, f"value {v} does not fit in {d}; truncated to {w}")
            if isinstance(e, A.IntLiteral):
                e.type, e.const_value = t, w
                return e
            c = self._implicit_cast(e, t)
            c.const_value = w
            return c
        if isinstance(s, T.EnumType) and s.underlying is not None and same_type(s.underlying, d):
            c = self._implicit_cast(e, t)
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

    def _implicit_cast(self, e: A.Expression, t: T.P4Type) -> A.CastExpr:
        c = A.CastExpr(loc=e.loc, type_ref=None, expr=e, implicit=True)
        c.type = t
        return c

    # ================================================================ calls

    def x_CallExpr(self, e: A.CallExpr, scope: Scope, expected):
        callee = e.callee
        e.type_args = [self.resolve(t, scope) for t in e.type_arg_refs]
        if isinstance(callee, A.TypeNameExpr):
            self.err(e.loc, "a constructor call is only allowed as an instantiation argument")
            raise _Abort
        if isinstance(callee, A.MemberExpr):
            e.callee = callee = self.expr(callee, scope)
            if callee.type is POISON or callee.kind is not A.MemberKind.METHOD:
                if callee.type is not POISON:
                    self.err(e.loc, f"'{expr_text(callee)}' is not a method")
                raise _Abort
            return self.method_call(e, callee, scope)
        if isinstance(callee, A.PathExpr):
            e.callee = callee = self.expr(callee, scope)
            d = callee.decl
            if isinstance(d, A.ActionDecl):
                return self.action_call(e, d, scope)
            if isinstance(d, A.FunctionDecl):
                e.kind, e.target, e.method = A.CallKind.FUNCTION, d, d.name
                if d.type is None:
                    raise _Abort
                e.params = d.type.params
                e.bound_args = self.bind_args(e.args, e.params, scope, e.loc, f"'{d.name}'")
                e.type = d.type.return_type
                return e
            if isinstance(d, A.ExternFunctionDecl):
                overloads = [x for x in scope.lookup(callee.name) if isinstance(x, A.ExternFunctionDecl)]
                return self.extern_call(e, overloads, scope)
            self.err(e.loc, f"'{callee.name}' is not callable")
            raise _Abort
        self.err(e.loc, "this expression cannot be called")
        raise _Abort

    def action_call(self, e: A.CallExpr, d: A.ActionDecl, scope: Scope) -> A.CallExpr:
        e.kind, e.target, e.method = A.CallKind.ACTION, d, d.name
        cur = self._current_fn
        if isinstance(cur, A.FunctionDecl) or self._in_parser:
            self.err(e.loc, "actions may only be called from controls and actions")
        if d.type is None:
            raise _Abort
        e.params = d.type.params
        e.bound_args = self.bind_args(e.args, e.params, scope, e.loc, f"action '{d.name}'")
        e.type = T.VOID
        return e

    def extern_call(self, e: A.CallExpr, overloads: list[A.ExternFunctionDecl],
                    scope: Scope) -> A.CallExpr:
        cands = [d for d in overloads if d.type is not None and _arity_ok(d.type.params, e.args)]
        if not cands:
            self.err(e.loc, f"no overload of '{overloads[0].name}' takes {len(e.args)} argument(s)")
            raise _Abort
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
            e.bound_args = [self.expr(e.args[0].value, scope)]
            n = e.bound_args[0].const_value
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
                raise _Abort
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
        raise _Abort

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
            raise _Abort

    def generic_call(self, e: A.CallExpr, m: T.MethodType, scope: Scope,
                     env: dict[str, T.P4Type]) -> None:
        """Bind arguments of a (possibly generic) extern method/function, inferring type vars."""
        env = dict(env)
        if e.type_args:
            if len(e.type_args) != len(m.type_params):
                self.err(e.loc, f"'{m.name}' takes {len(m.type_params)} type argument(s)")
                raise _Abort
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
            if _contains_typevar(pt) and _is_unsized(a.value):
                later.append(i)
                continue
            bound[i] = self.bind_one(a.value, p, pt, scope, env)
        for i in later:
            p = m.params[i]
            pt = substitute(p.type, env)
            bound[i] = self.bind_one(ordered[i].value, p, pt, scope, env)
        e.bound_args = bound
        e.params = [T.Param(p.name, p.direction, substitute(p.type, env), p.optional, p.default,
                            p.decl) for p in m.params]
        if not e.type_args:
            e.type_args = [env.get(tv.name, tv) for tv in m.type_params]
        for tv in m.type_params:
            if tv.name not in env:
                if not any(b is not None and b.type is POISON for b in bound):
                    self.err(e.loc, f"cannot infer type argument '{tv.name}' of '{m.name}'")
                raise _Abort
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
            raise _Abort
        if len(args) > len(params):
            self.err(loc, f"{what} takes {len(params)} argument(s), got {len(args)}")
            raise _Abort
        if named:
            for a in args:
                idx = next((i for i, p in enumerate(params) if p.name == a.name), None)
                if idx is None:
                    self.err(a.loc, f"{what} has no parameter '{a.name}'")
                    raise _Abort
                if out[idx] is not None:
                    self.err(a.loc, f"argument '{a.name}' given twice")
                    raise _Abort
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
                    raise _Abort
        return out

    def bind_args(self, args: list[A.Argument], params: list[T.Param], scope: Scope,
                  loc: A.Loc, what: str) -> list[A.Expression | None]:
        """Check arguments against non-generic parameters; returns them in parameter order."""
        try:
            ordered = self.order_args(args, params, loc, what)
        except _Abort:
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


class _Abort(Exception):
    """Stop checking the current expression after an error was reported."""


def _arity_ok(params: list[T.Param], args: list[A.Argument]) -> bool:
    if any(a.name for a in args):
        names = {p.name for p in params}
        return all(a.name in names for a in args)
    required = sum(1 for p in params if not p.optional and p.default is None)
    return required <= len(args) <= len(params)


def _is_unsized(e: A.Expression) -> bool:
    return isinstance(e, A.IntLiteral) and e.width is None


def _extern_name(e: A.Expression | None) -> str | None:
    if e is None:
        return None
    t = e.type
    if isinstance(t, T.SpecializedType):
        t = t.base
    return t.name if isinstance(t, T.ExternType) else None


def _fold(op: str, a: int, b: int, t: T.P4Type) -> int:
    """Constant-fold an arithmetic operator (spec 8.5/8.6; saturating ops 8.5)."""
    if op == "|+|" or op == "|-|":
        r = a + b if op == "|+|" else a - b
        if t.signed:
            lo, hi = -(1 << (t.width - 1)), (1 << (t.width - 1)) - 1
        else:
            lo, hi = 0, (1 << t.width) - 1
        return max(lo, min(hi, r))
    r = {
        "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a // b,
        "%": lambda: a % b, "&": lambda: a & b, "|": lambda: a | b, "^": lambda: a ^ b,
    }[op]()
    return wrap(r, t) if isinstance(t, T.Bits) else r


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


def iter_nodes(node: Any) -> Iterable[A.Node]:
    """All AST nodes below `node` (depth-first), for tools and tests."""
    stack = [node]
    seen: set[int] = set()
    while stack:
        n = stack.pop()
        if isinstance(n, list | tuple):
            stack.extend(reversed(n))
            continue
        if not isinstance(n, A.Node) or id(n) in seen:
            continue
        seen.add(id(n))
        yield n
        for k, v in vars(n).items():
            if k in ("decl", "target", "type", "owner", "action", "field", "resolved",
                     "const_value", "loc", "params", "type_args", "blocks"):
                continue
            if isinstance(v, A.Node | list | tuple):
                stack.append(v)
