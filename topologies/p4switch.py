"""Mininet switch node running a P4Runtime switch process: `softswitch run`, or BMv2.

Each node gets its own gRPC port and device ID (taken from class counters unless
given), starts the target on its Mininet interfaces (port numbers are Mininet's),
waits until P4Runtime answers a CapabilitiesRequest and stops the process on
`stop()`. `TARGET=bmv2` in the environment (or `target="bmv2"`) starts BMv2's
`simple_switch_grpc` instead (``bmv2.process``), with its own Thrift port, when it is
installed; otherwise `start()` raises TargetError naming what is missing. Processes that are still running
when the Python process exits (Ctrl-C, a failed test) are terminated by an atexit hook
(``bmv2.process.stop_at_exit``, one reaper for both targets).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# isort: off
import topologies.mininet_import  # noqa: F401  (must come before any other mininet import)
from mininet.node import Switch
# isort: on

from bmv2.process import p4runtime_ready, stop_at_exit, terminate


class TargetError(RuntimeError):
    """The switch process could not be started or does not answer P4Runtime."""


class P4RuntimeSwitch(Switch):
    """A Mininet switch whose data plane is a P4Runtime target process."""

    next_grpc_port = 50051
    next_device_id = 1

    def __init__(
        self,
        name: str,
        program: str | None = None,
        grpc_port: int | None = None,
        device_id: int | None = None,
        cpu_port: int = 255,
        thrift_port: int | None = None,
        target: str | None = None,
        log_dir: str | None = None,
        log_level: str = "info",
        start_timeout: float = 30.0,
        **params,
    ) -> None:
        super().__init__(name, **params)
        self.program = program
        if grpc_port is None:
            grpc_port = P4RuntimeSwitch.next_grpc_port
            P4RuntimeSwitch.next_grpc_port += 1
        if device_id is None:
            device_id = P4RuntimeSwitch.next_device_id
            P4RuntimeSwitch.next_device_id += 1
        self.grpc_port = grpc_port
        self.device_id = device_id
        self.cpu_port = cpu_port
        self.thrift_port = thrift_port
        """BMv2's Thrift port (simple_switch_CLI); None: a free one at start."""
        self.target = (target or os.environ.get("TARGET") or "softswitch").lower()
        if self.target not in ("softswitch", "bmv2"):
            raise TargetError(f"{name}: unknown TARGET {self.target!r} (softswitch or bmv2)")
        self.log_dir = Path(log_dir or tempfile.gettempdir())
        self.log_level = log_level
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None

    @property
    def grpc_address(self) -> str:
        """Where this switch serves P4Runtime."""
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def log_path(self) -> Path:
        """The switch process's log file."""
        return self.log_dir / f"{self.name}.{self.target}.log"

    def interface_options(self) -> list[str]:
        """`-i PORT@IFNAME` for every data interface (Mininet's port numbers)."""
        opts = []
        for port, intf in sorted(self.intfs.items()):
            if intf.name != "lo" and port != self.cpu_port:
                opts += ["-i", f"{port}@{intf.name}"]
        return opts

    def command(self) -> list[str]:
        """The target's command line."""
        if self.target == "bmv2":
            return self.bmv2_command()
        cmd = [sys.executable, "-m", "softswitch.runner"]
        cmd += [self.program] if self.program else ["--no-p4"]
        cmd += ["--device-id", str(self.device_id), "--grpc-addr", self.grpc_address,
                "--cpu-port", str(self.cpu_port), "--name", self.name, "--log-level", self.log_level,
                *self.interface_options()]
        return cmd

    def environment(self) -> dict[str, str]:
        """The target's environment: this process's, and for softswitch's ring I/O
        TPACKET_V2 unless $SOFTSWITCH_RINGS says otherwise. The testbed's frames (at most
        1,534 bytes) fit V2's 2,048-byte slots, and V2 hands each frame over at once where
        V3 holds a block up to 1 ms: through veths 0.10 ms a round trip against 1.14 ms,
        at the same rate (bench/bench_targets.py --only pps,latency)."""
        env = dict(os.environ)
        if self.target == "softswitch":
            env.setdefault("SOFTSWITCH_RINGS", "version=2")
        return env

    def bmv2_command(self) -> list[str]:
        """simple_switch_grpc on this node's interfaces, its own Thrift port and device id,
        started without a program: the controller pushes p4c's JSON over P4Runtime."""
        from bmv2 import tools
        from bmv2.process import Bmv2Options, command, free_ports

        if self.program:
            raise TargetError(f"{self.name}: on BMv2 the controller pushes the program over "
                              "P4Runtime; start the switch without one")
        try:
            exe = tools.require(tools.SWITCH, purpose=f"{self.name}: TARGET=bmv2")
        except tools.MissingToolError as e:
            raise TargetError(str(e)) from None
        if self.thrift_port is None:
            self.thrift_port = free_ports(1)[0]
        ports = []
        for port, intf in sorted(self.intfs.items()):
            if intf.name != "lo" and port != self.cpu_port:
                ports.append((port, intf.name))
        level = {"debug": "debug", "info": "warn"}.get(self.log_level, self.log_level)
        return command(Bmv2Options(grpc_address=self.grpc_address, thrift_port=self.thrift_port,
                                   device_id=self.device_id, cpu_port=self.cpu_port,
                                   interfaces=tuple(ports), log_level=level,
                                   executable=exe[tools.SWITCH.name]))

    def set_port_up(self, port: int, up: bool) -> None:
        """Take a data port's interface administratively down or up (a cut link's end).

        Not for BMv2: BMv2 1.15.5 forwards on none of its ports while one of its
        interfaces is administratively down, so the fabric cuts BMv2's links in
        the middle instead (topologies.splicedlink).
        """
        if self.target == "bmv2":
            raise TargetError(f"{self.name}: BMv2's interfaces are never taken down "
                              "(cut the link in the middle: topologies.splicedlink)")
        self.cmd(f"ip link set {self.intfs[port].name} {'up' if up else 'down'}")

    def start(self, controllers) -> None:
        """Start the target and wait until it answers P4Runtime."""
        for intf in self.intfList():
            if intf.name != "lo":
                # Frames are forwarded as the kernel hands them over: no offloads.
                self.cmd(f"ethtool -K {intf.name} tx off rx off sg off tso off gso off gro off >/dev/null 2>&1")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "w")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True, env=self.environment())
        log.close()
        stop_at_exit(self.proc)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = self.log_path.read_text()[-2000:]
                self.proc = None
                raise TargetError(f"{self.name}: {self.target} exited at start:\n{tail}")
            if p4runtime_ready(self.grpc_address):
                return
            time.sleep(0.1)
        self.stop(deleteIntfs=False)
        raise TargetError(f"{self.name}: no P4Runtime answer on {self.grpc_address} "
                          f"within {self.start_timeout}s (log: {self.log_path})")

    def stop(self, deleteIntfs: bool = True) -> None:
        """Stop the target process (SIGTERM, then SIGKILL) and remove the interfaces."""
        if self.proc is not None:
            terminate(self.proc)
            self.proc = None
        super().stop(deleteIntfs)
