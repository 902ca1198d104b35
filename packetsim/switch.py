"""One fabric switch in the simulator: sglb.p4 on softswitch's engine, and its SyncMesh core.

The switch is a softswitch P4Runtime ``Device`` whose engine reads ns-3's clock:
packets go through ``Device.process`` as on ``softswitch run``; the SyncMesh
core's ``Program`` actions become the entities the daemon writes
(``SwitchBook.plan``, encoded by finsy as the daemon's driver does) applied by
``Device.write``, the target's own P4Runtime write path; counters are read back
through ``Device.read``; notices the data plane punts reach the book as
PacketIns. Nothing is set up in the switch that the daemon would not write.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import finsy as fy
from finsy.proto import p4r
from syncmesh.config import CoreConfig
from syncmesh.core import Action, Disconnect, Event, PortStatusOut, Program, Send, SyncMeshCore
from syncmesh.messages import Message
from syncmesh.p4runtime_driver import TX_COUNTER
from syncmesh.p4runtime_entities import plan_updates
from syncmesh.sglb_mapping import Identity, SwitchBook, punted_notice
from syncmesh.sglb_programs import mapping_for
from syncmesh.switchops import OpKey, SwitchOp

from fabricmodel import Fabric
from softswitch.engine import Switch as Engine
from softswitch.p4runtime.device import Device
from softswitch.runner import port_status_packet


@dataclass(frozen=True)
class Pipeline:
    """sglb.p4 compiled once for every switch: P4Info, finsy's schema, the device config."""

    p4info: Any
    schema: fy.P4Schema
    config: p4r.ForwardingPipelineConfig
    reason_id: int
    """The metadata id of the packet_in header's ``reason`` (0: none)."""


def make_pipeline(device_config: bytes) -> Pipeline:
    """The pipeline of a softswitch device config (the program's source, as the daemon pushes it)."""
    from softswitch.p4info import p4info_from_program
    from softswitch.p4runtime.pipeline_loader import load_program

    info = p4info_from_program(load_program(device_config))
    config = p4r.ForwardingPipelineConfig(p4info=info, p4_device_config=device_config)
    reason_id = 0
    for meta in info.controller_packet_metadata:
        if meta.preamble.name == "packet_in":
            reason_id = next((m.id for m in meta.metadata if m.name == "reason"), 0)
    return Pipeline(info, fy.P4Schema(info), config, reason_id)


