"""Checking pass: types and constants (P4_16 spec sections 7, 10).

Type references are resolved to `softswitch.frontend.types` objects (typedefs
expanded, generic externs specialised); header, struct, enum, typedef, extern
and block-type declarations get their type; constants are folded.
"""

from __future__ import annotations

from typing import Any

from .. import ast as A
from .. import types as T
from .base import CheckerBase
from .scope import Scope, TypeParamDecl
from .typeops import POISON, wrap


class TypeDeclChecks(CheckerBase):
    """Type references, type declarations and compile-time constants."""

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
        if isinstance(d, TypeParamDecl):
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
            p = TypeParamDecl(n)
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
                assert m.return_type is not None  # the grammar gives every method one
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
