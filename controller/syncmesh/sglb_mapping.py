"""The core's desired switch state as table entries of ``p4src/sglb.p4`` (docs/sglb.md).

Pure data in, pure data out: a P4Runtime driver writes these entities (and
reads them back to reconcile); the packet tests install them into the
software target directly. Names are the P4Info suffixes of ``SglbIngress``.

| op | entity |
|---|---|
| SwitchConfig (+ identity) | ``switch_config`` default ``set_switch`` (incl. feedback settings) |
| PathEntry ports, PortCapacity | ``uplinks`` default ``set_uplinks`` (slots, count, port_i, shift_i) |
| PathEntry live/capacity, RemoteCongestion (+ notices seen) | ``dst_profile[dst_leaf]`` ``set_profile`` (mask, rq_i, w_i, written-back epoch ep_i) |
| HostRoute | ``ipv4_route`` /32 ``to_host``; ``arp_proxy`` /32 ``arp_reply``; ``port_neighbour[port]`` ``bind_host`` |
| LeafRoute | ``ipv4_route`` subnet ``to_leaf``; on leaves ``arp_proxy`` subnet ``arp_reply`` |
| SpinePaths + PathEntry ports | ``spine_paths[spine_id]`` ``set_spine``; ``port_neighbour[uplink]`` ``bind_spine`` |
| SpineRoute + PortCapacity | ``leaf_downlinks[dst_leaf]`` ``set_downlinks`` (share by capacity) / ``no_downlinks`` |
| PortPeer | ``port_peer[port]`` ``peer``; ``port_neighbour[port]`` ``bind_leaf`` |
| PortCapacity | ``port_levels[port]`` ``set_levels`` (egress congestion thresholds) |
| MulticastGroup | multicast group, ``Identity.notice_copies`` replicas per port |

The epochs a leaf writes back (``ep_i``) come from the notices its data plane
punts to the controller (``note_notice``): the epoch of a spine's newest
notice about a destination is written back once the desired state agrees with
it (all paths through that spine dead after a FAIL, one live after a
RECOVER), never before, so a write never undoes an exclusion the control
plane has not heard of (docs/sglb.md, "Notices and the control plane").
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from sglb.codes import LbMode, Punt, Role
from sglb.config import (
    DRE_PERIOD_SHIFT,
    EPOCH_MASK,
    MAX_PATHS,
    NOTICE_COPIES,
    QMAX,
    WRITEBACK_VALID,
    Feedback,
    capacity_weights,
    check_max_paths,
    downlink_share,
    downlinks_params,
    dre_shift,
    epoch_newer,
    levels_params,
    profile_params,
    switch_params,
    uplinks_params,
    writeback,
)
from sglb.tofino import TARGETS as TNA_TARGETS

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

PROGRAMS = ("v1model", "tna")
"""The SGLB programs the mapping covers: p4src/sglb.p4 and p4src/tna/sglb.p4."""


class MappingError(ValueError):
    """A desired state sglb.p4 cannot hold (too many paths, bundles wider than two, ...)."""


@dataclass(frozen=True)
class Identity:
    """Per-switch constants of ``set_switch`` that are not part of the fabric view."""

    switch_mac: int
    flowlet_gap_us: int = 200
    """A flow idle this long may change path (the skew rule may hold it longer)."""
    tie_tolerance: int = 1
    feedback: Feedback = Feedback()
    """In-band feedback and delay-skew settings (sglb.config.Feedback)."""
    max_paths: int = MAX_PATHS
    """MAX_PATHS the switch's program was compiled with."""
    program: str = "v1model"
    """The switch's program: "v1model" (p4src/sglb.p4) or "tna" (p4src/tna/sglb.p4,
    mapped by ``syncmesh.sglb_tna_mapping``)."""
    tna_target: str = "tofino2"
    """The Tofino program's target (``sglb.tofino.TARGETS``: on Tofino, two passes,
    the profile's masks are an egress table of their own; ignored for "v1model")."""
    notice_copies: int = NOTICE_COPIES
    """Copies of every notice a spine sends to each leaf (1..16)."""
    dre_period_shift: int = DRE_PERIOD_SHIFT
    """DRE_PERIOD_SHIFT the switch's program was compiled with (sglb.config.dre_period_shift_for)."""

    def __post_init__(self) -> None:
        check_max_paths(self.max_paths)
        if self.program not in PROGRAMS:
            raise ValueError(f"program must be one of {', '.join(PROGRAMS)}, got {self.program!r}")
        if self.tna_target not in TNA_TARGETS:
            raise ValueError(f"tna_target must be one of {', '.join(TNA_TARGETS)}, "
                             f"got {self.tna_target!r}")
        if not 1 <= self.notice_copies <= 16:
            raise ValueError(f"notice_copies must be within 1..16, got {self.notice_copies}")


