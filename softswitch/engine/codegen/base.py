"""What every code-generation pass shares: the output, the names given so far, the interface.

Each pass (values, expressions, packing, statements, calls, parsers, controls)
is a class deriving from `CodegenBase`; `program.Codegen` combines them. A pass
calls into another only through the abstract methods declared here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from softswitch.frontend import ast as A
from softswitch.frontend import types as T
from softswitch.frontend.program import Program

from ..errors import CompileError
from .analysis import Facts


class Emitter:
    """Accumulates indented Python source lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.level = 0

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.level + line)

    def indent(self) -> None:
        self.level += 1

    def dedent(self) -> None:
        self.level -= 1

    def splice(self, other: Emitter) -> None:
        """Append the lines of `other` (emitted at level 0) at the current level."""
        pad = "    " * self.level
        self.lines.extend(pad + line for line in other.lines)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


@dataclass
class Place:
    """An l-value evaluated once (spec 6.8 step 3, 12.1): `read` is an expression for its
    current value; `store(value)` emits the statement writing it."""

    read: str
    write: Callable[[str], None]

    def store(self, value: str) -> None:
        """Emit the write of `value` (a Python expression) into the l-value."""
        self.write(value)


@dataclass
class BoundArgs:
    """A call's arguments, evaluated: the codes passed and the copy-out to do after it."""

    codes: list[str] = field(default_factory=list)
    # (l-value, source): a source "#k" is the k-th out value of the returned tuple
    backs: list[tuple[Place, str]] = field(default_factory=list)
    nouts: int = 0  # scalar out/inout values the callee returns in its tuple


@dataclass
class TableInfo:
    """What the builder needs to create one runtime Table."""

    decl: A.TableDecl
    name: str
    gname: str
    keys: list[tuple[str, str, int]]
    actions: list[tuple[str, A.ActionRef, str]]  # (fq action name, ref, global fn name)
    profile: str | None = None  # global name of the profile instance
    direct_counter: str | None = None
    direct_meter: str | None = None


@dataclass
class ExternInfo:
    """An extern instance: declaration, global name, fq name, type name and constructor args."""

    decl: Any
    gname: str
    name: str
    type_name: str
    args: list[Any]
    type_args: list[T.P4Type] = field(default_factory=list)


@dataclass
class ActionInfo:
    """A compiled action: fq name, global function name, action-data params."""

    decl: A.ActionDecl
    name: str
    gname: str
    params: list[tuple[str, int]]


def receiver_of(c: A.CallExpr) -> A.Expression:
    """The object of a method call (set by the checker for every method call)."""
    return cast(A.Expression, c.receiver)


def args_of(c: A.CallExpr) -> list[A.Expression]:
    """The bound arguments of a call; those of required parameters are never None (ast.py)."""
    return cast("list[A.Expression]", c.bound_args)


