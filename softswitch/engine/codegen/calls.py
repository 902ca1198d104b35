"""Code generation: calls of actions, functions, built-in methods and v1model externs.

Scalar out/inout arguments are returned by the callee as a tuple
`(result, out1, ...)` and written back before the statement that uses the
result; aggregates are passed by reference. Extern calls compile to the
runtime objects built by `softswitch.engine.builder` (registers, counters,
meters) or to fields of the packet context `P` (clone, digest, resubmit, ...).
"""

from __future__ import annotations

from typing import Any

from softswitch.frontend import ast as A
from softswitch.frontend import types as T

from .base import CodegenBase, ExternInfo, args_of, receiver_of
from .values import is_agg, rt


class CallCode(CodegenBase):
    """Call classification, argument passing, built-in methods and v1model externs."""

    def call(self, c: A.CallExpr, want_value: bool) -> str:
        """Code for a call; returns an expression (want_value) or emits statements."""
        k = c.kind
        K = A.CallKind
        if k is K.HEADER_IS_VALID:
            r = self.expr(receiver_of(c))
            if isinstance(rt(receiver_of(c).type), T.HeaderUnionType):
                return f"{r}.valid"
            return f"{r}._v"
        if k is K.HEADER_SET_VALID or k is K.HEADER_SET_INVALID:
            hdr = receiver_of(c)
            # a union member made valid invalidates its siblings (spec 8.19)
            if isinstance(hdr, A.MemberExpr):
                union = rt(hdr.expr.type)
                if isinstance(union, T.HeaderUnionType):
                    u = self.expr(hdr.expr)
                    for f in union.fields:
                        if f.name != hdr.member:
                            self.out(f"{u}.f_{f.name}._v = False")
            # BMv2's add_header / remove_header also move the packet length register by the
            # header's size when the validity really changes; add_header zeroes the fields
            ht = rt(hdr.type)
            size = ht.bit_width() // 8 if isinstance(ht, T.HeaderType) else 0
            h = self.fresh("_h")
            self.out(f"{h} = {self.expr(hdr)}")
            if k is K.HEADER_SET_INVALID:
                self.out(f"if {h}._v: P.plen -= {size}")
                return f"{h}._v = False"
            self.out(f"if not {h}._v: {h}.__init__(); P.plen += {size}")
            return f"{h}._v = True"
        if k is K.STACK_PUSH_FRONT:
            return f"{self.expr(receiver_of(c))}.push_front({self.expr(args_of(c)[0])})"
        if k is K.STACK_POP_FRONT:
            return f"{self.expr(receiver_of(c))}.pop_front({self.expr(args_of(c)[0])})"
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
            n = self.expr(args_of(c)[0])
            self.out(f"if P.pos + {n} > P.nbits: raise _TooShort()")
            return f"P.pos += {n}"
        if k is K.PACKET_LENGTH:
            return "P.length"
        if k is K.PACKET_EMIT:
            self.emit_emit(args_of(c)[0], self.expr(args_of(c)[0]), args_of(c)[0].type)
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
            ptype: Any = p.type if p.type is not None else getattr(a, "type", None)
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

    def finish_call(self, code: str, outs: list[tuple[A.Expression, int]], want_value: bool) -> str:
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
        return self.finish_call(code, outs, want_value)

    def call_function(self, c: A.CallExpr, want_value: bool) -> str:
        gname = self.functions.get(id(c.target))
        if gname is None:
            gname = self.compile_function(c.target)
        args, outs = self.bind_call(c, c.target.params, skip_data=False)
        code = f"{gname}(P, F{''.join(', ' + a for a in args)})"
        return self.finish_call(code, outs, want_value)

    def call_extern_function(self, c: A.CallExpr) -> str:
        name = c.target.name
        b = args_of(c)
        e = self.out
        if name == "mark_to_drop":
            s = self.expr(b[0]) if b and b[0] is not None else "P.sm"
            e(f"{s}.f_egress_spec = 511")
            return f"{s}.f_mcast_grp = 0"
        if name == "static_assert":
            return ""  # evaluated by the front end
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
        b = args_of(c)
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
        if tn == "Checksum16" and meth == "get":
            # v1model's deprecated extern: the 16-bit one's complement checksum (csum16)
            return f"_csum(P, 'csum16', {self.calc_args(self.flatten_calc(b[0]))}, b'')"
        if tn == "direct_meter" and meth == "read":
            self.assign(b[0], self.wrap("P.dm", b[0].type))
            return ""
        raise self.err(c, f"unsupported extern method {tn}.{meth}")
