"""P4_16 types as the checker resolves them (P4_16 spec section 7).

Every `Expression.type` and every `TypeRef.resolved` set by the checker is an
instance of one of the classes below, with typedefs already expanded
(`typedef bit<8> T` gives `Bits(8)`). A `type T ...` declaration stays a distinct
`NewType` (spec 7.6.2) whose `.underlying` is the resolved type; the engine may
treat a value of a `NewType` as a value of its underlying type.

Contract for the engine:

* Scalar types: `Bits(width, signed)` for `bit<W>` / `int<W>`, `Bool`, `Varbit(max_width)`,
  `InfInt` (infinite-precision `int`; only on compile-time constants, never on a
  value the engine computes at run time), `String`, `Void`.
* Named aggregate types compare by identity (one object per declaration):
  `HeaderType`, `HeaderUnionType`, `StructType` (all `StructLike`, with ordered
  `fields`), `EnumType` (`underlying` is a `Bits` for `enum bit<W>`), `ErrorType`,
  `MatchKindType`.
* `HeaderStack(element, size)`, `TupleType(elements)` (also the type of `{a, b}`
  list expressions), `ListType` is not used at run time.
* Object types: `ExternType` (declaration and methods), `SpecializedType`
  (a generic extern applied to type arguments, e.g. `register<bit<32>>`),
  `ParserType` / `ControlType` / `PackageType` (from parser/control/package
  declarations or prototypes), `TableType` (a table; `.apply()` returns
  `TableResultType`), `ActionEnumType` (type of `t.apply().action_run`),
  `SetType` (keysets in `select`), `TypeVar` (an unbound generic parameter).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class P4Type:
    """Base class of all resolved P4 types."""

    def is_fixed_width(self) -> bool:
        """True when the type has a compile-time bit width (spec 7.2)."""
        return False

    def __str__(self) -> str:  # pragma: no cover - overridden
        return type(self).__name__


@dataclass(frozen=True)
class Bits(P4Type):
    """`bit<W>` (signed=False) or `int<W>` (signed=True)."""

    width: int
    signed: bool = False

    def is_fixed_width(self) -> bool:
        return True

    def __str__(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"


@dataclass(frozen=True)
class Varbit(P4Type):
    """`varbit<W>`: up to `max_width` bits, width known only at run time."""

    max_width: int

    def __str__(self) -> str:
        return f"varbit<{self.max_width}>"


@dataclass(frozen=True)
class BoolType(P4Type):
    """`bool` (distinct from `bit<1>`, spec 7.1.2)."""

    def is_fixed_width(self) -> bool:
        return True

    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True)
class InfInt(P4Type):
    """Infinite-precision `int` (unsized integer literals and constants)."""

    def __str__(self) -> str:
        return "int"


@dataclass(frozen=True)
class StringType(P4Type):
    """`string` (compile-time only: annotations, log_msg)."""

    def __str__(self) -> str:
        return "string"


@dataclass(frozen=True)
class VoidType(P4Type):
    """`void` (functions and methods that return nothing)."""

    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True)
class DontCareType(P4Type):
    """Type of `_` and `default` in keysets and out-argument positions."""

    def __str__(self) -> str:
        return "_"


BOOL = BoolType()
INFINT = InfInt()
STRING = StringType()
VOID = VoidType()
DONTCARE = DontCareType()


@dataclass(eq=False)
class Field:
    """One field of a header/struct/union: name, resolved type, annotations."""

    name: str
    type: P4Type
    annotations: list[Any] = field(default_factory=list)
    decl: Any = field(default=None, repr=False)  # the ast.FieldDecl


@dataclass(eq=False)
class StructLike(P4Type):
    """Common part of header, header_union and struct types."""

    name: str
    fields: list[Field] = field(default_factory=list)
    decl: Any = field(default=None, repr=False)  # the ast declaration node

    def field_named(self, name: str) -> Field | None:
        """The field called `name`, or None."""
        for f in self.fields:
            if f.name == name:
                return f
        return None

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class HeaderType(StructLike):
    """`header` (spec 7.2.2): fields of fixed width plus at most one varbit."""

    def is_fixed_width(self) -> bool:
        return all(f.type.is_fixed_width() for f in self.fields)

    def bit_width(self) -> int:
        """Sum of field widths (varbit fields count as 0)."""
        return sum(bit_width(f.type) for f in self.fields if not isinstance(f.type, Varbit))


@dataclass(eq=False)
class HeaderUnionType(StructLike):
    """`header_union` (spec 7.2.4): every field is a header."""


@dataclass(eq=False)
class StructType(StructLike):
    """`struct` (spec 7.2.5)."""

    def is_fixed_width(self) -> bool:
        return all(f.type.is_fixed_width() for f in self.fields)


@dataclass(eq=False)
class EnumType(P4Type):
    """`enum` (spec 7.2.1); `underlying` is a `Bits` for serializable enums."""

    name: str
    members: list[str] = field(default_factory=list)
    underlying: Bits | None = None
    values: dict[str, int] = field(default_factory=dict)  # serializable enums only
    decl: Any = field(default=None, repr=False)

    def is_fixed_width(self) -> bool:
        return self.underlying is not None

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class ErrorType(P4Type):
    """`error`: all `error { ... }` declarations merged (spec 7.1.3)."""

    members: list[str] = field(default_factory=list)

    def code(self, member: str) -> int:
        """Numeric code of an error member (declaration order, as BMv2 numbers them)."""
        return self.members.index(member)

    def __str__(self) -> str:
        return "error"


@dataclass(eq=False)
class MatchKindType(P4Type):
    """`match_kind`: all `match_kind { ... }` declarations merged."""

    members: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return "match_kind"


@dataclass(eq=False)
class NewType(P4Type):
    """`type U name;` (spec 7.6.2): a distinct type over `underlying`."""

    name: str
    underlying: P4Type
    decl: Any = field(default=None, repr=False)

    def is_fixed_width(self) -> bool:
        return self.underlying.is_fixed_width()

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class HeaderStack(P4Type):
    """`H[N]` (spec 7.2.3)."""

    element: P4Type
    size: int

    def is_fixed_width(self) -> bool:
        return self.element.is_fixed_width()

    def __str__(self) -> str:
        return f"{self.element}[{self.size}]"


@dataclass(eq=False)
class TupleType(P4Type):
    """`tuple<...>` and the type of list expressions `{a, b}`."""

    elements: list[P4Type] = field(default_factory=list)

    def is_fixed_width(self) -> bool:
        return all(e.is_fixed_width() for e in self.elements)

    def __str__(self) -> str:
        return "tuple<" + ", ".join(map(str, self.elements)) + ">"


@dataclass(eq=False)
class StructInitType(P4Type):
    """Type of `{f = v, ...}` before it meets its target struct/header type."""

    fields: list[Field] = field(default_factory=list)

    def __str__(self) -> str:
        return "{" + ", ".join(f"{f.name}: {f.type}" for f in self.fields) + "}"


@dataclass(eq=False)
class TypeVar(P4Type):
    """A type parameter of a generic declaration (`T` in `extern register<T>`)."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class Param:
    """A parameter of a method/action/parser/control/package type."""

    name: str
    direction: str  # "in", "out", "inout" or "" (directionless)
    type: P4Type
    optional: bool = False
    default: Any = field(default=None, repr=False)  # ast.Expression or None
    decl: Any = field(default=None, repr=False)  # the ast.Param


