"""In-band congestion feedback (CONGA-style fabric tag) through the software
target: spines raise the tag's congestion level, the destination leaf
returns it with the one-way delay, the source leaf moves new flowlets away;
stale feedback ages toward unknown/high, never idle; a flowlet moves only
after the measured delay skew; tags are checked at every boundary."""

from __future__ import annotations

import random

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from sglb_harness import (
    HOST_MAC,
    HOST_PORT,
    LEAF_MAC,
    SPINE_MAC,
    Clock,
    Node,
    WiredFabric,
    configure_leaf,
    configure_spine,
    out_ports,
    udp,
)

from sglb.codes import DropReason, Event, LbMode
from sglb.headers import FB_NONE, SglbTag
from sglb.settings import Feedback

FB = Feedback(enabled=True, tag_frame_max=1534, fresh_us=10_000, stale_us=100_000,
              unknown_level=3, gap_margin_us=100, gap_unknown_us=20_000)
A_UP = [1, 2]           # leaf 0's paths 0, 1: spines 100, 101
SPINE_CAP = 1000.0      # Mbit/s of the spines' downlinks: 2,048 bytes per level
QUIET = 24              # leaves' DRE shift: their own uplinks never read busy here


def _fabric(program, feedback: Feedback = FB, b_offset: int = 5_000_000) -> WiredFabric:
    """Leaves 0 and 1, two paths each through spines 100 and 101 (ports: leaf 0
    on 1, leaf 1 on 2, leaf 2 on 3). Leaf 1's clock is offset: one-way delays
    carry the offset, which cancels in every comparison."""
    nodes = {
        "a": configure_leaf(program, switch_id=0, paths=2, feedback=feedback, dre_shift=QUIET),
        "b": configure_leaf(program, switch_id=1, paths=2, feedback=feedback,
                            clock=Clock(1000 + b_offset), dre_shift=QUIET),
    }
    for spine in (100, 101):
        nodes[f"s{spine}"] = configure_spine(
            program, spine_id=spine, leaves=((0, (1,)), (1, (2,)), (2, (3,))),
            capacities={1: SPINE_CAP, 2: SPINE_CAP, 3: SPINE_CAP})
    nodes["a"].set_profile(1, mask=0b11, rq=(0, 0), w=(1, 1))
    nodes["b"].set_profile(0, mask=0b11, rq=(0, 0), w=(1, 1))
    wires = [("a", 1, "s100", 1), ("a", 2, "s101", 1), ("b", 1, "s100", 2), ("b", 2, "s101", 2)]
    return WiredFabric(nodes, wires)


def _advance(fab: WiredFabric, us: int) -> None:
    for node in fab.nodes.values():
        node.clock.now += us


def _a_to_b(fab: WiredFabric, sport: int, payload: int = 64) -> int:
    """One packet of a new flow from leaf 0's host to leaf 1's: the path it took."""
    before = len(fab.crossed)
    delivered = fab.inject("a", HOST_PORT, udp(dst="10.1.0.1", sport=sport, payload=b"x" * payload))
    assert [(n, p) for n, p, _ in delivered] == [("b", HOST_PORT)]
    first_hop = fab.crossed[before]
    assert first_hop[0] == "a"
    return A_UP.index(first_hop[1])


def _b_to_a(fab: WiredFabric, sport: int) -> None:
    frame = bytes(Ether(src=HOST_MAC, dst=LEAF_MAC) / IP(src="10.1.0.1", dst="10.0.0.1")
                  / UDP(sport=sport, dport=9) / (b"r" * 32))
    delivered = fab.inject("b", HOST_PORT, frame)
    assert [(n, p) for n, p, _ in delivered] == [("a", HOST_PORT)]


def _load_spine_101_toward_b(fab: WiredFabric) -> None:
    """Leaf 2 pushes 16 KB through spine 101 to leaf 1 within one DRE period."""
    big = bytes(Ether() / IP(src="10.2.0.9", dst="10.1.0.9") / UDP() / (b"L" * 1000))
    for _ in range(16):
        assert out_ports(fab.nodes["s101"].send(3, big)) == [2]


