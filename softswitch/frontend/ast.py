"""Syntax tree of the supported P4_16 subset, with source locations.

The parser builds these nodes; the checker (softswitch.frontend.checker) then
annotates them in place. After `compile_*` returns a `Program`, the engine may
rely on the following guarantees (anything the checker cannot guarantee is a
diagnostic, so no unchecked tree ever reaches the engine):

* Every `Expression` has `.type` set to a resolved `softswitch.frontend.types`
  type, with typedefs expanded.
* Every `PathExpr` (a bare name) has `.decl`: the declaration it refers to
  (`VariableDecl`, `Param` (with `.direction`), `ConstantDecl`, `ActionDecl`,
  `FunctionDecl`, `ExternFunctionDecl`, `TableDecl`, `Instantiation` (an extern,
  parser or control instance), `ValueSetDecl`, `ParserState`, or a type
  declaration (`EnumDecl`, `HeaderDecl`, ...) when a type name is used as a
  value, e.g. `MyEnum.A`, `error.NoMatch`).
* Every `MemberExpr` has `.kind` (a `MemberKind`) and, for fields, `.field`
  (the `types.Field`) and `.index` (field position in the struct/header).
* Compile-time constants are folded: `.const_value` is set (int for bit/int/
  serializable enum, bool, str for strings; for error members and members of
  non-serializable enums it is the member name). An expression whose
  `.const_value` is not None may be evaluated as that value (already wrapped to
  its `.type`'s width) without looking at its children.
* Implicit conversions are explicit: an unsized integer used where a `bit<W>`
  / `int<W>` is expected has that type (literals are re-typed, other
  expressions are wrapped in `CastExpr(implicit=True)`); serializable enum
  values compared with / assigned to their underlying bit type are wrapped in
  `CastExpr(implicit=True)` too. No expression evaluated at run time has type
  `InfInt`; the only `InfInt` expressions left are constants in places the engine
  reads as plain numbers: shift amounts (`x << 3`), slice bounds (also in
  `SliceExpr.hi_value`/`lo_value`), the count of `push_front`/`pop_front`, type
  widths and the values of `const int` declarations.
* Every `CallExpr` has `.kind` (a `CallKind`), `.target` (the declaration called:
  `ActionDecl`, `FunctionDecl`, `ExternFunctionDecl`, `TableDecl`, an
  `Instantiation` for extern/parser/control instance methods, or None for
  header/stack built-ins and packet_in/packet_out methods), `.receiver` (the
  object expression for method calls: the header, stack, packet, table or
  extern instance expression; None for plain calls), `.method` (method name)
  and `.bound_args`: one entry per callee parameter in declaration order
  (named arguments reordered, defaults filled in, `None` for an omitted
  optional parameter). For actions called in a table's `actions` list only the
  directional parameters are bound; action-data parameters come from the table.
  `.type_args` holds the resolved explicit or inferred type arguments (e.g. the
  header type of `lookahead<T>()`), and `.params` the parameters with those
  types substituted (a generic extern instantiated with fewer type arguments
  than it declares, `register<bit<32>>(N)`, has the rest inferred per call).
* Table properties are parsed into `TableDecl` fields (keys, actions,
  default_action, entries, size, implementation, counters, meters); unknown
  properties are errors. A default action or const entry's action is an
  `ActionRef` whose `.call` is a `CallExpr` (kind ACTION) binding every
  parameter; the property's own expression mirrors it. A property given as a
  constructor call (`implementation = action_profile(64);`) becomes an
  `Instantiation` inserted into the control's `locals` just before the table
  (named after the table, or by `@name` on the property); the property is
  then a `PathExpr` to it.
* A select case on a value set has a `PathExpr` keyset whose `.decl` is the
  `ValueSetDecl` and whose `.type` is a `SetType`.
* `Program.main` names the six blocks of the `V1Switch` instantiation (see
  softswitch.frontend.program).
* Declarations that own control-plane objects (`TableDecl`, `ActionDecl`,
  `Instantiation`, `ValueSetDecl`) have `.fqname`: the name P4Info uses, and
  `.owner`: the enclosing control or parser (None at top level).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# ---------------------------------------------------------------- basics


@dataclass(frozen=True)
class Loc:
    """A source position: original file, 1-based line and column."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


