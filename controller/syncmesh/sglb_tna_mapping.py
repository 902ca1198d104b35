"""The core's desired switch state as table entries of the Tofino program
(``p4src/tna/sglb.p4``), and the frames that confirm notice epochs to it.

The Tofino program keeps the v1model program's tables where it can, so this
maps the v1model entities (``sglb_mapping.entities``) and rewrites the ones
that differ (docs/sglb.md, "The Tofino program"):

| v1model entity | Tofino entities |
|---|---|
| ``switch_config`` ``set_switch`` (us) | ``set_switch`` in ns, without fb_stale / unknown_level; on a leaf ``band_level`` (ternary, per configured path and level: the cut at level + tie_tolerance) |
| ``uplinks`` ``set_uplinks(slots, count, port_i, shift_i)`` | ``uplinks`` ``set_uplinks(slots, count)``; ``path_ports[path]``, ``fb_paths[path]``, ``port_paths[port]``, ``lowest_path`` (ternary) |
| ``dst_profile`` ``set_profile(mask, rq_i, w_i, ep_i)`` | ``set_profile(mask, weighted, rq0..rq2, wprof)`` + ``draws[wprof, row]``; for Tofino (two passes) ``set_profile(wprof)`` and the masks in ``dst_masks`` ``set_masks(mask, weighted, rq0..rq2)`` (an egress table) |
| ``spine_paths`` ``set_spine(paths)`` | ``set_spine(paths, slot)`` |
| ``port_peer`` ``peer(leaf, sibling)`` | ``peer(leaf, member)`` (1: lower port, 2: higher, 3: only link) |
| ``leaf_downlinks`` ``set_downlinks(a, b, share_a)`` | the same, port_a the lower port |
| ``port_levels`` ``set_levels(t1..t7)`` | ``port_levels[port, rate ternary]`` ``set_level(k)`` |
| ``port_neighbour[standard_metadata.ingress_port]`` | ``port_neighbour[ig_intr_md.ingress_port]`` |
| written-back epochs ``ep_i`` | ``writeback_frame`` PacketOuts (``writeback_frames``) |

``ipv4_route``, ``arp_proxy`` and the multicast groups are the same entities
in both programs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from sglb.codes import LbMode, Role
from sglb.config import QMAX, Feedback
from sglb.tna_config import (
    WEIGHT_PROFILES,
    band_entries,
    draw_rows,
    level_entries,
    level_planes,
    lowest_entries,
    path_word,
    switch_params,
    writeback_frame,
)
from sglb.tofino import TARGETS

from .sglb_mapping import (
    SGLB_TABLES,
    Entity,
    Identity,
    MappingError,
    MulticastWrite,
    TableWrite,
    entities,
)
from .switchops import OpKey, PortCapacity, SpinePaths, SwitchOp

TNA_TABLES = frozenset(SGLB_TABLES | {"path_ports", "fb_paths", "port_paths", "lowest_path",
                                      "draws", "band_level"})
"""Tables of the Tofino program this daemon owns (reconcile deletes what it did not write)."""
TOFINO_TABLES = TNA_TABLES | {"dst_masks"}
"""... compiled for Tofino: the profile's masks are the egress's ``dst_masks``."""


def _two_pass(identity: Identity) -> bool:
    """The program runs the engine in the recirculation port's egress (Tofino),
    where the profile's masks are ``dst_masks``."""
    return TARGETS[identity.tna_target].passes == 2


def tna_tables(identity: Identity) -> frozenset[str]:
    """The tables SyncMesh owns in the Tofino program for ``identity.tna_target``."""
    return TOFINO_TABLES if _two_pass(identity) else TNA_TABLES

KEY_RENAMES = {"standard_metadata.ingress_port": "ig_intr_md.ingress_port"}
BAND_KEYS = ("meta.live_safe", "meta.fb0", "meta.fb1", "meta.fb2")
UNCHANGED = frozenset({"ipv4_route", "arp_proxy", "port_neighbour"})


def _mask(bits: int, max_paths: int) -> int:
    return bits & ((1 << max_paths) - 1)


