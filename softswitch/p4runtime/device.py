"""One P4Runtime device: pipeline changes (spec 15), Write/Read entry points, packet I/O.

Entities are validated and applied by `writes` / `reads` (through `codec`); this class
owns what is per device: the committed and saved pipelines, two locks (`control`
orders Write batches, Reads and pipeline changes; `lock` makes each change atomic
for the packet path, which shares the engine), PacketIn/PacketOut through the CPU
port and the delivery of digest lists. Compiling a config takes neither lock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import grpc
from finsy.proto import p4d, p4i, p4r

from softswitch.p4runtime.batch import BatchOutcome, apply_batch
from softswitch.p4runtime.digests import ReadyList
from softswitch.p4runtime.errors import P4RuntimeError, decode_uint, encode_uint, invalid
from softswitch.p4runtime.pipeline import Pipeline, switch_call
from softswitch.p4runtime.reads import read_entities, read_entity
from softswitch.p4runtime.schema import Schema
from softswitch.p4runtime.writes import apply_update

Update = p4r.Update
log = logging.getLogger("softswitch.p4runtime")

MAX_PACKET_OUT = 1 << 16
"""Bytes of a PacketOut payload (an IP packet is at most 65,535 bytes)."""


class Device:
    """The state behind one P4Runtime device ID."""

    def __init__(
        self,
        device_id: int,
        cpu_port: int = 255,
        load_program: Callable[[bytes], Any] | None = None,
        build_p4info: Callable[[Any], p4i.P4Info] | None = None,
        make_switch: Callable[[Any], Any] | None = None,
        clock_ns: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        from softswitch.p4info import p4info_from_program
        from softswitch.p4runtime import pipeline_loader as loader

        self.device_id = device_id
        self.cpu_port = cpu_port
        self.lock = threading.RLock()  # engine state: packets vs control-plane changes
        # Write batches, Reads and pipeline changes, in order; held across a batch
        self.control = threading.RLock()
        self.pipeline: Pipeline | None = None
        self.saved: Pipeline | None = None
        self._load_program = load_program or loader.load_program
        self._build_p4info = build_p4info or p4info_from_program
        self._make_switch = make_switch or (lambda prog: loader.make_switch(prog, cpu_port))
        self.clock_ns = clock_ns
        self.digests_pending = threading.Event()
        # Wired by the gRPC layer and the runner.
        self.transmit: Callable[[int, bytes], None] = lambda port, data: None
        self.on_packet_in: Callable[[p4r.PacketIn], None] = lambda msg: None
        self.on_digest_list: Callable[[p4r.DigestList], None] = lambda msg: None
        self.on_pipeline_change: Callable[[Pipeline], None] = lambda p: None

    # ---- pipeline --------------------------------------------------------------------

    def require_pipeline(self) -> Pipeline:
        """The committed pipeline, or FAILED_PRECONDITION."""
        p = self.pipeline
        if p is None:
            raise P4RuntimeError(
                grpc.StatusCode.FAILED_PRECONDITION, "no forwarding pipeline config set"
            )
        return p

    def verify(self, config: p4r.ForwardingPipelineConfig) -> Pipeline:
        """Build a pipeline from a ForwardingPipelineConfig without activating it.

        Takes no lock: compiling never stalls Writes, Reads or packets.
        """
        if not config.p4_device_config:
            raise invalid("p4_device_config is empty: send the P4 program (or its compiled artefact)")
        program = self._load_program(config.p4_device_config)
        ours = self._build_p4info(program)
        schema = Schema(ours)
        schema.check_same_ids(config.p4info)
        cookie = config.cookie.cookie if config.HasField("cookie") else None
        p4info = config.p4info if (config.p4info.tables or config.p4info.actions) else ours
        schema = Schema(p4info)
        switch = switch_call(self._make_switch, program)  # can the engine run it?
        return Pipeline(p4info, bytes(config.p4_device_config), cookie, program, schema, switch)

    def set_pipeline(self, action: int, config: p4r.ForwardingPipelineConfig,
                     still_wanted: Callable[[], bool] | None = None) -> None:
        """SetForwardingPipelineConfig actions (spec 14).

        The config is compiled outside every lock; the change itself is made under the
        control lock, so that it is ordered with Write batches (none is lost or split).
        ``still_wanted`` (the RPC's liveness) is asked under that lock: a request whose
        client gave up while it compiled (its deadline passed) changes nothing, so that it
        cannot land after the client's retry and wipe the entries written since.
        """
        A = p4r.SetForwardingPipelineConfigRequest
        if action not in (A.VERIFY, A.VERIFY_AND_SAVE, A.VERIFY_AND_COMMIT, A.COMMIT,
                          A.RECONCILE_AND_COMMIT):
            raise invalid(f"SetForwardingPipelineConfig action {action} is not supported")
        new = self.verify(config) if action != A.COMMIT else None
        if action == A.VERIFY:
            return
        with self.control:
            if still_wanted is not None and not still_wanted():
                raise P4RuntimeError(grpc.StatusCode.CANCELLED,
                                     "the client gave up (deadline passed or cancelled) while "
                                     "the pipeline compiled: nothing changed")
            if action == A.VERIFY_AND_SAVE:
                self.saved = new
            elif action == A.VERIFY_AND_COMMIT:
                self._commit(new)
            elif action == A.COMMIT:
                if self.saved is None:
                    raise P4RuntimeError(
                        grpc.StatusCode.FAILED_PRECONDITION,
                        "COMMIT without a pipeline saved by VERIFY_AND_SAVE",
                    )
                if config.HasField("cookie") and self.saved.cookie is None:
                    self.saved.cookie = config.cookie.cookie
                saved, self.saved = self.saved, None
                self._commit(saved)
            else:
                self._reconcile(new)

    def _commit(self, new: Pipeline) -> None:
        new.switch.on_digest = self._digest_from_switch
        with self.lock:  # packets see the old or the new pipeline, never a mix
            self.pipeline = new
        self.on_pipeline_change(new)

    def _reconcile(self, new: Pipeline) -> None:
        """Commit keeping forwarding state: replay it into the new pipeline, all or nothing.

        The caller holds the control lock, so no Write runs between the snapshot of
        the old state and the switch to the new pipeline: nothing acknowledged is lost.
        """
        old = self.pipeline
        if old is None:
            self._commit(new)
            return
        with self.lock:  # a consistent snapshot (packets update direct counters)
            state = list(_state_as_updates(old))
        try:
            for u in state:
                apply_update(new, u)  # `new` is not visible to packets yet
        except P4RuntimeError as exc:  # the old pipeline was not touched
            raise P4RuntimeError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"RECONCILE_AND_COMMIT: forwarding state does not fit the new pipeline: {exc.message}",
            ) from exc
        self._commit(new)

    # ---- Write and Read ------------------------------------------------------------------

    def write(self, updates: Sequence[p4r.Update]) -> BatchOutcome:
        """Apply a Write batch (spec 12) with CONTINUE_ON_ERROR; see batch.py for large ones.

        The batch holds the control lock (batches and pipeline changes are serialised,
        spec 12.1) and each update holds the engine lock (atomic for packets, spec 11).
        """
        with self.control:
            p = self.require_pipeline()
            return apply_batch(p, updates, apply_update, self.lock)

    def apply(self, update: p4r.Update) -> None:
        """Apply one Update (spec 12), raising P4RuntimeError when it is refused."""
        outcome = self.write([update])
        if outcome.results[0] is not None:
            raise outcome.results[0]

    def read(self, entities) -> list[p4r.Entity]:
        """Entities matching the (possibly wildcard) entities of a ReadRequest (spec 13).

        Writes wait while the state is read (spec 13.3), packets only per entity kind.
        """
        with self.control:
            p = self.require_pipeline()
            with self.lock:
                return read_entities(p, entities)

    # ---- packets and digests ------------------------------------------------------------

    def process(self, port: int, data: bytes) -> None:
        """Run a packet received on `port` through the pipeline and deliver its outputs."""
        with self.lock:
            p = self.pipeline
            if p is None:
                return
            outs = p.switch.process_packet(port, data)
        for o in outs:
            if o.port == self.cpu_port:
                self.on_packet_in(self._packet_in(p, o.data))
            else:
                self.transmit(o.port, o.data)

    def packet_in_from(self, p: Pipeline, data: bytes) -> None:
        """Deliver a frame the pipeline `p` sent to the CPU port (ring I/O runs the engine
        itself and hands these over after each batch)."""
        self.on_packet_in(self._packet_in(p, data))

    def packet_out(self, msg: p4r.PacketOut) -> None:
        """Inject a PacketOut through the CPU port with its @controller_header metadata."""
        if len(msg.payload) > MAX_PACKET_OUT:
            raise invalid(f"packet_out payload of {len(msg.payload)} bytes is above the limit of "
                          f"{MAX_PACKET_OUT}")
        p = self.require_pipeline()
        header = p.schema.controller_headers.get("packet_out")
        prefix = b""
        if header is not None:
            given = {}
            for m in msg.metadata:
                spec = next((x for x in header.metadata if x.id == m.metadata_id), None)
                if spec is None:
                    raise invalid(f"packet_out has no metadata id {m.metadata_id}")
                if m.metadata_id in given:
                    raise invalid(f"packet_out metadata {spec.name!r} given twice")
                given[m.metadata_id] = decode_uint(m.value, spec.bitwidth, f"packet_out.{spec.name}")
            prefix = pack_header([(given.get(x.id, 0), x.bitwidth) for x in header.metadata])
        elif msg.metadata:
            raise invalid("the program declares no @controller_header(\"packet_out\")")
        self.process(self.cpu_port, prefix + bytes(msg.payload))

    def _packet_in(self, p: Pipeline, data: bytes) -> p4r.PacketIn:
        header = p.schema.controller_headers.get("packet_in")
        msg = p4r.PacketIn()
        if header is None:
            msg.payload = data
            return msg
        nbits = sum(x.bitwidth for x in header.metadata)
        nbytes = (nbits + 7) // 8
        value = int.from_bytes(data[:nbytes], "big") >> (nbytes * 8 - nbits)
        shift = nbits
        for x in header.metadata:
            shift -= x.bitwidth
            msg.metadata.add(metadata_id=x.id, value=encode_uint((value >> shift) & ((1 << x.bitwidth) - 1)))
        msg.payload = data[nbytes:]
        return msg

    def _digest_from_switch(self, digest) -> None:
        try:
            self._queue_digest(digest)
        except Exception:  # a digest problem must not drop the packet that made it
            log.exception("digest %s could not be queued", getattr(digest, "name", "?"))

    def _queue_digest(self, digest) -> None:
        p = self.pipeline
        if p is None:
            return
        did = next((i for i, d in p.schema.digests.items() if d.preamble.name == digest.name), None)
        if did is None:
            return
        members = [p4d.P4Data(bitstring=encode_uint(v)) for _, _, v in digest.fields]
        data = p4d.P4Data(**{"struct": p4d.P4StructLike(members=members)})
        self._send_digests(p.digests.add(self.clock_ns(), did, data.SerializeToString()))
        self.digests_pending.set()  # wakes the timer that sends lists when they time out

    def flush_digests(self) -> int | None:
        """Send digest lists whose timeout passed; return the next deadline (ns) or None."""
        with self.lock:
            p = self.pipeline
            if p is None:
                return None
            ready = p.digests.due(self.clock_ns())
            deadline = p.digests.next_deadline()
        self._send_digests(ready)
        return deadline

    def _send_digests(self, ready: list[ReadyList]) -> None:
        for r in ready:
            msg = p4r.DigestList(digest_id=r.digest_id, list_id=r.list_id, timestamp=time.time_ns())
            for raw in r.data:
                msg.data.add().ParseFromString(raw)
            self.on_digest_list(msg)

    def digest_ack(self, ack: p4r.DigestListAck) -> None:
        """Acknowledge a DigestList (spec 16.2.2)."""
        with self.lock:
            p = self.require_pipeline()
            if not p.digests.ack(ack.digest_id, ack.list_id):
                raise invalid(f"no outstanding digest list {ack.list_id} for digest {ack.digest_id}")


def pack_header(fields: list[tuple[int, int]]) -> bytes:
    """Big-endian bit packing of (value, bitwidth) pairs, padded to whole bytes."""
    value = 0
    nbits = 0
    for v, w in fields:
        value = (value << w) | (v & ((1 << w) - 1))
        nbits += w
    pad = (-nbits) % 8
    return (value << pad).to_bytes((nbits + pad) // 8, "big")


def _state_as_updates(p: Pipeline) -> Iterator[p4r.Update]:
    """The controller-written state of a pipeline as Updates that recreate it."""
    for kind, query in (
        ("packet_replication_engine_entry", p4r.PacketReplicationEngineEntry()),
        ("action_profile_member", p4r.ActionProfileMember()),
        ("action_profile_group", p4r.ActionProfileGroup()),
        ("table_entry", p4r.TableEntry()),
        ("digest_entry", p4r.DigestEntry()),
    ):
        for e in read_entity(p, p4r.Entity(**{kind: query})):
            if kind == "table_entry" and p.schema.tables[e.table_entry.table_id].info.is_const_table:
                continue
            yield p4r.Update(type=Update.INSERT, entity=e)
    for table_id, t in p.schema.tables.items():
        table = p.switch.tables[t.name]
        if (table.default_action, tuple(table.default_args)) == tuple(table.initial_default):
            continue
        query = p4r.Entity(table_entry=p4r.TableEntry(table_id=table_id, is_default_action=True))
        for e in read_entity(p, query):
            yield p4r.Update(type=Update.MODIFY, entity=e)
