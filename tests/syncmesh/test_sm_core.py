"""SyncMesh decision logic on a virtual clock: paths, profiles, notices, liveness, resync."""

import pytest
from sm_harness import CoreNet
from syncmesh.config import CoreConfig
from syncmesh.core import Event, PortStatusOut, Program, Rejected, Send, SyncMeshCore
from syncmesh.linkstate import PortState, Version
from syncmesh.messages import FullState, Hello, HelloReply, LinkNotice, ProfileUpdate
from syncmesh.paths import leaf_paths, path_live, peers_of, uplinks
from syncmesh.profiles import Profile, ProfilePublisher, RateMeter
from syncmesh.switchops import PathEntry, PortPeer, RemoteCongestion, SpinePaths, SpineRoute

from fabricmodel import leaf_spine
from sglb.config import quantise


@pytest.fixture
def fab():
    # 3 leaves, 2 spines, 2 parallel links per leaf-spine pair
    return leaf_spine(3, 2, 1, 1, links_per_pair=2)


def ops_of(actions, kind):
    return [op for a in actions if isinstance(a, Program) for op in a.ops if isinstance(op, kind)]


def test_paths_and_peers(fab):
    ups = uplinks(fab, "l1")
    assert [lk.leaf.port for lk in ups] == [2, 3, 4, 5]
    paths = leaf_paths(fab, "l1")
    assert set(paths) == {"l2", "l3"}
    p = paths["l3"][2]
    assert (p.index, p.port, p.spine) == (2, 4, "s2")
    assert {lk.leaf.switch for lk in p.downlinks} == {"l3"} and len(p.downlinks) == 2
    assert peers_of(fab, "l1") == ("s1", "s2")
    assert peers_of(fab, "s2") == ("l1", "l2", "l3")
    # a path dies with its uplink, or when the spine loses its whole bundle to the destination
    down = {p.uplink}
    assert not path_live(p, lambda lk: lk not in down)
    down = set(p.downlinks[:1])
    assert path_live(p, lambda lk: lk not in down)
    down = set(p.downlinks)
    assert not path_live(p, lambda lk: lk not in down)


def test_start_programs_everything(fab):
    core = SyncMeshCore(fab, "l1", 7)
    acts = core.start(0.0)
    paths = ops_of(acts, PathEntry)
    assert len(paths) == 2 * 4 and all(p.live for p in paths)
    assert len(ops_of(acts, RemoteCongestion)) == 8
    hellos = [a for a in acts if isinstance(a, Send) and isinstance(a.message, Hello)]
    assert {a.peer for a in hellos} == {"s1", "s2"}
    spine = SyncMeshCore(fab, "s1", 8)
    acts = spine.start(0.0)
    routes = ops_of(acts, SpineRoute)
    assert {r.dst_leaf: r.ports for r in routes} == {1: (1, 2), 2: (3, 4), 3: (5, 6)}
    assert {p.port: (p.leaf_id, p.siblings) for p in ops_of(acts, PortPeer)}[4] == (2, (3,))
    slots = {s.spine_id: (s.slot, s.paths) for s in core.desired().values()
             if isinstance(s, SpinePaths)}
    # nothing changed since the first start: no switch writes the second time
    assert not any(isinstance(a, Program) for a in core.start(0.1))
    assert slots == {4: (0, (0, 1)), 5: (1, (2, 3))}


def test_unknown_switch_is_a_clear_error(fab):
    with pytest.raises(ValueError, match="switch 'zz' is not in fabric"):
        SyncMeshCore(fab, "zz", 1)


def test_quantise_and_rates():
    assert [quantise(u, 4) for u in (0, 0.05, 0.0625, 0.5, 0.99, 1.0, 3.0)] == \
        [0, 0, 1, 8, 15, 15, 15]
    for bad in (-1, float("nan"), float("inf")):  # a caller's bug, never a level
        with pytest.raises(ValueError, match="utilisation"):
            quantise(bad, 4)
    meter = RateMeter()
    assert meter.update({1: 1000}, 0.0) == {}
    assert meter.update({1: 1_000_000 + 1000}, 1.0) == {1: 8.0}
    assert meter.update({1: 50}, 2.0) == {}  # counter reset: skipped
    assert meter.update({1: 125_050}, 3.0) == {1: 1.0}


def test_publisher_threshold_and_period():
    pub = ProfilePublisher("s1", 5, bits=4, threshold=1, period=1.0)
    assert pub.due(0.0) is None  # nothing measured yet
    pub.observe({1: 3, 2: 3})
    first = pub.due(0.0)
    assert first.version == Version(5, 1) and first.as_dict() == {1: 3, 2: 3}
    pub.observe({1: 4, 2: 2})  # moved by 1 level: within the threshold
    assert pub.due(0.5) is None
    pub.observe({1: 6, 2: 2})  # moved by 3: goes out at once
    assert pub.due(0.6).version == Version(5, 2)
    assert pub.due(1.0) is None
    refresh = pub.due(1.6)  # the period elapsed: refreshed even unchanged
    assert refresh.version == Version(5, 3) and refresh.as_dict() == {1: 6, 2: 2}


