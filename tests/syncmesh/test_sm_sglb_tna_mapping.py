"""The core's desired state as entities of the Tofino program (p4src/tna/sglb.p4):
every name, parameter and width checked against the P4Info bf-p4c writes
(skipped without bf-p4c) and the one p4c's front end writes with the TNA
include files (skipped without them); the Tofino-only encodings by hand."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from finsy.proto import p4i
from google.protobuf import text_format
from syncmesh.core import SyncMeshCore
from syncmesh.sglb_mapping import (
    Identity,
    MappingError,
    MulticastWrite,
    NoticeSeen,
    SwitchBook,
    TableWrite,
    V1ModelMapping,
    entities,
    switch_mac,
)
from syncmesh.sglb_programs import mapping_for
from syncmesh.sglb_tna_mapping import TnaMapping, writeback_frames

from fabricmodel import leaf_spine, load
from sglb import tofino
from sglb.settings import Feedback, SwitchSettings, SwitchTarget
from sglb.tna_config import draw_base, level_planes

ROOT = Path(__file__).resolve().parents[2]
FABRICS = ["ls2x2.yaml", "ls4x2.yaml", "ls4x2-asym.yaml"]
MATCH_KINDS = {p4i.MatchField.EXACT: "exact", p4i.MatchField.LPM: "lpm",
               p4i.MatchField.TERNARY: "ternary", p4i.MatchField.RANGE: "range"}


def _by_suffix(items, name: str):
    found = [x for x in items if x.preamble.name == name
             or x.preamble.name.endswith("." + name)]
    assert len(found) == 1, f"{name}: {[x.preamble.name for x in found]}"
    return found[0]


def check_against_p4info(info: p4i.P4Info, ents) -> set[str]:
    """Every entity fits the P4Info: table, key names / kinds / widths, action of the
    table, parameter names and widths, priority where the table needs one."""
    actions = {a.preamble.id: a for a in info.actions}
    used = set()
    for e in ents:
        if isinstance(e, MulticastWrite):
            assert 0 < e.group_id < 1 << 16
            continue
        table = _by_suffix(info.tables, e.table)
        used.add(e.table)
        action = _by_suffix(info.actions, e.action)
        assert action.preamble.id in {r.id for r in table.action_refs}, (e.table, e.action)
        assert [p.name for p in action.params] == [n for n, _ in e.params], e
        for p, (_, v) in zip(action.params, e.params, strict=True):
            assert 0 <= v < 1 << p.bitwidth, f"{e.action}.{p.name}={v} over {p.bitwidth} bits"
        if e.is_default:
            assert not table.match_fields or e.table in ("switch_config", "uplinks")
            continue
        assert [f.name for f in table.match_fields] == [k for k, _ in e.match], e
        kinds = [MATCH_KINDS[f.match_type] for f in table.match_fields]
        assert (e.priority > 0) == any(k in ("ternary", "range") for k in kinds), e
        for f, kind, (_, v) in zip(table.match_fields, kinds, e.match, strict=True):
            values = [v] if kind == "exact" else [v[0]] if kind == "lpm" else list(v)
            assert all(0 <= x < 1 << f.bitwidth for x in values), (e, f.name)
            if kind == "range":
                assert v[0] <= v[1], e
    assert actions   # the P4Info had actions to check against
    return used


def _tna_entities_of(fabric_file: str, max_paths: int = 8, target: str = "tofino2"):
    fab = load(ROOT / "topologies" / "fabrics" / fabric_file)
    for sw in fab.switches:
        core = SyncMeshCore(fab, sw.name, 1)
        yield sw, tna_entities(core.desired(), tna_id(switch_mac(sw.id), target,
                                                   max_paths=max_paths))


def tna_id(mac: int = 1, target: str = "tofino2", **settings) -> Identity:
    """A Tofino-program switch's identity (``settings``: SwitchSettings fields)."""
    max_paths = settings.pop("max_paths", 8)
    return Identity(mac, SwitchSettings(**settings), max_paths, SwitchTarget(target))


def tna_entities(desired, identity: Identity):
    return TnaMapping(identity).entities(desired)


def _parse(path: Path) -> p4i.P4Info:
    return text_format.Parse(path.read_text(), p4i.P4Info())


