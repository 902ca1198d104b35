"""Real SyncMesh daemons over gRPC on loopback: sessions, profiles, notices, auth, resync, metrics."""

import asyncio
import logging
import random

import grpc
import pytest
from sm_net import TOKEN, agree, http_get, loopback_fabric, make_daemon
from syncmesh import wire
from syncmesh.linkstate import PortState, Version
from syncmesh.logs import LogfmtFormatter
from syncmesh.messages import Hello, LinkNotice
from syncmesh.metrics import parse
from syncmesh.service import PeerChannel
from syncmesh.switchops import RemoteCongestion
from testsupport import async_wait_until


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def started(fab, names=None):
    daemons = {n: make_daemon(fab, n) for n in (names or [s.name for s in fab.switches])}
    for d in daemons.values():
        await d.start()
    return daemons


async def stop_all(daemons):
    for d in daemons.values():
        await d.stop()


def all_peers_up(daemons):
    return all(len(d.core.peers.up()) == len(d.core.peer_names) for d in daemons.values())


def test_daemons_exchange_profiles_and_notices():
    fab = loopback_fabric(2, 2, 1, 2)  # l1 l2 s1 s2, hosts with 2 rails

    async def scenario():
        ds = await started(fab)
        try:
            await async_wait_until(lambda: all_peers_up(ds), "all peer sessions up")
            # s1 sees 60 Mbit/s toward l2 (port 2) on a 100 Mbit/s link: level 4 of 0..7
            s1 = ds["s1"]
            s1.counters({1: 0, 2: 0})
            s1.core.meter._last = {p: (b, t - 1.0) for p, (b, t) in s1.core.meter._last.items()}
            s1.counters({1: 0, 2: 7_500_000})
            l1 = ds["l1"]

            def remote(d, dst, idx):
                return d.core.programmed[RemoteCongestion(dst, idx, 0).key].level
            await async_wait_until(lambda: remote(l1, 2, 0) == 4, "l1 learns s1's congestion to l2")
            assert remote(l1, 2, 1) == 0  # the path through s2 is untouched
            # a leaf-spine link fails at l2's end: every daemon learns it
            ds["l2"].port_status({3: False})  # l2:3 is its link to s2 (port 2 = s1, 3 = s2)
            await async_wait_until(lambda: not ds["l1"].core.link_view()["l2:3-s2:2"],
                             "l1 learns l2-s2 down")
            await async_wait_until(lambda: agree(ds.values()), "all daemons agree")
            assert not l1.core.programmed["path", 2, 1].live
            assert l1.core.programmed["path", 2, 0].live
            assert l1.core.stats.failovers == 1
            ds["l2"].port_status({3: True})
            await async_wait_until(lambda: all(all(d.core.link_view().values()) for d in ds.values()),
                             "recovery reaches everyone")
        finally:
            await stop_all(ds)

    run(scenario())


def test_bad_messages_are_rejected_logged_and_change_nothing(caplog):
    fab = loopback_fabric(2, 2, 1, 1)

    async def scenario():
        ds = await started(fab, ["l1"])
        l1 = ds["l1"]
        addr = fab.switch("l1").syncmesh
        before = (l1.core.links.snapshot(), dict(l1.core.programmed))
        good = LinkNotice("s1", (PortState("l2", 2, False, Version(5, 1), 1.0),))
        try:
            wrong = PeerChannel(addr, "not-the-token")
            with pytest.raises(grpc.aio.AioRpcError) as ei:
                await wrong.call("Notify", wire.encode(good))
            assert ei.value.code() == grpc.StatusCode.UNAUTHENTICATED
            await wrong.close()
            ok = PeerChannel(addr, TOKEN)
            for payload, words in [(b"\x0a\xff\xff", "malformed"),
                                   (wire.encode(LinkNotice("s1", ())), "empty notice"),
                                   (wire.encode(LinkNotice("zz", good.states)), "unknown switch"),
                                   (wire.encode(Hello("s1", 0, 1)), "must be positive")]:
                method = "SayHello" if words == "must be positive" else "Notify"
                with pytest.raises(grpc.aio.AioRpcError) as ei:
                    await ok.call(method, payload)
                assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert words in ei.value.details()
            # without metadata at all
            channel = grpc.aio.insecure_channel(addr)
            with pytest.raises(grpc.aio.AioRpcError) as ei:
                await channel.unary_unary("/syncmesh.v1.SyncMesh/Notify")(wire.encode(good))
            assert ei.value.code() == grpc.StatusCode.UNAUTHENTICATED
            await channel.close()
            assert (l1.core.links.snapshot(), dict(l1.core.programmed)) == before
            assert l1.transport.rejected == {"unauthenticated": 2, "malformed": 1, "invalid": 3}
            # the good message from a real peer name is accepted
            assert wire.decode_ack(await ok.call("Notify", wire.encode(good))) is True
            await ok.close()
            assert not l1.core.link_view()["l2:2-s1:2"]
        finally:
            await stop_all(ds)

    with caplog.at_level(logging.WARNING, logger="syncmesh"):
        run(scenario())
    rejected = [r for r in caplog.records if getattr(r, "event", "") == "rejected"]
    assert len(rejected) == 6
    assert {r.fields["reason"] for r in rejected} == {"unauthenticated", "malformed", "invalid"}
    assert all(r.switch == "l1" for r in rejected)


