"""The transport state machine on a virtual network: no sockets, no sleeps."""

import os
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reccl import wire
from reccl.simnet import SimNet, make_topology
from reccl.transport import TransportOptions

# Derandomized: the same seeded examples on every run (CI must not flake on a new draw).
FAST = settings(max_examples=25, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])


def payloads(seed, sizes):
    rng = random.Random(seed)
    return [rng.randbytes(n) for n in sizes]


def all_delivered(net, expect):
    return all(len(net.inbox.get(k, [])) >= len(v) for k, v in expect.items())


@FAST
@given(seed=st.integers(0, 2**16), loss=st.floats(0, 0.3), dup=st.floats(0, 0.3),
       jitter=st.floats(0, 0.003), sizes=st.lists(st.integers(0, 60_000), min_size=1,
                                                   max_size=5))
def test_every_message_arrives_once_in_order_despite_loss_duplication_reordering(
        seed, loss, dup, jitter, sizes):
    net = SimNet(make_topology([1, 1], 2), seed=seed, loss=loss, dup=dup, jitter=jitter,
                 opts=TransportOptions(chunk_size=1000))
    a, b = payloads(seed, sizes), payloads(seed + 1, sizes[::-1])
    for i, m in enumerate(a):
        net.send(0, 1, i, m)
    for i, m in enumerate(b):
        net.send(1, 0, i, m)
    expect = {(1, 0): a, (0, 1): b}
    assert net.run_until(lambda: all_delivered(net, expect), limit=60)
    net.step(net.now + 1.0)  # late duplicates and retransmissions must not deliver again
    assert net.inbox[(1, 0)] == a
    assert net.inbox[(0, 1)] == b
    assert not net.failed
    if dup > 0.1 and sum(sizes) > 20_000:
        assert net.t[1].counters["duplicates"] + net.t[0].counters["duplicates"] > 0


@FAST
@given(seed=st.integers(0, 2**16), cut_at=st.floats(0.0, 0.02), rail=st.integers(0, 1),
       who=st.integers(0, 1), notify=st.booleans())
def test_link_cut_mid_transfer_loses_nothing(seed, cut_at, rail, who, notify):
    net = SimNet(make_topology([1, 1], 2), seed=seed, rate=100e6)
    data = payloads(seed, [3_000_000])[0]
    net.send(0, 1, 1, data)
    net.step(cut_at)
    net.cut(who, rail, notify=notify)
    assert net.run_until(lambda: net.inbox.get((1, 0)), limit=10)
    assert net.inbox[(1, 0)] == [data]
    assert not net.failed
    if notify and cut_at < 0.01:  # the transfer was still running: both ends switched
        downs = {(r, e.channel) for r, e in net.events if e.kind == "channel_down"}
        assert {(0, rail), (1, rail)} <= downs


def test_failover_moves_unacked_chunks_and_peer_follows_notice():
    net = SimNet(make_topology([1, 1], 2), seed=1, rate=100e6)
    data = os.urandom(2_000_000)
    net.send(0, 1, 1, data)
    net.step(0.003)
    net.cut(0, 0)
    ev = [e for r, e in net.events if r == 0 and e.kind == "channel_down"]
    assert ev and "chunks moved" in ev[0].detail and not ev[0].detail.endswith("; 0 chunks moved")
    assert not net.t[0].conns[1].channels[0].inflight
    assert net.run_until(lambda: net.inbox.get((1, 0)))
    assert net.inbox[(1, 0)] == [data]
    # The receiver marked the channel dead because of the notice, within one delivery.
    c1 = net.t[1].conns[0]
    assert not c1.channels[0].alive and c1.peer_epoch == net.t[0].conns[1].epoch == 1
    assert net.t[0].conns[1].notice is None  # acknowledged with the receiver's frontier


def test_relay_through_same_host_peer_when_rank_loses_all_nics():
    topo = make_topology([2, 1], 2)  # ranks 0, 1 on host0; rank 2 on host1
    net = SimNet(topo, seed=2, rate=100e6)
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
    kinds = {net.t[0].conns[2].channels[c].ch.kind for c in used}
    assert kinds == {"relay"}


def test_no_path_fails_cleanly_within_bounded_time():
    opts = TransportOptions()
    net = SimNet(make_topology([1, 1], 2), seed=3, opts=opts)
    net.send(0, 1, 1, os.urandom(100_000))
    net.cut(0, 0)
    net.cut(0, 1)
    start = net.now
    assert net.run_until(lambda: (0, 1) in net.failed, limit=30)
    assert net.now - start <= opts.no_path_timeout + 0.1
    err = net.failed[(0, 1)]
    assert "rank 0: no path left to rank 1" in err and "nic0" in err and "nic1" in err


def test_silent_remote_failure_fails_a_waiting_receiver():
    opts = TransportOptions()
    net = SimNet(make_topology([1, 1], 2), seed=4, opts=opts)
    net.t[1].watch(0, True, net.now)  # rank 1 waits for a message that cannot come
    net.cut(0, 0, notify=False)
    net.cut(0, 1, notify=False)
    assert net.run_until(lambda: (1, 0) in net.failed, limit=30)
    assert net.now <= opts.silence_timeout + opts.no_path_timeout + 0.2
    assert "timeout" in net.failed[(1, 0)]