def test_feedback_moves_new_flowlets_off_a_congested_spine(program):
    fab = _fabric(program)
    rng = random.Random(1)
    # no feedback yet: both paths at the unknown level, new flowlets use both
    used = {_a_to_b(fab, rng.randrange(1024, 65536)) for _ in range(20)}
    assert used == {0, 1}
    _load_spine_101_toward_b(fab)
    for _ in range(20):             # samples of both paths reach leaf 1 ...
        _a_to_b(fab, rng.randrange(1024, 65536))
    assert any(Ether(d)[SglbTag].ce == 7 for n, p, d in fab.crossed if n == "s101" and p == 2)
    for sport in range(4):          # ... and ride back to leaf 0 on its traffic
        _b_to_a(fab, 7000 + sport)
    assert fab.nodes["b"].event(Event.FEEDBACK_SENT) >= 2
    assert fab.nodes["a"].event(Event.FEEDBACK_RECEIVED) >= 2
    assert {_a_to_b(fab, rng.randrange(1024, 65536)) for _ in range(40)} == {0}
    # every tag was stripped before the hosts saw the frames (checked in _a_to_b)


def test_without_feedback_the_congested_spine_keeps_its_share(program):
    """The same run with the tag off (profiles only): the 1 s-old profile says
    idle, so spine 101 keeps getting new flowlets (what issue 11 measured)."""
    fab = _fabric(program, feedback=Feedback(enabled=False))
    rng = random.Random(1)
    _load_spine_101_toward_b(fab)
    for _ in range(20):
        _a_to_b(fab, rng.randrange(1024, 65536))
    for sport in range(4):
        _b_to_a(fab, 7000 + sport)
    assert fab.nodes["a"].event(Event.FEEDBACK_RECEIVED) == 0
    assert {_a_to_b(fab, rng.randrange(1024, 65536)) for _ in range(40)} == {0, 1}
    assert not any(Ether(d).type == 0x88B6 for _, _, d in fab.crossed)   # nothing tagged


def _feedback(node: Node, port: int, src_leaf: int, fb_path: int, fb_level: int,
              fb_owd: int = 0, sport: int = 9) -> None:
    """A tagged frame from leaf `src_leaf` through the spine on `port`, carrying
    one metric about this leaf's path `fb_path` toward it."""
    frame = (Ether(src=SPINE_MAC, dst=LEAF_MAC)
             / SglbTag(npaths=2, src_leaf=src_leaf, path=0, ce=0, ts=0, fb_path=fb_path,
                       fb_level=fb_level, fb_owd=fb_owd)
             / IP(src=f"10.{src_leaf}.0.7", dst="10.0.0.1") / UDP(sport=sport, dport=1))
    assert out_ports(node.send(port, bytes(frame))) == [HOST_PORT]


def _paths_used(node: Node, n: int = 40, seed: int = 3) -> set[int]:
    rng = random.Random(seed)
    ports = [out_ports(node.send(HOST_PORT, udp(dst="10.1.0.9", sport=rng.randrange(1024, 65536))))
             for _ in range(n)]
    return {A_UP.index(p[0]) for p in ports}


def test_stale_feedback_ages_toward_unknown_never_toward_idle(program):
    """Spine 101 goes silent after reporting level 6 while its (old) profile
    says 0: the path never reads idle. Path 0 reports level 2 all along."""
    leaf = configure_leaf(program, paths=2, feedback=FB, dre_shift=QUIET)
    leaf.set_profile(1, mask=0b11, rq=(0, 0), w=(1, 1))
    _feedback(leaf, A_UP[1], src_leaf=1, fb_path=1, fb_level=6)
    for age in (0, 5_000, 9_000, 30_000, 99_000):      # fresh, then ageing: held at 6
        leaf.clock.now += age - (leaf.clock.now - 1000)
        _feedback(leaf, A_UP[0], src_leaf=1, fb_path=0, fb_level=2)
        assert _paths_used(leaf, seed=age) == {0}, age
    leaf.clock.now = 1000 + 150_000                     # unknown: the profile, but at least 3
    _feedback(leaf, A_UP[0], src_leaf=1, fb_path=0, fb_level=2)
    assert _paths_used(leaf, seed=7) == {0}
    _feedback(leaf, A_UP[0], src_leaf=1, fb_path=0, fb_level=4)   # now path 0 is worse
    assert _paths_used(leaf, seed=8) == {1}
    # the profile can only raise an unknown level: SyncMesh's view of a silent spine
    leaf.set_profile(1, mask=0b11, rq=(0, 7), w=(1, 1))
    assert _paths_used(leaf, seed=9) == {0}