def test_restarted_daemon_resyncs_what_it_missed():
    fab = loopback_fabric(3, 2, 1, 1)

    async def scenario():
        ds = await started(fab)
        try:
            await async_wait_until(lambda: all_peers_up(ds), "sessions up")
            old_inc = ds["l3"].core.incarnation
            await ds["l3"].stop()
            # while l3's daemon is gone, a link elsewhere fails
            ds["l1"].port_status({2: False})
            others = [d for n, d in ds.items() if n != "l3"]
            await async_wait_until(lambda: agree(others), "the live daemons agree")
            fresh = make_daemon(fab, "l3")
            assert fresh.core.incarnation > old_inc
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


def test_peer_down_detected_and_metrics_served():
    fab = loopback_fabric(2, 2, 1, 1)

    async def scenario():
        ds = await started(fab)
        try:
            await async_wait_until(lambda: all_peers_up(ds), "sessions up")
            ds["s1"].counters({1: 0, 2: 0})
            await async_wait_until(lambda: ds["l1"].transport.sent["hello"] >= 1, "l1 sent a hello")
            status, body = await http_get(ds["l1"].metrics_port)
            assert status == "HTTP/1.1 200 OK"
            m = parse(body)
            assert m["syncmesh_peers_up", frozenset({("switch", "l1")})] == 2
            assert m["syncmesh_link_up", frozenset({("switch", "l1"),
                                                    ("link", "l1:2-s1:1")})] == 1
            assert m["syncmesh_messages_sent_total",
                     frozenset({("switch", "l1"), ("type", "hello")})] >= 1
            status, _ = await http_get(ds["l1"].metrics_port, "/other")
            assert status.startswith("HTTP/1.1 404")
            await ds.pop("s2").stop()
            await async_wait_until(lambda: ds["l1"].core.peers.up() == ["s1"], "l1 sees s2 down")
            m = parse((await http_get(ds["l1"].metrics_port))[1])
            assert m["syncmesh_peer_up", frozenset({("switch", "l1"), ("peer", "s2")})] == 0
            ds["l2"].port_status({2: False})
            await async_wait_until(lambda: ds["l1"].core.stats.convergence, "a convergence sample")
            m = parse((await http_get(ds["l1"].metrics_port))[1])
            assert m["syncmesh_convergence_seconds_count", frozenset({("switch", "l1")})] == 1
            assert m["syncmesh_failovers_total", frozenset({("switch", "l1")})] == 1
        finally:
            await stop_all(ds)

    run(scenario())


def test_every_log_line_names_the_switch():
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
        ds = await started(fab)
        try:
            await async_wait_until(lambda: all_peers_up(ds), "sessions up")
            ds["l1"].port_status({2: False})
            await async_wait_until(lambda: agree(ds.values()), "agreement")
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


def test_seeded_flaps_double_cuts_and_a_restart_converge_to_the_truth():
    fab = loopback_fabric(4, 2, 1, 1)
    rng = random.Random(2024)

    async def scenario():
        ds = await started(fab)
        truth = {}
        try:
            await async_wait_until(lambda: all_peers_up(ds), "sessions up")
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
                    ds["s2"] = make_daemon(fab, "s2")
                    await ds["s2"].start()
                await asyncio.sleep(rng.random() * 0.05)
            expected = {lk.name: truth.get((lk.leaf.switch, lk.leaf.port), True)
                        for lk in fab.links}
            await async_wait_until(lambda: all(d.core.link_view() == expected for d in ds.values()),
                             "every daemon holds the final truth")
        finally:
            await stop_all(ds)

    run(scenario())
