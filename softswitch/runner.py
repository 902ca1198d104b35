"""`softswitch run`: one switch process wiring the engine, the ports and the P4Runtime server.

Options follow simple_switch_grpc: `-i PORT@IFNAME`, `--device-id`, `--grpc-addr`,
`--cpu-port`, `--no-p4`. A port losing or regaining carrier is counted, logged,
injected into the P4 program as a port-status packet through the CPU port
(docs/softswitch-api.md) and published to gNMI subscribers (oper-status), which is
how P4Runtime controllers such as finsy learn about port state. SIGTERM and SIGINT
stop the process cleanly. Log lines are `key=value` records.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from switchtarget import port_status

log = logging.getLogger("softswitch.run")


@dataclass(frozen=True)
class RunOptions:
    """Options of `softswitch run`."""

    program: Path | None
    """The .p4 program to load at start; None with --no-p4."""
    interfaces: dict[int, str] = field(default_factory=dict)
    """Data-plane port number -> Linux interface name."""
    device_id: int = 0
    """P4Runtime device ID."""
    grpc_addr: str = "127.0.0.1:9559"
    """Address the P4Runtime (and gNMI) server listens on."""
    cpu_port: int = 255
    """Port number of the CPU port (PacketIn/PacketOut, port-status packets)."""
    name: str = "softswitch"
    """Switch name used in every log line."""
    include_dirs: tuple[str, ...] = ()
    """Extra include directories for the program."""
    ready_file: Path | None = None
    """Written with the gRPC address once the switch serves, for supervisors."""
    port_io: str = "auto"
    """How the ports move packets: rings (TPACKET_V3, forwarded in C by the native engine),
    sockets (one recvfrom/send per packet in Python) or auto (rings with the native engine)."""


def port_status_packet(packet_out_widths: list[int] | None, port: int, up: bool, seq: int) -> bytes:
    """The port-status frame injected through the CPU port, behind the program's packet_out
    header with every field 0 (docs/softswitch-api.md)."""
    from softswitch.p4runtime.device import pack_header

    header = pack_header([(0, w) for w in packet_out_widths]) if packet_out_widths else b""
    return header + port_status.encode(port, up, seq)


def write_whole(path: Path, text: str) -> None:
    """Write `text` to `path` so that a reader sees no file or all of it, never a part:
    whoever waits for the ready file reads it as soon as it exists (a plain write_text
    let a loaded test see it empty and dial the address "")."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class _KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        msg = record.getMessage()
        line = f"ts={ts}.{int(record.msecs):03d}Z level={record.levelname.lower()} logger={record.name} {msg}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def setup_logging(level: str) -> None:
    """Structured `key=value` log lines on stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_KeyValueFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, level.upper()))


class SwitchProcess:
    """The running switch: device, ports, P4Runtime and gNMI server."""

    def __init__(self, opts: RunOptions) -> None:
        from softswitch.engine.switch import engine_default
        from softswitch.p4runtime.device import Device
        from softswitch.p4runtime.server import P4RuntimeServer
        from softswitch.ports import PortSet

        self.opts = opts
        self.device = Device(opts.device_id, opts.cpu_port)
        self.ports: PortSet = PortSet(opts.interfaces, self.device.process, self._on_link)
        self._want_rings = opts.port_io == "rings" or (
            opts.port_io == "auto" and engine_default() == "native")
        self.device.transmit = self._transmit
        self.server = P4RuntimeServer(self.device, opts.grpc_addr, name=opts.name)
        self.device.on_pipeline_change = lambda _p: self._settle_memory_soon()
        self._seq = 0
        self._seq_lock = threading.Lock()
        self.port_events = 0
        self.server.gnmi.set_ports({n: p.ifname for n, p in self.ports.ports.items()},
                                   lambda n: self.ports.ports[n].up, self.port_counters)

    def _transmit(self, port: int, data: bytes) -> None:
        self.ports.send(port, data)

    def _open_ports(self) -> None:
        """Rings where wanted and possible; otherwise (and after a one-line notice naming why)
        the sockets."""
        from softswitch.ports import PortSet

        if self._want_rings and self.opts.interfaces:
            from softswitch.rings import RingError, RingOptions, RingPortSet

            try:
                rings = RingPortSet(self.opts.interfaces, self.device, self._on_link,
                                    RingOptions.from_env())
                rings.open()
            except RingError as exc:
                log.warning("switch=%s port_io=sockets reason=%r (mmap rings unavailable)",
                            self.opts.name, str(exc))
                self.ports = PortSet(self.opts.interfaces, self.device.process, self._on_link)
            else:
                self.ports = rings
                return
        self.ports.open()

    @staticmethod
    def _settle_memory_soon() -> None:
        """After a pipeline change, once the caller's frames are gone: collect what the old
        pipeline left, then freeze what is alive (the program, the engine, the imported
        modules), so that the collections table entries trigger never walk it again (a full
        collection of it takes about 100 ms, and stalls every thread)."""

        def settle() -> None:
            gc.unfreeze()
            gc.collect()
            gc.freeze()

        threading.Thread(target=settle, name="settle-memory", daemon=True).start()

    def port_counters(self, number: int) -> dict[str, int]:
        """Counters of one port, named as OpenConfig's interface counters."""
        self.ports.sync_counters()
        c = self.ports.ports[number].counters
        p = self.device.pipeline
        dropped = p.switch.stats["dropped"].get(number, 0) if p is not None else 0
        return {"in-pkts": c.rx_packets, "in-octets": c.rx_bytes, "out-pkts": c.tx_packets,
                "out-octets": c.tx_bytes, "in-discards": dropped + c.rx_kernel_drops,
                "out-discards": c.tx_drops}

    def load(self, program: Path) -> None:
        """Compile `program` and commit it as the pipeline (as a controller's VERIFY_AND_COMMIT)."""
        from finsy.proto import p4r

        from softswitch.p4info import p4info_from_program
        from softswitch.p4runtime.errors import P4RuntimeError
        from softswitch.p4runtime.pipeline_loader import (
            device_config_from_file,
            load_program,
        )

        log.info("switch=%s pipeline_loading program=%s", self.opts.name, program)
        config = device_config_from_file(program, self.opts.include_dirs)
        try:
            prog = load_program(config)
        except P4RuntimeError:
            # report against the user's file, not the preprocessed device config
            from softswitch.frontend import compile_file

            compile_file(str(program), include_dirs=self.opts.include_dirs)
            raise
        cfg = p4r.ForwardingPipelineConfig(p4info=p4info_from_program(prog), p4_device_config=config)
        self.device.set_pipeline(p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT, cfg)
        log.info("switch=%s pipeline_loaded program=%s", self.opts.name, program)

    def start(self) -> None:
        """Open the ports, then serve P4Runtime."""
        self._open_ports()
        self.ports.start()
        self.server.start()
        log.info("switch=%s serving grpc=%s device_id=%d cpu_port=%d ports=%s port_io=%s",
                 self.opts.name, self.server.address, self.opts.device_id, self.opts.cpu_port,
                 ",".join(f"{n}@{p.ifname}" for n, p in self.ports.ports.items()), self.ports.io)
        if self.opts.ready_file is not None:
            write_whole(self.opts.ready_file, self.server.address + "\n")

    def stop(self) -> None:
        """Stop serving and close every port."""
        self.server.stop()
        stats = {**self.server.service.stats(), "gnmi_dropped": self.server.gnmi.dropped}
        log.info("switch=%s p4runtime %s", self.opts.name,
                 " ".join(f"{k}={v}" for k, v in stats.items()))
        self.ports.kernel_drops()
        self.ports.close()
        self.ports.sync_counters()
        for n, p in self.ports.ports.items():
            c = p.counters.as_dict()
            c["pipeline_drops"] = self.port_counters(n)["in-discards"] - c["rx_kernel_drops"]
            log.info("switch=%s port=%d ifname=%s %s", self.opts.name, n, p.ifname,
                     " ".join(f"{k}={v}" for k, v in c.items()))

    def _on_link(self, port: int, up: bool) -> None:
        with self._seq_lock:
            self._seq += 1
            seq = self._seq
        self.port_events += 1
        log.info("switch=%s port_status port=%d up=%s seq=%d", self.opts.name, port, up, seq)
        self.server.gnmi.port_changed(port, up)
        p = self.device.pipeline
        if p is None:
            return
        header = p.schema.controller_headers.get("packet_out")
        widths = [m.bitwidth for m in header.metadata] if header is not None else None
        self.device.process(self.opts.cpu_port, port_status_packet(widths, port, up, seq))


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """Arguments of `softswitch run` (simple_switch_grpc's names)."""
    p = parser or argparse.ArgumentParser(prog="softswitch run", description=__doc__.splitlines()[0])
    p.add_argument("program", nargs="?", help="P4_16 program (.p4); omit with --no-p4")
    p.add_argument("-i", "--interface", action="append", default=[], metavar="PORT@IFNAME",
                   help="bind data-plane port PORT to interface IFNAME (repeatable)")
    p.add_argument("--device-id", type=int, default=0)
    p.add_argument("--grpc-addr", default="127.0.0.1:9559", help="P4Runtime listen address")
    p.add_argument("--cpu-port", type=int, default=255)
    p.add_argument("--no-p4", action="store_true", help="start without a program; wait for P4Runtime")
    p.add_argument("-I", dest="include_dirs", action="append", default=[], help="include directory")
    p.add_argument("--name", default="softswitch", help="switch name in log lines")
    p.add_argument("--ready-file", type=Path, help="write the gRPC address here once serving")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument("--engine", choices=["python", "native"], default=None,
                   help="packet engine of every program loaded (default: $SOFTSWITCH_ENGINE, "
                        "else native where a C compiler is found, else python); native compiles the "
                        "program to C once (docs/softswitch-engine.md)")
    p.add_argument("--port-io", choices=["auto", "rings", "sockets"], default="auto",
                   help="packet I/O of the ports: TPACKET_V3 mmap rings forwarded in C, or one "
                        "socket call per packet; auto: rings with the native engine, where the "
                        "kernel makes them (geometry: $SOFTSWITCH_RINGS)")
    return p