def test_fresh_feedback_overrides_an_older_profile(program):
    leaf = configure_leaf(program, paths=2, feedback=FB, dre_shift=QUIET)
    leaf.set_profile(1, mask=0b11, rq=(5, 0), w=(1, 1))   # the profile blames path 0
    _feedback(leaf, A_UP[0], src_leaf=1, fb_path=0, fb_level=1)
    _feedback(leaf, A_UP[1], src_leaf=1, fb_path=1, fb_level=2)
    assert _paths_used(leaf) == {0}


def test_flowlet_moves_only_after_the_measured_delay_skew(program):
    """Path 0 is 4 ms slower than path 1 (one-way, as fed back): a flowlet on
    path 0 may go to path 1 only once idle for 4 ms + margin; the other way
    round at once (the earlier packets are already ahead)."""
    leaf = configure_leaf(program, paths=2, feedback=FB, dre_shift=QUIET)
    leaf.set_profile(1, mask=0b11, rq=(0, 0), w=(1, 1))
    offset = 123_456_789    # the leaves' clocks differ: only the difference counts

    def report(level0: int, level1: int) -> None:
        _feedback(leaf, A_UP[0], 1, 0, level0, fb_owd=(offset + 5000) & 0xFFFFFFFF)
        _feedback(leaf, A_UP[1], 1, 1, level1, fb_owd=(offset + 1000) & 0xFFFFFFFF)

    report(1, 5)
    flow = udp(dst="10.1.0.9", sport=4242)
    assert out_ports(leaf.send(HOST_PORT, flow)) == [A_UP[0]]
    for idle in (1_000, 3_000, 4_050):                  # path 1 now better, but unsafe
        leaf.clock.now += idle
        report(5, 1)
        assert out_ports(leaf.send(HOST_PORT, flow)) == [A_UP[0]], idle
    assert leaf.event(Event.MOVE_HELD) == 3
    leaf.clock.now += 4_101
    report(5, 1)
    assert out_ports(leaf.send(HOST_PORT, flow)) == [A_UP[1]]
    # back to the slow path: no wait beyond the flowlet gap
    leaf.clock.now += 60
    report(1, 5)
    assert out_ports(leaf.send(HOST_PORT, flow)) == [A_UP[0]]
    assert leaf.event(Event.MOVE_HELD) == 3
    # delays unknown (feedback no longer fresh): gap_unknown applies
    leaf.clock.now += 15_000
    leaf.set_profile(1, mask=0b11, rq=(6, 0), w=(1, 1))
    assert out_ports(leaf.send(HOST_PORT, flow)) == [A_UP[0]]
    leaf.clock.now += FB.gap_unknown_us + 1
    assert out_ports(leaf.send(HOST_PORT, flow)) == [A_UP[1]]


def test_feedback_cycles_through_the_source_paths(program):
    """The destination returns each path's metric in turn (npaths from the
    tag), only while fresh, and strips the tag before the host."""
    fab = _fabric(program)
    rng = random.Random(4)
    while {_a_to_b(fab, rng.randrange(1024, 65536)) for _ in range(6)} != {0, 1}:
        pass
    fb_paths = []
    for sport in range(6):
        before = len(fab.crossed)
        _b_to_a(fab, 8000 + sport)
        tag = Ether(fab.crossed[before][2])[SglbTag]
        assert tag.src_leaf == 1 and tag.npaths == 2
        fb_paths.append(tag.fb_path if tag.fb_level != FB_NONE else None)
    assert fb_paths == [0, 1, 0, 1, 0, 1]
    _advance(fab, FB.fresh_us + 16)                      # nothing fresh left to return
    before = len(fab.crossed)
    _b_to_a(fab, 9000)
    assert Ether(fab.crossed[before][2])[SglbTag].fb_level == FB_NONE


