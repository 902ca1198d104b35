"""Name resolution, type checking and constant folding (P4_16 spec sections 6-14).

The checker walks the AST once in declaration order (P4 requires declaration
before use), annotating nodes in place as promised in ast.py, and reports every
problem it finds to the Reporter, continuing after errors where it can.

`Checker` is the passes of `softswitch.frontend.check` combined, one module per
part of the language; this module holds the walk over the top-level declarations.
"""

from __future__ import annotations

from . import ast as A
from .check.base import Abort
from .check.blocks import BlockChecks
from .check.calls import CallChecks
from .check.expressions import ExpressionChecks
from .check.operators import OperatorChecks
from .check.statements import StatementChecks
from .check.tables import TableChecks
from .check.type_decls import TypeDeclChecks


class Checker(TypeDeclChecks, BlockChecks, TableChecks, StatementChecks, ExpressionChecks,
              OperatorChecks, CallChecks):
    """Checks one parsed program; results are annotations on the AST plus diagnostics."""

    def check(self, prog: A.P4Program) -> None:
        """Check every top-level declaration in order."""
        for d in prog.decls:
            try:
                self.top_decl(d)
            except Abort:
                pass
            except RecursionError:
                self.err(d.loc, "declaration nested too deeply")
            except Exception as exc:  # a checker bug must not become a traceback
                self.err(d.loc, f"internal error while checking this declaration: "
                                f"{type(exc).__name__}: {exc}")

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