def _abandon(sw: SwitchProcess | None) -> None:
    """Release what a start that failed holds."""
    if sw is not None:
        sw.server.stop(0)
        sw.ports.close()


class _Start(threading.Thread):
    """The start (compiling the program takes seconds, longer under load) in a thread of its
    own, so that a SIGTERM during it only sets a flag: an exception raised from the signal
    handler could land anywhere, inside an import or a library that turns it into another
    error (seen: exit status 1 instead of 0)."""

    def __init__(self, opts: RunOptions) -> None:
        super().__init__(name="softswitch-start", daemon=True)
        self.opts = opts
        self.sw: SwitchProcess | None = None
        self.error: BaseException | None = None
        self.done = threading.Event()

    def run(self) -> None:
        try:
            self.sw = SwitchProcess(self.opts)
            if self.opts.program is not None:
                if not self.opts.program.is_file():
                    raise OSError(f"cannot read program {self.opts.program}: no such file")
                self.sw.load(self.opts.program)
            self.sw.start()
        except BaseException as exc:  # reported by the main thread
            self.error = exc
        finally:
            self.done.set()


def main(argv: list[str] | None = None, args: argparse.Namespace | None = None) -> int:
    """Entry point of `softswitch run`; returns the exit status."""
    from softswitch.ports import PortError, parse_port_map

    if args is None:
        args = build_parser().parse_args(argv)
    setup_logging(args.log_level)
    if getattr(args, "engine", None):
        # programs arrive later too (P4Runtime SetForwardingPipelineConfig): every Switch this
        # process makes reads its engine from the environment
        os.environ["SOFTSWITCH_ENGINE"] = args.engine
    if args.program is None and not args.no_p4:
        print("softswitch run: error: give a PROGRAM.p4 or --no-p4", file=sys.stderr)
        return 2
    if args.program is not None and args.no_p4:
        print("softswitch run: error: --no-p4 and a program exclude each other", file=sys.stderr)
        return 2
    try:
        interfaces = parse_port_map(args.interface)
    except PortError as exc:
        print(f"softswitch run: error: {exc}", file=sys.stderr)
        return 2
    opts = RunOptions(
        program=Path(args.program) if args.program else None, interfaces=interfaces,
        device_id=args.device_id, grpc_addr=args.grpc_addr, cpu_port=args.cpu_port,
        name=args.name, include_dirs=tuple(args.include_dirs), ready_file=args.ready_file,
        port_io=getattr(args, "port_io", "auto"),
    )
    if opts.cpu_port in interfaces:
        print(f"softswitch run: error: port {opts.cpu_port} is the CPU port", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    start = _Start(opts)
    start.start()
    while not start.done.wait(0.1):
        if stop.is_set():
            # The start cannot be interrupted where it is (a compile, an import); what it
            # holds (sockets, raw ports) ends with the process, so end it now.
            log.info("switch=%s stopped while starting", opts.name)
            logging.shutdown()
            os._exit(0)
    sw = start.sw
    if start.error is not None:  # compile errors, ports, address in use: one clear line
        from softswitch.p4runtime.errors import P4RuntimeError

        failure = start.error
        msg = failure.message if isinstance(failure, P4RuntimeError) else str(failure)
        print(f"softswitch run: error: {msg}", file=sys.stderr)
        _abandon(sw)
        return 1
    assert sw is not None
    try:
        while not stop.wait(0.5):
            pass
    finally:
        log.info("switch=%s stopping", opts.name)
        sw.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