def test_spine_measures_bundles_and_leaf_writes_remote_congestion(fab):
    net = CoreNet(fab, CoreConfig(profile_threshold=0))
    net.start()
    s1 = net.cores["s1"]
    # s1 ports 5,6 go to l3 (10 + 10 of 100 Mbit/s each... capacity 100Mbit per member)
    net.handle("s1", s1.on_counters({5: 0, 6: 0, 1: 0, 2: 0, 3: 0, 4: 0}, net.now))
    net.now += 1.0
    acts = s1.on_counters({5: 10_000_000, 6: 2_500_000, 1: 0, 2: 0, 3: 0, 4: 0}, net.now)
    net.handle("s1", acts)
    # (80 + 20) Mbit/s over 200 Mbit/s of live capacity = 0.5 -> level 4 of 0..7
    assert s1.utilisation[5] == pytest.approx(0.8)
    assert s1.publisher.latest().as_dict() == {1: 0, 2: 0, 3: 4}
    net.run()
    l1 = net.cores["l1"]
    # l1's paths 0 and 1 cross s1 (ports 2, 3): they carry s1's level toward l3 (id 3)
    levels = {(op.dst_leaf, op.index): op.level for op in l1.programmed.values()
              if isinstance(op, RemoteCongestion)}
    assert levels[3, 0] == levels[3, 1] == 4
    assert levels[3, 2] == levels[3, 3] == 0 and levels[2, 0] == 0


def test_link_failure_reaches_every_switch_and_recovery_overrides(fab):
    net = CoreNet(fab)
    net.start()
    l3 = net.cores["l3"]
    net.handle("l3", l3.on_port_status({2: False}, net.now))  # l3:2 is its first link to s1
    net.run()
    name = "l3:2-s1:5"
    assert all(v[name] is False for v in net.views().values())
    # l1's path 0 toward l3 is still live: s1 keeps the other member of its bundle
    assert net.cores["l1"].programmed["path", 3, 0].live
    net.handle("l3", l3.on_port_status({3: False}, net.now))  # and the second member
    net.run()
    assert not net.cores["l1"].programmed["path", 3, 0].live
    assert not net.cores["l1"].programmed["path", 3, 1].live
    assert net.cores["l1"].programmed["path", 3, 2].live
    assert net.cores["l1"].stats.failovers == 2
    assert net.cores["s1"].programmed["spine_route", 3].ports == ()
    net.handle("l3", l3.on_port_status({2: True, 3: True}, net.now))
    net.run()
    assert all(all(v.values()) for v in net.views().values())
    assert net.cores["l1"].programmed["path", 3, 0].live


def test_old_notice_never_overrides_new(fab):
    core = SyncMeshCore(fab, "l1", 10)
    core.start(0.0)
    core.peers.heard_from("s1", 20, 0.0)
    new = PortState("l2", 2, False, Version(30, 2), 1.0)
    old = PortState("l2", 2, True, Version(30, 1), 0.5)
    assert core.on_notice(LinkNotice("s1", (new,)), 1.0)[0]
    changed, acts = core.on_notice(LinkNotice("s1", (old,)), 1.1)
    assert not changed and acts == []
    assert core.links.get("l2", 2) == new
    # a restarted owner (larger incarnation) wins even with a smaller sequence number
    restarted = PortState("l2", 2, True, Version(31, 1), 2.0)
    assert core.on_notice(LinkNotice("s1", (restarted,)), 2.0)[0]
    assert core.links.get("l2", 2).up


def test_peer_liveness_and_profile_expiry(fab):
    cfg = CoreConfig(keepalive_interval=0.5, dead_interval=2.0)
    net = CoreNet(fab, cfg)
    net.start()
    assert set(net.cores["l1"].peers.up()) == {"s1", "s2"}
    s1 = net.cores["s1"]
    net.handle("s1", s1.on_counters({p: 0 for p in range(1, 7)}, net.now))
    net.handle("s1", s1.on_counters({p: 10**7 for p in range(1, 7)}, net.now + 1))
    net.run()
    assert net.cores["l1"].store.get("s1") is not None
    net.down.add("s1")  # the s1 daemon stops answering
    net.advance(1.9)
    assert "s1" in net.cores["l1"].peers.up()
    events = []
    for _ in range(5):
        net.now += 0.1
        events += net.cores["l1"].tick(net.now)
    assert any(isinstance(e, Event) and e.name == "peer_down" and e.get("peer") == "s1"
               for e in events)
    assert net.cores["l1"].peers.up() == ["s2"]
    # its profile is dropped: paths through s1 fall back to local congestion only
    assert net.cores["l1"].store.get("s1") is None
    assert all(op.level == 0 for op in ops_of(events, RemoteCongestion))


