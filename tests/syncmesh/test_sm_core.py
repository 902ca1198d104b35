"""SyncMesh decision logic on a virtual clock: paths, profiles, notices, liveness, resync."""

import math

import pytest
from sm_harness import CoreNet
from syncmesh.config import CoreConfig
from syncmesh.core import Disconnect, Event, PortStatusOut, Program, Rejected, Send, SyncMeshCore
from syncmesh.linkstate import PortState, Version
from syncmesh.messages import Hello, LinkNotice, ProfileUpdate, ResyncChunk
from syncmesh.paths import leaf_paths, path_live, peers_of, uplinks
from syncmesh.profiles import Profile, ProfilePublisher, ProfileStore, RateMeter
from syncmesh.switchops import PathEntry, PortPeer, RemoteCongestion, SpinePaths, SpineRoute

from fabricmodel import leaf_spine
from sglb.config import quantise


@pytest.fixture
def fab():
    # 3 leaves, 2 spines, 2 parallel links per leaf-spine pair
    return leaf_spine(3, 2, 1, 1, links_per_pair=2)


def ops_of(actions, kind):
    return [op for a in actions if isinstance(a, Program) for op in a.ops if isinstance(op, kind)]


def session(core, peer, incarnation, now=0.0):
    """Open a session with ``peer`` as the daemon does: our Hello out, the peer's Hello in."""
    core.on_session_open(peer, now)
    return core.on_hello(peer, Hello(incarnation, 1), now)


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
    # sessions open later (the daemon's streams): nothing is sent before
    assert not any(isinstance(a, Send) for a in acts)
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
    # with a decay: a busy link's rate rises at once and an empty sample only lets it fall
    meter = RateMeter(decay=0.1)
    meter.update({1: 0}, 0.0)
    assert meter.update({1: 12_500}, 0.01)[1] == pytest.approx(10.0)  # 10 Mbit/s in 10 ms
    assert meter.update({1: 12_500}, 0.02)[1] == pytest.approx(10.0 * math.exp(-0.1))
    assert meter.update({1: 37_500}, 0.03)[1] == pytest.approx(20.0)
    assert meter.update({1: 37_500}, 1.03)[1] < 0.001


def test_publisher_sends_deltas_at_once_and_the_whole_profile_each_period():
    pub = ProfilePublisher("s1", 5, bits=4, threshold=1, period=1.0)
    assert pub.due(0.0) is None  # nothing measured yet
    pub.observe({1: 3, 2: 3}, 0.0)
    first = pub.due(0.0)
    assert not first.delta and first.profile.version == Version(5, 1)
    assert first.profile.as_dict() == {1: 3, 2: 3}
    pub.observe({1: 4, 2: 2}, 0.5)  # moved by 1 level: within the threshold
    assert pub.due(0.5) is None
    pub.observe({1: 6, 2: 2}, 0.6)  # leaf 1 moved by 3: a delta with only that entry
    d = pub.due(0.6)
    assert d.delta and d.profile.version == Version(5, 2) and d.profile.levels == ((1, 6),)
    assert pub.due(0.7) is None
    pub.observe({1: 6, 2: 2}, 1.2)
    refresh = pub.due(1.2)  # the period elapsed: the whole profile, as every peer holds it
    assert not refresh.delta and refresh.profile.version == Version(5, 3)
    assert refresh.profile.as_dict() == {1: 6, 2: 2}
    assert pub.due(2.5) is None  # no measurement since: a silent spine sends nothing


def test_profile_store_applies_deltas_in_order_and_ages_stale_profiles():
    store = ProfileStore(max_level=7, stale_after=3.0, age_step=0.25)
    assert store.level("s1", 1, 0.0) == 7  # never heard: unknown counts as congested
    assert store.merge(Profile("s1", Version(9, 1), 3, ((1, 2), (2, 5))), 0.0)
    assert store.apply_delta(Profile("s1", Version(9, 3), 3, ((1, 4),)), 0.1) is None  # gap
    assert store.apply_delta(Profile("s1", Version(9, 2), 3, ((1, 4),)), 0.1) is True
    assert store.apply_delta(Profile("s1", Version(9, 2), 3, ((1, 0),)), 0.2) is False  # old
    assert store.get("s1").as_dict() == {1: 4, 2: 5}
    assert [store.level("s1", 1, t) for t in (3.0, 3.1, 3.2, 3.4, 3.6, 60.0)] == \
        [4, 4, 5, 6, 7, 7]  # one level per age step after 3 s without news (received at 0.1), never down
    assert store.ageing(3.5) and not store.ageing(60.0)


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
    assert levels[2, 0] == 0
    assert levels[3, 2] == levels[3, 3] == 7  # s2 has published nothing: unknown, not idle


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
    session(core, "s1", 20)
    new = PortState("l2", 2, False, Version(15, 2), 1.0)
    old = PortState("l2", 2, True, Version(15, 1), 0.5)
    assert core.on_notice("s1", LinkNotice((new,)), 1.0)
    assert core.on_notice("s1", LinkNotice((old,)), 1.1) == []
    assert core.links.get("l2", 2) == new
    # a restarted owner (larger incarnation) wins even with a smaller sequence number
    restarted = PortState("l2", 2, True, Version(16, 1), 2.0)
    assert core.on_notice("s1", LinkNotice((restarted,)), 2.0)
    assert core.links.get("l2", 2).up


