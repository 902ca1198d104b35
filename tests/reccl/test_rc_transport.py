"""The transport state machine on a virtual network: no sockets, no sleeps."""

import os
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reccl import wire
from reccl.simnet import SimNet, make_topology
from reccl.transport import Deliver, Transmit, Transport, TransportOptions

# Derandomized: the same seeded examples on every run (CI must not flake on a new draw).
FAST = settings(max_examples=25, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])
SMALL = TransportOptions(chunk_size=16 << 10, channel_window=256 << 10, min_window=64 << 10)


def payloads(seed, sizes):
    rng = random.Random(seed)
    return [rng.randbytes(n) for n in sizes]


def all_delivered(net, expect):
    return all(len(net.inbox.get(k, [])) >= len(v) for k, v in expect.items())


def downs(net, rank=None):
    return [(r, e) for r, e in net.events if e.kind == "channel_down"
            and (rank is None or r == rank)]


def connected(topo, **kw):
    net = SimNet(topo, **kw)
    net.step(0.01)
    assert all(cs.alive for t in net.t for c in t.conns.values() for cs in c.channels)
    return net


# ------------------------------------------------------------------ delivery


@FAST
@given(seed=st.integers(0, 2**16), sizes=st.lists(st.integers(0, 200_000), min_size=1,
                                                   max_size=5),
       cut_at=st.floats(0.0, 0.05), rail=st.integers(0, 1), who=st.integers(0, 1),
       notify=st.booleans(), heal_after=st.one_of(st.none(), st.floats(0.0, 3.0)))
def test_every_message_arrives_once_in_order_across_a_cut_and_heal(
        seed, sizes, cut_at, rail, who, notify, heal_after):
    net = connected(make_topology([1, 1], 2), seed=seed, rate=20e6, opts=SMALL)
    a, b = payloads(seed, sizes), payloads(seed + 1, sizes[::-1])
    for i, m in enumerate(a):
        net.send(0, 1, i, m)
    for i, m in enumerate(b):
        net.send(1, 0, i, m)
    net.step(net.now + cut_at)
    net.cut(who, rail, notify=notify)
    if heal_after is not None:
        net.step(net.now + heal_after)
        net.heal(who, rail, notify=notify)
    expect = {(1, 0): a, (0, 1): b}
    assert net.run_until(lambda: all_delivered(net, expect), limit=60)
    net.step(net.now + 2.0)  # late copies on a reconnected or surviving link: no redelivery
    assert net.inbox[(1, 0)] == a
    assert net.inbox[(0, 1)] == b
    assert not net.failed