MatchValue = int | tuple[int, int]
"""A key field's value: an int (exact), (value, prefix length) (lpm), (value, mask)
(ternary) or (low, high) (range); the table's P4Info says which."""

EntityKey = tuple[object, ...]
"""Where an entity sits on the switch: (table, match) or ("mcast", group id)."""


@dataclass(frozen=True)
class TableWrite:
    """One table entry (or the table's default action when ``match`` is empty)."""

    table: str
    match: tuple[tuple[str, MatchValue], ...]
    """(key field, value) with value an int (exact) or (int, prefix length) (lpm)."""
    action: str
    params: tuple[tuple[str, int], ...]
    priority: int = 0
    """P4Runtime priority of a ternary / range entry (0 for exact and lpm tables)."""

    @property
    def is_default(self) -> bool:
        """True when this sets the default action of a keyless table."""
        return not self.match


Replica = int | tuple[int, int]
"""A multicast replica: a port (instance 0) or (port, instance)."""


@dataclass(frozen=True)
class MulticastWrite:
    """One multicast group of the packet replication engine."""

    group_id: int
    ports: tuple[Replica, ...]
    """Replicas: a port, or (port, instance) for further copies to the same port."""


@dataclass(frozen=True)
class NoticeSeen:
    """A failure / recovery notice the leaf's data plane applied and punted."""

    spine_id: int
    leaf_id: int
    fail: bool
    epoch: int


Entity = TableWrite | MulticastWrite


def switch_mac(switch_id: int) -> int:
    """A locally administered MAC for a switch: 02:53:47:00:<id>."""
    return (0x025347 << 24) | (switch_id & 0xFFFFFF)


def _lpm(prefix: str) -> tuple[int, int]:
    net = ipaddress.IPv4Network(prefix)
    return int(net.network_address), net.prefixlen


def _mac(text: str) -> int:
    return int(text.replace(":", ""), 16)


