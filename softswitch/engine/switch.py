"""The v1model switch: runs packets as BMv2 simple_switch does, and its control-plane API.

The program's runtime objects (generated code, tables, externs) come from
`builder.build_program`.

Pipeline order (BMv2 simple_switch): parser -> verifyChecksum -> ingress ->
clone I2E (the original packet parsed again) -> digests -> resubmit ->
multicast -> drop (egress_spec == 511) -> unicast; per copy: egress ->
clone E2E -> drop -> computeChecksum + deparser -> recirculate or output.
"""

from __future__ import annotations

import functools
import logging
import os
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Concatenate, NamedTuple, ParamSpec, TypeVar

from .errors import (
    CompileError,
    InternalError,
    PacketDropped,
    PacketTooShort,
    ParserReject,
    SwitchError,
)
from .externs import (
    CloneSession,
    MeterCell,
    ReplicationEngine,
    check_meter_config,
)
from .hashes import HashEngine
from .match import MatchValue
from .runtime import Digest, ExitSignal, PacketContext, PacketOut
from .tables import ActionProfile, Entry, Table

if TYPE_CHECKING:
    from softswitch.frontend.program import Program

log = logging.getLogger("softswitch.engine")

DROP_PORT = 511
# BMv2 standard_metadata.instance_type values
NORMAL, INGRESS_CLONE, EGRESS_CLONE, COALESCED, RECIRC, REPLICATION, RESUBMIT = 0, 1, 2, 3, 4, 5, 6
MAX_PASSES = 32  # ingress passes (resubmit / recirculate) per injected packet
MAX_JOBS = 4096  # pipeline passes of all copies (replicas, clones) per injected packet
STRICT_ENV = "SOFTSWITCH_STRICT"  # "1": internal errors raise InternalError (the test suite sets it)
ENGINE_ENV = "SOFTSWITCH_ENGINE"  # "native" or "python": the engine of a Switch made without engine=
ENGINES = ("python", "native")


def engine_default() -> str:
    """The engine of a Switch made without `engine=`: $SOFTSWITCH_ENGINE, else native where
    programs can be compiled to C here (a C compiler and cffi), else python, with a notice."""
    name = os.environ.get(ENGINE_ENV, "")
    if not name:
        from .native.cbuild import available

        why = available()
        if why is None:
            return "native"
        _notice(f"softswitch: the python engine runs the programs: the native engine cannot run "
                f"here ({why}; `make deps` installs a C compiler and cffi)")
        return "python"
    if name not in ENGINES:
        raise SwitchError("INVALID_ARGUMENT", f"${ENGINE_ENV}={name!r}: choose one of {', '.join(ENGINES)}")
    return name


_noticed: set[str] = set()


def _notice(text: str) -> None:
    """Log `text` once per process (a fallback is said once, not per switch or program)."""
    if text not in _noticed:
        _noticed.add(text)
        log.warning("%s", text)


def strict_default() -> bool:
    """Whether a Switch made without `strict=` raises internal errors ($SOFTSWITCH_STRICT)."""
    return os.environ.get(STRICT_ENV, "") not in ("", "0")


class Output(NamedTuple):
    """A packet leaving the switch on `port`."""

    port: int
    data: bytes


# Arguments of the control-plane API (docs/softswitch-api.md)
Keys = Sequence[MatchValue] | Mapping[str, MatchValue]  # in key order, or by key name
ActionArgs = Sequence[int] | Mapping[str, int]  # in parameter order, or by parameter name
Replicas = Iterable[tuple[int, int]]  # (port, rid)


class _MonotonicClock:
    """Microseconds since the switch was made, on CLOCK_MONOTONIC (the default clock). Ring
    I/O reads the same clock in C per packet from `base_ns`."""

    def __init__(self) -> None:
        self.base_ns = time.monotonic_ns()

    def __call__(self) -> int:
        return (time.monotonic_ns() - self.base_ns) // 1000


def _default_clock() -> Callable[[], int]:
    return _MonotonicClock()


class _Carried(NamedTuple):
    """What a resubmitted or recirculated packet keeps: user metadata and the field list to copy."""

    meta: Any
    field_list: int


class _IngressJob(NamedTuple):
    """A packet entering ingress: from a port, resubmitted or recirculated."""

    data: bytes
    port: int
    instance_type: int
    ingress_port: int  # where the injected packet came in (drop counters)
    carried: _Carried | None = None


