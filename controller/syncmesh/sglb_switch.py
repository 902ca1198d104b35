"""What SyncMesh knows of an SGLB switch whatever program it runs.

* ``Identity``: the per-switch constants that are not part of the fabric view:
  its MAC, its settings (``sglb.settings.SwitchSettings``), the MAX_PATHS and
  the target (``sglb.settings.SwitchTarget``) its program was compiled for.
* ``DesiredView``: the core's desired state read the way both programs need it
  (the configuration, port capacities, a leaf's paths and profiles, a spine's
  downlinks, the neighbour bound to each port), so that each program's mapping
  builds its entities from the ops directly.
* ``ProgramMapping``: what a program's mapping provides
  (``syncmesh.sglb_mapping.V1ModelMapping``,
  ``syncmesh.sglb_tna_mapping.TnaMapping``; ``syncmesh.sglb_programs.mapping_for``
  picks one by target).
* Notices the data plane punted, the epochs written back once the desired
  state agrees with them (docs/sglb.md, "Notices and the control plane"), and
  ``SwitchBook``, a driver's memory of what it wrote.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from sglb.codes import Punt
from sglb.config import (
    MAX_PATHS,
    QMAX,
    capacity_weights,
    check_max_paths,
    downlink_share,
    epoch_newer,
)
from sglb.settings import DEFAULT, SwitchSettings, SwitchTarget

from .entities import Entity, EntityKey, MulticastWrite, Plan, TableWrite, entity_key, reconcile
from .switchops import (
    HostRoute,
    LeafRoute,
    MulticastGroup,
    OpKey,
    PathEntry,
    PortCapacity,
    PortPeer,
    RemoteCongestion,
    SpinePaths,
    SpineRoute,
    SwitchConfig,
    SwitchOp,
)


class MappingError(ValueError):
    """A desired state the switch's program cannot hold (too many paths, bundles wider
    than two, ...)."""


@dataclass(frozen=True)
class Identity:
    """Per-switch constants that are not part of the fabric view."""

    switch_mac: int
    settings: SwitchSettings = DEFAULT
    """What set_switch carries besides the fabric view, the notices' copies and the DRE
    period (checked against ``target``'s limits)."""
    max_paths: int = MAX_PATHS
    """MAX_PATHS the switch's program was compiled with."""
    target: SwitchTarget = SwitchTarget.V1MODEL
    """The switch's program and target: p4src/sglb.p4 on v1model, p4src/tna/sglb.p4 on
    Tofino (two passes: the profile's masks are an egress table of their own) or Tofino 2."""

    def __post_init__(self) -> None:
        check_max_paths(self.max_paths)
        if not isinstance(self.target, SwitchTarget):
            names = ", ".join(t.value for t in SwitchTarget)
            raise ValueError(f"target must be a SwitchTarget ({names}), got {self.target!r}")
        self.settings.check(self.target)


def switch_mac(switch_id: int) -> int:
    """A locally administered MAC for a switch: 02:53:47:00:<id>."""
    return (0x025347 << 24) | (switch_id & 0xFFFFFF)


def lpm(prefix: str) -> tuple[int, int]:
    """(address, prefix length) of an IPv4 prefix."""
    net = ipaddress.IPv4Network(prefix)
    return int(net.network_address), net.prefixlen


def _host(ip: str) -> tuple[int, int]:
    return int(ipaddress.IPv4Address(ip)), 32


def _mac(text: str) -> int:
    return int(text.replace(":", ""), 16)


_Op = TypeVar("_Op", bound=SwitchOp)


@dataclass(frozen=True)
class Profile:
    """A leaf's view of one destination leaf: live paths, remote levels, weights."""

    dst_leaf: int
    live_mask: int
    levels: tuple[int, ...]
    """Remote congestion level per path index (0..QMAX), MAX_PATHS of them."""
    weights: tuple[int, ...]
    """Capacity weight per path index (0: no path there)."""


@dataclass(frozen=True)
class Downlinks:
    """A spine's links toward one leaf: ``a`` and ``b`` (b = a for a single link) and the
    flows of 256 that take a; None when the leaf is unreachable."""

    dst_leaf: int
    members: tuple[int, int, int] | None


class DesiredView:
    """A switch's desired state as both SGLB programs read it (``MappingError`` where
    the ops ask for more than the programs hold)."""

    def __init__(self, desired: Mapping[OpKey, SwitchOp], max_paths: int = MAX_PATHS) -> None:
        self._by_type: dict[type, list[SwitchOp]] = defaultdict(list)
        for op in desired.values():
            self._by_type[type(op)].append(op)
        configs = self.ops(SwitchConfig)
        if not configs:
            raise MappingError("no SwitchConfig in the desired state")
        self.config = configs[0]
        self.max_paths = max_paths
        self.is_leaf = self.config.role == "leaf"
        self.capacity = {op.port: op.mbps for op in self.ops(PortCapacity)}
        self.spine_of = {i: op.spine_id for op in self.ops(SpinePaths) for i in op.paths}
        """{path index: spine id} of a leaf."""
        self.uplinks: dict[int, int] = {}
        """A leaf's {path index: port}."""
        if self.is_leaf:
            for op in self.ops(PathEntry):
                self.uplinks[op.index] = op.port
            if self.uplinks and max(self.uplinks) >= max_paths:
                raise MappingError(f"sglb.p4 holds {max_paths} paths per leaf (MAX_PATHS), "
                                   f"this leaf has {max(self.uplinks) + 1} uplinks")

    def ops(self, kind: type[_Op]) -> list[_Op]:
        """The desired ops of one type, in the core's order."""
        return list(self._by_type[kind])  # type: ignore[arg-type]

    def profiles(self) -> list[Profile]:
        """A leaf's profile per destination leaf, by destination."""
        paths: dict[int, dict[int, PathEntry]] = defaultdict(dict)
        for op in self.ops(PathEntry):
            paths[op.dst_leaf][op.index] = op
        remote = {(op.dst_leaf, op.index): op.level for op in self.ops(RemoteCongestion)}
        out = []
        for dst in sorted(paths):
            per_dst = paths[dst]
            caps = [per_dst[i].capacity_mbps if i in per_dst else 0.0
                    for i in range(self.max_paths)]
            out.append(Profile(dst, sum(1 << i for i, p in per_dst.items() if p.live),
                               tuple(min(QMAX, remote.get((dst, i), 0))
                                     for i in range(self.max_paths)),
                               tuple(capacity_weights(caps))))
        return out

    def downlinks(self) -> list[Downlinks]:
        """A spine's links per destination leaf, share in proportion to capacity."""
        out = []
        for op in self.ops(SpineRoute):
            if len(op.ports) > 2:
                raise MappingError(f"leaf {op.dst_leaf}: sglb.p4 holds at most 2 parallel "
                                   f"links per leaf, got {len(op.ports)}")
            if not op.ports:
                out.append(Downlinks(op.dst_leaf, None))
                continue
            a = op.ports[0]
            b = op.ports[1] if len(op.ports) > 1 else a
            share = downlink_share(self.capacity[a], self.capacity[b]) if b != a else 255
            out.append(Downlinks(op.dst_leaf, (a, b, share)))
        return out

    def peers(self) -> list[tuple[int, int, int]]:
        """A spine's (port, leaf id, sibling port or the port itself) per downlink."""
        out = []
        for op in self.ops(PortPeer):
            if len(op.siblings) > 1:
                raise MappingError(f"port {op.port}: sglb.p4 holds at most 2 parallel links "
                                   "per leaf")
            out.append((op.port, op.leaf_id, op.siblings[0] if op.siblings else op.port))
        return out

    def neighbours(self) -> dict[int, tuple[str, tuple[tuple[str, int], ...]]]:
        """port_neighbour's action per port: a host, a spine (leaf uplinks), a leaf (spine
        downlinks)."""
        bindings: dict[int, tuple[str, tuple[tuple[str, int], ...]]] = {}
        for op in self.ops(HostRoute):
            bindings[op.port] = ("bind_host", ())
        if self.is_leaf:
            for sp in self.ops(SpinePaths):
                for index in sp.paths:
                    if index in self.uplinks:
                        bindings[self.uplinks[index]] = ("bind_spine",
                                                         (("spine_id", sp.spine_id),))
        for port, leaf, _sibling in self.peers():
            bindings[port] = ("bind_leaf", (("leaf_id", leaf),))
        return bindings

    def routes(self, mac: int) -> list[Entity]:
        """ipv4_route and arp_proxy entries (the same in both programs): a leaf's subnet
        to its leaf, an attached host to its port; leaves answer ARP for both."""
        out: list[Entity] = []
        for op in self.ops(LeafRoute):
            out.append(TableWrite("ipv4_route", (("hdr.ipv4.dstAddr", lpm(op.subnet)),),
                                  "to_leaf", (("leaf", op.dst_leaf),)))
            if self.is_leaf:
                out.append(TableWrite("arp_proxy", (("hdr.arp.tpa", lpm(op.subnet)),),
                                      "arp_reply", (("mac", mac),)))
        for h in self.ops(HostRoute):
            out.append(TableWrite("ipv4_route", (("hdr.ipv4.dstAddr", _host(h.ip)),), "to_host",
                                  (("port", h.port), ("host_mac", _mac(h.mac)))))
            out.append(TableWrite("arp_proxy", (("hdr.arp.tpa", _host(h.ip)),), "arp_reply",
                                  (("mac", mac),)))
        return out

    def multicast(self, copies: int) -> list[Entity]:
        """The notice groups, ``copies`` replicas per port (the same in both programs)."""
        return [MulticastWrite(op.group_id, tuple(p if copy == 0 else (p, copy) for p in op.ports
                                                  for copy in range(copies)))
                for op in self.ops(MulticastGroup)]


@dataclass(frozen=True)
class NoticeSeen:
    """A failure / recovery notice the leaf's data plane applied and punted."""

    spine_id: int
    leaf_id: int
    fail: bool
    epoch: int


def spine_of_paths(desired: Mapping[OpKey, SwitchOp]) -> dict[int, int]:
    """{path index: spine id} of a leaf's desired state (SpinePaths)."""
    return {i: op.spine_id for op in desired.values() if isinstance(op, SpinePaths)
            for i in op.paths}


def punted_notice(reason: int, frame: bytes) -> NoticeSeen | None:
    """The notice in a PacketIn from sglb.p4 (reason PUNT_NOTICE), or None.

    ``frame`` is the packet after the packet_in header: Ethernet (EtherType
    0x88B6) and the 12-byte notice. Anything else, or a short frame, is None.
    """
    if reason != Punt.NOTICE or len(frame) < 14 + 12 or frame[12:14] != b"\x88\xb6":
        return None
    body = frame[14:26]
    version, kind, length = body[0], body[1], body[2]
    if version != 1 or length != 12 or kind not in (1, 2):
        return None
    return NoticeSeen(spine_id=int.from_bytes(body[4:6], "big"),
                      leaf_id=int.from_bytes(body[6:8], "big"), fail=kind == 1,
                      epoch=int.from_bytes(body[8:12], "big"))


def confirmed_writebacks(desired: Mapping[OpKey, SwitchOp],
                         seen: Mapping[tuple[int, int], NoticeSeen],
                         held: Mapping[tuple[int, int], int]) -> dict[tuple[int, int], int]:
    """The epochs to write back per (spine id, destination leaf id).

    A seen notice is confirmed when the desired state agrees with it: after a
    FAIL every path through that spine toward the destination is dead, after
    a RECOVER at least one is live. A confirmed epoch replaces the held one
    if newer (mod 2^30); an unconfirmed notice leaves the held epoch as it
    is, so the data plane keeps acting on the notice.
    """
    live: dict[tuple[int, int], bool] = {}
    spine_of = spine_of_paths(desired)
    for op in desired.values():
        if isinstance(op, PathEntry) and op.index in spine_of:
            key = (spine_of[op.index], op.dst_leaf)
            live[key] = live.get(key, False) or op.live
    out = dict(held)
    for key, notice in seen.items():
        if key not in live or live[key] == notice.fail:
            continue
        old = out.get(key)
        if old is None or epoch_newer(notice.epoch, old):
            out[key] = notice.epoch
    return out


class ProgramMapping(Protocol):
    """One SGLB program's entities for a switch (see the module docstring)."""

    identity: Identity

    @property
    def tables(self) -> frozenset[str]:
        """Tables this daemon owns (reconcile deletes what it did not write there)."""
        ...

    def entities(self, desired: Mapping[OpKey, SwitchOp],
                 writebacks: Mapping[tuple[int, int], int] | None = None) -> list[Entity]:
        """The program's entities for a desired state; ``writebacks``: the notice epoch
        written back per (spine id, destination leaf id) where the program keeps it in
        a table."""
        ...

    def held_writebacks(self, read_back: list[Entity]) -> dict[tuple[int, int], int]:
        """The written-back epochs a switch's read-back entities hold."""
        ...

    def writeback_frames(self, old: Mapping[tuple[int, int], int],
                         new: Mapping[tuple[int, int], int]) -> list[bytes]:
        """PacketOut payloads that confirm the epochs of ``new`` that ``old`` lacks, where
        the program takes them as packets (none where it takes them in a table)."""
        ...


class SwitchBook:
    """A driver's memory of one switch: what it wrote, the notices its data plane
    punted and the epochs written back.

    ``plan(desired)`` maps the core's desired state with the epochs confirmed
    by it (``confirmed_writebacks``) and diffs against what the switch holds.
    ``note_notice`` records a punted notice (newest per spine and destination).
    After a reconnect, ``adopt(read_back)`` replaces the memory with what the
    switch really has, written-back epochs included, so the next plan fixes
    only the differences and never moves an epoch back.
    """

    def __init__(self, mapping: ProgramMapping):
        self.mapping = mapping
        self.held: dict[EntityKey, Entity] = {}
        self.writebacks: dict[tuple[int, int], int] = {}
        self.seen: dict[tuple[int, int], NoticeSeen] = {}

    @property
    def identity(self) -> Identity:
        """The switch's identity (its mapping's)."""
        return self.mapping.identity

    def note_notice(self, notice: NoticeSeen) -> None:
        """A notice the data plane applied (a PacketIn); older copies are ignored."""
        key = (notice.spine_id, notice.leaf_id)
        old = self.seen.get(key)
        if old is None or epoch_newer(notice.epoch, old.epoch):
            self.seen[key] = notice

    def adopt(self, read_back: list[Entity]) -> None:
        """Trust the switch: remember exactly what it holds, the written-back epochs
        included where its program keeps them in tables (``held_writebacks``)."""
        self.held = {entity_key(e): e for e in read_back}
        self.writebacks = self.mapping.held_writebacks(read_back)

    def plan(self, desired: Mapping[OpKey, SwitchOp]) -> Plan:
        """The writes that bring the switch to ``desired``."""
        wb = confirmed_writebacks(desired, self.seen, self.writebacks)
        plan = reconcile(self.mapping.entities(desired, wb), list(self.held.values()),
                         self.mapping.tables)
        return dataclasses.replace(plan, writebacks=tuple(sorted(wb.items())))

    def writeback_frames(self, plan: Plan) -> list[bytes]:
        """PacketOut payloads the plan's newly written-back epochs need (Tofino program)."""
        return self.mapping.writeback_frames(self.writebacks, dict(plan.writebacks))

    def commit(self, plan: Plan) -> None:
        """Record that ``plan`` was written."""
        for e in plan.delete:
            self.held.pop(entity_key(e), None)
        for e in plan.insert + plan.modify:
            self.held[entity_key(e)] = e
        if plan.writebacks:  # plans from ``plan()`` carry them; a bare reconcile() does not
            self.writebacks = dict(plan.writebacks)
