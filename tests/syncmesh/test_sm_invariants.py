"""Hypothesis: epochs and versions make delivery order and repetition irrelevant."""

from hypothesis import given, settings
from hypothesis import strategies as st
from sm_harness import CoreNet
from syncmesh.config import CoreConfig
from syncmesh.core import Rejected, SyncMeshCore
from syncmesh.linkstate import LinkStateTable, PortState, Version
from syncmesh.messages import Hello
from syncmesh.profiles import Profile, ProfileStore

from fabricmodel import leaf_spine

FAB = leaf_spine(2, 2, 1, 1, links_per_pair=2)
ENDS = [(lk.leaf.switch, lk.leaf.port) for lk in FAB.links] + \
    [(lk.spine.switch, lk.spine.port) for lk in FAB.links]

notices = st.lists(
    st.builds(lambda end, up, inc, seq: PortState(end[0], end[1], up, Version(inc, seq)),
              st.sampled_from(ENDS), st.booleans(), st.integers(1, 3), st.integers(1, 5)),
    max_size=30,
).map(lambda xs: list({(n.switch, n.port, n.epoch): n for n in xs}.values()))  # one writer


@given(notices, st.randoms(use_true_random=False), st.integers(1, 3))
@settings(max_examples=150, deadline=None)
def test_any_order_and_repetition_gives_the_newest(ns, rnd, repeat):
    expected = LinkStateTable(FAB)
    for n in sorted(ns, key=lambda n: n.epoch):
        expected.merge(n)
    shuffled = ns * repeat
    rnd.shuffle(shuffled)
    table = LinkStateTable(FAB)
    for n in shuffled:
        table.merge(n)
    assert table.snapshot() == expected.snapshot()
    for (sw, port), rec in table.snapshot().items():
        newest = max((n for n in ns if (n.switch, n.port) == (sw, port)),
                     key=lambda n: n.epoch, default=None)
        if newest is not None:
            assert rec == newest


@given(notices, st.data())
@settings(max_examples=100, deadline=None)
def test_an_older_notice_never_changes_a_record(ns, data):
    table = LinkStateTable(FAB)
    for n in ns:
        table.merge(n)
    before = table.snapshot()
    end = data.draw(st.sampled_from(ENDS))
    cur = before[end].epoch
    older = data.draw(st.builds(Version, st.integers(0, cur.incarnation),
                                st.integers(0, 10)).filter(lambda v: v <= cur))
    assert not table.merge(PortState(end[0], end[1], data.draw(st.booleans()), older))
    assert table.snapshot() == before


versions = st.builds(Version, st.integers(1, 4), st.integers(1, 6))


@given(st.lists(versions, min_size=1, max_size=20, unique=True), st.randoms(use_true_random=False))
@settings(max_examples=100, deadline=None)
def test_profile_store_keeps_the_newest_version(vs, rnd):
    profiles = [Profile("s1", v, 4, ((1, (v.incarnation * 7 + v.seq) % 16),)) for v in vs]
    rnd.shuffle(profiles)
    store = ProfileStore(max_level=15, stale_after=3.0, age_step=0.25)
    for p in profiles:
        store.merge(p, 0.0)
    assert store.get("s1").version == max(vs)


@given(st.lists(st.tuples(st.sampled_from(["hello", "tick"]), st.integers(1, 3),
                          st.floats(0.0, 3.0)), max_size=40))
@settings(max_examples=100, deadline=None)
def test_peer_liveness_follows_the_last_hello(events):
    core = SyncMeshCore(FAB, "l1", 5, CoreConfig(keepalive_interval=0.5, dead_interval=2.0))
    peers = core.peers
    now = 0.0
    last_hello = None
    newest_inc = 0
    for kind, inc, dt in events:
        now += dt
        if kind == "hello":
            try:
                core.on_hello("s1", Hello(inc, 1), now)
            except Rejected as e:
                # a late hello from an older incarnation never rolls the peer's back
                assert inc < newest_inc and e.reason == "incarnation"
                continue
            last_hello = now
            newest_inc = max(newest_inc, inc)
        else:
            peers.expire(now)
        alive = last_hello is not None and now - last_hello <= 2.0
        assert ("s1" in peers.up()) == alive or kind == "hello"
        assert peers.peers["s1"].incarnation == newest_inc


@given(st.lists(st.tuples(st.sampled_from([lk.leaf for lk in FAB.links]), st.booleans()),
                min_size=1, max_size=12),
       st.randoms(use_true_random=False))
@settings(max_examples=40, deadline=None)
def test_cores_agree_after_any_flap_sequence(flaps, rnd):
    net = CoreNet(FAB)
    net.start()
    truth = {}
    for end, up in flaps:
        net.handle(end.switch, net.cores[end.switch].on_port_status({end.port: up}, net.now))
        truth[end.switch, end.port] = up
        # deliver a random part of the queue now, the rest later, in shuffled order
        pending = list(net.queue)
        rnd.shuffle(pending)
        net.queue.clear()
        net.queue.extend(pending)
        for _ in range(rnd.randint(0, len(pending))):
            net.queue.rotate(-1)
        net.now += 0.01
    net.run()
    views = net.views()
    assert all(v == views["l1"] for v in views.values())
    for lk in FAB.links:
        expect = truth.get((lk.leaf.switch, lk.leaf.port), True)
        assert views["s1"][lk.name] is expect
