"""Real daemons on loopback with real TLS, attacked by a member that holds its own valid
certificate: forged link states and profiles, replayed and future incarnations, oversize and
unauthenticated messages (bounded memory), a large resync (the event loop keeps serving)."""

import asyncio
import logging
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from sm_net import TOKEN, RawPeer, agree, all_peers_up, fabric_certs, loopback_fabric, make_daemon
from syncmesh import wire
from syncmesh.certs import TlsFiles
from syncmesh.config import CoreConfig
from syncmesh.incarnation import IncarnationFile, from_clock
from syncmesh.linkstate import PortState, Version
from syncmesh.messages import Hello, LinkNotice, ProfileUpdate, ResyncChunk
from syncmesh.metrics import parse
from syncmesh.profiles import Profile
from syncmesh.service import Insecure, PeerChannel

from fabricmodel import dump
from testsupport import async_wait_until, stop_process, wait_until

REPO = Path(__file__).resolve().parents[2]


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 90))


def now_inc() -> int:
    return from_clock(time.time())


async def opened(raw: RawPeer, incarnation: int) -> None:
    """Say Hello and read the daemon's own Hello."""
    await raw.send(Hello(incarnation, 1))
    assert isinstance(await raw.recv(), Hello)


def rejected(daemon, reason: str, peer: str) -> int:
    return daemon.transport.rejected_by_peer[peer, reason]


def test_a_member_cannot_speak_for_another_switch(tmp_path, caplog):
    fab = loopback_fabric(2, 2, 1, 1)  # l1 l2 s1 s2; l1 is the attacker (its own certificate)
    certs = fabric_certs(fab, tmp_path / "certs")

    async def scenario():
        ds = {n: make_daemon(fab, n, certs) for n in ("l2", "s1", "s2")}
        for d in ds.values():
            await d.start()
        s1, l2 = ds["s1"], ds["l2"]
        try:
            await async_wait_until(lambda: len(s1.core.peers.up()) == 1, "l2-s1 up")
            before = s1.core.links.snapshot()
            raw = RawPeer(fab, "s1", "l1", TlsFiles.in_dir(certs, "l1"))
            inc = now_inc()
            await opened(raw, inc)
            biggest = Version(inc, 2**64 - 1)
            # l2's end of l2-s1 down, s1's own port down, a profile: all claims of others
            await raw.send(LinkNotice((PortState("l2", 2, False, biggest, time.time()),)))
            await raw.send(LinkNotice((PortState("s1", 2, False, biggest, time.time()),)))
            await raw.send(ProfileUpdate(Profile("l1", Version(inc, 1), 3, ((2, 7),))))
            # its own end with a forged future incarnation
            await raw.send(LinkNotice((PortState("l1", 2, False, Version(2**64 - 1, 1), 1.0),)))
            await async_wait_until(lambda: rejected(s1, "forged", "l1") == 3
                                   and rejected(s1, "incarnation", "l1") == 1, "refusals")
            assert s1.core.links.snapshot() == before and agree(ds.values())
            m = parse(s1.metrics_page())
            assert m["syncmesh_rejected_total", frozenset({("switch", "s1"),
                                                           ("reason", "forged")})] == 3
            assert m["syncmesh_rejected_by_peer_total", frozenset(
                {("switch", "s1"), ("peer", "l1"), ("reason", "forged")})] == 3
            # l2's real changes still go through, and survive l2's restart
            l2.port_status({2: False})
            await async_wait_until(lambda: not ds["s2"].core.link_view()["l2:2-s1:2"],
                                   "l2's real failure reaches s2 (through s1 and itself)")
            l2.port_status({2: True})
            await async_wait_until(lambda: all(d.core.link_view()["l2:2-s1:2"]
                                               for d in ds.values()), "and its recovery")
            await l2.stop()
            ds["l2"] = make_daemon(fab, "l2", certs)
            await ds["l2"].start()
            await async_wait_until(lambda: all_peers_up([ds["l2"]]), "l2 back")
            assert all(all(d.core.link_view().values()) for d in ds.values())
            await raw.close()
        finally:
            for d in ds.values():
                await d.stop()

    with caplog.at_level(logging.DEBUG, logger="syncmesh"):
        run(scenario())
    warned = [r for r in caplog.records if getattr(r, "event", "") == "rejected"
              and r.levelno == logging.WARNING]
    assert [(r.switch, r.fields["peer"]) for r in warned] == [("s1", "l1")]  # once per peer


