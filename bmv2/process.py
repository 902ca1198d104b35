"""Start and stop ``simple_switch_grpc``: one BMv2 per switch, each with its own ports.

Every BMv2 binds a P4Runtime address, a Thrift port (its CLI's; BMv2's default
9090 would collide from the second switch on) and carries a device id. Its
data-plane ports are Linux interfaces (``-i PORT@IFNAME``) or, for tests
without root, BMv2's data-plane gRPC service (``--dp-grpc-server-addr``,
``bmv2.dataplane``). The program is pushed over P4Runtime (P4Info + BMv2 JSON),
so the switch starts with ``--no-p4``. Processes still running when Python
exits are stopped by an atexit hook (a failed test, Ctrl-C).
"""

from __future__ import annotations

import atexit
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import tools

_RUNNING: set[subprocess.Popen[Any]] = set()


def terminate(proc: subprocess.Popen[Any], timeout: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after ``timeout``; forgets the process."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    _RUNNING.discard(proc)


def stop_at_exit(proc: subprocess.Popen[Any]) -> None:
    """Have ``proc`` terminated when Python exits, unless ``terminate`` stopped it first.

    The testbed's switch nodes use it for softswitch processes too: one reaper for both.
    """
    _RUNNING.add(proc)


@atexit.register
def _terminate_all() -> None:
    for proc in list(_RUNNING):
        terminate(proc, 2.0)


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports free on loopback a moment ago (all bound at once, so distinct)."""
    socks: list[socket.socket] = []
    try:
        for _ in range(n):
            s = socket.socket()
            socks.append(s)
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Bmv2StartError(RuntimeError):
    """BMv2 exited at start or did not answer P4Runtime in time; the message has its log's tail."""


@dataclass(frozen=True)
class Bmv2Options:
    """How one simple_switch_grpc runs."""

    grpc_address: str
    """Where it serves P4Runtime (host:port)."""
    thrift_port: int
    """Its Thrift server's port (simple_switch_CLI); distinct per switch."""
    device_id: int = 1
    """BMv2's device id, also the P4Runtime device_id."""
    cpu_port: int | None = 255
    """Port of P4Runtime PacketIn/PacketOut (None: no packet I/O over P4Runtime)."""
    interfaces: tuple[tuple[int, str], ...] = ()
    """(port, Linux interface) pairs."""
    dataplane_address: str | None = None
    """Serve the data plane over BMv2's gRPC service here instead of interfaces."""
    log_level: str = "warn"
    """BMv2's console log level (trace, debug, info, warn, error, off); per-packet
    logging (info and below) slows the default build several times."""
    executable: Path | None = None
    """The simple_switch_grpc binary (default: tools.SWITCH, PATH or SIMPLE_SWITCH_GRPC)."""
    extra: tuple[str, ...] = field(default=())
    """More options for the target (after ``--``)."""


def command(o: Bmv2Options) -> list[str]:
    """The simple_switch_grpc command line."""
    exe = o.executable or tools.require(tools.SWITCH)[tools.SWITCH.name]
    cmd = [str(exe), "--device-id", str(o.device_id), "--thrift-port", str(o.thrift_port),
           "--log-console", "-L", o.log_level]
    for port, intf in o.interfaces:
        cmd += ["-i", f"{port}@{intf}"]
    cmd += ["--no-p4", "--", "--grpc-server-addr", o.grpc_address]
    if o.cpu_port is not None:
        cmd += ["--cpu-port", str(o.cpu_port)]
    if o.dataplane_address:
        cmd += ["--dp-grpc-server-addr", o.dataplane_address]
    return cmd + list(o.extra)


def p4runtime_ready(address: str, timeout: float = 0.5) -> bool:
    """True if a P4Runtime server at ``address`` answers a CapabilitiesRequest."""
    import grpc
    from finsy.proto import p4r, p4r_grpc

    with grpc.insecure_channel(address) as channel:
        try:
            p4r_grpc.P4RuntimeStub(channel).Capabilities(p4r.CapabilitiesRequest(), timeout=timeout)
            return True
        except grpc.RpcError:
            return False


class Bmv2Process:
    """One running simple_switch_grpc (a context manager: stopped on exit)."""

    def __init__(self, options: Bmv2Options, log_path: Path) -> None:
        self.options = options
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def log_tail(self, chars: int = 2000) -> str:
        """The end of the switch's log."""
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def start(self, timeout: float = 30.0) -> Bmv2Process:
        """Start the switch and wait until it answers P4Runtime."""
        cmd = command(self.options)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        stop_at_exit(self.proc)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                code = self.proc.returncode
                self.stop()
                raise Bmv2StartError(f"simple_switch_grpc exited ({code}) at start "
                                     f"({' '.join(cmd)}):\n{self.log_tail()}")
            if p4runtime_ready(self.options.grpc_address):
                return self
            time.sleep(0.05)
        self.stop()
        raise Bmv2StartError(f"simple_switch_grpc: no P4Runtime answer on "
                             f"{self.options.grpc_address} within {timeout:.0f} s:\n{self.log_tail()}")

    def alive(self) -> bool:
        """True while the process runs."""
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """Stop the switch (SIGTERM, then SIGKILL)."""
        if self.proc is not None:
            terminate(self.proc)
            self.proc = None

    def __enter__(self) -> Bmv2Process:
        return self.start() if self.proc is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()
