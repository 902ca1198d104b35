"""``syncmesh``: run one switch's daemon, make its certificates, check or generate a fabric."""

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
from sglb.config import DRE_PERIOD_SHIFT
from sglb.settings import DEFAULT, Feedback, SettingsError, SwitchSettings, SwitchTarget

from . import certs, logs
from .certs import CertError, TlsFiles
from .config import CoreConfig
from .daemon import Daemon, DaemonOptions
from .incarnation import IncarnationError
from .portwatch import PortWatcher, mininet_names
from .service import Credentials, Insecure
from .sglb_switch import Identity, switch_mac

if TYPE_CHECKING:  # finsy loads slowly: only `run --p4runtime` imports the driver
    from switchtarget.pipeline import PipelineBuilder, PipelineFiles

    from .p4runtime_driver import P4RuntimeDriver
    from .sglb_switch import ProgramMapping

TOKEN_ENV = "SYNCMESH_TOKEN"
P4SRC = Path(__file__).resolve().parents[2] / "p4src"
DEFAULT_PIPELINE = P4SRC / "sglb.p4"
TARGETS = {"softswitch": SwitchTarget.V1MODEL, "bmv2": SwitchTarget.V1MODEL,
           "tofino": SwitchTarget.TOFINO, "tofino2": SwitchTarget.TOFINO2}
"""--target: the switch target's pipeline builder (switchtarget.pipeline.BUILDERS) and the
SGLB program it runs."""
PIPELINES = {SwitchTarget.V1MODEL: DEFAULT_PIPELINE, SwitchTarget.TOFINO: P4SRC / "tna" / "sglb.p4",
             SwitchTarget.TOFINO2: P4SRC / "tna" / "sglb.p4"}