def test_restarted_daemon_resyncs_what_it_missed(fab):
    net = CoreNet(fab)
    net.start()
    net.down.add("l2")  # l2's daemon is dead while a link fails elsewhere
    net.handle("l3", net.cores["l3"].on_port_status({4: False}, net.now))
    net.run()
    net.restart("l2", incarnation=5000)
    fresh = net.cores["l2"]
    assert fresh.link_view()["l3:4-s2:5"] is True  # not yet resynced
    net.run()
    assert fresh.link_view()["l3:4-s2:5"] is False
    views = net.views()
    assert all(v == views["l1"] for v in views.values())
    # peers saw a new incarnation: they count it as a rejoin
    assert net.cores["s1"].peers.peers["l2"].incarnation == 5000


def test_rejected_messages_change_nothing(fab):
    core = SyncMeshCore(fab, "l1", 10)
    core.start(0.0)
    core.peers.heard_from("s1", 20, 0.0)
    before = (core.links.snapshot(), dict(core.programmed), core.store.all(),
              core.peers.peers["s1"].last_heard)
    good = PortState("l2", 2, False, Version(30, 2), 1.0)
    bad_msgs = [
        (LinkNotice("zz", (good,)), "unknown switch 'zz'"),
        (LinkNotice("l2", (good,)), "not a peer"),
        (LinkNotice("s1", ()), "empty"),
        (LinkNotice("s1", (good, PortState("l2", 99, False, Version(1, 1)))),
         r"states\[1\]: l2:99 is not a fabric link end"),
        (LinkNotice("s1", (PortState("l2", 2, False, Version(0, 9)),)), "must be positive"),
        (LinkNotice("s1", (PortState("l2", 2, False, Version(3, 9), float("nan")),)),
         "bad time"),
        (ProfileUpdate("s1", Profile("s2", Version(1, 1), 4, ((1, 1),))), "not the sender"),
        (ProfileUpdate("s1", Profile("s1", Version(1, 1), 4, ((1, 1),))), "differs"),
        (ProfileUpdate("s1", Profile("s1", Version(1, 1), 3, ((9, 1),))), "no leaf with id 9"),
        (ProfileUpdate("s1", Profile("s1", Version(1, 1), 3, ((1, 8),))), "out of range"),
        (ProfileUpdate("s1", Profile("s1", Version(1, 1), 3, ((1, 1), (1, 2)))), "twice"),
        (FullState("s1", 0, (), ()), "incarnation: must be positive"),
        (FullState("s1", 21, (good,), (Profile("s1", Version(1, 1), 3, ((7, 1),)),)),
         r"profiles\[0\].entries\[0\]"),
        (Hello("s9", 1, 1), "unknown switch"),
    ]
    for msg, words in bad_msgs:
        with pytest.raises(Rejected, match=words):
            if isinstance(msg, LinkNotice):
                core.on_notice(msg, 5.0)
            elif isinstance(msg, ProfileUpdate):
                core.on_profile(msg, 5.0)
            elif isinstance(msg, FullState):
                core.on_resync(msg, 5.0)
            else:
                core.on_hello(msg, 5.0)
    with pytest.raises(Rejected, match="responder"):
        core.on_hello_reply("s1", HelloReply("s2", 3), 5.0)
    after = (core.links.snapshot(), dict(core.programmed), core.store.all(),
             core.peers.peers["s1"].last_heard)
    assert after == before


def test_spine_profile_from_a_leaf_is_rejected(fab):
    spine = SyncMeshCore(fab, "s1", 10)
    with pytest.raises(Rejected, match="only spines publish"):
        spine.on_profile(ProfileUpdate("l1", Profile("l1", Version(1, 1), 3, ())), 0.0)


def test_port_status_out_and_host_ports(fab):
    core = SyncMeshCore(fab, "l1", 10, port_status_out=True)
    core.start(0.0)
    acts = core.on_port_status({2: False, 1: False, 77: True}, 1.0)
    # a port-status packet for every port of the switch, the host's too (the program keeps
    # every port's liveness, as softswitch's own injection does), sequence numbers increasing
    outs = [a for a in acts if isinstance(a, PortStatusOut)]
    assert [(o.port, o.up) for o in outs] == [(1, False), (2, False)]
    assert outs[0].seq < outs[1].seq
    names = [a.name for a in acts if isinstance(a, Event)]
    assert "host_port_down" in names and "unknown_port" in names and "port_down" in names
    notices = [a for a in acts if isinstance(a, Send)]
    assert {a.peer for a in notices} == {"s1", "s2"}
    assert [st.port for st in notices[0].message.states] == [2]
    # the same state again is no news
    assert core.on_port_status({2: False}, 2.0) == []