def test_fail_stop_mode_aborts_on_first_failure():
    net = SimNet(make_topology([1, 1], 2), seed=5, rate=100e6,
                 opts=TransportOptions(failover=False))
    net.t[1].watch(0, True, 0.0)  # rank 1 waits for the message
    net.send(0, 1, 1, os.urandom(1_000_000))
    net.step(0.002)
    net.cut(0, 1)
    assert "fail-stop" in net.failed[(0, 1)] and "nic1" in net.failed[(0, 1)]
    assert net.run_until(lambda: (1, 0) in net.failed, limit=5)  # peer hears nothing more


def test_flapping_link_rejoins_with_growing_hold_down():
    opts = TransportOptions()
    net = SimNet(make_topology([1, 1], 2), seed=6, opts=opts)
    net.t[1].watch(0, True, 0.0)  # keep the connection busy so channels are probed
    rejoin_delays = []
    for _ in range(4):
        net.cut(0, 0)
        down_at = net.now
        net.step(net.now + 0.01)
        net.heal(0, 0)
        assert net.run_until(lambda: net.t[0].conns[1].channels[0].alive, limit=10)
        rejoin_delays.append(net.now - down_at)
        net.step(net.now + 0.01)
    assert rejoin_delays == sorted(rejoin_delays)
    assert rejoin_delays[-1] >= 4 * opts.holddown  # doubled per flap: 0.1, 0.2, 0.4, 0.8
    assert net.t[0].conns[1].channels[0].flaps == 4
    ups = [e for r, e in net.events if r == 0 and e.kind == "channel_up"]
    assert len(ups) == 4


def test_weights_follow_goodput_of_a_slower_rail():
    net = SimNet(make_topology([1, 1], 2), seed=7, rate=100e6, rail_rate={1: 20e6})
    data = os.urandom(6_000_000)
    net.send(0, 1, 1, data)
    assert net.run_until(lambda: net.inbox.get((1, 0)))
    st0 = {c["channel"]: c for c in net.t[0].channel_stats()}
    assert st0[1]["weight"] < 0.5 <= st0[0]["weight"]
    assert st0[0]["bytes_acked"] > 2.5 * st0[1]["bytes_acked"]


def test_receiver_window_bounds_what_is_in_flight():
    opts = TransportOptions(recv_window=8, chunk_size=500)
    seen = []

    def record(src, dst, hop, data):
        h, body = wire.decode(data)
        if h.type == wire.DATA:
            seen.append((body.seq - net.t[dst].conns[src].rcv_next) & 0xFFFFFFFF)
        return False

    net = SimNet(make_topology([1, 1], 2), seed=8, opts=opts, drop_fn=record, loss=0.1)
    data = os.urandom(50_000)
    net.send(0, 1, 1, data)
    assert net.run_until(lambda: net.inbox.get((1, 0)), limit=60)
    assert net.inbox[(1, 0)] == [data]
    ahead = [d for d in seen if d < 0x80000000]
    assert ahead and max(ahead) < 8


def test_foreign_and_malformed_datagrams_are_counted_and_change_nothing():
    net = SimNet(make_topology([1, 1], 2), seed=9)
    t = net.t[1]
    before = (t.conns[0].rcv_next, dict(t.conns[0].ooo))
    good = wire.encode(wire.Header(wire.DATA, 7, 0, 1, 0), wire.Data(0, 1, 3, 0, b"abc"))
    other_session = wire.encode(wire.Header(wire.DATA, 8, 0, 1, 0), wire.Data(0, 1, 3, 0, b"x"))
    bad_channel = wire.encode(wire.Header(wire.DATA, 7, 0, 1, 99), wire.Data(0, 1, 3, 0, b"x"))
    bad_rank = wire.encode(wire.Header(wire.DATA, 7, 5, 1, 0), wire.Data(0, 1, 3, 0, b"x"))
    for raw in (b"hello", b"", good[:-1] + b"\0", other_session):
        assert t.on_datagram(raw, 0.0) == []
    assert t.on_datagram(bad_channel, 0.0) == [] and t.on_datagram(bad_rank, 0.0) == []
    assert t.counters["foreign"] == 3 and t.counters["malformed"] == 3
    assert (t.conns[0].rcv_next, dict(t.conns[0].ooo)) == before
    acts = t.on_datagram(good, 0.0)
    assert [a.data for a in acts if hasattr(a, "tag")] == [b"abc"]