@pytest.fixture(scope="module", params=["tofino2", "tofino"])
def bf_p4c_p4info(request, tmp_path_factory):
    if tofino.bf_p4c() is None:
        pytest.skip("bf-p4c is not on PATH")
    # at 8 paths, which bf-p4c fits on both targets (docs/sglb.md, Figures (bf-p4c));
    # Tofino's two-pass program keeps the key names (GLB.*, PICK.* as meta.*)
    out = tofino.compile_tna(request.param, 8, tmp_path_factory.mktemp("tna"))
    return request.param, _parse(out / "p4info.txtpb")


@pytest.fixture(scope="module")
def front_end_p4info(tmp_path_factory):
    include = tofino.tna_include_dir()
    if include is None or not tofino.shutil.which("p4test"):
        pytest.skip("no p4test with TNA include files (bf-p4c's, or $SGLB_TNA_INCLUDE)")
    out = tmp_path_factory.mktemp("tna-fe") / "p4info.txtpb"
    return _parse(tofino.front_end_p4info("tofino", 8, out, include))


@pytest.mark.parametrize("fabric_file", FABRICS)
def test_names_match_bf_p4c_p4info(bf_p4c_p4info, fabric_file):
    target, info = bf_p4c_p4info
    used = set()
    for _sw, ents in _tna_entities_of(fabric_file, target=target):
        used |= check_against_p4info(info, ents)
    # every table SyncMesh owns is written somewhere
    assert used == TnaMapping(tna_id(target=target)).tables
    names = {t.preamble.name for t in info.tables}
    counters = {c.preamble.name for c in info.counters}
    from syncmesh.p4runtime_driver import TX_COUNTER
    assert TX_COUNTER in counters, counters   # a standard counter, not an extern
    assert not any(n.startswith("pipe.") for n in names), names   # standard externs: no prefix


@pytest.mark.parametrize("fabric_file", FABRICS)
def test_names_match_front_end_p4info(front_end_p4info, fabric_file):
    used = set()
    for _sw, ents in _tna_entities_of(fabric_file, target="tofino"):   # as compiled
        used |= check_against_p4info(front_end_p4info, ents)
    assert used == TnaMapping(tna_id(target="tofino")).tables


def test_leaves_get_band_entries_from_their_tolerance():
    """A leaf's band_level entries: one per configured path and level below 7, the
    cut at min(level + the switch's tie_tolerance, 7), lower levels first; a spine
    gets none."""
    for sw, all_ents in _tna_entities_of("ls4x2.yaml"):
        ents = [e for e in all_ents if not isinstance(e, MulticastWrite)]
        config = next(e for e in ents if e.table == "switch_config")
        tol = dict(config.params)["tie_tolerance"]
        uplinks = next((e for e in ents if e.table == "uplinks"), None)
        band = [e for e in ents if e.table == "band_level"]
        if sw.role != "leaf":
            assert band == [], sw.name
            continue
        slots = dict(uplinks.params)["path_slots"]
        assert len(band) == 7 * bin(slots).count("1"), sw.name
        for e in band:
            (_, (safe, _)), *planes = e.match
            level = sum(((v >> (safe.bit_length() - 1)) & 1) << j
                        for j, (_, (v, _)) in enumerate(planes))
            assert safe & slots and e.action == f"above_{min(level + tol, 7)}", e
            assert e.priority == 7 - level, e


def test_tables_shared_with_v1model_are_the_same_entities():
    fab = load(ROOT / "topologies" / "fabrics" / "ls4x2-asym.yaml")
    for name in ("l1", "s2"):
        desired = SyncMeshCore(fab, name, 1).desired()
        v1 = entities(desired, Identity(1))
        tna = tna_entities(desired, tna_id())
        for table in ("ipv4_route", "arp_proxy"):
            assert [e for e in v1 if isinstance(e, TableWrite) and e.table == table] == \
                [e for e in tna if isinstance(e, TableWrite) and e.table == table]
        # leaf_downlinks: the same (bundles ascend here) plus where the draws start
        tna_down = [e for e in tna if isinstance(e, TableWrite) and e.table == "leaf_downlinks"]
        assert [replace(e, params=e.params[:3]) for e in tna_down] == \
            [e for e in v1 if isinstance(e, TableWrite) and e.table == "leaf_downlinks"]
        for e in tna_down:
            leaf = dict(e.match)["meta.dst_leaf"]
            assert e.params[3:] == (("draw_base", draw_base(leaf)),), e
        assert [e for e in v1 if isinstance(e, MulticastWrite)] == \
            [e for e in tna if isinstance(e, MulticastWrite)]
        renamed = {dict(e.match)["ig_intr_md.ingress_port"]: e.params for e in tna
                   if isinstance(e, TableWrite) and e.table == "port_neighbour"}
        assert renamed == {dict(e.match)["standard_metadata.ingress_port"]: e.params for e in v1
                           if isinstance(e, TableWrite) and e.table == "port_neighbour"}