NOWHERE = Loc("<builtin>", 0, 0)


@dataclass(eq=False, kw_only=True, repr=False)
class Node:
    """Base of all syntax nodes; compared by identity (usable as dict keys)."""

    loc: Loc = NOWHERE

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        name = getattr(self, "name", None)
        label = f" {name!r}" if isinstance(name, str) and name else ""
        return f"<{type(self).__name__}{label} at {self.loc}>"


@dataclass(eq=False, kw_only=True, repr=False)
class Annotation(Node):
    """`@name`, `@name(args)`; `text` is the body as written, `args` the parsed values.

    `args` holds Python values: str for string literals, int for integers,
    str for identifiers; it is None when the body could not be read as a list.
    """

    name: str
    text: str | None = None
    args: list[Any] | None = None

    def __str__(self) -> str:
        return f"@{self.name}" + (f"({self.text})" if self.text is not None else "")

    def __repr__(self) -> str:
        return f"<Annotation {self} at {self.loc}>"

    def string_arg(self) -> str | None:
        """The first argument when it is a string literal."""
        if self.args and isinstance(self.args[0], str):
            return self.args[0]
        return None


def find_annotation(annotations: list[Annotation], name: str) -> Annotation | None:
    """The annotation called `name`, or None."""
    for a in annotations:
        if a.name == name:
            return a
    return None


# ---------------------------------------------------------------- type references


@dataclass(eq=False, kw_only=True, repr=False)
class TypeRef(Node):
    """A type as written; the checker sets `.resolved`."""

    resolved: Any = None


@dataclass(eq=False, kw_only=True, repr=False)
class BitsTypeRef(TypeRef):
    """`bit<W>`, `int<W>`, `bit` (= bit<1>); `width` is an expression."""

    width: Expression | None
    signed: bool = False


@dataclass(eq=False, kw_only=True, repr=False)
class VarbitTypeRef(TypeRef):
    """`varbit<W>`."""

    width: Expression


@dataclass(eq=False, kw_only=True, repr=False)
class BaseTypeRef(TypeRef):
    """`bool`, `int`, `string`, `void`, `error`, `match_kind`, `_` (don't care)."""

    name: str


@dataclass(eq=False, kw_only=True, repr=False)
class NamedTypeRef(TypeRef):
    """A type name, possibly with type arguments (`register<bit<8>>`)."""

    name: str
    args: list[TypeRef] = field(default_factory=list)


@dataclass(eq=False, kw_only=True, repr=False)
class StackTypeRef(TypeRef):
    """`H[N]`."""

    element: TypeRef
    size: Expression


@dataclass(eq=False, kw_only=True, repr=False)
class TupleTypeRef(TypeRef):
    """`tuple<A, B>` (also `list<T>` is reported unsupported)."""

    args: list[TypeRef] = field(default_factory=list)


# ---------------------------------------------------------------- expressions


@dataclass(eq=False, kw_only=True, repr=False)
class Expression(Node):
    """Base of expressions: checker sets `type` and, for constants, `const_value`."""

    type: Any = None
    const_value: Any = None


@dataclass(eq=False, kw_only=True, repr=False)
class IntLiteral(Expression):
    """An integer literal; `width`/`signed` are set for `8w5`, `8s5` forms."""

    value: int
    width: int | None = None
    signed: bool = False
    text: str = ""


@dataclass(eq=False, kw_only=True, repr=False)
class BoolLiteral(Expression):
    """`true` / `false`."""

    value: bool


@dataclass(eq=False, kw_only=True, repr=False)
class StringLiteral(Expression):
    """A string literal (escapes decoded)."""

    value: str


@dataclass(eq=False, kw_only=True, repr=False)
class PathExpr(Expression):
    """A name (`x`, `.x` for the top-level scope); checker sets `.decl`."""

    name: str
    absolute: bool = False
    decl: Any = None