def entities(desired: Mapping[OpKey, SwitchOp], identity: Identity,
             writebacks: Mapping[tuple[int, int], int] | None = None) -> list[Entity]:
    """sglb.p4 entities for a desired state; ``writebacks`` gives the notice epoch
    written back per (spine id, destination leaf id) (none: 0, every notice wins)."""
    by_type: dict[type, list[SwitchOp]] = defaultdict(list)
    for op in desired.values():
        by_type[type(op)].append(op)
    out: list[Entity] = []

    (config,) = by_type[SwitchConfig] or (None,)
    if config is None:
        raise MappingError("no SwitchConfig in the desired state")
    assert isinstance(config, SwitchConfig)
    is_leaf = config.role == "leaf"
    out.append(TableWrite("switch_config", (), "set_switch", tuple(switch_params(
        Role.LEAF if is_leaf else Role.SPINE, config.switch_id, identity.switch_mac,
        identity.flowlet_gap_us, LbMode.SGLB if config.glb else LbMode.ECMP,
        identity.tie_tolerance, config.notice_group, identity.feedback))))

    capacity = {op.port: op.mbps for op in by_type[PortCapacity]}  # type: ignore[union-attr]
    for port in sorted(capacity):
        out.append(TableWrite("port_levels", (("standard_metadata.egress_port", port),),
                              "set_levels",
                              tuple(levels_params(capacity[port], identity.dre_period_shift))))
    for op in by_type[LeafRoute]:
        assert isinstance(op, LeafRoute)
        out.append(TableWrite("ipv4_route", (("hdr.ipv4.dstAddr", _lpm(op.subnet)),),
                              "to_leaf", (("leaf", op.dst_leaf),)))
        if is_leaf:
            out.append(TableWrite("arp_proxy", (("hdr.arp.tpa", _lpm(op.subnet)),),
                                  "arp_reply", (("mac", identity.switch_mac),)))
    for op in by_type[HostRoute]:
        assert isinstance(op, HostRoute)
        out.append(TableWrite("ipv4_route", (("hdr.ipv4.dstAddr", (int(ipaddress.IPv4Address(
            op.ip)), 32)),), "to_host", (("port", op.port), ("host_mac", _mac(op.mac)))))
        out.append(TableWrite("arp_proxy", (("hdr.arp.tpa", (int(ipaddress.IPv4Address(op.ip)),
                                                             32)),),
                              "arp_reply", (("mac", identity.switch_mac),)))
    bindings: dict[int, tuple[str, tuple[tuple[str, int], ...]]] = {}
    for op in by_type[HostRoute]:
        assert isinstance(op, HostRoute)
        bindings[op.port] = ("bind_host", ())

    if is_leaf:
        out += _leaf_paths(by_type, capacity, writebacks or {}, identity)
        port_of = {op.index: op.port for op in by_type[PathEntry]
                   if isinstance(op, PathEntry)}
        for op in by_type[SpinePaths]:
            assert isinstance(op, SpinePaths)
            for index in op.paths:
                if index in port_of:
                    bindings[port_of[index]] = ("bind_spine", (("spine_id", op.spine_id),))
    for op in by_type[SpinePaths]:
        assert isinstance(op, SpinePaths)
        out.append(TableWrite("spine_paths", (("hdr.notice.spine_id", op.spine_id),), "set_spine",
                              (("paths", sum(1 << i for i in op.paths)),)))
    for op in by_type[SpineRoute]:
        assert isinstance(op, SpineRoute)
        if len(op.ports) > 2:
            raise MappingError(f"leaf {op.dst_leaf}: sglb.p4 holds at most 2 parallel links "
                               f"per leaf, got {len(op.ports)}")
        key = (("meta.dst_leaf", op.dst_leaf),)
        if op.ports:
            a = op.ports[0]
            b = op.ports[1] if len(op.ports) > 1 else a
            share = downlink_share(capacity[a], capacity[b]) if b != a else 255
            out.append(TableWrite("leaf_downlinks", key, "set_downlinks",
                                  tuple(downlinks_params(a, b, share))))
        else:
            out.append(TableWrite("leaf_downlinks", key, "no_downlinks", ()))
    for op in by_type[PortPeer]:
        assert isinstance(op, PortPeer)
        if len(op.siblings) > 1:
            raise MappingError(f"port {op.port}: sglb.p4 holds at most 2 parallel links per leaf")
        out.append(TableWrite("port_peer", (("hdr.port_status.port", op.port),), "peer",
                              (("leaf", op.leaf_id),
                               ("sibling", op.siblings[0] if op.siblings else op.port))))
        bindings[op.port] = ("bind_leaf", (("leaf_id", op.leaf_id),))
    for port in sorted(bindings):
        action, params = bindings[port]
        out.append(TableWrite("port_neighbour", (("standard_metadata.ingress_port", port),),
                              action, params))
    for op in by_type[MulticastGroup]:
        assert isinstance(op, MulticastGroup)
        out.append(MulticastWrite(op.group_id, tuple(
            p if copy == 0 else (p, copy) for p in op.ports
            for copy in range(identity.notice_copies))))
    return out