@FAST
@given(seed=st.integers(0, 1000), n=st.integers(0, 20_000))
def test_chunks_reassemble_once_whatever_order_and_duplicates(seed, n):
    topo = make_topology([1, 1], 2)
    opts = TransportOptions(chunk_size=700)
    tx, rx = Transport(0, topo, opts, 0.0), Transport(1, topo, opts, 0.0)
    for t, other in ((tx, 1), (rx, 0)):
        for rail in (0, 1):
            t.link_up((other, rail), 0.0)
    data = random.Random(seed).randbytes(n)
    frames = [(a.link, b"".join(bytes(p) for p in a.parts)) for a in tx.send(1, 99, data, 0.0)
              if isinstance(a, Transmit)]
    assert len(frames) == max(1, -(-n // 700))
    random.Random(seed).shuffle(frames)
    got = []
    for link, f in frames + frames[: len(frames) // 2]:  # and some duplicates
        got += [a for a in rx.on_frame((0, link[1]), f, 0.0) if isinstance(a, Deliver)]
    assert len(got) == 1 and bytes(got[0].data) == data and got[0].tag == 99
    assert rx.counters["duplicates"] == len(frames) // 2


def test_sequence_numbers_wrap_around_2_to_the_32():
    net = connected(make_topology([1, 1], 2), seed=10, rate=50e6,
                    opts=TransportOptions(chunk_size=1000))
    start = 0xFFFFFFFF - 20
    net.t[0].conns[1].next_seq = net.t[0].conns[1].peer_cum = start
    net.t[1].conns[0].rcv_next = start
    msgs = payloads(10, [30_000, 5, 0, 12_345])
    for i, m in enumerate(msgs):
        net.send(0, 1, i, m)
    net.step(net.now + 0.001)
    net.cut(0, 1)  # a failover across the wrap
    assert net.run_until(lambda: len(net.inbox.get((1, 0), [])) == len(msgs), limit=30)
    assert net.inbox[(1, 0)] == msgs
    assert net.t[0].conns[1].next_seq < start  # it did wrap
    assert net.t[1].conns[0].rcv_next == net.t[0].conns[1].next_seq


@FAST
@given(received=st.sets(st.integers(1, 200), max_size=150))
def test_sack_blocks_cover_exactly_what_arrived_ahead_of_the_frontier(received):
    conn = Transport(1, make_topology([1, 1], 1)).conns[0]
    base = 0xFFFFFF00  # near the wrap, to exercise the modular arithmetic
    conn.rcv_next = base
    conn.ooo = {(base + s) & 0xFFFFFFFF: None for s in received}
    ack = conn.ack_body()
    covered = set()
    for s, e in ack.sacks:
        n = (e - s) & 0xFFFFFFFF
        assert 0 < n <= 200
        block = {(s + i) & 0xFFFFFFFF for i in range(n)}
        assert not block & covered
        covered |= block
    assert covered == set(conn.ooo) and ack.cum == base


# ------------------------------------------------------------------ liveness


@FAST
@given(gaps=st.lists(st.floats(0.0, 30.0), min_size=3, max_size=10),
       seed=st.integers(0, 1000))
def test_compute_gaps_of_0_to_30_s_cause_no_failover(gaps, seed):
    """A training loop: a 1 MiB exchange, then 'compute' for a while, on a virtual clock."""
    net = connected(make_topology([1, 1], 2), seed=seed, rate=100e6)
    for step, gap in enumerate(gaps):
        a, b = os.urandom(1 << 20), os.urandom(1 << 20)
        net.send(0, 1, step, a)
        net.send(1, 0, step, b)
        assert net.run_until(lambda s=step: len(net.inbox.get((1, 0), [])) > s and
                             len(net.inbox.get((0, 1), [])) > s, limit=5)
        net.step(net.now + gap)
    assert downs(net) == [] and not net.failed
    assert all(cs.alive for t in net.t for c in t.conns.values() for cs in c.channels)


@FAST
@given(stall=st.floats(0.5, 30.0), who=st.integers(0, 1), while_sending=st.booleans())
def test_a_stalled_rank_is_slow_not_failed(stall, who, while_sending):
    """A rank that processes nothing for `stall` seconds (e.g. holds the GIL): no channel
    dies, no error, the message arrives once it resumes."""
    net = connected(make_topology([1, 1], 2), seed=1, rate=100e6)
    data = os.urandom(3 << 20)
    net.t[1 - who].watch(who, True, net.now)
    if while_sending:
        net.send(who, 1 - who, 1, data)
        net.step(net.now + 0.005)
    net.stall(who, stall)
    if not while_sending:
        net.step(net.now + 0.001)
        net.send(who, 1 - who, 1, data)
    assert net.run_until(lambda: net.inbox.get((1 - who, who)), limit=stall + 5)
    assert net.inbox[(1 - who, who)] == [data]
    assert downs(net) == [] and not net.failed


def test_silent_path_dies_when_the_peer_is_heard_elsewhere_and_rejoins_when_healed():
    opts = TransportOptions()
    net = connected(make_topology([1, 1], 2), seed=2, rate=100e6, opts=opts)
    net.cut(1, 1, notify=False)  # gray failure: carrier up, nothing gets through
    cut_at = net.now
    net.step(net.now + opts.silence_timeout + 0.5)
    for r in (0, 1):
        cs = net.t[r].conns[1 - r].channels[1]
        assert not cs.alive and "silent for" in cs.reason and "heard on channel 0" in cs.reason
    first = min(e.time for _, e in downs(net))
    assert opts.silence_timeout <= first - cut_at <= opts.silence_timeout + 3 * opts.keepalive
    assert net.t[0].conns[1].channels[0].alive
    data = os.urandom(2 << 20)
    net.send(0, 1, 5, data)
    assert net.run_until(lambda: net.inbox.get((1, 0)), limit=5)
    net.heal(1, 1, notify=False)
    assert net.run_until(lambda: all(net.t[r].conns[1 - r].channels[1].alive for r in (0, 1)),
                         limit=5)
    assert [r for r, e in net.events if e.kind == "channel_up"] != []


def test_peer_silent_on_every_channel_is_never_declared_dead():
    """A remote host that drops off without a carrier change looks exactly like a slow
    peer: the transport waits (the caller's timeout decides) and says what it last heard."""
    net = connected(make_topology([1, 1], 2), seed=3, rate=100e6)
    net.t[1].watch(0, True, net.now)
    net.cut(0, 0, notify=False)
    net.cut(0, 1, notify=False)
    net.step(net.now + 60)
    assert downs(net) == [] and not net.failed
    text = net.t[1].describe_peer(0, net.now)
    assert "nic0" in text and "nic1" in text and "last heard 60.0 s ago" in text
    net.heal(0, 0, notify=False)
    net.heal(0, 1, notify=False)
    net.send(0, 1, 1, b"late but fine")
    assert net.run_until(lambda: net.inbox.get((1, 0)), limit=5)


def test_every_channel_dead_fails_the_waiting_peer_and_a_returning_path_recovers_it():
    opts = TransportOptions(no_path_timeout=2.0)
    net = connected(make_topology([1, 1], 2), seed=4, rate=100e6, opts=opts)
    net.send(0, 1, 1, os.urandom(100_000))
    net.cut(0, 0)
    net.cut(0, 1)
    start = net.now
    assert net.run_until(lambda: (0, 1) in net.failed, limit=30)
    assert net.now - start <= opts.no_path_timeout + 0.2
    err = net.failed[(0, 1)]
    assert "rank 0: no path left to rank 1" in err and "nic0" in err and "nic1" in err
    net.heal(0, 1)
    assert net.run_until(lambda: net.inbox.get((1, 0)) and (0, 1) not in net.failed, limit=10)
    assert any(e.kind == "peer_recovered" for _, e in net.events)


def test_fail_stop_mode_aborts_on_first_failure():
    net = connected(make_topology([1, 1], 2), seed=5, rate=100e6,
                    opts=TransportOptions(failover=False))
    net.send(0, 1, 1, os.urandom(1_000_000))
    net.step(net.now + 0.002)
    net.cut(0, 1)
    assert "fail-stop" in net.failed[(0, 1)] and "nic1" in net.failed[(0, 1)]
    net.heal(0, 1)
    net.step(net.now + 3)
    assert (0, 1) in net.failed  # fail-stop never recovers


def test_flapping_link_rejoins_with_growing_hold_down():
    opts = TransportOptions()
    net = connected(make_topology([1, 1], 2), seed=6, opts=opts)
    delays = []
    for _ in range(4):
        net.cut(0, 0)
        down_at = net.now
        net.step(net.now + 0.01)
        net.heal(0, 0)
        assert net.run_until(lambda: net.t[0].conns[1].channels[0].alive, limit=10)
        delays.append(net.now - down_at)
        net.step(net.now + 0.01)
    assert delays == sorted(delays) and delays[-1] >= 4 * opts.holddown
    assert net.t[0].conns[1].channels[0].flaps == 4
    assert len([e for r, e in net.events if r == 0 and e.kind == "channel_up"]) == 4


# ------------------------------------------------------------------- notices


def test_two_failures_in_one_tick_both_reach_the_peer():
    net = connected(make_topology([1, 1], 3), seed=7, rate=50e6)
    net.send(0, 1, 1, os.urandom(4 << 20))
    net.step(net.now + 0.01)
    acts = net.t[0].set_nic(0, False, net.now) + net.t[0].set_nic(1, False, net.now)
    net.down |= {(0, 0), (0, 1)}
    net._run(0, acts)
    conn = net.t[0].conns[1]
    assert set(conn.notice_dead) == {0, 1}  # accumulated, not replaced
    assert net.run_until(lambda: net.inbox.get((1, 0)), limit=5)
    peer = net.t[1].conns[0]
    assert not peer.channels[0].alive and not peer.channels[1].alive and peer.channels[2].alive
    assert not conn.notice_pending()  # acknowledged


def test_double_one_way_failure_is_detected_by_each_side_and_told_to_the_other():
    """Rail 0 loses 0->1, rail 1 loses 1->0; rail 2 works. Each side sees one rail go
    silent; the notices over rail 2 make both sides drop both rails."""
    net = connected(make_topology([1, 1], 3), seed=8, rate=50e6)
    net.oneway |= {(0, 1, 0), (1, 0, 1)}
    a, b = os.urandom(3 << 20), os.urandom(3 << 20)
    net.send(0, 1, 1, a)
    net.send(1, 0, 1, b)
    assert net.run_until(lambda: net.inbox.get((1, 0)) and net.inbox.get((0, 1)), limit=10)
    assert net.inbox[(1, 0)] == [a] and net.inbox[(0, 1)] == [b]
    net.step(net.now + 0.5)
    for r in (0, 1):
        chans = net.t[r].conns[1 - r].channels
        assert [c.alive for c in chans] == [False, False, True], r
    assert not net.failed


def test_failure_during_failover_is_announced_too():
    net = connected(make_topology([1, 1], 3), seed=9, rate=50e6)
    net.send(0, 1, 1, os.urandom(4 << 20))
    net.step(net.now + 0.01)
    net.oneway.add((1, 0, 2))  # notice acks on rail 2 will not come back
    net.cut(0, 0)
    net.step(net.now + 0.0002)  # the first notice is still unacknowledged
    net.cut(0, 1)
    assert net.run_until(lambda: net.inbox.get((1, 0)), limit=10)
    peer = net.t[1].conns[0]
    assert not peer.channels[0].alive and not peer.channels[1].alive


def test_stale_notice_does_not_kill_a_rejoined_channel():
    net = connected(make_topology([1, 1], 2), seed=10)
    net.cut(0, 0)
    net.step(net.now + 0.01)
    old = wire.encode(wire.Header(wire.NOTICE, 0, 1, 1, epoch=net.t[1].conns[0].peer_epoch),
                      wire.Notice([(0, 0, False)], [0]))
    net.heal(0, 0)
    assert net.run_until(lambda: net.t[1].conns[0].channels[0].alive, limit=5)
    net.t[1].on_frame((0, 1), old, net.now)
    assert net.t[1].conns[0].channels[0].alive


# -------------------------------------------------------------------- relays


def test_relay_through_same_host_peer_when_rank_loses_all_nics():
    net = connected(make_topology([2, 1], 2), seed=11, rate=100e6)
    net.cut(0, 0)
    net.cut(0, 1)
    a, b = os.urandom(500_000), os.urandom(300_000)
    net.send(0, 2, 1, a)
    net.send(2, 0, 1, b)
    assert net.run_until(lambda: net.inbox.get((2, 0)) and net.inbox.get((0, 2)), limit=10)
    assert net.inbox[(2, 0)] == [a] and net.inbox[(0, 2)] == [b]
    assert net.t[1].counters["relayed"] > 0
    used = {c["channel"] for c in net.t[0].channel_stats() if c["peer"] == 2
            and c["bytes_acked"]}
    assert {net.t[0].conns[2].channels[c].ch.kind for c in used} == {"relay"}


def test_a_relay_losing_its_nic_tells_the_ranks_that_relay_through_it():
    net = connected(make_topology([2, 1], 1), seed=12)
    net.cut(0, 0)
    net.step(net.now + 0.01)
    assert (0, 0) in net.t[2].nic_down  # rank 0's notice reached rank 2 through the relay
    relay = [cs for cs in net.t[0].conns[2].channels if cs.ch.kind == "relay" and cs.ch.via == 1]
    assert relay and relay[0].alive
    net.cut(1, 0)
    net.step(net.now + 0.01)
    assert not relay[0].alive and "link down on rank 1 nic0" in relay[0].reason


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16),
       events=st.lists(st.tuples(st.floats(0.0, 0.3), st.sampled_from(
           [(0, 0), (0, 1), (1, 1), (2, 1), (3, 1)]), st.booleans(), st.booleans()),
           max_size=8))
def test_random_cuts_and_heals_lose_nothing_between_any_pair(seed, events):
    """Two hosts x two ranks x two NICs; NICs go down and up (seen or silent) at random
    times; rail 0 of ranks 1-3 stays up, so a path always exists, via a relay if need be."""
    net = connected(make_topology([2, 2], 2), seed=seed, rate=50e6, opts=SMALL)
    rng = random.Random(seed)
    expect = {}
    for src in range(4):
        for dst in range(4):
            if src != dst:
                msgs = [rng.randbytes(rng.randrange(0, 200_000)) for _ in range(2)]
                for i, m in enumerate(msgs):
                    net.send(src, dst, i, m)
                expect[(dst, src)] = msgs
    for at, (rank, rail), up, notify in sorted(events):
        net.step(net.now + at)
        (net.heal if up else net.cut)(rank, rail, notify=notify)
    assert net.run_until(lambda: all_delivered(net, expect), limit=60), net.failed
    for key, msgs in expect.items():
        assert net.inbox[key] == msgs, key


# ------------------------------------------------------ weights, windows, input


def test_weights_follow_goodput_of_a_slower_rail():
    net = connected(make_topology([1, 1], 2), seed=13, rate=100e6, rail_rate={1: 20e6},
                    opts=TransportOptions(chunk_size=64 << 10, channel_window=2 << 20,
                                          min_window=256 << 10))
    data = os.urandom(24_000_000)
    net.send(0, 1, 1, data)
    assert net.run_until(lambda: net.inbox.get((1, 0)))
    st0 = {c["channel"]: c for c in net.t[0].channel_stats()}
    assert st0[1]["weight"] < 0.5 <= st0[0]["weight"]
    assert st0[0]["bytes_acked"] > 2.5 * st0[1]["bytes_acked"]


def test_an_application_limited_pause_does_not_erase_what_goodput_learnt():
    # after a bulk transfer, small messages leave the channels mostly idle: such intervals
    # say how much the application offered, not what the rail carries (BBR's app-limited
    # samples), so the slower rail keeps its lower weight
    net = connected(make_topology([1, 1], 2), seed=13, rate=100e6, rail_rate={1: 20e6},
                    opts=TransportOptions(chunk_size=64 << 10, channel_window=2 << 20,
                                          min_window=256 << 10))
    net.send(0, 1, 1, os.urandom(24_000_000))
    assert net.run_until(lambda: net.inbox.get((1, 0)))
    learnt = {c["channel"]: c["weight"] for c in net.t[0].channel_stats()}
    assert learnt[1] < 0.5
    for i in range(20):
        net.send(0, 1, 2 + i, os.urandom(50_000))
        net.step(net.now + 0.1)
    assert len(net.inbox[(1, 0)]) == 21
    after = {c["channel"]: c for c in net.t[0].channel_stats()}
    assert after[1]["weight"] < 0.5 <= after[0]["weight"], after


def test_receiver_window_bounds_what_is_in_flight():
    opts = TransportOptions(recv_window=8, chunk_size=500)
    seen = []

    def record(src, dst, rail, data):
        h, body = wire.decode(data)
        if h.type == wire.DATA:
            seen.append((body.seq - net.t[dst].conns[src].rcv_next) & 0xFFFFFFFF)
        return False

    net = connected(make_topology([1, 1], 2), seed=14, opts=opts, drop_fn=record,
                    rail_rate={1: 1e6}, rate=50e6)
    data = os.urandom(50_000)
    net.send(0, 1, 1, data)
    assert net.run_until(lambda: net.inbox.get((1, 0)), limit=60)
    assert net.inbox[(1, 0)] == [data]
    ahead = [d for d in seen if d < 0x80000000]
    assert ahead and max(ahead) < 8


def test_frames_that_do_not_fit_their_link_are_counted_and_change_nothing():
    net = connected(make_topology([2, 1], 1), seed=15)
    t = net.t[2]
    before = (t.conns[0].rcv_next, dict(t.conns[0].ooo))

    def data(src, dst, ch):
        return wire.encode(wire.Header(wire.DATA, src, dst, ch), wire.Data(0, 1, 3, 0, b"abc"))

    # rank 1 (authenticated as rank 1 on its link) claims to be rank 0 on the direct path
    assert t.on_frame((1, 0), data(0, 2, 0), net.now) == []
    assert t.on_frame((0, 0), data(0, 2, 9), net.now) == []  # no such channel
    assert t.on_frame((0, 0), data(5, 2, 0), net.now) == []  # no such rank
    assert t.counters["misrouted"] == 3
    assert (t.conns[0].rcv_next, dict(t.conns[0].ooo)) == before
    acts = t.on_frame((0, 0), b"RC\x02junk", net.now)  # malformed: the link is dropped
    assert t.counters["malformed"] == 1 and any(type(a).__name__ == "Close" for a in acts)
    acts = t.on_frame((1, 0), data(1, 2, 0), net.now)
    assert [bytes(a.data) for a in acts if isinstance(a, Deliver)] == [b"abc"]
