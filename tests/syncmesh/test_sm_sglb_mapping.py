"""The core's desired state as sglb.p4 entities: checked against the program's P4Info, then
installed into the software target (in-process) and exercised with packets."""

from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from syncmesh.core import SyncMeshCore
from syncmesh.linkstate import PortState, Version
from syncmesh.messages import Hello, LinkNotice
from syncmesh.sglb_mapping import (
    Identity,
    MappingError,
    MulticastWrite,
    TableWrite,
    entities,
    switch_mac,
)
from syncmesh.switchops import MulticastGroup, PathEntry

from fabricmodel import leaf_spine, load
from sglb.settings import SwitchSettings
from softswitch import Exact, Lpm, Switch, compile_file

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def program():
    return compile_file(str(ROOT / "p4src" / "sglb.p4"))


def by_suffix(items, name):
    found = [x for x in items if x.name == name or x.name.endswith("." + name)]
    assert len(found) == 1, f"{name}: {[x.name for x in found]}"
    return found[0]


def check_against_p4info(info, ents):
    for e in ents:
        if isinstance(e, MulticastWrite):
            assert 0 < e.group_id < 1 << 16
            continue
        table = by_suffix(info.tables, e.table)
        assert [k.name for k in table.keys] == [k for k, _ in e.match] or e.is_default
        action = by_suffix(info.actions, e.action)
        refs = [a.name if isinstance(a, str) else a.name for a in table.actions]
        assert action.name in refs, f"{e.action} not an action of {e.table}"
        assert [p.name for p in action.params] == [n for n, _ in e.params], e
        for p, (_, v) in zip(action.params, e.params, strict=True):
            assert 0 <= v < 1 << p.bitwidth, f"{e.action}.{p.name}={v} over {p.bitwidth} bits"
        for k, (_, v) in zip(table.keys, e.match, strict=True):
            value = v[0] if k.match_kind == "lpm" else v
            assert 0 <= value < 1 << k.bitwidth


@pytest.mark.parametrize("fabric_file", ["ls2x2.yaml", "ls4x2.yaml", "ls4x2-asym.yaml"])
def test_every_switch_maps_onto_the_p4info(program, fabric_file):
    fab = load(ROOT / "topologies" / "fabrics" / fabric_file)
    for sw in fab.switches:
        core = SyncMeshCore(fab, sw.name, 1)
        ents = entities(core.desired(), Identity(switch_mac(sw.id)))
        check_against_p4info(program.info, ents)
        tables = {e.table for e in ents if isinstance(e, TableWrite)}
        if sw.is_leaf:
            assert {"switch_config", "uplinks", "ipv4_route", "arp_proxy", "dst_profile",
                    "spine_paths"} <= tables
        else:
            assert {"switch_config", "ipv4_route", "leaf_downlinks", "port_peer"} <= tables
            assert any(isinstance(e, MulticastWrite) for e in ents)


def test_asymmetric_bundle_halves_the_weight():
    fab = load(ROOT / "topologies" / "fabrics" / "ls4x2-asym.yaml")
    # l1's bundle to s1 has one member down: paths via s1 toward l2 carry half, via s2 full
    core = SyncMeshCore(fab, "l2", 1)
    d = core.desired()
    paths = sorted((op for op in d.values() if isinstance(op, PathEntry) and op.dst_leaf == 1),
                   key=lambda p: p.index)
    assert [p.capacity_mbps for p in paths] == [5.0, 5.0, 10.0, 10.0]
    prof = next(e for e in entities(d, Identity(1)) if isinstance(e, TableWrite)
                and e.table == "dst_profile" and e.match == (("meta.dst_leaf", 1),))
    params = dict(prof.params)
    assert [params[f"w{i}"] for i in range(4)] == [8, 8, 15, 15]
    assert params["live_mask"] == 0b1111
    # at s1 the bundle toward l1 has one live port; the notice group has one port per leaf
    spine = SyncMeshCore(fab, "s1", 1).desired()
    assert spine["spine_route", 1].ports == (1,)
    assert spine["mcast", 1] == MulticastGroup(1, (1, 3, 5, 7))