@dataclass(eq=False, kw_only=True, repr=False)
class TypeNameExpr(Expression):
    """A type used as an expression prefix: `error`, `bit<8>` in `lookahead` args."""

    type_ref: TypeRef
    decl: Any = None


class MemberKind(enum.Enum):
    """What a `MemberExpr` denotes (set by the checker)."""

    FIELD = "field"  # header/struct/union field; `.field` and `.index` set
    ENUM_MEMBER = "enum_member"  # `MyEnum.A`: constant
    ERROR_MEMBER = "error_member"  # `error.NoMatch`: constant
    STACK_NEXT = "next"
    STACK_LAST = "last"
    STACK_SIZE = "size"  # constant
    STACK_LAST_INDEX = "lastIndex"
    TABLE_HIT = "hit"  # `t.apply().hit`
    TABLE_MISS = "miss"
    TABLE_ACTION_RUN = "action_run"
    METHOD = "method"  # callee of a CallExpr (`h.isValid`, `r.read`, `t.apply`)


@dataclass(eq=False, kw_only=True, repr=False)
class MemberExpr(Expression):
    """`expr.member`."""

    expr: Expression
    member: str
    kind: MemberKind | None = None
    field: Any = None  # types.Field
    index: int | None = None


@dataclass(eq=False, kw_only=True, repr=False)
class IndexExpr(Expression):
    """`stack[i]`."""

    expr: Expression
    index: Expression


@dataclass(eq=False, kw_only=True, repr=False)
class SliceExpr(Expression):
    """`e[hi:lo]` (both bounds constants after checking: `.hi_value`, `.lo_value`)."""

    expr: Expression
    hi: Expression
    lo: Expression
    hi_value: int | None = None
    lo_value: int | None = None


@dataclass(eq=False, kw_only=True, repr=False)
class UnaryExpr(Expression):
    """`-e`, `~e`, `!e`, `+e`."""

    op: str
    operand: Expression


@dataclass(eq=False, kw_only=True, repr=False)
class BinaryExpr(Expression):
    """`a op b`; op is one of + - * / % & | ^ << >> == != < > <= >= && || ++ |+| |-|."""

    op: str
    left: Expression
    right: Expression


@dataclass(eq=False, kw_only=True, repr=False)
class TernaryExpr(Expression):
    """`c ? a : b`."""

    cond: Expression
    then: Expression
    otherwise: Expression


@dataclass(eq=False, kw_only=True, repr=False)
class CastExpr(Expression):
    """`(T) e`; `implicit=True` when inserted by the checker."""

    type_ref: TypeRef | None
    expr: Expression
    implicit: bool = False


@dataclass(eq=False, kw_only=True, repr=False)
class Argument(Node):
    """A call argument; `name` set for named arguments (`f(x = 1)`), `_` = don't care."""

    value: Expression
    name: str | None = None


class CallKind(enum.Enum):
    """What a `CallExpr` does (set by the checker)."""

    HEADER_IS_VALID = "isValid"  # header or header union
    HEADER_SET_VALID = "setValid"
    HEADER_SET_INVALID = "setInvalid"
    STACK_PUSH_FRONT = "push_front"
    STACK_POP_FRONT = "pop_front"
    TABLE_APPLY = "table.apply"
    PARSER_APPLY = "parser.apply"  # sub-parser instance
    CONTROL_APPLY = "control.apply"  # sub-control instance
    ACTION = "action"
    FUNCTION = "function"
    EXTERN_FUNCTION = "extern_function"  # mark_to_drop, hash, verify, digest, ...
    EXTERN_METHOD = "extern_method"  # register.read, counter.count, ...
    PACKET_EXTRACT = "extract"  # packet_in.extract (1 or 2 arguments)
    PACKET_LOOKAHEAD = "lookahead"
    PACKET_ADVANCE = "advance"
    PACKET_LENGTH = "length"
    PACKET_EMIT = "emit"  # packet_out.emit
    CONSTRUCTOR = "constructor"  # `Type(args)` in an instantiation argument