def test_profiles_become_planes_and_weight_profiles():
    """ls4x2-asym: l1 reaches l3 over half capacity through s2 (5 of 10 Mbit/s), so
    its profile toward l3 has its own weights; its draws follow them."""
    fab = load(ROOT / "topologies" / "fabrics" / "ls4x2-asym.yaml")
    desired = SyncMeshCore(fab, "l1", 1).desired()
    v1 = {dict(e.match)["meta.dst_leaf"]: dict(e.params) for e in entities(desired, Identity(1))
          if isinstance(e, TableWrite) and e.table == "dst_profile"}
    ents = tna_entities(desired, tna_id(feedback=Feedback(unknown_level=2)))
    prof = {dict(e.match)["meta.dst_leaf"]: dict(e.params) for e in ents
            if isinstance(e, TableWrite) and e.table == "dst_profile"}
    assert prof.keys() == v1.keys()
    # for Tofino the same values in two tables: the weight profile in dst_profile,
    # the masks in the egress's dst_masks, both under the destination
    split = tna_entities(desired, tna_id(target="tofino", feedback=Feedback(unknown_level=2)))
    for dst, p in prof.items():
        (wprof,) = [dict(e.params) for e in split if isinstance(e, TableWrite)
                    and e.table == "dst_profile" and dict(e.match)["meta.dst_leaf"] == dst]
        (masks,) = [dict(e.params) for e in split if isinstance(e, TableWrite)
                    and e.table == "dst_masks" and dict(e.match)["meta.dst_leaf"] == dst]
        assert wprof == {"wprof": p["wprof"]} and {**masks, **wprof} == p
    assert [e for e in split if getattr(e, "table", "") not in ("dst_profile", "dst_masks")] \
        == [e for e in ents if getattr(e, "table", "") != "dst_profile"]
    for dst, p in prof.items():
        levels = [max(2, v1[dst][f"rq{i}"]) for i in range(8)]   # floored by unknown_level
        weights = [v1[dst][f"w{i}"] for i in range(8)]
        assert (p["rq0"], p["rq1"], p["rq2"]) == level_planes(levels, 8)
        assert p["weighted"] == sum(1 << i for i, w in enumerate(weights) if w)
        assert p["live_mask"] == v1[dst]["live_mask"]
        draws = [dict(e.params) for e in ents if isinstance(e, TableWrite)
                 and e.table == "draws" and dict(e.match)["meta.wprof"] == p["wprof"]]
        assert len(draws) == 64
        drawn = [d["word0"] >> 9 & 63 for d in draws]
        for i, w in enumerate(weights):
            assert abs(drawn.count(i) / 64 - w / sum(weights)) <= 1 / 64 + 1e-9, (dst, i)
        # four valid words per row (the data plane tests membership by the word's path)
        assert all(set(d) == {f"word{j}" for j in range(4)} for d in draws)
        assert all(d[f"word{j}"] >> 15 for d in draws for j in range(4))
    assert len({p["wprof"] for p in prof.values()}) >= 2   # asymmetric: distinct weights
    assert 0 not in {p["wprof"] for p in prof.values()} or len(prof) == 1