def spine_of_paths(desired: Mapping[OpKey, SwitchOp]) -> dict[int, int]:
    """{path index: spine id} of a leaf's desired state (SpinePaths)."""
    return {i: op.spine_id for op in desired.values() if isinstance(op, SpinePaths)
            for i in op.paths}


def _leaf_paths(by_type: Mapping[type, list[SwitchOp]], capacity: Mapping[int, float],
                writebacks: Mapping[tuple[int, int], int], identity: Identity) -> list[Entity]:
    max_paths = identity.max_paths
    paths: dict[int, dict[int, PathEntry]] = defaultdict(dict)
    for op in by_type[PathEntry]:
        assert isinstance(op, PathEntry)
        paths[op.dst_leaf][op.index] = op
    remote: dict[tuple[int, int], int] = {}
    for op in by_type[RemoteCongestion]:
        assert isinstance(op, RemoteCongestion)
        remote[op.dst_leaf, op.index] = op.level
    spine_of = {i: op.spine_id for op in by_type[SpinePaths] if isinstance(op, SpinePaths)
                for i in op.paths}
    ports: dict[int, int] = {}
    for per_dst in paths.values():
        for idx, p in per_dst.items():
            ports[idx] = p.port
    if ports and max(ports) >= max_paths:
        raise MappingError(f"sglb.p4 holds {max_paths} paths per leaf (MAX_PATHS), this leaf "
                           f"has {max(ports) + 1} uplinks")
    uplinks = {i: (port, dre_shift(capacity[port], identity.dre_period_shift))
               for i, port in ports.items()}
    out: list[Entity] = [TableWrite("uplinks", (), "set_uplinks",
                                    tuple(uplinks_params(uplinks, max_paths)))]
    for dst in sorted(paths):
        per_dst = paths[dst]
        caps = [per_dst[i].capacity_mbps if i in per_dst else 0.0 for i in range(max_paths)]
        live_mask = sum(1 << i for i, p in per_dst.items() if p.live)
        rq = [min(QMAX, remote.get((dst, i), 0)) for i in range(max_paths)]
        ep = [writeback(writebacks.get((spine_of[i], dst))) if i in spine_of else 0
              for i in range(max_paths)]
        prof = profile_params(live_mask, rq, capacity_weights(caps), ep, max_paths)
        out.append(TableWrite("dst_profile", (("meta.dst_leaf", dst),), "set_profile",
                              tuple(prof)))
    return out


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