def test_peer_liveness_and_a_silent_spines_profile_ages_up(fab):
    cfg = CoreConfig(keepalive_interval=0.5, dead_interval=2.0, profile_stale_after=3.0,
                     profile_age_step=0.25)
    net = CoreNet(fab, cfg)
    net.start()
    assert set(net.cores["l1"].peers.up()) == {"s1", "s2"}
    s1 = net.cores["s1"]
    net.handle("s1", s1.on_counters({p: 0 for p in range(1, 7)}, net.now))
    net.handle("s1", s1.on_counters({p: 3 * 10**6 for p in range(1, 7)}, net.now + 1))
    net.run()
    l1 = net.cores["l1"]
    assert l1.store.get("s1") is not None
    assert l1.programmed["congestion", 3, 0].level == quantise(0.24, 3) == 1  # 24 of 100
    net.down.add("s1")  # the s1 daemon stops answering
    net.advance(1.9)
    assert "s1" in l1.peers.up()
    events = []
    for _ in range(5):
        net.now += 0.1
        events += l1.tick(net.now)
    assert any(isinstance(e, Event) and e.name == "peer_down" and e.get("peer") == "s1"
               for e in events)
    assert Disconnect("s1") in events  # the session is ended: the next one resyncs
    assert l1.peers.up() == ["s2"]
    # its profile is kept but ages: levels rise toward the top, never fall to 0
    levels = []
    for _ in range(40):
        net.advance(0.1)
        levels.append(l1.programmed["congestion", 3, 0].level)
    assert levels == sorted(levels) and levels[0] == 1 and levels[-1] == cfg.max_level


def test_a_stalled_daemon_does_not_blame_its_peers(fab):
    cfg = CoreConfig(keepalive_interval=0.5, dead_interval=2.0)
    net = CoreNet(fab, cfg)
    net.start()
    l1 = net.cores["l1"]
    net.now += 5.0  # l1 did not run for 5 s (its peers' messages wait unread)
    acts = l1.tick(net.now)
    assert l1.stats.stalls == 1 and any(isinstance(a, Event) and a.name == "stalled"
                                        for a in acts)
    assert set(l1.peers.up()) == {"s1", "s2"}
    assert not any(isinstance(a, Disconnect) for a in acts)
    net.handle("l1", acts)
    net.run()
    net.down.add("s2")  # a peer that really is gone is still found out
    net.advance(2.5)
    assert l1.peers.up() == ["s1"]


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
    core.start(100.0)
    session(core, "s1", 20, 100.0)
    before = (core.links.snapshot(), dict(core.programmed), core.store.all(),
              core.peers.peers["s1"].last_heard)
    good = PortState("l2", 2, False, Version(30, 2), 1.0)
    future = 161_000  # ms: later than 100 s + 60 s of skew
    bad = [  # (peer, message, reason, words)
        ("s1", LinkNotice(()), "invalid", "empty"),
        ("s1", LinkNotice((good, PortState("l2", 99, False, Version(1, 1)))), "invalid",
         r"notice.states\[1\]: l2:99 is not a fabric link end"),
        ("s1", LinkNotice((good, good)), "invalid", "listed twice"),
        ("s1", LinkNotice((PortState("l2", 2, False, Version(0, 9)),)), "invalid",
         "must be positive"),
        ("s1", LinkNotice((PortState("l2", 2, False, Version(3, 9), float("nan")),)), "invalid",
         "bad time"),
        ("s1", LinkNotice((PortState("l2", 2, False, Version(3, 9), 1e9),)), "invalid",
         "bad time"),
        # speaking for someone else: l1's own port, a link s1 is not on
        ("s1", LinkNotice((PortState("l1", 2, False, Version(5, 1)),)), "forged",
         "speaks for l1's own port 2"),
        ("s1", LinkNotice((PortState("l2", 4, False, Version(5, 1)),)), "forged",
         "may not speak for l2:4"),
        # incarnations: later than the session's (own record), or than the clock allows
        ("s1", LinkNotice((PortState("s1", 3, False, Version(21, 1)),)), "incarnation",
         "newer than s1's session incarnation 20"),
        ("s1", LinkNotice((PortState("l2", 2, False, Version(future, 1)),)), "incarnation",
         "later than this daemon's clock"),
        ("s1", LinkNotice((PortState("l2", 2, False, Version(2**64 - 1, 2**64 - 1)),)),
         "incarnation", "later than this daemon's clock"),
        ("s1", ProfileUpdate(Profile("s2", Version(20, 1), 3, ((1, 1),))), "forged",
         "a profile of 's2' from 's1'"),
        ("s1", ProfileUpdate(Profile("s1", Version(2**64 - 1, 2**64 - 1), 3, ((1, 7),))),
         "incarnation", "not s1's session incarnation"),
        ("s1", ProfileUpdate(Profile("s1", Version(20, 1), 4, ((1, 1),))), "invalid",
         "differs"),
        ("s1", ProfileUpdate(Profile("s1", Version(20, 1), 3, ((9, 1),))), "invalid",
         "no leaf with id 9"),
        ("s1", ProfileUpdate(Profile("s1", Version(20, 1), 3, ((1, 8),))), "invalid",
         "out of range"),
        ("s1", ProfileUpdate(Profile("s1", Version(20, 1), 3, ((1, 1), (1, 2)))), "invalid",
         "twice"),
        ("s1", ResyncChunk((good,), Profile("s1", Version(20, 1), 3, ((7, 1),))), "invalid",
         r"resync.profile.entries\[0\]"),
        ("s1", Hello(0, 1), "invalid", "must be positive"),
        ("s1", Hello(19, 1), "incarnation", "older than s1's current 20"),
        ("s1", Hello(future, 1), "incarnation", "later than this daemon's clock"),
        ("s2", LinkNotice((good,)), "no_session", "first message must be a Hello"),
        ("s9", Hello(1, 1), "forged", "unknown switch"),
        ("l2", Hello(1, 1), "forged", "not a peer"),
    ]
    for peer, msg, reason, words in bad:
        with pytest.raises(Rejected, match=words) as ei:
            core.on_message(peer, msg, 100.0)
        assert ei.value.reason == reason, (msg, ei.value)
    after = (core.links.snapshot(), dict(core.programmed), core.store.all(),
             core.peers.peers["s1"].last_heard)
    assert after == before