@dataclass(eq=False, kw_only=True, repr=False)
class CallExpr(Expression):
    """`callee<type_args>(args)`; classified by the checker (see module docstring)."""

    callee: Expression
    type_arg_refs: list[TypeRef] = field(default_factory=list)
    args: list[Argument] = field(default_factory=list)
    kind: CallKind | None = None
    target: Any = None
    receiver: Expression | None = None
    method: str | None = None
    bound_args: list[Expression | None] = field(default_factory=list)
    params: list[Any] = field(default_factory=list)  # types.Param of the callee
    type_args: list[Any] = field(default_factory=list)


@dataclass(eq=False, kw_only=True, repr=False)
class ListExpr(Expression):
    """`{a, b, c}`: a tuple/list, or a header/struct value by position."""

    items: list[Expression] = field(default_factory=list)


@dataclass(eq=False, kw_only=True, repr=False)
class StructInitExpr(Expression):
    """`{f = a, g = b}`; after checking `.type` is the target struct/header type."""

    fields: list[tuple[str, Expression]] = field(default_factory=list)


@dataclass(eq=False, kw_only=True, repr=False)
class MaskExpr(Expression):
    """`value &&& mask` in a keyset."""

    value: Expression
    mask: Expression


@dataclass(eq=False, kw_only=True, repr=False)
class RangeExpr(Expression):
    """`lo .. hi` in a keyset."""

    lo: Expression
    hi: Expression


@dataclass(eq=False, kw_only=True, repr=False)
class DefaultExpr(Expression):
    """`default` in a keyset."""


@dataclass(eq=False, kw_only=True, repr=False)
class DontCareExpr(Expression):
    """`_` in a keyset, or as an `out` argument."""


# ---------------------------------------------------------------- statements


@dataclass(eq=False, kw_only=True, repr=False)
class Statement(Node):
    """Base of statements."""


@dataclass(eq=False, kw_only=True, repr=False)
class AssignStmt(Statement):
    """`lhs = rhs;` (rhs implicitly cast to lhs type by the checker). A compound assignment
    `lhs op= b;` has `op` set and rhs = BinaryExpr(op, lhs, b), lhs evaluated once."""

    lhs: Expression
    rhs: Expression
    op: str | None = None


@dataclass(eq=False, kw_only=True, repr=False)
class CallStmt(Statement):
    """`call(...);`."""

    call: CallExpr


@dataclass(eq=False, kw_only=True, repr=False)
class BlockStmt(Statement):
    """`{ ... }`."""

    stmts: list[Statement] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False, kw_only=True, repr=False)
class IfStmt(Statement):
    """`if (cond) then else otherwise`."""

    cond: Expression
    then: Statement
    otherwise: Statement | None = None


@dataclass(eq=False, kw_only=True, repr=False)
class SwitchCase(Node):
    """One `label: body` of a switch; `body` None means fall through to the next."""

    label: Expression  # PathExpr naming an action, DefaultExpr, or a constant
    body: BlockStmt | None = None
    action: Any = None  # ActionDecl for action_run labels (checker)


@dataclass(eq=False, kw_only=True, repr=False)
class SwitchStmt(Statement):
    """`switch (t.apply().action_run) { ... }` (or on a bit/enum value)."""

    expr: Expression
    cases: list[SwitchCase] = field(default_factory=list)


@dataclass(eq=False, kw_only=True, repr=False)
class ForStmt(Statement):
    """`for (init; cond; updates) body` (P4_16 1.2.4, spec 12.x "For statement")."""

    init: list[Statement] = field(default_factory=list)
    cond: Expression | None = None
    updates: list[Statement] = field(default_factory=list)
    body: Statement | None = None
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False, kw_only=True, repr=False)
class ForInStmt(Statement):
    """`for (T v in collection) body` or `for (T v in lo .. hi) body` (range inclusive)."""

    var: VariableDecl
    collection: Expression | None = None
    lo: Expression | None = None
    hi: Expression | None = None
    body: Statement | None = None
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False, kw_only=True, repr=False)
class BreakStmt(Statement):
    """`break;` (in a loop body)."""


@dataclass(eq=False, kw_only=True, repr=False)
class ContinueStmt(Statement):
    """`continue;` (in a loop body)."""


@dataclass(eq=False, kw_only=True, repr=False)
class ExitStmt(Statement):
    """`exit;`."""


