"""The core's desired switch state as table entries of the Tofino program
(``p4src/tna/sglb.p4``), and the frames that confirm notice epochs to it.

The Tofino program keeps the v1model program's tables where it can: both
mappings read the desired state through ``sglb_switch.DesiredView`` and build
their entities from it, the same where the tables are the same and these
where they differ (docs/sglb.md, "The Tofino program"):

| v1model entity | Tofino entities |
|---|---|
| ``switch_config`` ``set_switch`` (us) | ``set_switch`` in ns (``sglb.settings.switch_params``), without fb_stale / unknown_level; on a leaf ``band_level`` (ternary, per configured path and level: the cut at level + tie_tolerance) |
| ``uplinks`` ``set_uplinks(slots, count, port_i, shift_i)`` | ``uplinks`` ``set_uplinks(slots, count)``; ``path_ports[path]``, ``fb_paths[path]``, ``port_paths[port]``, ``lowest_path`` (ternary) |
| ``dst_profile`` ``set_profile(mask, rq_i, w_i, ep_i)`` | ``set_profile(mask, weighted, rq0..rq2, wprof)`` + ``draws[wprof, row]``; for Tofino (two passes) ``set_profile(wprof)`` and the masks in ``dst_masks`` ``set_masks(mask, weighted, rq0..rq2)`` (an egress table) |
| ``spine_paths`` ``set_spine(paths)`` | ``set_spine(paths, slot)`` |
| ``port_peer`` ``peer(leaf, sibling)`` | ``peer(leaf, member)`` (1: lower port, 2: higher, 3: only link) |
| ``leaf_downlinks`` ``set_downlinks(a, b, share_a)`` | ``set_downlinks(a, b, share_a, draw_base)``, port_a the lower port; ``draw_base`` places the destination's draw sequence (``sglb.tna_config.draw_base``) |
| ``port_levels`` ``set_levels(t1..t7)`` | ``port_levels[port, rate ternary]`` ``set_level(k)`` |
| ``port_neighbour[standard_metadata.ingress_port]`` | ``port_neighbour[ig_intr_md.ingress_port]`` |
| written-back epochs ``ep_i`` | ``writeback_frame`` PacketOuts (``writeback_frames``) |

``ipv4_route``, ``arp_proxy`` and the multicast groups are the same entities
in both programs.
"""

from __future__ import annotations

from collections.abc import Mapping

from sglb.codes import LbMode, Role
from sglb.settings import switch_params
from sglb.tna_config import (
    WEIGHT_PROFILES,
    band_entries,
    draw_base,
    draw_rows,
    level_entries,
    level_planes,
    lowest_entries,
    path_word,
    writeback_frame,
)
from sglb.tofino import TARGETS

from .entities import Entity, TableWrite
from .sglb_switch import DesiredView, Identity, MappingError, Profile
from .switchops import OpKey, SpinePaths, SwitchOp

SHARED_TABLES = frozenset({"switch_config", "uplinks", "port_neighbour", "ipv4_route",
                           "arp_proxy", "dst_profile", "spine_paths", "port_peer",
                           "leaf_downlinks", "port_levels"})
"""Tables the Tofino program has under the v1model program's names."""
TNA_TABLES = frozenset(SHARED_TABLES | {"path_ports", "fb_paths", "port_paths", "lowest_path",
                                        "draws", "band_level"})
"""Tables of the Tofino program this daemon owns (reconcile deletes what it did not write)."""
TOFINO_TABLES = TNA_TABLES | {"dst_masks"}
"""... compiled for Tofino: the profile's masks are the egress's ``dst_masks``."""
BAND_KEYS = ("meta.live_safe", "meta.fb0", "meta.fb1", "meta.fb2")


def _mask(bits: int, max_paths: int) -> int:
    return bits & ((1 << max_paths) - 1)


