"""The v1model switch: builds the runtime objects, runs packets as BMv2 simple_switch does.

Pipeline order (BMv2 simple_switch): parser -> verifyChecksum -> ingress ->
clone I2E (the original packet parsed again) -> digests -> resubmit ->
multicast -> drop (egress_spec == 511) -> unicast; per copy: egress ->
clone E2E -> drop -> computeChecksum + deparser -> recirculate or output.
"""

from __future__ import annotations

import functools
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple

from . import runtime
from .errors import CompileError, PacketDropped, PacketTooShort, ParserReject, SwitchError
from .externs import (
    CounterArray,
    MeterArray,
    MeterCell,
    RegisterArray,
    ReplicationEngine,
    check_meter_config,
)
from .hashes import HashEngine, hash_result
from .match import Exact, Lpm, Optional, Range, Ternary
from .runtime import ExitSignal, HeaderStack, PacketContext, PacketOut
from .tables import ActionProfile, ActionSpec, Entry, KeySpec, Table

log = logging.getLogger("softswitch.engine")

DROP_PORT = 511
# BMv2 standard_metadata.instance_type values
NORMAL, INGRESS_CLONE, EGRESS_CLONE, COALESCED, RECIRC, REPLICATION, RESUBMIT = 0, 1, 2, 3, 4, 5, 6
MAX_PASSES = 32  # ingress passes (resubmit / recirculate) per injected packet
MAX_JOBS = 4096  # pipeline passes of all copies (replicas, clones) per injected packet


class Output(NamedTuple):
    """A packet leaving the switch on `port`."""

    port: int
    data: bytes


class Digest(NamedTuple):
    """A digest message: struct type name and (field, bitwidth, value) triples."""

    name: str
    fields: tuple


def _copy_value(v):
    return v.copy() if hasattr(v, "copy") else v


def _mk(cls, items, valid):
    obj = cls()
    for name, value in items:
        setattr(obj, "f_" + name, value)
    if valid:
        obj._v = True
    return obj


def _div(a: int, b: int) -> int:
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _mod(a: int, b: int) -> int:
    if b == 0:
        return 0
    return a - _div(a, b) * b


def _shl(a: int, b: int, w: int) -> int:
    return 0 if b >= w else a << b


def _sat(v: int, w: int) -> int:
    lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
    return lo if v < lo else hi if v > hi else v


def _hash(P, algo, base, packed, nbits, max_value):
    return hash_result(P.sw.hashes.compute_packed(algo, packed, nbits), base, max_value)


def _csum(P, algo, packed, nbits, payload):
    return P.sw.hashes.compute_packed(algo, packed, nbits, payload)


def _sel(P, profile, packed, nbits):
    return P.sw.hashes.compute_packed(profile.algorithm, packed, nbits)


def _default_clock() -> Callable[[], int]:
    t0 = time.monotonic_ns()
    return lambda: (time.monotonic_ns() - t0) // 1000


class _Job(NamedTuple):
    kind: str  # "ingress" or "egress"
    data: bytes
    port: int
    instance_type: int
    preserved: Any = None  # (meta, field list index) for ingress; (hdr, meta, sm, payload) for egress
    ingress_port: int = 0


