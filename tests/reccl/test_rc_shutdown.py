"""A ReCCL rank (the testbed's ``topologies.reccl_job``) ends on SIGTERM in every state:
running collectives, resumed after SIGSTOP/SIGCONT, with its peer gone, with its
rendezvous handshake in flight.

A rank keeps SIGTERM's default action: the process ends at once, whatever its threads
do, and ``reccl-run`` reads the signal from the exit status (-SIGTERM) to tell a rank it
stopped from the one that failed. So a clean end here is that status, reached by
itself (the wait's ceiling only keeps a hung rank from hanging the suite), never a
handler that waits for a collective. ROUNDS rounds of each state, a busy process per
core running.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from reccl.auth import ENV, new_secret
from testsupport import CpuHogs, free_port, stop_processes, terminate, wait_until

ROUNDS = 20
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def busy_cores():
    with CpuHogs():
        yield


class Ranks:
    """Rank processes of two-rank jobs on loopback (one pretend host each)."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[str]] = []
        self.ops: dict[int, threading.Event] = {}
        self.secret = new_secret()

    def start(self, rank: int, store: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "topologies.reccl_job", "--rank", str(rank), "--world", "2",
             "--store", store, "--host", f"host{rank}", "--nics", f"127.1.{rank}.1",
             "--elements", "1024", "--duration", "3600"],
            stdout=subprocess.PIPE, text=True, cwd=REPO, env={**os.environ, ENV: self.secret})
        self.procs.append(proc)
        done = self.ops[proc.pid] = threading.Event()
        threading.Thread(target=self._watch, args=(proc, done), daemon=True).start()
        return proc

    @staticmethod
    def _watch(proc: subprocess.Popen[str], done: threading.Event) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:  # reading on also keeps a chatty rank from blocking
            if line.startswith('{"t"') and "op" in json.loads(line):
                done.set()

    def job(self) -> tuple[subprocess.Popen[str], subprocess.Popen[str]]:
        """Both ranks, once each has finished a collective."""
        self.secret = new_secret()
        store = f"127.1.0.1:{free_port()}"
        pair = self.start(0, store), self.start(1, store)
        for p in pair:
            assert self.ops[p.pid].wait(120), f"rank {pair.index(p)} ran no collective"
        return pair


@pytest.fixture
def ranks():
    r = Ranks()
    yield r
    stop_processes(r.procs, signal.SIGKILL)


def ended_by_sigterm(proc: subprocess.Popen[str]) -> None:
    code = terminate(proc)
    assert code == -signal.SIGTERM, f"exit status {code}"


def test_sigterm_while_running_collectives_then_with_the_peer_gone(ranks, busy_cores):
    """Rank 1 is stopped in the middle of the job; then rank 0, whose peer is gone."""
    for _ in range(ROUNDS):
        first, second = ranks.job()
        ended_by_sigterm(second)
        ended_by_sigterm(first)


def test_sigterm_after_sigstop_and_sigcont(ranks, busy_cores):
    """Rank 1 paused and continued (rank 0 meanwhile waits for it), then both stopped."""
    for _ in range(ROUNDS):
        first, second = ranks.job()
        second.send_signal(signal.SIGSTOP)
        second.send_signal(signal.SIGCONT)
        ended_by_sigterm(second)
        ended_by_sigterm(first)


def test_sigterm_with_the_rendezvous_in_flight(ranks, busy_cores):
    """Rank 1's store accepts its connection and never answers."""
    ranks.secret = new_secret()

    async def scenario():
        accepted = asyncio.Event()

        async def silent(reader, writer):
            accepted.set()
            await reader.read()
            writer.close()

        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        store = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
        try:
            for _ in range(ROUNDS):
                accepted.clear()
                proc = ranks.start(1, store)
                await asyncio.wait_for(accepted.wait(), 120)
                code = await asyncio.to_thread(terminate, proc)
                assert code == -signal.SIGTERM, f"exit status {code}"
        finally:
            server.close()

    asyncio.run(scenario())


def test_the_launchers_sigterm_handler_only_sets_a_flag_its_wait_loop_acts_on():
    """An exception raised from the handler lands wherever the launcher is; inside
    Popen.poll() it once left the waitpid lock held and the clean-up's wait() hung (a loaded
    suite run). So the handler raises nothing, and the wait loop stops at its next turn."""
    from reccl import launch

    before = signal.getsignal(signal.SIGTERM)
    rank = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        launch._SigTerm.received = False
        launch._on_sigterm(signal.SIGTERM, None)  # must return, not raise
        assert launch._SigTerm.received
        with pytest.raises(launch._Terminated):
            launch._wait([rank], None)
        launch._kill(rank)  # the clean-up's wait: the lock is free
        assert rank.returncode == -signal.SIGTERM
    finally:
        signal.signal(signal.SIGTERM, before)
        launch._SigTerm.received = False
        if rank.poll() is None:
            rank.kill()
            rank.wait()


def test_launcher_stops_its_ranks_on_sigterm(tmp_path, busy_cores):
    """``reccl-run`` SIGTERMed as its second rank starts (odd rounds: the launcher paused
    and continued first, and one rank paused): it stops both and exits 143 (its ranks are
    in sessions of their own, so the default action left them running, and a SIGTERM
    inside the second rank's Popen left that one running)."""
    rank = "echo $$ > {}/$RECCL_RANK.pid; exec sleep 3600"
    for i in range(ROUNDS):
        pids = tmp_path / f"round{i}"
        pids.mkdir()
        proc = subprocess.Popen([sys.executable, "-m", "reccl.launch", "--nproc-per-host", "2",
                                 "--", "sh", "-c", rank.format(pids)], cwd=REPO,
                                stderr=subprocess.DEVNULL)
        try:
            wait_until(lambda d=pids: all((d / f"{r}.pid").read_text().strip()
                                          if (d / f"{r}.pid").exists() else ""
                                          for r in range(2)), "both ranks run", timeout=60)
            ranks_pids = [int((pids / f"{r}.pid").read_text()) for r in range(2)]
            if i % 2:
                proc.send_signal(signal.SIGSTOP)
                proc.send_signal(signal.SIGCONT)
                os.kill(ranks_pids[0], signal.SIGSTOP)
            assert terminate(proc) == 128 + signal.SIGTERM
            for pid in ranks_pids:
                with pytest.raises(ProcessLookupError):
                    os.kill(pid, 0)
        finally:
            stop_processes([proc], signal.SIGKILL)
