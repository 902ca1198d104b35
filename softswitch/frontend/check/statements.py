"""Checking pass: statements (P4_16 spec section 12).

Blocks open a scope; assignments and out/inout arguments must be l-values;
`exit` and `return` are checked against where they appear; switch labels
against the table's actions or the switched value's type.
"""

from __future__ import annotations

from typing import Any

from .. import ast as A
from .. import types as T
from ..ast import expr_text
from .base import Abort, CheckerBase
from .scope import Scope
from .typeops import POISON, same_type


class StatementChecks(CheckerBase):
    """Statements, blocks and l-value checks."""

    def block(self, b: A.BlockStmt, scope: Scope) -> None:
        s = Scope(scope, kind="block", owner=scope.owner)
        for st in b.stmts:
            self.stmt(st, s)

    def stmt(self, st: A.Statement, scope: Scope) -> None:
        try:
            self._stmt(st, scope)
        except Abort:
            pass

    def _stmt(self, st: A.Statement, scope: Scope) -> None:
        if isinstance(st, A.AssignStmt):
            st.lhs = self.expr(st.lhs, scope)
            self.check_writable(st.lhs, scope)
            if st.op is not None and isinstance(st.rhs, A.BinaryExpr):
                st.rhs.left = st.lhs  # `lhs op= b` is `lhs = lhs op b` (spec 12.1)
            st.rhs = self.coerce(self.expr(st.rhs, scope, st.lhs.type), st.lhs.type, st.rhs.loc)
        elif isinstance(st, A.ForStmt | A.ForInStmt):
            self.loop(st, scope)
        elif isinstance(st, A.BreakStmt | A.ContinueStmt):
            if not getattr(self, "_loops", 0):
                word = "break" if isinstance(st, A.BreakStmt) else "continue"
                self.err(st.loc, f"'{word}' outside a loop")
        elif isinstance(st, A.CallStmt):
            call = self.expr(st.call, scope)
            if isinstance(call, A.CallExpr):
                st.call = call
            else:
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

    def loop(self, st: A.ForStmt | A.ForInStmt, scope: Scope) -> None:
        """`for` statements (P4_16 1.2.4): init, condition and updates, or a loop variable
        over an inclusive range or the elements of a header stack or list."""
        s = Scope(scope, kind="block", owner=scope.owner)
        if isinstance(st, A.ForStmt):
            for init in st.init:
                self.stmt(init, s)
            if st.cond is not None:
                st.cond = self.bool_expr(st.cond, s, "for condition")
            for upd in st.updates:
                self.stmt(upd, s)
        else:
            var = st.var
            if st.collection is not None:
                st.collection = coll = self.expr(st.collection, s)
            self.var_decl(var, s)
            t = var.type
            if st.lo is not None and st.hi is not None:
                st.lo = self.coerce(self.expr(st.lo, s, t), t, st.lo.loc)
                st.hi = self.coerce(self.expr(st.hi, s, t), t, st.hi.loc)
                if not isinstance(T.strip_newtype(t), T.Bits):
                    self.err(var.loc, f"a range loop needs a bit<W> or int<W> variable, not {t}")
            elif st.collection is not None and coll.type is not POISON and t is not POISON:
                ct = T.strip_newtype(coll.type)
                if isinstance(coll, A.ListExpr):
                    coll.items = [self.coerce(x, t, x.loc) for x in coll.items]
                elif not isinstance(ct, T.HeaderStack):
                    self.err(coll.loc, f"cannot loop over a value of type {coll.type}")
                elif not same_type(ct.element, t):
                    self.err(var.loc, f"loop variable of type {t} over a stack of {ct.element}")
        self._loops = getattr(self, "_loops", 0) + 1
        try:
            if st.body is not None:
                self.stmt_in_scope(st.body, s)
        finally:
            self._loops -= 1

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
