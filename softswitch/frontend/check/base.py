"""What every checking pass shares: the checker's state and the interface between passes.

Each pass (type_decls, blocks, tables, statements, expressions, operators,
calls) is a class deriving from `CheckerBase`; `softswitch.frontend.checker.Checker`
combines them. A pass calls into another only through the abstract methods
declared here, so each module reads on its own and mypy checks the calls.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from .. import ast as A
from .. import types as T
from ..diagnostics import Reporter
from .scope import BuiltinState, Scope

Expected = T.P4Type | None  # the type an expression's context asks for, if any


class Abort(Exception):
    """Stop checking the current expression after an error was reported."""


class CheckerBase(ABC):
    """The state of one check run; results are annotations on the AST plus diagnostics."""

    def __init__(self, reporter: Reporter) -> None:
        self.r = reporter
        self.error_type = T.ErrorType()
        self.match_kind_type = T.MatchKindType()
        self.global_scope = Scope(kind="global")
        self.types: dict[str, T.P4Type] = {}
        # what info.py builds Program.info from
        self.main_inst: A.Instantiation | None = None
        self.tables: list[A.TableDecl] = []
        self.actions: list[A.ActionDecl] = []
        self.instances: list[A.Instantiation] = []
        self.value_sets: list[A.ValueSetDecl] = []
        self.digest_calls: list[A.CallExpr] = []
        # where the walk is
        self._current_fn: Any = None  # function/action/control being checked
        self._synthesized: list[tuple[A.TableDecl, A.Instantiation]] = []  # anonymous instances
        self._in_parser = False
        for st in ("accept", "reject"):
            self.global_scope.declare(st, BuiltinState(name=st, loc=A.NOWHERE))

    def err(self, loc: A.Loc, msg: str) -> None:
        """Report an error at `loc`."""
        self.r.error(loc, msg)

    def unsupported(self, loc: A.Loc, what: str) -> None:
        """Report a construct the softswitch does not support."""
        self.r.unsupported(loc, what)

    def declare(self, scope: Scope, name: str, decl: Any, overload: bool = False) -> None:
        """Declare `name` in `scope`; a second declaration is an error unless overloadable."""
        existing = scope.names.get(name)
        if existing and not overload:
            self.err(decl.loc, f"duplicate declaration of '{name}'")
            return
        scope.declare(name, decl)

    # ---- type_decls.py

    @abstractmethod
    def resolve(self, tref: A.TypeRef, scope: Scope) -> T.P4Type:
        """Resolve a written type to a P4Type (typedefs expanded); errors give POISON."""

    @abstractmethod
    def decl_type(self, d: Any, where: A.Node) -> T.P4Type:
        """The type a type declaration stands for (an error where `d` is not a type)."""

    @abstractmethod
    def params(self, params: list[A.Param], scope: Scope, ctx: str) -> list[T.Param]:
        """Resolve the types of a parameter list."""

    @abstractmethod
    def const_int(self, e: A.Expression | None, scope: Scope, what: str,
                  expected: T.P4Type | None = None) -> int | None:
        """Check `e` and return its value when it is a compile-time integer."""

    @abstractmethod
    def constant_decl(self, d: A.ConstantDecl, scope: Scope) -> None:
        """Check `const T name = value;`."""

    # ---- blocks.py

    @abstractmethod
    def instantiation(self, d: A.Instantiation, scope: Scope) -> None:
        """Check an instantiation of an extern, parser, control or package."""

    @abstractmethod
    def fqname(self, d: A.Declaration, owner: Any) -> str:
        """P4Info name: @name overrides (leading '.' = absolute), else Owner.local."""

    @abstractmethod
    def keyset(self, ks: A.Expression, key_types: list[T.P4Type], scope: Scope) -> A.Expression:
        """Check a select or entry keyset against the key types (spec 13.6)."""

    @abstractmethod
    def var_decl(self, d: A.VariableDecl, scope: Scope) -> None:
        """Check a variable declaration and declare it."""

    # ---- tables.py

    @abstractmethod
    def table_decl(self, d: A.TableDecl, scope: Scope, owner: Any) -> None:
        """Check a table and parse its properties into the TableDecl."""

    # ---- statements.py

    @abstractmethod
    def block(self, b: A.BlockStmt, scope: Scope) -> None:
        """Check a block statement in a new scope."""

    @abstractmethod
    def stmt(self, st: A.Statement, scope: Scope) -> None:
        """Check one statement."""

    @abstractmethod
    def bool_expr(self, e: A.Expression, scope: Scope, what: str) -> A.Expression:
        """Check an expression that must be bool."""

    @abstractmethod
    def check_writable(self, e: A.Expression, scope: Scope, what: str = "assign to") -> None:
        """Report an error unless `e` is an l-value."""

    # ---- expressions.py

    @abstractmethod
    def expr(self, e: A.Expression, scope: Scope, expected: T.P4Type | None = None) -> A.Expression:
        """Check `e`; returns the node to use in its place (possibly re-typed or wrapped)."""

    @abstractmethod
    def coerce(self, e: A.Expression, t: T.P4Type, loc: A.Loc) -> A.Expression:
        """Convert `e` to type `t` where P4 allows it implicitly, else report an error."""

    @abstractmethod
    def implicit_cast(self, e: A.Expression, t: T.P4Type) -> A.CastExpr:
        """`e` wrapped in a `CastExpr(implicit=True)` to `t`."""

    # ---- calls.py

    @abstractmethod
    def order_args(self, args: list[A.Argument], params: list[T.Param], loc: A.Loc,
                   what: str) -> list[A.Argument | None]:
        """Match positional/named arguments to parameters (spec 6.8.1)."""

    @abstractmethod
    def bind_args(self, args: list[A.Argument], params: list[T.Param], scope: Scope,
                  loc: A.Loc, what: str) -> list[A.Expression | None]:
        """Check arguments against non-generic parameters; returns them in parameter order."""