class _EgressJob(NamedTuple):
    """A copy entering egress on `port` with the headers and metadata it carries."""

    data: bytes
    port: int
    ingress_port: int
    hdr: Any
    meta: Any
    sm: Any
    payload: bytes
    truncate: int = 0  # clone session truncation
    context: PacketContext | None = None  # unicast: the ingress pass's context continues


_Job = _IngressJob | _EgressJob

_P = ParamSpec("_P")
_R = TypeVar("_R")
_T = TypeVar("_T")


def _refuse_malformed(method: Callable[Concatenate[Switch, _P], _R]) -> Callable[Concatenate[Switch, _P], _R]:
    """Turn a malformed argument's TypeError/ValueError into SwitchError(INVALID_ARGUMENT).

    Every control-plane method carries it, so that a wrong type from a caller is a
    refusal like any other (docs/softswitch-api.md), never a traceback.
    """

    def wrapper(self: Switch, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except (TypeError, ValueError, AttributeError) as exc:
            raise SwitchError("INVALID_ARGUMENT", f"{method.__name__}: malformed argument: {exc}") from None

    functools.update_wrapper(wrapper, method)
    return wrapper


class Switch:
    """A v1model software switch running one compiled program (docs/softswitch-api.md)."""

    def __init__(self, program: Program, cpu_port: int = 255, clock: Callable[[], int] | None = None,
                 strict: bool | None = None, engine: str | None = None) -> None:
        self.program = program
        # neither the caller nor $SOFTSWITCH_ENGINE named the engine: a program that the native
        # engine cannot run falls back to python (named, it is refused with the reason)
        chosen = engine is None and not os.environ.get(ENGINE_ENV)
        engine = engine_default() if engine is None else engine
        if engine not in ENGINES:
            raise SwitchError("INVALID_ARGUMENT", f"engine {engine!r}: choose one of {', '.join(ENGINES)}")
        self.engine = engine
        # strict: an internal error (a bug, not a drop) raises InternalError instead of being
        # counted as a drop; default from $SOFTSWITCH_STRICT
        self.strict = strict_default() if strict is None else strict
        self._fault_causes: dict[tuple[str, str, int], int] = {}
        self.cpu_port = cpu_port
        self.clock = clock or _default_clock()
        self.hashes = HashEngine()
        self.pre = ReplicationEngine()
        self.on_digest: Callable[[Digest], None] | None = None
        self._digests: deque[Digest] = deque()
        # packets by port: received, sent, dropped (errors: dropped by an internal error)
        self.stats: dict[str, dict[int, int]] = {"in": {}, "out": {}, "dropped": {}, "errors": {}}
        # imported here: the front end is only needed once a program is compiled
        from .builder import build_program

        built = build_program(program)
        self.source = built.source  # the generated Python (docs/softswitch-engine.md)
        self.gen = built.gen
        self.ns = built.ns
        self.tables = built.tables
        self.registers = built.registers
        self.counters = built.counters
        self.meters = built.meters
        self.profiles = built.profiles
        self.direct = built.direct  # direct resource name -> (kind, table)
        self.value_sets = built.value_sets
        self._run_parser = built.entry("RUN_parser")
        self._run_verify_checksum = built.entry("RUN_verify_checksum")
        self._run_ingress = built.entry("RUN_ingress")
        self._run_egress = built.entry("RUN_egress")
        self._run_compute_checksum = built.entry("RUN_compute_checksum")
        self._run_deparser = built.entry("RUN_deparser")
        self._new_headers = built.ns["new_headers"]
        self._new_meta = built.ns["new_meta"]
        self._new_sm = built.ns["new_sm"]
        self._field_lists = built.ns["FIELD_LISTS"]
        # the native engine (docs/softswitch-engine.md): the same program compiled to C; the
        # Python objects above stay the control plane's state, registers and counters move to C
        self._native: Any = None
        self.c_source = ""
        if engine == "native":
            from .native.engine import NativeEngine

            try:
                self._native = NativeEngine(self, built)
            except CompileError as exc:
                if not chosen:
                    raise
                _notice(f"softswitch: the python engine runs this program: {exc}")
                self.engine = "python"
            else:
                self.c_source = self._native.source

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
        if self._native is not None:
            return self._process_native(port, data)
        queue: deque[_Job] = deque([_IngressJob(data, port, NORMAL, port)])
        passes = 0
        jobs = 0
        while queue:
            job = queue.popleft()
            jobs += 1
            if isinstance(job, _IngressJob):
                passes += 1
            if passes > MAX_PASSES or jobs > MAX_JOBS:
                log.warning(
                    "packet from port %d: more than %d resubmit/recirculate passes or %d copies, dropped",
                    port, MAX_PASSES, MAX_JOBS,
                )
                _bump(self.stats["dropped"], port)
                break
            try:
                if isinstance(job, _IngressJob):
                    self._ingress(job, queue)
                else:
                    self._egress(job, queue, outputs)
            except PacketDropped as exc:
                log.warning("packet from port %d dropped: %s", port, exc)
                _bump(self.stats["dropped"], port)
            except Exception as exc:  # an internal error must never stop the switch
                self._internal_error(port, exc)
        out_stats = self.stats["out"]
        for o in outputs:
            out_stats[o.port] = out_stats.get(o.port, 0) + 1
        return outputs

    def _process_native(self, port: int, data: bytes) -> list[Output]:
        sent, dropped = self._native.process(port, data, self.clock())
        if dropped:
            self.stats["dropped"][port] = self.stats["dropped"].get(port, 0) + dropped
        out_stats = self.stats["out"]
        outputs = []
        for p, d in sent:
            out_stats[p] = out_stats.get(p, 0) + 1
            outputs.append(Output(p, d))
        return outputs

    def prepare_batch(self, packets: Sequence[bytes]) -> Any:
        """Packets laid out once for process_batch (native engine: one C buffer); reusable."""
        if not isinstance(packets, Sequence) or not all(isinstance(p, bytes) for p in packets):
            raise SwitchError("INVALID_ARGUMENT", "packets must be a sequence of bytes")
        return self._native.batch(list(packets)) if self._native is not None else list(packets)

    def process_batch(self, port: int, packets: Any) -> tuple[int, int, int]:
        """Run packets from one port without returning them (benchmarks): (packets sent, bytes
        sent, copies dropped). `packets` is a sequence of bytes or prepare_batch's result; the
        native engine runs the whole batch in one call into C."""
        if not isinstance(port, int) or not 0 <= port < 512:
            raise SwitchError("INVALID_ARGUMENT", f"ingress port {port!r} not in 0..511")
        from .native.engine import PacketBatch

        if not isinstance(packets, PacketBatch):
            packets = self.prepare_batch(packets)
        if self._native is None:
            sent = nbytes = 0
            before = sum(self.stats["dropped"].values())
            for p in packets:
                outs = self.process_packet(port, p)
                sent += len(outs)
                nbytes += sum(len(o.data) for o in outs)
            return sent, nbytes, sum(self.stats["dropped"].values()) - before
        if packets._ffi is not self._native.ffi:
            raise SwitchError("INVALID_ARGUMENT", "the batch was prepared by another program's switch")
        sent, nbytes, dropped = self._native.process_batch(port, packets, self.clock())
        self.stats["in"][port] = self.stats["in"].get(port, 0) + packets.count
        if dropped:
            self.stats["dropped"][port] = self.stats["dropped"].get(port, 0) + dropped
        return sent, nbytes, dropped

    def _internal_error(self, port: int, exc: Exception) -> None:
        """Strict: raise InternalError. Otherwise a counted drop, logged once per cause
        (exception type and the innermost source line) with its traceback."""
        if self.strict:
            raise InternalError(f"internal error on a packet from port {port}: "
                                f"{type(exc).__name__}: {exc}") from exc
        _bump(self.stats["dropped"], port)
        _bump(self.stats["errors"], port)
        frames = traceback.extract_tb(exc.__traceback__)
        where = (frames[-1].filename, frames[-1].lineno or 0) if frames else ("?", 0)
        cause = (type(exc).__name__, *where)
        seen = self._fault_causes.get(cause, 0)
        self._fault_causes[cause] = seen + 1
        if not seen:
            log.error("internal error on a packet from port %d, packet dropped (logged once per "
                      "cause; stats['errors'] counts them): %s: %s", port, type(exc).__name__, exc,
                      exc_info=exc)

    def _parse(self, P: PacketContext, hdr: Any, meta: Any, sm: Any) -> None:
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

    def _ingress(self, job: _IngressJob, queue: deque[_Job]) -> None:
        now = self.clock()
        data = job.data
        P = PacketContext(self, data, now)
        hdr = self._new_headers()
        meta = self._new_meta()
        sm = self._new_sm()
        P.sm = sm
        if job.carried is not None:
            self._preserve(job.carried.meta, meta, job.carried.field_list)
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
                    queue.append(_EgressJob(data, eport, job.ingress_port, h2, m2, s2, P2.payload,
                                            session.truncate))
        # 2. digest: BMv2 keeps one learn-list id per pass, so the last digest() call wins
        if P.digests:
            name, fields = P.digests[-1]
            self._emit_digest(Digest(name, fields))
        # 3. resubmit: the original packet goes through ingress again
        if P.resubmit is not None:
            queue.append(_IngressJob(data, job.port, RESUBMIT, job.ingress_port,
                                     _Carried(meta, P.resubmit)))
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
                    queue.append(_EgressJob(data, eport, job.ingress_port, hdr.copy(), meta.copy(),
                                            s2, P.payload))
            return
        # 5. drop
        port = sm.f_egress_spec
        if port == DROP_PORT:
            _bump(self.stats["dropped"], job.ingress_port)
            return
        # 6. unicast: the same packet context continues (recirculate/truncate requests made in
        # ingress take effect after egress, as in BMv2), and BMv2 sets instance_type to NORMAL
        sm.f_instance_type = NORMAL
        queue.append(_EgressJob(data, port, job.ingress_port, hdr, meta, sm, P.payload, 0, P))

    def _egress(self, job: _EgressJob, queue: deque[_Job], outputs: list[Output]) -> None:
        now = self.clock()
        hdr, meta, sm, payload, trunc = job.hdr, job.meta, job.sm, job.payload, job.truncate
        if job.context is not None:
            P = job.context
            P.now = now
            sm.f_packet_length = P.plen  # egress reads the length register (BMv2)
        else:
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
                    queue.append(_EgressJob(job.data, eport, job.ingress_port, hdr.copy(), m2, s2,
                                            payload, session.truncate))
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
            queue.append(_IngressJob(out, job.ingress_port, RECIRC, job.ingress_port,
                                     _Carried(meta, P.recirc)))
            return
        if P.truncate or trunc:
            out = out[: min(x for x in (P.truncate, trunc) if x)]
        outputs.append(Output(job.port, out))

    def _preserve(self, src_meta: Any, dst_meta: Any, index: int) -> None:
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

    def _find(self, kind: str, objects: Mapping[str, _T], name: str) -> _T:
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

    @_refuse_malformed
    def table_add(self, table: str, keys: Keys, action: str, args: ActionArgs = (),
                  priority: int = 0) -> int:
        """Insert a direct entry; returns its handle."""
        t = self.table(table)
        if t.profile is not None:
            raise SwitchError("INVALID_ARGUMENT", f"{t.name} uses {t.profile.name}: use table_add_indirect")
        return t.add(keys, action, args, priority)

    @_refuse_malformed
    def table_add_indirect(self, table: str, keys: Keys, member: int | None = None,
                           group: int | None = None, priority: int = 0) -> int:
        """Insert an entry pointing at an action profile member or selector group."""
        t = self.table(table)
        if t.profile is None:
            raise SwitchError("INVALID_ARGUMENT", f"{t.name} has no action profile")
        return t.add(keys, None, (), priority, member=member, group=group)

    @_refuse_malformed
    def table_modify(self, table: str, handle: int, action: str | None = None,
                     args: ActionArgs = (), *, member: int | None = None,
                     group: int | None = None) -> None:
        """Change an entry's action and args (or member/group)."""
        self.table(table).modify(handle, action, args, member=member, group=group)

    @_refuse_malformed
    def table_delete(self, table: str, handle: int) -> None:
        """Delete an entry."""
        self.table(table).delete(handle)

    @_refuse_malformed
    def table_find(self, table: str, keys: Keys, priority: int = 0) -> int | None:
        """Handle of the entry with exactly these keys (and priority), or None."""
        return self.table(table).find(keys, priority)

    @_refuse_malformed
    def table_entries(self, table: str) -> list[Entry]:
        """All entries of a table in insertion order."""
        return list(self.table(table).entries.values())

    @_refuse_malformed
    def table_set_default(self, table: str, action: str, args: ActionArgs = ()) -> None:
        """Set the default action."""
        self.table(table).set_default(action, args)

    @_refuse_malformed
    def table_get_default(self, table: str) -> tuple[str, tuple[int, ...]]:
        """(action name, args) of the default action."""
        t = self.table(table)
        return t.default_action, t.default_args

    @_refuse_malformed
    def table_reset_default(self, table: str) -> None:
        """Restore the program's default action."""
        self.table(table).reset_default()

    @_refuse_malformed
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
        entry = t.get(handle)
        if self._native is not None:  # the cells count in C: bring them into the entry first
            self._native.sync()
            tid = self._native.table_id(t)
            if tid is not None:
                self._native.pull_direct(tid)
        return t, entry

    def _direct_written(self, t: Table, entry: Entry) -> None:
        """A direct counter or meter written by the control plane: into C as well."""
        if self._native is not None:
            tid = self._native.table_id(t)
            if tid is not None:
                self._native.push_direct(tid, entry)

    @_refuse_malformed
    def direct_counter_read(self, table: str, handle: int) -> tuple[int, int]:
        """(packets, bytes) of an entry's direct counter."""
        _, e = self._direct_entry(table, handle, "counter")
        return e.packets, e.bytes

    @_refuse_malformed
    def direct_counter_write(self, table: str, handle: int, packets: int, nbytes: int) -> None:
        """Set an entry's direct counter."""
        t, e = self._direct_entry(table, handle, "counter")
        if not isinstance(packets, int) or not isinstance(nbytes, int) or packets < 0 or nbytes < 0:
            raise SwitchError("INVALID_ARGUMENT", f"{table}: counter values must be non-negative integers")
        if self._native is not None and (packets >> 64 or nbytes >> 64):
            raise SwitchError("INVALID_ARGUMENT", f"{table}: counter values must fit in 64 bits")
        e.packets, e.bytes = packets, nbytes
        self._direct_written(t, e)

    @_refuse_malformed
    def direct_meter_set(self, table: str, handle: int, cir: int, cburst: int, pir: int, pburst: int) -> None:
        """Configure an entry's direct meter (rates per second)."""
        t, e = self._direct_entry(table, handle, "meter")
        check_meter_config(t.name, cir, cburst, pir, pburst)
        if self._native is not None and max(cir, cburst, pir, pburst) >> 64:
            raise SwitchError("INVALID_ARGUMENT", f"{t.name}: rate or burst above 2^64")
        cell = MeterCell()
        cell.configure(cir, cburst, pir, pburst)
        e.meter = cell
        self._direct_written(t, e)

    @_refuse_malformed
    def direct_meter_get(self, table: str, handle: int) -> tuple[int, int, int, int] | None:
        """(cir, cburst, pir, pburst) of an entry's direct meter, None when unconfigured."""
        _, e = self._direct_entry(table, handle, "meter")
        c = e.meter
        return (c.cir, c.cburst, c.pir, c.pburst) if c is not None else None

    # ------------------------------------------------------------------ action profiles

    def profile(self, name: str) -> ActionProfile:
        """The action profile or selector called `name`."""
        return self._find("action profile", self.profiles, name)

    @_refuse_malformed
    def ap_member_add(self, profile: str, member_id: int, action: str,
                      args: ActionArgs = ()) -> None:
        """Add a member (action + args) to a profile."""
        self.profile(profile).member_add(member_id, action, args)

    @_refuse_malformed
    def ap_member_modify(self, profile: str, member_id: int, action: str,
                         args: ActionArgs = ()) -> None:
        """Change a member."""
        self.profile(profile).member_modify(member_id, action, args)

    @_refuse_malformed
    def ap_member_delete(self, profile: str, member_id: int) -> None:
        """Delete a member."""
        self.profile(profile).member_delete(member_id)

    @_refuse_malformed
    def ap_group_add(self, profile: str, group_id: int, members: Iterable[int] = ()) -> None:
        """Create a selector group."""
        self.profile(profile).group_add(group_id, list(members))

    @_refuse_malformed
    def ap_group_modify(self, profile: str, group_id: int, members: Iterable[int]) -> None:
        """Replace a group's members."""
        self.profile(profile).group_modify(group_id, list(members))

    @_refuse_malformed
    def ap_group_delete(self, profile: str, group_id: int) -> None:
        """Delete a group."""
        self.profile(profile).group_delete(group_id)

    @_refuse_malformed
    def ap_members(self, profile: str) -> dict[int, tuple[str, tuple[int, ...]]]:
        """member id -> (action, args)."""
        return {m: (a, args) for m, (a, args, _) in self.profile(profile).members.items()}

    @_refuse_malformed
    def ap_groups(self, profile: str) -> dict[int, tuple[int, ...]]:
        """group id -> member ids."""
        return dict(self.profile(profile).groups)

    # ------------------------------------------------------------------ externs

    @_refuse_malformed
    def register_read(self, name: str, index: int) -> int:
        """Value of one register cell."""
        return self._find("register", self.registers, name).cp_read(index)

    @_refuse_malformed
    def register_write(self, name: str, index: int, value: int) -> None:
        """Set one register cell."""
        self._find("register", self.registers, name).cp_write(index, value)

    @_refuse_malformed
    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        """(packets, bytes) of an indexed counter cell."""
        return self._find("counter", self.counters, name).read(index)

    @_refuse_malformed
    def counter_write(self, name: str, index: int, packets: int, nbytes: int) -> None:
        """Set an indexed counter cell."""
        self._find("counter", self.counters, name).write(index, packets, nbytes)

    @_refuse_malformed
    def meter_set(self, name: str, index: int, cir: int, cburst: int, pir: int, pburst: int) -> None:
        """Configure a meter cell (rates per second; bursts in packets or bytes)."""
        self._find("meter", self.meters, name).set(index, cir, cburst, pir, pburst)

    @_refuse_malformed
    def meter_get(self, name: str, index: int) -> tuple[int, int, int, int] | None:
        """Configuration of a meter cell, None when unconfigured."""
        return self._find("meter", self.meters, name).get(index)

    # ------------------------------------------------------------------ replication

    @_refuse_malformed
    def mc_group_set(self, group_id: int, replicas: Replicas) -> None:
        """Create or replace a multicast group of (port, rid) replicas."""
        self.pre.mc_group_set(group_id, replicas)

    @_refuse_malformed
    def mc_group_delete(self, group_id: int) -> None:
        """Delete a multicast group."""
        self.pre.mc_group_delete(group_id)

    @_refuse_malformed
    def mc_groups(self) -> dict[int, tuple[tuple[int, int], ...]]:
        """group id -> replicas."""
        return dict(self.pre.groups)

    @_refuse_malformed
    def clone_session_set(self, session_id: int, replicas: Replicas, truncate: int = 0) -> None:
        """Create or replace a clone session."""
        self.pre.clone_session_set(session_id, replicas, truncate)

    @_refuse_malformed
    def clone_session_delete(self, session_id: int) -> None:
        """Delete a clone session."""
        self.pre.clone_session_delete(session_id)

    @_refuse_malformed
    def value_set_set(self, name: str, members: Iterable[Any]) -> None:
        """Replace the members of a parser value set."""
        self._find("value set", self.value_sets, name).set(members)

    @_refuse_malformed
    def value_set_add(self, name: str, value: Any, mask: int | None = None) -> None:
        """Add one member (a value, or value under mask) to a parser value set."""
        vs = self._find("value set", self.value_sets, name)
        member = value if mask is None else (value, mask)
        current = [v if m is None else (v, m) for v, m in vs.members]
        if member in current:
            raise SwitchError("ALREADY_EXISTS", f"{vs.name}: member {value!r} exists")
        vs.set(current + [member])

    @_refuse_malformed
    def value_set_remove(self, name: str, value: Any, mask: int | None = None) -> None:
        """Remove one member from a parser value set."""
        vs = self._find("value set", self.value_sets, name)
        current = [v if m is None else (v, m) for v, m in vs.members]
        member = value if mask is None else (value, mask)
        if member not in current:
            raise SwitchError("NOT_FOUND", f"{vs.name}: no member {value!r}")
        current.remove(member)
        vs.set(current)

    @_refuse_malformed
    def value_set_members(self, name: str) -> list[Any]:
        """Members of a parser value set (values, or (value, mask) pairs)."""
        vs = self._find("value set", self.value_sets, name)
        return [v if m is None else (v, m) for v, m in vs.members]

    @_refuse_malformed
    def clone_sessions(self) -> dict[int, CloneSession]:
        """session id -> CloneSession."""
        return dict(self.pre.sessions)


def check_program(program: Any) -> list[str]:
    """Errors for constructs the engine cannot run (empty when it can run the program)."""
    try:
        Switch(program)
    except CompileError as exc:
        return [str(exc)]
    except Exception as exc:  # report, never a traceback (strict mode: fail loudly)
        if strict_default():
            raise
        where = getattr(program, "source_file", "") or "program"
        return [f"{where}: error: the engine cannot run this program: {type(exc).__name__}: {exc}"]
    return []


def _bump(d: dict[int, int], key: int) -> None:
    d[key] = d.get(key, 0) + 1
