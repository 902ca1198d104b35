"""The SyncMesh ``SwitchDriver`` over P4Runtime (finsy), for the SGLB programs.

One primary-controller session per switch: it pushes the pipeline when the
switch's cookie differs (so a daemon restart keeps the running program and its
entries), reads the program's entities back and writes only the differences
(``sglb_switch.SwitchBook`` with the program's mapping), reads the
``SglbEgress.port_tx`` counter for utilisation, follows port oper-status
(gNMI: finsy emits ``PORT_UP`` / ``PORT_DOWN`` on the switch's event emitter)
and, on targets that do not inject port-status packets themselves, sends them
as PacketOut
(docs/softswitch-api.md, docs/sglb.md). Works unchanged against
``softswitch run`` and BMv2's ``simple_switch_grpc``. The P4Runtime encoding of
entities is ``syncmesh.p4runtime_entities`` (no connection needed).

A session is finsy's own lifecycle, ``async with fy.Switch(...)``, held open
by ``session()``; leaving it (or cancelling the task in it) closes the
channel. Every failure at this boundary is one ``DriverError`` that keeps
finsy's ``P4ClientError`` and its question-style predicates.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

import finsy as fy
from finsy.gnmiclient import GNMIClientError

from switchtarget import port_status
from switchtarget.pipeline import PipelineFiles, compile_pipeline

from .entities import Entity, Plan
from .logs import SwitchLog
from .p4runtime_entities import from_finsy, plan_finsy, to_finsy
from .sglb_programs import mapping_for
from .sglb_switch import Identity, SwitchBook, punted_notice
from .switchops import OpKey, SwitchOp
from .tasks import cancel_and_wait

__all__ = ["KEYLESS_TABLES", "TX_COUNTER", "DriverError", "Failure", "P4RuntimeDriver",
           "PipelineFiles", "compile_pipeline", "from_finsy", "switch_read", "to_finsy"]

log = logging.getLogger("syncmesh.p4runtime")

PACKET_OUT_PIPELINE = 0  # packet_out.op: run the pipeline as if from the CPU port
KEYLESS_TABLES = ("switch_config", "uplinks")
TX_COUNTER = "SglbEgress.port_tx"
"""The egress byte counter, named alike in both programs. For TNA that holds for bf-p4c's
P4Info with standard extern messages (--p4runtime-force-std-externs, what a standard
P4Runtime client reads); its Tofino-specific P4Info would name it pipe.SglbEgress.port_tx,
as a barefoot.Counter extern."""


class Failure(enum.Enum):
    """What went wrong at the switch boundary."""

    UNREACHABLE = "unreachable"
    """No P4Runtime session could be opened."""
    NOT_PRIMARY = "not_primary"
    """Another controller is primary."""
    DISCONNECTED = "disconnected"
    """No session, or the stream dropped."""
    REFUSED = "refused"
    """The switch refused a request (``cause`` says why)."""


class DriverError(RuntimeError):
    """The switch refused the session or a request; the message names the switch.

    ``cause`` is finsy's ``P4ClientError`` when the switch answered with a
    P4Runtime error; its predicates are forwarded so that callers can ask
    what happened instead of matching texts.
    """

    def __init__(self, message: str, failure: Failure,
                 cause: fy.P4ClientError | None = None) -> None:
        super().__init__(message)
        self.failure = failure
        self.cause = cause

    @property
    def is_unreachable(self) -> bool:
        """True when no P4Runtime session could be opened."""
        return self.failure is Failure.UNREACHABLE

    @property
    def is_not_primary(self) -> bool:
        """True when another controller holds the primary role."""
        return self.failure is Failure.NOT_PRIMARY

    @property
    def is_disconnected(self) -> bool:
        """True when there is no session or the stream dropped."""
        return self.failure is Failure.DISCONNECTED

    @property
    def is_election_id_used(self) -> bool:
        """True when the switch refused our election id (``P4ClientError``)."""
        return self.cause is not None and self.cause.is_election_id_used

    @property
    def is_pipeline_missing(self) -> bool:
        """True when the switch has no pipeline (``P4ClientError``)."""
        return self.cause is not None and self.cause.is_pipeline_missing

    @property
    def is_not_found_only(self) -> bool:
        """True when every refused update of a write was NOT_FOUND (``P4ClientError``)."""
        return self.cause is not None and self.cause.is_not_found_only


_E = TypeVar("_E")


def switch_read(sw: fy.Switch, requests: Sequence[_E]) -> AsyncIterator[_E]:
    """``sw.read(requests)``, typed: finsy 0.30 declares the overloads of ``Switch.read``
    as coroutines while the method is an async generator of the requested entities."""
    return cast("AsyncIterator[_E]", sw.read(requests))


async def _cancel(task: asyncio.Task[Any]) -> None:
    await cancel_and_wait([task])  # never swallows a cancellation of the session's task


class P4RuntimeDriver:
    """A SyncMesh switch session as P4Runtime primary (see ``syncmesh.driver.SwitchDriver``)."""

    def __init__(self, name: str, address: str, device_id: int, identity: Identity,
                 pipeline: PipelineFiles, ports: Iterable[int], *,
                 inject_port_status: bool = False, election_id: int = 10) -> None:
        self.name = name
        self.address = address
        self.ports = tuple(sorted(ports))
        self.inject_port_status = inject_port_status
        """True on targets that do not turn carrier changes into port-status packets."""
        self.book = SwitchBook(mapping_for(identity))
        self._options = fy.SwitchOptions(p4info=pipeline.p4info, p4blob=pipeline.device_config,
                                         device_id=device_id, initial_election_id=election_id)
        self._switch: fy.Switch | None = None
        self._port_changes: asyncio.Queue[dict[int, bool] | None] = asyncio.Queue()
        self._ports = fy.SwitchPortList()  # type: ignore[no-untyped-call]  # unannotated in finsy
        self._desired: dict[OpKey, SwitchOp] = {}
        self._lock = asyncio.Lock()
        # port-status packets go out from their own task, not under ``_lock`` (they must not
        # wait for table writes); gRPC takes one message at a time on the stream
        self._stream_lock = asyncio.Lock()
        self._log = SwitchLog(name, log)
        self.writes = 0
        """Entities written since start (inserts, modifies, deletes)."""
        self.write_requests = 0
        """Write RPCs sent since start (one per plan)."""

    @property
    def connected(self) -> bool:
        """True while the P4Runtime stream is up."""
        return self._switch is not None and self._switch.is_up

    def _sw(self) -> fy.Switch:
        if self._switch is None or not self._switch.is_up:
            raise DriverError(f"{self.name}: not connected to {self.address}",
                              Failure.DISCONNECTED)
        return self._switch

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[None]:
        """Be primary for the ``async with`` block: finsy's lifecycle opens the channel,
        arbitrates and pushes the pipeline only if the switch runs another one (cookie);
        leaving the block closes the channel, the switch keeps forwarding."""
        sw = fy.Switch(self.name, self.address, self._options)
        changes: asyncio.Queue[dict[int, bool] | None] = asyncio.Queue()

        def port_changed(_sw: fy.Switch, port: fy.SwitchPort) -> None:
            changes.put_nowait({port.id: port.up})

        sw.ee.on(fy.SwitchEvent.PORT_UP, port_changed)
        sw.ee.on(fy.SwitchEvent.PORT_DOWN, port_changed)
        sw.ee.on(fy.SwitchEvent.CHANNEL_DOWN, lambda _sw: changes.put_nowait(None))
        try:
            async with contextlib.AsyncExitStack() as stack:
                try:
                    await stack.enter_async_context(sw)
                except asyncio.CancelledError:
                    task = asyncio.current_task()
                    if task is not None and task.cancelling():
                        raise  # we are being cancelled
                    # finsy pushes or reads the pipeline in a task of its own; when that fails
                    # (refused, or past its deadline on a loaded switch) it cancels its stream
                    # task, and that cancellation surfaces here: a failure to retry, not ours
                    raise DriverError(f"{self.name}: the switch at {self.address} did not take "
                                      "or report the pipeline (finsy's log has the reply)",
                                      Failure.UNREACHABLE) from None
                except Exception as e:
                    raise DriverError(f"{self.name}: cannot connect to {self.address}: {e}",
                                      Failure.UNREACHABLE,
                                      e if isinstance(e, fy.P4ClientError) else None) from None
                if not sw.is_primary:
                    raise DriverError(f"{self.name}: another controller is primary on "
                                      f"{self.address}", Failure.NOT_PRIMARY)
                self._ports = await self._follow_ports(sw, stack, changes)
                notices = asyncio.get_running_loop().create_task(
                    self._read_notices(sw), name=f"{self.name}:notices")
                stack.push_async_callback(_cancel, notices)
                self._switch, self._port_changes = sw, changes
                self._log.event("p4runtime_connected", address=self.address)
                yield
        finally:
            self._switch = None
            self._ports = fy.SwitchPortList()  # type: ignore[no-untyped-call]  # unannotated in finsy
            sw.ee.remove_all_listeners()

    async def _read_notices(self, sw: fy.Switch) -> None:
        """Notices the data plane applied (PacketIn, EtherType 0x88B6): the book writes
        their epochs back once the desired state includes them (sglb_mapping)."""
        async for packet in sw.read_packets(eth_types={0x88B6}):
            notice = punted_notice(int(packet.metadata.get("reason", 0)), packet.payload)
            if notice is not None:
                self.book.note_notice(notice)

    async def _follow_ports(self, sw: fy.Switch, stack: contextlib.AsyncExitStack,
                            changes: asyncio.Queue[dict[int, bool] | None]) -> fy.SwitchPortList:
        """Port oper-status over gNMI, announced as PORT_UP / PORT_DOWN on ``sw.ee``.

        finsy 0.30 keeps ``Switch.ports`` up to date but starts its listener
        without the switch, so its emitter never fires port events; this
        session's own ``SwitchPortList`` is listened to with the switch, which
        makes finsy emit them. Targets without gNMI report no ports.
        """
        gnmi = await stack.enter_async_context(
            fy.GNMIClient(self.address, self._options.channel_credentials))
        ports = fy.SwitchPortList()  # type: ignore[no-untyped-call]  # unannotated in finsy
        try:
            await ports.subscribe(gnmi)
        except GNMIClientError as e:
            if e.code != fy.GRPCStatusCode.UNIMPLEMENTED:
                raise DriverError(f"{self.name}: gNMI port subscription failed: {e}",
                                  Failure.REFUSED) from None
            self._log.event("gnmi_unimplemented", logging.WARNING)
            return ports
        stack.callback(ports.close)
        if ports:
            listener = asyncio.get_running_loop().create_task(
                ports.listen(sw), name=f"{self.name}:ports")
            # the gNMI stream ending means the switch is gone, as CHANNEL_DOWN does
            listener.add_done_callback(lambda _t: changes.put_nowait(None))
            stack.push_async_callback(_cancel, listener)
        return ports

    async def read_entities(self) -> list[Entity]:
        """Everything the program's tables and multicast groups hold, as mapping entities."""
        sw = self._sw()
        tables = self.book.mapping.tables
        requests: list[fy.P4TableEntry | fy.P4MulticastGroupEntry] = [
            fy.P4TableEntry(t) for t in sorted(tables) if t not in KEYLESS_TABLES]
        requests += [fy.P4TableEntry(t, is_default_action=True) for t in KEYLESS_TABLES]
        requests.append(fy.P4MulticastGroupEntry())
        out: list[Entity] = []
        async for entry in switch_read(sw, requests):
            e = from_finsy(entry, sw.p4info)
            if e is not None:
                out.append(e)
        return out

    async def reconcile(self, desired: Mapping[OpKey, SwitchOp]) -> None:
        """Read back, adopt what the switch holds, write only the differences."""
        async with self._lock:
            self._desired = dict(desired)
            self.book.adopt(await self.read_entities())
            await self._write_plan(self.book.plan(self._desired))

    async def apply(self, ops: Sequence[SwitchOp]) -> None:
        """Merge changed ops into the desired state and write what that changes."""
        async with self._lock:
            for op in ops:
                self._desired[op.key] = op
            if self._switch is None:
                return  # the next reconcile writes it
            await self._write_plan(self.book.plan(self._desired))

    async def _write_plan(self, plan: Plan) -> None:
        await self._send_writebacks(plan)
        if plan.empty:
            self.book.commit(plan)
            return
        sw = self._sw()
        try:
            await sw.write(plan_finsy(plan))   # one WriteRequest per plan
            self.write_requests += 1
        except fy.P4ClientError as e:
            # what was written is unknown now: the next reconcile reads it back
            raise DriverError(f"{self.name}: write refused: {e}", Failure.REFUSED, e) from None
        self.writes += len(plan.delete) + len(plan.insert) + len(plan.modify)
        self.book.commit(plan)

    async def _send_writebacks(self, plan: Plan) -> None:
        """Confirm newly written-back epochs with PacketOuts where the program takes them
        so (the Tofino program keeps them in registers; sglb.p4 needs none)."""
        frames = self.book.writeback_frames(plan)
        if frames:
            async with self._stream_lock:
                await self._sw().write([fy.P4PacketOut(f, op=PACKET_OUT_PIPELINE, reserved=0,
                                                       egress_port=0) for f in frames])

    async def read_tx_bytes(self) -> dict[int, int]:
        """Cumulative bytes sent per fabric port (``SglbEgress.port_tx``)."""
        sw = self._sw()
        out: dict[int, int] = {}
        requests = [fy.P4CounterEntry(TX_COUNTER, index=p) for p in self.ports]
        async for c in switch_read(sw, requests):
            if c.index is not None:
                out[c.index] = c.byte_count
        return out

    def port_state(self) -> dict[int, bool]:
        """Oper-status of every port the switch reports ({data-plane port: up})."""
        self._sw()
        return {p.id: p.up for p in self._ports}

    async def port_events(self) -> AsyncIterator[dict[int, bool]]:
        """The current port state, then every change; ends with DriverError when the stream drops.

        Changes come from finsy's emitter; those that arrive together are merged
        into one batch and a port that flapped back within it is left out.
        """
        last = self.port_state()
        changes = self._port_changes
        yield dict(last)
        while True:
            batch = [await changes.get()]
            while not changes.empty():
                batch.append(changes.get_nowait())
            now = dict(last)
            for change in batch:
                if change is None:
                    raise DriverError(f"{self.name}: P4Runtime stream to {self.address} lost",
                                      Failure.DISCONNECTED)
                now.update(change)
            changed = {p: up for p, up in now.items() if last.get(p) != up}
            last = now
            if changed:
                yield changed

    async def send_port_status(self, port: int, up: bool, seq: int) -> bool:
        """PacketOut of a port-status packet, on targets that need the controller to send it;
        True when one was sent. Never waits for a table write in flight (``apply``)."""
        if not self.inject_port_status:
            return False  # softswitch injects it itself on every carrier change
        frame = fy.P4PacketOut(port_status.encode(port, up, seq), op=PACKET_OUT_PIPELINE,
                               reserved=0, egress_port=0)
        async with self._stream_lock:
            await self._sw().write([frame])
        return True