@dataclass(eq=False)
class MethodType(P4Type):
    """Signature of an extern method, function, action or constructor."""

    name: str
    type_params: list[TypeVar] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    return_type: P4Type = VOID
    decl: Any = field(default=None, repr=False)

    def __str__(self) -> str:
        return f"{self.name}(...)"


@dataclass(eq=False)
class ExternType(P4Type):
    """An `extern Name<T...> { ... }` object type."""

    name: str
    type_params: list[TypeVar] = field(default_factory=list)
    constructors: list[MethodType] = field(default_factory=list)
    methods: list[MethodType] = field(default_factory=list)
    decl: Any = field(default=None, repr=False)

    def methods_named(self, name: str) -> list[MethodType]:
        """All overloads of method `name`."""
        return [m for m in self.methods if m.name == name]

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class SpecializedType(P4Type):
    """A generic type applied to arguments (`register<bit<32>>`, `Parser<H, M>`)."""

    base: P4Type
    args: list[P4Type] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.base}<" + ", ".join(map(str, self.args)) + ">"


@dataclass(eq=False)
class ParserType(P4Type):
    """A parser prototype or declaration: apply parameters (+ constructor params)."""

    name: str
    type_params: list[TypeVar] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    ctor_params: list[Param] = field(default_factory=list)
    decl: Any = field(default=None, repr=False)

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class ControlType(ParserType):
    """A control prototype or declaration."""


