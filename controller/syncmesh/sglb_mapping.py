"""The core's desired switch state as table entries of ``p4src/sglb.p4`` (docs/sglb.md).

Pure data in, pure data out: ``V1ModelMapping(identity).entities(desired)``
(or ``entities(desired, identity)``) gives the entities a P4Runtime driver
writes (and reads back to reconcile); the packet tests install them into the
software target directly. Names are the P4Info suffixes of ``SglbIngress``.
The Tofino program's mapping is ``syncmesh.sglb_tna_mapping``; what both
share (``Identity``, ``DesiredView``, ``SwitchBook``) is ``syncmesh.sglb_switch``,
re-exported here.

| op | entity |
|---|---|
| SwitchConfig (+ identity's settings) | ``switch_config`` default ``set_switch`` (``sglb.settings.switch_params``) |
| PathEntry ports, PortCapacity | ``uplinks`` default ``set_uplinks`` (slots, count, port_i, shift_i) |
| PathEntry live/capacity, RemoteCongestion (+ notices seen) | ``dst_profile[dst_leaf]`` ``set_profile`` (mask, rq_i, w_i, written-back epoch ep_i) |
| HostRoute | ``ipv4_route`` /32 ``to_host``; ``arp_proxy`` /32 ``arp_reply``; ``port_neighbour[port]`` ``bind_host`` |
| LeafRoute | ``ipv4_route`` subnet ``to_leaf``; on leaves ``arp_proxy`` subnet ``arp_reply`` |
| SpinePaths + PathEntry ports | ``spine_paths[spine_id]`` ``set_spine``; ``port_neighbour[uplink]`` ``bind_spine`` |
| SpineRoute + PortCapacity | ``leaf_downlinks[dst_leaf]`` ``set_downlinks`` (share by capacity) / ``no_downlinks`` |
| PortPeer | ``port_peer[port]`` ``peer``; ``port_neighbour[port]`` ``bind_leaf`` |
| PortCapacity | ``port_levels[port]`` ``set_levels`` (egress congestion thresholds) |
| MulticastGroup | multicast group, ``SwitchSettings.notice_copies`` replicas per port |

The epochs a leaf writes back (``ep_i``) come from the notices its data plane
punts to the controller (``note_notice``): the epoch of a spine's newest
notice about a destination is written back once the desired state agrees with
it (all paths through that spine dead after a FAIL, one live after a
RECOVER), never before, so a write never undoes an exclusion the control
plane has not heard of (docs/sglb.md, "Notices and the control plane").
"""

from __future__ import annotations

from collections.abc import Mapping

from sglb.codes import LbMode, Role
from sglb.config import (
    EPOCH_MASK,
    WRITEBACK_VALID,
    downlinks_params,
    dre_shift,
    levels_params,
    profile_params,
    uplinks_params,
    writeback,
)
from sglb.settings import switch_params

from .entities import (
    Entity,
    EntityKey,
    MatchValue,
    MulticastWrite,
    Plan,
    Replica,
    TableWrite,
    entity_key,
    reconcile,
)
from .sglb_switch import (
    DesiredView,
    Identity,
    MappingError,
    NoticeSeen,
    SwitchBook,
    confirmed_writebacks,
    punted_notice,
    spine_of_paths,
    switch_mac,
)
from .switchops import OpKey, SpinePaths, SwitchOp

__all__ = ["SGLB_TABLES", "DesiredView", "Entity", "EntityKey", "Identity", "MappingError",
           "MatchValue", "MulticastWrite", "NoticeSeen", "Plan", "Replica", "SwitchBook",
           "TableWrite", "V1ModelMapping", "confirmed_writebacks", "entities", "entity_key",
           "punted_notice", "reconcile", "spine_of_paths", "switch_mac"]

SGLB_TABLES = frozenset({"switch_config", "uplinks", "port_neighbour", "ipv4_route", "arp_proxy",
                         "dst_profile", "spine_paths", "port_peer", "leaf_downlinks",
                         "port_levels"})
"""Tables of p4src/sglb.p4 this daemon owns (reconcile deletes what it did not write)."""


