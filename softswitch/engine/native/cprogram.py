"""The whole program as one C unit: the six V1Switch blocks and BMv2's pipeline around them.

`program_source(built)` returns `(source, layout)`: the C text and what the
Python side needs to drive it (`Layout`: tables with their action order and key
count, registers, counters, the largest deparser output). The pipeline in C is
the one `softswitch.engine.switch` runs for a packet from a port: parser,
verifyChecksum, ingress, then multicast (one copy per replica), drop or unicast;
per copy egress, drop, computeChecksum and deparser; clone, resubmit and
recirculate requests are carried out in BMv2's order (the job pipeline), and
digests and truncate are handled as the Python engine handles them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from softswitch.frontend import ast as A
from softswitch.frontend import types as T

from ..codegen.values import rt
from . import cruntime
from .cgen import (
    ALGORITHMS,
    LOG_VALUES,
    MAX_KEYS,
    MAX_LOGS,
    PARSER_STEPS,
    CGen,
    Unsupported,
    alg_call,
    cint,
    is_scalar,
    mask,
    width,
)
from .cpasses import job_driver

ROLES = ("parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser")

CDEF = """
typedef struct sw sw_t;
typedef struct { uint32_t port; uint32_t off; uint32_t len; } ss_out_t;
sw_t *ss_new(void);
int ss_vs_set(sw_t *sw, uint32_t id, uint32_t n, uint32_t nk, const uint64_t *v, const uint64_t *m,
              const uint8_t *hm);
int ss_crc_set(sw_t *sw, uint32_t which, uint32_t width, uint64_t poly, uint64_t init, uint64_t xor_out,
               int refin, int refout);
void ss_free(sw_t *sw);
int ss_table_load(sw_t *sw, uint32_t tid, uint32_t linear, uint32_t n, const uint64_t *a,
                  const uint64_t *b, const uint8_t *kind, const uint32_t *action,
                  const uint64_t *args, uint32_t def_action, const uint64_t *def_args);
uint64_t *ss_register(sw_t *sw, uint32_t rid);
uint64_t *ss_counter_packets(sw_t *sw, uint32_t cid);
uint64_t *ss_counter_bytes(sw_t *sw, uint32_t cid);
int ss_meter_set(sw_t *sw, uint32_t mid, uint32_t index, uint64_t cir, uint64_t cburst, uint64_t pir,
                 uint64_t pburst);
int ss_meter_get(sw_t *sw, uint32_t mid, uint32_t index, uint64_t *config);
int ss_mc_set(sw_t *sw, uint32_t gid, uint32_t n, const uint16_t *ports, const uint16_t *rids);
void ss_mc_del(sw_t *sw, uint32_t gid);
int ss_clone_set(sw_t *sw, uint64_t sid, uint32_t n, const uint16_t *ports, const uint16_t *rids,
                 uint64_t trunc);
void ss_clone_clear(sw_t *sw);
int ss_direct_counter(sw_t *sw, uint32_t tid, uint32_t pos, int write, uint64_t *cells);
int ss_table_groups(sw_t *sw, uint32_t tid, uint32_t ngrp, const uint32_t *grp_len, uint32_t nmem,
                    const uint32_t *mem_action, const uint64_t *mem_args);
int ss_direct_meter(sw_t *sw, uint32_t tid, uint32_t pos, int write, uint64_t *cfg, double *buckets);
int ss_process(sw_t *sw, uint32_t port, const uint8_t *data, uint32_t len, uint64_t now,
               ss_out_t *outs, uint32_t max_outs, uint8_t *buf, uint32_t cap, uint32_t *dropped,
               uint32_t *dg_type, uint64_t *dg_vals, uint32_t max_dg, uint32_t *ndg);
uint32_t ss_logs(sw_t *sw, uint32_t *ids, uint32_t *counts, uint64_t *values);
uint64_t ss_process_batch(sw_t *sw, uint32_t n, const uint32_t *ports, const uint8_t *data,
                          const uint32_t *offs, const uint32_t *lens, uint64_t now,
                          uint8_t *scratch, uint32_t cap, uint64_t *out_bytes, uint32_t *dropped);