@dataclass(eq=False, kw_only=True, repr=False)
class ReturnStmt(Statement):
    """`return;` / `return e;`."""

    value: Expression | None = None


@dataclass(eq=False, kw_only=True, repr=False)
class EmptyStmt(Statement):
    """`;`."""


@dataclass(eq=False, kw_only=True, repr=False)
class DeclStmt(Statement):
    """A local `VariableDecl`, `ConstantDecl` or `Instantiation` inside a block."""

    decl: Declaration


# ---------------------------------------------------------------- declarations


@dataclass(eq=False, kw_only=True, repr=False)
class Declaration(Node):
    """Base of declarations; `name` may be empty for anonymous ones."""

    name: str = ""
    annotations: list[Annotation] = field(default_factory=list)
    fqname: str | None = None


@dataclass(eq=False, kw_only=True, repr=False)
class Param(Declaration):
    """A parameter; `direction` in "in", "out", "inout", "" (directionless)."""

    direction: str = ""
    type_ref: TypeRef
    default: Expression | None = None
    type: Any = None  # resolved
    index: int = 0  # position in its parameter list


@dataclass(eq=False, kw_only=True, repr=False)
class ConstantDecl(Declaration):
    """`const T name = value;` (checker sets `.value.const_value`)."""

    type_ref: TypeRef
    value: Expression
    type: Any = None


@dataclass(eq=False, kw_only=True, repr=False)
class VariableDecl(Declaration):
    """`T name [= init];` (a local variable)."""

    type_ref: TypeRef
    init: Expression | None = None
    type: Any = None


@dataclass(eq=False, kw_only=True, repr=False)
class TypedefDecl(Declaration):
    """`typedef T name;` or, with `newtype=True`, `type T name;`."""

    type_ref: TypeRef
    newtype: bool = False
    type: Any = None


@dataclass(eq=False, kw_only=True, repr=False)
class FieldDecl(Node):
    """A field of a header/struct/union."""

    name: str
    type_ref: TypeRef
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False, kw_only=True, repr=False)
class HeaderDecl(Declaration):
    """`header name { fields }`."""

    fields: list[FieldDecl] = field(default_factory=list)
    type: Any = None


@dataclass(eq=False, kw_only=True, repr=False)
class HeaderUnionDecl(HeaderDecl):
    """`header_union name { fields }`."""


@dataclass(eq=False, kw_only=True, repr=False)
class StructDecl(HeaderDecl):
    """`struct name { fields }`."""


@dataclass(eq=False, kw_only=True, repr=False)
class EnumMember(Node):
    """One member of an enum; `value` only for serializable enums."""

    name: str
    value: Expression | None = None


@dataclass(eq=False, kw_only=True, repr=False)
class EnumDecl(Declaration):
    """`enum [bit<W>] name { members }`."""

    underlying: TypeRef | None = None
    members: list[EnumMember] = field(default_factory=list)
    type: Any = None


@dataclass(eq=False, kw_only=True, repr=False)
class ErrorDecl(Declaration):
    """`error { members }`."""

    members: list[str] = field(default_factory=list)


@dataclass(eq=False, kw_only=True, repr=False)
class MatchKindDecl(Declaration):
    """`match_kind { members }`."""

    members: list[str] = field(default_factory=list)


@dataclass(eq=False, kw_only=True, repr=False)
class MethodDecl(Declaration):
    """A method or constructor prototype inside an extern (constructor: no return type)."""

    return_type: TypeRef | None = None
    type_params: list[str] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    abstract: bool = False
    is_constructor: bool = False


@dataclass(eq=False, kw_only=True, repr=False)
class ExternDecl(Declaration):
    """`extern Name<T> { constructors and methods }`."""

    type_params: list[str] = field(default_factory=list)
    methods: list[MethodDecl] = field(default_factory=list)
    type: Any = None


@dataclass(eq=False, kw_only=True, repr=False)
class ExternFunctionDecl(Declaration):
    """`extern R name<T>(params);`."""

    return_type: TypeRef
    type_params: list[str] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    type: Any = None


