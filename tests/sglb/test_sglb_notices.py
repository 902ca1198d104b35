"""Failure notices through the software target: a spine turns a port-status
into k copies of a notice; leaves accept one only on the port bound to the
spine it names, exclude exactly the (path, destination leaf) pair, re-admit
on recovery, ignore stale epochs (mod 2^31), and bow to the control plane
only once it has written back an epoch at least as new."""

from __future__ import annotations

import random

from scapy.layers.l2 import Ether
from sglb_harness import (
    CPU_PORT,
    HOST_PORT,
    SPINE_MAC,
    UPLINK_PORTS,
    Node,
    configure_spine,
    udp,
)

from sglb.codes import DropReason, Event, Punt
from sglb.headers import NOTICE_FAIL, NOTICE_RECOVER, PacketIn, PacketOut, PortStatus, SglbNotice
from softswitch import Exact

P1 = UPLINK_PORTS[1]    # path 1: spine 101


def _notice(kind: int, spine: int, leaf: int, epoch: int, **fields) -> bytes:
    return bytes(Ether(dst="ff:ff:ff:ff:ff:ff", src=SPINE_MAC)
                 / SglbNotice(kind=kind, spine_id=spine, leaf_id=leaf, epoch=epoch, **fields))


def _ports_used(node: Node, dst: str, n: int = 80, seed: int = 5) -> set[int]:
    rng = random.Random(seed)
    used = set()
    for _ in range(n):
        node.clock.now += 1000
        outs = node.send(HOST_PORT, udp(dst=dst, sport=rng.randrange(1024, 65536)))
        used.update(o.port for o in outs)
    return used


def _state(node: Node) -> tuple:
    return tuple(node.sw.register_read(f"notice_{i}", leaf) for i in range(4) for leaf in range(4))


def test_fail_notice_excludes_exactly_the_pair_and_reaches_the_control_plane(leaf):
    leaf.set_profile(1)
    leaf.set_profile(2)
    outs = leaf.send(P1, _notice(NOTICE_FAIL, spine=101, leaf=1, epoch=5))
    # applied, and punted so that SyncMesh can write the epoch back
    assert [o.port for o in outs] == [CPU_PORT]
    punted = PacketIn(outs[0].data)
    assert (punted.reason, punted.ingress_port) == (Punt.NOTICE, P1)
    assert punted[SglbNotice].epoch == 5
    assert leaf.event(Event.NOTICE_RECEIVED) == 1
    all_ports = set(UPLINK_PORTS)
    assert _ports_used(leaf, "10.1.0.5") == all_ports - {P1}
    assert _ports_used(leaf, "10.2.0.5") == all_ports   # other destination untouched


def test_recovery_notice_readmits(leaf):
    leaf.set_profile(1)
    leaf.send(P1, _notice(NOTICE_FAIL, 101, 1, epoch=5))
    leaf.send(P1, _notice(NOTICE_RECOVER, 101, 1, epoch=6))
    assert leaf.event(Event.NOTICE_RECEIVED) == 2
    assert P1 in _ports_used(leaf, "10.1.0.5")


def test_stale_and_duplicate_epochs_are_ignored(leaf):
    leaf.set_profile(1)
    leaf.send(P1, _notice(NOTICE_FAIL, 101, 1, epoch=5))
    assert leaf.send(P1, _notice(NOTICE_RECOVER, 101, 1, epoch=4)) == []   # older
    assert leaf.send(P1, _notice(NOTICE_RECOVER, 101, 1, epoch=5)) == []   # replay
    assert leaf.send(P1, _notice(NOTICE_FAIL, 101, 1, epoch=5)) == []      # another copy
    assert leaf.event(Event.NOTICE_STALE) == 1
    assert leaf.event(Event.NOTICE_DUPLICATE) == 2
    assert leaf.event(Event.NOTICE_RECEIVED) == 1
    assert P1 not in _ports_used(leaf, "10.1.0.5")


