"""Invariants of the path choice over random profiles and link states
(hypothesis, through the software target): a new flowlet only ever takes a
live path whose cost is within the tolerance of the best live path, and a
destination without any live path is dropped and counted."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.layers.l2 import Ether
from sglb_harness import (
    FLOWLET_GAP,
    UPLINK_PORTS,
    configure_leaf,
    out_ports,
    udp,
)

from sglb.codes import DropReason
from sglb.config import FB_TIME_SHIFT
from sglb.settings import Feedback

four = st.lists(st.integers(0, 7), min_size=4, max_size=4)
weights = st.lists(st.integers(0, 15), min_size=4, max_size=4)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rq=four, w=weights, mask=st.integers(0, 15), down=st.integers(0, 15),
       tol=st.integers(0, 3), sport=st.integers(1024, 65535))
def test_new_flowlet_takes_a_live_path_within_tolerance(program, rq, w, mask, down, tol, sport):
    node = configure_leaf(program, tolerance=tol)
    node.set_profile(1, mask=mask, rq=rq, w=w)
    for i, port in enumerate(UPLINK_PORTS):
        if down >> i & 1:
            node.port_event(port, up=False, seq=i + 1)
    live = [i for i in range(4) if mask >> i & 1 and not down >> i & 1 and w[i]]
    outs = out_ports(node.send(10, udp(sport=sport)))
    if not live:
        assert outs == []
        assert node.drops(DropReason.NO_LIVE_PATH) == 1
        return
    assert len(outs) == 1
    path = UPLINK_PORTS.index(outs[0])
    assert path in live
    assert rq[path] <= min(rq[i] for i in live) + tol


def test_flowlet_gap_boundary(leaf):
    leaf.set_profile(1)
    first = out_ports(leaf.send(10, udp()))
    worst = [0, 0, 0, 0]
    worst[UPLINK_PORTS.index(first[0])] = 7
    leaf.set_profile(1, rq=worst)
    leaf.clock.now += FLOWLET_GAP          # a gap of exactly the timeout: same flowlet
    assert out_ports(leaf.send(10, udp())) == first
    leaf.clock.now += FLOWLET_GAP + 1      # one microsecond longer: new flowlet
    assert out_ports(leaf.send(10, udp())) != first


ETHERTYPES = [0x0800, 0x0806, 0x88B5, 0x88B6, 0x86DD, 0x1234]


def _totals(node) -> tuple[int, int]:
    drops = sum(node.sw.counter_read("SglbIngress.drops", i)[0]
                + node.sw.counter_read("egress_drops", i)[0] for i in range(16))
    events = sum(node.sw.counter_read("events", i)[0] for i in range(16))
    return drops, events


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(port=st.sampled_from([1, 2, 10, 255]), ethertype=st.sampled_from(ETHERTYPES),
       body=st.binary(max_size=60), prefix=st.binary(min_size=0, max_size=16))
def test_nothing_is_lost_silently(leaf, port, ethertype, body, prefix):
    """Any frame is either sent somewhere, or counted as a drop or an event."""
    leaf.set_profile(1)
    frame = prefix[:4] + bytes(Ether(dst="02:00:00:00:00:f0", type=ethertype)) + body
    before = _totals(leaf)
    outs = leaf.send(port, frame)
    after = _totals(leaf)
    assert outs or after[0] > before[0] or after[1] > before[1], frame.hex()


FB = Feedback(fresh_us=10_000, stale_us=100_000, gap_margin_us=100, gap_unknown_us=20_000)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(levels=four, ages=st.lists(st.integers(0, 20_000), min_size=4, max_size=4),
       owds=st.lists(st.integers(0, 50_000), min_size=4, max_size=4),
       idle=st.integers(FLOWLET_GAP + 1, 60_000), sport=st.integers(1024, 65535))
def test_a_new_flowlet_never_overtakes_its_previous_one(program, levels, ages, owds, idle, sport):
    """Whatever the fed-back levels, ages and one-way delays, a flowlet leaves its
    path p for q only if idle >= owd_p - owd_q + margin (both fresh) or, where a
    delay is not fresh, idle >= gap_unknown (the documented delay-skew rule)."""
    node = configure_leaf(program, feedback=FB, dre_shift=24)
    node.set_profile(1)
    (first,) = out_ports(node.send(10, udp(sport=sport)))
    p = UPLINK_PORTS.index(first)
    node.clock.now += idle
    now_units = node.clock.now >> FB_TIME_SHIFT
    for i in range(4):
        word = 1 << 31 | levels[i] << 28 | (now_units - (ages[i] >> FB_TIME_SHIFT)) % (1 << 28)
        node.sw.register_write(f"fb_{i}", 1, word)
        node.sw.register_write(f"owd_{i}", 1, (owds[i] + 7_000_000) % (1 << 32))
    (out,) = out_ports(node.send(10, udp(sport=sport)))
    q = UPLINK_PORTS.index(out)
    if q == p:
        return
    fresh = [a >> FB_TIME_SHIFT << FB_TIME_SHIFT <= FB.fresh_us for a in ages]
    if fresh[p] and fresh[q]:
        assert idle >= owds[p] - owds[q] + FB.gap_margin_us
    else:
        assert idle >= FB.gap_unknown_us
