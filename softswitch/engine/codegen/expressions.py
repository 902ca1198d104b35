"""Code generation: expressions and assignments (P4_16 spec sections 8, 12.1).

`expr` returns a Python expression for a checked P4 expression, dispatching on
the node class to an `x_<Class>` method; scalars are ints/bools/strs and
aggregates are references. Assignments copy aggregates (P4 has value semantics);
a parameter holding an aggregate is overwritten in place, never rebound.

Evaluation order (spec 8.1): a subexpression may need statements before the
expression that uses it (a call's copy-out, a spilled temporary). Such
statements are emitted where the subexpression is evaluated: operands to its
left are first evaluated into temporaries, and the statements of the right
operand of `&&`/`||` or of a branch of `?:` run only under their condition.
Every SPILL_DEPTH levels of nesting the value goes to a temporary, so that no
generated line nests deeper than CPython accepts, whatever the program.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, cast

from softswitch.frontend import ast as A
from softswitch.frontend import types as T

from .base import CodegenBase, Emitter, Place
from .values import is_agg, rt, width_of

SPILL_DEPTH = 8  # operators nested in one generated Python expression before a temporary
# codes that later statements cannot change: literals and temporaries
_STABLE = re.compile(r"-?(\d+|0x[0-9a-f]+)|True|False|None|_[tad]\d+|'[^'\\]*'")
# expression nodes that add parentheses to the generated code
_NESTING = (A.BinaryExpr, A.UnaryExpr, A.CastExpr, A.TernaryExpr, A.SliceExpr, A.CallExpr,
            A.IndexExpr, A.ListExpr, A.StructInitExpr)


class ExpressionCode(CodegenBase):
    """Expressions, their width wrapping, and assignment to l-values."""

    def const(self, v: Any) -> str:
        if isinstance(v, bool):
            return "True" if v else "False"
        if isinstance(v, int):
            return str(v) if -1000 < v < 1000 else hex(v)
        return repr(v)

    def expr(self, e: A.Expression) -> str:
        """Python expression computing `e` (scalars as int/bool/str, aggregates by reference)."""
        if e.const_value is not None and not isinstance(e, A.CallExpr):
            return self.const(e.const_value)
        m: Callable[[Any], str] | None = getattr(self, "x_" + type(e).__name__, None)
        if m is None:
            raise self.err(e, f"unsupported: expression {type(e).__name__}")
        if not isinstance(e, _NESTING):
            return m(e)
        self.nesting += 1
        try:
            code = m(e)
        finally:
            self.nesting -= 1
        if self.nesting and self.nesting % SPILL_DEPTH == 0:
            code = self.spill(code, e.type)
        return code

    def captured(self, e: A.Expression) -> tuple[Emitter, str]:
        """`expr(e)` with the statements it emits kept apart (to place them or guard them)."""
        saved = self.out
        self.out = buf = Emitter()
        try:
            code = self.expr(e)
        finally:
            self.out = saved
        return buf, code

    def spill(self, code: str, t: T.P4Type | None = None) -> str:
        """Evaluate `code` now into a temporary (a copy for aggregates); returns its name."""
        if _STABLE.fullmatch(code):
            return code
        tmp = self.fresh("_t")
        copy = t is not None and is_agg(t)
        self.out(f"{tmp} = {code}{'.copy()' if copy else ''}")
        return tmp

    def operands(self, items: list[A.Expression]) -> list[str]:
        """Codes of expressions evaluated left to right (spec 8.1): when one needs statements,
        the operands before it are evaluated first, into temporaries."""
        codes: list[str] = []
        for x in items:
            buf, code = self.captured(x)
            if buf.lines:
                codes = [self.spill(c, y.type) for c, y in zip(codes, items, strict=False)]
                self.out.splice(buf)
            codes.append(code)
        return codes

    def effectful(self, e: A.Node | None) -> bool:
        """True when evaluating `e` may change state (it calls something with side effects)."""
        return self.facts.effectful(e)

    def x_IntLiteral(self, e: A.IntLiteral) -> str:
        return self.const(e.value)

    def x_BoolLiteral(self, e: A.BoolLiteral) -> str:
        return "True" if e.value else "False"

    def x_StringLiteral(self, e: A.StringLiteral) -> str:
        return repr(e.value)

    def x_PathExpr(self, e: A.PathExpr) -> str:
        d = e.decl
        if isinstance(d, A.ConstantDecl):
            return self.const(d.value.const_value)
        name = self.names.get(id(d))
        if name is None:
            bound = self.ctor_bindings.get(id(d))
            if bound is not None and bound[0] == "value":
                return self.const(bound[1])  # a constructor parameter (spec 14)
            raise self.err(e, f"cannot use {e.name} here")
        return name

    def x_MemberExpr(self, e: A.MemberExpr) -> str:
        k = e.kind
        if k is A.MemberKind.FIELD:
            return f"{self.expr(e.expr)}.f_{e.member}"
        base = self.expr(e.expr)
        if k is A.MemberKind.STACK_NEXT:
            return f"{base}.next_for_extract()"
        if k is A.MemberKind.STACK_LAST:
            return f"{base}.last()"
        if k is A.MemberKind.STACK_LAST_INDEX:
            return f"(({base}.n - 1) & 0xFFFFFFFF)"
        if k is A.MemberKind.STACK_SIZE:
            return f"len({base}.e)"
        if k is A.MemberKind.TABLE_HIT:
            return f"{base}[0]"
        if k is A.MemberKind.TABLE_MISS:
            return f"(not {base}[0])"
        if k is A.MemberKind.TABLE_ACTION_RUN:
            return f"{base}[1]"
        raise self.err(e, f"unsupported: member access .{e.member}")

    def x_IndexExpr(self, e: A.IndexExpr) -> str:
        base = self.expr(e.expr)
        if e.index.const_value is not None:
            return f"{base}.e[{self.const(e.index.const_value)}]"  # in range (checked)
        # a run-time index out of range reads an invalid header (spec 8.26; runtime.py)
        return f"{base}.at({self.expr(e.index)}, {str(e.loc)!r})"

    def x_SliceExpr(self, e: A.SliceExpr) -> str:
        hi, lo = _slice_bounds(e)
        mask = (1 << (hi - lo + 1)) - 1
        inner = self.expr(e.expr)
        return f"(({inner} >> {lo}) & {hex(mask)})" if lo else f"({inner} & {hex(mask)})"

    def wrap(self, code: str, t: T.P4Type) -> str:
        """Reduce an exact integer result to the representation of type t."""
        t = rt(t)
        if isinstance(t, T.Bits):
            m = (1 << t.width) - 1
            if t.signed:
                h = 1 << (t.width - 1)
                return f"(((({code}) + {hex(h)}) & {hex(m)}) - {hex(h)})"
            return f"(({code}) & {hex(m)})"
        return code

    def x_UnaryExpr(self, e: A.UnaryExpr) -> str:
        v = self.expr(e.operand)
        t = rt(e.type)
        if e.op == "!":
            return f"(not {v})"
        if e.op == "+":
            return v
        if e.op == "-":
            return self.wrap(f"-{v}", t)
        if e.op == "~":
            if isinstance(t, T.Bits) and not t.signed:
                return f"({v} ^ {hex((1 << t.width) - 1)})"
            return f"(~{v})"
        raise self.err(e, f"unsupported: operator {e.op}")

    def x_BinaryExpr(self, e: A.BinaryExpr) -> str:
        """A tree of binary operators, walked with a stack of its own rather than by recursion:
        a chain `a + b + c + ...` (or `a + (b + (c + ...))`) is as deep as it is long. Each
        operator's right operand is compiled apart so that its statements can be placed
        (spec 8.1: left before right; `&&`/`||` evaluate the right only when needed), and
        every SPILL_DEPTH levels the value goes to a temporary."""
        base = self.nesting
        # frame: [node, stage, left code, saved output, right buffer]
        stack: list[list[Any]] = [[e, 0, "", None, None]]
        result = ""
        while stack:
            frame = stack[-1]
            node = frame[0]
            depth = base + len(stack)
            if frame[1] == 0:  # the left operand
                frame[1] = 1
                if _inner_binary(node.left):
                    stack.append([node.left, 0, "", None, None])
                    continue
                result = self._operand(node.left, depth)
            if frame[1] == 1:  # the right operand, into a buffer of its own
                frame[1] = 2
                frame[2] = result
                frame[3], frame[4] = self.out, Emitter()
                self.out = frame[4]
                if _inner_binary(node.right):
                    stack.append([node.right, 0, "", None, None])
                    continue
                result = self._operand(node.right, depth)
            # both done: combine
            self.out = frame[3]
            result = self.binary_step(node, frame[2], frame[4], result)
            stack.pop()
            if stack and depth % SPILL_DEPTH == 0:
                result = self.spill(result, node.type)
        return result

    def _operand(self, x: A.Expression, depth: int) -> str:
        saved = self.nesting
        self.nesting = depth
        try:
            return self.expr(x)
        finally:
            self.nesting = saved

    def binary_step(self, e: A.BinaryExpr, a: str, buf: Emitter, b: str) -> str:
        """`a op b` where `buf` holds the statements the right operand needs: they run after
        the left operand is evaluated, and for && and || only when the left asks for it."""
        if e.op in ("&&", "||"):
            if not buf.lines:
                return f"({a} {'and' if e.op == '&&' else 'or'} {b})"
            t = self.fresh("_t")
            out = self.out
            out(f"{t} = {a}")
            out(f"if {t}:" if e.op == "&&" else f"if not {t}:")
            out.indent()
            out.splice(buf)
            out(f"{t} = {b}")
            out.dedent()
            return t
        if buf.lines:
            a = self.spill(a, e.left.type)
            self.out.splice(buf)
        return self.binop(e, a, b)

    def binop(self, e: A.BinaryExpr, a: str, b: str) -> str:
        """Code of a non-logical binary operator over operand codes `a` and `b`."""
        op = e.op
        t = rt(e.type)
        if op in ("==", "!="):
            if is_agg(e.left.type) or isinstance(rt(e.left.type), T.TupleType):
                return f"(_aggf({a}) {op} _aggf({b}))"
            return f"({a} {op} {b})"
        if op in ("<", ">", "<=", ">="):
            return f"({a} {op} {b})"
        if not isinstance(t, T.Bits):
            raise self.err(e, f"operator {op} on {t}")
        w, signed = t.width, t.signed
        m = (1 << w) - 1
        if op in ("+", "-", "*"):
            return self.wrap(f"{a} {op} {b}", t)
        if op in ("&", "|", "^"):
            return f"({a} {op} {b})"
        if op == "/":
            return self.wrap(f"_div({a}, {b})", t)
        if op == "%":
            return self.wrap(f"_mod({a}, {b})", t)
        if op == "<<":
            rc = e.right.const_value
            if isinstance(rc, int):
                return "0" if rc >= w else self.wrap(f"{a} << {rc}", t)
            return self.wrap(f"_shl({a}, {b}, {w})", t)
        if op == ">>":
            rc = e.right.const_value
            if isinstance(rc, int):
                return f"({a} >> {min(rc, w)})"
            return f"({a} >> min({b}, {w}))"
        if op == "|+|":
            if signed:
                return f"_sat({a} + {b}, {w})"
            return f"min({a} + {b}, {hex(m)})"
        if op == "|-|":
            if signed:
                return f"_sat({a} - {b}, {w})"
            return f"max({a} - {b}, 0)"
        if op == "++":
            lw = width_of(e.right.type)
            lm = (1 << lw) - 1
            left_t = rt(e.left.type)
            left_m = (1 << left_t.width) - 1 if isinstance(left_t, T.Bits) else m
            code = f"((({a}) & {hex(left_m)}) << {lw}) | (({b}) & {hex(lm)})"
            return self.wrap(code, t) if signed else f"({code})"
        raise self.err(e, f"unsupported: operator {op}")

    def x_TernaryExpr(self, e: A.TernaryExpr) -> str:
        """`c ? a : b` evaluates c, then a or b only (spec 8.1); a chain `c1 ? a : c2 ? b : ...`
        is handled without recursion and without nesting the generated code."""
        chain = [e]
        x = e.otherwise
        while isinstance(x, A.TernaryExpr) and x.const_value is None:
            chain.append(x)
            x = x.otherwise
        first = self.expr(e.cond)
        parts: list[tuple[Emitter | None, str, Emitter, str]] = [(None, first, *self.captured(e.then))]
        parts += [(*self.captured(n.cond), *self.captured(n.then)) for n in chain[1:]]
        last_buf, last = self.captured(x)
        lines = last_buf.lines or any(b is not None and b.lines for b, _, _, _ in parts) or any(
            tb.lines for _, _, tb, _ in parts)
        if not lines and len(chain) <= SPILL_DEPTH:
            code = last
            for _, c, _, t in reversed(parts):
                code = f"({t} if {c} else {code})"
            return code
        out = self.out
        r = self.fresh("_t")
        if len(chain) == 1:
            _, c, tb, t = parts[0]
            out(f"if {c}:")
            out.indent()
            out.splice(tb)
            out(f"{r} = {t}")
            out.dedent()
            out("else:")
            out.indent()
            out.splice(last_buf)
            out(f"{r} = {last}")
            out.dedent()
            return r
        pending = self.fresh("_d")  # no branch taken yet
        out(f"{pending} = True")
        for i, (cb, c, tb, t) in enumerate(parts):
            if i:
                out(f"if {pending}:")
                out.indent()
            if cb is not None:
                out.splice(cb)
            out(f"if {c}:")
            out.indent()
            out(f"{pending} = False")
            out.splice(tb)
            out(f"{r} = {t}")
            out.dedent()
            if i:
                out.dedent()
        out(f"if {pending}:")
        out.indent()
        out.splice(last_buf)
        out(f"{r} = {last}")
        out.dedent()
        return r

    def x_CastExpr(self, e: A.CastExpr) -> str:
        v = self.expr(e.expr)
        dst = rt(e.type)
        src = rt(e.expr.type)
        if isinstance(dst, T.Bits):
            if isinstance(src, T.BoolType):
                return f"(1 if {v} else 0)"
            if isinstance(src, T.Bits) and not src.signed and not dst.signed and src.width <= dst.width:
                return v
            if isinstance(src, T.Bits) and src.signed and dst.signed and src.width <= dst.width:
                return v
            return self.wrap(v, dst)
        if isinstance(dst, T.BoolType):
            if isinstance(src, T.BoolType):
                return v
            return f"({v} != 0)"
        if isinstance(dst, T.InfInt):
            return v
        if type(dst) is type(src):
            return v
        raise self.err(e, f"unsupported: cast from {src} to {dst}")

    def x_CallExpr(self, e: A.CallExpr) -> str:
        return self.call(e, want_value=True)

    def x_ListExpr(self, e: A.ListExpr) -> str:
        t = rt(e.type)
        if isinstance(t, T.StructLike):
            return self.build_struct(t, [(f.name, it) for f, it in zip(t.fields, e.items, strict=False)])
        return "(" + "".join(c + ", " for c in self.operands(e.items)) + ")"

    def x_StructInitExpr(self, e: A.StructInitExpr) -> str:
        t = rt(e.type)
        if not isinstance(t, T.StructLike):
            raise self.err(e, "struct initialiser without a struct type")
        return self.build_struct(t, list(e.fields))

    def build_struct(self, t: T.StructLike, items: list[tuple[str, A.Expression]]) -> str:
        """Expression building a header/struct value from (field, expression) pairs."""
        cls = self.class_for(t)
        codes = self.operands([x for _, x in items])
        args = ", ".join(
            f"({name!r}, {c + ('.copy()' if is_agg(x.type) else '')})"
            for (name, x), c in zip(items, codes, strict=True)
        )
        valid = isinstance(t, T.HeaderType)
        return f"_mk({cls}, ({args}{',' if len(items) == 1 else ''}), {valid})"

    # ---- l-values (spec 6.7, 12.1)

    def place(self, lhs: A.Expression, save: bool) -> Place:
        """The l-value `lhs`; with `save`, run-time indexes are evaluated now into temporaries
        (spec 6.8 step 3), so that later code cannot change which element is written."""

        def out(line: str) -> None:  # where the store happens, not where the place was made
            self.out(line)

        if isinstance(lhs, A.DontCareExpr):
            return Place("0", lambda v: out(f"_ = {v}"))
        if isinstance(lhs, A.SliceExpr):
            inner = self.place(lhs.expr, save)
            hi, lo = _slice_bounds(lhs)
            m = ((1 << (hi - lo + 1)) - 1) << lo
            read = f"(({inner.read} >> {lo}) & {hex(m >> lo)})" if lo else f"({inner.read} & {hex(m)})"
            whole = rt(lhs.expr.type)
            signed = isinstance(whole, T.Bits) and whole.signed

            def write(v: str) -> None:
                bits = f"(({inner.read}) & ~{hex(m)}) | ((({v}) << {lo}) & {hex(m)})"
                inner.store(self.wrap(bits, whole) if signed else bits)

            return Place(read, write)
        if isinstance(lhs, A.PathExpr):
            name = self.expr(lhs)
            if isinstance(lhs.decl, A.Param) and is_agg(lhs.type):
                # a parameter is the caller's object: overwrite it in place, never rebind
                return Place(name, lambda v: out(f"_into({name}, {v})"))
            return Place(name, lambda v: out(f"{name} = {v}"))
        if isinstance(lhs, A.IndexExpr):
            base = self.ref(lhs.expr, save)
            if lhs.index.const_value is not None:
                code = f"{base}.e[{self.const(lhs.index.const_value)}]"
                return Place(code, lambda v: out(f"{code} = {v}"))
            i = self.expr(lhs.index)
            if save:
                i = self.spill(i)
            # out of range: the write has no effect (spec 8.26)
            where = repr(str(lhs.loc))
            return Place(f"{base}.at({i}, {where})", lambda v: out(f"{base}.put({i}, {v}, {where})"))
        if isinstance(lhs, A.MemberExpr):
            if lhs.kind is A.MemberKind.FIELD:
                code = f"{self.ref(lhs.expr, save)}.f_{lhs.member}"
                return Place(code, lambda v: out(f"{code} = {v}"))
            if lhs.kind in (A.MemberKind.STACK_NEXT, A.MemberKind.STACK_LAST):
                code = self.ref(lhs, save)
                return Place(code, lambda v: out(f"_into({code}, {v})"))
            raise self.err(lhs, f"cannot assign to .{lhs.member}")
        raise self.err(lhs, "not an l-value")

    def ref(self, e: A.Expression, save: bool) -> str:
        """A reference to the aggregate l-value `e` (for a field, an element, `.next`)."""
        if isinstance(e, A.IndexExpr) and e.index.const_value is None:
            base = self.ref(e.expr, save)
            i = self.expr(e.index)
            return f"{base}.at({self.spill(i) if save else i}, {str(e.loc)!r})"
        if isinstance(e, A.IndexExpr):
            return f"{self.ref(e.expr, save)}.e[{self.const(e.index.const_value)}]"
        if isinstance(e, A.MemberExpr) and e.kind is A.MemberKind.FIELD:
            return f"{self.ref(e.expr, save)}.f_{e.member}"
        if isinstance(e, A.MemberExpr) and e.kind is A.MemberKind.STACK_NEXT:
            return f"{self.ref(e.expr, save)}.next_for_extract()"
        if isinstance(e, A.MemberExpr) and e.kind is A.MemberKind.STACK_LAST:
            return f"{self.ref(e.expr, save)}.last()"
        return self.expr(e)

    def assign(self, lhs: A.Expression, value: str) -> None:
        """Emit code storing `value` (already a Python expression) into lvalue `lhs`."""
        self.place(lhs, save=False).store(value)

    def assign_expr(self, lhs: A.Expression, rhs: A.Expression) -> None:
        """lhs = rhs with P4 copy semantics for aggregates: the left side is evaluated first
        (spec 12.1), so its run-time indexes are saved when the right side has effects."""
        p = self.place(lhs, save=self.effectful(rhs))
        p.store(self.value_copy(rhs))

    def compound_assign(self, lhs: A.Expression, rhs: A.BinaryExpr) -> None:
        """`lhs op= b`: lhs = lhs op b with lhs evaluated once (spec 12.1)."""
        p = self.place(lhs, save=True)
        old = p.read
        buf, b = self.captured(rhs.right)
        if buf.lines:
            old = self.spill(old)
            self.out.splice(buf)
        p.store(self.binop(rhs, old, b))

    def value_copy(self, x: A.Expression) -> str:
        v = self.expr(x)
        if is_agg(x.type) and not isinstance(x, A.ListExpr | A.StructInitExpr):
            return f"{v}.copy()"
        return v


def _inner_binary(x: A.Expression) -> bool:
    """A binary operator the tree walk of x_BinaryExpr handles itself (not a folded constant)."""
    return isinstance(x, A.BinaryExpr) and x.const_value is None


def _slice_bounds(e: A.SliceExpr) -> tuple[int, int]:
    """hi and lo of a slice (the checker folds both to constants)."""
    return cast(int, e.hi_value), cast(int, e.lo_value)