@dataclass(eq=False, kw_only=True, repr=False)
class FunctionDecl(Declaration):
    """`R name<T>(params) { body }`."""

    return_type: TypeRef
    type_params: list[str] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    body: BlockStmt
    type: Any = None


@dataclass(eq=False, kw_only=True, repr=False)
class ActionDecl(Declaration):
    """`action name(params) { body }`; directionless params are action data."""

    params: list[Param] = field(default_factory=list)
    body: BlockStmt
    type: Any = None
    owner: Any = None  # enclosing ControlDecl, or None at top level


@dataclass(eq=False, kw_only=True, repr=False)
class ParserTypeDecl(Declaration):
    """`parser Name<T>(params);` (a prototype such as v1model's `Parser`)."""

    type_params: list[str] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    type: Any = None


@dataclass(eq=False, kw_only=True, repr=False)
class ControlTypeDecl(ParserTypeDecl):
    """`control Name<T>(params);`."""


@dataclass(eq=False, kw_only=True, repr=False)
class PackageTypeDecl(ParserTypeDecl):
    """`package Name<T>(params);`."""


@dataclass(eq=False, kw_only=True, repr=False)
class Instantiation(Declaration):
    """`Type<args>(ctor args) name;` (extern, parser, control or package instance)."""

    type_ref: TypeRef
    args: list[Argument] = field(default_factory=list)
    type: Any = None  # resolved (SpecializedType / ExternType / ParserType / ...)
    bound_args: list[Expression | None] = field(default_factory=list)
    owner: Any = None  # enclosing ControlDecl / ParserDecl, None at top level


@dataclass(eq=False, kw_only=True, repr=False)
class ValueSetDecl(Declaration):
    """`value_set<T>(size) name;` (parser value set)."""

    element: TypeRef
    size: Expression
    size_value: int = 0
    type: Any = None
    owner: Any = None  # enclosing ParserDecl


@dataclass(eq=False, kw_only=True, repr=False)
class SelectCase(Node):
    """`keyset : state;`; `state` is a PathExpr resolved to a ParserState."""

    keyset: Expression  # tuple keysets are ListExpr
    state: PathExpr


@dataclass(eq=False, kw_only=True, repr=False)
class SelectExpr(Expression):
    """`select (keys) { cases }`."""

    keys: list[Expression] = field(default_factory=list)
    cases: list[SelectCase] = field(default_factory=list)


@dataclass(eq=False, kw_only=True, repr=False)
class ParserState(Declaration):
    """`state name { stmts transition ...; }`; `transition` is a PathExpr or SelectExpr.

    `transition` is None only for the built-in `accept` / `reject` states.
    """

    stmts: list[Statement] = field(default_factory=list)
    transition: Expression | None = None


@dataclass(eq=False, kw_only=True, repr=False)
class ParserDecl(Declaration):
    """`parser Name(params)(ctor params) { locals states }`."""

    type_params: list[str] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    ctor_params: list[Param] = field(default_factory=list)
    locals: list[Declaration] = field(default_factory=list)
    states: list[ParserState] = field(default_factory=list)
    type: Any = None


@dataclass(eq=False, kw_only=True, repr=False)
class KeyElement(Node):
    """`expr : match_kind @name(...)`; checker sets `.name` (P4Info key name)."""

    expr: Expression
    match_kind: str
    annotations: list[Annotation] = field(default_factory=list)
    name: str = ""


@dataclass(eq=False, kw_only=True, repr=False)
class ActionRef(Node):
    """An entry of `actions = {...}`, or a default action / entry action call."""

    name: PathExpr
    args: list[Argument] = field(default_factory=list)
    has_args: bool = False  # parentheses written
    annotations: list[Annotation] = field(default_factory=list)
    action: Any = None  # ActionDecl (checker)
    call: CallExpr | None = None  # for default actions / entries (checker builds)


@dataclass(eq=False, kw_only=True, repr=False)
class TableEntry(Node):
    """A `const entries` element: keyset `:` action call, with optional priority."""

    keyset: Expression  # ListExpr for several keys
    action: ActionRef
    priority: Expression | None = None
    annotations: list[Annotation] = field(default_factory=list)
    priority_value: int | None = None