@dataclass(eq=False)
class PackageType(P4Type):
    """A `package` declaration (e.g. `V1Switch`)."""

    name: str
    type_params: list[TypeVar] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    decl: Any = field(default=None, repr=False)

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class TableType(P4Type):
    """A table; `decl` is the ast.TableDecl."""

    decl: Any = field(default=None, repr=False)

    def __str__(self) -> str:
        return f"table {getattr(self.decl, 'name', '?')}"


@dataclass(eq=False)
class TableResultType(P4Type):
    """Result of `t.apply()`: fields `hit`, `miss`, `action_run`."""

    table: Any = field(default=None, repr=False)

    def __str__(self) -> str:
        return "apply_result"


@dataclass(eq=False)
class ActionEnumType(P4Type):
    """Type of `t.apply().action_run`: one member per action of the table."""

    table: Any = field(default=None, repr=False)

    def __str__(self) -> str:
        return "action_list"


@dataclass(eq=False)
class ActionType(P4Type):
    """An action used as a value (in `actions = {...}` or as a call target)."""

    decl: Any = field(default=None, repr=False)

    def __str__(self) -> str:
        return f"action {getattr(self.decl, 'name', '?')}"


@dataclass(eq=False)
class SetType(P4Type):
    """A keyset in `select` (`a &&& m`, `lo .. hi`, value sets)."""

    element: P4Type

    def __str__(self) -> str:
        return f"set<{self.element}>"


@dataclass(eq=False)
class StateType(P4Type):
    """A parser state used as a transition target."""

    def __str__(self) -> str:
        return "state"


def strip_newtype(t: P4Type) -> P4Type:
    """The representation type of `t` (`type` declarations unwrapped)."""
    while isinstance(t, NewType):
        t = t.underlying
    return t


def bit_width(t: P4Type) -> int:
    """Bit width of a fixed-width type (spec 7.2); 0 when it has none."""
    t = strip_newtype(t)
    if isinstance(t, Bits):
        return t.width
    if isinstance(t, BoolType):
        return 1
    if isinstance(t, EnumType):
        return t.underlying.width if t.underlying else 0
    if isinstance(t, Varbit):
        return t.max_width
    if isinstance(t, StructLike) and not isinstance(t, HeaderUnionType):
        return sum(bit_width(f.type) for f in t.fields)
    if isinstance(t, HeaderUnionType):
        return max((bit_width(f.type) for f in t.fields), default=0)
    if isinstance(t, HeaderStack):
        return bit_width(t.element) * t.size
    if isinstance(t, TupleType):
        return sum(bit_width(e) for e in t.elements)
    return 0


def is_header_like(t: P4Type) -> bool:
    """True for headers and header unions (they carry a validity bit)."""
    return isinstance(t, HeaderType | HeaderUnionType)
