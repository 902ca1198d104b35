"""The testbed's UDP load generator (``topologies.udpload``) stops cleanly on SIGTERM in
every state: a receiver waiting for its end time, a sender and a receiver exchanging
datagrams (after SIGSTOP/SIGCONT), each with its peer gone.

A clean stop writes the process's datagram log (.npz) and exits 0; the process must end
by itself (the wait's ceiling only keeps a hung one from hanging the suite). ROUNDS
rounds of each state on loopback while a busy process runs on every core.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from testsupport import CpuHogs, free_port, stop_processes, terminate

ROUNDS = 20
REPO = Path(__file__).resolve().parents[2]
CMD = [sys.executable, "-m", "topologies.udpload"]


@pytest.fixture
def busy_cores():
    with CpuHogs():
        yield


class Receiver:
    """``udpload recv`` on 127.0.0.1, its progress lines read as they come."""

    def __init__(self, out: Path, port: int, *extra: str) -> None:
        self.out = out
        self.proc = subprocess.Popen(
            [*CMD, "recv", "--listen", "127.0.0.1", "--port", str(port), "--report", "0.05",
             "--out", str(out), *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, cwd=REPO)
        self.ready, self.receiving, self.done = (threading.Event() for _ in range(3))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            rec = json.loads(line)
            self.ready.set()
            if rec.get("pkts"):
                self.receiving.set()
            if rec.get("done"):
                self.done.set()

    def stopped_cleanly(self) -> None:
        assert terminate(self.proc) == 0
        assert self.done.wait(30), "no final line"
        assert "recv_ns" in np.load(self.out).files


def sender(out: Path, port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*CMD, "send", "--flow", "1", "--src", "127.0.0.1", "--ifaces", "lo", "--dst",
         "127.0.0.1", "--port", str(port), "--rate-mbps", "20", "--duration", "3600",
         "--out", str(out)], cwd=REPO)


def test_receiver_waiting_for_its_end_time(tmp_path, busy_cores):
    """``--end-on-stdin``: the driver never sends the end time (a plain readline used to
    resume after the signal handler, so SIGTERM waited for a line that never came)."""
    procs = []
    try:
        for i in range(ROUNDS):
            rx = Receiver(tmp_path / f"recv-{i}.npz", free_port(), "--end-on-stdin")
            procs.append(rx.proc)
            assert rx.ready.wait(60), "the receiver never said it was ready"
            rx.stopped_cleanly()
    finally:
        stop_processes(procs, signal.SIGKILL)


def test_sender_and_receiver_paused_then_each_with_its_peer_gone(tmp_path, busy_cores):
    """Datagrams flowing; both paused and continued; then in odd rounds the sender is
    stopped first (the receiver then has no peer), in even rounds the receiver is killed
    first (the sender then sends to nobody)."""
    procs: list[subprocess.Popen] = []
    try:
        for i in range(ROUNDS):
            port = free_port()
            rx = Receiver(tmp_path / f"recv-{i}.npz", port, "--duration", "3600")
            tx = sender(tmp_path / f"send-{i}.npz", port)
            procs += [rx.proc, tx]
            assert rx.receiving.wait(60), "no datagram arrived"
            for p in (tx, rx.proc):
                p.send_signal(signal.SIGSTOP)
            for p in (tx, rx.proc):
                p.send_signal(signal.SIGCONT)
            if i % 2:
                assert terminate(tx) == 0
                rx.stopped_cleanly()
            else:
                rx.proc.kill()
                rx.proc.wait()
                assert terminate(tx) == 0
            assert "send_ns" in np.load(tmp_path / f"send-{i}.npz").files
    finally:
        stop_processes(procs, signal.SIGKILL)