def test_forged_notices_from_a_host_or_the_wrong_spine_port_change_nothing(leaf):
    """A host sends FAIL with a huge epoch: before, it blackholed the leaf."""
    leaf.set_profile(1)
    before = _state(leaf)
    forged = [(HOST_PORT, _notice(NOTICE_FAIL, spine, 1, epoch=0x7FFFFFF0)) for spine in
              (100, 101, 102, 103)]
    forged += [(UPLINK_PORTS[0], _notice(NOTICE_FAIL, 101, 1, epoch=9)),   # spine 100's port
               (7, _notice(NOTICE_FAIL, 101, 1, epoch=9)),                 # unbound port
               (CPU_PORT, bytes(PacketOut()) + _notice(NOTICE_FAIL, 101, 1, epoch=9))]
    for port, frame in forged:
        assert leaf.send(port, frame) == []
    assert leaf.drops(DropReason.NOTICE_WRONG_PORT) == len(forged)
    assert _state(leaf) == before
    assert leaf.event(Event.NOTICE_RECEIVED) == 0
    assert _ports_used(leaf, "10.1.0.5") == set(UPLINK_PORTS)
    # the real spine's notices still work, and a forged RECOVER cannot undo them
    leaf.send(P1, _notice(NOTICE_FAIL, 101, 1, epoch=3))
    assert leaf.send(HOST_PORT, _notice(NOTICE_RECOVER, 101, 1, epoch=4)) == []
    assert P1 not in _ports_used(leaf, "10.1.0.5", seed=6)
    assert leaf.send(P1, _notice(NOTICE_RECOVER, 101, 1, epoch=4)) != []
    assert P1 in _ports_used(leaf, "10.1.0.5", seed=7)


def test_control_plane_write_cannot_undo_a_newer_exclusion(leaf):
    """The double-failure race: leaf 1 loses spines 100 and 101 at once; the
    control plane has heard only of 100 and writes mask 1110 (path 0 dead);
    the data plane's exclusion of 101 must survive that write."""
    leaf.set_profile(1)
    leaf.send(UPLINK_PORTS[0], _notice(NOTICE_FAIL, 100, 1, epoch=7))
    leaf.send(P1, _notice(NOTICE_FAIL, 101, 1, epoch=12))
    leaf.set_profile(1, mask=0b1110, ep=[7])   # knows 100's epoch 7, not 101's
    used = _ports_used(leaf, "10.1.0.5")
    assert used == {UPLINK_PORTS[2], UPLINK_PORTS[3]}
    # congestion-only updates with the same write-back change nothing either
    leaf.set_profile(1, mask=0b1110, rq=[0, 0, 1, 1], ep=[7])
    assert _ports_used(leaf, "10.1.0.5", seed=8) == {UPLINK_PORTS[2], UPLINK_PORTS[3]}
    # once the control plane has taken 101's epoch into account, its view rules
    leaf.set_profile(1, mask=0b1100, ep=[7, 12])
    assert _ports_used(leaf, "10.1.0.5", seed=9) == {UPLINK_PORTS[2], UPLINK_PORTS[3]}
    leaf.set_profile(1, mask=0b1111, ep=[7, 12])   # both links repaired since
    assert _ports_used(leaf, "10.1.0.5", seed=10) == set(UPLINK_PORTS)


def test_epochs_are_compared_mod_2_31_across_the_wrap(leaf):
    """Sequence numbers wrap; newer is 0 < new - old < 2^29 mod 2^30 (RFC 1982),
    and a path that holds no notice takes the first whatever its epoch."""
    leaf.set_profile(1)
    top = (1 << 30) - 3
    leaf.send(P1, _notice(NOTICE_FAIL, 101, 1, epoch=top))
    assert P1 not in _ports_used(leaf, "10.1.0.5")
    leaf.send(P1, _notice(NOTICE_RECOVER, 101, 1, epoch=2))          # 5 after top: newer
    assert leaf.event(Event.NOTICE_RECEIVED) == 2
    assert P1 in _ports_used(leaf, "10.1.0.5", seed=2)
    leaf.send(P1, _notice(NOTICE_FAIL, 101, 1, epoch=top - 1))        # before the wrap: stale
    assert leaf.event(Event.NOTICE_STALE) == 1
    leaf.send(P1, _notice(NOTICE_FAIL, 101, 1, epoch=(1 << 32) - 5))   # = top - 2 mod 2^30
    assert leaf.event(Event.NOTICE_STALE) == 2
    # a write-back across the wrap: notice 2 (FAIL at 3) is older than write-back 6
    leaf.send(P1, _notice(NOTICE_FAIL, 101, 1, epoch=3))
    assert P1 not in _ports_used(leaf, "10.1.0.5", seed=3)
    leaf.set_profile(1, mask=0b1111, ep=[None, 6])
    assert P1 in _ports_used(leaf, "10.1.0.5", seed=4)
    leaf.set_profile(1, mask=0b1111, ep=[None, top])   # far behind the notice: notice rules
    assert P1 not in _ports_used(leaf, "10.1.0.5", seed=5)


def test_many_control_plane_writes_never_bring_an_old_exclusion_back(leaf):
    """The old 8-bit generation wrapped after 255 liveness changes with no
    notice (a flapping uplink) and resurrected a dead exclusion."""
    leaf.set_profile(1)
    leaf.send(P1, _notice(NOTICE_FAIL, 101, 1, epoch=5))
    leaf.set_profile(1, mask=0b1101, ep=[None, 5])    # confirmed
    leaf.set_profile(1, mask=0b1111, ep=[None, 5])    # repaired, say by SyncMesh
    for i in range(300):                                  # path 3 flaps, no notices
        leaf.set_profile(1, mask=0b1111 if i % 2 else 0b0111, ep=[None, 5])
    leaf.set_profile(1, mask=0b1111, ep=[None, 5])
    assert _ports_used(leaf, "10.1.0.5") == set(UPLINK_PORTS)


