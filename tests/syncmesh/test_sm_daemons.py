"""Real SyncMesh daemons over gRPC on loopback with mutual TLS: sessions, profiles, notices,
resync, metrics, logs."""

import asyncio
import logging
import random
import time

import grpc
import pytest
from sm_net import (
    RawPeer,
    agree,
    all_peers_up,
    fabric_certs,
    http_get,
    loopback_fabric,
    make_daemon,
)
from syncmesh.certs import TlsFiles
from syncmesh.linkstate import PortState, Version
from syncmesh.logs import LogfmtFormatter
from syncmesh.messages import Hello, LinkNotice, ResyncChunk
from syncmesh.metrics import parse
from syncmesh.switchops import RemoteCongestion

from testsupport import async_wait_until


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


@pytest.fixture
def certs(tmp_path):
    return tmp_path / "certs"


async def started(fab, cert_dir, names=None):
    fabric_certs(fab, cert_dir)
    daemons = {n: make_daemon(fab, n, cert_dir)
               for n in (names or [s.name for s in fab.switches])}
    for d in daemons.values():
        await d.start()
    return daemons


async def stop_all(daemons):
    for d in daemons.values():
        await d.stop()


def test_daemons_exchange_profiles_and_notices(certs):
    fab = loopback_fabric(2, 2, 1, 2)  # l1 l2 s1 s2, hosts with 2 rails

    async def scenario():
        ds = await started(fab, certs)
        try:
            await async_wait_until(lambda: all_peers_up(ds.values()), "all peer sessions up")
            # s1 sees 60 Mbit/s toward l2 (port 2) on a 100 Mbit/s link: level 4 of 0..7
            s1 = ds["s1"]
            s1.counters({1: 0, 2: 0})
            s1.core.meter._last = {p: (b, t - 1.0) for p, (b, t) in s1.core.meter._last.items()}
            s1.counters({1: 0, 2: 7_500_000})
            l1 = ds["l1"]

            def remote(d, dst, idx):
                return d.core.programmed[RemoteCongestion(dst, idx, 0).key].level
            await async_wait_until(lambda: remote(l1, 2, 0) == 4, "l1 learns s1's congestion to l2")
            assert remote(l1, 2, 1) == 7  # s2 measured nothing: unknown, counted as congested
            # a leaf-spine link fails at l2's end: every daemon learns it
            ds["l2"].port_status({3: False})  # l2:3 is its link to s2 (port 2 = s1, 3 = s2)
            await async_wait_until(lambda: not ds["l1"].core.link_view()["l2:3-s2:2"],
                                   "l1 learns l2-s2 down")
            await async_wait_until(lambda: agree(ds.values()), "all daemons agree")
            assert not l1.core.programmed["path", 2, 1].live
            assert l1.core.programmed["path", 2, 0].live
            assert l1.core.stats.failovers == 1
            ds["l2"].port_status({3: True})
            await async_wait_until(lambda: all(all(d.core.link_view().values())
                                               for d in ds.values()), "recovery reaches everyone")
            # congestion deltas follow the counters as they change, one message per change
            sent = s1.transport.sent["profile"]
            s1.counters({1: 0, 2: 7_500_000 + 12_500})  # almost idle since the last read
            await async_wait_until(lambda: remote(l1, 2, 0) == 0, "l1 follows the delta")
            assert s1.transport.sent["profile"] == sent + 2  # one delta to each leaf
        finally:
            await stop_all(ds)

    run(scenario())


