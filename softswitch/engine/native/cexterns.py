"""C for v1model extern calls: mark_to_drop, hash, checksums, clone, digest, log_msg,
registers, counters and meters (field lists packed as BMv2's buffer builder does)."""

from __future__ import annotations

from typing import Any

from softswitch.frontend import ast as A
from softswitch.frontend import types as T

from ..codegen.base import args_of
from ..codegen.values import rt
from .cbase import (
    ALGORITHMS,
    LOG_VALUES,
    MK,
    CGenBase,
    Unsupported,
    alg_call,
    alg_ref,
    cint,
    mask,
    width,
)


class ExternCode(CGenBase):
    """Extern functions and extern methods."""

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
        elif name == "random" and width(b[0].type) > 64:
            raise Unsupported(c, "random values wider than 64 bits")
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
            self.e(f"{cint(width(b[2].type))} {base} = {self.x(b[2])};")
            buf, n = self.pack(b[3])
            top = self.fresh("_m")
            self.e(f"{cint(width(b[4].type))} {top} = {self.x(b[4])};")
            h = alg_call(algo, buf, n)
            self.e(f"{dst} = ({top} ? {base} + ({h}) % {top} : {base}) & {mask(w)};")
            self.e("}")
        elif name in ("verify_checksum", "update_checksum", "verify_checksum_with_payload",
                      "update_checksum_with_payload"):
            algo = str(b[3].const_value)
            if algo not in ALGORITHMS:
                raise Unsupported(c, f"the checksum algorithm {algo}")
            self.e(f"if ({self.x(b[0])}) {{")
            buf, n = self.pack(b[1])
            h = alg_call(algo, buf, n)
            if name.endswith("_with_payload"):
                h = f"with_payload(p, {alg_ref(algo)}, {buf}, {n})"
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
            flat = self.flatten(b[1])
            if any(w > 64 for _c, w, _v in flat):
                raise Unsupported(c, "log_msg of values wider than 64 bits")
            items = [code for code, _w, _v in flat]
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
                if w > 64:
                    raise Unsupported(c, "digests of values wider than 64 bits")
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
        items = self.flatten(e, calc=True)
        total = sum(abs(w) for _, w, _ in items)
        buf, wr = self.fresh("_buf"), self.fresh("_wr")
        self.e(f"uint8_t {buf}[{(total + 7) // 8 + 1}]; wr_t {wr} = {{{buf}, 0, {(total + 7) // 8 + 1}, 0}};")
        for code, w, valid in items:
            if w < 0:  # a varbit: its current width
                put = f"for (uint32_t _i = 0; _i < {code}.w / 8; _i++) wr_bits(&{wr}, {code}.b[_i], 8);"
            else:
                put = f"wr_bits{'128' if w > 64 else ''}(&{wr}, {code}, {w});"
            self.e(put if valid is None else f"if ({valid}) {{ {put} }}")
        return buf, f"wr_bytes(&{wr})"

    def flatten(self, e: A.Expression, calc: bool = False) -> list[tuple[str, int, str | None]]:
        """(value, width, validity) of each scalar of a field list; with calc (hashes and
        checksums, codegen's flatten_calc) a varbit is (its l-value, -its maximum width), else
        it is left out (codegen's flatten)."""
        if isinstance(e, A.ListExpr):
            return [x for it in e.items for x in self.flatten(it, calc)]
        if isinstance(e, A.StructInitExpr):
            return [x for _, it in e.fields for x in self.flatten(it, calc)]
        t = rt(e.type)
        if isinstance(t, T.StructLike | T.HeaderStack):
            return self.flatten_value(self.lval(e), t, None, e, calc)
        valid = None
        if isinstance(e, A.MemberExpr) and e.kind is MK.FIELD and isinstance(rt(e.expr.type), T.HeaderType):
            valid = f"{self.lval(e.expr)}.valid"
        if isinstance(t, T.Varbit):
            return [(self.lval(e), -t.max_width, valid)] if calc else []
        return [(self.x(e), width(t), valid)]

    def flatten_value(self, base: str, t: T.P4Type, valid: str | None, node: Any,
                      calc: bool = False) -> list[tuple[str, int, str | None]]:
        t = rt(t)
        if isinstance(t, T.HeaderStack):
            return [x for i in range(t.size)
                    for x in self.flatten_value(f"{base}.e[{i}]", t.element, valid, node, calc)]
        if isinstance(t, T.StructLike):
            own = f"{base}.valid" if isinstance(t, T.HeaderType) else valid
            return [x for f in t.fields for x in self.flatten_value(f"{base}.f_{f.name}", f.type, own, node, calc)]
        if isinstance(t, T.Varbit):
            return [(base, -t.max_width, valid)] if calc else []
        w = width(t)
        if not w or w > 128:
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