"""


@dataclass
class TableLayout:
    """One table as the C side holds it."""

    name: str
    actions: list[str]  # action names; an entry's action is its index here
    nkeys: int
    nargs: int
    direct_counter: bool = False
    direct_meter: bool = False


@dataclass
class Layout:
    """What engine.py needs to fill and read the C state."""

    tables: list[TableLayout] = field(default_factory=list)
    registers: list[tuple[str, int, int]] = field(default_factory=list)  # (name, size, width)
    counters: list[tuple[str, int]] = field(default_factory=list)  # (name, size)
    meters: list[tuple[str, int, str]] = field(default_factory=list)  # (name, size, unit)
    emit_max: int = 0  # bytes the deparser can emit at most
    digests: list[tuple[str, list[tuple[str, int]]]] = field(default_factory=list)  # (name, fields)
    digest_width: int = 1  # values per digest in the C buffer
    uses_passes: bool = False  # clone, resubmit or recirculate (the job pipeline)
    log_texts: list[str] = field(default_factory=list)  # log_msg messages, by number
    value_sets: list[tuple[str, int]] = field(default_factory=list)  # (name, words per member)


class ProgramC(CGen):
    """CGen plus the program-level parts."""

    def __init__(self, built: Any) -> None:
        super().__init__(built.gen.program, built.gen)
        self.built = built
        self.layout = Layout()
        # (id(instance), enclosing codegen prefix) -> (C function, declaration, parameter slots)
        self.subs: dict[tuple[int, str], tuple[str, Any, list[tuple[str, str] | None]]] = {}
        self.value_sets: list[tuple[str, int]] = []  # (control-plane name, words per member)
        self.vs_ids: dict[int, int] = {}

    # ---------------------------------------------------------------- blocks

    def block_params(self, decl: Any, role: str) -> None:
        self.gen.prefix = role  # extern instances are found per top-level block, as codegen named them
        by_role: dict[str, list[str | None]] = {"parser": [None, "p->hdr", "p->meta", "p->sm"],
                 "verify_checksum": ["p->hdr", "p->meta"], "compute_checksum": ["p->hdr", "p->meta"],
                 "ingress": ["p->hdr", "p->meta", "p->sm"], "egress": ["p->hdr", "p->meta", "p->sm"],
                 "deparser": [None, "p->hdr"]}
        names = by_role[role]
        for prm, cname in zip(decl.params, names, strict=False):
            if cname is not None:
                self.vars[id(prm)] = cname

    def control_locals(self, decl: Any) -> list[str]:
        """Control-level variables live in the packet; returns their reset statements."""
        resets = []
        for d in decl.locals:
            if isinstance(d, A.VariableDecl):
                name = self.fresh(f"cl_{d.name}_")
                ct = self.ctype(d.type, d)
                self.pkt_fields.append(f"    {ct} {name};")
                self.vars[id(d)] = f"p->{name}"
                if is_scalar(ct):
                    resets.append(f"p->{name} = {self.x(d.init) if d.init is not None else '0'};")
                else:
                    resets.append(f"memset(&p->{name}, 0, sizeof p->{name});")
                    if d.init is not None:
                        raise Unsupported(d, "initialised aggregate control variables")
            elif isinstance(d, A.Instantiation):
                t = d.type.base if isinstance(d.type, T.SpecializedType) else d.type
                if not isinstance(t, T.ExternType):
                    self.compile_sub(d)
            elif isinstance(d, A.ValueSetDecl):
                self.value_set_id(d)
        return resets

    def compile_control(self, decl: A.ControlDecl, role: str) -> None:
        self.block_params(decl, role)
        self.control_fn(decl, f"CTL_{role}", self.control_locals(decl))

    def control_fn(self, decl: A.ControlDecl, fn: str, resets: list[str]) -> None:
        """The control's actions and tables, then `void fn(pkt_t *p)` running its body."""
        for d in decl.locals:
            if isinstance(d, A.ActionDecl):
                self.compile_action(d)
        for d in decl.locals:
            if isinstance(d, A.TableDecl):
                self.compile_table(d)
        self.out = []
        self.e(f"static void {fn}(pkt_t *p) {{")
        for r in resets:
            self.e(r)
        self.block(decl.body.stmts)
        self.e("}")
        self.fns.append("\n".join(self.out))

    def compile_sub(self, d: A.Instantiation) -> None:
        """A control or parser instantiated inside another: one C function per instance (as
        codegen compiles one per instance path). Its parameters are pointers kept in the
        packet, set by each apply, so that its actions and tables reach them too; its
        variables are reset at each apply."""
        t = d.type.base if isinstance(d.type, T.SpecializedType) else d.type
        decl = getattr(t, "decl", None)
        if not isinstance(decl, A.ControlDecl | A.ParserDecl):
            raise Unsupported(d, f"instances of {t}")
        if decl.ctor_params:
            raise Unsupported(d, "sub-control and sub-parser instances with constructor parameters")
        outer = self.gen.prefix
        fn = f"SUB_{len(self.subs)}"
        slots: list[tuple[str, str] | None] = []
        for prm in decl.params:
            pt = prm.type.base if isinstance(prm.type, T.SpecializedType) else prm.type
            if isinstance(pt, T.ExternType):
                if getattr(pt, "name", "") not in ("packet_in", "packet_out"):
                    raise Unsupported(prm, "extern parameters of sub-controls and sub-parsers")
                slots.append(None)  # the packet is the context p
                continue
            ct = self.ctype(prm.type, prm)
            name = self.fresh(f"sp_{prm.name}_")
            self.pkt_fields.append(f"    {ct} *{name};")
            self.vars[id(prm)] = f"(*p->{name})"
            slots.append((name, ct))
        self.subs[(id(d), outer)] = (fn, decl, slots)
        self.protos.append(f"static void {fn}(pkt_t *p);")
        saved = (self.out, self.in_parser)
        self.gen.prefix = f"{outer}/{d.name}"
        try:
            resets = self.control_locals(decl)
            if isinstance(decl, A.ParserDecl):
                self.parser_fn(decl, fn, resets, sub=True)
            else:
                self.control_fn(decl, fn, resets)
        finally:
            self.out, self.in_parser = saved
            self.gen.prefix = outer

    def call_block(self, c: A.CallExpr) -> None:
        """apply() of a sub-control or sub-parser: arguments evaluated and copied in left to
        right, copied out in order after the call (spec 6.8); an aggregate codegen passes by
        reference (gen.can_alias) is passed by pointer here too, so that a sub-parser's
        reject leaves the same state as on the Python engine (which copies nothing back)."""
        sub = self.subs.get((id(c.target), self.gen.prefix))
        if sub is None:
            raise Unsupported(c, "this apply of a sub-control or sub-parser")
        fn, decl, slots = sub
        args = list(c.bound_args)
        backs = []
        self.e("{")
        for i, (prm, slot, a) in enumerate(zip(decl.params, slots, args, strict=False)):
            if slot is None:
                continue
            name, ct = slot
            agg = not is_scalar(ct)
            if a is None:
                raise Unsupported(c, f"no argument for {prm.name}")
            if agg and prm.direction in ("out", "inout") and self.gen.can_alias(args, i, decl):
                lv = self.lval(a)
                if prm.direction == "out":  # out parameters start invalid (spec 6.8)
                    self.e(f"memset(&{lv}, 0, sizeof {lv});")
                self.e(f"p->{name} = &{lv};")
                continue
            t = self.fresh("_sa")
            if prm.direction == "out":
                self.e(f"{ct} {t}; memset(&{t}, 0, sizeof {t});")
            else:
                self.e(f"{ct} {t} = {self.lval(a) if agg else self.x(a)};")
            self.e(f"p->{name} = &{t};")
            if prm.direction in ("out", "inout"):
                backs.append((self.lval(a), t))
        if isinstance(decl, A.ParserDecl):
            # a reject in the sub-parser rejects the packet, nothing copied back (as the
            # Python engine's exception)
            self.e(f"p->prej = 0; {fn}(p); if (p->exited) return; if (p->prej) goto reject;")
        else:
            self.e(f"{fn}(p);")
        for lv, t in backs:
            self.e(f"{lv} = {t};")
        self.e(f"{self.exit_check()} }}")

    def compile_action(self, decl: A.ActionDecl) -> None:
        info = self.action_info(decl, decl)
        if info.name in self.action_fn:
            return
        fn = f"A_{len(self.action_fn)}"
        self.action_fn[info.name] = fn
        i = 0
        extra: list[str] = []
        for prm in decl.params:
            if prm.direction:
                # copy-in/copy-out through a temporary the caller owns (spec 6.8)
                ct = self.ctype(prm.type, prm)
                name = f"io_{len(extra)}"
                extra.append(f", {ct} *{name}")
                self.vars[id(prm)] = f"(*{name})"
                continue
            w = width(prm.type)
            if not w or w > 128:
                raise Unsupported(prm, f"action parameters of type {prm.type}")
            if w > 64:  # two words of action data, high first (engine.py splits them)
                self.vars[id(prm)] = f"U128(d[{i}], d[{i + 1}])"
                i += 2
                continue
            self.vars[id(prm)] = f"d[{i}]"
            i += 1
        sig = f"static void {fn}(pkt_t *p, const u64 *d{''.join(extra)})"
        self.protos.append(sig + ";")
        saved = self.out
        self.out = []
        self.e(sig + " { (void)d;")
        self.block(decl.body.stmts)
        self.e("}")
        self.fns.append("\n".join(self.out))
        self.out = saved

    def compile_table(self, d: A.TableDecl) -> None:
        info = self.gen.table_by_decl.get((id(d), self.gen.prefix))
        if info is None:
            raise Unsupported(d, "this table here")
        algo = ""
        if info.profile:
            profile = self.built.ns[info.profile]
            if profile.with_selector:
                algo = profile.algorithm
                if algo not in ALGORITHMS:
                    raise Unsupported(d, f"the selector algorithm {algo}")
        dm_unit = ""
        if info.direct_meter:
            spec = self.built.ns[info.direct_meter]
            dm_unit = spec.unit
        table = self.built.tables[info.name]
        match_keys = [k for k in d.keys if k.match_kind != "selector"]
        # a key field of 65..128 bits is two words of the C key, high first (engine.py's _tests)
        words = [2 if width(k.expr.type) > 64 else 1 for k in match_keys]
        if sum(words) > MAX_KEYS:
            raise Unsupported(d, f"tables with more than {MAX_KEYS} key words")
        for k in d.keys:
            w = width(k.expr.type)
            if not w or w > 128:
                raise Unsupported(k, f"key fields of type {k.expr.type}")
            if w > 64 and k.match_kind == "range":
                raise Unsupported(k, "range key fields wider than 64 bits")
        tid = len(self.layout.tables)
        self.table_ids[(id(d), self.gen.prefix)] = tid
        names = list(table.action_specs)
        bound = {}  # action name -> the actions list's call with its directional arguments
        for ref in d.actions:
            if any(prm.direction for prm in ref.action.params):
                if ref.call is None:
                    raise Unsupported(ref, "this table action's directional parameters")
                bound[self.action_info(ref.action, ref).name] = ref.call
        nargs = max((sum(2 if w > 64 else 1 for _n, w in s.params) for s in table.action_specs.values()),
                    default=0)
        self.layout.tables.append(TableLayout(info.name, names, sum(words), nargs,
                                              bool(info.direct_counter), bool(info.direct_meter)))
        if info.direct_meter:
            self.direct_meter_of[id(self.built.ns[info.direct_meter])] = True
        self.table_actions.append(names)
        saved = self.out
        self.out = []
        self.protos.append(f"static uint32_t TA_{tid}(pkt_t *p);")
        self.e(f"static uint32_t TA_{tid}(pkt_t *p) {{")
        self.e(f"u64 k[{max(sum(words), 1)}] = {{0}};")
        sel_vals = []
        for k in d.keys:  # evaluated in order, match and selector keys alike (spec 14.2.1.1)
            w = width(k.expr.type)
            if k.match_kind == "selector":
                v = self.fresh("_sk")
                self.e(f"{cint(w)} {v} = {self.x(k.expr)};")
                sel_vals.append((v, w))
                continue
            at = sum(words[:match_keys.index(k)])
            if w > 64:
                v = self.fresh("_wk")
                self.e(f"u128 {v} = {self.x(k.expr)}; k[{at}] = (u64)({v} >> 64); k[{at + 1}] = (u64){v};")
            else:
                self.e(f"k[{at}] = {self.x(k.expr)};")
        self.e(f"tbl_t *t = &p->sw->tbl[{tid}];")
        self.e("int32_t e = tbl_lookup(t, k);")
        if info.direct_counter:  # every hit counts (BMv2), whatever the action does
            self.e("if (e >= 0) { t->dc_p[e]++; t->dc_b[e] += p->len; }")
        if info.direct_meter:  # every hit runs the meter before the action (BMv2)
            amount = "1" if dm_unit == "packets" else "p->len"
            self.e(f"if (e >= 0) {{ p->dm = meter_exec(&t->dm[e], {amount}, p->now);")
            for dest in self.gen.direct_meter_targets(info):
                self.e(f"{self.lval(dest)} = p->dm & {mask(width(dest.type))};")
            self.e("}")
        self.e("int hit = e >= 0;")
        self.e("uint32_t a = e < 0 ? t->def_action : t->action[e];")
        self.e(f"const u64 *d = e < 0 ? t->def_args : t->args + (size_t)e * {nargs};")
        if info.profile:
            # an entry naming a selector group: a member picked by the hash of the selector
            # keys (BMv2: members in handle order); an empty group runs the default, a miss
            self.e("if (hit && (a & 0x80000000u)) {")
            self.e("uint32_t g = a & 0x7fffffffu, n = t->grp_len[g];")
            self.e("if (!n) { hit = 0; a = t->def_action; d = t->def_args; }")
            self.e("else {")
            total = sum(w for _, w in sel_vals)
            cap = (total + 7) // 8 + 1
            self.e(f"uint8_t sb[{cap}]; wr_t sw_ = {{sb, 0, {cap}, 0}};")
            for v, w in sel_vals:
                self.e(f"wr_bits{'128' if w > 64 else ''}(&sw_, {v}, {w});")
            h = alg_call(algo, "sb", "wr_bytes(&sw_)") if algo else "0"
            self.e(f"uint32_t m = t->grp_off[g] + (uint32_t)(({h}) % n);")
            self.e(f"a = t->mem_action[m]; d = t->mem_args + (size_t)m * {nargs}; }} }}")
        self.e("(void)d; switch (a) {")
        for i, n in enumerate(names):
            fn = self.action_fn.get(n)
            if fn is None:
                ainfo = next((a for a in self.gen.actions if a.name == n), None)
                if ainfo is None:
                    raise Unsupported(d, f"the action {n}")
                self.compile_action(ainfo.decl)
                fn = self.action_fn[n]
            if n in bound:
                self.e(f"case {i}: {{")
                self.call_with_dirs(bound[n], fn, "d")
                self.e("} break;")
            else:
                self.e(f"case {i}: {fn}(p, d); break;")
        self.e("default: break; }")
        self.e("return (hit ? 0x10000u : 0u) | a;")
        self.e("}")
        self.fns.append("\n".join(self.out))
        self.out = saved

    def compile_parser(self, decl: A.ParserDecl) -> None:
        self.block_params(decl, "parser")
        self.parser_fn(decl, "CTL_parser", self.control_locals(decl), sub=False)

    def parser_fn(self, decl: A.ParserDecl, fn: str, resets: list[str], sub: bool) -> None:
        """`void fn(pkt_t *p)` running the states; a sub-parser's reject sets p->prej (its
        caller rejects) and its state transitions are counted on their own, as codegen's."""
        self.in_parser = True
        self.out = []
        self.e(f"static void {fn}(pkt_t *p) {{")
        self.e("uint32_t steps = 0; (void)steps;")
        for r in resets:
            self.e(r)
        labels = {id(st): f"st_{i}" for i, st in enumerate(decl.states)}
        start = next((s for s in decl.states if s.name == "start"), None)
        if start is None:
            raise Unsupported(decl, "a parser without a start state")
        self.e(f"goto {labels[id(start)]};")
        for st in decl.states:
            if st.name in ("accept", "reject") and st.transition is None:
                continue
            self.e(f"{labels[id(st)]}: {{")
            self.block(st.stmts)
            tr = st.transition
            if tr is None:
                self.e(self.goto("accept_"))
            elif isinstance(tr, A.PathExpr):
                self.e(self.goto(self.target(tr, labels)))
            elif isinstance(tr, A.SelectExpr):
                self.select(tr, labels)
            else:
                raise Unsupported(tr, "this transition")
            self.e("}")
        self.e("accept_: return;")
        too_short = self.err_code("PacketTooShort")
        if sub:
            self.e("reject: p->prej = 1; return;")
            self.e(f"too_short: p->perr = {too_short}; p->prej = 1; return;")
        else:
            self.e("reject: if (p->perr) p->sm.f_parser_error = p->perr; return;")
            self.e(f"too_short: p->sm.f_parser_error = {too_short}; return;")
        self.e("}")
        self.in_parser = False
        self.fns.append("\n".join(self.out))

    def goto(self, label: str) -> str:
        if label == "reject":
            return "goto reject;"
        timeout = self.err_code("ParserTimeout")
        return f"if (++steps > {PARSER_STEPS}) {{ p->perr = {timeout}; goto reject; }} goto {label};"

    def target(self, path: A.PathExpr, labels: dict[int, str]) -> str:
        st = path.decl
        if path.name == "accept" or getattr(st, "name", None) == "accept":
            return "accept_"
        if path.name == "reject" or getattr(st, "name", None) == "reject":
            return "reject"
        label = labels.get(id(st))
        if label is None:
            raise Unsupported(path, f"the state {path.name}")
        return label

    def select(self, sel: A.SelectExpr, labels: dict[int, str]) -> None:
        keys = []
        for k in sel.keys:
            v = self.fresh("_k")
            if width(k.type) > 64 and self.uses_value_set(sel):
                raise Unsupported(k, "parser value sets of keys wider than 64 bits")
            self.e(f"{cint(width(k.type))} {v} = {self.x(k)};")
            keys.append(v)
        for case in sel.cases:
            ks = case.keyset
            items = ks.items if isinstance(ks, A.ListExpr) else [ks]
            conds = []
            if len(keys) > 1 and isinstance(ks, A.PathExpr) and isinstance(ks.decl, A.ValueSetDecl):
                # one value set for all the keys: members are tuples (runtime.ValueSet.match)
                kv = self.fresh("_kv")
                self.e(f"{{ u64 {kv}[] = {{{', '.join(keys)}}};")
                vid = self.value_set_id(ks.decl, len(keys))
                self.e(f"if (vs_match(&p->sw->vs[{vid}], {kv}, {len(keys)})) {{ "
                       f"{self.goto(self.target(case.state, labels))} }} }}")
                continue
            for v, item in zip(keys, items, strict=False):
                if isinstance(item, A.DefaultExpr | A.DontCareExpr):
                    continue
                if isinstance(item, A.MaskExpr):
                    m = self.x(item.mask)
                    conds.append(f"(({v} & {m}) == ({self.x(item.value)} & {m}))")
                elif isinstance(item, A.RangeExpr):
                    conds.append(f"({self.x(item.lo)} <= {v} && {v} <= {self.x(item.hi)})")
                elif isinstance(item, A.PathExpr) and isinstance(item.decl, A.ValueSetDecl):
                    conds.append(f"vs_match(&p->sw->vs[{self.value_set_id(item.decl, 1)}], &{v}, 1)")
                else:
                    conds.append(f"({v} == {self.x(item)})")
            go = self.goto(self.target(case.state, labels))
            if not conds:
                self.e(go)
                return
            self.e(f"if ({' && '.join(conds)}) {{ {go} }}")
        self.e(f"p->perr = {self.err_code('NoMatch')}; goto reject;")

    def uses_value_set(self, sel: A.SelectExpr) -> bool:
        return any(isinstance(i, A.PathExpr) and isinstance(i.decl, A.ValueSetDecl)
                   for c in sel.cases for i in (c.keyset.items if isinstance(c.keyset, A.ListExpr) else [c.keyset]))

    def value_set_id(self, d: A.ValueSetDecl, nk: int = 0) -> int:
        """A parser value set's index in C (members loaded by engine.py); nk: the words of
        a member, from the select that uses it."""
        vid = self.vs_ids.get(id(d))
        if vid is None:
            names = [fq for decl, _g, fq in self.gen.value_sets if decl is d]
            if len(names) != 1:
                raise Unsupported(d, "a value set of a parser instantiated more than once")
            vid = self.vs_ids[id(d)] = len(self.value_sets)
            self.value_sets.append((names[0], 0))
        name, have = self.value_sets[vid]
        if nk and have and nk != have:
            raise Unsupported(d, "a value set used by selects of different key counts")
        if nk:
            self.value_sets[vid] = (name, nk)
        return vid

    def compile_deparser(self, decl: A.ControlDecl) -> None:
        self.block_params(decl, "deparser")
        resets = self.control_locals(decl)
        self.out = []
        self.e("static void CTL_deparser(pkt_t *p) {")
        for r in resets:
            self.e(r)
        self.block(decl.body.stmts)
        self.e("}")
        self.fns.append("\n".join(self.out))

    def field_list_fn(self) -> str:
        """C copying the metadata fields annotated @field_list(n) (resubmit, recirculate, clone)."""
        lists: dict[int, list[str]] = {}

        def walk(t: Any, path: str) -> None:
            t = rt(t)
            if not isinstance(t, T.StructLike):
                return
            for f in t.fields:
                for ann in f.annotations or []:
                    if getattr(ann, "name", None) == "field_list":
                        for arg in ann.args or []:
                            if isinstance(arg, int):
                                lists.setdefault(arg, []).append(f"{path}.f_{f.name}")
                if isinstance(rt(f.type), T.StructLike):
                    walk(f.type, f"{path}.f_{f.name}")

        walk(self.meta_t, "")
        cases = "".join(f"    case {i}: " + " ".join(f"dst->{p[1:]} = src->{p[1:]};" for p in paths)
                        + " break;\n" for i, paths in sorted(lists.items()))
        return (f"static void field_list(u64 idx, const {self.meta_c} *src, {self.meta_c} *dst) {{\n"
                f"    (void)src; (void)dst;\n    switch (idx) {{\n{cases}    default: break;\n    }}\n}}\n")

    # ---------------------------------------------------------------- program

    def source(self) -> str:
        main = self.program.main
        if main is None:
            raise Unsupported(self.program.ast, "programs without a V1Switch main")
        self.may_exit = True  # exit, assert and assume leave through p->exited
        for d in self.program.ast.decls:
            if isinstance(d, A.ActionDecl):
                self.compile_action(d)
        for info in self.gen.externs:  # every register and counter is readable by the control plane
            if info.type_name == "register":
                self.register_id(info)
            elif info.type_name == "counter":
                self.counter_id(info)
            elif info.type_name == "meter":
                self.meter_id(info)
        decls = {role: getattr(main, role) for role in ROLES}
        for role, d in decls.items():
            # a control serving two blocks (an empty checksum control, say) is compiled once per
            # block; its actions, tables and variables would be shared between them
            shared = [r for r, o in decls.items() if o is d]
            if len(shared) > 1 and any(isinstance(x, A.ActionDecl | A.TableDecl | A.VariableDecl)
                                       for x in getattr(d, "locals", [])):
                raise Unsupported(getattr(main, "instantiation", None) or main,
                                  f"one control with actions, tables or variables used for "
                                  f"two V1Switch blocks ({role})")
        params = main.parser.params
        self.hdr_t, meta_t, sm_t = rt(params[1].type), rt(params[2].type), rt(params[3].type)
        hdr_c = self.ctype(self.hdr_t, params[1])
        meta_c = self.ctype(meta_t, params[2])
        sm_c = self.ctype(sm_t, params[3])
        sm_fields = {f.name for f in sm_t.fields} if isinstance(sm_t, T.StructLike) else set()
        for ctor in _instance_args(main):
            if ctor:
                raise Unsupported(getattr(main, "instantiation", None) or main,
                                  "V1Switch blocks with constructor arguments")
        self.compile_parser(decls["parser"])
        for role in ("verify_checksum", "ingress", "egress", "compute_checksum"):
            self.compile_control(decls[role], role)
        self.compile_deparser(decls["deparser"])
        self.layout.registers = list(self.registers)
        self.layout.counters = list(self.counters)
        self.layout.meters = list(self.meters)
        self.layout.emit_max = (sum(self.emit_sizes) + 7) // 8
        self.layout.digests = list(self.digests)
        self.layout.digest_width = self.digest_width
        self.layout.uses_passes = self.uses_passes
        self.layout.log_texts = list(self.log_texts)
        self.layout.value_sets = [(name, nk or 1) for name, nk in self.value_sets]
        self.meta_c = meta_c
        self.meta_t = meta_t
        return self.assemble(hdr_c, meta_c, sm_c, sm_fields)

    def assemble(self, hdr_c: str, meta_c: str, sm_c: str, sm_fields: set[str]) -> str:
        nt, nr, nc = len(self.layout.tables), len(self.registers), len(self.counters)
        nm = len(self.meters)

        def sm(name: str, value: str, q: str = "q") -> str:
            return f"{q}->sm.f_{name} = {value};" if name in sm_fields else ""

        ts48 = mask(48)
        if self.uses_passes:
            driver = job_driver(sm, ts48, self.field_list_fn())
        else:
            driver = straight_driver(sm, ts48, sm_fields)
        parts = [cruntime.PRELUDE, "".join(self.type_src), cruntime.TABLES]
        parts.append(f"""
typedef struct sw {{
    tbl_t tbl[{max(nt, 1)}];
    u64 *reg[{max(nr, 1)}];
    u64 *cnt_p[{max(nc, 1)}];
    u64 *cnt_b[{max(nc, 1)}];
    meter_t *met[{max(nm, 1)}];
    u64 rng;  /* random(): splitmix64 state */
    uint32_t nlog, log_id[{MAX_LOGS}], log_n[{MAX_LOGS}]; u64 log_v[{MAX_LOGS}][{LOG_VALUES}];
    mc_t *mc; uint32_t nmc;  /* multicast groups (a switch has few: searched in order) */
    sess_t *sess; uint32_t nsess;  /* clone sessions */
    crcp_t crc[2];  /* crc16_custom, crc32_custom */
    vs_t vs[{max(len(self.value_sets), 1)}];  /* parser value sets */
}} sw_t;
typedef struct pkt {{
    {hdr_c} hdr;
    {meta_c} meta;
    {sm_c} sm;
    sw_t *sw;
    const uint8_t *data;
    uint32_t len, pos, plen, payload;
    u64 now, perr, trunc, dm;
    int exited, abort, prej;  /* prej: a sub-parser rejected */
    u64 loops;  /* for-loop iterations of this pass (cgen.loop_head) */
    int ci, ce, resub, recirc;  /* requests of clone I2E / E2E, resubmit, recirculate */
    u64 ci_sess, ci_fl, ce_sess, ce_fl, resub_fl, recirc_fl;
    uint32_t dg;  /* 1 + the digest type of the last digest() of the pass, 0: none */
    u64 dgv[{self.digest_width}];
    wr_t out;
{chr(10).join(self.pkt_fields)}
}} pkt_t;
void ss_clone_clear(sw_t *sw);
/* log_msg: kept until engine.py logs them after the packet (ss_logs) */
static void log_out(pkt_t *p, uint32_t id, uint32_t n, const u64 *v) {{
    sw_t *sw = p->sw;
    if (sw->nlog >= {MAX_LOGS}) return;
    sw->log_id[sw->nlog] = id; sw->log_n[sw->nlog] = n;
    memcpy(sw->log_v[sw->nlog], v, sizeof(u64) * n);
    sw->nlog++;
}}
uint32_t ss_logs(sw_t *sw, uint32_t *ids, uint32_t *counts, uint64_t *values) {{
    uint32_t n = sw->nlog;
    for (uint32_t i = 0; i < n; i++) {{
        ids[i] = sw->log_id[i]; counts[i] = sw->log_n[i];
        memcpy(values + (size_t)i * {LOG_VALUES}, sw->log_v[i], sizeof(u64) * {LOG_VALUES});
    }}
    sw->nlog = 0;
    return n;
}}
static inline u64 rng_next(sw_t *sw) {{
    u64 z = (sw->rng += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}}
/* a checksum over packed fields then the unparsed payload (*_with_payload) */
static u64 with_payload(pkt_t *p, u64 (*alg)(const uint8_t *, uint32_t), const crcp_t *c, const uint8_t *buf,
                        uint32_t n) {{
    uint32_t rest = p->len - p->payload;
    uint8_t *tmp = malloc((size_t)n + rest + 1);
    if (!tmp) {{ p->abort = 1; return 0; }}
    memcpy(tmp, buf, n);
    memcpy(tmp + n, p->data + p->payload, rest);
    u64 h = alg ? alg(tmp, n + rest) : crc_custom(c, tmp, n + rest);
    free(tmp);
    return h;
}}
#define NEED(w) do {{ if ((u64)p->pos + (u64)(w) > (u64)p->len * 8) goto too_short; }} while (0)
""")
        parts.append("\n".join(self.protos))
        parts.append("\n\n".join(self.fns))
        sizes_r = ", ".join(str(s) for _, s, _ in self.registers) or "0"
        sizes_c = ", ".join(str(s) for _, s in self.counters) or "0"
        nargs = ", ".join(str(t.nargs) for t in self.layout.tables) or "0"
        nkeys = ", ".join(str(t.nkeys) for t in self.layout.tables) or "0"
        parts.append(f"""
static const uint32_t REG_SIZE[] = {{{sizes_r}}};
static const uint32_t CNT_SIZE[] = {{{sizes_c}}};
static const uint32_t MET_SIZE[] = {{{", ".join(str(m[1]) for m in self.meters) or "0"}}};
static const uint32_t TBL_NARGS[] = {{{nargs}}};
static const uint32_t TBL_NKEYS[] = {{{nkeys}}};
static const int TBL_DC[] = {{{", ".join(str(int(t.direct_counter)) for t in self.layout.tables) or "0"}}};
static const int TBL_DM[] = {{{", ".join(str(int(t.direct_meter)) for t in self.layout.tables) or "0"}}};
static int crc_ready = 0;

void ss_free(sw_t *sw) {{
    if (!sw) return;
    for (int i = 0; i < {len(self.value_sets)}; i++) {{ free(sw->vs[i].v); free(sw->vs[i].m); free(sw->vs[i].hm); }}
    for (int i = 0; i < {nt}; i++) {{ tbl_free(&sw->tbl[i]); free(sw->tbl[i].def_args); }}
    for (int i = 0; i < {nr}; i++) free(sw->reg[i]);
    for (int i = 0; i < {nc}; i++) {{ free(sw->cnt_p[i]); free(sw->cnt_b[i]); }}
    for (int i = 0; i < {nm}; i++) free(sw->met[i]);
    for (uint32_t g = 0; g < sw->nmc; g++) {{ free(sw->mc[g].port); free(sw->mc[g].rid); }}
    free(sw->mc);
    ss_clone_clear(sw);
    free(sw);
}}

int ss_crc_set(sw_t *sw, uint32_t which, uint32_t width, uint64_t poly, uint64_t init, uint64_t xor_out,
               int refin, int refout) {{
    if (which > 1 || width < 8 || width > 64) return -1;
    crcp_set(&sw->crc[which], width, poly, init, xor_out, refin, refout);
    return 0;
}}

int ss_vs_set(sw_t *sw, uint32_t id, uint32_t n, uint32_t nk, const uint64_t *v, const uint64_t *m,
              const uint8_t *hm) {{
    if (id >= {len(self.value_sets)}) return -1;
    vs_t *s = &sw->vs[id];
    u64 *nv = malloc(sizeof(u64) * ((size_t)n * nk + 1)), *nm = malloc(sizeof(u64) * ((size_t)n + 1));
    uint8_t *nh = malloc((size_t)n + 1);
    if (!nv || !nm || !nh) {{ free(nv); free(nm); free(nh); return -1; }}
    if (n) {{ memcpy(nv, v, sizeof(u64) * n * nk); memcpy(nm, m, sizeof(u64) * n); memcpy(nh, hm, n); }}
    free(s->v); free(s->m); free(s->hm);
    s->v = nv; s->m = nm; s->hm = nh; s->n = n;
    return 0;
}}

sw_t *ss_new(void) {{
    if (!crc_ready) {{ crc_init(); crc_ready = 1; }}
    sw_t *sw = calloc(1, sizeof(sw_t));
    if (!sw) return NULL;
    crcp_set(&sw->crc[0], 16, 0x8005, 0, 0, 1, 1);  /* hashes.CRC16 */
    crcp_set(&sw->crc[1], 32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, 1, 1);  /* hashes.CRC32 */
    int ok = 1;
    for (int i = 0; i < {nt}; i++) {{
        sw->tbl[i].nk = TBL_NKEYS[i]; sw->tbl[i].nargs = TBL_NARGS[i];
        sw->tbl[i].has_dc = TBL_DC[i]; sw->tbl[i].has_dm = TBL_DM[i];
        sw->tbl[i].def_args = calloc(TBL_NARGS[i] ? TBL_NARGS[i] : 1, sizeof(u64));
        ok &= sw->tbl[i].def_args != NULL;
    }}
    for (int i = 0; i < {nr}; i++) {{ sw->reg[i] = calloc(REG_SIZE[i] ? REG_SIZE[i] : 1, sizeof(u64)); ok &= sw->reg[i] != NULL; }}
    for (int i = 0; i < {nc}; i++) {{
        sw->cnt_p[i] = calloc(CNT_SIZE[i] ? CNT_SIZE[i] : 1, sizeof(u64));
        sw->cnt_b[i] = calloc(CNT_SIZE[i] ? CNT_SIZE[i] : 1, sizeof(u64));
        ok &= sw->cnt_p[i] != NULL && sw->cnt_b[i] != NULL;
    }}
    for (int i = 0; i < {nm}; i++) {{ sw->met[i] = calloc(MET_SIZE[i] ? MET_SIZE[i] : 1, sizeof(meter_t)); ok &= sw->met[i] != NULL; }}
    if (!ok) {{ ss_free(sw); return NULL; }}
    return sw;
}}

/* the selector groups of a table's entries: group g's members are mem_*[off(g) .. off(g) + len(g)) */
int ss_table_groups(sw_t *sw, uint32_t tid, uint32_t ngrp, const uint32_t *grp_len, uint32_t nmem,
                    const uint32_t *mem_action, const uint64_t *mem_args) {{
    if (tid >= {nt}) return -1;
    return tbl_groups(&sw->tbl[tid], ngrp, grp_len, nmem, mem_action, mem_args);
}}

/* an entry's direct counter (packets, bytes) / meter (configured, cir, cburst, pir, pburst,
 * has_last, last_us; buckets tc, tp): read, or written (write != 0) */
int ss_direct_counter(sw_t *sw, uint32_t tid, uint32_t pos, int write, uint64_t *cells) {{
    if (tid >= {nt} || pos >= sw->tbl[tid].n || !sw->tbl[tid].dc_p) return -1;
    tbl_t *t = &sw->tbl[tid];
    if (write) {{ t->dc_p[pos] = cells[0]; t->dc_b[pos] = cells[1]; }}
    else {{ cells[0] = t->dc_p[pos]; cells[1] = t->dc_b[pos]; }}
    return 0;
}}

int ss_direct_meter(sw_t *sw, uint32_t tid, uint32_t pos, int write, uint64_t *cfg, double *buckets) {{
    if (tid >= {nt} || pos >= sw->tbl[tid].n || !sw->tbl[tid].dm) return -1;
    meter_t *m = &sw->tbl[tid].dm[pos];
    if (write) {{
        m->configured = (int)cfg[0]; m->cir = cfg[1]; m->cburst = cfg[2]; m->pir = cfg[3];
        m->pburst = cfg[4]; m->has_last = (int)cfg[5]; m->last_us = cfg[6];
        m->tc = buckets[0]; m->tp = buckets[1];
    }} else {{
        cfg[0] = (u64)m->configured; cfg[1] = m->cir; cfg[2] = m->cburst; cfg[3] = m->pir;
        cfg[4] = m->pburst; cfg[5] = (u64)m->has_last; cfg[6] = m->last_us;
        buckets[0] = m->tc; buckets[1] = m->tp;
    }}
    return 0;
}}

int ss_table_load(sw_t *sw, uint32_t tid, uint32_t linear, uint32_t n, const uint64_t *a,
                  const uint64_t *b, const uint8_t *kind, const uint32_t *action,
                  const uint64_t *args, uint32_t def_action, const uint64_t *def_args) {{
    if (tid >= {nt}) return -1;
    return tbl_load(&sw->tbl[tid], linear, n, a, b, kind, action, args, def_action, def_args);
}}
uint64_t *ss_register(sw_t *sw, uint32_t rid) {{ return rid < {nr} ? sw->reg[rid] : NULL; }}
uint64_t *ss_counter_packets(sw_t *sw, uint32_t cid) {{ return cid < {nc} ? sw->cnt_p[cid] : NULL; }}
uint64_t *ss_counter_bytes(sw_t *sw, uint32_t cid) {{ return cid < {nc} ? sw->cnt_b[cid] : NULL; }}

int ss_meter_set(sw_t *sw, uint32_t mid, uint32_t index, uint64_t cir, uint64_t cburst, uint64_t pir,
                 uint64_t pburst) {{
    if (mid >= {nm} || index >= MET_SIZE[mid]) return -1;
    meter_t *m = &sw->met[mid][index];
    m->cir = cir; m->cburst = cburst; m->pir = pir; m->pburst = pburst;
    m->tc = (double)cburst; m->tp = (double)pburst; m->has_last = 0; m->configured = 1;
    return 0;
}}

int ss_meter_get(sw_t *sw, uint32_t mid, uint32_t index, uint64_t *config) {{
    if (mid >= {nm} || index >= MET_SIZE[mid]) return -1;
    meter_t *m = &sw->met[mid][index];
    config[0] = m->cir; config[1] = m->cburst; config[2] = m->pir; config[3] = m->pburst;
    return m->configured;
}}

static mc_t *mc_find(sw_t *sw, u64 gid) {{
    for (uint32_t i = 0; i < sw->nmc; i++) if (sw->mc[i].gid == gid) return &sw->mc[i];
    return NULL;
}}

void ss_mc_del(sw_t *sw, uint32_t gid) {{
    mc_t *g = mc_find(sw, gid);
    if (!g) return;
    free(g->port); free(g->rid);
    *g = sw->mc[--sw->nmc];
}}

int ss_mc_set(sw_t *sw, uint32_t gid, uint32_t n, const uint16_t *ports, const uint16_t *rids) {{
    uint16_t *pp = malloc(sizeof(uint16_t) * (n ? n : 1)), *rr = malloc(sizeof(uint16_t) * (n ? n : 1));
    if (!pp || !rr) {{ free(pp); free(rr); return -1; }}
    memcpy(pp, ports, sizeof(uint16_t) * n); memcpy(rr, rids, sizeof(uint16_t) * n);
    mc_t *g = mc_find(sw, gid);
    if (!g) {{
        mc_t *m = realloc(sw->mc, sizeof(mc_t) * (sw->nmc + 1));
        if (!m) {{ free(pp); free(rr); return -1; }}
        sw->mc = m;
        g = &m[sw->nmc++];
        g->port = g->rid = NULL;
    }}
    free(g->port); free(g->rid);
    g->gid = gid; g->n = n; g->port = pp; g->rid = rr;
    return 0;
}}

typedef struct {{
    ss_out_t *outs; uint32_t nout, max_outs; uint8_t *buf; uint32_t used, cap; uint32_t dropped;
    uint32_t *dg_type; u64 *dg_vals; uint32_t ndg, max_dg;
}} sink_t;

static void digest_out(const pkt_t *p, sink_t *s) {{
    if (!p->dg || s->ndg >= s->max_dg || !s->dg_type) return;
    s->dg_type[s->ndg] = p->dg - 1;
    memcpy(s->dg_vals + (size_t)s->ndg * {self.digest_width}, p->dgv, sizeof p->dgv);
    s->ndg++;
}}

void ss_clone_clear(sw_t *sw) {{
    for (uint32_t i = 0; i < sw->nsess; i++) {{ free(sw->sess[i].port); free(sw->sess[i].rid); }}
    free(sw->sess); sw->sess = NULL; sw->nsess = 0;
}}

int ss_clone_set(sw_t *sw, uint64_t sid, uint32_t n, const uint16_t *ports, const uint16_t *rids,
                 uint64_t trunc) {{
    sess_t *g = realloc(sw->sess, sizeof(sess_t) * (sw->nsess + 1));
    if (!g) return -1;
    sw->sess = g;
    sess_t *x = &g[sw->nsess];
    x->id = sid; x->n = n; x->trunc = trunc;
    x->port = malloc(sizeof(uint16_t) * (n ? n : 1)); x->rid = malloc(sizeof(uint16_t) * (n ? n : 1));
    if (!x->port || !x->rid) {{ free(x->port); free(x->rid); return -1; }}
    memcpy(x->port, ports, sizeof(uint16_t) * n); memcpy(x->rid, rids, sizeof(uint16_t) * n);
    sw->nsess++;
    return 0;
}}

{driver}
int ss_process(sw_t *sw, uint32_t port, const uint8_t *data, uint32_t len, uint64_t now,
               ss_out_t *outs, uint32_t max_outs, uint8_t *buf, uint32_t cap, uint32_t *dropped,
               uint32_t *dg_type, uint64_t *dg_vals, uint32_t max_dg, uint32_t *ndg) {{
    sink_t s = {{outs, 0, max_outs, buf, 0, cap, 0, dg_type, dg_vals, 0, max_dg}};
    run_packet(sw, port, data, len, now, &s);
    *dropped = s.dropped;
    *ndg = s.ndg;
    return (int)s.nout;
}}

uint64_t ss_process_batch(sw_t *sw, uint32_t n, const uint32_t *ports, const uint8_t *data,
                          const uint32_t *offs, const uint32_t *lens, uint64_t now,
                          uint8_t *scratch, uint32_t cap, uint64_t *out_bytes, uint32_t *dropped) {{
    ss_out_t outs[64];
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {{
        sink_t s = {{outs, 0, 64, scratch, 0, cap, 0, NULL, NULL, 0, 0}};
        run_packet(sw, ports[i], data + offs[i], lens[i], now, &s);
        total += s.nout;
        for (uint32_t j = 0; j < s.nout; j++) *out_bytes += outs[j].len;
        *dropped += s.dropped;
    }}
    return total;
}}
""")
        return "\n".join(parts)