def test_shifts_follow_port_capacity():
    # the daemon and the packet tests share sglb.config: 10 Mbit/s gets shift 4,
    # 10 Gbit/s 14 (tests/sglb/test_sglb_config.py works them out by hand)
    fab = leaf_spine(2, 2, 1, 1, link_capacity="10Mbit")
    fab = fab.with_link(fab.links_between("l1", "s2")[0], capacity_mbps=10_000)
    (uplinks,) = [e for e in entities(SyncMeshCore(fab, "l1", 1).desired(), Identity(1))
                  if isinstance(e, TableWrite) and e.table == "uplinks"]
    params = dict(uplinks.params)
    assert (params["path_slots"], params["shift0"], params["shift1"]) == (0b11, 4, 14)


def test_limits_of_the_program_are_refused():
    fab = leaf_spine(2, 5, 1, 1, links_per_pair=2)  # 10 uplinks per leaf > 8 paths
    with pytest.raises(MappingError, match=r"8 paths per leaf \(MAX_PATHS\)"):
        entities(SyncMeshCore(fab, "l1", 1).desired(), Identity(1))
    fab = leaf_spine(2, 1, 1, 1, links_per_pair=3)  # bundles of 3 > 2
    with pytest.raises(MappingError, match="at most 2 parallel links"):
        entities(SyncMeshCore(fab, "s1", 1).desired(), Identity(1))


def install(sw: Switch, ents) -> None:
    for e in ents:
        if isinstance(e, MulticastWrite):
            sw.mc_group_set(e.group_id, [(p, 0) if isinstance(p, int) else p for p in e.ports])
        elif e.is_default:
            sw.table_set_default(e.table, e.action, dict(e.params))
        else:
            keys = {k: Lpm(*v) if isinstance(v, tuple) else Exact(v) for k, v in e.match}
            handle = sw.table_find(e.table, keys)
            if handle is None:
                sw.table_add(e.table, keys, e.action, dict(e.params))
            else:
                sw.table_modify(e.table, handle, e.action, dict(e.params))


def frame(src_mac, dst_mac, src_ip, dst_ip, sport):
    return bytes(Ether(src=src_mac, dst=dst_mac) / IP(src=src_ip, dst=dst_ip, ttl=64)
                 / UDP(sport=sport, dport=4791) / (b"x" * 64))


def test_leaf_and_spine_forward_with_the_mapped_entries(program):
    fab = leaf_spine(2, 2, 1, 1)
    h1, h2 = (h.nics[0] for h in fab.hosts)
    clock = [1_000_000]
    leaf = Switch(program, cpu_port=255, clock=lambda: clock[0])
    core = SyncMeshCore(fab, "l1", 1)
    install(leaf, entities(core.desired(), Identity(switch_mac(1))))
    uplink_ports = {2, 3}
    seen = set()
    for sport in range(1000, 1040):
        clock[0] += 10_000  # every packet a new flowlet
        outs = leaf.process_packet(1, frame(h1.mac, "02:53:47:00:00:01", str(h1.ip),
                                            str(h2.ip), sport))
        assert len(outs) == 1 and outs[0].port in uplink_ports, outs
        seen.add(outs[0].port)
    assert seen == uplink_ports  # both paths used while both are live
    # the l2-s1 link fails: SyncMesh takes path 0 (via s1) out of l1's profile for l2
    core.on_hello("s1", Hello(5, 1), 0.0)
    core.on_notice("s1", LinkNotice((PortState("l2", 2, False, Version(9, 1), 1.0),)), 1.0)
    install(leaf, entities(core.desired(), Identity(switch_mac(1))))
    for sport in range(1000, 1040):
        clock[0] += 10_000
        outs = leaf.process_packet(1, frame(h1.mac, "02:53:47:00:00:01", str(h1.ip),
                                            str(h2.ip), sport))
        assert [o.port for o in outs] == [3]
    # the spine delivers toward l2 through its port to l2
    spine = Switch(program, cpu_port=255, clock=lambda: clock[0])
    install(spine, entities(SyncMeshCore(fab, "s1", 1).desired(), Identity(switch_mac(3))))
    outs = spine.process_packet(1, frame("02:53:47:00:00:01", "02:53:47:00:00:03", str(h1.ip),
                                         str(h2.ip), 5))
    assert [o.port for o in outs] == [2]
    # and the destination leaf hands it to the host with the host's MAC
    l2 = Switch(program, cpu_port=255, clock=lambda: clock[0])
    install(l2, entities(SyncMeshCore(fab, "l2", 1).desired(), Identity(switch_mac(2))))
    outs = l2.process_packet(2, frame("02:53:47:00:00:03", "02:53:47:00:00:02", str(h1.ip),
                                      str(h2.ip), 5))
    assert [o.port for o in outs] == [1]
    assert Ether(outs[0].data).dst == h2.mac


