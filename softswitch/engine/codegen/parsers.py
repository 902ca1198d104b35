"""Code generation: parsers and the packet_in / packet_out methods (spec sections 12, 13, 15).

Every parser state is a function returning the next state (None for accept);
`select` becomes an if-chain; `extract`, `lookahead` and `advance` read bits at
`P.pos`, and the deparser's `emit` appends to `P.out`.
"""

from __future__ import annotations

from typing import Any

from softswitch.frontend import ast as A
from softswitch.frontend import types as T

from ..errors import CompileError
from .base import CodegenBase, args_of
from .values import rt, width_of


class ParserCode(CodegenBase):
    """Parser states and transitions; extract, lookahead and emit."""

    def emit_extract(self, c: A.CallExpr) -> None:
        e = self.out
        args = args_of(c)
        target = args[0]
        t = rt(target.type)
        if not isinstance(t, T.HeaderType):
            raise self.err(c, "extract into a non-header")
        h = self.fresh("_h")
        e(f"{h} = {self.expr(target)}")
        varbit_len = self.expr(args[1]) if len(args) > 1 and args[1] is not None else None
        self.emit_read_header(h, t, varbit_len, advance=True)
        e(f"{h}._v = True")
        if isinstance(target, A.MemberExpr) and target.kind is A.MemberKind.STACK_NEXT:
            e(f"{self.expr(target.expr)}.n += 1")
        if isinstance(target, A.MemberExpr):
            union = rt(target.expr.type)
            if isinstance(union, T.HeaderUnionType):
                u = self.expr(target.expr)  # one valid member at a time (spec 8.19)
                for f in union.fields:
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
            for lv, ft in _scalar_fields(h, t):
                w = width_of(ft)
                shift = total - off - w
                val = f"({v} >> {shift})" if shift else v
                val = f"({val} & {hex((1 << w) - 1)})"
                e(f"{lv} = {self.field_from_bits(val, ft)}")
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
                for lv, sft in _scalar_fields(f"{h}.f_{f.name}", f.type):
                    w = width_of(sft)
                    e(f"{lv} = {self.field_from_bits(f'_rb(P.data, {pos}, {w})', sft)}")
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
                for v, sft in _scalar_fields(h, t):
                    w = width_of(sft)
                    shift = total - off - w
                    ft = rt(sft)
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
                        continue
                    for v, sft in _scalar_fields(f"{h}.f_{f.name}", f.type):
                        w = width_of(sft)
                        st = rt(sft)
                        if isinstance(st, T.BoolType):
                            v = f"(1 if {v} else 0)"
                        elif isinstance(st, T.Bits) and st.signed:
                            v = f"({v} & {hex((1 << w) - 1)})"
                        e(f"P.out.put({v}, {w})")
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

    def compile_parser(self, decl: A.ParserDecl, prefix: str, prefix_fq: str | None) -> str:
        saved = (self.prefix, self.prefix_fq)
        self.prefix, self.prefix_fq = prefix, prefix_fq
        frame, _ = self.frame_class(decl.params, decl.locals)
        for d in decl.locals:
            if isinstance(d, A.Instantiation):
                self.register_instance(d)
            if isinstance(d, A.ValueSetDecl):
                g = self.fresh("VS_")
                self.names[id(d)] = g
                self.value_sets.append((d, g, self.fq(d)))
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


def _scalar_fields(base: str, t: T.P4Type) -> list[tuple[str, T.P4Type]]:
    """(l-value code, type) of the scalar fields of a header, in wire order: a struct field
    of a header (spec 7.2.2) contributes its own fields, recursively."""
    t = rt(t)
    if not isinstance(t, T.StructLike):
        return [(base, t)]
    out: list[tuple[str, T.P4Type]] = []
    for f in t.fields:
        ft = rt(f.type)
        if isinstance(ft, T.StructType):
            out.extend(_scalar_fields(f"{base}.f_{f.name}", ft))
        else:
            out.append((f"{base}.f_{f.name}", f.type))
    return out
