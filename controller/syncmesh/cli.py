"""``syncmesh``: run one switch's daemon, check or generate a fabric description."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import signal
import sys
from pathlib import Path

from topologies.fabric import FabricError, dump, leaf_spine, load

from . import logs
from .config import CoreConfig
from .daemon import Daemon, DaemonOptions
from .portwatch import PortWatcher, mininet_names
from .service import TlsFiles

TOKEN_ENV = "SYNCMESH_TOKEN"


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


async def _run(daemon: Daemon) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await daemon.start()
    try:
        await stop.wait()
    finally:
        await daemon.stop()


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
    if args.metrics != "off" and not re.match(r"^[^\s:]+:\d{1,5}$", args.metrics):
        print(f"syncmesh: error: --metrics: expected host:port or 'off', got {args.metrics!r}",
              file=sys.stderr)
        return 2
    options = DaemonOptions(token=_token(args), listen=args.listen,
                            metrics=None if args.metrics == "off" else args.metrics,
                            tls=_tls(args))
    logs.setup(args.switch, getattr(logging, args.log_level.upper()))
    # The P4Runtime switch driver is not written yet: the daemon runs the
    # protocol only and keeps its switch's desired state in memory.
    port_source = None
    if args.watch_ports:
        watcher = PortWatcher(mininet_names(fabric, args.switch), args.netns)
        port_source = watcher.changes
    daemon = Daemon(fabric, args.switch, options, config, port_source=port_source)
    try:
        asyncio.run(_run(daemon))
    except OSError as e:
        print(f"syncmesh: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
