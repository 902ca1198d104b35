"""Compile a checked P4_16 program into Python source, executed once with exec().

Every parser state, action, function, table apply and control body becomes a
straight-line Python function; headers and structs become classes with
__slots__ (fields `f_<name>`, validity `_v`). Control-level names live in a
per-invocation frame object `F`; the packet's pass state is `P`
(runtime.PacketContext). Tables and extern instances are module globals built
by `softswitch.engine.switch` from the same declarations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from softswitch.frontend import ast as A
from softswitch.frontend import types as T

from .errors import CompileError


def rt(t: T.P4Type) -> T.P4Type:
    """Representation type: new types unwrapped, serializable enums as their bits."""
    t = T.strip_newtype(t)
    if isinstance(t, T.EnumType) and t.underlying is not None:
        return t.underlying
    if isinstance(t, T.SpecializedType):
        return t
    return t


def is_agg(t: T.P4Type) -> bool:
    """True for values held by reference in the generated code (headers, structs, stacks)."""
    return isinstance(rt(t), T.StructLike | T.HeaderStack)


def width_of(t: T.P4Type) -> int:
    """Bit width used when the value is packed (hash inputs, keys, digests)."""
    return T.bit_width(t)


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

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


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


class Codegen:
    """Translate the checked AST of a v1model program into one Python module's source."""

    def __init__(self, program: Any) -> None:
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
        self.in_action = False
        self.fn_outs: list[tuple[str, str]] = []  # scalar out params of the current function
        self.value_sets: list[tuple[Any, str]] = []
        self.field_lists: dict[int, list[tuple[str, str]]] = {}
        self.agg_params: set[str] = set()  # frame slots holding aggregates (never rebound)

    # ------------------------------------------------------------------ utils

    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"{base}{self.counter}"

    def err(self, node: Any, message: str) -> CompileError:
        return CompileError(getattr(node, "loc", "?"), message)

    # ------------------------------------------------------------------ classes

    def class_for(self, t: T.P4Type) -> str:
        """Python class implementing a header/struct/union type (generated once)."""
        t = T.strip_newtype(t)
        name = self.classes.get(id(t))
        if name is not None:
            return name
        if not isinstance(t, T.StructLike):
            raise CompileError("?", f"no class for type {t}")
        name = self.fresh("K")
        self.classes[id(t)] = name
        is_header = isinstance(t, T.HeaderType)
        slots = (["_v"] if is_header else []) + [f"f_{f.name}" for f in t.fields]
        for f in t.fields:
            if isinstance(rt(f.type), T.Varbit):
                slots.append(f"w_{f.name}")
        # Nested types first so that their classes exist.
        inits = []
        copies = []
        for f in t.fields:
            ft = rt(f.type)
            if isinstance(ft, T.Varbit):
                inits.append(f"self.f_{f.name} = 0")
                inits.append(f"self.w_{f.name} = 0")
                copies.append(f"n.f_{f.name} = self.f_{f.name}")
                copies.append(f"n.w_{f.name} = self.w_{f.name}")
            elif is_agg(ft):
                inits.append(f"self.f_{f.name} = {self.new_value(ft)}")
                copies.append(f"n.f_{f.name} = self.f_{f.name}.copy()")
            else:
                inits.append(f"self.f_{f.name} = {self.default_value(ft)}")
                copies.append(f"n.f_{f.name} = self.f_{f.name}")
        e = self.class_src
        e(f"class {name}:")
        e.indent()
        e(f'"""{type(t).__name__} {t.name}."""')
        e(f"__slots__ = {tuple(slots)!r}")
        e("def __init__(self):")
        e.indent()
        if is_header:
            e("self._v = False")
        for line in inits or ["pass"]:
            e(line)
        e.dedent()
        e("def copy(self):")
        e.indent()
        e(f"n = {name}.__new__({name})")
        if is_header:
            e("n._v = self._v")
        for line in copies:
            e(line)
        e("return n")
        e.dedent()
        if isinstance(t, T.HeaderUnionType):
            e("@property")
            e("def valid(self):")
            e.indent()
            e("return " + (" or ".join(f"self.f_{f.name}._v" for f in t.fields) or "False"))
            e.dedent()
        e.dedent()
        e("")
        return name

    def new_value(self, t: T.P4Type) -> str:
        """Expression creating a fresh (all-zero, invalid) value of an aggregate type."""
        t = rt(t)
        if isinstance(t, T.HeaderStack):
            cls = self.class_for(t.element)
            return f"_Stack([{cls}() for _ in range({t.size})])"
        return f"{self.class_for(t)}()"

    def default_value(self, t: T.P4Type) -> str:
        """Python literal of the zero value BMv2 gives an uninitialised scalar."""
        t = rt(t)
        if isinstance(t, T.BoolType):
            return "False"
        if isinstance(t, T.ErrorType):
            return "'NoError'"
        if isinstance(t, T.EnumType):
            return repr(t.members[0]) if t.members else "''"
        if is_agg(t):
            return self.new_value(t)
        return "0"

    # ------------------------------------------------------------------ expressions

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
        m = getattr(self, "x_" + type(e).__name__, None)
        if m is None:
            raise self.err(e, f"unsupported expression {type(e).__name__}")
        return m(e)

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
        raise self.err(e, f"unsupported member access .{e.member}")

    def x_IndexExpr(self, e: A.IndexExpr) -> str:
        return f"{self.expr(e.expr)}.e[{self.expr(e.index)}]"

    def x_SliceExpr(self, e: A.SliceExpr) -> str:
        hi, lo = e.hi_value, e.lo_value
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
        raise self.err(e, f"unsupported operator {e.op}")

    def x_BinaryExpr(self, e: A.BinaryExpr) -> str:
        op = e.op
        if op == "&&":
            return f"({self.expr(e.left)} and {self.expr(e.right)})"
        if op == "||":
            return f"({self.expr(e.left)} or {self.expr(e.right)})"
        a = self.expr(e.left)
        b = self.expr(e.right)
        t = rt(e.type)
        if op in ("==", "!="):
            if is_agg(e.left.type):
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
        raise self.err(e, f"unsupported operator {op}")

    def x_TernaryExpr(self, e: A.TernaryExpr) -> str:
        return f"({self.expr(e.then)} if {self.expr(e.cond)} else {self.expr(e.otherwise)})"

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
        raise self.err(e, f"unsupported cast from {src} to {dst}")

    def x_CallExpr(self, e: A.CallExpr) -> str:
        return self.call(e, want_value=True)

    def x_ListExpr(self, e: A.ListExpr) -> str:
        t = rt(e.type)
        if isinstance(t, T.StructLike):
            return self.build_struct(t, [(f.name, it) for f, it in zip(t.fields, e.items, strict=False)])
        return "(" + "".join(self.expr(i) + ", " for i in e.items) + ")"

    def x_StructInitExpr(self, e: A.StructInitExpr) -> str:
        t = rt(e.type)
        if not isinstance(t, T.StructLike):
            raise self.err(e, "struct initialiser without a struct type")
        return self.build_struct(t, list(e.fields))

    def build_struct(self, t: T.StructLike, items: list[tuple[str, A.Expression]]) -> str:
        """Expression building a header/struct value from (field, expression) pairs."""
        cls = self.class_for(t)
        args = ", ".join(
            f"({name!r}, {self.expr(x) + ('.copy()' if is_agg(x.type) else '')})" for name, x in items
        )
        valid = isinstance(t, T.HeaderType)
        return f"_mk({cls}, ({args}{',' if len(items) == 1 else ''}), {valid})"

    # ------------------------------------------------------------------ flattening

    def flatten(self, e: A.Expression) -> list[tuple[str, int]]:
        """(Python expression, width) of every scalar in a list/struct/header expression."""
        t = rt(e.type)
        if isinstance(e, A.ListExpr):
            out = []
            for it in e.items:
                out.extend(self.flatten(it))
            return out
        if isinstance(e, A.StructInitExpr):
            out = []
            for _, it in e.fields:
                out.extend(self.flatten(it))
            return out
        if isinstance(t, T.StructLike):
            base = self.expr(e)
            return self.flatten_value(base, t)
        if isinstance(t, T.BoolType):
            return [(f"(1 if {self.expr(e)} else 0)", 1)]
        if isinstance(t, T.Bits):
            v = self.expr(e)
            return [(f"({v} & {hex((1 << t.width) - 1)})" if t.signed else v, t.width)]
        raise self.err(e, f"cannot use a {t} value as a field list")

    def flatten_value(self, base: str, t: T.P4Type) -> list[tuple[str, int]]:
        t = rt(t)
        if isinstance(t, T.StructLike):
            out = []
            for f in t.fields:
                out.extend(self.flatten_value(f"{base}.f_{f.name}", f.type))
            return out
        if isinstance(t, T.HeaderStack):
            out = []
            for i in range(t.size):
                out.extend(self.flatten_value(f"{base}.e[{i}]", t.element))
            return out
        if isinstance(t, T.BoolType):
            return [(f"(1 if {base} else 0)", 1)]
        if isinstance(t, T.Bits):
            return [(f"({base} & {hex((1 << t.width) - 1)})" if t.signed else base, t.width)]
        if isinstance(t, T.Varbit):
            return []
        raise CompileError("?", f"cannot pack a {t} value")

    def flatten_calc(self, e: A.Expression) -> list[tuple[str, Any, str | None]]:
        """(value, width, validity) of every field a hash/checksum input holds, as BMv2's buffer
        builder sees them: varbits with their current width, header fields only while the
        header is valid (validity None = always included)."""
        if isinstance(e, A.ListExpr):
            return [x for it in e.items for x in self.flatten_calc(it)]
        if isinstance(e, A.StructInitExpr):
            return [x for _, it in e.fields for x in self.flatten_calc(it)]
        t = rt(e.type)
        if isinstance(t, T.StructLike | T.HeaderStack):
            return self.flatten_calc_value(self.expr(e), t, None)
        valid = None
        if isinstance(e, A.MemberExpr) and e.kind is A.MemberKind.FIELD and isinstance(rt(e.expr.type), T.HeaderType):
            base = self.expr(e.expr)
            valid = f"{base}._v"
            if isinstance(t, T.Varbit):
                return [(f"{base}.f_{e.member}", f"{base}.w_{e.member}", valid)]
        return [(v, w, valid) for v, w in self.flatten(e)]

    def flatten_calc_value(self, base: str, t: T.P4Type, valid: str | None) -> list[tuple[str, Any, str | None]]:
        t = rt(t)
        if isinstance(t, T.HeaderStack):
            return [x for i in range(t.size) for x in self.flatten_calc_value(f"{base}.e[{i}]", t.element, valid)]
        if isinstance(t, T.StructLike):
            own = f"{base}._v" if isinstance(t, T.HeaderType) else valid
            out = []
            for f in t.fields:
                ft = rt(f.type)
                if isinstance(ft, T.Varbit):
                    out.append((f"{base}.f_{f.name}", f"{base}.w_{f.name}", own))
                else:
                    out.extend(self.flatten_calc_value(f"{base}.f_{f.name}", ft, own))
            return out
        return [(v, w, valid) for v, w in self.flatten_value(base, t)]

    def calc_args(self, items: list[tuple[str, Any, str | None]]) -> str:
        """Code passing (packed value, bit count) of a hash/checksum input as two arguments."""
        conds = list(dict.fromkeys(ok for _, _, ok in items if ok is not None))
        if all(isinstance(w, int) for _, w, _ in items):
            packed, total = self.packed([(v, w) for v, w, _ in items])
            if not conds:
                return f"{packed}, {total}"
            fast = f"({packed}, {total})"
        else:
            fast = None
        dyn = "_dyn((" + "".join(f"({v}, {w}, {ok or 'True'}), " for v, w, ok in items) + "))"
        if fast is None:
            return f"*{dyn}"
        return f"*({fast} if {' and '.join(conds)} else {dyn})"

    def fields_tuple(self, pairs: list[tuple[str, int]]) -> str:
        return "(" + "".join(f"({v}, {w}), " for v, w in pairs) + ")"

    def packed(self, pairs: list[tuple[str, int]]) -> tuple[str, int]:
        """One integer expression with the scalars packed left to right, and its width."""
        total = sum(w for _, w in pairs)
        parts = []
        off = 0
        for v, w in pairs:
            shift = total - off - w
            parts.append(f"({v} << {shift})" if shift else v)
            off += w
        return ("(" + " | ".join(parts) + ")") if parts else "0", total

    # ------------------------------------------------------------------ lvalues

    def assign(self, lhs: A.Expression, value: str, vtype: T.P4Type | None = None) -> None:
        """Emit code storing `value` (already a Python expression) into lvalue `lhs`."""
        e = self.out
        if isinstance(lhs, A.DontCareExpr):
            e(f"_ = {value}")
            return
        if isinstance(lhs, A.SliceExpr):
            base = self.expr(lhs.expr)
            hi, lo = lhs.hi_value, lhs.lo_value
            m = ((1 << (hi - lo + 1)) - 1) << lo
            self.assign(lhs.expr, f"(({base}) & ~{hex(m)}) | ((({value}) << {lo}) & {hex(m)})")
            return
        target = self.expr(lhs)
        if isinstance(lhs, A.MemberExpr) and lhs.kind is not A.MemberKind.FIELD:
            raise self.err(lhs, f"cannot assign to .{lhs.member}")
        if isinstance(lhs, A.PathExpr) and isinstance(lhs.decl, A.Param) and is_agg(lhs.type):
            # a parameter is the caller's object: overwrite it in place, never rebind
            e(f"_into({target}, {value})")
            return
        e(f"{target} = {value}")

    def assign_expr(self, lhs: A.Expression, rhs: A.Expression) -> None:
        """lhs = rhs with P4 copy semantics for aggregates."""
        lt = rt(lhs.type)
        if isinstance(lt, T.StructLike | T.HeaderStack):
            v = self.expr(rhs)
            if isinstance(rhs, A.ListExpr | A.StructInitExpr):
                self.assign(lhs, v)
            else:
                self.assign(lhs, f"{v}.copy()")
            return
        self.assign(lhs, self.expr(rhs))

    # ------------------------------------------------------------------ statements

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

    def value_copy(self, x: A.Expression) -> str:
        v = self.expr(x)
        if is_agg(x.type) and not isinstance(x, A.ListExpr | A.StructInitExpr):
            return f"{v}.copy()"
        return v

    # ------------------------------------------------------------------ calls

    def call(self, c: A.CallExpr, want_value: bool) -> str:
        """Code for a call; returns an expression (want_value) or emits statements."""
        k = c.kind
        K = A.CallKind
        if k is K.HEADER_IS_VALID:
            r = self.expr(c.receiver)
            if isinstance(rt(c.receiver.type), T.HeaderUnionType):
                return f"{r}.valid"
            return f"{r}._v"
        if k is K.HEADER_SET_VALID or k is K.HEADER_SET_INVALID:
            r = c.receiver
            # a union member made valid invalidates its siblings (spec 8.19)
            if isinstance(r, A.MemberExpr) and isinstance(rt(r.expr.type), T.HeaderUnionType):
                u = self.expr(r.expr)
                for f in rt(r.expr.type).fields:
                    if f.name != r.member:
                        self.out(f"{u}.f_{f.name}._v = False")
            # BMv2's add_header / remove_header also move the packet length register by the
            # header's size when the validity really changes; add_header zeroes the fields
            ht = rt(r.type)
            size = ht.bit_width() // 8 if isinstance(ht, T.HeaderType) else 0
            h = self.fresh("_h")
            self.out(f"{h} = {self.expr(r)}")
            if k is K.HEADER_SET_INVALID:
                self.out(f"if {h}._v: P.plen -= {size}")
                return f"{h}._v = False"
            self.out(f"if not {h}._v: {h}.__init__(); P.plen += {size}")
            return f"{h}._v = True"
        if k is K.STACK_PUSH_FRONT:
            return f"{self.expr(c.receiver)}.push_front({self.expr(c.bound_args[0])})"
        if k is K.STACK_POP_FRONT:
            return f"{self.expr(c.receiver)}.pop_front({self.expr(c.bound_args[0])})"
        if k is K.TABLE_APPLY:
            info = self.table_by_decl.get((id(c.target), self.prefix))
            if info is None:
                raise self.err(c, "table not found in this control")
            return f"TA_{info.gname}(P, F)"
        if k is K.ACTION:
            return self.call_action(c, want_value)
        if k is K.FUNCTION:
            return self.call_function(c, want_value)
        if k is K.EXTERN_FUNCTION:
            return self.call_extern_function(c)
        if k is K.EXTERN_METHOD:
            return self.call_extern_method(c)
        if k is K.PACKET_EXTRACT:
            self.emit_extract(c)
            return ""
        if k is K.PACKET_LOOKAHEAD:
            return self.lookahead(c)
        if k is K.PACKET_ADVANCE:
            n = self.expr(c.bound_args[0])
            self.out(f"if P.pos + {n} > P.nbits: raise _TooShort()")
            return f"P.pos += {n}"
        if k is K.PACKET_LENGTH:
            return "P.length"
        if k is K.PACKET_EMIT:
            self.emit_emit(c.bound_args[0], self.expr(c.bound_args[0]), c.bound_args[0].type)
            return ""
        if k is K.CONTROL_APPLY:
            return self.call_subcontrol(c)
        if k is K.PARSER_APPLY:
            return self.call_subparser(c)
        raise self.err(c, f"unsupported call kind {k}")

    def bind_call(self, c: A.CallExpr, params: list[A.Param], skip_data: bool) -> tuple[list[str], list[tuple[A.Expression, int]]]:
        """Argument expressions and the (lvalue, position) of scalar out/inout params."""
        args: list[str] = []
        outs: list[tuple[A.Expression, int]] = []
        for p, a in zip(params, c.bound_args, strict=False):
            if skip_data and not p.direction:
                continue
            ptype = p.type if p.type is not None else getattr(a, "type", None)
            if a is None:
                args.append(self.default_value(ptype) if ptype is not None else "0")
                continue
            if p.direction in ("out", "inout") and not is_agg(ptype):
                outs.append((a, len(outs) + 1))
                args.append(self.expr(a) if p.direction == "inout" else self.default_value(ptype))
            elif p.direction in ("", "in") and is_agg(ptype):
                args.append(self.value_copy(a))
            else:
                args.append(self.expr(a))
        return args, outs

    def finish_call(self, code: str, outs, want_value: bool, node) -> str:
        if not outs:
            return code
        # out arguments are written back before the statement that uses the result
        tmp = self.fresh("_r")
        self.out(f"{tmp} = {code}")
        for lv, pos in outs:
            self.assign(lv, f"{tmp}[{pos}]")
        return f"{tmp}[0]" if want_value else ""

    def call_action(self, c: A.CallExpr, want_value: bool) -> str:
        info = self.action_info(c.target, c)
        args, outs = self.bind_call(c, c.target.params, skip_data=False)
        code = f"{info.gname}(P, F{''.join(', ' + a for a in args)})"
        return self.finish_call(code, outs, want_value, c)

    def call_function(self, c: A.CallExpr, want_value: bool) -> str:
        gname = self.functions.get(id(c.target))
        if gname is None:
            gname = self.compile_function(c.target)
        args, outs = self.bind_call(c, c.target.params, skip_data=False)
        code = f"{gname}(P, F{''.join(', ' + a for a in args)})"
        return self.finish_call(code, outs, want_value, c)

    # ------------------------------------------------------------------ externs

    def call_extern_function(self, c: A.CallExpr) -> str:
        name = c.target.name
        b = c.bound_args
        e = self.out
        if name == "mark_to_drop":
            s = self.expr(b[0]) if b and b[0] is not None else "P.sm"
            e(f"{s}.f_egress_spec = 511")
            return f"{s}.f_mcast_grp = 0"
        if name == "verify":
            return f"if not {self.expr(b[0])}: raise _Reject({self.expr(b[1])})"
        if name == "hash":
            algo = b[1].const_value
            value = f"_hash(P, {algo!r}, {self.expr(b[2])}, {self.calc_args(self.flatten_calc(b[3]))}, {self.expr(b[4])})"
            self.assign(b[0], self.wrap(value, b[0].type))
            return ""
        if name in ("verify_checksum", "verify_checksum_with_payload"):
            algo = b[3].const_value
            args = self.calc_args(self.flatten_calc(b[1]))
            payload = "P.payload" if name.endswith("payload") else "b''"
            return (
                f"if {self.expr(b[0])} and _csum(P, {algo!r}, {args}, {payload}) != {self.expr(b[2])}: "
                f"P.sm.f_checksum_error = 1"
            )
        if name in ("update_checksum", "update_checksum_with_payload"):
            algo = b[3].const_value
            args = self.calc_args(self.flatten_calc(b[1]))
            payload = "P.payload" if name.endswith("payload") else "b''"
            e(f"if {self.expr(b[0])}:")
            e.indent()
            self.assign(b[2], self.wrap(f"_csum(P, {algo!r}, {args}, {payload})", b[2].type))
            e.dedent()
            return ""
        if name == "digest":
            t = rt(b[1].type)
            tname = t.name if isinstance(t, T.StructLike) else "digest"
            if isinstance(t, T.StructLike):
                base = self.fresh("_d")
                e(f"{base} = {self.expr(b[1])}")
                items = []
                for f in t.fields:
                    for v, w in self.flatten_value(f"{base}.f_{f.name}", f.type):
                        items.append(f"({f.name!r}, {w}, {v})")
            else:
                items = [f"('f{i}', {w}, {v})" for i, (v, w) in enumerate(self.flatten(b[1]))]
            return f"P.digests.append(({tname!r}, ({', '.join(items)}{',' if len(items) == 1 else ''})))"
        if name in ("clone", "clone3", "clone_preserving_field_list"):
            ctype = b[0].const_value
            fl = self.expr(b[2]) if name == "clone_preserving_field_list" else "None"
            slot = "clone_i2e" if ctype == "I2E" else "clone_e2e"
            return f"P.{slot} = ({self.expr(b[1])}, {fl})"
        if name == "resubmit_preserving_field_list":
            return f"P.resubmit = {self.expr(b[0])}"
        if name == "recirculate_preserving_field_list":
            return f"P.recirc = {self.expr(b[0])}"
        if name == "truncate":
            return f"P.truncate = {self.expr(b[0])}"
        if name in ("assert", "assume"):
            return f"if not {self.expr(b[0])}: raise _Drop({(name + ' failed at ' + str(c.loc))!r})"
        if name == "log_msg":
            msg = self.expr(b[0])
            if len(b) > 1 and b[1] is not None:
                vals = self.fields_tuple(self.flatten(b[1]))
                return f"_log({msg}, tuple(v for v, _ in {vals}))"
            return f"_log({msg})"
        if name == "random":
            self.assign(b[0], f"_random({self.expr(b[1])}, {self.expr(b[2])})")
            return ""
        raise self.err(c, f"unsupported extern function {name}")

    def extern_info(self, inst: Any, node: Any) -> ExternInfo:
        info = self.extern_by_decl.get((id(inst), self.prefix)) or self.extern_by_decl.get((id(inst), ""))
        if info is None:
            raise self.err(node, f"extern instance {getattr(inst, 'name', '?')} not found")
        return info

    def call_extern_method(self, c: A.CallExpr) -> str:
        inst = c.target
        info = self.extern_info(inst, c)
        g = info.gname
        b = c.bound_args
        meth = c.method
        tn = info.type_name
        # register cells and counter cells are lists bound as globals `<name>_v`, `<name>_p`,
        # `<name>_b` (the arrays update them in place), and sizes are constants
        size = info.args[0] if info.args and isinstance(info.args[0], int) else None
        if tn == "register" and size is not None:
            e = self.out
            i = self.fresh("_i")
            if meth == "read":
                # out of range: BMv2 leaves the destination unchanged
                e(f"{i} = {self.expr(b[1])}")
                e(f"if 0 <= {i} < {size}:")
                e.indent()
                self.assign(b[0], f"{g}_v[{i}]")
                e.dedent()
                return ""
            if meth == "write":
                e(f"{i} = {self.expr(b[0])}")
                return f"if 0 <= {i} < {size}: {g}_v[{i}] = {self.expr(b[1])}"
        if tn == "counter" and meth == "count" and size is not None:
            e = self.out
            i = self.fresh("_i")
            e(f"{i} = {self.expr(b[0])}")
            return f"if 0 <= {i} < {size}: {g}_p[{i}] += 1; {g}_b[{i}] += P.length"
        if tn == "direct_counter" and meth == "count":
            return ""  # BMv2 counts direct counters on every hit of the table
        if tn == "meter" and meth == "execute_meter":
            # out of range: BMv2 updates no meter and leaves the destination unchanged
            e = self.out
            i = self.fresh("_i")
            e(f"{i} = {self.expr(b[0])}")
            e(f"if 0 <= {i} < {g}.size:")
            e.indent()
            self.assign(b[1], self.wrap(f"{g}.execute({i}, P.length, P.now)", b[1].type))
            e.dedent()
            return ""
        if tn == "direct_meter" and meth == "read":
            self.assign(b[0], self.wrap("P.dm", b[0].type))
            return ""
        raise self.err(c, f"unsupported extern method {tn}.{meth}")

    # ------------------------------------------------------------------ parser pieces

    def emit_extract(self, c: A.CallExpr) -> None:
        e = self.out
        target = c.bound_args[0]
        t = rt(target.type)
        if not isinstance(t, T.HeaderType):
            raise self.err(c, "extract into a non-header")
        h = self.fresh("_h")
        e(f"{h} = {self.expr(target)}")
        varbit_len = self.expr(c.bound_args[1]) if len(c.bound_args) > 1 and c.bound_args[1] is not None else None
        self.emit_read_header(h, t, varbit_len, advance=True)
        e(f"{h}._v = True")
        if isinstance(target, A.MemberExpr) and target.kind is A.MemberKind.STACK_NEXT:
            e(f"{self.expr(target.expr)}.n += 1")
        if isinstance(target, A.MemberExpr) and isinstance(rt(target.expr.type), T.HeaderUnionType):
            u = self.expr(target.expr)  # one valid member at a time (spec 8.19)
            for f in rt(target.expr.type).fields:
                if f.name != target.member:
                    e(f"{u}.f_{f.name}._v = False")

    def emit_read_header(self, h: str, t: T.HeaderType, varbit_len: str | None, advance: bool) -> None:
        """Read the fields of header type t at P.pos into object h."""
        e = self.out
        fixed = all(not isinstance(rt(f.type), T.Varbit) for f in t.fields)
        if fixed:
            total = t.bit_width()
            v = self.fresh("_x")
            if total % 8 == 0 and total:
                # byte-aligned fast path; _rb handles unaligned positions and raises PacketTooShort
                nb = total // 8
                e("_p = P.pos")
                e(f"if _p & 7 or _p + {total} > P.nbits: {v} = _rb(P.data, _p, {total})")
                e(f"else: {v} = _fb(P.data[_p >> 3:(_p >> 3) + {nb}], 'big')")
            else:
                e(f"{v} = _rb(P.data, P.pos, {total})")
            off = 0
            for f in t.fields:
                w = width_of(f.type)
                shift = total - off - w
                val = f"({v} >> {shift})" if shift else v
                val = f"({val} & {hex((1 << w) - 1)})"
                e(f"{h}.f_{f.name} = {self.field_from_bits(val, f.type)}")
                off += w
            if advance:
                e(f"P.pos += {total}")
            return
        pos = self.fresh("_p")
        e(f"{pos} = P.pos")
        for f in t.fields:
            ft = rt(f.type)
            if isinstance(ft, T.Varbit):
                if varbit_len is None:
                    raise CompileError("?", f"extract of {t.name} needs the varbit length")
                n = self.fresh("_n")
                e(f"{n} = {varbit_len}")
                # BMv2 checks the packet length before the varbit's maximum
                e(f"if {pos} + {n} > P.nbits: raise _TooShort()")
                e(f"if {n} > {ft.max_width}: raise _Reject('HeaderTooShort')")
                e(f"{h}.f_{f.name} = _rb(P.data, {pos}, {n})")
                e(f"{h}.w_{f.name} = {n}")
                e(f"{pos} += {n}")
            else:
                w = width_of(f.type)
                e(f"{h}.f_{f.name} = {self.field_from_bits(f'_rb(P.data, {pos}, {w})', f.type)}")
                e(f"{pos} += {w}")
        if advance:
            e(f"P.pos = {pos}")

    def field_from_bits(self, val: str, ftype: T.P4Type) -> str:
        ft = rt(ftype)
        if isinstance(ft, T.BoolType):
            return f"({val} != 0)"
        if isinstance(ft, T.Bits) and ft.signed:
            return self.wrap(val, ft)
        return val

    def lookahead(self, c: A.CallExpr) -> str:
        t = rt(c.type_args[0] if c.type_args else c.type)
        if isinstance(t, T.HeaderType):
            h = self.fresh("_la")
            self.out(f"{h} = {self.class_for(t)}()")
            self.emit_read_header(h, t, None, advance=False)
            self.out(f"{h}._v = True")
            return h
        if isinstance(t, T.StructLike):
            raise self.err(c, f"lookahead of a {t} is not supported")
        w = width_of(t)
        return self.field_from_bits(f"_rb(P.data, P.pos, {w})", t)

    def emit_emit(self, node: Any, code: str, t: T.P4Type) -> None:
        """packet_out.emit of a header, union, stack or struct of those (spec 15.2)."""
        e = self.out
        t = rt(t)
        if isinstance(t, T.HeaderType):
            h = self.fresh("_h")
            e(f"{h} = {code}")
            e(f"if {h}._v:")
            e.indent()
            fixed = all(not isinstance(rt(f.type), T.Varbit) for f in t.fields)
            if fixed:
                total = t.bit_width()
                parts = []
                off = 0
                for f in t.fields:
                    w = width_of(f.type)
                    shift = total - off - w
                    ft = rt(f.type)
                    v = f"{h}.f_{f.name}"
                    if isinstance(ft, T.BoolType):
                        v = f"(1 if {v} else 0)"
                    elif isinstance(ft, T.Bits) and ft.signed:
                        v = f"({v} & {hex((1 << w) - 1)})"
                    parts.append(f"({v} << {shift})" if shift else v)
                    off += w
                e(f"P.out.put({' | '.join(parts) or '0'}, {total})")
            else:
                for f in t.fields:
                    ft = rt(f.type)
                    if isinstance(ft, T.Varbit):
                        e(f"P.out.put({h}.f_{f.name}, {h}.w_{f.name})")
                    else:
                        v = f"{h}.f_{f.name}"
                        if isinstance(ft, T.BoolType):
                            v = f"(1 if {v} else 0)"
                        e(f"P.out.put({v}, {width_of(f.type)})")
            e.dedent()
        elif isinstance(t, T.HeaderUnionType | T.StructType):
            s = self.fresh("_s")
            e(f"{s} = {code}")
            for f in t.fields:
                self.emit_emit(node, f"{s}.f_{f.name}", f.type)
        elif isinstance(t, T.HeaderStack):
            s = self.fresh("_s")
            e(f"{s} = {code}")
            for i in range(t.size):
                self.emit_emit(node, f"{s}.e[{i}]", t.element)
        else:
            raise self.err(node, f"cannot emit a {t}")

    # ------------------------------------------------------------------ names

    def fq(self, decl: Any) -> str:
        """Fully-qualified control-plane name of a control/parser-local declaration."""
        if self.prefix_fq is not None:
            return f"{self.prefix_fq}.{decl.name}"
        if decl.fqname:
            return decl.fqname
        return f"{self.block_fq}.{decl.name}" if self.block_fq else decl.name

    prefix_fq: str | None = None

    def action_name_of(self, decl: A.ActionDecl) -> str:
        return self.action_info(decl, decl).name

    def action_info(self, decl: A.ActionDecl, node: Any) -> ActionInfo:
        key = (id(decl), self.prefix if decl.owner is not None else "")
        info = self.action_by_decl.get(key)
        if info is None:
            raise self.err(node, f"action {decl.name} not found")
        return info

    # ------------------------------------------------------------------ actions and functions

    def compile_action(self, decl: A.ActionDecl) -> ActionInfo:
        """Emit `def A(P, F, <directional params>, <action data>)`."""
        key = (id(decl), self.prefix if decl.owner is not None else "")
        if key in self.action_by_decl:
            return self.action_by_decl[key]
        gname = self.fresh("A_")
        name = self.fq(decl) if decl.owner is not None else (decl.fqname or decl.name)
        params = [(p.name, width_of(p.type)) for p in decl.params if not p.direction]
        info = ActionInfo(decl, name, gname, params)
        self.action_by_decl[key] = info
        self.actions.append(info)
        self.emit_callable(gname, decl.params, decl.body)
        return info

    def compile_function(self, decl: A.FunctionDecl) -> str:
        gname = self.fresh("FN_")
        self.functions[id(decl)] = gname
        saved = (self.out, self.fn_outs)
        self.out = Emitter()
        self.emit_callable(gname, decl.params, decl.body)
        text = self.out
        self.out, self.fn_outs = saved
        self.deferred.append(text)
        return gname

    deferred: list[Emitter]

    def emit_callable(self, gname: str, params: list[A.Param], body: A.BlockStmt) -> None:
        e = self.out
        locals_ = []
        outs = []
        for p in params:
            local = self.fresh(f"a_{p.name}_")
            self.names[id(p)] = local
            locals_.append(local)
            if p.direction in ("out", "inout") and not is_agg(p.type):
                outs.append((local, p.name))
        e(f"def {gname}(P, F{''.join(', ' + x for x in locals_)}):")
        e.indent()
        saved = self.fn_outs
        self.fn_outs = outs
        for p, local in zip(params, locals_, strict=True):
            if p.direction == "out":
                e(f"{local} = {self.default_value(p.type)}")
            pt = rt(p.type) if p.type is not None else None
            if not p.direction and isinstance(pt, T.Bits) and pt.signed:
                # action data arrives unsigned from the control plane
                e(f"{local} = {self.wrap(local, pt)}")
        self.block(body.stmts)
        if outs:
            e(f"return (None, {', '.join(o for o, _ in outs)})")
        self.fn_outs = saved
        e.dedent()
        e("")

    # ------------------------------------------------------------------ controls

    def frame_class(self, params: list[A.Param], locals_: list[Any]) -> tuple[str, list[str]]:
        """A frame class holding a block's parameters and control-level variables."""
        slots = []
        for p in params:
            # aggregates (never rebound, aliased by alias_params) and scalars get distinct slots
            acc = f"p_{p.name}" if is_agg(p.type) else f"s_{p.name}"
            self.names[id(p)] = f"F.{acc}"
            slots.append(acc)
            if is_agg(p.type):
                self.agg_params.add(acc)
        for d in locals_:
            if isinstance(d, A.VariableDecl):
                acc = self.fresh(f"l_{d.name}_")
                self.names[id(d)] = f"F.{acc}"
                slots.append(acc)
        name = self.fresh("FR")
        self.class_src(f"class {name}:")
        self.class_src(f"    __slots__ = {tuple(slots)!r}")
        self.class_src("")
        return name, slots

    def compile_control(self, decl: A.ControlDecl, prefix: str, prefix_fq: str | None) -> str:
        """Emit the control's actions, tables and `def CTL(P, <params>)`; returns its name."""
        saved = (self.prefix, self.prefix_fq)
        self.prefix, self.prefix_fq = prefix, prefix_fq
        frame, _ = self.frame_class(decl.params, decl.locals)
        subs = []
        for d in decl.locals:
            if isinstance(d, A.Instantiation):
                self.register_instance(d, subs)
        for d in decl.locals:
            if isinstance(d, A.ActionDecl):
                self.compile_action(d)
        for d in decl.locals:
            if isinstance(d, A.TableDecl):
                self.compile_table(d)
        gname = self.fresh("CTL_")
        pnames = [f"a{i}" for i in range(len(decl.params))]
        e = self.out
        e(f"def {gname}(P{''.join(', ' + p for p in pnames)}):")
        e.indent()
        scalar_outs = any(p.direction in ("out", "inout") and not is_agg(p.type) for p in decl.params)
        if not decl.body.stmts and not scalar_outs and not any(isinstance(d, A.VariableDecl) for d in decl.locals):
            # an empty apply block (common for egress and the checksum controls): nothing to run
            e("return None")
            e.dedent()
            e("")
            self.prefix, self.prefix_fq = saved
            return gname
        e(f"F = {frame}()")
        for p, a in zip(decl.params, pnames, strict=True):
            e(f"{self.names[id(p)]} = {a}")
        for d in decl.locals:
            if isinstance(d, A.VariableDecl):
                acc = self.names[id(d)]
                e(f"{acc} = {self.value_copy(d.init) if d.init is not None else self.default_value(d.type)}")
        # scalar inout params are handed back to the caller (copy-out) as (None, outs...)
        outs = [(self.names[id(p)], p.name) for p in decl.params if p.direction in ("out", "inout") and not is_agg(p.type)]
        saved_outs = self.fn_outs
        self.fn_outs = outs
        self.block(decl.body.stmts)
        self.fn_outs = saved_outs
        if outs:
            e(f"return (None, {', '.join(o for o, _ in outs)})")
        e.dedent()
        e("")
        self.prefix, self.prefix_fq = saved
        return gname

    def register_instance(self, d: A.Instantiation, subs: list) -> None:
        """Record an extern instance (or compile a sub-control/parser instance)."""
        t = d.type
        base = t.base if isinstance(t, T.SpecializedType) else t
        if isinstance(base, T.ControlType | T.ParserType):
            decl = base.decl
            key = (id(d), self.prefix)
            sub_prefix = f"{self.prefix}/{d.name}"
            sub_fq = f"{self.prefix_fq or self.current_block_fq()}.{d.name}"
            if isinstance(decl, A.ControlDecl):
                self.sub_blocks[key] = self.compile_control(decl, sub_prefix, sub_fq)
            elif isinstance(decl, A.ParserDecl):
                self.sub_blocks[key] = self.compile_parser(decl, sub_prefix, sub_fq)
            else:
                raise self.err(d, f"cannot instantiate {base}")
            return
        if not isinstance(base, T.ExternType):
            raise self.err(d, f"unsupported instantiation of {base}")
        gname = self.fresh("X_")
        args = [a.const_value if a is not None else None for a in d.bound_args]
        targs = list(t.args) if isinstance(t, T.SpecializedType) else []
        info = ExternInfo(d, gname, self.fq(d), base.name, args, targs)
        self.externs.append(info)
        self.extern_by_decl[(id(d), self.prefix)] = info

    sub_blocks: dict

    def current_block_fq(self) -> str:
        return self.block_fq

    block_fq = ""

    def call_subcontrol(self, c: A.CallExpr) -> str:
        inst = c.target
        gname = self.sub_blocks.get((id(inst), self.prefix))
        if gname is None:
            raise self.err(c, "control instance not found")
        params = inst.type.decl.params if hasattr(inst.type, "decl") else []
        args, outs = self.bind_call(c, params, skip_data=False)
        code = f"{gname}(P{''.join(', ' + a for a in args)})"
        if outs:
            tmp = self.fresh("_r")
            self.out(f"{tmp} = {code}")
            for lv, pos in outs:
                self.assign(lv, f"{tmp}[{pos}]")
            return ""
        return code

    def call_subparser(self, c: A.CallExpr) -> str:
        inst = c.target
        gname = self.sub_blocks.get((id(inst), self.prefix))
        if gname is None:
            raise self.err(c, "parser instance not found")
        params = inst.type.decl.params if hasattr(inst.type, "decl") else []
        args, outs = self.bind_call(c, params, skip_data=False)
        if outs:
            raise self.err(c, "sub-parser with scalar out arguments is not supported")
        return f"{gname}(P{''.join(', ' + a for a in args)})"

    # ------------------------------------------------------------------ tables

    def compile_table(self, d: A.TableDecl) -> TableInfo:
        gname = self.fresh("T_")
        name = self.fq(d)
        keys = []
        key_exprs = []
        sel_exprs = []
        for k in d.keys:
            w = width_of(k.expr.type)
            keys.append((k.name, k.match_kind, w))
            code = self.expr(k.expr)
            kt = rt(k.expr.type)
            if isinstance(kt, T.BoolType):
                code = f"(1 if {code} else 0)"
            elif isinstance(kt, T.Bits) and kt.signed:
                code = f"({code} & {hex((1 << kt.width) - 1)})"  # the control plane speaks unsigned
            if k.match_kind == "selector":
                sel_exprs.append((code, w))
            else:
                key_exprs.append(code)
        actions = []
        for ref in d.actions:
            ainfo = self.action_info(ref.action, ref)
            fn = ainfo.gname
            dir_params = [p for p in ref.action.params if p.direction]
            if dir_params:
                call = ref.call
                bound = call.bound_args if call is not None else []
                wrapper = self.fresh("W_")
                args = []
                outs = []
                for p, a in zip(ref.action.params, bound, strict=False):
                    if not p.direction:
                        continue
                    if a is None:
                        args.append(self.default_value(p.type))
                        continue
                    if p.direction in ("out", "inout") and not is_agg(p.type):
                        outs.append((a, len(outs) + 1))
                        args.append(self.expr(a) if p.direction == "inout" else self.default_value(p.type))
                    else:
                        args.append(self.expr(a))
                e = self.out
                e(f"def {wrapper}(P, F, *d):")
                e.indent()
                e(f"_r = {fn}(P, F, {''.join(x + ', ' for x in args)}*d)")
                for lv, pos in outs:
                    self.assign(lv, f"_r[{pos}]")
                e.dedent()
                e("")
                fn = wrapper
            actions.append((ainfo.name, ref, fn))
        info = TableInfo(d, name, gname, keys, actions)
        impl = d.implementation
        if impl is not None:
            if isinstance(impl, A.PathExpr):
                info.profile = self.extern_info(impl.decl, impl).gname
            else:
                # inline constructor: an anonymous profile owned by the table
                pg = self.fresh("X_")
                args = [a.const_value if a is not None else None for a in impl.bound_args]
                tname = "action_selector" if len(args) >= 3 else "action_profile"
                self.externs.append(ExternInfo(impl, pg, self.impl_name(d), tname, args))
                info.profile = pg
        for prop, attr in ((d.counters, "direct_counter"), (d.meters, "direct_meter")):
            if prop is not None:
                if isinstance(prop, A.PathExpr):
                    setattr(info, attr, self.extern_info(prop.decl, prop).gname)
                else:
                    raise self.err(prop, "direct resources must be declared as instances")
        self.tables.append(info)
        self.table_by_decl[(id(d), self.prefix)] = info
        self.emit_table_apply(info, key_exprs, sel_exprs)
        return info

    def direct_meter_targets(self, info: TableInfo) -> list[A.Expression]:
        """Destinations of `<direct meter>.read(dest)` in the table's actions (first of each kind)."""
        meter = info.decl.meters.decl if isinstance(info.decl.meters, A.PathExpr) else None
        found: list[A.Expression] = []
        seen: set[str] = set()
        for _, ref, _ in info.actions:
            for call in _calls_in(ref.action.body):
                if call.kind is A.CallKind.EXTERN_METHOD and call.target is meter and call.method == "read":
                    dest = call.bound_args[0]
                    # a destination naming an action parameter cannot be written outside the action
                    if dest is None or _mentions_params(dest, ref.action.params):
                        continue
                    code = self.expr(dest)
                    if code not in seen:
                        seen.add(code)
                        found.append(dest)
        return found

    def impl_name(self, d: A.TableDecl) -> str:
        info = getattr(self.program, "info", None)
        for tinfo in getattr(info, "tables", []) or []:
            if getattr(tinfo, "name", None) == self.fq(d):
                impl = getattr(tinfo, "implementation", None)
                if impl:
                    return impl
        return self.fq(d) + "_profile"

    def emit_table_apply(self, info: TableInfo, key_exprs: list[str], sel_exprs: list[tuple[str, int]]) -> None:
        e = self.out
        g = info.gname
        e(f"def TA_{g}(P, F):")
        e.indent()
        key = "(" + "".join(k + ", " for k in key_exprs) + ")"
        e(f"_e = {g}.lookup({key})")
        e("if _e is None:")
        e(f"    {g}.default_fn(P, F, *{g}.default_args)")
        e(f"    return (False, {g}.default_action)")
        if info.direct_counter:
            e("_e.packets += 1")
            e("_e.bytes += P.length")
        if info.direct_meter:
            # BMv2 executes the direct meter on every hit, before the action, and writes the
            # colour to the destination of the program's read() whatever action runs
            amount = f"(1 if {info.direct_meter}.unit == 'packets' else P.length)"
            e(f"P.dm = _e.meter.execute({amount}, P.now) if _e.meter is not None else 0")
            for dest in self.direct_meter_targets(info):
                self.assign(dest, self.wrap("P.dm", dest.type))
        if info.profile:
            pg = info.profile
            e("if _e.member is not None:")
            e(f"    _name, _args, _fn = {pg}.members[_e.member]")
            e("else:")
            e.indent()
            e(f"_g = {pg}.groups[_e.group]")
            e("if not _g:")
            e(f"    {g}.default_fn(P, F, *{g}.default_args)")
            e(f"    return (False, {g}.default_action)")
            packed, nbits = self.packed(sel_exprs)
            e(f"_name, _args, _fn = {pg}.members[_g[_sel(P, {pg}, {packed}, {nbits}) % len(_g)]]")
            e.dedent()
            e("_fn(P, F, *_args)")
            e("return (True, _name)")
        else:
            e("_e.fn(P, F, *_e.args)")
            e("return (True, _e.action)")
        e.dedent()
        e("")

    # ------------------------------------------------------------------ parsers

    def compile_parser(self, decl: A.ParserDecl, prefix: str, prefix_fq: str | None) -> str:
        saved = (self.prefix, self.prefix_fq)
        self.prefix, self.prefix_fq = prefix, prefix_fq
        frame, _ = self.frame_class(decl.params, decl.locals)
        subs = []
        for d in decl.locals:
            if isinstance(d, A.Instantiation):
                self.register_instance(d, subs)
            if isinstance(d, A.ValueSetDecl):
                g = self.fresh("VS_")
                self.names[id(d)] = g
                self.value_sets.append((d, g))
        state_names = {}
        for st in decl.states:
            state_names[id(st)] = self.fresh(f"S_{st.name}_")
        self.state_names = state_names
        for st in decl.states:
            if st.name in ("accept", "reject") and st.transition is None:
                continue
            self.compile_state(st, state_names[id(st)])
        start = next((s for s in decl.states if s.name == "start"), None)
        if start is None:
            raise self.err(decl, "parser has no start state")
        gname = self.fresh("PRS_")
        e = self.out
        pnames = [f"a{i}" for i in range(len(decl.params))]
        e(f"def {gname}(P{''.join(', ' + p for p in pnames)}):")
        e.indent()
        e(f"F = {frame}()")
        for p, a in zip(decl.params, pnames, strict=True):
            e(f"{self.names[id(p)]} = {a}")
        for d in decl.locals:
            if isinstance(d, A.VariableDecl):
                acc = self.names[id(d)]
                e(f"{acc} = {self.value_copy(d.init) if d.init is not None else self.default_value(d.type)}")
        e(f"_st = {state_names[id(start)]}")
        e("_n = 0")
        e("while _st is not None:")
        e("    _st = _st(P, F)")
        e("    _n += 1")
        e("    if _n > 10000: raise _Reject('ParserTimeout')")
        e.dedent()
        e("")
        self.prefix, self.prefix_fq = saved
        return gname

    def state_target(self, path: A.PathExpr) -> str:
        st = path.decl
        if st is None or path.name == "accept" or getattr(st, "name", None) == "accept":
            return "None"
        if path.name == "reject" or getattr(st, "name", None) == "reject":
            return "_REJECT"
        name = self.state_names.get(id(st))
        if name is None:
            raise self.err(path, f"unknown state {path.name}")
        return name

    def compile_state(self, st: A.ParserState, gname: str) -> None:
        e = self.out
        e(f"def {gname}(P, F):")
        e.indent()
        for s in st.stmts:
            self.stmt(s)
        tr = st.transition
        if tr is None:
            e("return None")
        elif isinstance(tr, A.PathExpr):
            self.emit_goto(self.state_target(tr))
        elif isinstance(tr, A.SelectExpr):
            self.emit_select(tr)
        else:
            raise self.err(tr, "unsupported transition")
        e.dedent()
        e("")

    def emit_goto(self, target: str) -> None:
        if target == "_REJECT":
            self.out("raise _Reject(None)")
        else:
            self.out(f"return {target}")

    def emit_select(self, sel: A.SelectExpr) -> None:
        e = self.out
        keys = []
        for k in sel.keys:
            v = self.fresh("_k")
            code = self.expr(k)
            if isinstance(rt(k.type), T.BoolType):
                code = f"(1 if {code} else 0)"
            e(f"{v} = {code}")
            keys.append((v, k))
        for case in sel.cases:
            ks = case.keyset
            items = ks.items if isinstance(ks, A.ListExpr) else [ks]
            if len(keys) > 1 and isinstance(ks, A.PathExpr) and isinstance(ks.decl, A.ValueSetDecl):
                conds = [f"{self.names[id(ks.decl)]}.match(({''.join(v + ', ' for v, _ in keys)}))"]
                e(f"if {conds[0]}:")
                e.indent()
                self.emit_goto(self.state_target(case.state))
                e.dedent()
                continue
            conds = []
            for (v, k), item in zip(keys, items, strict=False):
                c = self.keyset_cond(v, k, item)
                if c is not None:
                    conds.append(c)
            target = self.state_target(case.state)
            if conds:
                e(f"if {' and '.join(conds)}:")
                e.indent()
                self.emit_goto(target)
                e.dedent()
            else:
                self.emit_goto(target)
                return
        e("raise _Reject('NoMatch')")

    def keyset_cond(self, v: str, key: A.Expression, item: A.Expression) -> str | None:
        if isinstance(item, A.DefaultExpr | A.DontCareExpr):
            return None
        if isinstance(item, A.MaskExpr):
            return f"({v} & {self.expr(item.mask)}) == ({self.expr(item.value)} & {self.expr(item.mask)})"
        if isinstance(item, A.RangeExpr):
            return f"{self.expr(item.lo)} <= {v} <= {self.expr(item.hi)}"
        if isinstance(item, A.PathExpr) and isinstance(item.decl, A.ValueSetDecl):
            return f"{self.names[id(item.decl)]}.match({v})"
        val = self.expr(item)
        if isinstance(rt(item.type), T.BoolType):
            val = f"(1 if {val} else 0)"
        return f"{v} == {val}"

    # ------------------------------------------------------------------ field lists

    def field_list_copiers(self, meta_type: T.P4Type) -> None:
        """Emit FL_<n>(src, dst) copying the metadata fields annotated @field_list(n)."""
        lists: dict[int, list[str]] = {}

        def walk(t: T.P4Type, path: str) -> None:
            t = rt(t)
            if not isinstance(t, T.StructLike):
                return
            for f in t.fields:
                for ann in f.annotations or []:
                    if getattr(ann, "name", None) == "field_list":
                        for arg in ann.args or []:
                            if isinstance(arg, int):
                                lists.setdefault(arg, []).append(f"{path}.f_{f.name}")
                if is_agg(f.type):
                    walk(f.type, f"{path}.f_{f.name}")

        walk(meta_type, "")
        e = self.out
        for idx, paths in sorted(lists.items()):
            e(f"def FL_{idx}(src, dst):")
            for p in paths:
                e(f"    dst{p} = _cp(src{p})")
            e("")
        e("FIELD_LISTS = {" + ", ".join(f"{i}: FL_{i}" for i in sorted(lists)) + "}")

    # ------------------------------------------------------------------ whole program

    def compile(self) -> str:
        """Source of the generated module."""
        main = self.program.main
        if main is None:
            raise CompileError(self.program.source_file, "the program has no V1Switch main package")
        self.deferred = []
        self.sub_blocks = {}
        self.state_names = {}
        # top-level actions and extern instances are shared by every control
        main_inst = getattr(main, "instantiation", None)
        for d in self.program.ast.decls:
            if isinstance(d, A.ActionDecl):
                self.compile_action(d)
            elif isinstance(d, A.Instantiation) and d is not main_inst:
                t = d.type.base if isinstance(d.type, T.SpecializedType) else d.type
                if isinstance(t, T.ExternType):
                    self.register_instance(d, [])
        blocks = {}
        for role in ("parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser"):
            decl = getattr(main, role)
            self.block_fq = decl.name
            if role == "parser":
                blocks[role] = self.compile_parser(decl, role, None)
            else:
                blocks[role] = self.compile_control(decl, role, None)
        self.blocks = blocks
        params = main.parser.params
        hdr_t = rt(params[1].type)
        meta_t = rt(params[2].type)
        sm_t = rt(params[3].type)
        e = self.out
        e(f"new_headers = {self.class_for(hdr_t)}")
        e(f"new_meta = {self.class_for(meta_t)}")
        e(f"new_sm = {self.class_for(sm_t)}")
        for role, g in blocks.items():
            e(f"RUN_{role} = {g}")
        self.field_list_copiers(meta_t)
        body = self.out.text()
        fns = "".join(d.text() for d in self.deferred)
        return self.class_src.text() + "\n" + alias_params(fns + "\n" + body, self.agg_params)