def test_one_way_delay_is_measured_across_clock_offsets(program):
    fab = _fabric(program, b_offset=7_000_000)
    flow_sport = 4000
    fab.inject("a", HOST_PORT, udp(dst="10.1.0.1", sport=flow_sport))
    # the frame took path p; deliver a second flow by hand with 700 us in flight
    sent = fab.nodes["a"].send(HOST_PORT, udp(dst="10.1.0.1", sport=flow_sport + 1))
    port = sent[0].port
    spine = fab.nodes["s100" if port == A_UP[0] else "s101"]
    across = spine.send(1, sent[0].data)
    fab.nodes["b"].clock.now += 700
    fab.nodes["b"].send(A_UP.index(port) + 1, across[0].data)
    rx = fab.nodes["b"].sw.register_read("rx_owd", (0 << 3) + A_UP.index(port))
    assert rx == 7_000_000 + 700


def test_tags_are_checked_at_every_boundary(program):
    leaf = configure_leaf(program, paths=2, feedback=FB, dre_shift=QUIET)
    leaf.set_profile(1, mask=0b11)

    def tagged(**fields) -> bytes:
        return bytes(Ether(src=SPINE_MAC, dst=LEAF_MAC) / SglbTag(**{"src_leaf": 1, "npaths": 2,
                                                                     **fields})
                     / IP(src="10.1.0.7", dst="10.0.0.1") / UDP())

    # forged feedback from a host or an unbound port: dropped, counted, nothing stored
    assert leaf.send(HOST_PORT, tagged(fb_path=1, fb_level=0)) == []
    assert leaf.send(7, tagged(fb_path=1, fb_level=0)) == []
    assert leaf.drops(DropReason.TAG_WRONG_PORT) == 2
    assert leaf.sw.register_read("fb_1", 1) == 0
    bad = [tagged(version=2), tagged(length=16), tagged(npaths=0), tagged(npaths=9),
           tagged(path=2), tagged(ce=8), tagged(src_leaf=1024),
           tagged(fb_path=8, fb_level=1), tagged(fb_level=8),
           bytes(Ether(src=SPINE_MAC, dst=LEAF_MAC) / SglbTag(next_type=0x0806) / (b"\0" * 28))]
    for frame in bad:
        assert leaf.send(A_UP[0], frame) == []
    assert leaf.drops(DropReason.BAD_TAG) == len(bad)
    assert leaf.send(A_UP[0], tagged()[:-30]) == []
    assert leaf.drops(DropReason.MALFORMED) == 1
    # a tag never transits a leaf
    transit = bytes(Ether(src=SPINE_MAC, dst=LEAF_MAC) / SglbTag(src_leaf=1, npaths=2)
                    / IP(src="10.1.0.7", dst="10.2.0.1") / UDP())
    assert leaf.send(A_UP[0], transit) == []
    assert leaf.drops(DropReason.NO_ROUTE) == 1
    # a spine passes on only tags whose source is the leaf bound to the port
    spine = configure_spine(program, spine_id=100, leaves=((0, (1,)), (1, (2,))))
    good = bytes(Ether() / SglbTag(src_leaf=0, npaths=2) / IP(src="10.0.0.1", dst="10.1.0.1")
                 / UDP())
    assert out_ports(spine.send(1, good)) == [2]
    assert spine.send(2, good) == []          # leaf 1's port claiming to be leaf 0
    assert spine.send(9, good) == []          # unbound port
    assert spine.drops(DropReason.TAG_WRONG_PORT) == 2


