"""The SyncMesh ``SwitchDriver`` over P4Runtime (finsy), for ``p4src/sglb.p4``.

One primary-controller session per switch: it pushes the pipeline when the
switch's cookie differs (so a daemon restart keeps the running program and its
entries), reads the program's entities back and writes only the differences
(``sglb_mapping.SwitchBook``), reads the ``SglbEgress.port_tx`` counter for
utilisation, follows port oper-status (gNMI, which finsy keeps in
``Switch.ports``) and, on targets that do not inject port-status packets
themselves, sends them as PacketOut (docs/softswitch-api.md, docs/sglb.md).
Works unchanged against ``softswitch run`` and BMv2's ``simple_switch_grpc``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import finsy as fy

from .logs import SwitchLog
from .sglb_mapping import (
    SGLB_TABLES,
    Entity,
    Identity,
    MulticastWrite,
    Plan,
    SwitchBook,
    TableWrite,
)
from .switchops import SwitchOp

log = logging.getLogger("syncmesh.p4runtime")

PORT_STATUS_ETHERTYPE = 0x88B5
PACKET_OUT_PIPELINE = 0  # packet_out.op: run the pipeline as if from the CPU port
KEYLESS_TABLES = ("switch_config", "uplinks")
TX_COUNTER = "SglbEgress.port_tx"


class DriverError(RuntimeError):
    """The switch refused the session or a write (message names the switch)."""


@dataclass(frozen=True)
class PipelineFiles:
    """P4Info (text) and device config of a program, as finsy loads them."""

    p4info: Path
    """P4Info in protobuf text format."""
    device_config: Path
    """The target's ``p4_device_config`` bytes."""


def compile_pipeline(program: Path, out_dir: Path | None = None) -> PipelineFiles:
    """Compile ``program`` with the software target's front end into P4Info + device config."""
    from softswitch.p4info import p4info_from_program, p4info_text
    from softswitch.p4runtime.pipeline_loader import (
        device_config_from_file,
        load_program,
    )

    out = Path(out_dir or tempfile.mkdtemp(prefix="sglb-pipeline-"))
    out.mkdir(parents=True, exist_ok=True)
    blob = device_config_from_file(program)
    files = PipelineFiles(out / f"{program.stem}.p4info.txtpb", out / f"{program.stem}.p4cfg")
    files.p4info.write_text(p4info_text(p4info_from_program(load_program(blob))))
    files.device_config.write_bytes(blob)
    return files


def port_status_frame(port: int, up: bool, seq: int) -> bytes:
    """Ethernet frame of a port-status packet (docs/softswitch-api.md), without packet_out."""
    eth = b"\xff" * 6 + b"\x00" * 6 + PORT_STATUS_ETHERTYPE.to_bytes(2, "big")
    return eth + bytes([1, 2 if up else 1]) + port.to_bytes(2, "big") + seq.to_bytes(4, "big")


