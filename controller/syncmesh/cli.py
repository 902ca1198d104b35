"""``syncmesh``: run one switch's daemon, check or generate a fabric description."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import re
import signal
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from fabricmodel import FabricError, dump, leaf_spine, load

from . import logs
from .config import CoreConfig
from .daemon import Daemon, DaemonOptions
from .portwatch import PortWatcher, mininet_names
from .service import TlsFiles
from .sglb_mapping import SGLB_TABLES, Identity, switch_mac

if TYPE_CHECKING:  # finsy loads slowly: only `run --p4runtime` imports the driver
    from .p4runtime_driver import P4RuntimeDriver, PipelineFiles

TOKEN_ENV = "SYNCMESH_TOKEN"
DEFAULT_PIPELINE = Path(__file__).resolve().parents[2] / "p4src" / "sglb.p4"
_ADDRESS = re.compile(r"^[^\s:]+:\d{1,5}$")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="syncmesh", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the daemon of one switch")
    run.add_argument("fabric", type=Path, help="fabric description (YAML or JSON)")
    run.add_argument("switch", help="name of this daemon's switch in the fabric")
    run.add_argument("--token-file", type=Path,
                     help=f"file holding the shared secret (default: ${TOKEN_ENV})")
    run.add_argument("--listen", help="host:port for SyncMesh (default: from the fabric)")
    run.add_argument("--metrics",
                     help="host:port of the metrics endpoint, port 0 for any free one, or "
                          "'off' (default: the switch's metrics address in the fabric)")
    run.add_argument("--tls-ca", type=Path, help="mutual TLS: CA certificate (PEM)")
    run.add_argument("--tls-cert", type=Path, help="mutual TLS: this daemon's certificate")
    run.add_argument("--tls-key", type=Path, help="mutual TLS: this daemon's private key")
    run.add_argument("--mode", choices=("glb", "ecmp"), default="glb",
                     help="leaf load balancing written to the switch")
    run.add_argument("--keepalive", type=float, default=CoreConfig.keepalive_interval)
    run.add_argument("--dead-interval", type=float, default=CoreConfig.dead_interval)
    run.add_argument("--profile-period", type=float, default=CoreConfig.profile_period)
    run.add_argument("--profile-threshold", type=int, default=CoreConfig.profile_threshold)
    run.add_argument("--watch-ports", action="store_true",
                     help="follow the carrier of the switch's interfaces <switch>-eth<port> "
                          "through netlink (software switches that do not report it)")
    run.add_argument("--netns", help="network namespace of those interfaces")
    p4rt = run.add_argument_group("switch programming over P4Runtime")
    p4rt.add_argument("--p4runtime", nargs="?", const="fabric", metavar="HOST:PORT",
                      help="program the switch as P4Runtime primary at HOST:PORT (alone: the "
                           "switch's p4runtime address in the fabric); without it the daemon "
                           "only keeps the switch's desired state in memory")
    p4rt.add_argument("--device-id", type=int,
                      help="P4Runtime device id (default: the switch's id in the fabric)")
    p4rt.add_argument("--election-id", type=int, default=10,
                      help="election id of this primary (default: 10)")
    p4rt.add_argument("--pipeline", type=Path, default=DEFAULT_PIPELINE,
                      help="the SGLB program to push when the switch runs another one "
                           "(default: p4src/sglb.p4)")
    p4rt.add_argument("--switch-budget", type=float, default=30.0, metavar="SECONDS",
                      help="exit when the switch stays unreachable this long, at start or "
                           "later (default: 30; 0: retry for ever)")
    p4rt.add_argument("--counter-interval", type=float, default=DaemonOptions.counter_interval,
                      metavar="SECONDS", help="how often port counters are read (default: 0.5)")
    p4rt.add_argument("--flowlet-gap-us", type=int, default=Identity.flowlet_gap_us,
                      help="idle time after which a flow may change path (us)")
    p4rt.add_argument("--inject-port-status", action="store_true",
                      help="send port-status packets as PacketOut (BMv2; softswitch injects "
                           "them itself)")
    p4rt.add_argument("--target", choices=("softswitch", "bmv2"), default="softswitch",
                      help="the switch's target: softswitch (default) takes the program's "
                           "source; bmv2 takes p4c-bm2-ss's JSON (compiled here, needs p4c) "
                           "and implies --inject-port-status")
    run.add_argument("--log-level", default="info",
                     choices=("debug", "info", "warning", "error"))

    check = sub.add_parser("check", help="validate a fabric description and summarise it")
    check.add_argument("fabric", type=Path)

    gen = sub.add_parser("generate", help="write a leaf-spine fabric description")
    gen.add_argument("--leaves", type=int, required=True)
    gen.add_argument("--spines", type=int, required=True)
    gen.add_argument("--hosts-per-leaf", type=int, default=1)
    gen.add_argument("--nics-per-host", type=int, default=1)
    gen.add_argument("--links-per-pair", type=int, default=1)
    gen.add_argument("--link-capacity", default="100Mbit")
    gen.add_argument("--nic-capacity", default="100Mbit")
    gen.add_argument("--output", "-o", type=Path, help="file to write (default: stdout)")
    return p


def _token(args: argparse.Namespace) -> str:
    if args.token_file:
        try:
            token = args.token_file.read_text().strip()
        except OSError as e:
            raise SystemExit(f"syncmesh: error: cannot read token file {args.token_file}: "
                             f"{e.strerror}") from None
    else:
        token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise SystemExit(f"syncmesh: error: no shared token (use --token-file or ${TOKEN_ENV})")
    return token


def _tls(args: argparse.Namespace) -> TlsFiles | None:
    given = [args.tls_ca, args.tls_cert, args.tls_key]
    if not any(given):
        return None
    if not all(given):
        raise SystemExit("syncmesh: error: mutual TLS needs --tls-ca, --tls-cert and --tls-key")
    for path in given:
        if not path.is_file():
            raise SystemExit(f"syncmesh: error: TLS file not found: {path}")
    return TlsFiles(args.tls_ca, args.tls_cert, args.tls_key)


class _Refused(Exception):
    """A command-line value that cannot be used (the message is the one error line)."""


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _bmv2_pipeline(path: Path, out_dir: Path) -> PipelineFiles:
    """The program compiled by p4c for BMv2; p4c's first error or the missing tool in one line."""
    from finsy.proto import p4i
    from google.protobuf import text_format

    from bmv2.compiler import P4cError
    from bmv2.tools import MissingToolError

    from .p4runtime_driver import compile_pipeline

    if not path.is_file():
        raise _Refused(f"--pipeline: no such file: {path}")
    try:
        files = compile_pipeline(path, out_dir, target="bmv2")
    except (MissingToolError, P4cError) as e:
        raise _Refused(f"--pipeline: {_one_line(e)}") from None
    info = text_format.Parse(files.p4info.read_text(), p4i.P4Info())
    _check_sglb(path, {t.preamble.name.rsplit(".", 1)[-1] for t in info.tables})
    return files


