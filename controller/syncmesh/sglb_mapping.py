"""The core's desired switch state as table entries of ``p4src/sglb.p4`` (docs/sglb.md).

Pure data in, pure data out: a P4Runtime driver writes these entities (and
reads them back to reconcile); the packet tests install them into the
software target directly. Names are the P4Info suffixes of ``SglbIngress``.

| op | entity |
|---|---|
| SwitchConfig (+ identity) | ``switch_config`` default ``set_switch`` |
| PathEntry ports, PortCapacity | ``uplinks`` default ``set_uplinks`` (slots, port_i, DRE shift_i) |
| PathEntry live/capacity, RemoteCongestion | ``dst_profile[dst_leaf]`` ``set_profile`` |
| HostRoute | ``ipv4_route`` /32 ``to_host``; ``arp_proxy`` /32 ``arp_reply`` |
| LeafRoute | ``ipv4_route`` subnet ``to_leaf``; on leaves ``arp_proxy`` subnet ``arp_reply`` |
| SpinePaths | ``spine_paths[spine_id]`` ``set_spine`` |
| SpineRoute | ``leaf_downlinks[dst_leaf]`` ``set_downlinks`` / ``no_downlinks`` |
| PortPeer | ``port_peer[port]`` ``peer`` |
| MulticastGroup | packet replication engine multicast group |
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from sglb.codes import LbMode, Role
from sglb.config import (
    MAX_PATHS,
    QMAX,
    capacity_weights,
    dre_shift,
    profile_params,
    switch_params,
    uplinks_params,
)

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
    """A desired state sglb.p4 cannot hold (too many paths, bundles wider than two, ...)."""


@dataclass(frozen=True)
class Identity:
    """Per-switch constants of ``set_switch`` that are not part of the fabric view."""

    switch_mac: int
    flowlet_gap_us: int = 200
    tie_tolerance: int = 1


MatchValue = int | tuple[int, int]
"""A key field's value: an int (exact) or (value, prefix length) (lpm)."""

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

    @property
    def is_default(self) -> bool:
        """True when this sets the default action of a keyless table."""
        return not self.match


@dataclass(frozen=True)
class MulticastWrite:
    """One multicast group of the packet replication engine."""

    group_id: int
    ports: tuple[int, ...]


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
             generations: Mapping[int, int] | None = None) -> list[Entity]:
    """sglb.p4 entities for a desired state; ``generations`` gives each dst_profile's gen."""
    by_type: dict[type, list[SwitchOp]] = defaultdict(list)
    for op in desired.values():
        by_type[type(op)].append(op)
    out: list[Entity] = []
    gens = generations or {}

    (config,) = by_type[SwitchConfig] or (None,)
    if config is None:
        raise MappingError("no SwitchConfig in the desired state")
    assert isinstance(config, SwitchConfig)
    is_leaf = config.role == "leaf"
    out.append(TableWrite("switch_config", (), "set_switch", tuple(switch_params(
        Role.LEAF if is_leaf else Role.SPINE, config.switch_id, identity.switch_mac,
        identity.flowlet_gap_us, LbMode.SGLB if config.glb else LbMode.ECMP,
        identity.tie_tolerance, config.notice_group))))

    capacity = {op.port: op.mbps for op in by_type[PortCapacity]}  # type: ignore[union-attr]
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

    if is_leaf:
        out += _leaf_paths(by_type, capacity, gens)
    for op in by_type[SpinePaths]:
        assert isinstance(op, SpinePaths)
        out.append(TableWrite("spine_paths", (("hdr.notice.spine_id", op.spine_id),), "set_spine",
                              (("slot", op.slot), ("paths", sum(1 << i for i in op.paths)))))
    for op in by_type[SpineRoute]:
        assert isinstance(op, SpineRoute)
        if len(op.ports) > 2:
            raise MappingError(f"leaf {op.dst_leaf}: sglb.p4 holds at most 2 parallel links "
                               f"per leaf, got {len(op.ports)}")
        key = (("meta.dst_leaf", op.dst_leaf),)
        if op.ports:
            a = op.ports[0]
            b = op.ports[1] if len(op.ports) > 1 else a
            out.append(TableWrite("leaf_downlinks", key, "set_downlinks",
                                  (("port_a", a), ("port_b", b))))
        else:
            out.append(TableWrite("leaf_downlinks", key, "no_downlinks", ()))
    for op in by_type[PortPeer]:
        assert isinstance(op, PortPeer)
        if len(op.siblings) > 1:
            raise MappingError(f"port {op.port}: sglb.p4 holds at most 2 parallel links per leaf")
        out.append(TableWrite("port_peer", (("hdr.port_status.port", op.port),), "peer",
                              (("leaf", op.leaf_id),
                               ("sibling", op.siblings[0] if op.siblings else op.port))))
    for op in by_type[MulticastGroup]:
        assert isinstance(op, MulticastGroup)
        out.append(MulticastWrite(op.group_id, op.ports))
    return out


