"""Code generation: calls of actions, functions, controls, parsers, methods and v1model externs.

Arguments follow the calling convention of spec 6.8: they are evaluated left to
right, the l-values of out/inout arguments are saved, values are copied in, and
after the call they are copied out left to right. Scalar out/inout values come
back from the callee as a tuple `(result, out1, ...)`. An aggregate argument is
passed by reference only where the callee cannot tell (no other argument and,
for an action, nothing in its body names the same variable; this is p4c's own
condition for inlining without temporaries); otherwise a copy is passed and
copied back. A callee that may run `exit` hands its out values back on the
exception (`_Exit.outs`) and the caller copies them out before passing the exit
on (spec 12.5.5). Extern calls compile to the runtime objects built by
`softswitch.engine.builder` (registers, counters, meters) or to fields of the
packet context `P` (clone, digest, resubmit, ...).
"""

from __future__ import annotations

from typing import Any

from softswitch.frontend import ast as A
from softswitch.frontend import types as T

from .analysis import lvalue_path, walk
from .base import BoundArgs, CodegenBase, Emitter, ExternInfo, Place, args_of, receiver_of
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
            h = self.fresh("_h")
            self.out(f"{h} = {self.ref(hdr, save=False)}")
            # a union member made valid invalidates its siblings (spec 8.19)
            if isinstance(hdr, A.MemberExpr) and k is K.HEADER_SET_VALID:
                union = rt(hdr.expr.type)
                if isinstance(union, T.HeaderUnionType):
                    u = self.ref(hdr.expr, save=False)
                    for f in union.fields:
                        if f.name != hdr.member:
                            self.out(f"{u}.f_{f.name}._v = False")
            # BMv2's add_header / remove_header also move the packet length register by the
            # header's size when the validity really changes; add_header zeroes the fields
            ht = rt(hdr.type)
            size = ht.bit_width() // 8 if isinstance(ht, T.HeaderType) else 0
            if k is K.HEADER_SET_INVALID:
                self.out(f"if {h}._v: P.plen -= {size}")
                return f"{h}._v = False"
            self.out(f"if not {h}._v: {h}.__init__(); P.plen += {size}")
            return f"{h}._v = True"
        if k is K.STACK_PUSH_FRONT:
            return f"{self.ref(receiver_of(c), save=False)}.push_front({self.expr(args_of(c)[0])})"
        if k is K.STACK_POP_FRONT:
            return f"{self.ref(receiver_of(c), save=False)}.pop_front({self.expr(args_of(c)[0])})"
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
        raise self.err(c, f"unsupported: call of kind {k}")

    # ---- the calling convention (spec 6.8)

    def bind_call(self, c: A.CallExpr, params: list[Any], skip_data: bool,
                  callee: Any = None) -> BoundArgs:
        """Evaluate the arguments of `c` left to right (spec 6.8); `callee` is the declaration
        called (an action's body decides whether an aggregate may be passed by reference)."""
        bound = BoundArgs()
        args = list(c.bound_args)
        for i, (p, a) in enumerate(zip(params, args, strict=False)):
            if skip_data and not p.direction:
                continue
            ptype: Any = p.type if p.type is not None else getattr(a, "type", None)
            if a is None:
                bound.codes.append(self.default_value(ptype) if ptype is not None else "0")
                continue
            if isinstance(getattr(ptype, "base", ptype), T.ExternType):
                bound.codes.append("None")  # the callee was compiled for this extern
                continue
            saved = self.out
            self.out = buf = Emitter()
            try:
                code, back = self.bind_one(p.direction, a, ptype,
                                           self.can_alias(args, i, callee))
            finally:
                self.out = saved
            if buf.lines:  # the arguments before this one are evaluated first
                bound.codes = [self.spill(x) for x in bound.codes]
                self.out.splice(buf)
            bound.codes.append(code)
            if back is not None:
                place, source = back
                if source is None:
                    bound.nouts += 1
                    source = f"#{bound.nouts}"
                bound.backs.append((place, source))
        return bound

    def bind_one(self, direction: str, a: A.Expression, ptype: Any,
                 alias: bool) -> tuple[str, tuple[Place, str | None] | None]:
        """The code passed for one argument, and its copy-out (source None: a tuple value)."""
        if direction in ("out", "inout"):
            place = self.place(a, save=True)
            if not is_agg(ptype):
                code = place.read if direction == "inout" else self.default_value(ptype)
                return code, (place, None)
            if alias:
                if direction == "out":  # out parameters start invalid (spec 6.8)
                    place.store(self.default_value(ptype))
                return place.read, None
            tmp = self.fresh("_a")
            source = f"{place.read}.copy()" if direction == "inout" else self.default_value(ptype)
            return f"({tmp} := {source})", (place, tmp)
        if alias and is_agg(ptype):
            return self.expr(a), None
        return self.value_copy(a), None

    def can_alias(self, args: list[A.Expression | None], i: int, callee: Any) -> bool:
        """Whether argument i, an aggregate, may be passed by reference: nothing else in the
        call names its variable or has effects, and the callee cannot reach it otherwise."""
        path = lvalue_path(args[i])
        if path is None:
            return False
        root = path[0]
        for j, b in enumerate(args):
            if j == i or b is None:
                continue
            if self.effectful(b) or any(isinstance(n, A.PathExpr) and n.decl is root
                                        for n in walk(b)):
                return False
        if isinstance(callee, A.ActionDecl):
            return id(root) not in self.facts.mentions(callee)
        return True

    def finish_call(self, code: str, bound: BoundArgs, want_value: bool, may_exit: bool) -> str:
        """Emit the call and its copy-out; returns the result expression (or the call itself
        when nothing is copied out)."""
        if not bound.backs:
            return code
        r = self.fresh("_r")
        e = self.out

        def copy_out() -> None:
            for place, source in bound.backs:
                place.store(f"{r}[{source[1:]}]" if source.startswith("#") else source)

        if may_exit:
            e("try:")
            e(f"    {r} = {code}")
            e("except _Exit as _x:")
            e.indent()
            if bound.nouts:
                e(f"{r} = _x.outs")
            copy_out()  # copy-out still happens after exit (spec 12.5.5)
            e("raise")
            e.dedent()
        else:
            e(f"{r} = {code}")
        copy_out()
        if not want_value:
            return ""
        return f"{r}[0]" if bound.nouts else r

    def call_action(self, c: A.CallExpr, want_value: bool) -> str:
        info = self.action_info(c.target, c)
        bound = self.bind_call(c, c.target.params, skip_data=False, callee=c.target)
        code = f"{info.gname}(P, F{''.join(', ' + a for a in bound.codes)})"
        return self.finish_call(code, bound, want_value, self.facts.may_exit(c.target))

    def call_function(self, c: A.CallExpr, want_value: bool) -> str:
        gname = self.functions.get(id(c.target))
        if gname is None:
            gname = self.compile_function(c.target)
        bound = self.bind_call(c, c.target.params, skip_data=False, callee=c.target)
        code = f"{gname}(P, F{''.join(', ' + a for a in bound.codes)})"
        return self.finish_call(code, bound, want_value, may_exit=False)

    # ---- externs: arguments in order, out arguments through their saved l-values

    def ordered(self, parts: list[Any]) -> list[Any]:
        """Evaluate extern arguments left to right (spec 6.8). A part is an expression (its
        value), `("out", e)` (its l-value, saved), or a function returning code (a `Multi`
        for several arguments). When one needs statements, the values before it are
        evaluated first into temporaries."""
        results: list[Any] = []
        for part in parts:
            saved = self.out
            self.out = buf = Emitter()
            try:
                if isinstance(part, tuple):
                    r: Any = self.place(part[1], save=True)
                elif callable(part):
                    r = part()
                else:
                    r = self.expr(part)
            finally:
                self.out = saved
            if buf.lines:
                results = [self._spill_part(x) for x in results]
                self.out.splice(buf)
            results.append(r)
        return results

    def _spill_part(self, x: Any) -> Any:
        if isinstance(x, Multi):
            t = self.fresh("_t")
            self.out(f"{t} = ({x},)")
            return Multi(f"*{t}")
        return self.spill(x) if isinstance(x, str) else x

    def call_extern_function(self, c: A.CallExpr) -> str:
        name = c.target.name
        b = args_of(c)
        e = self.out
        if name == "mark_to_drop":
            s = self.ref(b[0], save=False) if b and b[0] is not None else "P.sm"
            e(f"{s}.f_egress_spec = 511")
            return f"{s}.f_mcast_grp = 0"
        if name == "verify":
            cond, err = self.ordered([b[0], b[1]])
            return f"if not {cond}: raise _Reject({err})"
        if name == "hash":
            algo = b[1].const_value
            dest, base, data, top = self.ordered([
                ("out", b[0]), b[2], lambda: Multi(self.calc_args(self.flatten_calc(b[3]))), b[4]])
            dest.store(self.wrap(f"_hash(P, {algo!r}, {base}, {data}, {top})", b[0].type))
            return ""
        if name in ("verify_checksum", "verify_checksum_with_payload"):
            algo = b[3].const_value
            payload = "P.payload" if name.endswith("payload") else "b''"
            cond, data, cksum = self.ordered([
                b[0], lambda: Multi(self.calc_args(self.flatten_calc(b[1]))), b[2]])
            return (f"if {cond} and _csum(P, {algo!r}, {data}, {payload}) != {cksum}: "
                    f"P.sm.f_checksum_error = 1")
        if name in ("update_checksum", "update_checksum_with_payload"):
            algo = b[3].const_value
            payload = "P.payload" if name.endswith("payload") else "b''"
            cond, data, dest = self.ordered([
                b[0], lambda: Multi(self.calc_args(self.flatten_calc(b[1]))), ("out", b[2])])
            e(f"if {cond}:")
            e.indent()
            dest.store(self.wrap(f"_csum(P, {algo!r}, {data}, {payload})", b[2].type))
            e.dedent()
            return ""
        if name == "digest":
            t = rt(b[1].type)
            tname = t.name if isinstance(t, T.StructLike) else "digest"
            receiver = self.ordered([b[0]])[0]  # noqa: F841 (evaluated for its effects)
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
            slot = "clone_i2e" if ctype == "I2E" else "clone_e2e"
            if name == "clone_preserving_field_list":
                session, fl = self.ordered([b[1], b[2]])
            else:
                session, fl = self.ordered([b[1]])[0], "None"
            return f"P.{slot} = ({session}, {fl})"
        if name == "resubmit_preserving_field_list":
            return f"P.resubmit = {self.expr(b[0])}"
        if name == "recirculate_preserving_field_list":
            return f"P.recirc = {self.expr(b[0])}"
        if name == "truncate":
            return f"P.truncate = {self.expr(b[0])}"
        if name in ("assert", "assume"):
            return f"if not {self.expr(b[0])}: raise _Drop({(name + ' failed at ' + str(c.loc))!r})"
        if name == "log_msg":
            if len(b) > 1 and b[1] is not None:
                msg, vals = self.ordered([b[0], lambda: self.fields_tuple(self.flatten(b[1]))])
                return f"_log({msg}, tuple(v for v, _ in {vals}))"
            return f"_log({self.expr(b[0])})"
        if name == "random":
            dest, lo, hi = self.ordered([("out", b[0]), b[1], b[2]])
            dest.store(f"_random({lo}, {hi})")
            return ""
        raise self.err(c, f"unsupported: extern function {name} ({_EXTERNS})")

    def extern_info(self, inst: Any, node: Any) -> ExternInfo:
        bound = self.ctor_bindings.get(id(inst))
        if bound is not None and bound[0] == "extern":
            return bound[1]  # type: ignore[no-any-return]  # an extern passed to the constructor
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
        e = self.out
        # register cells and counter cells are lists bound as globals `<name>_v`, `<name>_p`,
        # `<name>_b` (the arrays update them in place), and sizes are constants
        size = info.args[0] if info.args and isinstance(info.args[0], int) else None
        if tn == "register" and size is not None:
            if meth == "read":
                # out of range: BMv2 leaves the destination unchanged
                dest, i = self.ordered([("out", b[0]), b[1]])
                i = self.spill(i)
                e(f"if 0 <= {i} < {size}:")
                e.indent()
                dest.store(f"{g}_v[{i}]")
                e.dedent()
                return ""
            if meth == "write":
                i, v = self.ordered([b[0], b[1]])
                i = self.spill(i)
                return f"if 0 <= {i} < {size}: {g}_v[{i}] = {v}"
        if tn == "counter" and meth == "count" and size is not None:
            i = self.spill(self.expr(b[0]))
            return f"if 0 <= {i} < {size}: {g}_p[{i}] += 1; {g}_b[{i}] += P.length"
        if tn == "direct_counter" and meth == "count":
            return ""  # BMv2 counts direct counters on every hit of the table
        if tn == "meter" and meth == "execute_meter":
            # out of range: BMv2 updates no meter and leaves the destination unchanged
            i, dest = self.ordered([b[0], ("out", b[1])])
            i = self.spill(i)
            e(f"if 0 <= {i} < {g}.size:")
            e.indent()
            dest.store(self.wrap(f"{g}.execute({i}, P.length, P.now)", b[1].type))
            e.dedent()
            return ""
        if tn == "direct_meter" and meth == "read":
            self.assign(b[0], self.wrap("P.dm", b[0].type))
            return ""
        raise self.err(c, f"unsupported: extern method {tn}.{meth} ({_EXTERNS})")


_EXTERNS = "softswitch runs the externs of core.p4 and v1model.p4"


class Multi(str):
    """Code of several arguments at once (`value, width`); spilled as a tuple."""