def test_tag_is_skipped_for_long_frames_and_in_ecmp_mode(program):
    leaf = configure_leaf(program, paths=2, feedback=Feedback(tag_frame_max=1514))
    leaf.set_profile(1, mask=0b11)
    full = udp(dst="10.1.0.9", payload=b"p" * (1514 - 42))         # a 1,514-byte frame
    (out,) = leaf.send(HOST_PORT, full)
    assert len(out.data) == 1514 and Ether(out.data).type == 0x0800
    assert leaf.event(Event.TAG_SKIPPED) == 1
    (out,) = leaf.send(HOST_PORT, udp(dst="10.1.0.9", sport=5, payload=b"p" * 1000))
    assert len(out.data) == 1042 + 20 and Ether(out.data)[SglbTag].src_leaf == 0
    assert Ether(out.data)[IP].ttl == 63
    ecmp = configure_leaf(program, paths=2, mode=LbMode.ECMP, feedback=FB)
    ecmp.set_profile(1, mask=0b11)
    (out,) = ecmp.send(HOST_PORT, udp(dst="10.1.0.9"))
    assert Ether(out.data).type == 0x0800


def test_by_default_unknown_defers_to_the_profile_so_unmeasured_paths_are_explored(program):
    """unknown_level 0 (the default): a path nobody has measured reads its profile
    level, so new flowlets keep finding it while a measured path is as idle
    (a floor above the measured levels would herd every flowlet onto the paths
    already measured); ageing feedback still never reads below its last level."""
    fb = Feedback(fresh_us=10_000, stale_us=100_000)
    assert fb.unknown_level == 0
    leaf = configure_leaf(program, paths=2, feedback=fb, dre_shift=QUIET)
    leaf.set_profile(1, mask=0b11, rq=(0, 0), w=(1, 1))
    _feedback(leaf, A_UP[0], src_leaf=1, fb_path=0, fb_level=0)
    assert _paths_used(leaf) == {0, 1}
    _feedback(leaf, A_UP[0], src_leaf=1, fb_path=0, fb_level=5)
    assert _paths_used(leaf, seed=4) == {1}
    leaf.clock.now += 50_000                        # ageing: held at 5, the profile says 0
    assert _paths_used(leaf, seed=5) == {1}
    leaf.clock.now += 60_000                        # stale: unknown, the profile's level
    assert _paths_used(leaf, seed=6) == {0, 1}
    leaf.set_profile(1, mask=0b11, rq=(4, 0), w=(1, 1))
    assert _paths_used(leaf, seed=7) == {1}


def test_a_spine_reads_a_steadily_loaded_port_alike_early_and_late_in_the_dre_period(
        program_phase):
    """Leaf 2 sends 1,024 bytes every 8 us through the spine to leaf 1 (4 levels of
    2,048 B per 64 us period): the port's DRE swings from 4 to 8 levels' worth of
    bytes through each period. The tags of leaf 0's frames crossing it read level
    6 wherever in the period they come; read bare, 5 early and 7 late
    (docs/sglb-vs-ecmp.md, #15; -DSGLB_DRE_IN_PHASE)."""
    spine = configure_spine(program_phase, spine_id=100, leaves=((0, (1,)), (1, (2,)), (2, (3,))),
                            capacities={1: SPINE_CAP, 2: SPINE_CAP, 3: SPINE_CAP})
    load = bytes(Ether() / IP(src="10.2.0.9", dst="10.1.0.9") / UDP() / (b"L" * 982))
    assert len(load) == 1024
    tagged = bytes(Ether(src=LEAF_MAC, dst=SPINE_MAC)
                   / SglbTag(npaths=2, src_leaf=0, path=0, ce=0, ts=0, fb_level=FB_NONE)
                   / IP(src="10.0.0.7", dst="10.1.0.9") / UDP(sport=5, dport=6))
    period = 64
    start = (spine.clock.now // period + 1) * period
    levels: dict[int, set[int]] = {}
    for i in range(16 * period // 8):
        spine.clock.now = start + 8 * i
        assert out_ports(spine.send(3, load)) == [2]
        if i >= 10 * period // 8 and i % 2 == 1:   # warm, then 1 us after every other frame
            spine.clock.now += 1
            (out,) = spine.send(1, tagged)
            levels.setdefault((spine.clock.now - start) % period, set()).add(
                Ether(out.data)[SglbTag].ce)
    assert levels == {9: {6}, 25: {6}, 41: {6}, 57: {6}}