def tna_entities(desired: Mapping[OpKey, SwitchOp], identity: Identity) -> list[Entity]:
    """Entities of p4src/tna/sglb.p4 for a desired state (write-backs are frames:
    ``writeback_frames``)."""
    max_paths = identity.max_paths
    base = entities(desired, dataclasses.replace(identity, program="v1model"))
    out: list[Entity] = []
    ports: dict[int, int] = {}
    profiles: list[TableWrite] = []
    tolerance: int | None = None     # a leaf's tie_tolerance (band_level's entries)
    for e in base:
        if isinstance(e, MulticastWrite):
            out.append(e)
        elif e.table in UNCHANGED:
            out.append(dataclasses.replace(e, match=tuple(
                (KEY_RENAMES.get(k, k), v) for k, v in e.match)))
        elif e.table == "switch_config":
            out.append(_switch_config(e, identity.feedback))
            params = dict(e.params)
            if params["role"] == Role.LEAF:
                tolerance = params["tie_tolerance"]
        elif e.table == "uplinks":
            params = dict(e.params)
            slots = params["path_slots"]
            ports = {i: params[f"port{i}"] for i in range(max_paths) if slots >> i & 1}
            out.append(TableWrite("uplinks", (), "set_uplinks",
                                  (("path_slots", slots), ("path_count", params["path_count"]))))
            out += _path_tables(ports, max_paths)
        elif e.table == "dst_profile":
            profiles.append(e)
        elif e.table == "spine_paths":
            out.append(_spine_paths(e, desired))
        elif e.table == "port_peer":
            out.append(_port_peer(e))
        elif e.table == "leaf_downlinks":
            out.append(_downlinks(e))
        elif e.table == "port_levels":
            out += _port_levels(e, desired, identity)
        else:
            raise MappingError(f"no Tofino counterpart for table {e.table}")
    out += _profiles(profiles, ports, identity)
    if tolerance is not None:
        out += _band_level(tolerance, ports, max_paths)
    return out


def _band_level(tolerance: int, ports: dict[int, int], max_paths: int) -> list[Entity]:
    return [TableWrite("band_level", tuple(zip(BAND_KEYS, b.key(), strict=True)),
                       f"above_{b.cut}", (), priority=b.priority)
            for b in band_entries(tolerance, sorted(ports), max_paths)]


def _switch_config(e: TableWrite, feedback: Feedback) -> TableWrite:
    p = dict(e.params)
    return TableWrite("switch_config", (), "set_switch", tuple(switch_params(
        Role(p["role"]), p["switch_id"], p["switch_mac"], p["flowlet_gap"],
        LbMode(p["lb_mode"]), p["tie_tolerance"], p["notice_group"], feedback)))


def _path_tables(ports: dict[int, int], max_paths: int) -> list[Entity]:
    out: list[Entity] = []
    on_port: dict[int, int] = {}
    for i, port in sorted(ports.items()):
        out.append(TableWrite("path_ports", (("hdr.probe.path", i),), "set_path_port",
                              (("port", port),)))
        out.append(TableWrite("fb_paths", (("hdr.tag.fb_path", i),), "set_fb_bit",
                              (("path_bit", 1 << i),)))
        on_port[port] = on_port.get(port, 0) | 1 << i
    for port, paths in sorted(on_port.items()):
        out.append(TableWrite("port_paths", (("hdr.port_status.port", port),), "set_port_paths",
                              (("paths", paths),)))
    for value, mask, path, port in lowest_entries(ports, max_paths):
        out.append(TableWrite("lowest_path", (("meta.candidates", (value, mask)),), "set_lowest",
                              (("word", path_word(path, port)),), priority=1))
    return out


def _spine_paths(e: TableWrite, desired: Mapping[OpKey, SwitchOp]) -> TableWrite:
    spine_id = dict(e.match)["hdr.notice.spine_id"]
    slots = [op.slot for op in desired.values()
             if isinstance(op, SpinePaths) and op.spine_id == spine_id]
    if not slots or not 0 <= slots[0] < 64:
        raise MappingError(f"spine {spine_id}: no notice slot within 0..63")
    return dataclasses.replace(e, params=(*e.params, ("slot", slots[0])))