_ADDRESS = re.compile(r"^[^\s:]+:\d{1,5}$")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="syncmesh", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the daemon of one switch")
    run.add_argument("fabric", type=Path, help="fabric description (YAML or JSON)")
    run.add_argument("switch", help="name of this daemon's switch in the fabric")
    ident = run.add_argument_group("identity (mutual TLS unless --insecure)")
    ident.add_argument("--certs", type=Path, metavar="DIR",
                       help="directory written by `syncmesh certs`: ca.pem, <switch>.pem, "
                            "<switch>.key")
    ident.add_argument("--tls-ca", type=Path, help="instead of --certs: the fabric CA (PEM)")
    ident.add_argument("--tls-cert", type=Path, help="instead of --certs: this switch's "
                       "certificate")
    ident.add_argument("--tls-key", type=Path, help="instead of --certs: this switch's key")
    ident.add_argument("--insecure", action="store_true",
                       help="plaintext, a shared token and claimed names (testing only; "
                            "logs a warning)")
    ident.add_argument("--token-file", type=Path,
                       help=f"with --insecure: file holding the shared secret (default: "
                            f"${TOKEN_ENV})")
    run.add_argument("--state-dir", type=Path, default=_default_state_dir(),
                     help="where the last incarnation is kept, so that a restart is always "
                          "newer (default: %(default)s)")
    run.add_argument("--listen", help="host:port for SyncMesh (default: from the fabric)")
    run.add_argument("--metrics",
                     help="host:port of the metrics endpoint, port 0 for any free one, or "
                          "'off' (default: the switch's metrics address in the fabric)")
    run.add_argument("--mode", choices=("glb", "ecmp"), default="glb",
                     help="leaf load balancing written to the switch")
    run.add_argument("--keepalive", type=float, default=CoreConfig.keepalive_interval)
    run.add_argument("--dead-interval", type=float, default=CoreConfig.dead_interval)
    run.add_argument("--profile-period", type=float, default=CoreConfig.profile_period)
    run.add_argument("--profile-threshold", type=int, default=CoreConfig.profile_threshold)
    run.add_argument("--max-skew", type=float, default=CoreConfig.max_skew,
                     help="largest clock difference between daemons, s (default: %(default)s)")
    run.add_argument("--watch-ports", action="store_true",
                     help="follow the carrier of the switch's interfaces <switch>-eth<port> "
                          "through netlink (software switches that do not report it)")
    run.add_argument("--intf-prefix", default="",
                     help="with --watch-ports: prefix of those interface names (Mininet "
                          "node prefix)")
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
    p4rt.add_argument("--pipeline", type=Path,
                      help="the SGLB program to push when the switch runs another one "
                           "(default: p4src/sglb.p4; p4src/tna/sglb.p4 on Tofino)")
    p4rt.add_argument("--switch-budget", type=float, default=30.0, metavar="SECONDS",
                      help="exit when the switch stays unreachable this long, at start or "
                           "later (default: 30; 0: retry for ever)")
    p4rt.add_argument("--counter-interval", type=float, default=DaemonOptions.counter_interval,
                      metavar="SECONDS", help="how often a spine reads its port counters "
                                              "(default: %(default)s)")
    p4rt.add_argument("--leaf-counter-interval", type=float,
                      default=DaemonOptions.leaf_counter_interval, metavar="SECONDS",
                      help="how often a leaf reads them (metrics only; default: %(default)s)")
    p4rt.add_argument("--flowlet-gap-us", type=int, default=DEFAULT.flowlet_gap_us,
                      help="idle time after which a flow may change path (us; default: "
                           "%(default)s; raised to 40 full frames of the fabric's slowest link)")
    p4rt.add_argument("--tie-tolerance", type=int, default=DEFAULT.tie_tolerance,
                      help="paths within this many congestion levels of the best are equally "
                           "good (default: %(default)s)")
    p4rt.add_argument("--dre-period-shift", type=int, metavar="N",
                      help="sglb.p4's DRE_PERIOD_SHIFT (period 2^N us) to compile the pipeline "
                           "with (default: from the fabric's slowest link)")
    p4rt.add_argument("--notice-copies", type=int, default=DEFAULT.notice_copies,
                      help="copies of every failure notice a spine sends to each leaf "
                           "(default: %(default)s)")
    fb = run.add_argument_group("leaves' in-band feedback (sglb.settings.Feedback)")
    fb.add_argument("--no-feedback", action="store_true",
                    help="no in-band feedback: leaves use the profiles only")
    fb.add_argument("--tag-frame-max", type=int, default=DEFAULT.feedback.tag_frame_max,
                    help="frames longer than this once tagged go untagged (default: "
                         "%(default)s)")
    fb.add_argument("--feedback-fresh-us", type=int, default=DEFAULT.feedback.fresh_us,
                    help="feedback at most this old replaces the profile (default: %(default)s)")
    fb.add_argument("--feedback-stale-us", type=int, default=DEFAULT.feedback.stale_us,
                    help="older feedback only raises the level; unknown beyond this "
                         "(default: %(default)s)")
    fb.add_argument("--unknown-level", type=int, default=DEFAULT.feedback.unknown_level,
                    help="floor of the remote level without fresh feedback (default: "
                         "%(default)s)")
    fb.add_argument("--gap-margin-us", type=int, default=DEFAULT.feedback.gap_margin_us,
                    help="added to a measured delay skew before a flowlet moves (default: "
                         "%(default)s)")
    fb.add_argument("--gap-unknown-us", type=int, default=DEFAULT.feedback.gap_unknown_us,
                    help="idle time a flowlet needs where path delays are unknown (default: "
                         "%(default)s)")
    p4rt.add_argument("--inject-port-status", action="store_true",
                      help="send port-status packets as PacketOut (BMv2; softswitch injects "
                           "them itself)")
    p4rt.add_argument("--target", choices=tuple(TARGETS), default="softswitch",
                      help="the switch's target: softswitch (default) takes the program's "
                           "source; bmv2 takes p4c-bm2-ss's JSON (compiled here, needs p4c) "
                           "and implies --inject-port-status; tofino / tofino2 run "
                           "p4src/tna/sglb.p4 compiled here by bf-p4c")
    run.add_argument("--log-level", default="info",
                     choices=("debug", "info", "warning", "error"))

    cert = sub.add_parser("certs", help="make the fabric CA and every switch's key + certificate")
    cert.add_argument("--fabric", type=Path, required=True, help="fabric description")
    cert.add_argument("--out", type=Path, required=True, metavar="DIR",
                      help="directory to write (existing files are kept)")
    cert.add_argument("--days", type=int, default=certs.DEFAULT_DAYS,
                      help="validity (default: %(default)s)")
    cert.add_argument("--switch", action="append", dest="switches", metavar="NAME",
                      help="only this switch (repeatable; default: all)")

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