def _suffix(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def to_finsy(e: Entity) -> Any:
    """A mapping entity as a finsy entity."""
    if isinstance(e, MulticastWrite):
        return fy.P4MulticastGroupEntry(e.group_id, replicas=list(e.ports))
    return fy.P4TableEntry(
        e.table,
        match=fy.Match(dict(e.match)) if e.match else None,
        action=fy.Action(e.action, **dict(e.params)),
        is_default_action=e.is_default,
    )


def from_finsy(entry: Any, schema: Any) -> Entity | None:
    """A read-back finsy entity as a mapping entity (None for what the mapping never writes)."""
    if isinstance(entry, fy.P4MulticastGroupEntry):
        ports = []
        for r in entry.replicas:
            ports.append(r if isinstance(r, int) else r[0])
        return MulticastWrite(entry.multicast_group_id, tuple(ports))
    if not isinstance(entry, fy.P4TableEntry) or entry.action is None:
        return None
    action = entry.action
    if not isinstance(action, fy.P4TableAction):
        return None
    match: tuple = ()
    if entry.match is not None and not entry.is_default_action:
        # finsy names match fields by alias; the mapping uses the P4Info names
        fields = schema.tables[entry.table_id].match_fields
        match = tuple((fields[k].name, v) for k, v in entry.match.items())
    params = tuple((k, int(v)) for k, v in (action.args or {}).items())
    return TableWrite(_suffix(entry.table_id), match, _suffix(action.name), params)


class P4RuntimeDriver:
    """A SyncMesh switch session as P4Runtime primary (see ``syncmesh.driver.SwitchDriver``)."""

    def __init__(self, name: str, address: str, device_id: int, identity: Identity,
                 pipeline: PipelineFiles, ports: Iterable[int], *,
                 inject_port_status: bool = False, poll_interval: float = 0.02,
                 election_id: int = 10) -> None:
        self.name = name
        self.address = address
        self.ports = tuple(sorted(ports))
        self.inject_port_status = inject_port_status
        """True on targets that do not turn carrier changes into port-status packets."""
        self.poll_interval = poll_interval
        self.book = SwitchBook(identity)
        self._options = fy.SwitchOptions(p4info=pipeline.p4info, p4blob=pipeline.device_config,
                                         device_id=device_id, initial_election_id=election_id)
        self._switch: fy.Switch | None = None
        self._desired: dict[tuple, SwitchOp] = {}
        self._lock = asyncio.Lock()
        self._log = SwitchLog(name, log)
        self.writes = 0
        """Entities written since start (inserts, modifies, deletes)."""

    @property
    def connected(self) -> bool:
        """True while the P4Runtime stream is up."""
        return self._switch is not None and self._switch.is_up

    def _sw(self) -> fy.Switch:
        if self._switch is None or not self._switch.is_up:
            raise DriverError(f"{self.name}: not connected to {self.address}")
        return self._switch

    async def connect(self) -> None:
        """Become primary; push the pipeline only if the switch runs another one (cookie)."""
        await self.close()
        sw = fy.Switch(self.name, self.address, self._options)
        try:
            await sw.__aenter__()
        except Exception as e:
            raise DriverError(f"{self.name}: cannot connect to {self.address}: {e}") from None
        self._switch = sw
        if not sw.is_primary:
            await self.close()
            raise DriverError(f"{self.name}: another controller is primary on {self.address}")
        self._log.event("p4runtime_connected", address=self.address)

    async def read_entities(self) -> list[Entity]:
        """Everything the program's tables and multicast groups hold, as mapping entities."""
        sw = self._sw()
        requests: list[Any] = [fy.P4TableEntry(t) for t in sorted(SGLB_TABLES)
                               if t not in KEYLESS_TABLES]
        requests += [fy.P4TableEntry(t, is_default_action=True) for t in KEYLESS_TABLES]
        requests.append(fy.P4MulticastGroupEntry())
        out: list[Entity] = []
        async for entry in sw.read(requests):
            e = from_finsy(entry, sw.p4info)
            if e is not None:
                out.append(e)
        return out

    async def reconcile(self, desired: Mapping[tuple, SwitchOp]) -> None:
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
        if plan.empty:
            self.book.commit(plan)
            return
        sw = self._sw()
        try:
            if plan.delete:
                await sw.delete([to_finsy(e) for e in plan.delete])
            if plan.insert:
                await sw.insert([to_finsy(e) for e in plan.insert])
            if plan.modify:
                await sw.modify([to_finsy(e) for e in plan.modify])
        except fy.P4ClientError as e:
            # what was written is unknown now: the next reconcile reads it back
            raise DriverError(f"{self.name}: write refused: {e}") from None
        self.writes += len(plan.delete) + len(plan.insert) + len(plan.modify)
        self.book.commit(plan)

    async def read_tx_bytes(self) -> dict[int, int]:
        """Cumulative bytes sent per fabric port (``SglbEgress.port_tx``)."""
        sw = self._sw()
        out: dict[int, int] = {}
        async for c in sw.read([fy.P4CounterEntry(TX_COUNTER, index=p) for p in self.ports]):
            out[c.index] = c.byte_count
        return out

    def port_state(self) -> dict[int, bool]:
        """Oper-status of every port the switch reports ({data-plane port: up})."""
        sw = self._sw()
        return {p.id: p.up for p in sw.ports}

    async def port_events(self) -> AsyncIterator[dict[int, bool]]:
        """The current port state, then every change; ends with DriverError when the stream drops."""
        last = self.port_state()
        yield dict(last)
        while True:
            await asyncio.sleep(self.poll_interval)
            if not self.connected:
                raise DriverError(f"{self.name}: P4Runtime stream to {self.address} lost")
            now = self.port_state()
            changed = {p: up for p, up in now.items() if last.get(p) != up}
            last = now
            if changed:
                yield changed

    async def send_port_status(self, port: int, up: bool, seq: int) -> None:
        """PacketOut of a port-status packet, on targets that need the controller to send it."""
        if not self.inject_port_status:
            return  # softswitch injects it itself on every carrier change
        await self._sw().write([fy.P4PacketOut(port_status_frame(port, up, seq),
                                               op=PACKET_OUT_PIPELINE, reserved=0, egress_port=0)])

    async def close(self) -> None:
        """Drop the session; the switch keeps forwarding with its entries."""
        sw, self._switch = self._switch, None
        if sw is not None:
            with contextlib.suppress(Exception):
                await sw.__aexit__(None, None, None)