class SimSwitch:
    """A switch of the fabric, its data plane and its control plane, on simulated time."""

    def __init__(self, fabric: Fabric, name: str, pipeline: Pipeline, identity: Identity,
                 core_config: CoreConfig, send: Callable[[str, str, Message, float], None],
                 engine: str | None = None):
        self.name = name
        self.fabric = fabric
        self.pipeline = pipeline
        self.cpu_port = fabric.cpu_port
        self.now_us = 0
        self.device = Device(fabric.switch(name).id, cpu_port=self.cpu_port,
                             make_switch=lambda prog: Engine(prog, cpu_port=self.cpu_port,
                                                             clock=self._clock, engine=engine))
        A = p4r.SetForwardingPipelineConfigRequest
        self.device.set_pipeline(A.VERIFY_AND_COMMIT, pipeline.config)
        self.core = SyncMeshCore(fabric, name, incarnation=1, config=core_config)
        self.book = SwitchBook(mapping_for(identity))
        self.desired: dict[OpKey, SwitchOp] = {}
        self._send = send
        self._out: list[tuple[int, bytes]] = []
        self.dev_of_port: dict[int, int] = {}
        self.device.transmit = self._transmit
        self.device.on_packet_in = self._packet_in
        self.port_seq = 0
        self.writes = 0
        self.events: dict[str, int] = {}
        self._counter_id = pipeline.schema.counters[TX_COUNTER].id
        self.fabric_ports = sorted(p for p, info in fabric.ports(name).items()
                                   if info.kind == "fabric")

    def _clock(self) -> int:
        return self.now_us

    @property
    def engine(self) -> Engine:
        """The engine running the program (for reading its registers and counters in tests)."""
        p = self.device.pipeline
        assert p is not None
        return p.switch  # type: ignore[no-any-return]

    # ---- data plane ----------------------------------------------------------------

    def _transmit(self, port: int, data: bytes) -> None:
        dev = self.dev_of_port.get(port)
        if dev is not None:
            self._out.append((dev, data))

    def receive(self, port: int, data: bytes, now_ns: int) -> list[tuple[int, bytes]]:
        """A frame arriving on ``port``: the frames the program sends, as (device, bytes)."""
        self.now_us = now_ns // 1000
        out: list[tuple[int, bytes]] = []
        self._out = out
        self.device.process(port, data)
        return out

    def port_changed(self, port: int, up: bool, now_ns: int) -> list[tuple[int, bytes]]:
        """The port-status packet of a carrier change, through the CPU port behind the
        program's packet_out header, as ``softswitch run`` injects it."""
        self.port_seq += 1
        p = self.device.pipeline
        assert p is not None
        header = p.schema.controller_headers.get("packet_out")
        widths = [m.bitwidth for m in header.metadata] if header is not None else None
        return self.receive(self.cpu_port, port_status_packet(widths, port, up, self.port_seq),
                            now_ns)

    def _packet_in(self, msg: p4r.PacketIn) -> None:
        reason = next((int.from_bytes(m.value, "big") for m in msg.metadata
                       if m.metadata_id == self.pipeline.reason_id), 0)
        notice = punted_notice(reason, bytes(msg.payload))
        if notice is not None:
            self.book.note_notice(notice)

    # ---- control plane -------------------------------------------------------------

    def execute(self, actions: list[Action], now: float) -> None:
        """Carry out the core's actions as the daemon does."""
        for a in actions:
            if isinstance(a, Send):
                self._send(self.name, a.peer, a.message, now)
            elif isinstance(a, Program):
                for op in a.ops:
                    self.desired[op.key] = op
                self.write_plan()
            elif isinstance(a, Event):
                self.events[a.name] = self.events.get(a.name, 0) + 1
            elif isinstance(a, (PortStatusOut, Disconnect)):
                pass  # the simulated target injects port status itself; sessions never drop

    def write_plan(self) -> None:
        """Write what the desired state changes, through the device's P4Runtime writes."""
        plan = self.book.plan(self.desired)
        if plan.empty:
            self.book.commit(plan)
            return
        updates = plan_updates(plan, self.pipeline.schema)
        outcome = self.device.write(updates)
        refused = [r for r in outcome.results if r is not None]
        if refused:
            raise RuntimeError(f"{self.name}: the switch refused {len(refused)} of "
                               f"{len(updates)} writes, first: {refused[0]}")
        self.writes += len(updates)
        self.book.commit(plan)

    def counter(self, name: str) -> dict[int, tuple[int, int]]:
        """Every index of a counter of the program, read as a P4Runtime client reads it:
        {index: (packets, bytes)}."""
        cid = self.pipeline.schema.counters[name].id
        request = p4r.Entity(counter_entry=p4r.CounterEntry(counter_id=cid))
        return {e.counter_entry.index.index: (e.counter_entry.data.packet_count,
                                              e.counter_entry.data.byte_count)
                for e in self.device.read([request])}

    def tx_bytes(self) -> dict[int, int]:
        """Cumulative bytes sent per fabric port, read as the daemon reads them."""
        request = p4r.Entity(counter_entry=p4r.CounterEntry(counter_id=self._counter_id))
        out: dict[int, int] = {}
        wanted = set(self.fabric_ports)
        for e in self.device.read([request]):
            c = e.counter_entry
            if c.index.index in wanted:
                out[c.index.index] = c.data.byte_count
        return out