class Switch:
    """A v1model software switch running one compiled program (docs/softswitch-api.md)."""

    def __init__(self, program: Any, cpu_port: int = 255, clock: Callable[[], int] | None = None) -> None:
        self.program = program
        self.cpu_port = cpu_port
        self.clock = clock or _default_clock()
        self.hashes = HashEngine()
        self.pre = ReplicationEngine()
        self.on_digest: Callable[[Digest], None] | None = None
        self._digests: deque[Digest] = deque()
        self.stats = {"in": {}, "out": {}, "dropped": {}}
        from .codegen import Codegen  # the front end is only needed once a program is compiled

        gen = Codegen(program)
        try:
            source = gen.compile()
        except CompileError:
            raise
        self.source = source
        self.gen = gen
        ns = self._namespace()
        self.tables: dict[str, Table] = {}
        self.registers: dict[str, RegisterArray] = {}
        self.counters: dict[str, CounterArray] = {}
        self.meters: dict[str, MeterArray] = {}
        self.profiles: dict[str, ActionProfile] = {}
        self.direct: dict[str, tuple[str, str]] = {}  # direct resource name -> (kind, unit)
        self._build_externs(gen, ns)
        code = compile(source, f"<softswitch:{getattr(program, 'source_file', 'program')}>", "exec")
        exec(code, ns)
        self.ns = ns
        self._build_tables(gen, ns)
        self.value_sets: dict[str, ValueSet] = {}
        for decl, g in gen.value_sets:
            vs = ValueSet(decl.fqname or decl.name, decl.size_value)
            ns[g] = vs
            self.value_sets[vs.name] = vs
        self._run_parser = ns["RUN_parser"]
        self._run_verify_checksum = ns["RUN_verify_checksum"]
        self._run_ingress = ns["RUN_ingress"]
        self._run_egress = ns["RUN_egress"]
        self._run_compute_checksum = ns["RUN_compute_checksum"]
        self._run_deparser = ns["RUN_deparser"]
        self._new_headers = ns["new_headers"]
        self._new_meta = ns["new_meta"]
        self._new_sm = ns["new_sm"]
        self._field_lists = ns["FIELD_LISTS"]

    # ------------------------------------------------------------------ building

    def _namespace(self) -> dict:
        return {
            "__builtins__": __builtins__,
            "_Stack": HeaderStack,
            "_Exit": ExitSignal,
            "_Reject": ParserReject,
            "_TooShort": PacketTooShort,
            "_Drop": PacketDropped,
            "_rb": runtime.read_bits,
            "_fb": int.from_bytes,
            "_mk": _mk,
            "_aggf": runtime.agg_fields,
            "_div": _div,
            "_mod": _mod,
            "_shl": _shl,
            "_sat": _sat,
            "_hash": _hash,
            "_csum": _csum,
            "_sel": _sel,
            "_log": runtime.log_msg,
            "_random": runtime.random_value,
            "_cp": _copy_value,
            "_into": runtime.assign_into,
            "_dyn": runtime.pack_dynamic,
            "_REJECT": None,
        }

    def _build_externs(self, gen: Any, ns: dict) -> None:
        for info in gen.externs:
            a = info.args
            tn = info.type_name
            if tn == "register":
                from .codegen import rt

                t = rt(info.type_args[0]) if info.type_args else None
                width = getattr(t, "width", 32) if t is not None else 32
                signed = bool(getattr(t, "signed", False))
                obj = RegisterArray(info.name, int(a[0]), width, signed)
                self.registers[info.name] = obj
                ns[info.gname + "_v"] = obj.values
            elif tn == "counter":
                obj = CounterArray(info.name, int(a[0]), str(a[1]))
                self.counters[info.name] = obj
                ns[info.gname + "_p"] = obj.packets
                ns[info.gname + "_b"] = obj.bytes
            elif tn == "meter":
                obj = MeterArray(info.name, int(a[0]), str(a[1]))
                self.meters[info.name] = obj
            elif tn in ("direct_counter", "direct_meter"):
                obj = _DirectSpec(info.name, tn, str(a[0]))
            elif tn == "action_profile":
                obj = ActionProfile(info.name, False, int(a[0] or 0))
                self.profiles[info.name] = obj
            elif tn == "action_selector":
                obj = ActionProfile(info.name, True, int(a[1] or 0), algorithm=str(a[0]))
                self.profiles[info.name] = obj
            else:
                raise CompileError(getattr(info.decl, "loc", "?"), f"unsupported extern {tn}")
            ns[info.gname] = obj

    def _build_tables(self, gen: Any, ns: dict) -> None:
        action_fns_global = {a.name: ns[a.gname] for a in gen.actions}
        action_specs = {a.name: ActionSpec(a.name, tuple(a.params)) for a in gen.actions}
        for info in gen.tables:
            d = info.decl
            keys = [KeySpec(n, k, w) for n, k, w in info.keys]
            specs, scopes, fns = [], {}, {}
            for aname, ref, fname in info.actions:
                specs.append(action_specs[aname])
                fns[aname] = ns[fname]
                names = {a.name for a in ref.annotations}
                if "defaultonly" in names:
                    scopes[aname] = "default_only"
                elif "tableonly" in names:
                    scopes[aname] = "table_only"
            default = ("NoAction", ())
            if d.default_action is not None:
                ref = d.default_action
                ainfo = gen.action_by_decl.get((id(ref.action), _prefix_of(gen, info))) or gen.action_by_decl.get(
                    (id(ref.action), "")
                )
                default = (ainfo.name, self._const_action_args(ref))
                if ainfo.name not in fns:
                    fns[ainfo.name] = ns[ainfo.gname]
            elif "NoAction" in action_fns_global:
                fns.setdefault("NoAction", action_fns_global["NoAction"])
            if default[0] not in action_specs:
                action_specs.setdefault(default[0], ActionSpec(default[0], ()))
            if default[0] not in {s.name for s in specs}:
                specs.append(action_specs[default[0]])
                scopes.setdefault(default[0], "default_only")
            profile = ns[info.profile] if info.profile else None
            dc = ns[info.direct_counter] if info.direct_counter else None
            dm = ns[info.direct_meter] if info.direct_meter else None
            table = Table(
                info.name,
                keys,
                specs,
                scopes,
                default=default,
                const_default=d.default_action_const,
                is_const=d.entries is not None and d.entries_const,
                size=d.size_value or 1024,
                profile=profile,
                with_counter=dc is not None,
                with_meter=dm is not None,
            )
            table.bind(fns)
            if dc is not None:
                self.direct[dc.name] = ("counter", info.name)
            if dm is not None:
                self.direct[dm.name] = ("meter", info.name)
                table.meter_unit = dm.unit
            ns[info.gname] = table
            self.tables[info.name] = table
            if d.entries:
                self._add_const_entries(table, info, d.entries)

    def _const_action_args(self, ref: Any) -> tuple[int, ...]:
        call = ref.call
        params = ref.action.params
        values = []
        if call is not None and call.bound_args:
            for p, a in zip(params, call.bound_args, strict=False):
                if not p.direction:
                    values.append(_const_int(a) & _mask_of(p))
        else:
            data = [p for p in params if not p.direction]
            for p, a in zip(data, ref.args, strict=False):
                values.append(_const_int(a.value) & _mask_of(p))
        return tuple(values)

    def _add_const_entries(self, table: Table, info: Any, entries: list) -> None:
        n = len(entries)
        for i, ent in enumerate(entries):
            ks = ent.keyset
            items = ks.items if isinstance(ks, _ast().ListExpr) else [ks]
            if len(table.match_keys) == 1 and not isinstance(ks, _ast().ListExpr):
                items = [ks]
            keys = [_keyset_value(item, spec) for item, spec in zip(items, table.match_keys, strict=False)]
            aname = next(a for a, ref, _ in info.actions if ref.action is ent.action.action)
            prio = ent.priority_value if ent.priority_value is not None else n - i
            table.add(keys, aname, self._const_action_args(ent.action), prio, const_ok=True)

    # ------------------------------------------------------------------ packets

    def process_packet(self, port: int, data: bytes) -> list[Output]:
        """Run one packet to completion; returns the packets sent, in emission order."""
        if not isinstance(port, int) or not 0 <= port < 512:
            raise SwitchError("INVALID_ARGUMENT", f"ingress port {port!r} not in 0..511")
        if not isinstance(data, (bytes, bytearray, memoryview)):  # noqa: UP038 (faster than a union)
            raise SwitchError("INVALID_ARGUMENT", f"packet data must be bytes, not {type(data).__name__}")
        data = bytes(data)
        outputs: list[Output] = []
        in_stats = self.stats["in"]
        in_stats[port] = in_stats.get(port, 0) + 1
        queue: deque[_Job] = deque([_Job("ingress", data, port, NORMAL, None, port)])
        passes = 0
        jobs = 0
        while queue:
            job = queue.popleft()
            jobs += 1
            if job.kind == "ingress":
                passes += 1
            if passes > MAX_PASSES or jobs > MAX_JOBS:
                log.warning(
                    "packet from port %d: more than %d resubmit/recirculate passes or %d copies, dropped",
                    port, MAX_PASSES, MAX_JOBS,
                )
                _bump(self.stats["dropped"], port)
                break
            try:
                if job.kind == "ingress":
                    self._ingress(job, queue)
                else:
                    self._egress(job, queue, outputs)
            except PacketDropped as exc:
                log.warning("packet from port %d dropped: %s", port, exc)
                _bump(self.stats["dropped"], port)
            except Exception as exc:  # a program fault must never stop the switch
                log.warning("packet from port %d dropped: %s: %s", port, type(exc).__name__, exc)
                _bump(self.stats["dropped"], port)
        out_stats = self.stats["out"]
        for o in outputs:
            out_stats[o.port] = out_stats.get(o.port, 0) + 1
        return outputs

    def _parse(self, P: PacketContext, hdr, meta, sm) -> None:
        try:
            self._run_parser(P, None, hdr, meta, sm)
        except ParserReject as r:
            if r.error_name:
                sm.f_parser_error = r.error_name
        except PacketTooShort:
            sm.f_parser_error = "PacketTooShort"
        P.payload = P.data[(P.pos + 7) >> 3 :]
        try:
            self._run_verify_checksum(P, hdr, meta)
        except ExitSignal:
            pass

    def _ingress(self, job: _Job, queue: deque) -> None:
        now = self.clock()
        data = job.data
        P = PacketContext(self, data, now)
        hdr = self._new_headers()
        meta = self._new_meta()
        sm = self._new_sm()
        P.sm = sm
        if job.preserved is not None:
            self._preserve(job.preserved[0], meta, job.preserved[1])
        # Only packets from a port get ingress_port and the ingress timestamp (BMv2's receive
        # path); resubmitted / recirculated ones start from reset metadata plus the field list.
        if job.instance_type == NORMAL:
            sm.f_ingress_port = job.port
            sm.f_ingress_global_timestamp = now
        sm.f_instance_type = job.instance_type
        sm.f_packet_length = len(data)
        self._parse(P, hdr, meta, sm)
        try:
            self._run_ingress(P, hdr, meta, sm)
        except ExitSignal:
            pass
        # 1. ingress clone: the original packet, parsed again
        if P.clone_i2e is not None:
            session_id, fl = P.clone_i2e
            session = self.pre.sessions.get(session_id)
            if session is not None:
                for eport, rid in session.replicas:
                    # BMv2 parses the original packet again (the parser sees the ingress
                    # port), then resets all metadata before copying the field list
                    P2 = PacketContext(self, data, now)
                    h2, m2, s2 = self._new_headers(), self._new_meta(), self._new_sm()
                    P2.sm = s2
                    s2.f_ingress_port = sm.f_ingress_port
                    s2.f_packet_length = len(data)
                    self._parse(P2, h2, m2, s2)
                    m2, s2 = self._new_meta(), self._new_sm()
                    s2.f_packet_length = len(data)
                    if fl is not None:
                        self._preserve(meta, m2, fl)
                    s2.f_instance_type = INGRESS_CLONE
                    s2.f_egress_rid = rid
                    queue.append(_Job("egress", data, eport, INGRESS_CLONE, (h2, m2, s2, P2.payload, session.truncate), job.ingress_port))
        # 2. digest: BMv2 keeps one learn-list id per pass, so the last digest() call wins
        if P.digests:
            name, fields = P.digests[-1]
            self._emit_digest(Digest(name, fields))
        # 3. resubmit: the original packet goes through ingress again
        if P.resubmit is not None:
            queue.append(_Job("ingress", data, job.port, RESUBMIT, (meta, P.resubmit), job.ingress_port))
            return
        # 4. multicast
        mgid = sm.f_mcast_grp
        if mgid:
            replicas = self.pre.groups.get(mgid)
            if replicas is None:
                log.info("multicast group %d not configured: packet dropped", mgid)
                _bump(self.stats["dropped"], job.ingress_port)
            else:
                for eport, rid in replicas:
                    s2 = sm.copy()
                    s2.f_packet_length = P.plen
                    s2.f_egress_rid = rid
                    s2.f_instance_type = REPLICATION
                    queue.append(_Job("egress", data, eport, REPLICATION, (hdr.copy(), meta.copy(), s2, P.payload, 0), job.ingress_port))
            return
        # 5. drop
        port = sm.f_egress_spec
        if port == DROP_PORT:
            _bump(self.stats["dropped"], job.ingress_port)
            return
        # 6. unicast: the same packet context continues (recirculate/truncate requests made in
        # ingress take effect after egress, as in BMv2), and BMv2 sets instance_type to NORMAL
        sm.f_instance_type = NORMAL
        queue.append(_Job("egress", data, port, NORMAL, (hdr, meta, sm, P.payload, 0, P), job.ingress_port))

    def _egress(self, job: _Job, queue: deque, outputs: list[Output]) -> None:
        now = self.clock()
        if len(job.preserved) == 6:
            hdr, meta, sm, payload, trunc, P = job.preserved
            P.now = now
            sm.f_packet_length = P.plen  # egress reads the length register (BMv2)
        else:
            hdr, meta, sm, payload, trunc = job.preserved
            P = PacketContext(self, job.data, now)
            P.sm = sm
            P.payload = payload
        sm.f_egress_port = job.port
        sm.f_egress_spec = 0  # BMv2 clears it so that mark_to_drop in egress is seen
        sm.f_egress_global_timestamp = now
        sm.f_enq_timestamp = now & 0xFFFFFFFF
        sm.f_deq_timedelta = 0
        sm.f_enq_qdepth = 0
        sm.f_deq_qdepth = 0
        try:
            self._run_egress(P, hdr, meta, sm)
        except ExitSignal:
            pass
        # egress clone: headers as they are now, metadata reset but for the field list
        if P.clone_e2e is not None:
            session_id, fl = P.clone_e2e
            session = self.pre.sessions.get(session_id)
            if session is not None:
                for eport, rid in session.replicas:
                    m2, s2 = self._new_meta(), self._new_sm()
                    if fl is not None:
                        self._preserve(meta, m2, fl)
                    s2.f_packet_length = sm.f_packet_length
                    s2.f_instance_type = EGRESS_CLONE
                    s2.f_egress_rid = rid
                    queue.append(_Job("egress", job.data, eport, EGRESS_CLONE, (hdr.copy(), m2, s2, payload, session.truncate), job.ingress_port))
        if sm.f_egress_spec == DROP_PORT:
            _bump(self.stats["dropped"], job.ingress_port)
            return
        try:
            self._run_compute_checksum(P, hdr, meta)
        except ExitSignal:
            pass
        P.out = PacketOut()
        try:
            self._run_deparser(P, None, hdr)
        except ExitSignal:
            pass
        out = P.out.getvalue() + payload
        if P.recirc is not None:
            # the recirculated copy is the whole deparsed packet (truncation applies on output)
            queue.append(_Job("ingress", out, job.ingress_port, RECIRC, (meta, P.recirc), job.ingress_port))
            return
        if P.truncate or trunc:
            out = out[: min(x for x in (P.truncate, trunc) if x)]
        outputs.append(Output(job.port, out))

    def _preserve(self, src_meta, dst_meta, index: int) -> None:
        copier = self._field_lists.get(index)
        if copier is not None:
            copier(src_meta, dst_meta)

    def _emit_digest(self, digest: Digest) -> None:
        if self.on_digest is not None:
            self.on_digest(digest)
        else:
            self._digests.append(digest)

    def poll_digests(self) -> list[Digest]:
        """Digests generated since the last poll, oldest first."""
        out = list(self._digests)
        self._digests.clear()
        return out

    # ------------------------------------------------------------------ names

    def _find(self, kind: str, objects: dict, name: str):
        obj = objects.get(name)
        if obj is not None:
            return obj
        hits = [o for n, o in objects.items() if n.endswith("." + name)]
        if len(hits) == 1:
            return hits[0]
        if not hits:
            raise SwitchError("NOT_FOUND", f"no {kind} named {name}")
        raise SwitchError("INVALID_ARGUMENT", f"{kind} name {name} is ambiguous")

    def table(self, name: str) -> Table:
        """The runtime table called `name` (fully-qualified or a unique suffix)."""
        return self._find("table", self.tables, name)

    # ------------------------------------------------------------------ tables API

    def table_add(self, table: str, keys, action: str, args=(), priority: int = 0) -> int:
        """Insert a direct entry; returns its handle."""
        t = self.table(table)
        if t.profile is not None:
            raise SwitchError("INVALID_ARGUMENT", f"{t.name} uses {t.profile.name}: use table_add_indirect")
        return t.add(keys, action, args, priority)

    def table_add_indirect(self, table: str, keys, member: int | None = None, group: int | None = None, priority: int = 0) -> int:
        """Insert an entry pointing at an action profile member or selector group."""
        t = self.table(table)
        if t.profile is None:
            raise SwitchError("INVALID_ARGUMENT", f"{t.name} has no action profile")
        return t.add(keys, None, (), priority, member=member, group=group)

    def table_modify(self, table: str, handle: int, action: str | None = None, args=(), *, member: int | None = None, group: int | None = None) -> None:
        """Change an entry's action and args (or member/group)."""
        self.table(table).modify(handle, action, args, member=member, group=group)

    def table_delete(self, table: str, handle: int) -> None:
        """Delete an entry."""
        self.table(table).delete(handle)

    def table_find(self, table: str, keys, priority: int = 0) -> int | None:
        """Handle of the entry with exactly these keys (and priority), or None."""
        return self.table(table).find(keys, priority)

    def table_entries(self, table: str) -> list[Entry]:
        """All entries of a table in insertion order."""
        return list(self.table(table).entries.values())

    def table_set_default(self, table: str, action: str, args=()) -> None:
        """Set the default action."""
        self.table(table).set_default(action, args)

    def table_get_default(self, table: str) -> tuple[str, tuple[int, ...]]:
        """(action name, args) of the default action."""
        t = self.table(table)
        return t.default_action, t.default_args

    def table_reset_default(self, table: str) -> None:
        """Restore the program's default action."""
        self.table(table).reset_default()

    def table_clear(self, table: str) -> None:
        """Delete all entries."""
        self.table(table).clear()

    # ------------------------------------------------------------------ direct resources

    def _direct_entry(self, table: str, handle: int, kind: str) -> tuple[Table, Entry]:
        t = self.table(table)
        if kind == "counter" and not t.with_counter:
            raise SwitchError("FAILED_PRECONDITION", f"{t.name} has no direct counter")
        if kind == "meter" and not t.with_meter:
            raise SwitchError("FAILED_PRECONDITION", f"{t.name} has no direct meter")
        return t, t.get(handle)

    def direct_counter_read(self, table: str, handle: int) -> tuple[int, int]:
        """(packets, bytes) of an entry's direct counter."""
        _, e = self._direct_entry(table, handle, "counter")
        return e.packets, e.bytes

    def direct_counter_write(self, table: str, handle: int, packets: int, nbytes: int) -> None:
        """Set an entry's direct counter."""
        _, e = self._direct_entry(table, handle, "counter")
        if not isinstance(packets, int) or not isinstance(nbytes, int) or packets < 0 or nbytes < 0:
            raise SwitchError("INVALID_ARGUMENT", f"{table}: counter values must be non-negative integers")
        e.packets, e.bytes = packets, nbytes

    def direct_meter_set(self, table: str, handle: int, cir: int, cburst: int, pir: int, pburst: int) -> None:
        """Configure an entry's direct meter (rates per second)."""
        t, e = self._direct_entry(table, handle, "meter")
        check_meter_config(t.name, cir, cburst, pir, pburst)
        cell = MeterCell()
        cell.configure(cir, cburst, pir, pburst)
        e.meter = cell

    def direct_meter_get(self, table: str, handle: int) -> tuple[int, int, int, int] | None:
        """(cir, cburst, pir, pburst) of an entry's direct meter, None when unconfigured."""
        _, e = self._direct_entry(table, handle, "meter")
        c = e.meter
        return (c.cir, c.cburst, c.pir, c.pburst) if c is not None else None

    # ------------------------------------------------------------------ action profiles

    def profile(self, name: str) -> ActionProfile:
        """The action profile or selector called `name`."""
        return self._find("action profile", self.profiles, name)

    def ap_member_add(self, profile: str, member_id: int, action: str, args=()) -> None:
        """Add a member (action + args) to a profile."""
        self.profile(profile).member_add(member_id, action, args)

    def ap_member_modify(self, profile: str, member_id: int, action: str, args=()) -> None:
        """Change a member."""
        self.profile(profile).member_modify(member_id, action, args)

    def ap_member_delete(self, profile: str, member_id: int) -> None:
        """Delete a member."""
        self.profile(profile).member_delete(member_id)

    def ap_group_add(self, profile: str, group_id: int, members=()) -> None:
        """Create a selector group."""
        self.profile(profile).group_add(group_id, list(members))

    def ap_group_modify(self, profile: str, group_id: int, members) -> None:
        """Replace a group's members."""
        self.profile(profile).group_modify(group_id, list(members))

    def ap_group_delete(self, profile: str, group_id: int) -> None:
        """Delete a group."""
        self.profile(profile).group_delete(group_id)

    def ap_members(self, profile: str) -> dict[int, tuple[str, tuple[int, ...]]]:
        """member id -> (action, args)."""
        return {m: (a, args) for m, (a, args, _) in self.profile(profile).members.items()}

    def ap_groups(self, profile: str) -> dict[int, tuple[int, ...]]:
        """group id -> member ids."""
        return dict(self.profile(profile).groups)

    # ------------------------------------------------------------------ externs

    def register_read(self, name: str, index: int) -> int:
        """Value of one register cell."""
        return self._find("register", self.registers, name).cp_read(index)

    def register_write(self, name: str, index: int, value: int) -> None:
        """Set one register cell."""
        self._find("register", self.registers, name).cp_write(index, value)

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        """(packets, bytes) of an indexed counter cell."""
        return self._find("counter", self.counters, name).read(index)

    def counter_write(self, name: str, index: int, packets: int, nbytes: int) -> None:
        """Set an indexed counter cell."""
        self._find("counter", self.counters, name).write(index, packets, nbytes)

    def meter_set(self, name: str, index: int, cir: int, cburst: int, pir: int, pburst: int) -> None:
        """Configure a meter cell (rates per second; bursts in packets or bytes)."""
        self._find("meter", self.meters, name).set(index, cir, cburst, pir, pburst)

    def meter_get(self, name: str, index: int) -> tuple[int, int, int, int] | None:
        """Configuration of a meter cell, None when unconfigured."""
        return self._find("meter", self.meters, name).get(index)

    # ------------------------------------------------------------------ replication

    def mc_group_set(self, group_id: int, replicas) -> None:
        """Create or replace a multicast group of (port, rid) replicas."""
        self.pre.mc_group_set(group_id, replicas)

    def mc_group_delete(self, group_id: int) -> None:
        """Delete a multicast group."""
        self.pre.mc_group_delete(group_id)

    def mc_groups(self) -> dict[int, tuple[tuple[int, int], ...]]:
        """group id -> replicas."""
        return dict(self.pre.groups)

    def clone_session_set(self, session_id: int, replicas, truncate: int = 0) -> None:
        """Create or replace a clone session."""
        self.pre.clone_session_set(session_id, replicas, truncate)

    def clone_session_delete(self, session_id: int) -> None:
        """Delete a clone session."""
        self.pre.clone_session_delete(session_id)

    def value_set_set(self, name: str, members) -> None:
        """Replace the members of a parser value set."""
        self._find("value set", self.value_sets, name).set(members)

    def value_set_add(self, name: str, value, mask: int | None = None) -> None:
        """Add one member (a value, or value under mask) to a parser value set."""
        vs = self._find("value set", self.value_sets, name)
        member = value if mask is None else (value, mask)
        current = [v if m is None else (v, m) for v, m in vs.members]
        if member in current:
            raise SwitchError("ALREADY_EXISTS", f"{vs.name}: member {value!r} exists")
        vs.set(current + [member])

    def value_set_remove(self, name: str, value, mask: int | None = None) -> None:
        """Remove one member from a parser value set."""
        vs = self._find("value set", self.value_sets, name)
        current = [v if m is None else (v, m) for v, m in vs.members]
        member = value if mask is None else (value, mask)
        if member not in current:
            raise SwitchError("NOT_FOUND", f"{vs.name}: no member {value!r}")
        current.remove(member)
        vs.set(current)

    def value_set_members(self, name: str) -> list:
        """Members of a parser value set (values, or (value, mask) pairs)."""
        vs = self._find("value set", self.value_sets, name)
        return [v if m is None else (v, m) for v, m in vs.members]

    def clone_sessions(self) -> dict[int, Any]:
        """session id -> CloneSession."""
        return dict(self.pre.sessions)