def straight_driver(sm: Any, ts48: str, sm_fields: set[str]) -> str:
    """C of `run_packet` for programs that neither clone nor resubmit nor recirculate: one
    ingress pass, one egress pass per copy, the packet state on the stack."""
    return f"""
/* one copy through egress, computeChecksum and the deparser (switch.py _egress) */
static void egress_pass(pkt_t *q, uint32_t eport, sink_t *s) {{
    {sm('egress_port', 'eport')} {sm('egress_spec', '0')}
    {sm('egress_global_timestamp', f'q->now & {ts48}')} {sm('enq_timestamp', 'q->now & 0xFFFFFFFFULL')}
    {sm('deq_timedelta', '0')} {sm('enq_qdepth', '0')} {sm('deq_qdepth', '0')}
    q->exited = 0; CTL_egress(q);
    if (q->abort) {{ s->dropped++; return; }}
    if ({'q->sm.f_egress_spec == 511' if 'egress_spec' in sm_fields else '0'}) {{ s->dropped++; return; }}
    q->exited = 0; CTL_compute_checksum(q);
    if (q->abort) {{ s->dropped++; return; }}
    uint32_t rest = q->len - q->payload;
    if (s->nout >= s->max_outs || s->cap - s->used < rest) {{ s->dropped++; return; }}
    q->out.buf = s->buf + s->used; q->out.nbits = 0; q->out.cap = s->cap - s->used - rest; q->out.overflow = 0;
    q->exited = 0; CTL_deparser(q);
    if (q->out.overflow || q->abort) {{ s->dropped++; return; }}
    uint32_t hb = wr_bytes(&q->out);
    memcpy(s->buf + s->used + hb, q->data + q->payload, rest);
    uint32_t total = hb + rest;
    if (q->trunc && q->trunc < total) total = (uint32_t)q->trunc;  /* truncate(): on output */
    s->outs[s->nout].port = eport; s->outs[s->nout].off = s->used; s->outs[s->nout].len = total;
    s->nout++; s->used += total;
}}

static void run_packet(sw_t *sw, uint32_t port, const uint8_t *data, uint32_t len, u64 now, sink_t *s) {{
    pkt_t P;
    memset(&P, 0, sizeof P);
    pkt_t *p = &P;
    p->sw = sw; p->data = data; p->len = len; p->plen = len; p->now = now;
    {sm('ingress_port', 'port', 'p')} {sm('ingress_global_timestamp', f'now & {ts48}', 'p')}
    {sm('instance_type', '0', 'p')} {sm('packet_length', 'len', 'p')}
    CTL_parser(p);
    if (p->abort) {{ s->dropped++; return; }}
    p->payload = (p->pos + 7) >> 3;
    if (p->payload > len) p->payload = len;
    p->exited = 0; CTL_verify_checksum(p);
    if (p->abort) {{ s->dropped++; return; }}
    p->exited = 0; CTL_ingress(p);
    if (p->abort) {{ s->dropped++; return; }}
    if (p->dg) digest_out(p, s);
    u64 mgid = {'p->sm.f_mcast_grp' if 'mcast_grp' in sm_fields else '0'};
    if (mgid) {{
        mc_t *g = mc_find(sw, mgid);
        if (!g) {{ s->dropped++; return; }}  /* no such group; an empty one sends nothing */
        for (uint32_t r = 0; r < g->n; r++) {{
            pkt_t Q = P;
            pkt_t *q = &Q;
            q->trunc = 0; q->dm = 0;  /* a replica is a new packet: ingress's requests are not its */
            {sm('packet_length', 'P.plen')} {sm('egress_rid', 'g->rid[r]')} {sm('instance_type', '5')}
            q->plen = len;
            egress_pass(q, g->port[r], s);
        }}
        return;
    }}
    u64 spec = {'p->sm.f_egress_spec' if 'egress_spec' in sm_fields else '0'};
    if (spec == 511) {{ s->dropped++; return; }}
    {sm('instance_type', '0', 'p')} {sm('packet_length', 'p->plen', 'p')}
    egress_pass(p, (uint32_t)spec, s);
}}

"""


def _instance_args(main: Any) -> list[list[Any]]:
    inst = getattr(main, "instantiation", None)
    calls = [a for a in getattr(inst, "bound_args", None) or [] if isinstance(a, A.CallExpr)]
    return [[x for x in c.bound_args if x is not None] for c in calls]


def program_source(built: Any) -> tuple[str, Layout]:
    """C source of a built program and its layout; Unsupported for what C does not take yet."""
    pc = ProgramC(built)
    src = pc.source()
    return src, pc.layout