def test_records_and_profiles_only_from_who_may_speak_for_them(fab):
    # a spine speaks for its own ports and the leaf ends of its links, not for other spines'
    spine = SyncMeshCore(fab, "s1", 10)
    spine.start(0.0)
    session(spine, "l1", 20)
    with pytest.raises(Rejected, match="only spines publish") as ei:
        spine.on_profile("l1", ProfileUpdate(Profile("l1", Version(20, 1), 3, ())), 0.0)
    assert ei.value.reason == "forged"
    # l1 speaks for its own ends and the spine end of its links to s2 ...
    acts = spine.on_notice("l1", LinkNotice((PortState("l1", 4, False, Version(20, 1), 0.1),
                                             PortState("s2", 1, False, Version(7, 1), 0.1))),
                           0.2)
    assert not spine.link_view()["l1:4-s2:1"]
    # ... and s1 relays nothing of a link it is not on
    assert not any(isinstance(a, Send) for a in acts)
    with pytest.raises(Rejected, match="may not speak for l2:2"):
        spine.on_notice("l1", LinkNotice((PortState("l2", 2, False, Version(7, 1)),)), 0.3)


def test_a_forged_record_about_a_switchs_own_port_never_hides_its_real_changes(fab):
    net = CoreNet(fab)
    net.start()
    l2 = net.cores["l2"]
    forged = LinkNotice((PortState("l2", 2, False, Version(2**40, 2**63)),))
    with pytest.raises(Rejected):
        l2.on_notice("s1", forged, net.now)
    net.handle("l2", l2.on_port_status({2: False}, net.now))
    net.run()
    assert all(not v["l2:2-s1:3"] for v in net.views().values())
    net.handle("l2", l2.on_port_status({2: True}, net.now))
    net.run()
    assert all(v["l2:2-s1:3"] for v in net.views().values())


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
    assert not any(isinstance(a, Send) for a in acts)  # no session up: nobody to tell
    session(core, "s1", 20, 2.0)
    session(core, "s2", 21, 2.0)
    acts = core.on_port_status({2: True}, 3.0)
    notices = [a for a in acts if isinstance(a, Send)]
    assert {a.peer for a in notices} == {"s1", "s2"}
    assert [st.port for st in notices[0].message.states] == [2]
    # the same state again is no news
    assert core.on_port_status({2: True}, 4.0) == []


def test_port_status_again_repeats_each_ports_last_packet(fab):
    core = SyncMeshCore(fab, "l1", 10, port_status_out=True)
    core.start(0.0)
    assert core.port_status_again(0.5) == []  # nothing known yet: nothing to repeat
    first = [a for a in core.on_port_status({2: False, 1: False, 3: True}, 1.0)
             if isinstance(a, PortStatusOut)]
    later = [a for a in core.on_port_status({2: True}, 2.0) if isinstance(a, PortStatusOut)]
    again = core.port_status_again(3.0)
    # every port's newest packet, unchanged (same sequence number: the program counts a
    # repeat as a duplicate), in port order, and nothing new to the peers
    by_port = {o.port: o for o in first + later}
    assert again == [by_port[p] for p in sorted(by_port)]
    assert [o.up for o in again] == [False, True, True]
    assert core.port_status_again(4.0) == again
    # a target that injects port-status itself gets none
    quiet = SyncMeshCore(fab, "l1", 11)
    quiet.start(0.0)
    quiet.on_port_status({2: False}, 1.0)
    assert quiet.port_status_again(2.0) == []
