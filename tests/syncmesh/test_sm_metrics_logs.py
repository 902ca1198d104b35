"""Metrics page format and log line format, from a core driven on a virtual clock."""

import logging

from syncmesh.core import SyncMeshCore
from syncmesh.linkstate import PortState, Version
from syncmesh.logs import LogfmtFormatter, SwitchLog
from syncmesh.messages import Hello, LinkNotice
from syncmesh.metrics import CONVERGENCE_BUCKETS, SwitchSnapshot, TransportStats, parse, render
from syncmesh.switchops import RemoteCongestion

from fabricmodel import leaf_spine


def test_page_is_well_formed_and_histogram_cumulative():
    fab = leaf_spine(2, 2, 1, 1)
    core = SyncMeshCore(fab, "l1", 5)
    core.start(0.0)
    core.on_hello("s1", Hello(9, 1), 0.0)
    core.on_port_status({3: False}, 0.0)
    core.on_counters({2: 0, 3: 0}, 0.0)
    core.on_counters({2: 6_250_000, 3: 0}, 1.0)  # 50 Mbit/s on a 100 Mbit/s uplink
    for i, delay in enumerate((0.002, 0.02, 0.3)):
        st = PortState("l2", 2, i % 2 == 0, Version(7, i + 1), 10.0)
        core.on_notice("s1", LinkNotice((st,)), 10.0 + delay)
    stats = TransportStats()
    stats.sent["hello"] += 3
    stats.rejected["malformed"] += 1
    page = render(core, stats)
    lines = page.splitlines()
    # every family announced once with HELP and TYPE before its samples
    families = [ln.split()[2] for ln in lines if ln.startswith("# TYPE")]
    assert len(families) == len(set(families))
    m = parse(page)
    me = ("switch", "l1")
    assert m["syncmesh_port_utilisation", frozenset({me, ("port", "2"), ("peer", "s1")})] == 0.5
    assert m["syncmesh_port_carrier", frozenset({me, ("port", "3")})] == 0
    assert ("syncmesh_port_carrier", frozenset({me, ("port", "2")})) not in m  # never reported
    assert m["syncmesh_peer_up", frozenset({me, ("peer", "s1")})] == 1
    assert m["syncmesh_peer_up", frozenset({me, ("peer", "s2")})] == 0
    assert m["syncmesh_rejected_total", frozenset({me, ("reason", "malformed")})] == 1
    assert m["syncmesh_messages_sent_total", frozenset({me, ("type", "hello")})] == 3
    buckets = [m["syncmesh_convergence_seconds_bucket", frozenset({me, ("le", str(b))})]
               for b in CONVERGENCE_BUCKETS]
    assert buckets == sorted(buckets)  # cumulative
    assert m["syncmesh_convergence_seconds_bucket", frozenset({me, ("le", "0.0025")})] == 1
    assert m["syncmesh_convergence_seconds_bucket", frozenset({me, ("le", "+Inf")})] == 3
    assert m["syncmesh_convergence_seconds_count", frozenset({me})] == 3
    assert m["syncmesh_link_up", frozenset({me, ("link", "l2:2-s1:2")})] == 1  # last: up


def test_the_switch_side_comes_from_the_snapshot_the_daemon_hands_over():
    fab = leaf_spine(2, 2, 1, 1)
    core = SyncMeshCore(fab, "l1", 5)
    core.start(0.0)
    me = ("switch", "l1")
    assert ("syncmesh_switch_ready", frozenset({me})) not in parse(render(core, TransportStats()))
    ops = sorted((op for op in core.programmed.values() if isinstance(op, RemoteCongestion)),
                 key=lambda o: o.key)
    assert ops   # a leaf holds a remote level per destination and path
    op = ops[0]
    snap = SwitchSnapshot(ready=True, writes=4,
                          remote_written={(op.dst_leaf, op.index): (op.level, 12.5)},
                          congested_since={(op.dst_leaf, op.index): 11.0})
    m = parse(render(core, TransportStats(), snap))
    where = frozenset({me, ("dst_leaf", str(op.dst_leaf)), ("path", str(op.index))})
    assert m["syncmesh_switch_ready", frozenset({me})] == 1
    assert m["syncmesh_switch_writes_total", frozenset({me})] == 4
    assert m["syncmesh_remote_level_written_seconds", where] == 12.5
    assert m["syncmesh_remote_congested_since_seconds", where] == 11.0
    # a level written before the current one is not reported as the current one's time
    stale = SwitchSnapshot(True, 4, {(op.dst_leaf, op.index): (op.level + 1, 12.5)})
    assert ("syncmesh_remote_level_written_seconds", where) not in parse(
        render(core, TransportStats(), stale))


def test_log_lines_are_logfmt_with_the_switch():
    fmt = LogfmtFormatter(default_switch="l7")
    rec = logging.LogRecord("syncmesh.l1", logging.WARNING, __file__, 1, "rejected", (), None)
    rec.switch, rec.event = "l1", "rejected"
    rec.fields = {"reason": "invalid", "detail": 'states[0]: bad "x"', "n": 3}
    line = fmt.format(rec)
    assert " level=warning switch=l1 event=rejected reason=invalid " in line
    assert 'detail="states[0]: bad \\"x\\""' in line and line.endswith("n=3")
    plain = logging.LogRecord("grpc", logging.INFO, __file__, 1, "hello %s", ("there",), None)
    line = fmt.format(plain)
    assert "switch=l7 event=log" in line and 'msg="hello there"' in line


def test_switch_log_passes_fields(caplog):
    with caplog.at_level(logging.INFO, logger="syncmesh"):
        SwitchLog("s3").event("peer_up", peer="l1")
    (rec,) = caplog.records
    assert rec.switch == "s3" and rec.event == "peer_up" and rec.fields == {"peer": "l1"}