@dataclass(eq=False, kw_only=True, repr=False)
class TableProperty(Node):
    """A table property kept for reporting (unknown properties are errors)."""

    name: str
    value: Any = None
    const: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False, kw_only=True, repr=False)
class TableDecl(Declaration):
    """`table name { ... }`; properties parsed into fields."""

    keys: list[KeyElement] = field(default_factory=list)
    actions: list[ActionRef] = field(default_factory=list)
    default_action: ActionRef | None = None
    default_action_const: bool = False
    entries: list[TableEntry] | None = None
    entries_const: bool = True
    size: Expression | None = None
    size_value: int | None = None
    implementation: Expression | None = None  # PathExpr or constructor CallExpr
    counters: Expression | None = None
    meters: Expression | None = None
    properties: list[TableProperty] = field(default_factory=list)
    owner: Any = None  # ControlDecl
    type: Any = None


@dataclass(eq=False, kw_only=True, repr=False)
class ControlDecl(Declaration):
    """`control Name(params)(ctor params) { locals apply { body } }`."""

    type_params: list[str] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    ctor_params: list[Param] = field(default_factory=list)
    locals: list[Declaration] = field(default_factory=list)
    body: BlockStmt
    type: Any = None


@dataclass(eq=False, kw_only=True, repr=False)
class P4Program(Node):
    """All top-level declarations in source order (includes first)."""

    decls: list[Declaration] = field(default_factory=list)


# ---------------------------------------------------------------- helpers over nodes


def expr_text(e: Expression) -> str:
    """The source-like text of an expression (p4c's P4Info key names)."""
    if isinstance(e, PathExpr):
        return ("." if e.absolute else "") + e.name
    if isinstance(e, MemberExpr):
        if isinstance(e.expr, TypeNameExpr):
            return f"{_type_ref_text(e.expr.type_ref)}.{e.member}"
        return f"{expr_text(e.expr)}.{e.member}"
    if isinstance(e, IndexExpr):
        return f"{expr_text(e.expr)}[{expr_text(e.index)}]"
    if isinstance(e, SliceExpr):
        return f"{expr_text(e.expr)}[{expr_text(e.hi)}:{expr_text(e.lo)}]"
    if isinstance(e, CallExpr):
        return f"{expr_text(e.callee)}(" + ", ".join(expr_text(a.value) for a in e.args) + ")"
    if isinstance(e, IntLiteral):
        return e.text or str(e.value)
    if isinstance(e, BoolLiteral):
        return "true" if e.value else "false"
    if isinstance(e, CastExpr) and e.type_ref is not None:
        return f"({_type_ref_text(e.type_ref)})({expr_text(e.expr)})"
    if isinstance(e, CastExpr):
        return expr_text(e.expr)
    if isinstance(e, BinaryExpr):
        return f"{expr_text(e.left)} {e.op} {expr_text(e.right)}"
    if isinstance(e, UnaryExpr):
        return f"{e.op}{expr_text(e.operand)}"
    return "?"


def _type_ref_text(t: TypeRef) -> str:
    if isinstance(t, NamedTypeRef):
        return t.name
    if isinstance(t, BaseTypeRef):
        return t.name
    if isinstance(t, BitsTypeRef):
        w = t.width.value if isinstance(t.width, IntLiteral) else "?"
        return f"{'int' if t.signed else 'bit'}<{w}>"
    return "?"


def iter_nodes(node: Any) -> Iterable[Node]:
    """All AST nodes below `node` (depth-first), for tools and tests."""
    stack = [node]
    seen: set[int] = set()
    while stack:
        n = stack.pop()
        if isinstance(n, list | tuple):
            stack.extend(reversed(n))
            continue
        if not isinstance(n, Node) or id(n) in seen:
            continue
        seen.add(id(n))
        yield n
        for k, v in vars(n).items():
            if k in ("decl", "target", "type", "owner", "action", "field", "resolved",
                     "const_value", "loc", "params", "type_args", "blocks"):
                continue
            if isinstance(v, Node | list | tuple):
                stack.append(v)