class V1ModelMapping:
    """The entities of p4src/sglb.p4 for one switch (a ``sglb_switch.ProgramMapping``)."""

    tables = SGLB_TABLES

    def __init__(self, identity: Identity) -> None:
        if identity.target.is_tna:
            raise MappingError(f"p4src/sglb.p4 runs on v1model, not {identity.target.value}")
        self.identity = identity

    def entities(self, desired: Mapping[OpKey, SwitchOp],
                 writebacks: Mapping[tuple[int, int], int] | None = None) -> list[Entity]:
        """sglb.p4 entities for a desired state; ``writebacks`` gives the notice epoch
        written back per (spine id, destination leaf id) (none: 0, every notice wins)."""
        ident = self.identity
        view = DesiredView(desired, ident.max_paths)
        config = view.config
        out: list[Entity] = [TableWrite("switch_config", (), "set_switch", tuple(switch_params(
            ident.target, Role.LEAF if view.is_leaf else Role.SPINE, config.switch_id,
            ident.switch_mac, ident.settings, LbMode.SGLB if config.glb else LbMode.ECMP,
            config.notice_group)))]
        shift = ident.settings.period_shift
        for port in sorted(view.capacity):
            out.append(TableWrite("port_levels", (("standard_metadata.egress_port", port),),
                                  "set_levels", tuple(levels_params(view.capacity[port], shift))))
        out += view.routes(ident.switch_mac)
        if view.is_leaf:
            out += self._leaf_paths(view, writebacks or {})
        for op in view.ops(SpinePaths):
            out.append(TableWrite("spine_paths", (("hdr.notice.spine_id", op.spine_id),),
                                  "set_spine", (("paths", sum(1 << i for i in op.paths)),)))
        for d in view.downlinks():
            key = (("meta.dst_leaf", d.dst_leaf),)
            if d.members is None:
                out.append(TableWrite("leaf_downlinks", key, "no_downlinks", ()))
            else:
                out.append(TableWrite("leaf_downlinks", key, "set_downlinks",
                                      tuple(downlinks_params(*d.members))))
        for port, leaf, sibling in view.peers():
            out.append(TableWrite("port_peer", (("hdr.port_status.port", port),), "peer",
                                  (("leaf", leaf), ("sibling", sibling))))
        bindings = view.neighbours()
        for port in sorted(bindings):
            action, params = bindings[port]
            out.append(TableWrite("port_neighbour", (("standard_metadata.ingress_port", port),),
                                  action, params))
        out += view.multicast(ident.settings.notice_copies)
        return out

    def _leaf_paths(self, view: DesiredView,
                    writebacks: Mapping[tuple[int, int], int]) -> list[Entity]:
        max_paths = self.identity.max_paths
        shift = self.identity.settings.period_shift
        uplinks = {i: (port, dre_shift(view.capacity[port], shift))
                   for i, port in view.uplinks.items()}
        out: list[Entity] = [TableWrite("uplinks", (), "set_uplinks",
                                        tuple(uplinks_params(uplinks, max_paths)))]
        for prof in view.profiles():
            ep = [writeback(writebacks.get((view.spine_of[i], prof.dst_leaf)))
                  if i in view.spine_of else 0 for i in range(max_paths)]
            out.append(TableWrite("dst_profile", (("meta.dst_leaf", prof.dst_leaf),),
                                  "set_profile", tuple(profile_params(
                                      prof.live_mask, prof.levels, prof.weights, ep,
                                      max_paths))))
        return out

    def held_writebacks(self, read_back: list[Entity]) -> dict[tuple[int, int], int]:
        """The epochs written back in the dst_profile entries read back (ep_i, each path's
        spine from the spine_paths entries read back)."""
        spine_of: dict[int, int] = {}
        for e in read_back:
            if isinstance(e, TableWrite) and e.table == "spine_paths" and e.action == "set_spine":
                spine = dict(e.match)["hdr.notice.spine_id"]
                mask = dict(e.params).get("paths", 0)
                if isinstance(spine, int):
                    spine_of.update({i: spine for i in range(mask.bit_length()) if mask >> i & 1})
        out: dict[tuple[int, int], int] = {}
        for e in read_back:
            if not (isinstance(e, TableWrite) and e.table == "dst_profile"
                    and e.action == "set_profile"):
                continue
            params = dict(e.params)
            for index, spine in spine_of.items():
                word = params.get(f"ep{index}", 0)
                if word & WRITEBACK_VALID:
                    out[spine, _dst_leaf(e)] = word & EPOCH_MASK
        return out

    def writeback_frames(self, old: Mapping[tuple[int, int], int],
                         new: Mapping[tuple[int, int], int]) -> list[bytes]:
        """None: sglb.p4 takes written-back epochs in dst_profile's ep_i."""
        return []


def _dst_leaf(e: TableWrite) -> int:
    """The destination leaf a ``dst_profile`` entry is keyed by (an exact match)."""
    value = dict(e.match)["meta.dst_leaf"]
    if not isinstance(value, int):
        raise MappingError(f"dst_profile key {value!r} is not an exact leaf id")
    return value


def entities(desired: Mapping[OpKey, SwitchOp], identity: Identity,
             writebacks: Mapping[tuple[int, int], int] | None = None) -> list[Entity]:
    """sglb.p4 entities for a desired state (``V1ModelMapping(identity).entities``)."""
    return V1ModelMapping(identity).entities(desired, writebacks)