def test_a_spine_speaks_only_for_its_own_profile(tmp_path):
    """s2 (its own certificate) sends l1 a profile: it counts as s2's, never as s1's; one
    claiming a version beyond s2's session is refused."""
    fab = loopback_fabric(2, 2, 1, 1)
    certs = fabric_certs(fab, tmp_path / "certs")

    async def scenario():
        l1 = make_daemon(fab, "l1", certs)
        s1 = make_daemon(fab, "s1", certs)
        await l1.start()
        await s1.start()
        try:
            await async_wait_until(lambda: l1.core.peers.up() == ["s1"], "l1-s1 up")
            s1.counters({1: 0, 2: 0})
            s1.core.meter._last = {p: (b, t - 1.0) for p, (b, t) in s1.core.meter._last.items()}
            s1.counters({1: 0, 2: 0})  # s1 measures its links idle
            level = lambda dst, path: l1.core.programmed["congestion", dst, path].level  # noqa: E731
            await async_wait_until(lambda: level(2, 0) == 0, "s1's real profile")
            raw = RawPeer(fab, "l1", "s2", TlsFiles.in_dir(certs, "s2"))
            inc = now_inc()
            await opened(raw, inc)
            await raw.send(ProfileUpdate(Profile("s2", Version(2**64 - 1, 2**64 - 1), 3,
                                                 ((2, 7),))))
            await raw.send(ProfileUpdate(Profile("s2", Version(inc, 1), 3, ((2, 5),))))
            await async_wait_until(lambda: level(2, 1) == 5, "s2's own profile is taken")
            assert rejected(l1, "incarnation", "s2") == 1
            assert level(2, 0) == 0  # s1's paths keep s1's levels
            assert l1.core.store.get("s1").version.incarnation == s1.core.incarnation
            await raw.close()
        finally:
            await l1.stop()
            await s1.stop()

    run(scenario())


def test_replayed_and_future_incarnations_are_refused(tmp_path):
    fab = loopback_fabric(1, 1, 1, 1)
    certs = fabric_certs(fab, tmp_path / "certs")
    l1_files = TlsFiles.in_dir(certs, "l1")

    async def scenario():
        s1 = make_daemon(fab, "s1", certs)
        await s1.start()
        try:
            raw = RawPeer(fab, "s1", "l1", l1_files)
            assert isinstance(await raw.recv(), Hello)
            skew = s1.core.config.max_skew
            for inc in (2**64 - 1, from_clock(time.time() + 2 * skew)):
                await raw.send(Hello(inc, 1))  # from the future: refused, no session
            await async_wait_until(lambda: rejected(s1, "incarnation", "l1") == 2, "future")
            assert s1.core.peers.up() == [] and s1.core.peers.peers["l1"].incarnation == 0
            current = now_inc()
            await raw.send(Hello(current, 2))
            await async_wait_until(lambda: s1.core.peers.up() == ["l1"], "a current one opens")
            await raw.close()
            # a new stream that goes back to an older incarnation (a replay) is refused
            replay = RawPeer(fab, "s1", "l1", l1_files)
            await opened(replay, current - 5000)
            await async_wait_until(lambda: rejected(s1, "incarnation", "l1") == 3, "replay")
            assert s1.core.peers.peers["l1"].incarnation == current
            assert "l1" not in s1.core.peers.up()
            await replay.close()
        finally:
            await s1.stop()

    run(scenario())
    # a restarted daemon is always newer, even with its clock stepped back an hour
    state = IncarnationFile(tmp_path / "l1.incarnation")
    first = state.next(time.time())
    assert state.next(time.time() - 3600) == first + 1
    assert state.next(time.time() + 1) > first + 1


def _peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def _attack_channel(address: str, creds, target: str) -> PeerChannel:
    """A client allowed to send 64 MiB (the daemon's limit is what is tested)."""
    return PeerChannel(address, target, creds, 64 << 20)