def _leaf_paths(by_type: Mapping[type, list[SwitchOp]], capacity: Mapping[int, float],
                gens: Mapping[int, int]) -> list[Entity]:
    paths: dict[int, dict[int, PathEntry]] = defaultdict(dict)
    for op in by_type[PathEntry]:
        assert isinstance(op, PathEntry)
        paths[op.dst_leaf][op.index] = op
    remote: dict[tuple[int, int], int] = {}
    for op in by_type[RemoteCongestion]:
        assert isinstance(op, RemoteCongestion)
        remote[op.dst_leaf, op.index] = op.level
    ports: dict[int, int] = {}
    for per_dst in paths.values():
        for idx, p in per_dst.items():
            ports[idx] = p.port
    if ports and max(ports) >= MAX_PATHS:
        raise MappingError(f"sglb.p4 holds {MAX_PATHS} paths per leaf, this leaf has "
                           f"{max(ports) + 1} uplinks")
    uplinks = {i: (port, dre_shift(capacity[port])) for i, port in ports.items()}
    out: list[Entity] = [TableWrite("uplinks", (), "set_uplinks",
                                    tuple(uplinks_params(uplinks)))]
    for dst in sorted(paths):
        per_dst = paths[dst]
        caps = [per_dst[i].capacity_mbps if i in per_dst else 0.0 for i in range(MAX_PATHS)]
        live_mask = sum(1 << i for i, p in per_dst.items() if p.live)
        rq = [min(QMAX, remote.get((dst, i), 0)) for i in range(MAX_PATHS)]
        prof = profile_params(live_mask, gens.get(dst, 1) & 0xFF, rq, capacity_weights(caps))
        out.append(TableWrite("dst_profile", (("meta.dst_leaf", dst),), "set_profile",
                              tuple(prof)))
    return out


# -- reconciliation: what to write, given what the switch holds --------------

SGLB_TABLES = frozenset({"switch_config", "uplinks", "ipv4_route", "arp_proxy", "dst_profile",
                         "spine_paths", "port_peer", "leaf_downlinks"})


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
    generations: tuple[tuple[int, int], ...] = ()
    """dst_profile generations (destination leaf id, gen) once the plan is written."""

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


def _profile_signature(e: TableWrite) -> tuple[object, ...]:
    """What, when it changes, must make the data plane forget its notice exclusions.

    Only the set of usable paths: the control-plane liveness mask and which
    paths have capacity. A congestion-only update keeps the generation, so a
    data-plane exclusion learnt from a failure notice that SyncMesh has not
    heard of yet survives it (docs/sglb.md, "generation").
    """
    params = dict(e.params)
    usable = tuple(params.get(f"w{i}", 0) > 0 for i in range(MAX_PATHS))
    return (e.action, params.get("live_mask"), usable)


class SwitchBook:
    """A driver's memory of one switch: what it wrote and each destination's profile generation.

    ``plan(desired)`` maps the core's desired state, bumps the generation of
    every ``dst_profile`` whose set of usable paths changed (so the data plane drops
    notice exclusions made under the old one) and diffs against what the
    switch holds. After a reconnect, ``adopt(read_back)`` replaces the memory
    with what the switch really has, generations included, so the next plan
    fixes only the differences.
    """

    def __init__(self, identity: Identity):
        self.identity = identity
        self.held: dict[EntityKey, Entity] = {}
        self.generations: dict[int, int] = {}

    def adopt(self, read_back: list[Entity]) -> None:
        """Trust the switch: remember exactly what it holds."""
        self.held = {entity_key(e): e for e in read_back}
        self.generations = {
            _dst_leaf(e): dict(e.params)["gen"]
            for e in read_back
            if isinstance(e, TableWrite) and e.table == "dst_profile" and e.action == "set_profile"
        }

    def plan(self, desired: Mapping[OpKey, SwitchOp]) -> Plan:
        """The writes that bring the switch to ``desired``."""
        draft = entities(desired, self.identity, self.generations)
        gens = dict(self.generations)
        for e in draft:
            if isinstance(e, TableWrite) and e.table == "dst_profile":
                dst = _dst_leaf(e)
                old = self.held.get(entity_key(e))
                if not isinstance(old, TableWrite) or (
                        _profile_signature(old) != _profile_signature(e)):
                    gens[dst] = gens.get(dst, 0) % 255 + 1  # 1..255; 0 is "no profile"
        final = entities(desired, self.identity, gens) if gens != self.generations else draft
        plan = reconcile(final, list(self.held.values()))
        return dataclasses.replace(plan, generations=tuple(sorted(gens.items())))

    def commit(self, plan: Plan) -> None:
        """Record that ``plan`` was written."""
        for e in plan.delete:
            self.held.pop(entity_key(e), None)
        for e in plan.insert + plan.modify:
            self.held[entity_key(e)] = e
        if plan.generations:  # plans from ``plan()`` carry them; a bare reconcile() does not
            self.generations = dict(plan.generations)
