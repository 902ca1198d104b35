"""``syncmesh run`` stops cleanly on SIGTERM in every state a daemon can be in: resumed
after SIGSTOP/SIGCONT, with TLS handshakes in flight, with its peers gone.

Each state is reached ROUNDS times by a fresh process (leaf l2 of a 2x2 fabric whose
other daemons run in the test) while a busy process runs on every core. A clean stop
is exit status 0 with the daemon's ``stopped`` line logged; the process must end by
itself (the wait's ceiling only keeps a hung one from hanging the suite). The bound on
how long it takes is the daemon's own (``daemon.STOP_GRACE``, ``sessions.WRITE_GRACE``).
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sm_net import loopback_fabric, make_daemon
from syncmesh import certs

from fabricmodel import dump
from testsupport import CpuHogs, async_wait_until, stop_processes, terminate

ROUNDS = 20
SPINES = ("s1", "s2")


@pytest.fixture
def busy_cores():
    with CpuHogs():
        yield


@pytest.fixture
def fabric(tmp_path):
    fab = loopback_fabric(2, 2, 1, 1)
    dump(fab, tmp_path / "fabric.yaml")
    certs.generate(fab, tmp_path / "certs")
    return fab


class Leaf:
    """Processes of ``syncmesh run <fabric> l2``, one per round, each with its own log."""

    def __init__(self, tmp_path: Path):
        self.tmp = tmp_path
        self.procs: list[subprocess.Popen[str]] = []
        self.log = tmp_path / "l2.log"

    def start(self) -> subprocess.Popen[str]:
        self.log = self.tmp / f"l2-{len(self.procs)}.log"
        with open(self.log, "w") as err:
            self.procs.append(subprocess.Popen(
                [sys.executable, "-m", "syncmesh.cli", "run", str(self.tmp / "fabric.yaml"),
                 "l2", "--metrics", "off", "--keepalive", "0.1", "--dead-interval", "0.6",
                 "--certs", str(self.tmp / "certs"), "--state-dir", str(self.tmp / "state")],
                stderr=err, text=True))
        return self.procs[-1]

    def logged(self, *words: str) -> bool:
        return any(all(w in ln for w in words) for ln in self.log.read_text().splitlines())

    async def stop_cleanly(self, proc: subprocess.Popen[str]) -> None:
        code = await asyncio.to_thread(terminate, proc)
        tail = self.log.read_text().splitlines()[-8:]
        assert code == 0, f"round {len(self.procs)}: exit status {code}; log ends: {tail}"
        assert self.logged("event=stopped"), tail


def joined(spines, incarnation: dict[str, int]) -> bool:
    """Every spine has a session with an l2 newer than the one it knew."""
    for s in spines:
        peer = s.core.peers.peers["l2"]
        if "l2" not in s.core.peers.up() or peer.incarnation == incarnation.get(s.name):
            return False
    incarnation.update({s.name: s.core.peers.peers["l2"].incarnation for s in spines})
    return True


async def start_daemons(fab, cert_dir: Path, names) -> dict:
    ds = {n: make_daemon(fab, n, cert_dir) for n in names}
    for d in ds.values():
        await d.start()
    return ds


def test_sigterm_after_sigstop_and_sigcont(fabric, tmp_path, busy_cores):
    """Paused until both spines drop it, resumed, SIGTERMed at once (odd rounds) or once it
    has rejoined (even rounds): the failure of issue 27 (cancellation swallowed)."""
    leaf = Leaf(tmp_path)

    async def scenario():
        ds = await start_daemons(fabric, tmp_path / "certs", ("l1", *SPINES))
        spines = [ds[s] for s in SPINES]
        seen: dict[str, int] = {}
        try:
            for i in range(ROUNDS):
                proc = leaf.start()
                await async_wait_until(lambda: joined(spines, seen), "l2 joined", timeout=60)
                proc.send_signal(signal.SIGSTOP)
                try:
                    await async_wait_until(
                        lambda: not any("l2" in s.core.peers.up() for s in spines),
                        "the spines find the paused l2 silent", timeout=60)
                finally:
                    proc.send_signal(signal.SIGCONT)
                if i % 2 == 0:
                    await async_wait_until(lambda: joined(spines, {}), "l2 rejoined",
                                           timeout=60)
                await leaf.stop_cleanly(proc)
        finally:
            for d in ds.values():
                await d.stop()

    try:
        asyncio.run(scenario())
    finally:
        stop_processes(leaf.procs)


def test_sigterm_with_handshakes_in_flight(fabric, tmp_path, busy_cores):
    """The spines' addresses accept connections and read the TLS ClientHello but never
    answer: l2 is stopped with both handshakes open."""
    leaf = Leaf(tmp_path)
    hellos: dict[str, int] = {}

    def silent(name):
        async def handle(reader, writer):
            hellos[name] = hellos.get(name, 0) + len(await reader.read(1))
            await reader.read()  # until l2 closes the connection
            writer.close()
        return handle

    async def scenario():
        servers = []
        for name in SPINES:
            host, port = fabric.switch(name).syncmesh.rsplit(":", 1)
            servers.append(await asyncio.start_server(silent(name), host, int(port)))
        try:
            for _ in range(ROUNDS):
                hellos.clear()
                proc = leaf.start()
                await async_wait_until(lambda: all(hellos.get(s) for s in SPINES),
                                       "l2 started a handshake with both spines", timeout=60)
                await leaf.stop_cleanly(proc)
        finally:
            for server in servers:
                server.close()

    try:
        asyncio.run(scenario())
    finally:
        stop_processes(leaf.procs)


def test_sigterm_with_peers_gone(fabric, tmp_path, busy_cores):
    """Both spines stop while l2 has sessions with them; l2, dialling them again, is
    stopped once it has logged both sessions' end."""
    leaf = Leaf(tmp_path)

    async def scenario():
        ds = await start_daemons(fabric, tmp_path / "certs", ("l1",))
        seen: dict[str, int] = {}
        try:
            for _ in range(ROUNDS):
                spines = await start_daemons(fabric, tmp_path / "certs", SPINES)
                proc = leaf.start()
                try:
                    await async_wait_until(lambda sp=spines: joined(sp.values(), seen), "l2 joined",
                                           timeout=60)
                finally:
                    for d in spines.values():
                        await d.stop()
                await async_wait_until(
                    lambda: all(leaf.logged("event=session_closed", f"peer={s} ")
                                for s in SPINES), "l2 saw both sessions end", timeout=60)
                await leaf.stop_cleanly(proc)
        finally:
            for d in ds.values():
                await d.stop()

    try:
        asyncio.run(scenario())
    finally:
        stop_processes(leaf.procs)
