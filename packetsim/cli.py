"""``fabric-sim packet``: one packet-level run, its JSON and its plot.

    fabric-sim packet --fabric topologies/fabrics/ls4x2-thin.yaml --lb sglb \\
        --workload alltoall --bytes 1MB --flows 2 --link-scale 1000 --seed 1 \\
        --fail l1:3-s1:1@2ms --json out.json --plot out.png

The ``fabric-sim`` command is this module's ``entry``: ``packet`` runs here,
every other subcommand is the flow-level simulator's (``fabricsim.cli``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from fabricmodel import FabricError, load

from .options import LB_MODES, TCP_VARIANTS, WORKLOADS, LinkEvent, OptionError, SimOptions

_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
_SIZES = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "kib": 1 << 10, "mib": 1 << 20,
          "gib": 1 << 30}


def seconds(text: str) -> float:
    """``0.002``, ``2ms``, ``50us`` as seconds."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e-?[0-9]+)?)\s*(s|ms|us|ns|)\s*", text, re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"not a time: {text!r} (e.g. 0.002, 2ms, 50us)")
    return float(m.group(1)) * _UNITS[m.group(2).lower()]


def size(text: str) -> int:
    """``1000000``, ``1MB``, ``1MiB`` as bytes."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kmg]i?b|b|)\s*", text, re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 1000000, 1MB, 1MiB)")
    return int(float(m.group(1)) * _SIZES[m.group(2).lower()])


def link_event(down: bool):  # type: ignore[no-untyped-def]
    def parse(text: str) -> LinkEvent:
        link, sep, at = text.rpartition("@")
        if not sep or not link:
            raise argparse.ArgumentTypeError(f"expected LINK@TIME (e.g. l1:3-s1:1@2ms), got {text!r}")
        return LinkEvent(link, seconds(at), down)
    return parse


def setting(text: str) -> tuple[str, int]:
    key, sep, value = text.partition("=")
    if not sep or not re.fullmatch(r"-?[0-9]+", value.strip()):
        raise argparse.ArgumentTypeError(f"expected NAME=INTEGER, got {text!r}")
    return key.strip(), int(value)


def define(text: str) -> tuple[str, str]:
    key, _, value = text.partition("=")
    return key.strip(), value.strip() or "1"


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="fabric-sim packet",
        description="Packet-level simulation: ns-3's TCP hosts, every switch running "
                    "p4src/sglb.p4 on softswitch's engine, SyncMesh's core in the loop.")
    ap.add_argument("--fabric", required=True, help="fabric file (topologies/fabrics/ format)")
    ap.add_argument("--lb", choices=LB_MODES, default="sglb")
    ap.add_argument("--workload", choices=WORKLOADS, default="alltoall")
    ap.add_argument("--bytes", type=size, default=1_000_000, help="bytes per connection")
    ap.add_argument("--flows", type=int, default=4,
                    help="connections per host pair and rail (alltoall), per host otherwise")
    ap.add_argument("--link-scale", type=float, default=1000.0,
                    help="multiply every capacity (1000: 10 Mbit/s -> 10 Gbit/s)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fail", type=link_event(True), action="append", default=[],
                    metavar="LINK@TIME", help="cut a link (name or SWITCH:PORT) at a time")
    ap.add_argument("--recover", type=link_event(False), action="append", default=[],
                    metavar="LINK@TIME", help="repair a link at a time")
    ap.add_argument("--delay", type=seconds, default=1e-6, help="propagation delay per link")
    ap.add_argument("--buffer", type=size, default=512_000, help="each switch port's queue")
    ap.add_argument("--ecn", action="store_true", help="switch queues mark CE above --ecn-bytes")
    ap.add_argument("--ecn-bytes", type=size, default=90_000)
    ap.add_argument("--tcp", choices=TCP_VARIANTS, default="cubic")
    ap.add_argument("--min-rto", type=seconds, default=0.2, help="TCP's minimum RTO")
    ap.add_argument("--delayed-ack", type=seconds, default=1e-3,
                    help="longest wait before acknowledging a lone segment (ns-3: 200 ms)")
    ap.add_argument("--detect", type=seconds, default=10e-6,
                    help="cut -> port-status packet in each end's program")
    ap.add_argument("--port-event", type=seconds, default=1e-3, help="cut -> each end's daemon")
    ap.add_argument("--message-delay", type=seconds, default=16e-3,
                    help="SyncMesh message delivery between daemons")
    ap.add_argument("--start", type=seconds, default=1e-3, help="when the workload starts")
    ap.add_argument("--stop", type=seconds, default=2.0, help="simulated time limit")
    ap.add_argument("--sample", type=seconds, default=100e-6, help="utilisation sample period")
    ap.add_argument("--max-paths", type=int, default=8, choices=(8, 16, 64))
    ap.add_argument("--set", type=setting, action="append", default=[], metavar="NAME=VALUE",
                    help="a switch setting (flowlet_gap_us, tie_tolerance, feedback's fields "
                         "such as enabled, fresh_us, gap_margin_us)")
    ap.add_argument("--define", type=define, action="append", default=[], metavar="NAME[=VALUE]",
                    help="compile sglb.p4 with this preprocessor definition (e.g. "
                         "SGLB_HASH_DRAW: new flowlets drawn by a hash, as before)")
    ap.add_argument("--engine", choices=("python", "native"), default=None,
                    help="softswitch's engine in every switch (default: $SOFTSWITCH_ENGINE, "
                         "else softswitch's default); the results are the same")
    ap.add_argument("--decisions", action="store_true",
                    help="record the leaves' new-flowlet decisions and the path state they "
                         "read (the JSON's decisions; slower)")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--plot", type=Path, help="write per-link utilisation over time here (PNG)")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    return ap


def options(args: argparse.Namespace) -> SimOptions:
    return SimOptions(
        lb=args.lb, workload=args.workload, nbytes=args.bytes, flows=args.flows,
        link_scale=args.link_scale, delay_us=args.delay * 1e6, buffer_bytes=args.buffer,
        ecn=args.ecn, ecn_bytes=args.ecn_bytes, tcp=args.tcp, min_rto_ms=args.min_rto * 1e3,
        delack_ms=args.delayed_ack * 1e3,
        seed=args.seed, start_s=args.start, stop_s=args.stop, detect_us=args.detect * 1e6,
        port_event_ms=args.port_event * 1e3, message_ms=args.message_delay * 1e3,
        events=tuple(sorted(args.fail + args.recover, key=lambda e: e.at_s)),
        sample_us=args.sample * 1e6, max_paths=args.max_paths, engine=args.engine,
        settings=tuple(args.set), defines=tuple(args.define), decisions=args.decisions)


def summary(result: dict[str, Any]) -> str:
    """The few lines a person reads first."""
    o = result["options"]
    done = result["completion_s"]
    lines = [f"{result['fabric']} {o['lb']} {o['workload']}: "
             f"{result['finished']}/{result['flows_total']} flows done"
             + (f", completion {done * 1e3:.3f} ms" if done is not None else ", NOT all finished"),
             f"  retransmits {result['retransmits']}, timeouts {result['timeouts']}, "
             f"reorderings {result['reorderings']} of {result['segments']} segments "
             f"({100 * result['reordering_fraction']:.2f}%)"]
    for f in result["failures"]:
        rec = f["recovery_us"]
        thr = f["throughput_recovered_us"]
        lines.append(f"  cut {f['link']} at {f['at_s'] * 1e3:g} ms: {len(f['affected_flows'])} "
                     f"flows affected, recovered in "
                     + (f"{rec:.1f} us" if rec is not None else
                        f"- ({len(f['unrecovered_flows'])} never)")
                     + ", throughput back in "
                     + (f"{thr:.0f} us" if thr is not None else "-"))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        opts = options(args)
        fabric = load(args.fabric)
    except (OptionError, FabricError, OSError) as e:
        print(f"fabric-sim packet: error: {e}", file=sys.stderr)
        return 2
    from .sim import run  # ns-3's bindings load here (seconds)

    bar = None
    if not args.quiet:
        from tqdm import tqdm

        bar = tqdm(total=round(opts.stop_s * 1e3, 3), unit="ms", desc="simulated",
                   bar_format="{desc}: {n:.2f} ms [{elapsed}, {rate_fmt}]", file=sys.stderr)

    def progress(t: float) -> None:
        if bar is not None:
            bar.n = round(t * 1e3, 3)
            bar.refresh()

    try:
        result = run(fabric, opts, progress)
    except OptionError as e:
        print(f"fabric-sim packet: error: {e}", file=sys.stderr)
        return 2
    finally:
        if bar is not None:
            bar.close()
    wall = result.pop("_wall")
    print(summary(result))
    print(f"  wall {wall['setup_s']:.1f} s setup + {wall['run_s']:.1f} s run, "
          f"{wall['packet_hops']} packet-hops ({wall['hops_per_s']:,.0f}/s)", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    if args.plot:
        from .plot import utilisation

        utilisation(result, args.plot)
    return 0


def entry(argv: list[str] | None = None) -> int:
    """``fabric-sim``: ``packet`` here, the other subcommands in ``fabricsim.cli``."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["packet"]:
        return main(argv[1:])
    from fabricsim.cli import main as flow_main

    if argv[:1] in (["-h"], ["--help"]):
        print("fabric-sim packet ...: packet-level simulation (fabric-sim packet --help)\n")
    return flow_main(argv)


if __name__ == "__main__":
    sys.exit(main())