_PROLOGUE = re.compile(r"^\s+(F = FR\d+\(\)|F\.[ps]_\w+ = a\d+)$")


def alias_params(source: str, agg_params: set[str]) -> str:
    """Read aggregate frame slots (`F.p_hdr`) once per function into a local (`p_hdr`).

    Aggregate parameters are references that a block never rebinds, so a local
    alias is equivalent and saves an attribute lookup per access.
    """
    if not agg_params:
        return source
    pattern = re.compile(r"\bF\.(" + "|".join(sorted(agg_params)) + r")\b")
    out: list[str] = []
    lines = source.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("def "):
            out.append(line)
            i += 1
            continue
        j = i + 1
        while j < len(lines) and (lines[j].startswith(" ") or not lines[j]):
            j += 1
        block = lines[i + 1 : j]
        k = 0
        while k < len(block) and _PROLOGUE.match(block[k]):
            k += 1
        rest = block[k:]
        used = sorted({m.group(1) for ln in rest for m in pattern.finditer(ln)})
        out.append(line)
        out.extend(block[:k])
        out.extend(f"    {name} = F.{name}" for name in used)
        out.extend(pattern.sub(r"\1", ln) for ln in rest)
        i = j
    return "\n".join(out)


def _walk(node: Any):
    """Every AST node below `node` (dataclass fields, lists), depth first."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, list):
            stack.extend(n)
            continue
        if not isinstance(n, A.Node):
            continue
        yield n
        for name in getattr(n, "__dataclass_fields__", {}):
            if name in ("decl", "target", "type", "field", "action", "loc", "owner", "resolved"):
                continue  # references, not children
            stack.append(getattr(n, name))


def _calls_in(node: Any) -> list[A.CallExpr]:
    return [n for n in _walk(node) if isinstance(n, A.CallExpr)]


def _mentions_params(expr: Any, params: list[Any]) -> bool:
    ids = {id(p) for p in params}
    return any(isinstance(n, A.PathExpr) and id(n.decl) in ids for n in _walk(expr))