def test_ports_are_bound_to_their_neighbours():
    """A notice is believed only on the port bound to the spine it names: the
    mapping binds every uplink to its spine, host ports to hosts, and a spine's
    downlinks to their leaf; nothing else is bound."""
    fab = load(ROOT / "topologies" / "fabrics" / "ls4x2-asym.yaml")
    ents = entities(SyncMeshCore(fab, "l1", 1).desired(), Identity(1))
    bound = {dict(e.match)["standard_metadata.ingress_port"]: (e.action, dict(e.params))
             for e in ents if isinstance(e, TableWrite) and e.table == "port_neighbour"}
    s1, s2 = fab.switch("s1").id, fab.switch("s2").id
    assert bound == {1: ("bind_host", {}), 2: ("bind_host", {}),
                     3: ("bind_spine", {"spine_id": s1}), 4: ("bind_spine", {"spine_id": s1}),
                     5: ("bind_spine", {"spine_id": s2}), 6: ("bind_spine", {"spine_id": s2})}
    spine = entities(SyncMeshCore(fab, "s2", 1).desired(), Identity(1))
    bound = {dict(e.match)["standard_metadata.ingress_port"]: dict(e.params)["leaf_id"]
             for e in spine if isinstance(e, TableWrite) and e.table == "port_neighbour"}
    assert bound == {1: 1, 2: 1, 3: 2, 4: 2, 5: 3, 6: 3, 7: 4, 8: 4}


def test_unequal_bundle_split_thresholds_and_notice_copies():
    fab = load(ROOT / "topologies" / "fabrics" / "ls4x2-asym.yaml")
    ents = entities(SyncMeshCore(fab, "s2", 1).desired(), Identity(1, SwitchSettings(notice_copies=3)))
    down = {dict(e.match)["meta.dst_leaf"]: dict(e.params) for e in ents
            if isinstance(e, TableWrite) and e.table == "leaf_downlinks"}
    # l3 hangs off s2 by 5 and 10 Mbit/s: a third of the flows on the 5 Mbit/s member
    assert down[3] == {"port_a": 5, "port_b": 6, "share_a": 85}
    assert down[4] == {"port_a": 7, "port_b": 8, "share_a": 128}
    levels = {dict(e.match)["standard_metadata.egress_port"]: dict(e.params) for e in ents
              if isinstance(e, TableWrite) and e.table == "port_levels"}
    assert levels[5]["t1"] == 8 and levels[6]["t1"] == 16     # shifts 3 and 4
    (group,) = [e for e in ents if isinstance(e, MulticastWrite)]
    assert group.ports[:3] == (1, (1, 1), (1, 2)) and len(group.ports) == 12
    with pytest.raises(ValueError, match="notice_copies"):
        Identity(1, SwitchSettings(notice_copies=0))
    with pytest.raises(ValueError, match="MAX_PATHS"):
        Identity(1, max_paths=12)


def test_a_wider_program_takes_more_paths():
    fab = leaf_spine(2, 5, 1, 1, links_per_pair=2)  # 10 uplinks per leaf
    ents = entities(SyncMeshCore(fab, "l1", 1).desired(), Identity(1, max_paths=16))
    (uplinks,) = [e for e in ents if isinstance(e, TableWrite) and e.table == "uplinks"]
    params = dict(uplinks.params)
    assert params["path_slots"] == (1 << 10) - 1 and params["path_count"] == 10
    assert len(params) == 2 + 2 * 16