def test_spine_members_and_levels_by_range():
    fab = load(ROOT / "topologies" / "fabrics" / "ls4x2-asym.yaml")
    ents = tna_entities(SyncMeshCore(fab, "s2", 1).desired(), tna_id())
    peers = {dict(e.match)["hdr.port_status.port"]: dict(e.params) for e in ents
             if isinstance(e, TableWrite) and e.table == "port_peer"}
    # bundles of two: (1, 2) to l1, (5, 6) to l3 ...
    assert peers[1] == {"leaf": 1, "member": 1} and peers[2] == {"leaf": 1, "member": 2}
    assert peers[5] == {"leaf": 3, "member": 1} and peers[6] == {"leaf": 3, "member": 2}
    levels = [(dict(e.match)["meta.rate"], dict(e.params)["level"]) for e in ents
              if isinstance(e, TableWrite) and e.table == "port_levels"
              and dict(e.match)["eg_intr_md.egress_port"] == 5]
    assert [lvl for _, lvl in levels] == list(range(8))
    assert levels[0][0][0] == 0 and levels[1][0][0] == 8   # t1 = 8 bytes as in v1model
    # a bundle listed high port first: member bits and port_a agree (lower port = a)
    from syncmesh.switchops import SpineRoute
    desired = dict(SyncMeshCore(fab, "s2", 1).desired())
    desired[("spine_route", 3)] = SpineRoute(3, (6, 5))
    swapped = [e for e in tna_entities(desired, tna_id())
               if isinstance(e, TableWrite) and e.table == "leaf_downlinks"
               and dict(e.match)["meta.dst_leaf"] == 3]
    assert [dict(e.params) for e in swapped] == [{"port_a": 5, "port_b": 6, "share_a": 85,
                                                  "draw_base": draw_base(3, swapped_share=171)}]
    single = tna_entities(SyncMeshCore(leaf_spine(2, 1, 1, 1), "s1", 1).desired(),
                          tna_id())
    assert {dict(e.params)["member"] for e in single
            if isinstance(e, TableWrite) and e.table == "port_peer"} == {3}


def test_writebacks_are_frames_for_new_epochs_only():
    assert writeback_frames({(100, 2): 7}, {(100, 2): 7}) == []
    frames = writeback_frames({(100, 2): 7}, {(100, 2): 9, (101, 3): 1})
    assert len(frames) == 2 and frames[0][14 + 1] == 6   # notice kind WRITEBACK


def test_switch_book_plans_the_tofino_program():
    """The book diffs TNA entities; a confirmed notice changes no table (it is a
    frame), and nothing of the v1model program's ep_i appears."""
    fab = load(ROOT / "topologies" / "fabrics" / "ls4x2.yaml")
    desired = SyncMeshCore(fab, "l1", 1).desired()
    book = SwitchBook(mapping_for(tna_id()))
    plan = book.plan(desired)
    assert plan.insert and not plan.delete
    assert all(not n.startswith("ep") for e in plan.insert + plan.modify
               if isinstance(e, TableWrite) for n, _ in e.params)
    book.commit(plan)
    assert book.plan(desired).empty
    book.note_notice(NoticeSeen(spine_id=fab.switch("s1").id, leaf_id=2, fail=False, epoch=5))
    again = book.plan(desired)
    assert again.empty and dict(again.writebacks) == {(fab.switch("s1").id, 2): 5}


def test_bad_programs_and_limits_are_refused():
    with pytest.raises(ValueError, match="target must be a SwitchTarget"):
        Identity(1, target="tna")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tofino3"):
        tna_id(target="tofino3")
    with pytest.raises(MappingError, match="runs on Tofino, not v1model"):
        TnaMapping(Identity(1))
    with pytest.raises(MappingError, match="runs on v1model, not tofino"):
        V1ModelMapping(tna_id(target="tofino"))
    with pytest.raises(ValueError, match="flowlet_gap_us = 5000000 is outside 0..4294967"):
        tna_id(flowlet_gap_us=5_000_000)   # 32 bits of ns; v1model's 32-bit us take it
    assert Identity(1, SwitchSettings(flowlet_gap_us=5_000_000))
    fab = leaf_spine(2, 5, 1, 1, links_per_pair=2)   # 10 uplinks > 8 paths
    with pytest.raises(MappingError, match="MAX_PATHS"):
        tna_entities(SyncMeshCore(fab, "l1", 1).desired(), tna_id())
    ents = tna_entities(SyncMeshCore(fab, "l1", 1).desired(),
                        tna_id(max_paths=64))
    (uplinks,) = [e for e in ents if isinstance(e, TableWrite) and e.table == "uplinks"]
    assert dict(uplinks.params) == {"path_slots": (1 << 10) - 1, "path_count": 10}
