"""The checked program as C: types, parser, controls, actions, tables, deparser.

`CGen(program, gen)` takes the program after the front end and the Python code
generator's passes (`gen`, a compiled `codegen.Codegen`: it names the tables,
actions and extern instances as the control plane sees them) and returns one C
translation unit with `source()`. What the C backend does not take yet raises
`CompileError` naming the construct and its location and pointing at
`--engine python`.

Value representation: every scalar is a `u64` holding the value reduced to its
width (`int<W>` as W-bit two's complement, `bool` as 0/1, `error` and plain
enums as their member number, as BMv2 encodes them); fields wider than 64 bits
are refused. Headers and structs are C structs (`valid` for headers).
"""

from __future__ import annotations

from typing import Any

from softswitch.frontend import ast as A
from softswitch.frontend import types as T
from softswitch.frontend.program import Program

from ..codegen import Codegen
from ..codegen.base import args_of, receiver_of
from ..codegen.values import rt
from ..errors import CompileError

K = A.CallKind
MK = A.MemberKind
MAX_KEYS = 16  # key fields per table (tbl_lookup's buffer)
PARSER_STEPS = 10000  # state transitions per packet, as the Python engine
ALGORITHMS = ("crc16", "crc32", "crcCCITT", "csum16", "xor16", "identity")
LOG_VALUES = 8  # values one log_msg can carry
MAX_LOGS = 64  # log_msg records one injected packet can leave (more are not logged)


class Unsupported(CompileError):
    """A construct the C backend does not take yet."""

    def __init__(self, node: Any, what: str) -> None:
        super().__init__(getattr(node, "loc", "?"),
                         f"the native engine does not support {what} yet; --engine python runs it")


def width(t: T.P4Type) -> int:
    """Bits of a scalar's representation (error and plain enums: 32, their member number)."""
    t = rt(t)
    if isinstance(t, T.Bits):
        return t.width
    if isinstance(t, T.BoolType):
        return 1
    if isinstance(t, T.EnumType | T.ErrorType):
        return 32
    if isinstance(t, T.InfInt):
        return 64
    return 0


def signed(t: T.P4Type) -> bool:
    t = rt(t)
    return isinstance(t, T.Bits) and t.signed


def mask(w: int) -> str:
    return "~0ULL" if w >= 64 else hex((1 << w) - 1) + "ULL"


def lit(v: int, w: int) -> str:
    return hex(v & ((1 << w) - 1) if w < 64 else v & ((1 << 64) - 1)) + "ULL"