def test_sequence_numbers_wrap_around_2_to_the_32():
    net = SimNet(make_topology([1, 1], 2), seed=10, loss=0.05, jitter=0.001,
                 opts=TransportOptions(chunk_size=1000))
    start = 0xFFFFFFFF - 20
    net.t[0].conns[1].next_seq = net.t[0].conns[1].peer_cum = start
    net.t[1].conns[0].rcv_next = start
    msgs = payloads(10, [30_000, 5, 0, 12_345])
    for i, m in enumerate(msgs):
        net.send(0, 1, i, m)
    assert net.run_until(lambda: len(net.inbox.get((1, 0), [])) == len(msgs), limit=30)
    assert net.inbox[(1, 0)] == msgs
    assert net.t[0].conns[1].next_seq < start  # it did wrap
    assert net.t[1].conns[0].rcv_next == net.t[0].conns[1].next_seq


@FAST
@given(received=st.sets(st.integers(1, 400), max_size=200), trigger=st.integers(1, 400))
def test_sack_blocks_cover_exactly_what_was_received_out_of_order(received, trigger):
    net = SimNet(make_topology([1, 1], 1), seed=0)
    t = net.t[1]
    conn = t.conns[0]
    base = 0xFFFFFF00  # near the wrap, to exercise the modular arithmetic
    conn.rcv_next = base
    conn.ooo = {(base + s) & 0xFFFFFFFF: None for s in received}
    ack = t._frontier(conn, (base + trigger) & 0xFFFFFFFF)
    covered = set()
    for s, e in ack.sacks:
        n = (e - s) & 0xFFFFFFFF
        assert 0 < n <= 400
        block = {(s + i) & 0xFFFFFFFF for i in range(n)}
        assert not block & covered  # disjoint
        covered |= block
    assert covered <= set(conn.ooo)
    if len(ack.sacks) < wire.MAX_SACK:
        assert covered == set(conn.ooo)
    if trigger in received:
        s, e = ack.sacks[0]
        assert ((base + trigger - s) & 0xFFFFFFFF) < ((e - s) & 0xFFFFFFFF)
    assert ack.cum == base


@FAST
@given(seed=st.integers(0, 1000), n=st.integers(0, 20_000))
def test_chunks_reassemble_into_one_message_whatever_their_arrival_order(seed, n):
    topo = make_topology([1, 1], 1)
    from reccl.transport import Deliver, Transmit, Transport
    tx = Transport(0, topo, 7, TransportOptions(chunk_size=700), 0.0)
    rx = Transport(1, topo, 7, TransportOptions(chunk_size=700), 0.0)
    data = random.Random(seed).randbytes(n)
    datagrams = [a.data for a in tx.send(1, 99, data, 0.0) if isinstance(a, Transmit)]
    assert len(datagrams) == max(1, -(-n // 700))
    random.Random(seed).shuffle(datagrams)
    got = []
    for d in datagrams + datagrams[: len(datagrams) // 2]:  # and some duplicates
        got += [a for a in rx.on_datagram(d, 0.0) if isinstance(a, Deliver)]
    assert len(got) == 1 and bytes(got[0].data) == data and got[0].tag == 99


def test_a_relay_losing_its_nic_tells_the_ranks_that_relay_through_it():
    topo = make_topology([2, 1], 1)  # ranks 0, 1 on host0 with one NIC each; rank 2 remote
    net = SimNet(topo, seed=11)
    net.cut(0, 0)  # rank 0 relays through rank 1 from now on
    net.step(net.now + 0.01)
    assert (0, 0) in net.t[2].nic_down  # rank 0's notice reached rank 2 through the relay
    relay = [cs for cs in net.t[0].conns[2].channels if cs.ch.kind == "relay" and cs.ch.via == 1]
    assert relay and relay[0].alive
    net.cut(1, 0)  # the relay's own NIC dies: rank 0 must learn it from rank 1's notice
    net.step(net.now + 0.01)
    assert not relay[0].alive and "link down on rank 1 nic0" in relay[0].reason
    assert (1, 0) in net.t[0].nic_down


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16),
       events=st.lists(st.tuples(st.floats(0.0, 0.3), st.sampled_from(
           [(0, 0), (0, 1), (1, 1), (2, 1), (3, 1)]), st.booleans()), max_size=8),
       loss=st.sampled_from([0.0, 0.02]))
def test_random_cuts_and_heals_lose_nothing_between_any_pair(seed, events, loss):
    """Two hosts x two ranks x two NICs; NICs go down and up at random times (rail 0 of
    ranks 1-3 stays up, so a path always exists, through a relay if need be)."""
    net = SimNet(make_topology([2, 2], 2), seed=seed, rate=50e6, loss=loss)
    rng = random.Random(seed)
    expect = {}
    for src in range(4):
        for dst in range(4):
            if src != dst:
                msgs = [rng.randbytes(rng.randrange(0, 200_000)) for _ in range(2)]
                for i, m in enumerate(msgs):
                    net.send(src, dst, i, m)
                expect[(dst, src)] = msgs
    for at, (rank, rail), up in sorted(events):
        net.step(at)
        (net.heal if up else net.cut)(rank, rail)
    assert net.run_until(lambda: all_delivered(net, expect), limit=30), net.failed
    for key, msgs in expect.items():
        assert net.inbox[key] == msgs, key
    assert not net.failed