def _port_peer(e: TableWrite) -> TableWrite:
    """Member 1 is the lower port of a two-link bundle, 2 the higher, 3 a single link:
    the bits of the spine's leaf_links register (``_downlinks`` orders port_a alike)."""
    p = dict(e.params)
    port = dict(e.match)["hdr.port_status.port"]
    sibling = p["sibling"]
    member = 3 if sibling == port else 1 if isinstance(port, int) and port < sibling else 2
    return TableWrite("port_peer", e.match, "peer", (("leaf", p["leaf"]), ("member", member)))


def _downlinks(e: TableWrite) -> TableWrite:
    """leaf_downlinks with port_a the lower port (the member-1 bit), share swapped along."""
    p = dict(e.params)
    if e.action != "set_downlinks" or p["port_a"] <= p["port_b"]:
        return e
    share = min(255, max(1, 256 - p["share_a"]))
    return dataclasses.replace(e, params=(("port_a", p["port_b"]), ("port_b", p["port_a"]),
                                          ("share_a", share)))


def _port_levels(e: TableWrite, desired: Mapping[OpKey, SwitchOp],
                 identity: Identity) -> list[Entity]:
    port = dict(e.match)["standard_metadata.egress_port"]
    mbps = next(op.mbps for op in desired.values()
                if isinstance(op, PortCapacity) and op.port == port)
    return [TableWrite("port_levels", (("eg_intr_md.egress_port", port),
                                       ("meta.rate", (r.value, r.mask))),
                       "set_level", (("level", r.level),), priority=1)
            for r in level_entries(mbps, identity.dre_period_shift)]


def _profiles(profiles: list[TableWrite], ports: dict[int, int],
              identity: Identity) -> list[Entity]:
    """dst_profile entries (for Tofino: and dst_masks') and the draws of their
    weight profiles (profile 0: every configured path once, the ECMP fallback of
    ``no_profile``)."""
    max_paths = identity.max_paths
    floor = identity.feedback.unknown_level if identity.feedback.enabled else 0
    wprof: dict[tuple[int, ...], int] = {}
    if ports:
        wprof[tuple(1 if i in ports else 0 for i in range(max_paths))] = 0
    out: list[Entity] = []
    for e in profiles:
        p = dict(e.params)
        weights = tuple(p[f"w{i}"] if i in ports else 0 for i in range(max_paths))
        levels = [min(QMAX, max(floor, p[f"rq{i}"])) for i in range(max_paths)]
        rq0, rq1, rq2 = level_planes(levels, max_paths)
        weighted = sum(1 << i for i, w in enumerate(weights) if w)
        if weighted and weights not in wprof:
            wprof[weights] = len(wprof)
        if len(wprof) > WEIGHT_PROFILES:
            raise MappingError(f"more than {WEIGHT_PROFILES} distinct capacity-weight profiles")
        masks = (("live_mask", _mask(p["live_mask"], max_paths)), ("weighted", weighted),
                 ("rq0", rq0), ("rq1", rq1), ("rq2", rq2))
        chosen = (("wprof", wprof.get(weights, 0)),)
        if _two_pass(identity):
            out.append(TableWrite("dst_profile", e.match, "set_profile", chosen))
            out.append(TableWrite("dst_masks", e.match, "set_masks", masks))
        else:
            out.append(TableWrite("dst_profile", e.match, "set_profile", masks + chosen))
    for weights, profile in sorted(wprof.items(), key=lambda kv: kv[1]):
        for row, draw in enumerate(draw_rows(weights)):
            params: list[tuple[str, int]] = []
            for j, path in enumerate(draw):
                params.append((f"word{j}", path_word(path, ports[path])))
            out.append(TableWrite("draws", (("meta.wprof", profile), ("meta.draw_row", row)),
                                  "set_draws", tuple(params)))
    return out


def writeback_frames(old: Mapping[tuple[int, int], int], new: Mapping[tuple[int, int], int],
                     src_mac: int = 0) -> list[bytes]:
    """PacketOut payloads confirming the epochs of ``new`` that ``old`` does not
    hold yet, per (spine id, destination leaf id)."""
    return [writeback_frame(spine, leaf, epoch, src_mac)
            for (spine, leaf), epoch in sorted(new.items()) if old.get((spine, leaf)) != epoch]