def _check_sglb(path: Path, tables: set[str]) -> None:
    missing = sorted(SGLB_TABLES - tables)
    if missing:
        raise _Refused(f"--pipeline: {path} is not an SGLB program: no table "
                       f"{', '.join(missing)}")


def _pipeline(path: Path, out_dir: Path) -> PipelineFiles:
    """Check and compile the program to push; every problem becomes one located line."""
    from softswitch.frontend import P4Error, compile_file
    from softswitch.p4info import p4info_from_program
    from softswitch.p4runtime.pipeline_loader import load_program

    from .p4runtime_driver import compile_pipeline

    if not path.is_file():
        raise _Refused(f"--pipeline: no such file: {path}")
    try:
        compile_file(str(path))  # the front end locates errors in the file itself
        files = compile_pipeline(path, out_dir)
        info = p4info_from_program(load_program(files.device_config.read_bytes()))  # cached
    except P4Error as e:
        errors = [d for d in e.diagnostics if d.severity == "error"] or e.diagnostics
        d = errors[0]
        more = f" (and {len(errors) - 1} more error(s))" if len(errors) > 1 else ""
        raise _Refused(f"--pipeline: {d.file}:{d.line}:{d.col}: {_one_line(d.message)}"
                       f"{more}") from None
    except Exception as e:  # noqa: BLE001 - any failure to build it is a bad pipeline file
        raise _Refused(f"--pipeline: {path}: {_one_line(e)}") from None
    _check_sglb(path, {t.preamble.name.rsplit(".", 1)[-1] for t in info.tables})
    return files


def _driver(args: argparse.Namespace, fabric, work: Path) -> P4RuntimeDriver:
    """The P4Runtime session of ``--p4runtime`` for this daemon's switch (options checked first)."""
    from .p4runtime_driver import P4RuntimeDriver

    sw = fabric.switch(args.switch)
    address = sw.p4runtime if args.p4runtime == "fabric" else args.p4runtime
    if not _ADDRESS.match(address):
        raise _Refused(f"--p4runtime: expected host:port, got {address!r}")
    device_id = sw.id if args.device_id is None else args.device_id
    if not 0 <= device_id < 2**64:
        raise _Refused(f"--device-id: must be in 0..2^64-1, got {device_id}")
    if not 1 <= args.election_id < 2**128:
        raise _Refused(f"--election-id: must be in 1..2^128-1, got {args.election_id}")
    if not 0 <= args.flowlet_gap_us < 2**32:
        raise _Refused(f"--flowlet-gap-us: must be in 0..2^32-1, got {args.flowlet_gap_us}")
    bmv2 = args.target == "bmv2"
    pipeline = _bmv2_pipeline(args.pipeline, work) if bmv2 else _pipeline(args.pipeline, work)
    return P4RuntimeDriver(args.switch, address, device_id,
                           Identity(switch_mac(sw.id), args.flowlet_gap_us), pipeline,
                           sorted(fabric.ports(args.switch)),
                           inject_port_status=args.inject_port_status or bmv2,
                           election_id=args.election_id)