class CodegenBase(ABC):
    """The state of one compilation: emitted source and what was compiled under which name."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.out = Emitter()
        self.classes: dict[int, str] = {}  # id(type) -> class name
        self.class_src = Emitter()
        self.names: dict[int, str] = {}  # id(decl) -> Python access expression
        self.counter = 0
        self.tables: list[TableInfo] = []
        self.externs: list[ExternInfo] = []
        self.actions: list[ActionInfo] = []
        self.action_by_decl: dict[tuple[int, str], ActionInfo] = {}
        self.functions: dict[int, str] = {}
        self.table_by_decl: dict[tuple[int, str], TableInfo] = {}
        self.extern_by_decl: dict[tuple[int, str], ExternInfo] = {}
        self.prefix = ""  # instance prefix of the control being compiled
        self.prefix_fq: str | None = None  # control-plane name prefix of a sub-control instance
        self.block_fq = ""  # name of the top-level block being compiled
        self.fn_outs: list[tuple[str, str]] = []  # scalar out params of the current function
        self.value_sets: list[tuple[Any, str]] = []
        self.agg_params: set[str] = set()  # frame slots holding aggregates (never rebound)
        self.deferred: list[Emitter] = []  # functions, emitted before the code that calls them
        self.sub_blocks: dict[tuple[int, str], str] = {}  # (instance, prefix) -> global name
        self.state_names: dict[int, str] = {}  # id(parser state) -> global name
        self.nesting = 0  # depth of the expression being compiled (expressions.SPILL_DEPTH)
        self.facts = Facts()  # effects, exits and names reached, memoised
        self.loop_updates: list[list[A.Statement]] = []  # updates a `continue` runs, innermost last
        # constructor parameters of the instance being compiled: id(param) -> ("value", v) |
        # ("block", (function name, declaration)) | ("extern", ExternInfo)
        self.ctor_bindings: dict[int, tuple[str, Any]] = {}
        self._apply_calls: dict[int, list[A.CallExpr]] | None = None  # id(instance) -> calls

    def fresh(self, base: str) -> str:
        """A new global name starting with `base`."""
        self.counter += 1
        return f"{base}{self.counter}"

    def err(self, node: Any, message: str) -> CompileError:
        """A CompileError located at `node`."""
        return CompileError(getattr(node, "loc", "?"), message)

    # ---- values.py

    @abstractmethod
    def class_for(self, t: T.P4Type) -> str:
        """Python class implementing a header/struct/union type (generated once)."""

    @abstractmethod
    def default_value(self, t: T.P4Type) -> str:
        """Python literal of the zero value BMv2 gives an uninitialised scalar."""

    # ---- expressions.py

    @abstractmethod
    def expr(self, e: A.Expression) -> str:
        """Python expression computing `e` (scalars as int/bool/str, aggregates by reference)."""

    @abstractmethod
    def wrap(self, code: str, t: T.P4Type) -> str:
        """Reduce an exact integer result to the representation of type t."""

    @abstractmethod
    def captured(self, e: A.Expression) -> tuple[Emitter, str]:
        """`expr(e)` with the statements it emits kept apart (to place them or guard them)."""

    @abstractmethod
    def spill(self, code: str, t: T.P4Type | None = None) -> str:
        """Evaluate `code` now into a temporary (a copy for aggregates); returns its name."""

    @abstractmethod
    def operands(self, items: list[A.Expression]) -> list[str]:
        """Codes of expressions evaluated left to right (spec 8.1)."""

    @abstractmethod
    def ref(self, e: A.Expression, save: bool) -> str:
        """A reference to the aggregate l-value `e` (for a field, an element, `.next`)."""

    @abstractmethod
    def compound_assign(self, lhs: A.Expression, rhs: A.BinaryExpr) -> None:
        """`lhs op= b`: lhs = lhs op b with lhs evaluated once (spec 12.1)."""

    @abstractmethod
    def place(self, lhs: A.Expression, save: bool) -> Place:
        """The l-value `lhs`; with `save`, run-time indexes are evaluated now into temporaries."""

    @abstractmethod
    def assign(self, lhs: A.Expression, value: str) -> None:
        """Emit code storing `value` (already a Python expression) into lvalue `lhs`."""

    @abstractmethod
    def assign_expr(self, lhs: A.Expression, rhs: A.Expression) -> None:
        """lhs = rhs with P4 copy semantics for aggregates."""

    @abstractmethod
    def value_copy(self, x: A.Expression) -> str:
        """Expression for the value of `x`, copied when it is an aggregate (P4 value semantics)."""

    @abstractmethod
    def effectful(self, e: A.Node | None) -> bool:
        """True when evaluating `e` may change state (it calls something with side effects)."""

    # ---- packing.py

    @abstractmethod
    def flatten(self, e: A.Expression) -> list[tuple[str, int]]:
        """(Python expression, width) of every scalar in a list/struct/header expression."""

    @abstractmethod
    def flatten_value(self, base: str, t: T.P4Type) -> list[tuple[str, int]]:
        """(expression, width) of every scalar held in the value at `base` of type `t`."""

    @abstractmethod
    def flatten_calc(self, e: A.Expression) -> list[tuple[str, Any, str | None]]:
        """(value, width, validity) of every field a hash/checksum input holds, as BMv2's buffer"""

    @abstractmethod
    def calc_args(self, items: list[tuple[str, Any, str | None]]) -> str:
        """Code passing (packed value, bit count) of a hash/checksum input as two arguments."""

    @abstractmethod
    def fields_tuple(self, pairs: list[tuple[str, int]]) -> str:
        """Code for a tuple of (value, width) pairs."""

    @abstractmethod
    def packed(self, pairs: list[tuple[str, int]]) -> tuple[str, int]:
        """One integer expression with the scalars packed left to right, and its width."""

    # ---- statements.py

    @abstractmethod
    def stmt(self, s: A.Statement) -> None:
        """Emit one statement."""

    @abstractmethod
    def block(self, stmts: list[A.Statement]) -> None:
        """Emit a statement list; always at least one line."""

    # ---- calls.py

    @abstractmethod
    def call(self, c: A.CallExpr, want_value: bool) -> str:
        """Code for a call; returns an expression (want_value) or emits statements."""

    @abstractmethod
    def bind_call(self, c: A.CallExpr, params: list[Any], skip_data: bool,
                  callee: Any = None) -> BoundArgs:
        """Evaluate the arguments of `c` left to right (spec 6.8)."""

    @abstractmethod
    def finish_call(self, code: str, bound: BoundArgs, want_value: bool, may_exit: bool) -> str:
        """Emit the call and its copy-out; returns the result expression."""

    @abstractmethod
    def extern_info(self, inst: Any, node: Any) -> ExternInfo:
        """The extern instance `inst` as seen from the control being compiled."""

    # ---- parsers.py

    @abstractmethod
    def emit_extract(self, c: A.CallExpr) -> None:
        """Emit packet_in.extract (spec 13.8.2)."""

    @abstractmethod
    def lookahead(self, c: A.CallExpr) -> str:
        """Expression for packet_in.lookahead<T>() (spec 13.8.3)."""

    @abstractmethod
    def emit_emit(self, node: Any, code: str, t: T.P4Type) -> None:
        """packet_out.emit of a header, union, stack or struct of those (spec 15.2)."""

    @abstractmethod
    def compile_parser(self, decl: A.ParserDecl, prefix: str, prefix_fq: str | None) -> str:
        """Emit a parser's states and `def PRS_n(P, <params>)`; returns its name."""

    # ---- controls.py

    @abstractmethod
    def action_name_of(self, decl: A.ActionDecl) -> str:
        """Control-plane name of an action as compiled for the current control."""

    @abstractmethod
    def action_info(self, decl: A.ActionDecl, node: Any) -> ActionInfo:
        """The compiled action `decl` as seen from the control being compiled."""

    @abstractmethod
    def compile_action(self, decl: A.ActionDecl) -> ActionInfo:
        """Emit `def A(P, F, <directional params>, <action data>)`."""

    @abstractmethod
    def compile_function(self, decl: A.FunctionDecl) -> str:
        """Emit a function (once); returns its global name."""

    @abstractmethod
    def frame_class(self, params: list[A.Param], locals_: list[Any]) -> tuple[str, list[str]]:
        """A frame class holding a block's parameters and control-level variables."""

    @abstractmethod
    def compile_control(self, decl: A.ControlDecl, prefix: str, prefix_fq: str | None) -> str:
        """Emit the control's actions, tables and `def CTL(P, <params>)`; returns its name."""

    @abstractmethod
    def register_instance(self, d: A.Instantiation) -> None:
        """Record an extern instance (or compile a sub-control/parser instance)."""

    @abstractmethod
    def call_subcontrol(self, c: A.CallExpr) -> str:
        """Code applying a control instance."""

    @abstractmethod
    def call_subparser(self, c: A.CallExpr) -> str:
        """Code applying a parser instance."""
