"""Failure notices through the software target: a spine turns a port-status
into a notice; leaves exclude exactly the (path, destination leaf) pair,
re-admit on recovery, ignore stale epochs and bow to the control plane."""

from __future__ import annotations

import random

from scapy.layers.l2 import Ether
from sglb_harness import (
    CPU_PORT,
    UPLINK_PORTS,
    Clock,
    Node,
    ip_int,
    mac_int,
    make_switch,
    udp,
)

from sglb.codes import DropReason, Event, Role
from sglb.headers import NOTICE_FAIL, NOTICE_RECOVER, PacketOut, PortStatus, SglbNotice
from softswitch import Exact, Lpm

SPINE_MAC = "02:00:00:00:00:65"
NOTICE_GROUP = 7


def _notice(kind: int, spine: int, leaf: int, epoch: int, **fields) -> bytes:
    return bytes(Ether(dst="ff:ff:ff:ff:ff:ff", src=SPINE_MAC)
                 / SglbNotice(kind=kind, spine_id=spine, leaf_id=leaf, epoch=epoch, **fields))


def _ports_used(node: Node, dst: str, n: int = 80, seed: int = 5) -> set[int]:
    rng = random.Random(seed)
    used = set()
    for _ in range(n):
        node.clock.now += 1000
        outs = node.send(10, udp(dst=dst, sport=rng.randrange(1024, 65536)))
        used.update(o.port for o in outs)
    return used


def test_fail_notice_excludes_exactly_the_pair(leaf):
    leaf.set_profile(1)
    leaf.set_profile(2)
    assert leaf.send(UPLINK_PORTS[1], _notice(NOTICE_FAIL, spine=101, leaf=1, epoch=5)) == []
    assert leaf.event(Event.NOTICE_RECEIVED) == 1
    all_ports = set(UPLINK_PORTS)
    assert _ports_used(leaf, "10.1.0.5") == all_ports - {UPLINK_PORTS[1]}
    assert _ports_used(leaf, "10.2.0.5") == all_ports   # other destination untouched


def test_recovery_notice_readmits(leaf):
    leaf.set_profile(1)
    leaf.send(UPLINK_PORTS[1], _notice(NOTICE_FAIL, 101, 1, epoch=5))
    leaf.send(UPLINK_PORTS[1], _notice(NOTICE_RECOVER, 101, 1, epoch=6))
    assert leaf.event(Event.NOTICE_RECEIVED) == 2
    assert UPLINK_PORTS[1] in _ports_used(leaf, "10.1.0.5")


def test_stale_epoch_is_ignored(leaf):
    leaf.set_profile(1)
    leaf.send(UPLINK_PORTS[1], _notice(NOTICE_FAIL, 101, 1, epoch=5))
    leaf.send(UPLINK_PORTS[1], _notice(NOTICE_RECOVER, 101, 1, epoch=4))  # older
    leaf.send(UPLINK_PORTS[1], _notice(NOTICE_RECOVER, 101, 1, epoch=5))  # replay
    assert leaf.event(Event.NOTICE_STALE) == 2
    assert leaf.event(Event.NOTICE_RECEIVED) == 1
    assert UPLINK_PORTS[1] not in _ports_used(leaf, "10.1.0.5")


def test_newer_profile_generation_supersedes_notices(leaf):
    leaf.set_profile(1, gen=1)
    leaf.send(UPLINK_PORTS[1], _notice(NOTICE_FAIL, 101, 1, epoch=5))
    assert UPLINK_PORTS[1] not in _ports_used(leaf, "10.1.0.5")
    leaf.set_profile(1, gen=2)  # the control plane says path 1 is fine
    assert UPLINK_PORTS[1] in _ports_used(leaf, "10.1.0.5", seed=6)


def test_congestion_update_with_same_generation_keeps_exclusion(leaf):
    leaf.set_profile(1, gen=3)
    leaf.send(UPLINK_PORTS[1], _notice(NOTICE_FAIL, 101, 1, epoch=5))
    leaf.set_profile(1, gen=3, rq=[2, 0, 1, 3])  # congestion only: same generation
    assert UPLINK_PORTS[1] not in _ports_used(leaf, "10.1.0.5")


def _state(node: Node) -> tuple:
    return (tuple(node.sw.register_read("notice_epoch", i) for i in range(4)),
            tuple(node.sw.register_read("excl_mask", i) for i in range(4)),
            tuple(node.sw.register_read("excl_gen", i) for i in range(4)))


def test_malformed_notices_dropped_counted_state_unchanged(leaf):
    leaf.set_profile(1)
    leaf.send(UPLINK_PORTS[1], _notice(NOTICE_FAIL, 101, 1, epoch=5))
    before = _state(leaf)
    bad = [
        _notice(NOTICE_RECOVER, 101, 1, epoch=9, version=2),
        _notice(NOTICE_RECOVER, 101, 1, epoch=9, length=16),
        _notice(9, 101, 1, epoch=9),                 # unknown kind
        _notice(NOTICE_RECOVER, 101, 1024, epoch=9),  # leaf out of range
    ]
    for frame in bad:
        assert leaf.send(UPLINK_PORTS[1], frame) == []
    assert leaf.drops(DropReason.BAD_NOTICE) == len(bad)
    truncated = _notice(NOTICE_RECOVER, 101, 1, epoch=9)[:-3]
    assert leaf.send(UPLINK_PORTS[1], truncated) == []
    assert leaf.drops(DropReason.MALFORMED) == 1
    assert leaf.send(UPLINK_PORTS[1], _notice(NOTICE_RECOVER, 999, 1, epoch=9)) == []
    assert leaf.drops(DropReason.UNKNOWN_SPINE) == 1
    assert _state(leaf) == before
    assert leaf.event(Event.NOTICE_RECEIVED) == 1
    assert UPLINK_PORTS[1] not in _ports_used(leaf, "10.1.0.5")