async def _run(daemon: Daemon) -> str | None:
    """Run until SIGINT/SIGTERM (None) or until the daemon gives up (its reason)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await daemon.start()
    try:
        waits = [loop.create_task(stop.wait()), loop.create_task(daemon.failed.wait())]
        _, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
    finally:
        await daemon.stop()
    return daemon.failure


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``syncmesh`` command."""
    args = _parser().parse_args(argv)
    if args.command == "generate":
        try:
            fab = leaf_spine(args.leaves, args.spines, args.hosts_per_leaf, args.nics_per_host,
                             links_per_pair=args.links_per_pair,
                             link_capacity=args.link_capacity, nic_capacity=args.nic_capacity)
        except FabricError as e:
            print(f"syncmesh: error: {e}", file=sys.stderr)
            return 2
        text = dump(fab, args.output) if args.output else dump(fab)
        if not args.output:
            sys.stdout.write(text)
        return 0
    try:
        fabric = load(args.fabric)
    except FabricError as e:
        print(f"syncmesh: error: {e}", file=sys.stderr)
        return 2
    if args.command == "check":
        print(f"{args.fabric}: fabric {fabric.name!r}: {len(fabric.leaves)} leaves, "
              f"{len(fabric.spines)} spines, {len(fabric.links)} links "
              f"({sum(not lk.up for lk in fabric.links)} down), {len(fabric.hosts)} hosts")
        return 0
    names = [s.name for s in fabric.switches]
    if args.switch not in names:
        print(f"syncmesh: error: {args.fabric}: no switch {args.switch!r} "
              f"(switches: {', '.join(names)})", file=sys.stderr)
        return 2
    try:
        config = CoreConfig(keepalive_interval=args.keepalive, dead_interval=args.dead_interval,
                            profile_period=args.profile_period,
                            profile_threshold=args.profile_threshold, glb=args.mode == "glb")
    except ValueError as e:
        print(f"syncmesh: error: {e}", file=sys.stderr)
        return 2
    if args.metrics is None:
        args.metrics = fabric.switch(args.switch).metrics
    if args.metrics != "off" and not _ADDRESS.match(args.metrics):
        print(f"syncmesh: error: --metrics: expected host:port or 'off', got {args.metrics!r}",
              file=sys.stderr)
        return 2
    if args.switch_budget < 0:
        print(f"syncmesh: error: --switch-budget: must be >= 0, got {args.switch_budget:g}",
              file=sys.stderr)
        return 2
    if not args.counter_interval > 0:
        print(f"syncmesh: error: --counter-interval: must be > 0, got {args.counter_interval:g}",
              file=sys.stderr)
        return 2
    options = DaemonOptions(token=_token(args), listen=args.listen,
                            metrics=None if args.metrics == "off" else args.metrics,
                            tls=_tls(args), switch_budget=args.switch_budget or None,
                            counter_interval=args.counter_interval)
    if args.p4runtime is None:
        given = [flag for flag, used in (
            ("--device-id", args.device_id is not None), ("--election-id", args.election_id != 10),
            ("--pipeline", args.pipeline != DEFAULT_PIPELINE),
            ("--inject-port-status", args.inject_port_status),
            ("--target", args.target != "softswitch")) if used]
        if given:
            print(f"syncmesh: error: {given[0]} needs --p4runtime", file=sys.stderr)
            return 2
    # the compiled pipeline lives as long as the daemon (finsy loads it from files)
    workspace = (tempfile.TemporaryDirectory(prefix="syncmesh-pipeline-")
                 if args.p4runtime is not None else contextlib.nullcontext(""))
    with workspace as work:
        driver = None
        if args.p4runtime is not None:
            try:
                driver = _driver(args, fabric, Path(work))
            except _Refused as e:
                print(f"syncmesh: error: {e}", file=sys.stderr)
                return 2
        logs.setup(args.switch, getattr(logging, args.log_level.upper()))
        port_source = None
        if args.watch_ports:
            watcher = PortWatcher(mininet_names(fabric, args.switch), args.netns)
            port_source = watcher.changes
        daemon = Daemon(fabric, args.switch, options, config, driver=driver,
                        port_source=port_source)
        try:
            failure = asyncio.run(_run(daemon))
        except OSError as e:
            print(f"syncmesh: error: {e}", file=sys.stderr)
            return 1
    if failure:
        print(f"syncmesh: error: {args.switch}: {_one_line(failure)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