def confirmed_writebacks(desired: Mapping[OpKey, SwitchOp], seen: Mapping[tuple[int, int], NoticeSeen],
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


# -- reconciliation: what to write, given what the switch holds --------------

SGLB_TABLES = frozenset({"switch_config", "uplinks", "port_neighbour", "ipv4_route", "arp_proxy",
                         "dst_profile", "spine_paths", "port_peer", "leaf_downlinks",
                         "port_levels"})


def entity_key(e: Entity) -> EntityKey:
    """Identity of an entity on the switch: (table, match) or the multicast group id."""
    if isinstance(e, MulticastWrite):
        return ("mcast", e.group_id)
    return (e.table, e.match)


@dataclass(frozen=True)
class Plan:
    """Writes that turn the switch's entities into the desired ones, nothing more."""

    insert: tuple[Entity, ...] = ()
    modify: tuple[Entity, ...] = ()
    """Changed entries, keyless defaults and replaced multicast groups."""
    delete: tuple[Entity, ...] = ()
    writebacks: tuple[tuple[tuple[int, int], int], ...] = ()
    """Notice epochs written back ((spine id, destination leaf id), epoch) once written."""

    @property
    def empty(self) -> bool:
        """True when the switch already holds the desired state."""
        return not (self.insert or self.modify or self.delete)


def reconcile(desired: list[Entity], actual: list[Entity],
              owned_tables: frozenset[str] = SGLB_TABLES) -> Plan:
    """Diff desired against read-back entities: equal ones are left alone (never wiped).

    Entries the switch holds in ``owned_tables`` that are not desired are
    deleted; entries of other tables (and multicast groups this daemon does not
    describe) belong to someone else and stay.
    """
    want = {entity_key(e): e for e in desired}
    have = {entity_key(e): e for e in actual}
    insert: list[Entity] = []
    modify: list[Entity] = []
    delete: list[Entity] = []
    for key, e in want.items():
        old = have.get(key)
        if old is None:
            # a keyless table always has a default: setting it is a modify
            (modify if isinstance(e, TableWrite) and e.is_default else insert).append(e)
        elif old != e:
            modify.append(e)
    for key, e in have.items():
        if key in want:
            continue
        if isinstance(e, TableWrite) and e.table in owned_tables and not e.is_default:
            delete.append(e)
    return Plan(tuple(insert), tuple(modify), tuple(delete))


def _dst_leaf(e: TableWrite) -> int:
    """The destination leaf a ``dst_profile`` entry is keyed by (an exact match)."""
    value = dict(e.match)["meta.dst_leaf"]
    if not isinstance(value, int):
        raise MappingError(f"dst_profile key {value!r} is not an exact leaf id")
    return value


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

    def __init__(self, identity: Identity):
        self.identity = identity
        self.held: dict[EntityKey, Entity] = {}
        self.writebacks: dict[tuple[int, int], int] = {}
        self.seen: dict[tuple[int, int], NoticeSeen] = {}

    def note_notice(self, notice: NoticeSeen) -> None:
        """A notice the data plane applied (a PacketIn); older copies are ignored."""
        key = (notice.spine_id, notice.leaf_id)
        old = self.seen.get(key)
        if old is None or epoch_newer(notice.epoch, old.epoch):
            self.seen[key] = notice

    def adopt(self, read_back: list[Entity]) -> None:
        """Trust the switch: remember exactly what it holds, the written-back epochs
        included (read from its dst_profile entries, each path's spine from its
        spine_paths entries; the Tofino program holds them in registers, which are
        not read back: none are remembered, and the data plane keeps its notices
        in force until the control plane confirms them again)."""
        self.held = {entity_key(e): e for e in read_back}
        spine_of: dict[int, int] = {}
        for e in read_back:
            if isinstance(e, TableWrite) and e.table == "spine_paths" and e.action == "set_spine":
                spine = dict(e.match)["hdr.notice.spine_id"]
                mask = dict(e.params).get("paths", 0)
                if isinstance(spine, int):
                    spine_of.update({i: spine for i in range(mask.bit_length()) if mask >> i & 1})
        self.writebacks = {}
        for e in read_back:
            if not (isinstance(e, TableWrite) and e.table == "dst_profile"
                    and e.action == "set_profile"):
                continue
            params = dict(e.params)
            for index, spine in spine_of.items():
                word = params.get(f"ep{index}", 0)
                if word & WRITEBACK_VALID:
                    self.writebacks[spine, _dst_leaf(e)] = word & EPOCH_MASK

    def plan(self, desired: Mapping[OpKey, SwitchOp]) -> Plan:
        """The writes that bring the switch to ``desired``."""
        wb = confirmed_writebacks(desired, self.seen, self.writebacks)
        if self.identity.program == "tna":
            from .sglb_tna_mapping import tna_entities, tna_tables
            plan = reconcile(tna_entities(desired, self.identity), list(self.held.values()),
                             tna_tables(self.identity))
        else:
            plan = reconcile(entities(desired, self.identity, wb), list(self.held.values()))
        return dataclasses.replace(plan, writebacks=tuple(sorted(wb.items())))

    def commit(self, plan: Plan) -> None:
        """Record that ``plan`` was written."""
        for e in plan.delete:
            self.held.pop(entity_key(e), None)
        for e in plan.insert + plan.modify:
            self.held[entity_key(e)] = e
        if plan.writebacks:  # plans from ``plan()`` carry them; a bare reconcile() does not
            self.writebacks = dict(plan.writebacks)
