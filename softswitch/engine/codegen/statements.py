"""Code generation: statements (P4_16 spec section 12).

`stmt` dispatches on the node class to an `s_<Class>` method; every statement
list emits at least one line. Local variables become Python locals.
"""

from __future__ import annotations

from softswitch.frontend import ast as A

from .base import CodegenBase


class StatementCode(CodegenBase):
    """Statements and blocks."""

    def stmt(self, s: A.Statement) -> None:
        m = getattr(self, "s_" + type(s).__name__, None)
        if m is None:
            raise self.err(s, f"unsupported statement {type(s).__name__}")
        m(s)

    def block(self, stmts: list[A.Statement]) -> None:
        """Emit a statement list; always at least one line."""
        n = len(self.out.lines)
        for s in stmts:
            self.stmt(s)
        if len(self.out.lines) == n:
            self.out("pass")

    def s_BlockStmt(self, s: A.BlockStmt) -> None:
        self.block(s.stmts)

    def s_EmptyStmt(self, s: A.EmptyStmt) -> None:
        pass

    def s_AssignStmt(self, s: A.AssignStmt) -> None:
        self.assign_expr(s.lhs, s.rhs)

    def s_CallStmt(self, s: A.CallStmt) -> None:
        code = self.call(s.call, want_value=False)
        if code:
            self.out(code)

    def s_IfStmt(self, s: A.IfStmt) -> None:
        e = self.out
        e(f"if {self.expr(s.cond)}:")
        e.indent()
        self.block([s.then])
        e.dedent()
        if s.otherwise is not None:
            if isinstance(s.otherwise, A.IfStmt):
                # elif chain keeps the generated code flat
                e("else:")
                e.indent()
                self.stmt(s.otherwise)
                e.dedent()
            else:
                e("else:")
                e.indent()
                self.block([s.otherwise])
                e.dedent()

    def s_SwitchStmt(self, s: A.SwitchStmt) -> None:
        e = self.out
        var = self.fresh("_sw")
        e(f"{var} = {self.expr(s.expr)}")
        pending: list[str] = []
        first = True
        default_body = None
        for case in s.cases:
            if isinstance(case.label, A.DefaultExpr):
                default_body = case.body
                if case.body is None:
                    continue
                if pending:
                    # labels falling through into default: just the default body
                    pending = []
                continue
            if case.action is not None:
                pending.append(repr(self.action_name_of(case.action)))
            else:
                pending.append(self.expr(case.label))
            if case.body is None:
                continue
            cond = " or ".join(f"{var} == {p}" for p in pending)
            e(f"{'if' if first else 'elif'} {cond}:")
            first = False
            e.indent()
            self.block([case.body])
            e.dedent()
            pending = []
        if default_body is not None:
            if first:
                self.block([default_body])
            else:
                e("else:")
                e.indent()
                self.block([default_body])
                e.dedent()

    def s_ExitStmt(self, s: A.ExitStmt) -> None:
        self.out("raise _Exit()")

    def s_ReturnStmt(self, s: A.ReturnStmt) -> None:
        value = self.expr(s.value) if s.value is not None else "None"
        if self.fn_outs:
            outs = ", ".join(local for local, _ in self.fn_outs)
            self.out(f"return ({value}, {outs})")
        elif s.value is not None:
            self.out(f"return {value}")
        else:
            self.out("return")

    def s_DeclStmt(self, s: A.DeclStmt) -> None:
        d = s.decl
        if isinstance(d, A.ConstantDecl):
            return
        if isinstance(d, A.VariableDecl):
            local = self.fresh(f"v_{d.name}_")
            self.names[id(d)] = local
            if d.init is not None:
                self.out(f"{local} = {self.value_copy(d.init)}")
            else:
                self.out(f"{local} = {self.default_value(d.type)}")
            return
        raise self.err(s, f"unsupported local declaration {type(d).__name__}")
