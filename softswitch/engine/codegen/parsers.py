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
from .values import is_agg, rt, width_of


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
        union_ref = None
        member = target if isinstance(target, A.MemberExpr) else None
        if member is not None and member.kind is A.MemberKind.FIELD and \
                isinstance(rt(member.expr.type), T.HeaderUnionType):
            union_ref = self.fresh("_u")
            e(f"{union_ref} = {self.ref(member.expr, save=False)}")
            e(f"{h} = {union_ref}.f_{member.member}")
        else:
            e(f"{h} = {self.ref(target, save=False)}")
        varbit_len = self.spill(self.expr(args[1])) if len(args) > 1 and args[1] is not None else None
        self.emit_read_header(h, t, varbit_len, advance=True)
        e(f"{h}._v = True")
        if union_ref is not None and member is not None:
            union = rt(member.expr.type)
            assert isinstance(union, T.HeaderUnionType)
            for f in union.fields:  # one valid member at a time (spec 8.19)
                if f.name != member.member:
                    e(f"{union_ref}.f_{f.name}._v = False")
        # `hs.next` (of a header stack, or of a stack of unions through one of their members)
        # advances nextIndex after a successful extract (spec 13.8.2)
        nxt = member.expr if union_ref is not None and member is not None else target
        if isinstance(nxt, A.MemberExpr) and nxt.kind is A.MemberKind.STACK_NEXT:
            e(f"{self.ref(nxt.expr, save=False)}.n += 1")

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
        if varbit_len is None:
            raise CompileError("?", f"extract of {t.name} needs the varbit length")
        fixed_bits = sum(width_of(f.type) for f in t.fields if not isinstance(rt(f.type), T.Varbit))
        vmax = sum(width_of(f.type) for f in t.fields if isinstance(rt(f.type), T.Varbit))
        # BMv2's extract_VL: a size not a multiple of 8 first, then the packet length, then
        # the header's maximum size
        e(f"if {varbit_len} % 8: raise _Reject('ParserInvalidArgument')")
        e(f"if {pos} + {fixed_bits} + {varbit_len} > P.nbits: raise _TooShort()")
        e(f"if {varbit_len} > {vmax}: raise _Reject('HeaderTooShort')")
        for f in t.fields:
            ft = rt(f.type)
            if isinstance(ft, T.Varbit):
                e(f"{h}.f_{f.name} = _rb(P.data, {pos}, {varbit_len})")
                e(f"{h}.w_{f.name} = {varbit_len}")
                e(f"{pos} += {varbit_len}")
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
        w = width_of(t)
        if isinstance(t, T.StructLike | T.HeaderStack):
            # as p4c's ExpandLookahead: the bits are read once and cut into the fields,
            # headers inside made valid (spec 13.8.3)
            bits = self.fresh("_lb")
            self.out(f"{bits} = _rb(P.data, P.pos, {w})")
            obj = self.fresh("_la")
            self.out(f"{obj} = {self.default_value(t)}")
            self.unpack(obj, t, bits, w)
            return obj
        return self.field_from_bits(f"_rb(P.data, P.pos, {w})", t)

    def unpack(self, obj: str, t: T.P4Type, bits: str, end: int) -> int:
        """Emit the fields of `obj` (type t) from the bits of `bits` ending `end` bits from the
        right; returns where the next field ends."""
        t = rt(t)
        if isinstance(t, T.HeaderStack):
            for i in range(t.size):
                end = self.unpack(f"{obj}.e[{i}]", t.element, bits, end)
            return end
        if isinstance(t, T.HeaderType):
            self.out(f"{obj}._v = True")
        assert isinstance(t, T.StructLike)
        for f in t.fields:
            ft = rt(f.type)
            if isinstance(ft, T.StructLike | T.HeaderStack):
                end = self.unpack(f"{obj}.f_{f.name}", ft, bits, end)
                continue
            w = width_of(ft)
            end -= w
            val = f"(({bits} >> {end}) & {hex((1 << w) - 1)})" if end else f"({bits} & {hex((1 << w) - 1)})"
            self.out(f"{obj}.f_{f.name} = {self.field_from_bits(val, ft)}")
        return end

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
        outs = [self.names[id(p)] for p in decl.params
                if p.direction in ("out", "inout") and not is_agg(p.type)]
        for p in decl.params:
            if p.direction == "out" and not is_agg(p.type):
                e(f"{self.names[id(p)]} = {self.default_value(p.type)}")
        e(f"_st = {state_names[id(start)]}")
        e("_n = 0")
        e("while _st is not None:")
        e("    _st = _st(P, F)")
        e("    _n += 1")
        e("    if _n > 10000: raise _Reject('ParserTimeout')")
        if outs:  # scalar out/inout values go back to the calling parser (spec 6.8)
            e(f"return (None, {', '.join(outs)})")
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
            raise self.err(tr, "unsupported: this transition")
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