def _default_state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "syncmesh"


def _token(args: argparse.Namespace) -> str:
    if args.token_file:
        try:
            token = args.token_file.read_text().strip()
        except OSError as e:
            raise _Refused(f"cannot read token file {args.token_file}: {e.strerror}") from None
    else:
        token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise _Refused(f"--insecure needs the shared token (use --token-file or ${TOKEN_ENV})")
    return token


def _credentials(args: argparse.Namespace) -> Credentials:
    """Mutual TLS from --certs or the three --tls-* files; plaintext only with --insecure."""
    given = [args.tls_ca, args.tls_cert, args.tls_key]
    if args.insecure:
        if args.certs or any(given):
            raise _Refused("--insecure: give either --insecure or TLS files, not both")
        return Insecure(_token(args), args.switch)
    if args.token_file:
        raise _Refused("--token-file: only --insecure uses a token (TLS certificates identify "
                       "the daemons)")
    if args.certs:
        if any(given):
            raise _Refused("--certs: give either --certs or --tls-ca/--tls-cert/--tls-key")
        files = TlsFiles.in_dir(args.certs, args.switch)
    elif all(given):
        files = TlsFiles(args.tls_ca, args.tls_cert, args.tls_key)
    elif any(given):
        raise _Refused("mutual TLS needs --tls-ca, --tls-cert and --tls-key")
    else:
        raise _Refused("TLS is on by default: give --certs DIR (made by `syncmesh certs "
                       "--fabric FILE --out DIR`) or --tls-ca/--tls-cert/--tls-key; "
                       "--insecure runs plaintext")
    try:
        certs.check(files, args.switch)
    except CertError as e:
        raise _Refused(str(e)) from None
    return files


class _Refused(Exception):
    """A command-line value that cannot be used (the message is the one error line)."""


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _check_sglb(path: Path, files: PipelineFiles, mapping: ProgramMapping) -> None:
    """Refuse a program that lacks a table the mapping writes (its P4Info's names)."""
    from finsy.proto import p4i
    from google.protobuf import text_format

    info = text_format.Parse(files.p4info.read_text(), p4i.P4Info())
    missing = sorted(mapping.tables - {t.preamble.name.rsplit(".", 1)[-1] for t in info.tables})
    if missing:
        raise _Refused(f"--pipeline: {path} is not an SGLB program: no table "
                       f"{', '.join(missing)}")


def _pipeline(args: argparse.Namespace, identity: Identity, builder: PipelineBuilder,
              out_dir: Path) -> PipelineFiles:
    """Build the program to push with the target's builder; every problem is one line."""
    from switchtarget.pipeline import PipelineError

    from .sglb_programs import mapping_for

    path = args.pipeline or PIPELINES[identity.target]
    if not path.is_file():
        raise _Refused(f"--pipeline: no such file: {path}")
    defines = {}
    if identity.settings.period_shift != DRE_PERIOD_SHIFT:  # the program's own default
        defines["DRE_PERIOD_SHIFT"] = str(identity.settings.period_shift)
    if identity.target.is_tna:
        defines["MAX_PATHS"] = str(identity.max_paths)
    try:
        files = builder.build(path, out_dir, defines)
    except PipelineError as e:
        raise _Refused(f"--pipeline: {_one_line(e)}") from None
    _check_sglb(path, files, mapping_for(identity))
    return files


def _driver(args: argparse.Namespace, fabric, work: Path) -> P4RuntimeDriver:
    """The P4Runtime session of ``--p4runtime`` for this daemon's switch (options checked first)."""
    from switchtarget.pipeline import load_builder

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
    identity = _identity(args, fabric)
    builder = load_builder(args.target)   # imports the target's package, only now
    pipeline = _pipeline(args, identity, builder, work)
    return P4RuntimeDriver(args.switch, address, device_id, identity, pipeline,
                           sorted(fabric.ports(args.switch)),
                           inject_port_status=(args.inject_port_status
                                               or not builder.injects_port_status),
                           election_id=args.election_id)


