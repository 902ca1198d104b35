"""Code generation: statements (P4_16 spec section 12).

`stmt` dispatches on the node class to an `s_<Class>` method; every statement
list emits at least one line. Local variables become Python locals. Chains of
`else if` and long switches are compiled without recursion and without nesting
the generated code (CPython refuses more than 100 indentation levels and
recurses once per `elif`). Loops count their iterations against a per-packet
budget (runtime.LOOP_BUDGET), so that no packet can make the switch spin.
"""

from __future__ import annotations

from softswitch.frontend import ast as A
from softswitch.frontend import types as T

from .base import CodegenBase, Emitter
from .values import rt

ELIF_CHAIN = 64  # longer chains become flat guarded blocks (CPython recurses per elif)


class StatementCode(CodegenBase):
    """Statements and blocks."""

    def stmt(self, s: A.Statement) -> None:
        m = getattr(self, "s_" + type(s).__name__, None)
        if m is None:
            raise self.err(s, f"unsupported: statement {type(s).__name__}")
        m(s)

    def block(self, stmts: list[A.Statement]) -> None:
        """Emit a statement list; always at least one line."""
        n = len(self.out.lines)
        for s in stmts:
            self.stmt(s)
        if len(self.out.lines) == n:
            self.out("pass")

    def branch(self, body: A.Statement | None) -> None:
        """One indented branch body."""
        self.out.indent()
        self.block([body] if body is not None else [])
        self.out.dedent()

    def s_BlockStmt(self, s: A.BlockStmt) -> None:
        self.block(s.stmts)

    def s_EmptyStmt(self, s: A.EmptyStmt) -> None:
        pass

    def s_AssignStmt(self, s: A.AssignStmt) -> None:
        if s.op is not None and isinstance(s.rhs, A.BinaryExpr) and s.rhs.left is s.lhs:
            self.compound_assign(s.lhs, s.rhs)
        else:
            self.assign_expr(s.lhs, s.rhs)

    def s_CallStmt(self, s: A.CallStmt) -> None:
        code = self.call(s.call, want_value=False)
        if code:
            self.out(code)

    def s_IfStmt(self, s: A.IfStmt) -> None:
        # the chain `if c1 s1 else if c2 s2 ... else sN`, collected without recursion
        chain: list[A.IfStmt] = [s]
        rest = s.otherwise
        while isinstance(rest, A.IfStmt):
            chain.append(rest)
            rest = rest.otherwise
        first = self.expr(s.cond)  # its statements run first, unconditionally
        conds = [self.captured(x.cond) for x in chain[1:]]
        self.emit_chain([(Emitter(), first)] + conds, [x.then for x in chain], rest)

    def emit_chain(self, conds: list[tuple[Emitter, str]], bodies: list[A.Statement | None],
                   rest: A.Statement | None) -> None:
        """if/elif/else over conditions (with the statements each needs) and bodies."""
        e = self.out
        if len(conds) <= ELIF_CHAIN and not any(buf.lines for buf, _ in conds[1:]):
            e.splice(conds[0][0])
            for i, ((_, c), body) in enumerate(zip(conds, bodies, strict=True)):
                e(f"{'elif' if i else 'if'} {c}:")
                self.branch(body)
            if rest is not None:
                e("else:")
                self.branch(rest)
            return
        # flat: each branch guarded by "no branch taken yet", at one indentation level
        pending = self.fresh("_d")
        e(f"{pending} = True")
        for i, ((buf, c), body) in enumerate(zip(conds, bodies, strict=True)):
            if i:
                e(f"if {pending}:")
                e.indent()
            e.splice(buf)
            e(f"if {c}:")
            e.indent()
            e(f"{pending} = False")
            self.block([body] if body is not None else [])
            e.dedent()
            if i:
                e.dedent()
        if rest is not None:
            e(f"if {pending}:")
            self.branch(rest)

    def s_SwitchStmt(self, s: A.SwitchStmt) -> None:
        var = self.fresh("_sw")
        self.out(f"{var} = {self.expr(s.expr)}")
        conds: list[tuple[Emitter, str]] = []
        bodies: list[A.Statement | None] = []
        pending: list[str] = []
        default_body = None
        for case in s.cases:
            if isinstance(case.label, A.DefaultExpr):
                default_body = case.body
                pending = []  # labels falling through into default: just the default body
                continue
            if case.action is not None:
                pending.append(repr(self.action_name_of(case.action)))
            else:
                pending.append(self.expr(case.label))
            if case.body is None:
                continue
            conds.append((Emitter(), " or ".join(f"{var} == {p}" for p in pending)))
            bodies.append(case.body)
            pending = []
        if conds:
            self.emit_chain(conds, bodies, default_body)
        elif default_body is not None:
            self.block([default_body])

    # ---- loops (P4_16 1.2.4)

    def loop_head(self, what: str) -> None:
        """Charge one iteration to the packet's loop budget (runtime.LOOP_BUDGET)."""
        self.out("P.loops -= 1")
        self.out(f"if P.loops < 0: raise _Drop({what + ': loop budget of the packet exceeded'!r})")

    def s_ForStmt(self, s: A.ForStmt) -> None:
        e = self.out
        for init in s.init:
            self.stmt(init)
        e("while True:")
        e.indent()
        self.loop_head(f"for loop at {s.loc}")
        if s.cond is not None:
            buf, c = self.captured(s.cond)
            e.splice(buf)
            e(f"if not {c}: break")
        self.loop_updates.append(s.updates)
        try:
            self.block([s.body] if s.body is not None else [])
        finally:
            self.loop_updates.pop()
        for upd in s.updates:
            self.stmt(upd)
        e.dedent()

    def s_ForInStmt(self, s: A.ForInStmt) -> None:
        e = self.out
        var = self.fresh(f"v_{s.var.name}_")
        self.names[id(s.var)] = var
        item = self.fresh("_x")
        if s.lo is not None and s.hi is not None:
            lo, hi = self.operands([s.lo, s.hi])
            e(f"for {var} in range({lo}, {hi} + 1):")  # inclusive range (spec 8.x sets)
        elif isinstance(s.collection, A.ListExpr):
            items = self.operands(s.collection.items)
            e(f"for {item} in ({''.join(x + ', ' for x in items)}):")
            e(f"    {var} = {item}")
        else:
            assert s.collection is not None
            coll = self.expr(s.collection)
            if isinstance(rt(s.collection.type), T.HeaderStack):
                # the collection is evaluated once, before the first iteration (spec)
                e(f"for {var} in [{item}.copy() for {item} in {coll}.e]:")
            else:
                e(f"for {var} in {coll}:")
        e.indent()
        self.loop_head(f"for loop at {s.loc}")
        self.loop_updates.append([])
        try:
            self.block([s.body] if s.body is not None else [])
        finally:
            self.loop_updates.pop()
        e.dedent()

    def s_BreakStmt(self, s: A.BreakStmt) -> None:
        self.out("break")

    def s_ContinueStmt(self, s: A.ContinueStmt) -> None:
        if self.loop_updates:
            for upd in self.loop_updates[-1]:
                self.stmt(upd)  # the updates run before the condition is evaluated again
        self.out("continue")

    # ----

    def s_ExitStmt(self, s: A.ExitStmt) -> None:
        self.out("raise _Exit()")

    def s_ReturnStmt(self, s: A.ReturnStmt) -> None:
        value = self.value_copy(s.value) if s.value is not None else "None"
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
            if d.init is not None:
                value = self.value_copy(d.init)
                self.names[id(d)] = local  # in scope after its initialiser
                self.out(f"{local} = {value}")
            else:
                self.names[id(d)] = local
                self.out(f"{local} = {self.default_value(d.type)}")
            return
        raise self.err(s, f"unsupported: local declaration {type(d).__name__}")
