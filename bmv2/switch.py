"""A running BMv2 behind softswitch's ``Switch`` calls (docs/softswitch-api.md).

``Bmv2Switch`` starts ``simple_switch_grpc`` with its data plane on BMv2's gRPC
service (no root, no interfaces), pushes a program compiled by p4c over
P4Runtime and answers the calls (``bmv2.tables.P4RuntimeTables`` for tables,
counters and replication) the packet tests and the STF runner make:
``process_packet``, tables (direct entries and defaults), counters, direct
counters, multicast groups, clone sessions, registers. Tables, actions and
counters are named as in softswitch (fully qualified, or a unique suffix);
keys and action arguments are the same ``Exact``/``Lpm``/``Ternary``/``Range``/
``Optional`` values and int sequences or mappings. Everything goes through
P4Runtime except registers, which BMv2's P4Runtime server does not read or
write: those use ``simple_switch_CLI`` over Thrift.

The clock is BMv2's own (``ingress_global_timestamp`` follows the host), so a
test that moves softswitch's clock by hand cannot run here as written.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from softswitch.engine import SwitchError

from .cli import CliError, ThriftCli
from .compiler import CompiledProgram
from .dataplane import Dataplane, Output
from .process import Bmv2Options, Bmv2Process, free_ports
from .session import Session
from .tables import P4RuntimeTables, resolve_name


class Bmv2Switch(P4RuntimeTables):
    """A BMv2 simple_switch_grpc running one program, driven like softswitch's Switch."""

    def __init__(self, program: CompiledProgram, *, work_dir: Path | None = None,
                 device_id: int = 1, cpu_port: int | None = None, log_level: str = "warn",
                 executable: Path | None = None, start_timeout: float = 30.0) -> None:
        self.program = program
        self.work_dir = Path(work_dir or tempfile.mkdtemp(prefix="bmv2-switch-"))
        grpc_port, thrift_port, dp_port = free_ports(3)
        self.options = Bmv2Options(grpc_address=f"127.0.0.1:{grpc_port}", thrift_port=thrift_port,
                                   device_id=device_id, cpu_port=cpu_port,
                                   dataplane_address=f"127.0.0.1:{dp_port}", log_level=log_level,
                                   executable=executable)
        self.process = Bmv2Process(self.options, self.work_dir / "simple_switch_grpc.log")
        super().__init__(program.p4info_message())
        self.dataplane: Dataplane | None = None
        self._thrift: ThriftCli | None = None
        try:
            self.process.start(start_timeout)
            self.session = Session(self.options.grpc_address, device_id)
            self.session.connect()
            self.session.set_pipeline(self.p4info, program.json.read_bytes())
            self.dataplane = Dataplane(self.options.dataplane_address or "", device_id)
            self.dataplane.wait_ready()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ packets

    def process_packet(self, port: int, data: bytes) -> list[Output]:
        """Send ``data`` in on ``port``; every packet that came out, in BMv2's order."""
        assert self.dataplane is not None
        return self.dataplane.inject(port, data)

    # ------------------------------------------------------------------ registers (Thrift)

    def _cli(self, command: str) -> str:
        if self._thrift is None:
            self._thrift = ThriftCli(self.options.thrift_port)
        try:
            return self._thrift.run(command)
        except CliError as e:
            raise SwitchError("UNKNOWN", str(e)) from None

    def _register(self, name: str) -> str:
        names = [r.preamble.name for r in self.p4info.registers]
        return resolve_name("register", names, name)

    def register_read(self, name: str, index: int) -> int:
        """A register cell."""
        full = self._register(name)
        out = self._cli(f"register_read {full} {index}")
        m = re.search(rf"{re.escape(full)}\[{index}\]\s*=\s*(\d+)", out)
        if m is None:
            raise SwitchError("UNKNOWN", f"register_read {full} {index}: {out.strip()[-300:]}")
        return int(m.group(1))

    def register_write(self, name: str, index: int, value: int) -> None:
        """Set a register cell."""
        self._cli(f"register_write {self._register(name)} {index} {value}")

    # ------------------------------------------------------------------ life cycle

    def close(self) -> None:
        """Stop the switch."""
        if self._thrift is not None:
            self._thrift.close()
            self._thrift = None
        if self.dataplane is not None:
            self.dataplane.close()
            self.dataplane = None
        if self.session is not None:
            self.session.close()
            self.session = None
        self.process.stop()

    def __enter__(self) -> Bmv2Switch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