_SETTING_FLAGS = {  # a setting's name in SettingsError messages: (flag, argparse dest)
    "flowlet_gap_us": ("--flowlet-gap-us", "flowlet_gap_us"),
    "tie_tolerance": ("--tie-tolerance", "tie_tolerance"),
    "notice_copies": ("--notice-copies", "notice_copies"),
    "dre_period_shift": ("--dre-period-shift", "dre_period_shift"),
}
_FEEDBACK_FLAGS = {  # Feedback field: (flag, argparse dest)
    "tag_frame_max": ("--tag-frame-max", "tag_frame_max"),
    "fresh_us": ("--feedback-fresh-us", "feedback_fresh_us"),
    "stale_us": ("--feedback-stale-us", "feedback_stale_us"),
    "unknown_level": ("--unknown-level", "unknown_level"),
    "gap_margin_us": ("--gap-margin-us", "gap_margin_us"),
    "gap_unknown_us": ("--gap-unknown-us", "gap_unknown_us"),
}


def _identity(args: argparse.Namespace, fabric) -> Identity:
    """The switch's settings from the options, checked against its target's limits (one
    error line naming the flag)."""
    target = TARGETS[args.target]
    try:
        feedback = Feedback(enabled=not args.no_feedback, **{
            name: getattr(args, dest) for name, (_, dest) in _FEEDBACK_FLAGS.items()})
        settings = SwitchSettings(feedback=feedback, **{
            name: getattr(args, dest) for name, (_, dest) in _SETTING_FLAGS.items()})
        settings = settings.for_slowest_link(min(lk.capacity_mbps for lk in fabric.links))
        return Identity(switch_mac(fabric.switch(args.switch).id), settings, target=target)
    except SettingsError as e:  # name the flag(s) the message is about
        flags = [flag for name, (flag, _) in (_SETTING_FLAGS | _FEEDBACK_FLAGS).items()
                 if f" {name} " in f" {e} "]
        raise _Refused(f"{'/'.join(flags) or '--feedback'}: {_one_line(e)}") from None


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
    if args.command == "certs":
        try:
            created = certs.generate(fabric, args.out, args.days, args.switches)
        except (CertError, OSError) as e:
            print(f"syncmesh: error: {e}", file=sys.stderr)
            return 2
        print(f"{args.out}: {len(created)} file(s) written"
              + "".join(f"\n  {p.name}" for p in created))
        return 0
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
                            profile_threshold=args.profile_threshold, glb=args.mode == "glb",
                            max_skew=args.max_skew)
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
    for flag, value in (("--counter-interval", args.counter_interval),
                        ("--leaf-counter-interval", args.leaf_counter_interval)):
        if not value > 0:
            print(f"syncmesh: error: {flag}: must be > 0, got {value:g}", file=sys.stderr)
            return 2
    try:
        credentials = _credentials(args)
    except _Refused as e:
        print(f"syncmesh: error: {e}", file=sys.stderr)
        return 2
    options = DaemonOptions(credentials=credentials, listen=args.listen,
                            metrics=None if args.metrics == "off" else args.metrics,
                            state_file=args.state_dir / f"{fabric.name}-{args.switch}.incarnation",
                            switch_budget=args.switch_budget or None,
                            counter_interval=args.counter_interval,
                            leaf_counter_interval=args.leaf_counter_interval)
    if args.p4runtime is None:
        given = [flag for flag, used in (
            ("--device-id", args.device_id is not None), ("--election-id", args.election_id != 10),
            ("--pipeline", args.pipeline is not None),
            ("--dre-period-shift", args.dre_period_shift is not None),
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
            interfaces = {f"{args.intf_prefix}{name}": port
                          for name, port in mininet_names(fabric, args.switch).items()}
            port_source = PortWatcher(interfaces, args.netns).changes
        try:
            daemon = Daemon(fabric, args.switch, options, config, driver=driver,
                            port_source=port_source)
            failure = asyncio.run(_run(daemon))
        except (OSError, IncarnationError) as e:
            print(f"syncmesh: error: {e}", file=sys.stderr)
            return 1
    if failure:
        print(f"syncmesh: error: {args.switch}: {_one_line(failure)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