class TnaMapping:
    """The entities of p4src/tna/sglb.p4 for one switch on Tofino or Tofino 2 (a
    ``sglb_switch.ProgramMapping``); written-back epochs are frames
    (``writeback_frames``)."""

    def __init__(self, identity: Identity) -> None:
        if not identity.target.is_tna:
            raise MappingError(f"p4src/tna/sglb.p4 runs on Tofino, not {identity.target.value}")
        self.identity = identity
        self.two_pass = TARGETS[identity.target.value].passes == 2
        """The program runs the engine in the recirculation port's egress (Tofino),
        where the profile's masks are ``dst_masks``."""

    @property
    def tables(self) -> frozenset[str]:
        """The tables SyncMesh owns in the Tofino program on this target."""
        return TOFINO_TABLES if self.two_pass else TNA_TABLES

    def entities(self, desired: Mapping[OpKey, SwitchOp],
                 writebacks: Mapping[tuple[int, int], int] | None = None) -> list[Entity]:
        """Entities of p4src/tna/sglb.p4 for a desired state (``writebacks`` are not
        table state here: ``writeback_frames``)."""
        ident = self.identity
        max_paths = ident.max_paths
        view = DesiredView(desired, max_paths)
        config = view.config
        out: list[Entity] = [TableWrite("switch_config", (), "set_switch", tuple(switch_params(
            ident.target, Role.LEAF if view.is_leaf else Role.SPINE, config.switch_id,
            ident.switch_mac, ident.settings, LbMode.SGLB if config.glb else LbMode.ECMP,
            config.notice_group)))]
        for port in sorted(view.capacity):
            out += [TableWrite("port_levels", (("eg_intr_md.egress_port", port),
                                               ("meta.rate", (r.value, r.mask))),
                               "set_level", (("level", r.level),), priority=1)
                    for r in level_entries(view.capacity[port], ident.settings.period_shift)]
        out += view.routes(ident.switch_mac)
        ports = view.uplinks if view.is_leaf else {}
        if view.is_leaf:
            slots = sum(1 << i for i in ports)
            out.append(TableWrite("uplinks", (), "set_uplinks",
                                  (("path_slots", slots),
                                   ("path_count", max(ports, default=-1) + 1))))
            out += _path_tables(ports, max_paths)
        for op in view.ops(SpinePaths):
            slot = next(sp.slot for sp in view.ops(SpinePaths) if sp.spine_id == op.spine_id)
            if not 0 <= slot < 64:
                raise MappingError(f"spine {op.spine_id}: no notice slot within 0..63")
            out.append(TableWrite("spine_paths", (("hdr.notice.spine_id", op.spine_id),),
                                  "set_spine", (("paths", sum(1 << i for i in op.paths)),
                                                ("slot", slot))))
        for d in view.downlinks():
            key = (("meta.dst_leaf", d.dst_leaf),)
            if d.members is None:
                out.append(TableWrite("leaf_downlinks", key, "no_downlinks", ()))
                continue
            a, b, share = d.members
            base = draw_base(d.dst_leaf)
            if a > b:   # port_a is the lower port (the member-1 bit), share swapped along
                base = draw_base(d.dst_leaf, swapped_share=share)
                a, b, share = b, a, min(255, max(1, 256 - share))
            out.append(TableWrite("leaf_downlinks", key, "set_downlinks",
                                  (("port_a", a), ("port_b", b), ("share_a", share),
                                   ("draw_base", base))))
        for port, leaf, sibling in view.peers():
            # member 1 is the lower port of a two-link bundle, 2 the higher, 3 a single
            # link: the bits of the spine's leaf_links register
            member = 3 if sibling == port else 1 if port < sibling else 2
            out.append(TableWrite("port_peer", (("hdr.port_status.port", port),), "peer",
                                  (("leaf", leaf), ("member", member))))
        bindings = view.neighbours()
        for port in sorted(bindings):
            action, params = bindings[port]
            out.append(TableWrite("port_neighbour", (("ig_intr_md.ingress_port", port),),
                                  action, params))
        out += view.multicast(ident.settings.notice_copies)
        if view.is_leaf:
            out += self._profiles(view.profiles(), ports)
            out += _band_level(ident.settings.tie_tolerance, ports, max_paths)
        return out

    def _profiles(self, profiles: list[Profile], ports: dict[int, int]) -> list[Entity]:
        """dst_profile entries (for Tofino: and dst_masks') and the draws of their
        weight profiles (profile 0: every configured path once, the ECMP fallback of
        ``no_profile``)."""
        max_paths = self.identity.max_paths
        fb = self.identity.settings.feedback
        floor = fb.unknown_level if fb.enabled else 0
        wprof: dict[tuple[int, ...], int] = {}
        if ports:
            wprof[tuple(1 if i in ports else 0 for i in range(max_paths))] = 0
        out: list[Entity] = []
        for p in profiles:
            weights = tuple(p.weights[i] if i in ports else 0 for i in range(max_paths))
            levels = [min(7, max(floor, level)) for level in p.levels]
            rq0, rq1, rq2 = level_planes(levels, max_paths)
            weighted = sum(1 << i for i, w in enumerate(weights) if w)
            if weighted and weights not in wprof:
                wprof[weights] = len(wprof)
            if len(wprof) > WEIGHT_PROFILES:
                raise MappingError(f"more than {WEIGHT_PROFILES} distinct capacity-weight "
                                   "profiles")
            key = (("meta.dst_leaf", p.dst_leaf),)
            masks = (("live_mask", _mask(p.live_mask, max_paths)), ("weighted", weighted),
                     ("rq0", rq0), ("rq1", rq1), ("rq2", rq2))
            chosen = (("wprof", wprof.get(weights, 0)),)
            if self.two_pass:
                out.append(TableWrite("dst_profile", key, "set_profile", chosen))
                out.append(TableWrite("dst_masks", key, "set_masks", masks))
            else:
                out.append(TableWrite("dst_profile", key, "set_profile", masks + chosen))
        for weights, profile in sorted(wprof.items(), key=lambda kv: kv[1]):
            for row, draw in enumerate(draw_rows(weights)):
                out.append(TableWrite("draws", (("meta.wprof", profile), ("meta.draw_row", row)),
                                      "set_draws", tuple((f"word{j}", path_word(path, ports[path]))
                                                         for j, path in enumerate(draw))))
        return out

    def held_writebacks(self, read_back: list[Entity]) -> dict[tuple[int, int], int]:
        """None: the Tofino program keeps written-back epochs in registers, which are not
        read back; the data plane keeps its notices in force until they are confirmed
        again."""
        return {}

    def writeback_frames(self, old: Mapping[tuple[int, int], int],
                         new: Mapping[tuple[int, int], int]) -> list[bytes]:
        """PacketOut payloads confirming the epochs of ``new`` that ``old`` does not
        hold yet, per (spine id, destination leaf id)."""
        return writeback_frames(old, new, self.identity.switch_mac)


def _band_level(tolerance: int, ports: dict[int, int], max_paths: int) -> list[Entity]:
    return [TableWrite("band_level", tuple(zip(BAND_KEYS, b.key(), strict=True)),
                       f"above_{b.cut}", (), priority=b.priority)
            for b in band_entries(tolerance, sorted(ports), max_paths)]


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


def writeback_frames(old: Mapping[tuple[int, int], int], new: Mapping[tuple[int, int], int],
                     src_mac: int = 0) -> list[bytes]:
    """PacketOut payloads confirming the epochs of ``new`` that ``old`` does not
    hold yet, per (spine id, destination leaf id)."""
    return [writeback_frame(spine, leaf, epoch, src_mac)
            for (spine, leaf), epoch in sorted(new.items()) if old.get((spine, leaf)) != epoch]