def _spine(program) -> Node:
    """Spine 101: leaf 1 on port 3, leaf 2 on parallel ports 4 and 5, leaf 3 on port 6."""
    clock = Clock()
    sw = make_switch(program, clock)
    sw.table_set_default("switch_config", "set_switch",
                         [int(Role.SPINE), 0, 101, mac_int(SPINE_MAC), 50, 0, NOTICE_GROUP])
    for port, leaf, sibling in [(3, 1, 3), (4, 2, 5), (5, 2, 4), (6, 3, 6)]:
        sw.table_add("port_peer", [Exact(port)], "peer", [leaf, sibling])
    for leaf, a, b in [(1, 3, 3), (2, 4, 5), (3, 6, 6)]:
        sw.table_add("leaf_downlinks", [Exact(leaf)], "set_downlinks", [a, b])
        sw.table_add("ipv4_route", [Lpm(ip_int(f"10.{leaf}.0.0"), 16)], "to_leaf", [leaf])
    sw.mc_group_set(NOTICE_GROUP, [(3, 0), (4, 0), (5, 0), (6, 0)])
    return Node(sw, clock)


def test_spine_sends_notice_when_leaf_unreachable(program):
    spine = _spine(program)
    outs = spine.port_event(3, up=False, seq=41)
    # Port 3 itself is down: its replica is dropped (and counted) in egress.
    assert sorted(o.port for o in outs) == [4, 5, 6]
    assert spine.drops(DropReason.EGRESS_PORT_DOWN) == 1
    for o in outs:
        n = Ether(o.data)[SglbNotice]
        assert (n.kind, n.spine_id, n.leaf_id, n.epoch) == (NOTICE_FAIL, 101, 1, 41)
        assert Ether(o.data).src == SPINE_MAC
    assert spine.event(Event.NOTICE_SENT) == 1
    # Traffic to leaf 1 has no live downlink now.
    assert spine.send(1, udp(dst="10.1.0.5")) == []
    assert spine.drops(DropReason.NO_LIVE_PATH) == 1
    outs = spine.port_event(3, up=True, seq=42)
    assert sorted(o.port for o in outs) == [3, 4, 5, 6]
    assert {Ether(o.data)[SglbNotice].kind for o in outs} == {NOTICE_RECOVER}
    assert spine.port_event(3, up=True, seq=43) == []      # no change, no notice
    assert spine.event(Event.PORT_STATUS_DUP) == 1


def test_spine_parallel_links_notify_only_when_both_die(program):
    spine = _spine(program)
    assert spine.port_event(4, up=False, seq=1) == []
    assert spine.event(Event.NOTICE_SENT) == 0
    assert [o.port for o in spine.send(1, udp(dst="10.2.0.5"))] == [5]
    outs = spine.port_event(5, up=False, seq=2)
    assert {Ether(o.data)[SglbNotice].leaf_id for o in outs} == {2}
    assert spine.event(Event.NOTICE_SENT) == 1


def test_notice_from_spine_reaches_leaf_end_to_end(program, leaf):
    leaf.set_profile(1)
    leaf.set_profile(2)
    spine = _spine(program)
    notices = spine.port_event(3, up=False, seq=7)   # spine 101 loses leaf 1
    leaf.send(UPLINK_PORTS[1], notices[0].data)     # path 1 of the test leaf is spine 101
    assert UPLINK_PORTS[1] not in _ports_used(leaf, "10.1.0.5")
    assert UPLINK_PORTS[1] in _ports_used(leaf, "10.2.0.5")


def test_malformed_port_status_dropped_counted_state_unchanged(leaf):
    def frame(**kw):
        return bytes(PacketOut() / Ether(dst="ff:ff:ff:ff:ff:ff", src="00:00:00:00:00:00")
                     / PortStatus(**kw))

    leaf.set_profile(1)
    bad_from_cpu = [frame(version=2, op=1, port=2, seq=1),
                    frame(op=3, port=2, seq=1),
                    frame(op=1, port=600, seq=1)]
    for f in bad_from_cpu:
        assert leaf.sw.process_packet(CPU_PORT, f) == []
    # A port-status from a data port is never trusted.
    assert leaf.send(5, bytes(Ether(dst="ff:ff:ff:ff:ff:ff") / PortStatus(op=1, port=2, seq=1))) == []
    assert leaf.drops(DropReason.BAD_PORT_STATUS) == 4
    assert leaf.sw.process_packet(CPU_PORT, frame(op=1, port=2, seq=1)[:-2]) == []
    assert leaf.drops(DropReason.MALFORMED) == 1
    assert all(leaf.sw.register_read("port_down", p) == 0 for p in range(8))
    assert leaf.event(Event.PORT_DOWN) == 0
    assert UPLINK_PORTS[1] in _ports_used(leaf, "10.1.0.5")
