"""``softswitch run`` stops cleanly on SIGTERM in every state: resumed after SIGSTOP/SIGCONT
with a controller connected, with an HTTP/2 handshake in flight, with a pipeline compile in
flight, with its controller's process gone, and while it loads its program at start.

Each state is reached ROUNDS times by a fresh process while a busy process runs on every
core. A clean stop is exit status 0 with the stop logged; the process must end by itself
(the wait's ceiling only keeps a hung one from hanging the suite): its own bounds are the
server's grace (``P4RuntimeServer.stop``) and handler threads that never hold the process
(``softswitch/p4runtime/handler_threads.py``).
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import grpc
import pytest
from finsy.proto import p4r
from p4rt_client import Client

from softswitch.p4runtime.pipeline_loader import device_config_from_file
from testsupport import CpuHogs, stop_processes, terminate, wait_until

ROUNDS = 20
REPO = Path(__file__).resolve().parents[2]
SGLB = REPO / "p4src" / "sglb.p4"  # its compile takes seconds: long enough to be in flight

# a controller in a process of its own: primary on the stream, then waits to be killed
CONTROLLER = """
import sys, time
sys.path.insert(0, sys.argv[2])
from p4rt_client import Client
c = Client(sys.argv[1])
print(c.connect().arbitration.status.message, flush=True)
time.sleep(3600)
"""


@pytest.fixture
def busy_cores():
    with CpuHogs():
        yield


class Switches:
    """``softswitch run`` processes, one per round, each with its own log."""

    def __init__(self, tmp_path: Path):
        self.tmp = tmp_path
        self.procs: list[subprocess.Popen[bytes]] = []
        self.log = tmp_path / "switch.log"

    def start(self, *program: str, wait: bool = True) -> tuple[subprocess.Popen[bytes], str]:
        n = len(self.procs)
        self.log, ready = self.tmp / f"switch-{n}.log", self.tmp / f"ready-{n}"
        with open(self.log, "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "softswitch.runner", *(program or ["--no-p4"]),
                 "--device-id", "1", "--grpc-addr", "127.0.0.1:0", "--ready-file", str(ready)],
                stderr=log, cwd=REPO)
        self.procs.append(proc)
        if not wait:
            return proc, ""
        wait_until(ready.exists, "the switch serves", timeout=120, check=lambda: self._alive(proc))
        return proc, ready.read_text().strip()

    def _alive(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.poll() is None, self.log.read_text()[-2000:]

    def logged(self, text: str) -> bool:
        return text in self.log.read_text()

    def stop_cleanly(self, proc: subprocess.Popen[bytes], stop_line: str = "streams_open=") -> None:
        code = terminate(proc)
        tail = self.log.read_text().splitlines()[-6:]
        assert code == 0, f"round {len(self.procs)}: exit status {code}; log ends: {tail}"
        assert self.logged(stop_line), tail


@pytest.fixture
def switches(tmp_path):
    sw = Switches(tmp_path)
    yield sw
    stop_processes(sw.procs)


def test_sigterm_after_sigstop_and_sigcont(switches, busy_cores):
    """A primary controller connected; stopped, continued, SIGTERMed at once (odd rounds)
    or once it answers again (even rounds)."""
    for i in range(ROUNDS):
        proc, address = switches.start()
        client = Client(address)
        try:
            assert client.connect().arbitration.status.code == 0
            proc.send_signal(signal.SIGSTOP)
            proc.send_signal(signal.SIGCONT)
            if i % 2 == 0:
                client.stub.Capabilities(p4r.CapabilitiesRequest(), timeout=60)
            switches.stop_cleanly(proc)
        finally:
            client.close()


def test_sigterm_with_a_handshake_in_flight(switches, busy_cores):
    """A client connected and sent half of the HTTP/2 preface, then nothing."""
    for _ in range(ROUNDS):
        proc, address = switches.start()
        host, port = address.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=60) as half:
            half.sendall(b"PRI * HTTP/2.0\r\n")
            switches.stop_cleanly(proc)


def test_sigterm_with_a_compile_in_flight(switches, busy_cores):
    """A SetForwardingPipelineConfig of sglb.p4 is being compiled (issue 27: the stopped
    process waited for the compile, tens of seconds, in the pool's threads)."""
    config = device_config_from_file(SGLB)
    for _ in range(ROUNDS):
        proc, address = switches.start()
        client = Client(address)
        outcome: list[object] = []
        pusher = threading.Thread(target=_push, args=(client, config, outcome), daemon=True)
        try:
            client.connect()
            pusher.start()
            wait_until(lambda: switches.logged("pipeline_compiling"), "the compile started",
                       timeout=60)
            switches.stop_cleanly(proc)
            pusher.join(60)
            assert outcome and outcome[0] != grpc.StatusCode.OK
            # the process did not wait for the compile: nothing of it after the stop's stats
            lines = switches.log.read_text().splitlines()
            stats = max(i for i, ln in enumerate(lines) if "streams_open=" in ln)
            assert not any("rpc=SetForwardingPipelineConfig" in ln for ln in lines[stats:]), \
                lines[stats:]
        finally:
            client.close()


def _push(client: Client, config: bytes, outcome: list[object]) -> None:
    try:
        outcome.append(client.set_pipeline(None, config))
    except grpc.RpcError as e:
        outcome.append(e.code())


def test_sigterm_with_its_controller_gone(switches, busy_cores, tmp_path):
    """The primary controller's process was killed with its stream open."""
    for _ in range(ROUNDS):
        proc, address = switches.start()
        controller = subprocess.Popen(
            [sys.executable, "-c", CONTROLLER, address, str(Path(__file__).parent)],
            stdout=subprocess.PIPE, text=True)
        try:
            assert controller.stdout is not None
            assert controller.stdout.readline().strip() == "is primary"
            controller.kill()
            controller.wait()
            wait_until(lambda: switches.logged("stream_closed"), "the switch saw it go",
                       timeout=60)
            switches.stop_cleanly(proc)
        finally:
            stop_processes([controller], signal.SIGKILL)


def test_sigterm_while_loading_its_program(switches, busy_cores):
    """SIGTERM while ``softswitch run sglb.p4`` compiles its program at start: it gives up
    the start instead of finishing the compile first (should the compile win the race, it
    stops as a serving switch does: both are clean). A SIGTERM that once landed inside a
    module import ended the start with exit status 1: the start now runs in a thread and
    the signal only sets a flag."""
    for _ in range(ROUNDS):
        proc, _ = switches.start(str(SGLB), wait=False)
        wait_until(lambda: switches.logged("pipeline_loading"), "the start compiles",
                   timeout=60, check=lambda p=proc: switches._alive(p))
        code = terminate(proc)
        tail = switches.log.read_text().splitlines()[-6:]
        assert code == 0, f"round {len(switches.procs)}: exit status {code}; log ends: {tail}"
        assert switches.logged("stopped while starting") or switches.logged("streams_open="), tail