def test_malformed_notices_dropped_counted_state_unchanged(leaf):
    leaf.set_profile(1)
    leaf.send(P1, _notice(NOTICE_FAIL, 101, 1, epoch=5))
    before = _state(leaf)
    bad = [
        _notice(NOTICE_RECOVER, 101, 1, epoch=9, version=2),
        _notice(NOTICE_RECOVER, 101, 1, epoch=9, length=16),
        _notice(9, 101, 1, epoch=9),                 # unknown kind
        _notice(NOTICE_RECOVER, 101, 1024, epoch=9),  # leaf out of range
    ]
    for frame in bad:
        assert leaf.send(P1, frame) == []
    assert leaf.drops(DropReason.BAD_NOTICE) == len(bad)
    truncated = _notice(NOTICE_RECOVER, 101, 1, epoch=9)[:-3]
    assert leaf.send(P1, truncated) == []
    assert leaf.drops(DropReason.MALFORMED) == 1
    # a spine with no spine_paths entry, on a port bound to it
    leaf.sw.table_add("port_neighbour", [Exact(9)], "bind_spine", [999])
    assert leaf.send(9, _notice(NOTICE_RECOVER, 999, 1, epoch=9)) == []
    assert leaf.drops(DropReason.UNKNOWN_SPINE) == 1
    assert _state(leaf) == before
    assert leaf.event(Event.NOTICE_RECEIVED) == 1
    assert P1 not in _ports_used(leaf, "10.1.0.5")


def test_spine_sends_k_copies_when_a_leaf_becomes_unreachable(program):
    spine = configure_spine(program, copies=3)
    outs = spine.port_event(3, up=False, seq=41)
    # Port 3 itself is down: its replicas are dropped (and counted) in egress.
    assert sorted(o.port for o in outs) == [4] * 3 + [6] * 3
    assert spine.drops(DropReason.EGRESS_PORT_DOWN) == 3
    for o in outs:
        n = Ether(o.data)[SglbNotice]
        assert (n.kind, n.spine_id, n.leaf_id, n.epoch) == (NOTICE_FAIL, 101, 1, 41)
        assert Ether(o.data).src == SPINE_MAC
    assert spine.event(Event.NOTICE_SENT) == 1
    # Traffic to leaf 1 has no live downlink now.
    assert spine.send(4, udp(dst="10.1.0.5")) == []
    assert spine.drops(DropReason.NO_LIVE_PATH) == 1
    outs = spine.port_event(3, up=True, seq=42)
    assert sorted(o.port for o in outs) == [3] * 3 + [4] * 3 + [6] * 3
    assert {Ether(o.data)[SglbNotice].kind for o in outs} == {NOTICE_RECOVER}
    assert spine.port_event(3, up=True, seq=43) == []      # no change, no notice
    assert spine.event(Event.PORT_STATUS_DUP) == 1


def test_spine_parallel_links_notify_only_when_both_die(program):
    spine = configure_spine(program)
    assert spine.port_event(4, up=False, seq=1) == []
    assert spine.event(Event.NOTICE_SENT) == 0
    assert [o.port for o in spine.send(3, udp(dst="10.2.0.5"))] == [5]
    outs = spine.port_event(5, up=False, seq=2)
    assert {Ether(o.data)[SglbNotice].leaf_id for o in outs} == {2}
    assert spine.event(Event.NOTICE_SENT) == 1


def test_spine_rejects_notices(program):
    spine = configure_spine(program)
    assert spine.send(3, _notice(NOTICE_FAIL, 100, 2, epoch=3)) == []
    assert spine.drops(DropReason.BAD_NOTICE) == 1


def test_copies_from_spine_reach_leaf_end_to_end_one_applies(program, leaf):
    leaf.set_profile(1)
    leaf.set_profile(2)
    spine = configure_spine(program, copies=3)
    notices = [o for o in spine.port_event(3, up=False, seq=7) if o.port == 4]
    assert len(notices) == 3
    for n in notices:                        # path 1 of the test leaf is spine 101
        leaf.send(P1, n.data)
    assert leaf.event(Event.NOTICE_RECEIVED) == 1
    assert leaf.event(Event.NOTICE_DUPLICATE) == 2
    assert P1 not in _ports_used(leaf, "10.1.0.5")
    assert P1 in _ports_used(leaf, "10.2.0.5")


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
    assert P1 in _ports_used(leaf, "10.1.0.5")