@pytest.mark.slow
def test_oversize_and_unauthenticated_messages_are_refused_without_being_read(tmp_path):
    """60 MB at a `syncmesh run` process: from a stranger (wrong CA), from a member (over
    the fabric's limit), and, on an --insecure daemon, without the token. The daemon's peak
    RSS does not grow by anything near 60 MB: nothing was read."""
    fab = loopback_fabric(1, 1, 1, 1)
    path = tmp_path / "fabric.yaml"
    dump(fab, path)
    certs = tmp_path / "certs"
    subprocess.run([sys.executable, "-m", "syncmesh.cli", "certs", "--fabric", str(path),
                    "--out", str(certs)], check=True, capture_output=True, timeout=60)
    strangers = fabric_certs(fab, tmp_path / "strangers")
    big = b"\x12" + b"x" * (60 << 20)
    limit = wire.max_message_bytes(fab)

    def start(name, *args):
        with open(tmp_path / f"{name}.log", "w") as log:
            proc = subprocess.Popen([sys.executable, "-m", "syncmesh.cli", "run", str(path), "s1",
                                     "--metrics", "off", "--state-dir", str(tmp_path / "state"),
                                     *args], stderr=log)
        wait_until(lambda: "event=started" in (tmp_path / f"{name}.log").read_text(),
                   "s1 started", 30)
        return proc

    async def send_big(creds, hello: bool) -> grpc.StatusCode:
        ch = _attack_channel(fab.switch("s1").syncmesh, creds, "s1")
        call = ch.session(wait=False)
        try:
            if hello:
                await call.write(wire.encode(Hello(now_inc(), 1)))
            await call.write(big)
            while (await call.read()) is not grpc.aio.EOF:
                pass
            return grpc.StatusCode.OK
        except grpc.aio.AioRpcError as e:
            return e.code()
        finally:
            await ch.close()

    proc = start("tls", "--certs", str(certs))
    try:
        base = _peak_rss_kib(proc.pid)
        code = asyncio.run(send_big(TlsFiles.in_dir(strangers, "l1"), hello=False))
        assert code == grpc.StatusCode.UNAVAILABLE  # the TLS handshake failed
        code = asyncio.run(send_big(TlsFiles.in_dir(certs, "l1"), hello=True))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED  # over the limit, from its prefix
        assert limit < len(big) // 100
        grown = _peak_rss_kib(proc.pid) - base
        assert grown < 16 << 10, f"peak RSS grew by {grown} KiB"
        assert proc.poll() is None
    finally:
        stop_process(proc)
    proc = start("insecure", "--insecure", "--token-file", str(_token_file(tmp_path)))
    try:
        base = _peak_rss_kib(proc.pid)
        code = asyncio.run(send_big(Insecure("wrong-token", "l1"), hello=False))
        # refused from the metadata (the client sees UNAUTHENTICATED, or INTERNAL when the
        # refusal cuts its write short)
        assert code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.INTERNAL)
        grown = _peak_rss_kib(proc.pid) - base
        assert grown < 16 << 10, f"peak RSS grew by {grown} KiB"
    finally:
        stop_process(proc)
    log = (tmp_path / "insecure.log").read_text()
    assert "event=insecure" in log and "reason=unauthenticated" in log


def _token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    return path


def test_a_large_resync_is_taken_a_chunk_at_a_time_while_timers_run(tmp_path):
    """A spine with 400 links sends a joining leaf 400 records in 25 chunks, all written at
    once; the leaf's event loop runs a 1 ms timer between chunks, and no session drops."""
    fab = loopback_fabric(400, 1, 1, 1)
    certs = fabric_certs(fab, tmp_path / "certs")
    config = CoreConfig(keepalive_interval=0.1, dead_interval=0.6, resync_chunk=16)

    async def scenario():
        l1 = make_daemon(fab, "l1", certs, config)
        await l1.start()
        seen: list[int] = []
        loop = asyncio.get_running_loop()

        def timer():
            seen.append(l1.core.stats.resync_chunks)
            handle[0] = loop.call_later(0.001, timer)
        handle = [loop.call_later(0.001, timer)]
        try:
            raw = RawPeer(fab, "l1", "s1", TlsFiles.in_dir(certs, "s1"))
            inc = now_inc()
            await opened(raw, inc)
            ports = [PortState("s1", p, False, Version(inc, p), time.time())
                     for p in range(1, 401)]
            chunks = [ResyncChunk(tuple(ports[i:i + 16]), None, i + 16 >= 400)
                      for i in range(0, 400, 16)]
            for chunk in chunks:  # one burst: the leaf has them all before it merges any
                await raw.send(chunk)
            await async_wait_until(lambda: l1.core.stats.resync_chunks == len(chunks),
                                   "every chunk merged", timeout=60)
            assert not any(l1.core.link_view().values())
            during = sorted({n for n in seen if 0 < n < len(chunks)})
            assert during, f"no timer ran between the first and the last chunk: {seen[-5:]}"
            assert l1.core.peers.up() == ["s1"] and l1.core.peers.peers["s1"].joins == 1
            await raw.close()
        finally:
            handle[0].cancel()
            await l1.stop()

    run(scenario())