class CGen:
    """One program's C source (see the module docstring)."""

    def __init__(self, program: Program, gen: Codegen) -> None:
        self.program = program
        self.gen = gen
        self.types: dict[int, str] = {}
        self.type_src: list[str] = []
        self.vars: dict[int, str] = {}  # id(decl) -> C l-value
        self.fns: list[str] = []  # function bodies
        self.protos: list[str] = []
        self.out: list[str] = []
        self.counter = 0
        self.pkt_fields: list[str] = []  # control-level variables kept in the packet
        self.table_ids: dict[int, int] = {}  # id(TableDecl) -> index
        self.table_infos: list[Any] = []
        self.table_actions: list[list[str]] = []  # per table: action names in the runtime's order
        self.action_fn: dict[str, str] = {}  # action fq name -> C function
        self.action_params: dict[str, list[A.Param]] = {}
        self.registers: list[tuple[str, int, int]] = []  # (name, size, width)
        self.reg_ids: dict[int, int] = {}
        self.counters: list[tuple[str, int]] = []
        self.ctr_ids: dict[int, int] = {}
        self.meters: list[tuple[str, int, str]] = []  # (name, size, unit)
        self.direct_meter_of: dict[int, bool] = {}
        self.met_ids: dict[int, int] = {}
        self.in_action: A.ActionDecl | None = None
        self.in_parser = False
        self.hdr_t: T.P4Type | None = None
        self.may_exit = False
        self.emit_sizes: list[int] = []
        self.err_members: list[str] = list(program.error_type.members)
        self.uses_passes = False  # clone, resubmit or recirculate: the job pipeline (cpasses.py)
        self.digests: list[tuple[str, list[tuple[str, int]]]] = []
        self.functions: dict[int, str] = {}  # id(FunctionDecl) -> C function
        self.log_texts: list[str] = []  # log_msg messages, by number
        self.fn_returns = False  # compiling a function that returns a value
        self.digest_width = 1

    # ------------------------------------------------------------------ helpers

    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"{base}{self.counter}"

    def e(self, line: str) -> None:
        self.out.append(line)

    def err_code(self, name: str) -> int:
        return self.err_members.index(name) if name in self.err_members else 0

    # ------------------------------------------------------------------ types

    def ctype(self, t: T.P4Type, node: Any) -> str:
        t0 = T.strip_newtype(t)
        if isinstance(t0, T.HeaderStack):
            return self.stack_type(t0, node)
        if isinstance(t0, T.HeaderUnionType):
            raise Unsupported(node, "header unions")
        if isinstance(t0, T.Varbit):
            raise Unsupported(node, "varbit fields")
        if isinstance(t0, T.StructLike):
            return self.struct(t0, node)
        w = width(t0)
        if not w:
            raise Unsupported(node, f"values of type {t0}")
        if w > 64:
            raise Unsupported(node, f"values wider than 64 bits ({t0})")
        return "u64"

    def struct(self, t: T.StructLike, node: Any) -> str:
        name = self.types.get(id(t))
        if name is not None:
            return name
        fields = [(f.name, self.ctype(f.type, f.decl or node)) for f in t.fields]
        name = f"S{len(self.types)}_{t.name}"[:60]
        self.types[id(t)] = name
        body = "".join(f"    {ct} f_{fn};\n" for fn, ct in fields)
        if isinstance(t, T.HeaderType):
            body += "    uint8_t valid;\n"
        if not body:
            body = "    uint8_t empty;\n"
        self.type_src.append(f"typedef struct {{\n{body}}} {name};\n")
        return name

    def stack_type(self, t: T.HeaderStack, node: Any) -> str:
        """A header stack: its elements and nextIndex `n` (spec 8.18)."""
        name = self.types.get(id(t))
        if name is not None:
            return name
        elem = rt(t.element)
        if not isinstance(elem, T.HeaderType):
            raise Unsupported(node, "stacks of header unions")
        ect = self.ctype(elem, node)
        name = f"K{len(self.types)}_{ect}"[:60]
        self.types[id(t)] = name
        self.type_src.append(f"typedef struct {{\n    {ect} e[{t.size}];\n    u64 n;\n}} {name};\n")
        return name

    def stack_of(self, e: A.Expression) -> tuple[str, T.HeaderStack, str]:
        """(l-value, type, element C type) of a header stack expression."""
        t = rt(e.type)
        assert isinstance(t, T.HeaderStack)
        return self.lval(e), t, self.ctype(t.element, e)

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
            if isinstance(rt(e.expr.type), T.HeaderUnionType):
                raise Unsupported(e, "header unions")
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
                    reads.append(f"{tmp}.f_{f.name} = rd_bits(p->data, p->len, p->pos + {off}, {w});")
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
            return f"((~({a})) & {mask(w)})"
        if e.op == "-":
            return f"((0ULL - ({a})) & {mask(w)})"
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
            return f"({{ u64 {ta} = {a}; u64 {tb} = {b}; {self.binop(e, ta, tb)}; }})"
        return self.binop(e, a, b)

    def binop(self, e: A.BinaryExpr, a: str, b: str) -> str:
        op = e.op
        w = width(e.type)
        lt, rtp = rt(e.left.type), rt(e.right.type)
        s = signed(e.left.type) or signed(e.right.type)
        wl = width(lt) if not isinstance(lt, T.InfInt) else width(rtp)
        if op in ("==", "!="):
            return f"(u64)(({a}) {op} ({b}))"
        if op in ("<", ">", "<=", ">="):
            if s:
                return f"(u64)(sext({a}, {wl}) {op} sext({b}, {wl}))"
            return f"(u64)(({a}) {op} ({b}))"
        if op in ("&", "|", "^"):
            return f"(({a}) {op} ({b}))"
        if op in ("+", "-", "*"):
            return f"((({a}) {op} ({b})) & {mask(w)})"
        if op == "<<":
            return f"shl_w({a}, {b}, {w})"
        if op == ">>":
            return f"shr_s({a}, {b}, {w})" if signed(e.type) else f"shr_u({a}, {b}, {w})"
        if op in ("/", "%"):
            if s:
                raise Unsupported(e, "signed division")
            return f"div_u({a}, {b})" if op == "/" else f"mod_u({a}, {b})"
        if op == "++":
            wr = width(rtp)
            if w > 64:
                raise Unsupported(e, "concatenations wider than 64 bits")
            return f"((({a}) << {wr}) | ({b}))" if wr < 64 else b
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
            if isinstance(rt(recv.type), T.HeaderUnionType):
                raise Unsupported(c, "header unions")
            return f"(u64){self.lval(recv)}.valid"
        if c.kind is K.PACKET_LOOKAHEAD:
            if not self.in_parser:
                raise Unsupported(c, "lookahead outside the parser")
            t = rt(c.type)
            w = width(t)
            if isinstance(t, T.StructLike) or not w or w > 64:
                raise Unsupported(c, "lookahead of this type")
            return f"({{ NEED({w}); rd_bits(p->data, p->len, p->pos, {w}); }})"
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
        if returns and self.ctype(ret_t, decl) != "u64":
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
        sig = f"static {'u64' if returns else 'void'} {name}(pkt_t *p{''.join(', ' + x for x in params)})"
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
                parts.append(f"{ct} {t} = {self.x(a) if ct == 'u64' else self.lval(a)};")
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
            parts.append(f"u64 {r} = {call};")
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
        if ct == "u64":
            init = self.x(d.init) if d.init is not None else "0"
            self.e(f"u64 {name} = {init};")
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
            self.e(f"{{ u64 {v} = ({self.x(s.rhs)}) & {m}; "
                   f"{base} = ({base} & ~({m} << {lhs.lo_value})) | ({v} << {lhs.lo_value}); }}")
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
        self.e(f"{{ u64 {r} = {self.x(ex)};")
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
        else:
            raise Unsupported(c, f"the call {c.kind.value if c.kind else '?'}")

    # ------------------------------------------------------------------ calls

    def action_info(self, decl: Any, node: Any) -> Any:
        hits = [v for (i, _p), v in self.gen.action_by_decl.items() if i == id(decl)]
        if len(hits) != 1:
            raise Unsupported(node, "an action compiled for several control instances")
        return hits[0]

    def call_action(self, c: A.CallExpr) -> None:
        decl = c.target
        info = self.action_info(decl, c)
        fn = self.action_fn[info.name]
        self.e("{")
        data = []
        for prm, a in zip(decl.params, args_of(c), strict=False):
            if not prm.direction:
                t = self.fresh("_a")
                self.e(f"u64 {t} = {self.x(a) if a is not None else '0'};")
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
                src = self.x(a) if ct == "u64" else self.lval(a)
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
        tid = self.table_ids.get(id(c.target))
        if tid is None:
            raise Unsupported(c, "a table of a sub-control")
        return tid

    def table_apply(self, c: A.CallExpr) -> str:
        return f"TA_{self.table_id(c)}(p)"

    def extern_function(self, c: A.CallExpr) -> None:
        name = c.target.name
        b = args_of(c)
        if name == "mark_to_drop":
            sm = self.lval(b[0]) if b and b[0] is not None else "p->sm"
            self.e(f"{sm}.f_egress_spec = 511; {sm}.f_mcast_grp = 0;")
        elif name == "static_assert":
            pass  # the front end's
        elif name == "log_msg":
            self.log_msg(c)
        elif name in ("assert", "assume"):
            # the packet is dropped and counted, as the Python engine's _Drop
            self.e(f"if (!({self.x(b[0])})) {{ p->abort = 1; p->exited = 1; return; }}")
        elif name in ("clone", "clone_preserving_field_list"):
            ctype = b[0].const_value
            slot = "ci" if ctype == "I2E" else "ce"
            sess = self.fresh("_s")
            self.e(f"{{ u64 {sess} = {self.x(b[1])};")
            fl = self.x(b[2]) if name == "clone_preserving_field_list" else "~0ULL"
            self.e(f"p->{slot} = 1; p->{slot}_sess = {sess}; p->{slot}_fl = {fl}; }}")
            self.uses_passes = True
        elif name == "resubmit_preserving_field_list":
            self.e(f"p->resub = 1; p->resub_fl = {self.x(b[0])};")
            self.uses_passes = True
        elif name == "recirculate_preserving_field_list":
            self.e(f"p->recirc = 1; p->recirc_fl = {self.x(b[0])};")
            self.uses_passes = True
        elif name == "digest":
            self.digest(c)
        elif name == "random":
            # uniform in [lo, hi] (lo when hi <= lo) from the switch's own generator; its
            # values are not the Python engine's (neither engine's are reproducible by BMv2)
            lo, hi, r = self.fresh("_lo"), self.fresh("_hi"), self.fresh("_r")
            self.e(f"{{ u64 {lo} = {self.x(b[1])}; u64 {hi} = {self.x(b[2])}; u64 {r} = {lo};")
            self.e(f"if ({hi} > {lo}) {{ u64 x = rng_next(p->sw); "
                   f"{r} = {hi} - {lo} == ~0ULL ? x : {lo} + x % ({hi} - {lo} + 1); }}")
            self.e(f"{self.lval(b[0])} = {r} & {mask(width(b[0].type))}; }}")
        elif name == "truncate":
            self.e(f"p->trunc = {self.x(b[0])};")
        elif name == "verify":
            if not self.in_parser:
                raise Unsupported(c, "verify outside the parser")
            self.e(f"if (!({self.x(b[0])})) {{ p->perr = {self.x(b[1])}; goto reject; }}")
        elif name == "hash":
            algo = str(b[1].const_value)
            if algo not in ALGORITHMS:
                raise Unsupported(c, f"the hash algorithm {algo}")
            dst = self.lval(b[0])
            w = width(b[0].type)
            self.e("{")
            base = self.fresh("_b")
            self.e(f"u64 {base} = {self.x(b[2])};")
            buf, n = self.pack(b[3])
            top = self.fresh("_m")
            self.e(f"u64 {top} = {self.x(b[4])};")
            h = f"alg_{algo}({buf}, {n})"
            self.e(f"{dst} = ({top} ? {base} + ({h}) % {top} : {base}) & {mask(w)};")
            self.e("}")
        elif name in ("verify_checksum", "update_checksum", "verify_checksum_with_payload",
                      "update_checksum_with_payload"):
            algo = str(b[3].const_value)
            if algo not in ALGORITHMS:
                raise Unsupported(c, f"the checksum algorithm {algo}")
            self.e(f"if ({self.x(b[0])}) {{")
            buf, n = self.pack(b[1])
            h = f"alg_{algo}({buf}, {n})"
            if name.endswith("_with_payload"):
                h = f"with_payload(p, alg_{algo}, {buf}, {n})"
                name = name[: -len("_with_payload")]
            if name == "verify_checksum":
                self.e(f"if (({h}) != {self.x(b[2])}) p->sm.f_checksum_error = 1;")
            else:
                self.e(f"{self.lval(b[2])} = ({h}) & {mask(width(b[2].type))};")
            self.e("}")
        else:
            raise Unsupported(c, f"the extern function {name}")

    def log_msg(self, c: A.CallExpr) -> None:
        """log_msg(text[, values]): recorded in C, logged by engine.py as the Python engine does."""
        b = args_of(c)
        text = b[0].const_value
        if not isinstance(text, str):
            raise Unsupported(c, "log_msg with a run-time message")
        items = []
        if len(b) > 1 and b[1] is not None:  # every scalar of the list, no validity (as flatten)
            items = [code for code, _w, _v in self.flatten(b[1])]
        if len(items) > LOG_VALUES:
            raise Unsupported(c, f"log_msg with more than {LOG_VALUES} values")
        if text not in self.log_texts:
            self.log_texts.append(text)
        v = self.fresh("_lv")
        vals = ", ".join(items) or "0"
        self.e(f"{{ u64 {v}[] = {{{vals}}}; log_out(p, {self.log_texts.index(text)}, {len(items)}, {v}); }}")

    def digest(self, c: A.CallExpr) -> None:
        """digest(receiver, data): the last call of a pass is sent (BMv2 keeps one per packet)."""
        b = args_of(c)
        t = rt(b[1].type)
        if not isinstance(t, T.StructType):
            raise Unsupported(c, "digests of non-struct values")
        self.e("{")
        if isinstance(b[1], A.StructInitExpr | A.ListExpr):
            base = self.fresh("_dg")
            self.e(f"{self.ctype(t, c)} {base}; memset(&{base}, 0, sizeof {base});")
            self.assign_agg(base, b[1], t)
        else:
            base = self.lval(b[1])
        items = []
        for f in t.fields:
            for code, w, _ in self.flatten_value(f"{base}.f_{f.name}", f.type, None, c):
                items.append((f.name, w, code))
        fields = [(n, w) for n, w, _ in items]
        key = (t.name, fields)
        if key not in self.digests:
            self.digests.append(key)
        self.digest_width = max(self.digest_width, len(items))
        self.e(f"p->dg = {self.digests.index(key) + 1};")
        for i, (_, _, code) in enumerate(items):
            self.e(f"p->dgv[{i}] = {code};")
        self.e("}")

    def pack(self, e: A.Expression) -> tuple[str, str]:
        """Emit a field list packed as BMv2's buffer builder does; (buffer, byte count)."""
        items = self.flatten(e)
        total = sum(w for _, w, _ in items)
        buf, wr = self.fresh("_buf"), self.fresh("_wr")
        self.e(f"uint8_t {buf}[{(total + 7) // 8 + 1}]; wr_t {wr} = {{{buf}, 0, {(total + 7) // 8 + 1}, 0}};")
        for code, w, valid in items:
            if valid is None:
                self.e(f"wr_bits(&{wr}, {code}, {w});")
            else:
                self.e(f"if ({valid}) wr_bits(&{wr}, {code}, {w});")
        return buf, f"wr_bytes(&{wr})"

    def flatten(self, e: A.Expression) -> list[tuple[str, int, str | None]]:
        if isinstance(e, A.ListExpr):
            return [x for it in e.items for x in self.flatten(it)]
        if isinstance(e, A.StructInitExpr):
            return [x for _, it in e.fields for x in self.flatten(it)]
        t = rt(e.type)
        if isinstance(t, T.StructLike | T.HeaderStack):
            return self.flatten_value(self.lval(e), t, None, e)
        valid = None
        if isinstance(e, A.MemberExpr) and e.kind is MK.FIELD and isinstance(rt(e.expr.type), T.HeaderType):
            valid = f"{self.lval(e.expr)}.valid"
        return [(self.x(e), width(t), valid)]

    def flatten_value(self, base: str, t: T.P4Type, valid: str | None, node: Any) -> list[tuple[str, int, str | None]]:
        t = rt(t)
        if isinstance(t, T.HeaderStack):
            return [x for i in range(t.size) for x in self.flatten_value(f"{base}.e[{i}]", t.element, valid, node)]
        if isinstance(t, T.StructLike):
            if isinstance(t, T.HeaderUnionType):
                raise Unsupported(node, "header unions")
            own = f"{base}.valid" if isinstance(t, T.HeaderType) else valid
            return [x for f in t.fields for x in self.flatten_value(f"{base}.f_{f.name}", f.type, own, node)]
        w = width(t)
        if not w or w > 64:
            raise Unsupported(node, f"hashing values of type {t}")
        return [(base, w, valid)]

    def extern_method(self, c: A.CallExpr) -> None:
        info = self.gen.extern_info(c.target, c)
        b = args_of(c)
        tn, meth = info.type_name, c.method
        size = info.args[0] if info.args and isinstance(info.args[0], int) else None
        if tn == "register" and size is not None:
            rid = self.register_id(info)
            i = self.fresh("_i")
            if meth == "read":
                self.e(f"{{ u64 {i} = {self.x(b[1])}; if ({i} < {size}) {self.lval(b[0])} = p->sw->reg[{rid}][{i}]; }}")
                return
            if meth == "write":
                v = self.fresh("_v")
                self.e(f"{{ u64 {i} = {self.x(b[0])}; u64 {v} = {self.x(b[1])}; "
                       f"if ({i} < {size}) p->sw->reg[{rid}][{i}] = {v}; }}")
                return
        if tn == "counter" and meth == "count" and size is not None:
            cid = self.counter_id(info)
            i = self.fresh("_i")
            self.e(f"{{ u64 {i} = {self.x(b[0])}; if ({i} < {size}) {{ p->sw->cnt_p[{cid}][{i}]++; "
                   f"p->sw->cnt_b[{cid}][{i}] += p->len; }} }}")
            return
        if tn == "direct_counter" and meth == "count":
            return  # every hit of the table counts (BMv2), in its apply function
        if tn == "direct_meter" and meth == "read":
            self.e(f"{self.lval(b[0])} = p->dm & {mask(width(b[0].type))};")
            return
        if tn == "meter" and meth == "execute_meter" and size is not None:
            mid = self.meter_id(info)
            i = self.fresh("_i")
            amount = "1" if str(info.args[1]) == "packets" else "p->len"
            self.e(f"{{ u64 {i} = {self.x(b[0])}; if ({i} < {size}) {self.lval(b[1])} = "
                   f"meter_exec(&p->sw->met[{mid}][{i}], {amount}, p->now) & {mask(width(b[1].type))}; }}")
            return
        raise Unsupported(c, f"the extern method {tn}.{meth}")

    def meter_id(self, info: Any) -> int:
        mid = self.met_ids.get(id(info))
        if mid is None:
            mid = self.met_ids[id(info)] = len(self.meters)
            self.meters.append((info.name, int(info.args[0]), str(info.args[1])))
        return mid

    def register_id(self, info: Any) -> int:
        rid = self.reg_ids.get(id(info))
        if rid is None:
            t = rt(info.type_args[0]) if info.type_args else T.Bits(32)
            w = width(t)
            if not w or w > 64:
                raise Unsupported(info.decl, f"registers of {t}")
            rid = self.reg_ids[id(info)] = len(self.registers)
            self.registers.append((info.name, int(info.args[0]), w))
        return rid

    def counter_id(self, info: Any) -> int:
        cid = self.ctr_ids.get(id(info))
        if cid is None:
            cid = self.ctr_ids[id(info)] = len(self.counters)
            self.counters.append((info.name, int(info.args[0])))
        return cid

    # ------------------------------------------------------------------ parser and deparser

    def extract(self, c: A.CallExpr) -> None:
        args = args_of(c)
        if len(args) > 1 and args[1] is not None:
            raise Unsupported(c, "extract of varbit headers")
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
        total = t.bit_width()
        self.e(f"NEED({total});")
        off = 0
        for f in t.fields:
            w = width(f.type)
            self.e(f"{h}.f_{f.name} = rd_bits(p->data, p->len, p->pos + {off}, {w});")
            off += w
        self.e(f"p->pos += {total}; {h}.valid = 1;")
        if nxt is not None:
            self.e(f"{nxt}.n++;")

    def emit(self, c: A.CallExpr) -> None:
        arg = args_of(c)[0]
        self.emit_value(self.lval(arg), rt(arg.type), c)

    def emit_value(self, base: str, t: T.P4Type, node: Any) -> None:
        if isinstance(t, T.HeaderType):
            self.emit_sizes.append(t.bit_width())
            self.e(f"if ({base}.valid) {{")
            for f in t.fields:
                self.e(f"wr_bits(&p->out, {base}.f_{f.name}, {width(f.type)});")
            self.e("}")
        elif isinstance(t, T.StructType):
            for f in t.fields:
                self.emit_value(f"{base}.f_{f.name}", rt(f.type), node)
        elif isinstance(t, T.HeaderStack):
            for i in range(t.size):
                self.emit_value(f"{base}.e[{i}]", rt(t.element), node)
        else:
            raise Unsupported(node, f"emit of {t}")