def test_a_session_must_start_with_a_hello_and_bad_bytes_change_nothing(certs, caplog):
    fab = loopback_fabric(2, 2, 1, 1)

    async def scenario():
        ds = await started(fab, certs, ["s1"])
        s1 = ds["s1"]
        before = (s1.core.links.snapshot(), dict(s1.core.programmed))
        notice = LinkNotice((PortState("l1", 2, False, Version(5, 1), time.time()),))
        l1 = TlsFiles.in_dir(certs, "l1")
        try:
            raw = RawPeer(fab, "s1", "l1", l1)
            await raw.send(notice)  # not a Hello: the stream is closed
            assert isinstance(await raw.recv(), Hello)  # s1's own opening
            with pytest.raises(grpc.aio.AioRpcError) as ei:
                await raw.recv()
            assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "not a Hello" in ei.value.details()
            await raw.close()
            raw = RawPeer(fab, "s1", "l1", l1)
            await raw.send(Hello(5, 1))
            assert isinstance(await raw.recv(), Hello)
            reply = await raw.recv()  # s1's full state (it knows nothing yet): one empty chunk
            assert reply == ResyncChunk((), None, True)
            await raw.send(b"\x0a\xff\xff")  # malformed: refused, the session goes on
            await raw.send(LinkNotice(()))  # empty: refused
            await async_wait_until(lambda: s1.transport.rejected["invalid"] == 1, "refused")
            assert (s1.core.links.snapshot(), dict(s1.core.programmed)) == before
            await raw.send(notice)  # a good message on the same session is taken
            await async_wait_until(lambda: not s1.core.link_view()["l1:2-s1:1"], "taken")
            await raw.close()
            assert s1.transport.rejected["no_session"] == 1
            assert s1.transport.rejected["malformed"] == 1
        finally:
            await stop_all(ds)

    with caplog.at_level(logging.DEBUG, logger="syncmesh"):
        run(scenario())
    rejected = [r for r in caplog.records if getattr(r, "event", "") == "rejected"]
    assert len(rejected) == 3 and all(r.switch == "s1" for r in rejected)
    # logged once per peer at warning level, the rest only counted (and at debug)
    assert [r.levelno for r in rejected] == [logging.WARNING, logging.DEBUG, logging.DEBUG]


def test_restarted_daemon_resyncs_what_it_missed(certs):
    fab = loopback_fabric(3, 2, 1, 1)

    async def scenario():
        ds = await started(fab, certs)
        try:
            await async_wait_until(lambda: all_peers_up(ds.values()), "sessions up")
            old_inc = ds["l3"].core.incarnation
            await ds["l3"].stop()
            # while l3's daemon is gone, a link elsewhere fails
            ds["l1"].port_status({2: False})
            others = [d for n, d in ds.items() if n != "l3"]
            await async_wait_until(lambda: agree(others), "the live daemons agree")
            fresh = make_daemon(fab, "l3", certs)
            assert fresh.core.incarnation > old_inc  # from its state file
            assert fresh.core.link_view()["l1:2-s1:1"] is True  # it starts from the file
            ds["l3"] = fresh
            await fresh.start()
            await async_wait_until(lambda: not fresh.core.link_view()["l1:2-s1:1"],
                                   "the restarted daemon learns the failure by resync")
            await async_wait_until(lambda: agree(ds.values()), "everyone agrees")
            s1 = ds["s1"].core.peers.peers["l3"]
            assert s1.incarnation == fresh.core.incarnation and s1.joins == 2
        finally:
            await stop_all(ds)

    run(scenario())


def test_peer_down_detected_and_metrics_served(certs):
    fab = loopback_fabric(2, 2, 1, 1)

    async def scenario():
        ds = await started(fab, certs)
        try:
            await async_wait_until(lambda: all_peers_up(ds.values()), "sessions up")
            await async_wait_until(lambda: ds["l1"].transport.sent["hello"] >= 3, "keepalives")
            status, body = await http_get(ds["l1"].metrics_port)
            assert status == "HTTP/1.1 200 OK"
            m = parse(body)
            me = ("switch", "l1")
            assert m["syncmesh_peers_up", frozenset({me})] == 2
            assert m["syncmesh_link_up", frozenset({me, ("link", "l1:2-s1:1")})] == 1
            assert m["syncmesh_messages_sent_total", frozenset({me, ("type", "hello")})] >= 3
            assert m["syncmesh_sessions_total", frozenset({me, ("peer", "s1")})] == 1
            status, _ = await http_get(ds["l1"].metrics_port, "/other")
            assert status.startswith("HTTP/1.1 404")
            await ds.pop("s2").stop()
            await async_wait_until(lambda: ds["l1"].core.peers.up() == ["s1"], "l1 sees s2 down")
            m = parse((await http_get(ds["l1"].metrics_port))[1])
            assert m["syncmesh_peer_up", frozenset({me, ("peer", "s2")})] == 0
            t0 = time.time()
            ds["l2"].port_status({2: False})
            await async_wait_until(lambda: ds["l1"].core.stats.convergence, "a convergence sample")
            m = parse((await http_get(ds["l1"].metrics_port))[1])
            assert m["syncmesh_convergence_seconds_count", frozenset({me})] == 1
            assert m["syncmesh_failovers_total", frozenset({me})] == 1
            changed = m["syncmesh_link_changed_seconds", frozenset({me, ("link", "l2:2-s1:2")})]
            assert t0 <= changed <= time.time()
        finally:
            await stop_all(ds)

    run(scenario())