def check_program(program: Any) -> list[str]:
    """Errors for constructs the engine cannot run (empty when it can run the program)."""
    try:
        Switch(program)
    except CompileError as exc:
        return [str(exc)]
    except Exception as exc:  # report, never a traceback
        where = getattr(program, "source_file", "") or "program"
        return [f"{where}: error: the engine cannot run this program: {type(exc).__name__}: {exc}"]
    return []


def _refuse_malformed(method):
    """Turn a malformed argument's TypeError/ValueError into SwitchError(INVALID_ARGUMENT)."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except (TypeError, ValueError, AttributeError) as exc:
            raise SwitchError("INVALID_ARGUMENT", f"{method.__name__}: malformed argument: {exc}") from None

    return wrapper


for _name in [n for n in vars(Switch) if n.startswith(("table_", "direct_", "ap_", "register_", "counter_",
                                                        "meter_", "mc_", "clone_", "value_set_"))]:
    setattr(Switch, _name, _refuse_malformed(getattr(Switch, _name)))


class ValueSet:
    """A parser value set: up to `size` (value, mask) members matched by select."""

    def __init__(self, name: str, size: int) -> None:
        self.name = name
        self.size = size
        self.members: list[tuple[Any, Any]] = []

    def set(self, members) -> None:
        """Replace the members: each a value or a (value, mask) pair (tuples for multi-key selects)."""
        members = list(members)
        if self.size and len(members) > self.size:
            raise SwitchError("RESOURCE_EXHAUSTED", f"{self.name}: more than {self.size} members")
        out = []
        for m in members:
            if isinstance(m, tuple) and len(m) == 2 and not isinstance(m[0], tuple) and isinstance(m[1], int) and m != ():
                out.append(m)
            else:
                out.append((m, None))
        self.members = out

    def match(self, value) -> bool:
        """True when `value` equals (under mask) one member."""
        for v, m in self.members:
            if m is None:
                if value == v:
                    return True
            elif isinstance(value, int) and value & m == v & m:
                return True
        return False


class _DirectSpec:
    """A direct_counter / direct_meter declaration (its cells live in table entries)."""

    def __init__(self, name: str, kind: str, unit: str) -> None:
        self.name = name
        self.kind = kind
        self.unit = unit


def _bump(d: dict, key: int) -> None:
    d[key] = d.get(key, 0) + 1


def _ast():
    from softswitch.frontend import ast

    return ast


def _prefix_of(gen: Any, info: Any) -> str:
    for (_decl_id, prefix), ti in gen.table_by_decl.items():
        if ti is info:
            return prefix
    return ""


def _mask_of(param: Any) -> int:
    """All-ones mask of an action parameter's width (negative constants become two's complement)."""
    from softswitch.frontend.types import bit_width

    w = bit_width(param.type) if param.type is not None else 0
    return (1 << w) - 1 if w else -1


def _const_int(e: Any) -> int:
    v = e.const_value if e is not None else 0
    if isinstance(v, bool):
        return int(v)
    if not isinstance(v, int):
        raise CompileError(getattr(e, "loc", "?"), "action argument is not a compile-time constant")
    return v


def _keyset_value(item: Any, spec: KeySpec):
    """MatchValue of one const-entry keyset element for a key of the given kind."""
    A = _ast()
    w = spec.width
    full = (1 << w) - 1
    kind = spec.match_kind
    if isinstance(item, A.DefaultExpr | A.DontCareExpr):
        return {"exact": Ternary(0, 0), "lpm": Lpm(0, 0), "ternary": Ternary(0, 0), "range": Range(0, full), "optional": Optional(None)}[kind]
    if isinstance(item, A.MaskExpr):
        v, m = _const_int(item.value) & full, _const_int(item.mask) & full
        if kind == "lpm":
            plen = bin(m).count("1")
            return Lpm(v & m, plen)
        return Ternary(v & m, m)
    if isinstance(item, A.RangeExpr):
        return Range(_const_int(item.lo), _const_int(item.hi))
    v = _const_int(item) & full
    return {"exact": Exact(v), "lpm": Lpm(v, w), "ternary": Ternary(v, full), "range": Range(v, v), "optional": Optional(v)}[kind]
