"""The checked program as C: types, parser, controls, actions, tables, deparser.

`CGen(program, gen)` takes the program after the front end and the Python code
generator's passes (`gen`, a compiled `codegen.Codegen`: it names the tables,
actions and extern instances as the control plane sees them) and returns one C
translation unit with `source()`. What the C backend does not take yet raises
`CompileError` naming the construct and its location and pointing at
`--engine python`.

The shared state, types and value representation are in cbase.py, the extern
calls in cexterns.py.
"""

from __future__ import annotations

from typing import Any

from softswitch.frontend import ast as A
from softswitch.frontend import types as T

from ..codegen.base import args_of, receiver_of
from ..codegen.values import rt
from .cbase import (  # noqa: F401  (re-exported for cprogram)
    ALGORITHMS,
    LOG_VALUES,
    MAX_KEYS,
    MAX_LOGS,
    MK,
    PARSER_STEPS,
    K,
    Unsupported,
    alg_call,
    cint,
    is_scalar,
    lit,
    mask,
    signed,
    width,
)
from .cexterns import ExternCode


class CGen(ExternCode):
    """One program's C source (see the module docstring)."""

    # ------------------------------------------------------------------ expressions

    def const(self, e: A.Expression) -> str | None:
        v = e.const_value
        if v is None or isinstance(rt(e.type), T.StructLike):
            return None
        t = rt(e.type)
        if isinstance(v, bool):
            return "1ULL" if v else "0ULL"
        if isinstance(v, int):
            return lit(v, width(t) or 64)
        if isinstance(v, str) and isinstance(t, T.EnumType | T.ErrorType) and v in t.members:
            return f"{t.members.index(v)}ULL"
        return None

    def effectful(self, e: A.Node | None) -> bool:
        return bool(self.gen.effectful(e))

    def x(self, e: A.Expression) -> str:
        """C expression of a scalar value (see the module docstring)."""
        c = self.const(e)
        if c is not None:
            return c
        m = getattr(self, "x_" + type(e).__name__, None)
        if m is None:
            raise Unsupported(e, f"the expression {type(e).__name__}")
        return str(m(e))

    def x_PathExpr(self, e: A.PathExpr) -> str:
        d = e.decl
        if isinstance(d, A.ConstantDecl):
            return self.x(d.value)
        name = self.vars.get(id(d))
        if name is None:
            raise Unsupported(e, f"the name {e.name} here")
        return name

    def lval(self, e: A.Expression) -> str:
        """C l-value of a variable, parameter or field (also of aggregates)."""
        if isinstance(e, A.PathExpr):
            name = self.vars.get(id(e.decl))
            if name is None:
                raise Unsupported(e, f"the name {e.name} here")
            return name
        if isinstance(e, A.MemberExpr) and e.kind is MK.FIELD:
            return f"{self.lval(e.expr)}.f_{e.member}"
        if isinstance(e, A.IndexExpr) and isinstance(rt(e.expr.type), T.HeaderStack):
            i = e.index.const_value
            size = rt(e.expr.type).size  # type: ignore[attr-defined]
            if not isinstance(i, int) or isinstance(i, bool):
                raise Unsupported(e, "run-time header stack indexes")
            if not 0 <= i < size:
                raise Unsupported(e, f"the stack index {i} (size {size})")
            return f"{self.lval(e.expr)}.e[{i}]"
        if isinstance(e, A.MemberExpr) and e.kind is MK.STACK_LAST:
            if not self.in_parser:
                raise Unsupported(e, "stack.last outside the parser")
            base, _, _ = self.stack_of(e.expr)
            oob = self.err_code("StackOutOfBounds")
            return (f"(*({{ if (!{base}.n) {{ p->perr = {oob}; goto reject; }} "
                    f"&{base}.e[{base}.n - 1]; }}))")
        if isinstance(e, A.CastExpr) and e.implicit:
            return self.lval(e.expr)
        if isinstance(e, A.CallExpr) and e.kind is K.PACKET_LOOKAHEAD and self.in_parser:
            t = rt(e.type)
            if isinstance(t, T.HeaderType):  # a header read without advancing (spec 13.8.3)
                tmp = self.fresh("_la")
                reads = []
                off = 0
                for f in t.fields:
                    w = width(f.type)
                    reads.append(f"{tmp}.f_{f.name} = {rd(f'p->pos + {off}', w)};")
                    off += w
                return (f"({{ NEED({t.bit_width()}); {self.ctype(t, e)} {tmp}; "
                        f"{' '.join(reads)} {tmp}.valid = 1; {tmp}; }})")
        raise Unsupported(e, f"this l-value ({type(e).__name__})")

    def x_MemberExpr(self, e: A.MemberExpr) -> str:
        if e.kind is MK.FIELD or e.kind is MK.STACK_LAST:
            return self.lval(e)
        if e.kind is MK.STACK_LAST_INDEX:
            base, _, _ = self.stack_of(e.expr)
            return f"(({base}.n - 1) & 0xffffffffULL)"
        if e.kind in (MK.TABLE_HIT, MK.TABLE_MISS, MK.TABLE_ACTION_RUN):
            call = e.expr
            if not isinstance(call, A.CallExpr) or call.kind is not K.TABLE_APPLY:
                raise Unsupported(e, "this table result")
            r = self.table_apply(call)
            if e.kind is MK.TABLE_HIT:
                return f"(u64)(({r}) >> 16)"
            if e.kind is MK.TABLE_MISS:
                return f"(u64)!(({r}) >> 16)"
            return f"(u64)(({r}) & 0xFFFF)"
        raise Unsupported(e, f"the member {e.member}")

    def x_IntLiteral(self, e: A.IntLiteral) -> str:
        return lit(e.value, width(e.type) or 64)

    def x_BoolLiteral(self, e: A.BoolLiteral) -> str:
        return "1ULL" if e.value else "0ULL"

    def x_SliceExpr(self, e: A.SliceExpr) -> str:
        if e.hi_value is None or e.lo_value is None:
            raise Unsupported(e, "slices with run-time bounds")
        w = e.hi_value - e.lo_value + 1
        return f"((({self.x(e.expr)}) >> {e.lo_value}) & {mask(w)})"

    def x_UnaryExpr(self, e: A.UnaryExpr) -> str:
        a = self.x(e.operand)
        w = width(e.type)
        if e.op == "!":
            return f"(u64)!({a})"
        if e.op == "~":
            return f"((~({cint(w)})({a})) & {mask(w)})"
        if e.op == "-":
            return f"((({cint(w)})0 - ({a})) & {mask(w)})"
        if e.op == "+":
            return a
        raise Unsupported(e, f"the operator {e.op}")

    def x_TernaryExpr(self, e: A.TernaryExpr) -> str:
        if isinstance(rt(e.type), T.StructLike):
            raise Unsupported(e, "?: of aggregates")
        return f"(({self.x(e.cond)}) ? ({self.x(e.then)}) : ({self.x(e.otherwise)}))"

    def x_CastExpr(self, e: A.CastExpr) -> str:
        src, dst = rt(e.expr.type), rt(e.type)
        a = self.x(e.expr)
        wd = width(dst)
        if isinstance(dst, T.BoolType):
            return f"(u64)!!({a})"
        if isinstance(src, T.BoolType) or isinstance(src, T.InfInt):
            return f"(({a}) & {mask(wd)})"
        if isinstance(dst, T.Bits) and isinstance(src, T.Bits):
            if src.signed and wd > src.width:
                if wd > 64:  # through a signed 128-bit value, so that the sign fills the top
                    sx = f"sext128({a}, {src.width})" if src.width > 64 else f"(i128)sext({a}, {src.width})"
                    return f"(((u128){sx}) & {mask(wd)})"
                return f"(((u64)sext({a}, {src.width})) & {mask(wd)})"
            return f"(({a}) & {mask(wd)})"
        if isinstance(dst, T.EnumType | T.ErrorType) or isinstance(src, T.EnumType | T.ErrorType):
            if isinstance(dst, T.Bits) or isinstance(src, T.Bits):
                raise Unsupported(e, "casts between enums and bits")
            return a
        raise Unsupported(e, f"the cast from {src} to {dst}")

    def x_BinaryExpr(self, e: A.BinaryExpr) -> str:
        op = e.op
        if op in ("&&", "||"):
            return f"(u64)(({self.x(e.left)}) {op} ({self.x(e.right)}))"
        lt = rt(e.left.type)
        if isinstance(lt, T.StructLike) or isinstance(rt(e.right.type), T.StructLike):
            raise Unsupported(e, "comparisons of headers and structs")
        a, b = self.x(e.left), self.x(e.right)
        if self.effectful(e.right):
            # left to right (spec 8.1): C leaves the order of operands unspecified
            ta, tb = self.fresh("_l"), self.fresh("_r")
            ca, cb = cint(width(e.left.type)), cint(width(e.right.type))
            return f"({{ {ca} {ta} = {a}; {cb} {tb} = {b}; {self.binop(e, ta, tb)}; }})"
        return self.binop(e, a, b)

    def binop(self, e: A.BinaryExpr, a: str, b: str) -> str:
        op = e.op
        w = width(e.type)
        lt, rtp = rt(e.left.type), rt(e.right.type)
        s = signed(e.left.type) or signed(e.right.type)
        wl = width(lt) if not isinstance(lt, T.InfInt) else width(rtp)
        wide = w > 64  # the 128-bit helpers (u128 operands)
        if op in ("==", "!="):
            return f"(u64)(({a}) {op} ({b}))"
        if op in ("<", ">", "<=", ">="):
            if s:
                sx = "sext128" if wl > 64 else "sext"
                return f"(u64)({sx}({a}, {wl}) {op} {sx}({b}, {wl}))"
            return f"(u64)(({a}) {op} ({b}))"
        if op in ("&", "|", "^"):
            return f"(({a}) {op} ({b}))"
        if op in ("+", "-", "*"):
            if wide:
                return f"((((u128)({a})) {op} ({b})) & {mask(w)})"
            return f"((({a}) {op} ({b})) & {mask(w)})"
        if op in ("<<", ">>"):
            amount = f"amt64({b})" if width(rtp) > 64 else b  # 2^64 and more shift all out
            sfx = "128" if wide else ""
            if op == "<<":
                return f"shl_w{sfx}({a}, {amount}, {w})"
            return f"shr_s{sfx}({a}, {amount}, {w})" if signed(e.type) else f"shr_u{sfx}({a}, {amount}, {w})"
        if op in ("/", "%"):
            if s:
                raise Unsupported(e, "signed division")
            sfx = "128" if wide else ""
            return f"div_u{sfx}({a}, {b})" if op == "/" else f"mod_u{sfx}({a}, {b})"
        if op == "++":
            wr = width(rtp)
            if w > 128:
                raise Unsupported(e, "concatenations wider than 128 bits")
            if wide:
                return f"((((u128)({a})) << {wr}) | ({b}))"
            return f"((({a}) << {wr}) | ({b}))" if wr < 64 else b
        if op in ("|+|", "|-|") and wide:
            if signed(e.type):
                raise Unsupported(e, "signed saturating arithmetic wider than 64 bits")
            return f"sat_add_u128({a}, {b}, {w})" if op == "|+|" else f"sat_sub_u128({a}, {b})"
        if op == "|+|":
            if signed(e.type):
                return f"sat_s((__int128)sext({a}, {w}) + sext({b}, {w}), {w})"
            return f"sat_add_u({a}, {b}, {w})"
        if op == "|-|":
            if signed(e.type):
                return f"sat_s((__int128)sext({a}, {w}) - sext({b}, {w}), {w})"
            return f"sat_sub_u({a}, {b})"
        raise Unsupported(e, f"the operator {op}")

    def x_CallExpr(self, c: A.CallExpr) -> str:
        if c.kind is K.HEADER_IS_VALID:
            recv = receiver_of(c)
            union = rt(recv.type)
            if isinstance(union, T.HeaderUnionType):  # valid while one of its members is
                u = self.lval(recv)
                return "(u64)(" + (" || ".join(f"{u}.f_{f.name}.valid" for f in union.fields) or "0") + ")"
            return f"(u64){self.lval(recv)}.valid"
        if c.kind is K.PACKET_LOOKAHEAD:
            if not self.in_parser:
                raise Unsupported(c, "lookahead outside the parser")
            t = rt(c.type)
            w = width(t)
            if isinstance(t, T.StructLike) or not w or w > 128:
                raise Unsupported(c, "lookahead of this type")
            return f"({{ NEED({w}); {rd('p->pos', w)}; }})"
        if c.kind is K.TABLE_APPLY:
            raise Unsupported(c, "this use of apply()")
        if c.kind is K.FUNCTION:
            return self.call_function(c)
        raise Unsupported(c, f"the call {getattr(c.callee, 'member', '') or c.kind} in an expression")

    def function(self, decl: A.FunctionDecl) -> str:
        """The C function of a P4 function (compiled once): out/inout parameters by pointer."""
        name = self.functions.get(id(decl))
        if name is not None:
            return name
        name = self.functions[id(decl)] = f"F_{len(self.functions)}"
        ret_t = rt(decl.type.return_type) if decl.type is not None else T.VOID
        returns = not isinstance(ret_t, T.VoidType)
        ret_c = self.ctype(ret_t, decl) if returns else "void"
        if returns and not is_scalar(ret_c):
            raise Unsupported(decl, "functions returning aggregates")
        params = []
        for i, prm in enumerate(decl.params):
            ct = self.ctype(prm.type, prm)
            if prm.direction in ("out", "inout"):
                params.append(f"{ct} *io_{i}")
                self.vars[id(prm)] = f"(*io_{i})"
            else:
                params.append(f"{ct} a_{i}")
                self.vars[id(prm)] = f"a_{i}"
        sig = f"static {ret_c} {name}(pkt_t *p{''.join(', ' + x for x in params)})"
        self.protos.append(sig + ";")
        saved = (self.out, self.fn_returns)
        self.out, self.fn_returns = [], returns
        self.e(sig + " { (void)p;")
        self.block(decl.body.stmts)
        if returns:
            self.e("return 0;")
        self.e("}")
        self.fns.append("\n".join(self.out))
        self.out, self.fn_returns = saved
        return name

    def call_function(self, c: A.CallExpr) -> str:
        """A call as an expression: arguments copied in left to right, out values copied back
        after the call, in order (spec 6.8)."""
        decl = c.target
        fn = self.function(decl)
        parts, args, backs = [], [], []
        for prm, a in zip(decl.params, args_of(c), strict=False):
            ct = self.ctype(prm.type, prm)
            t = self.fresh("_fa")
            if prm.direction == "out":
                parts.append(f"{ct} {t}; memset(&{t}, 0, sizeof {t});")
            elif a is None:
                raise Unsupported(c, "this function argument")
            else:
                parts.append(f"{ct} {t} = {self.x(a) if is_scalar(ct) else self.lval(a)};")
            if prm.direction in ("out", "inout"):
                args.append(f"&{t}")
                backs.append((self.lval(a), t))
            else:
                args.append(t)
        call = f"{fn}(p{''.join(', ' + x for x in args)})"
        ret_t = rt(decl.type.return_type) if decl.type is not None else T.VOID
        r = self.fresh("_fr")
        if isinstance(ret_t, T.VoidType):
            parts.append(f"{call}; u64 {r} = 0;")
        else:
            parts.append(f"{self.ctype(ret_t, c)} {r} = {call};")
        parts.extend(f"{lv} = {t};" for lv, t in backs)
        return f"({{ {' '.join(parts)} {r}; }})"

    # ------------------------------------------------------------------ statements

    def block(self, stmts: list[A.Statement]) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, s: A.Statement) -> None:
        m = getattr(self, "s_" + type(s).__name__, None)
        if m is None:
            raise Unsupported(s, f"the statement {type(s).__name__}")
        m(s)

    def s_EmptyStmt(self, s: A.EmptyStmt) -> None:
        pass

    def s_BlockStmt(self, s: A.BlockStmt) -> None:
        self.e("{")
        self.block(s.stmts)
        self.e("}")

    def s_IfStmt(self, s: A.IfStmt) -> None:
        chain: list[A.IfStmt] = [s]
        rest = s.otherwise
        while isinstance(rest, A.IfStmt):
            chain.append(rest)
            rest = rest.otherwise
        for i, st in enumerate(chain):
            cond = self.x(st.cond)
            if self.may_exit and self.applies_table(st.cond):
                # an action the condition runs may exit: stop before either branch
                t = self.fresh("_c")
                self.e(("" if i == 0 else "else { ") + f"u64 {t} = {cond}; {self.exit_check()}")
                self.e(f"if ({t}) {{")
            else:
                self.e(("if" if i == 0 else "else if") + f" ({cond}) {{")
            self.block([st.then])
            self.e("}")
        if rest is not None:
            self.e("else {")
            self.block([rest])
            self.e("}")
        closes = sum(1 for i, st in enumerate(chain) if i and self.may_exit and self.applies_table(st.cond))
        for _ in range(closes):
            self.e("}")

    def applies_table(self, e: A.Node | None) -> bool:
        found = False

        def walk(n: Any) -> None:
            nonlocal found
            if found or n is None:
                return
            if isinstance(n, A.CallExpr) and n.kind in (K.TABLE_APPLY, K.ACTION):
                found = True
                return
            if isinstance(n, A.Node):
                for v in vars(n).values():
                    if isinstance(v, A.Expression):
                        walk(v)
                    elif isinstance(v, list):
                        for it in v:
                            if isinstance(it, A.Expression | A.Argument):
                                walk(it.value if isinstance(it, A.Argument) else it)
        walk(e)
        return found

    def exit_check(self) -> str:
        return "if (p->exited) return;" if self.may_exit else ""

    # ---- loops (P4_16 1.2.4): labels, not C's break/continue, which a C switch would catch

    def loop_head(self) -> str:
        """One iteration charged to the pass's loop budget (runtime.PacketContext.loops, read
        when the program is compiled); past it the packet is dropped and counted, as _Drop."""
        from ..runtime import PacketContext

        ret = "return 0;" if self.fn_returns else "return;"
        return f"if (++p->loops > {int(PacketContext.loops)}ULL) {{ p->abort = 1; p->exited = 1; {ret} }}"

    def loop_body(self, body: A.Statement | None) -> int:
        n = self.counter = self.counter + 1
        self.loop_labels.append(n)
        try:
            self.e("{")
            self.block([body] if body is not None else [])
            self.e(f"}} _cont{n}: ;")
        finally:
            self.loop_labels.pop()
        return n

    def s_ForStmt(self, s: A.ForStmt) -> None:
        self.e("{")
        for init in s.init:
            self.stmt(init)
        self.e("for (;;) {")
        self.e(self.loop_head())
        if s.cond is not None:
            self.e(f"if (!({self.x(s.cond)})) break;")
        n = self.loop_body(s.body)
        for upd in s.updates:  # also after a continue (codegen runs them before continuing)
            self.stmt(upd)
        self.e(f"}} _brk{n}: ; }}")

    def s_ForInStmt(self, s: A.ForInStmt) -> None:
        """for (v in lo .. hi) (inclusive, bounds evaluated once), over a list of scalars or
        a header stack (its elements copied before the first iteration)."""
        ct = self.ctype(s.var.type, s.var)
        var = self.fresh(f"v_{s.var.name}_")
        self.vars[id(s.var)] = var
        i, n_items = self.fresh("_i"), self.fresh("_n")
        self.e(f"{{ {ct} {var}; memset(&{var}, 0, sizeof {var});")
        if s.lo is not None and s.hi is not None:
            if not is_scalar(ct):
                raise Unsupported(s, "this for loop")
            w = width(s.var.type)
            lo, hi, done = self.fresh("_lo"), self.fresh("_hi"), self.fresh("_d")
            a, b = self.x(s.lo), self.x(s.hi)
            self.e(f"{ct} {lo} = {a}; {ct} {hi} = {b};")  # once, left to right
            empty = f"sext{'128' if w > 64 else ''}({lo}, {w}) > sext{'128' if w > 64 else ''}({hi}, {w})" \
                if signed(s.var.type) else f"{lo} > {hi}"
            # counted by equality with hi, so that hi = the type's maximum ends the loop
            self.e(f"int {done} = {empty};")
            self.e(f"for ({ct} {i} = {lo}; !{done}; {done} = {i} == {hi}, {i} = ({i} + 1) & {mask(w)}) {{")
            self.e(f"{var} = {i};")
        elif isinstance(s.collection, A.ListExpr):
            if not is_scalar(ct):
                raise Unsupported(s, "for loops over lists of aggregates")
            items = [self.x(it) for it in s.collection.items]
            arr = self.fresh("_it")
            self.e(f"{ct} {arr}[] = {{{', '.join(items) or '0'}}}; u64 {n_items} = {len(items)};")
            self.e(f"for (u64 {i} = 0; {i} < {n_items}; {i}++) {{")
            self.e(f"{var} = {arr}[{i}];")
        elif s.collection is not None and isinstance(rt(s.collection.type), T.HeaderStack):
            base, st, ect = self.stack_of(s.collection)
            copy = self.fresh("_st")
            self.e(f"{self.ctype(st, s)} {copy} = {base};")
            self.e(f"for (u64 {i} = 0; {i} < {st.size}; {i}++) {{")
            self.e(f"{var} = {copy}.e[{i}];")
        else:
            raise Unsupported(s, "this for loop")
        self.e(self.loop_head())
        n = self.loop_body(s.body)
        self.e(f"}} _brk{n}: ; }}")

    def s_BreakStmt(self, s: A.BreakStmt) -> None:
        if not self.loop_labels:
            raise Unsupported(s, "break outside a loop")
        self.e(f"goto _brk{self.loop_labels[-1]};")

    def s_ContinueStmt(self, s: A.ContinueStmt) -> None:
        if not self.loop_labels:
            raise Unsupported(s, "continue outside a loop")
        self.e(f"goto _cont{self.loop_labels[-1]};")

    def s_ExitStmt(self, s: A.ExitStmt) -> None:
        self.e("p->exited = 1; return" + (" 0;" if self.fn_returns else ";"))

    def s_ReturnStmt(self, s: A.ReturnStmt) -> None:
        if s.value is not None:
            if not self.fn_returns:
                raise Unsupported(s, "this return")
            self.e(f"return {self.x(s.value)};")
            return
        self.e("return" + (" 0;" if self.fn_returns else ";"))

    def s_DeclStmt(self, s: A.DeclStmt) -> None:
        d = s.decl
        if isinstance(d, A.ConstantDecl):
            return  # uses read the folded value
        if not isinstance(d, A.VariableDecl):
            raise Unsupported(s, f"the declaration {type(d).__name__}")
        name = self.fresh(f"v_{d.name}_")
        ct = self.ctype(d.type, d)
        self.vars[id(d)] = name
        if is_scalar(ct):
            init = self.x(d.init) if d.init is not None else "0"
            self.e(f"{ct} {name} = {init};")
        else:
            self.e(f"{ct} {name}; memset(&{name}, 0, sizeof {name});")
            if d.init is not None:
                self.assign_agg(name, d.init, d.type)

    def assign_agg(self, dst: str, src: A.Expression, t: T.P4Type | None = None) -> None:
        """dst = src for headers and structs; list and struct expressions go through a
        temporary, so that a right side reading dst sees its old value (spec 8.1)."""
        t = rt(t if t is not None else src.type)
        if isinstance(src, A.StructInitExpr | A.ListExpr):
            if not isinstance(t, T.HeaderType | T.StructType):
                raise Unsupported(src, f"initialisers of {t}")
            ct = self.ctype(t, src)
            tmp = self.fresh("_init")
            self.e(f"{{ {ct} {tmp}; memset(&{tmp}, 0, sizeof {tmp});")
            self.fill(tmp, src, t)
            self.e(f"{dst} = {tmp}; }}")
            return
        if src.const_value is not None:
            raise Unsupported(src, "constant aggregates")
        self.e(f"{dst} = {self.lval(src)};")

    def fill(self, dst: str, src: A.Expression, t: T.StructLike) -> None:
        if isinstance(src, A.StructInitExpr):
            pairs = [(t.field_named(n), e) for n, e in src.fields]
        else:
            assert isinstance(src, A.ListExpr)
            pairs = list(zip(t.fields, src.items, strict=False))
        for f, item in pairs:
            if f is None:
                raise Unsupported(src, "this initialiser")
            ft = rt(f.type)
            if isinstance(ft, T.StructLike):
                if isinstance(item, A.StructInitExpr | A.ListExpr):
                    if not isinstance(ft, T.HeaderType | T.StructType):
                        raise Unsupported(item, f"initialisers of {ft}")
                    self.fill(f"{dst}.f_{f.name}", item, ft)
                else:
                    self.e(f"{dst}.f_{f.name} = {self.lval(item)};")
            else:
                self.e(f"{dst}.f_{f.name} = {self.x(item)};")
        if isinstance(t, T.HeaderType):
            self.e(f"{dst}.valid = 1;")  # a header built from a list is valid (spec 8.12)

    def s_AssignStmt(self, s: A.AssignStmt) -> None:
        t = rt(s.lhs.type)
        if isinstance(t, T.StructLike):
            self.assign_agg(self.lval(s.lhs), s.rhs, t)
            return
        if isinstance(s.lhs, A.SliceExpr):
            lhs = s.lhs
            if lhs.hi_value is None or lhs.lo_value is None:
                raise Unsupported(lhs, "slices with run-time bounds")
            m = mask(lhs.hi_value - lhs.lo_value + 1)
            base = self.lval(lhs.expr)
            v = self.fresh("_sl")
            ct = cint(width(lhs.expr.type))  # the shifts in the base's width
            self.e(f"{{ {ct} {v} = ({self.x(s.rhs)}) & {m}; "
                   f"{base} = ({base} & ~((({ct}){m}) << {lhs.lo_value})) | ({v} << {lhs.lo_value}); }}")
            return
        self.e(f"{self.lval(s.lhs)} = {self.x(s.rhs)};")

    def s_SwitchStmt(self, s: A.SwitchStmt) -> None:
        ex = s.expr
        if isinstance(ex, A.MemberExpr) and ex.kind is MK.TABLE_ACTION_RUN:
            call = ex.expr
            assert isinstance(call, A.CallExpr)
            tid = self.table_id(call)
            names = self.table_actions[tid]
            r = self.fresh("_ar")
            self.e(f"{{ uint32_t {r} = {self.table_apply(call)} & 0xFFFF; {self.exit_check()}")
            self.e(f"switch ({r}) {{")
            for case in s.cases:
                if isinstance(case.label, A.DefaultExpr):
                    self.e("default:")
                else:
                    info = self.action_info(case.action, case)
                    if info.name not in names:
                        raise Unsupported(case, "this switch label")
                    self.e(f"case {names.index(info.name)}:")
                if case.body is not None:
                    self.e("{")
                    self.block(case.body.stmts)
                    self.e("} break;")
            self.e("} }")
            return
        r = self.fresh("_sw")
        self.e(f"{{ {cint(width(ex.type))} {r} = {self.x(ex)};")
        self.e(f"switch ({r}) {{")
        for case in s.cases:
            if isinstance(case.label, A.DefaultExpr):
                self.e("default:")
            else:
                self.e(f"case {self.x(case.label)}:")
            if case.body is not None:
                self.e("{")
                self.block(case.body.stmts)
                self.e("} break;")
        self.e("} }")

    def s_CallStmt(self, s: A.CallStmt) -> None:
        c = s.call
        k = c.kind
        if k is K.TABLE_APPLY:
            self.e(f"(void){self.table_apply(c)}; {self.exit_check()}")
        elif k is K.ACTION:
            self.call_action(c)
        elif k is K.FUNCTION:
            self.e(f"(void){self.call_function(c)};")
        elif k in (K.HEADER_SET_VALID, K.HEADER_SET_INVALID):
            recv = receiver_of(c)
            ht = rt(recv.type)
            if not isinstance(ht, T.HeaderType):
                raise Unsupported(c, "setValid on header unions")
            h = self.lval(recv)
            size = ht.bit_width() // 8
            if k is K.HEADER_SET_VALID:
                self.invalidate_siblings(recv)
                self.e(f"if (!{h}.valid) {{ memset(&{h}, 0, sizeof {h}); {h}.valid = 1; p->plen += {size}; }}")
            else:
                self.e(f"if ({h}.valid) {{ {h}.valid = 0; p->plen -= {size}; }}")
        elif k in (K.STACK_PUSH_FRONT, K.STACK_POP_FRONT):
            base, t, ect = self.stack_of(receiver_of(c))
            n, size = self.fresh("_k"), t.size
            self.e(f"{{ u64 {n} = {self.x(args_of(c)[0])}; if ({n} > {size}) {n} = {size};")
            if k is K.STACK_PUSH_FRONT:
                self.e(f"if ({n}) {{ memmove(&{base}.e[{n}], &{base}.e[0], sizeof({ect}) * ({size} - {n})); "
                       f"memset(&{base}.e[0], 0, sizeof({ect}) * {n}); "
                       f"{base}.n = {base}.n + {n} > {size} ? {size} : {base}.n + {n}; }} }}")
            else:
                self.e(f"if ({n}) {{ memmove(&{base}.e[0], &{base}.e[{n}], sizeof({ect}) * ({size} - {n})); "
                       f"memset(&{base}.e[{size} - {n}], 0, sizeof({ect}) * {n}); "
                       f"{base}.n = {base}.n > {n} ? {base}.n - {n} : 0; }} }}")
        elif k is K.EXTERN_FUNCTION:
            self.extern_function(c)
        elif k is K.EXTERN_METHOD:
            self.extern_method(c)
        elif k is K.PACKET_EXTRACT:
            self.extract(c)
        elif k is K.PACKET_ADVANCE:
            n = self.fresh("_adv")
            self.e(f"{{ u64 {n} = {self.x(args_of(c)[0])}; NEED({n}); p->pos += (uint32_t){n}; }}")
        elif k is K.PACKET_EMIT:
            self.emit(c)
        elif k in (K.CONTROL_APPLY, K.PARSER_APPLY):
            self.call_block(c)
        else:
            raise Unsupported(c, f"the call {c.kind.value if c.kind else '?'}")

    # ------------------------------------------------------------------ calls

    def action_info(self, decl: Any, node: Any) -> Any:
        """The action as codegen compiled it for the block instance being compiled."""
        key = (id(decl), self.gen.prefix if decl.owner is not None else "")
        info = self.gen.action_by_decl.get(key)
        if info is None:
            raise Unsupported(node, "this action here")
        return info

    def call_action(self, c: A.CallExpr) -> None:
        decl = c.target
        info = self.action_info(decl, c)
        fn = self.action_fn[info.name]
        self.e("{")
        data = []
        for prm, a in zip(decl.params, args_of(c), strict=False):
            if not prm.direction:
                t = self.fresh("_a")
                w = width(prm.type)
                self.e(f"{cint(w)} {t} = {self.x(a) if a is not None else '0'};")
                if w > 64:  # action data of 65..128 bits: two words, high first
                    data += [f"(u64)({t} >> 64)", f"(u64){t}"]
                else:
                    data.append(t)
        if data:
            self.e(f"u64 _args[] = {{{', '.join(data)}}};")
        self.call_with_dirs(c, fn, "_args" if data else "NULL")
        self.e(f"{self.exit_check()} }}")

    def call_with_dirs(self, c: A.CallExpr, fn: str, data: str) -> None:
        """Call action `fn` with its directional arguments copied in and out (spec 6.8):
        l-values evaluated left to right, copied into temporaries, copied back in order."""
        decl = c.target
        temps, backs = [], []
        for prm, a in zip(decl.params, args_of(c), strict=False):
            if not prm.direction:
                continue
            ct = self.ctype(prm.type, prm)
            t = self.fresh("_io")
            if prm.direction in ("in", "inout"):
                src = self.x(a) if is_scalar(ct) else self.lval(a)
                self.e(f"{ct} {t} = {src};")
            else:
                self.e(f"{ct} {t}; memset(&{t}, 0, sizeof {t});")
                if isinstance(rt(prm.type), T.HeaderType):
                    self.e(f"{t}.valid = 0;")
            temps.append(f"&{t}")
            if prm.direction in ("out", "inout"):
                backs.append((self.lval(a), t))
        self.e(f"{fn}(p, {data}{''.join(', ' + t for t in temps)});")
        for lv, t in backs:
            self.e(f"{lv} = {t};")

    def table_id(self, c: A.CallExpr) -> int:
        tid = self.table_ids.get((id(c.target), self.gen.prefix))
        if tid is None:
            raise Unsupported(c, "this table here")
        return tid

    def call_block(self, c: A.CallExpr) -> None:
        raise Unsupported(c, "sub-control and sub-parser instances")  # cprogram.ProgramC's

    def table_apply(self, c: A.CallExpr) -> str:
        return f"TA_{self.table_id(c)}(p)"

    # ------------------------------------------------------------------ parser and deparser

    def extract(self, c: A.CallExpr) -> None:
        args = args_of(c)
        target = args[0]
        t = rt(target.type)
        if not isinstance(t, T.HeaderType):
            raise Unsupported(c, "extract into this type")
        nxt = None
        if isinstance(target, A.MemberExpr) and target.kind is MK.STACK_NEXT:
            nxt, st, _ = self.stack_of(target.expr)
            self.e(f"if ({nxt}.n >= {st.size}) {{ p->perr = {self.err_code('StackOutOfBounds')}; goto reject; }}")
            h = f"{nxt}.e[{nxt}.n]"
        else:
            h = self.lval(target)
        if any(isinstance(rt(f.type), T.Varbit) for f in t.fields):
            if len(args) < 2 or args[1] is None:
                raise Unsupported(c, "extract of a varbit header without its length")
            self.extract_varbit(h, t, args[1])
        else:
            self.extract_fixed(h, t)
        self.invalidate_siblings(target)
        if nxt is not None:
            self.e(f"{nxt}.n++;")

    def invalidate_siblings(self, member: A.Expression) -> None:
        """A union member made valid (setValid, extract) invalidates the others (spec 8.19);
        the packet length is left as it is, as codegen's."""
        if isinstance(member, A.MemberExpr) and member.kind is MK.FIELD:
            union = rt(member.expr.type)
            if isinstance(union, T.HeaderUnionType):
                u = self.lval(member.expr)
                for f in union.fields:
                    if f.name != member.member:
                        self.e(f"{u}.f_{f.name}.valid = 0;")

    def extract_fixed(self, h: str, t: T.HeaderType) -> None:
        total = t.bit_width()
        self.e(f"NEED({total});")
        off = 0
        for f in t.fields:
            w = width(f.type)
            self.e(f"{h}.f_{f.name} = {rd(f'p->pos + {off}', w)};")
            off += w
        self.e(f"p->pos += {total}; {h}.valid = 1;")

    def extract_varbit(self, h: str, t: T.HeaderType, length: A.Expression) -> None:
        """extract(h, len) (spec 13.8.2) with BMv2's checks in its order, as codegen's: a
        length not a multiple of 8, then past the packet's end, then over the maximum."""
        n = self.fresh("_vl")
        fixed = sum(width(f.type) for f in t.fields if not isinstance(rt(f.type), T.Varbit))
        vmax = sum(rt(f.type).max_width for f in t.fields  # type: ignore[attr-defined]
                   if isinstance(rt(f.type), T.Varbit))
        self.e(f"{{ {cint(width(length.type))} {n} = {self.x(length)};")
        self.e(f"if ({n} % 8) {{ p->perr = {self.err_code('ParserInvalidArgument')}; goto reject; }}")
        self.e(f"if ((u128)p->pos + {fixed} + {n} > (u128)p->len * 8) goto too_short;")
        self.e(f"if ({n} > {vmax}) {{ p->perr = {self.err_code('HeaderTooShort')}; goto reject; }}")
        for f in t.fields:
            ft = rt(f.type)
            if isinstance(ft, T.Varbit):
                v = f"{h}.f_{f.name}"
                self.e(f"memset(&{v}, 0, sizeof {v}); {v}.w = (u64){n};")
                self.e(f"for (uint32_t _i = 0; _i < (uint32_t){n} / 8; _i++) "
                       f"{v}.b[_i] = (uint8_t)rd_bits(p->data, p->len, p->pos + 8 * _i, 8);")
                self.e(f"p->pos += (uint32_t){n};")
            else:
                w = width(ft)
                self.e(f"{h}.f_{f.name} = {rd('p->pos', w)}; p->pos += {w};")
        self.e(f"{h}.valid = 1; }}")

    def emit(self, c: A.CallExpr) -> None:
        arg = args_of(c)[0]
        self.emit_value(self.lval(arg), rt(arg.type), c)

    def emit_value(self, base: str, t: T.P4Type, node: Any) -> None:
        if isinstance(t, T.HeaderType):
            self.emit_sizes.append(t.bit_width() + sum(rt(f.type).max_width for f in t.fields  # type: ignore[attr-defined]
                                                       if isinstance(rt(f.type), T.Varbit)))
            self.e(f"if ({base}.valid) {{")
            for f in t.fields:
                if isinstance(rt(f.type), T.Varbit):  # its current width, whole bytes
                    self.e(f"for (uint32_t _i = 0; _i < {base}.f_{f.name}.w / 8; _i++) "
                           f"wr_bits(&p->out, {base}.f_{f.name}.b[_i], 8);")
                    continue
                w = width(f.type)
                self.e(f"wr_bits{'128' if w > 64 else ''}(&p->out, {base}.f_{f.name}, {w});")
            self.e("}")
        elif isinstance(t, T.StructType | T.HeaderUnionType):
            for f in t.fields:
                self.emit_value(f"{base}.f_{f.name}", rt(f.type), node)
        elif isinstance(t, T.HeaderStack):
            for i in range(t.size):
                self.emit_value(f"{base}.e[{i}]", rt(t.element), node)
        else:
            raise Unsupported(node, f"emit of {t}")


def rd(pos: str, w: int) -> str:
    """C reading w (<= 128) packet bits at bit offset pos (bounds checked by the caller)."""
    return f"rd_bits{'128' if w > 64 else ''}(p->data, p->len, {pos}, {w})"