def test_every_log_line_names_the_switch(certs):
    fab = loopback_fabric(2, 1, 1, 1)
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record):
            lines.append(self.format(record))

    handler = Collect()
    handler.setFormatter(LogfmtFormatter())
    logger = logging.getLogger("syncmesh")
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.INFO)

    async def scenario():
        ds = await started(fab, certs)
        try:
            await async_wait_until(lambda: all_peers_up(ds.values()), "sessions up")
            ds["l1"].port_status({2: False})
            await async_wait_until(lambda: agree(ds.values()) and not ds["l2"].core.link_view()[
                "l1:2-s1:1"], "agreement")
        finally:
            await stop_all(ds)

    try:
        run(scenario())
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
    assert any("event=port_down" in ln and "switch=l1" in ln for ln in lines)
    assert any("event=peer_up" in ln for ln in lines)
    for ln in lines:
        assert " switch=" in ln and " switch=- " not in ln, ln


def test_a_stalled_event_loop_does_not_take_peers_down(certs):
    """The loop of every daemon is blocked for 3 dead intervals: afterwards no session was
    declared dead or rejoined (gRPC's own keepalives answered meanwhile)."""
    fab = loopback_fabric(2, 2, 1, 1)

    async def scenario():
        ds = await started(fab, certs)
        try:
            await async_wait_until(lambda: all_peers_up(ds.values()), "sessions up")
            joins = {n: {p.name: p.joins for p in d.core.peers.peers.values()}
                     for n, d in ds.items()}
            time.sleep(3 * ds["l1"].core.config.dead_interval)  # noqa: ASYNC251 - the stall
            await asyncio.sleep(1.0)  # several keepalive intervals after it
            assert all(d.core.stats.stalls >= 1 for d in ds.values())
            assert all_peers_up(ds.values())
            assert {n: {p.name: p.joins for p in d.core.peers.peers.values()}
                    for n, d in ds.items()} == joins
        finally:
            await stop_all(ds)

    run(scenario())


def test_seeded_flaps_double_cuts_and_a_restart_converge_to_the_truth(certs):
    fab = loopback_fabric(4, 2, 1, 1)
    rng = random.Random(2024)

    async def scenario():
        ds = await started(fab, certs)
        truth = {}
        try:
            await async_wait_until(lambda: all_peers_up(ds.values()), "sessions up")
            for step in range(12):
                # one to three link ends change at once, on one leaf
                leaf = rng.choice(fab.leaves).name
                ups = [lk for lk in fab.links if lk.leaf.switch == leaf]
                changes = {lk.leaf.port: rng.random() < 0.4
                           for lk in rng.sample(ups, rng.randint(1, len(ups)))}
                ds[leaf].port_status(changes)
                truth.update({(leaf, p): up for p, up in changes.items()})
                if step == 5:  # a spine daemon restarts in the middle of it
                    await ds["s2"].stop()
                    ds["s2"] = make_daemon(fab, "s2", certs)
                    await ds["s2"].start()
                await asyncio.sleep(rng.random() * 0.05)
            expected = {lk.name: truth.get((lk.leaf.switch, lk.leaf.port), True)
                        for lk in fab.links}
            await async_wait_until(lambda: all(d.core.link_view() == expected
                                               for d in ds.values()),
                                   "every daemon holds the final truth")
        finally:
            await stop_all(ds)

    run(scenario())
