"""Code generation: how P4 values are represented in the generated Python.

`bit<W>` and `int<W>` are ints (signed ints for `int<W>`), `bool` a bool, `error` and
plain enums their member names, serializable enums their integer value. Headers,
structs and unions become classes with `__slots__` (`f_<field>`, validity `_v`,
varbit widths `w_<field>`), generated once per type; header stacks are
`runtime.HeaderStack`.
"""

from __future__ import annotations

from softswitch.frontend import types as T

from ..errors import CompileError
from .base import CodegenBase


def rt(t: T.P4Type) -> T.P4Type:
    """Representation type: new types unwrapped, serializable enums as their bits."""
    t = T.strip_newtype(t)
    if isinstance(t, T.EnumType) and t.underlying is not None:
        return t.underlying
    return t


def is_agg(t: T.P4Type) -> bool:
    """True for values held by reference in the generated code (headers, structs, stacks)."""
    return isinstance(rt(t), T.StructLike | T.HeaderStack)


def width_of(t: T.P4Type) -> int:
    """Bit width used when the value is packed (hash inputs, keys, digests)."""
    return T.bit_width(t)


class ValueCode(CodegenBase):
    """Classes of header/struct/union types and the zero values of every type."""

    def class_for(self, t: T.P4Type) -> str:
        """Python class implementing a header/struct/union type (generated once)."""
        t = T.strip_newtype(t)
        name = self.classes.get(id(t))
        if name is not None:
            return name
        if not isinstance(t, T.StructLike):
            raise CompileError("?", f"no class for type {t}")
        name = self.fresh("K")
        self.classes[id(t)] = name
        is_header = isinstance(t, T.HeaderType)
        slots = (["_v"] if is_header else []) + [f"f_{f.name}" for f in t.fields]
        for f in t.fields:
            if isinstance(rt(f.type), T.Varbit):
                slots.append(f"w_{f.name}")
        # Nested types first so that their classes exist.
        inits = []
        copies = []
        for f in t.fields:
            ft = rt(f.type)
            if isinstance(ft, T.Varbit):
                inits.append(f"self.f_{f.name} = 0")
                inits.append(f"self.w_{f.name} = 0")
                copies.append(f"n.f_{f.name} = self.f_{f.name}")
                copies.append(f"n.w_{f.name} = self.w_{f.name}")
            elif is_agg(ft):
                inits.append(f"self.f_{f.name} = {self.new_value(ft)}")
                copies.append(f"n.f_{f.name} = self.f_{f.name}.copy()")
            else:
                inits.append(f"self.f_{f.name} = {self.default_value(ft)}")
                copies.append(f"n.f_{f.name} = self.f_{f.name}")
        e = self.class_src
        e(f"class {name}:")
        e.indent()
        e(f'"""{type(t).__name__} {t.name}."""')
        e(f"__slots__ = {tuple(slots)!r}")
        e("def __init__(self):")
        e.indent()
        if is_header:
            e("self._v = False")
        for line in inits or ["pass"]:
            e(line)
        e.dedent()
        e("def copy(self):")
        e.indent()
        e(f"n = {name}.__new__({name})")
        if is_header:
            e("n._v = self._v")
        for line in copies:
            e(line)
        e("return n")
        e.dedent()
        if isinstance(t, T.HeaderUnionType):
            e("@property")
            e("def valid(self):")
            e.indent()
            e("return " + (" or ".join(f"self.f_{f.name}._v" for f in t.fields) or "False"))
            e.dedent()
        e.dedent()
        e("")
        return name

    def new_value(self, t: T.P4Type) -> str:
        """Expression creating a fresh (all-zero, invalid) value of an aggregate type."""
        t = rt(t)
        if isinstance(t, T.HeaderStack):
            cls = self.class_for(t.element)
            return f"_Stack([{cls}() for _ in range({t.size})])"
        return f"{self.class_for(t)}()"

    def default_value(self, t: T.P4Type) -> str:
        """Python literal of the zero value BMv2 gives an uninitialised scalar."""
        t = rt(t)
        if isinstance(t, T.BoolType):
            return "False"
        if isinstance(t, T.ErrorType):
            return "'NoError'"
        if isinstance(t, T.EnumType):
            return repr(t.members[0]) if t.members else "''"
        if is_agg(t):
            return self.new_value(t)
        return "0"
