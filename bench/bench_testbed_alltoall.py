"""All-to-all completion on the Mininet testbed: SGLB vs ECMP on three fabrics.

For each fabric (ls4x2, ls4x2-asym, ls4x2-thin: --fabrics) and each leaf mode (ECMP, SGLB) the
benchmark builds the network once (softswitch processes, one SyncMesh daemon
per switch programming its switch over P4Runtime), then runs ``--reps``
all-to-alls (topologies/alltoall.py): every host sends ``--bytes`` to every
host it shares no leaf with, on both rails, over ``--flows`` TCP connections
per pair and rail. Links run at the fabric's capacities times ``--scale``
(2: 20 Mbit/s, 10x the 2 Mbit/s chosen when the switches ran on the Python engine;
measured idle on the native engine at 10x: 165-377 TCP retransmissions per 8 runs as
at 1x, a third of the two cores idle, docs/testbed.md; ``--scale 0.2 --bytes 100000``
is the Python engine's setting, the same 3.2 s NIC-bound ideal). The fabric file given to the
daemons is scaled too, so their capacity-normalised congestion levels are right.

Modes: ECMP (the baseline), SGLB (in-band feedback: leaves tag their traffic,
spines mark congestion, destinations return it; flowlets move only after the
measured one-way-delay skew) and, with ``--profiles-only``, SGLB as it was
before in-band feedback (SyncMesh profiles alone, fixed flowlet gaps from
``--sglb-gaps-us``). The fabric links run with MTU ``--fabric-mtu`` so that the
20-byte tag fits full-size frames.

Printed: per fabric and mode the completion of every repetition, median/min/
max, the NIC-bound ideal, and ECMP time / SGLB time (ratio of the medians and
the min/max over repetition pairs). The published claim for SGLB is "up to
60 % faster than ECMP" on hardware; this is a 2-core software testbed, so only
the ranking and the rough ratio are comparable.
Run as root: ``flock /tmp/sglb-net.lock .venv/bin/python bench/bench_testbed_alltoall.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fabricmodel import load  # noqa: E402
from sglb.settings import TESTBED, Feedback  # noqa: E402
from testsupport import stop_processes  # noqa: E402
from topologies import alltoall  # noqa: E402
from topologies.demo import log_to_file  # noqa: E402

FABRICS = {"symmetric": REPO / "topologies/fabrics/ls4x2.yaml",
           "asymmetric": REPO / "topologies/fabrics/ls4x2-asym.yaml",
           "thin": REPO / "topologies/fabrics/ls4x2-thin.yaml"}
PROGRAM = REPO / "p4src" / "sglb.p4"
PREFIX = "tba"


def tcp_totals(fnet, fabric) -> dict[str, int]:
    """Summed TCP retransmission / reordering / timeout counters of every host (its own namespace)."""
    total: dict[str, int] = {}
    for host in fabric.hosts:
        text = fnet.host(host.name).cmd("cat /proc/net/snmp; echo @@@; cat /proc/net/netstat")
        snmp, _, netstat = text.partition("@@@")
        for k, v in alltoall.tcp_counters(snmp, netstat).items():
            total[k] = total.get(k, 0) + v
    return total


def run_mode(fabric, glb: bool, gap_us: int, feedback: Feedback, label: str, args, run_dir: Path,
             pipeline) -> dict:
    """Build the network in one mode, run the repetitions, tear it down; figures and timings."""
    from topologies.control import ControlOptions, FabricControl
    from topologies.mininet_fabric import FabricNet, NetOptions

    timing: dict[str, Any] = {}
    t0 = time.time()
    fnet = FabricNet(fabric, NetOptions(prefix=PREFIX, log_dir=run_dir / "logs",
                                        fabric_mtu=args.fabric_mtu))
    control = None
    servers: list[subprocess.Popen] = []
    reps: list[dict] = []
    transfers = alltoall.plan(fabric, args.flows, args.bytes)
    try:
        fnet.start()
        work = run_dir / re.sub(r"[^\w.-]+", "_", f"{fabric.name}-{label}")
        control = FabricControl(fnet.fabric, PROGRAM, ControlOptions(
            glb=glb, intf_prefix=PREFIX,
            settings=dataclasses.replace(TESTBED, flowlet_gap_us=gap_us, feedback=feedback)),
            pipeline=pipeline, work_dir=work)
        control.start()
        control.wait_programmed()
        timing["build_s"] = time.time() - t0
        py = sys.executable
        for host in fabric.hosts:
            ips = ",".join(str(n.ip) for n in host.nics)
            p = fnet.host(host.name).popen(
                [py, "-m", "topologies.alltoall", "serve", "--listen", ips, "--duration", "600"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=str(REPO))
            servers.append(p)
            assert p.stdout is not None
            p.stdout.readline()  # {"ready": true}
        for t in {(t.src, t.src_ip, t.dst_ip) for t in transfers}:  # ARP, routes warm
            fnet.host(t[0]).cmd(f"ping -c1 -W2 -I {t[1]} {t[2]} >/dev/null")
        time.sleep(args.settle)  # a first profile from every spine
        t_runs = time.time()
        for rep in range(args.reps):
            before = tcp_totals(fnet, fabric)
            start = time.time() + args.start_offset
            procs = []
            for host in fabric.hosts:
                mine = [t for t in transfers if t.src == host.name]
                if mine:
                    procs.append(fnet.host(host.name).popen(
                        [py, "-m", "topologies.alltoall", "send", "--transfers",
                         alltoall.transfers_to_json(mine), "--start-at", f"{start:.6f}"],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(REPO)))
            records = []
            for p in procs:
                try:
                    out, err = p.communicate(timeout=300)
                except subprocess.TimeoutExpired:
                    for q in procs:
                        q.kill()
                    raise RuntimeError(f"{label}: an all-to-all sender ran for 300 s") from None
                records += [json.loads(x) for x in out.splitlines() if x.startswith("{")]
                if p.returncode:
                    records.append({"id": -1, "bytes": 0, "error": err.strip()[-300:]})
            if not any("end" in r for r in records):
                errors = sorted({r.get("error", "?") for r in records})[:3]
                raise RuntimeError(f"{label}: no transfer finished: {errors}")
            fig = alltoall.completion(records, start)
            after = tcp_totals(fnet, fabric)
            fig["tcp"] = {k: after[k] - before[k] for k in after}
            reps.append(fig)
            print(f"  {label} rep {rep + 1}: all-to-all {fig['completion_s']:.2f} s "
                  f"(first transfer {fig['first_s']:.2f} s, median {fig['median_s']:.2f} s, "
                  f"last connect() at {fig['latest_connect_s']:.2f} s, up at {fig['latest_start_s']:.2f} s, "
                  f"{fig['errors']} errors; TCP retransmitted {fig['tcp']['retrans_segs']} segments, "
                  f"{fig['tcp']['reorder_events']} reorderings, {fig['tcp']['timeouts']} timeouts)",
                  flush=True)
            time.sleep(args.gap)
        timing["runs_s"] = time.time() - t_runs
        timing["failovers"] = control.failovers()
        timing["events"] = control.data_plane_events()
    finally:
        stop_processes(servers, timeout=5)
        t_stop = time.time()
        if control is not None:
            control.stop()
        fnet.stop()
        timing["teardown_s"] = time.time() - t_stop
    return {"reps": reps, "timing": timing}


# The feedback times chosen at 2 Mbit/s links (docs/sglb.md, "Testbed settings"). They are
# counted in frame times (several loaded round trips, the spread of one-way delays), so they
# shrink as the links speed up: at --scale 2 unscaled they cost SGLB its margin (thin 0.79x,
# symmetric 0.98x, 8 runs), scaled 1.09x and 1.09x (docs/sglb-vs-ecmp.md, #16).
FEEDBACK_AT_0_2 = {"fresh_us": 200_000, "gap_margin_us": 50_000, "gap_unknown_us": 200_000}


def feedback_times(scale: float) -> dict[str, int]:
    """FEEDBACK_AT_0_2 for links at `scale` x the fabric's capacities."""
    return {name: max(1, round(us * 0.2 / scale)) for name, us in FEEDBACK_AT_0_2.items()}


def testbed_feedback(args) -> Feedback:
    """The leaves' feedback settings for this run (docs/sglb.md, "Testbed settings")."""
    return Feedback(enabled=True, tag_frame_max=args.fabric_mtu + 14, fresh_us=args.fresh_us,
                    stale_us=10 * args.fresh_us, unknown_level=0,
                    gap_margin_us=args.gap_margin_us, gap_unknown_us=args.gap_unknown_us)


def mode_list(args) -> list[tuple[str, bool, int, Feedback]]:
    """(label, SGLB?, flowlet gap in us, feedback) of every run: ECMP first, then SGLB
    with in-band feedback, then (--profiles-only) one profiles-only SGLB run per gap."""
    try:
        values = [int(g) for g in args.sglb_gaps_us.split(",") if g]
    except ValueError:
        raise ValueError(f"--sglb-gaps-us: comma-separated integers expected, "
                         f"got {args.sglb_gaps_us!r}") from None
    if not values or any(g < 1 for g in values):
        raise ValueError(f"--sglb-gaps-us: at least one gap, each >= 1 us, got {args.sglb_gaps_us!r}")
    off = Feedback(enabled=False)
    modes = [("ECMP", False, TESTBED.flowlet_gap_us, off), ("SGLB", True, args.flowlet_gap_us, testbed_feedback(args))]
    if args.profiles_only:
        modes += [(f"profiles gap {g / 1000:g} ms", True, g, off) for g in values]
    return modes


def summary_line(times: list[float]) -> str:
    """Median [min, max] of a list of seconds."""
    return f"{statistics.median(times):6.2f} s [{min(times):.2f}, {max(times):.2f}]"


def main(argv: list[str] | None = None) -> int:
    """Run both fabrics in both modes and print the comparison."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reps", type=int, default=4)
    p.add_argument("--flows", type=int, default=4, help="TCP connections per host pair and rail")
    p.add_argument("--bytes", type=int, default=1_000_000, help="bytes per connection")
    p.add_argument("--scale", type=float, default=2.0, help="link rate = fabric capacity x this")
    p.add_argument("--settle", type=float, default=1.5, help="s after programming before the first run")
    p.add_argument("--start-offset", type=float, default=1.0,
                   help="s from spawning the senders to their common start (Python start-up)")
    p.add_argument("--gap", type=float, default=1.0, help="s between repetitions (queues drain)")
    p.add_argument("--fabrics", default="symmetric,asymmetric,thin")
    p.add_argument("--flowlet-gap-us", type=int, default=TESTBED.flowlet_gap_us,
                   help="SGLB's flowlet gap (us); the delay-skew rule holds flowlets longer")
    p.add_argument("--fabric-mtu", type=int, default=1520, help="MTU of the leaf-spine links")
    p.add_argument("--fresh-us", type=int, default=None,
                   help="feedback this young replaces the profile (stale after 10x; default "
                        f"{FEEDBACK_AT_0_2['fresh_us']} at --scale 0.2, scaled with the frame time)")
    p.add_argument("--gap-margin-us", type=int, default=None,
                   help="added to a measured delay skew (the spread of one-way delays here; "
                        f"default {FEEDBACK_AT_0_2['gap_margin_us']} at --scale 0.2, scaled)")
    p.add_argument("--gap-unknown-us", type=int, default=None,
                   help="idle time to move a flowlet where path delays are unknown (default "
                        f"{FEEDBACK_AT_0_2['gap_unknown_us']} at --scale 0.2, scaled)")
    p.add_argument("--profiles-only", action="store_true",
                   help="also run SGLB without in-band feedback, one run per --sglb-gaps-us")
    p.add_argument("--sglb-gaps-us", default=f"{TESTBED.flowlet_gap_us},100000",
                   help="flowlet gaps (us) of the --profiles-only runs")
    p.add_argument("--json", type=Path, default=None, help="write every figure here")
    args = p.parse_args(argv)
    if args.reps < 1 or args.flows < 1 or args.bytes < 1 or args.scale <= 0:
        p.error("need --reps, --flows, --bytes >= 1 and --scale > 0")
    for name, us in feedback_times(args.scale).items():
        if getattr(args, name) is None:
            setattr(args, name, us)
    try:
        mode_list(args)
    except ValueError as e:
        p.error(str(e))
    names = args.fabrics.split(",")
    if any(n not in FABRICS for n in names):
        p.error(f"--fabrics: choose from {', '.join(FABRICS)}")
    if os.geteuid() != 0:
        print("bench_testbed_alltoall: needs root (Mininet)", file=sys.stderr)
        return 2
    run_dir = REPO / "out" / time.strftime("tba-alltoall-%Y%m%d-%H%M%S")
    run_dir.mkdir(parents=True, exist_ok=True)
    log_to_file(run_dir / "syncmesh.log")
    t_all = time.time()
    load_before = os.getloadavg()[0]
    results: dict = {"args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                     "compile_s": 0.0, "fabrics": {}}
    try:
        run_all(names, args, run_dir, results)
    except (RuntimeError, TimeoutError, OSError) as e:
        print(f"bench_testbed_alltoall: error: {e}", file=sys.stderr)
        return 1
    results["wall_s"] = time.time() - t_all
    report(results, args, results["compile_s"], load_before)
    out = args.json or run_dir / "alltoall.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"figures: {out}")
    return 0


def run_all(names: list[str], args, run_dir: Path, results: dict) -> None:
    """Every fabric in every mode; figures go into ``results``."""
    from switchtarget.pipeline import compile_pipeline
    from topologies.control import ControlOptions, program_defines

    for name in names:
        fabric = alltoall.scale_fabric(load(FABRICS[name]), args.scale)
        t0 = time.time()
        defines = program_defines(fabric, ControlOptions())   # DRE period for the slowest link
        pipeline = compile_pipeline(PROGRAM, run_dir / f"pipeline-{name}", defines)
        results["compile_s"] += time.time() - t0
        transfers = alltoall.plan(fabric, args.flows, args.bytes)
        ideal = alltoall.ideal_seconds(fabric, transfers)
        print(f"[{name}] {fabric.name}: {len(transfers)} TCP transfers of {args.bytes} B "
              f"({args.flows} per host pair and rail), links x{args.scale:g}; NIC-bound ideal "
              f"{ideal:.2f} s; sglb.p4 with {defines or 'default defines'}", flush=True)
        modes = {}
        for label, glb, gap, feedback in mode_list(args):
            for attempt in (1, 2):
                try:
                    modes[label] = run_mode(fabric, glb, gap, feedback, label, args, run_dir,
                                            pipeline)
                    break
                except OSError as e:  # a free port taken by another run between choice and bind
                    if attempt == 2:
                        raise
                    print(f"  {label}: {e}; building the network again", flush=True)
        results["fabrics"][name] = {"ideal_s": ideal, "transfers": len(transfers), "modes": modes}


def report(results: dict, args, compile_s: float, load_before: float) -> None:
    """Print the comparison table and where the time went (adds the ratios to ``results``)."""

    print(f"\n== all-to-all completion, {args.reps} repetitions each: median [min, max]; "
          "TCP counters summed over the repetitions")
    print(f"{'fabric':<12}{'mode':<18}{'completion':>26}{'ideal':>8}   {'ECMP/mode median [min, max]':<30}"
          f"{'retrans':>8}{'reorder':>8}{'RTO':>5}")
    for name, r in results["fabrics"].items():
        e = [x["completion_s"] for x in r["modes"]["ECMP"]["reps"]]
        for label, m in r["modes"].items():
            t = [x["completion_s"] for x in m["reps"]]
            pairs = [a / b for a, b in zip(e, t, strict=True)]
            m["ratio_median"] = statistics.median(e) / statistics.median(t)
            m["ratio_pairs"] = pairs
            tcp = {k: sum(x["tcp"][k] for x in m["reps"]) for k in m["reps"][0]["tcp"]}
            errs = sum(x["errors"] for x in m["reps"])
            ratio = "-" if label == "ECMP" else \
                f"{m['ratio_median']:.3f} [{min(pairs):.3f}, {max(pairs):.3f}]"
            print(f"{name:<12}{label:<18}{summary_line(t):>26}{r['ideal_s']:>6.2f} s   {ratio:<30}"
                  f"{tcp['retrans_segs']:>8}{tcp['reorder_events']:>8}{tcp['timeouts']:>5}"
                  f"{f'  ({errs} transfer errors)' if errs else ''}")
    print("\nwhere the time goes:")
    print(f"  P4 compile {compile_s:.1f} s; wall {results['wall_s']:.1f} s; load average "
          f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after (2 cores shared)")
    for name, r in results["fabrics"].items():
        for label, m in r["modes"].items():
            tm = m["timing"]
            print(f"  {name:<11}{label:<17}build + program {tm['build_s']:.1f} s, runs "
                  f"{tm['runs_s']:.1f} s (incl. {args.gap:g} s gaps), teardown {tm['teardown_s']:.1f} s")
            totals: dict[str, int] = {}
            for per_switch in tm.get("events", {}).values():
                for ev, n in per_switch.items():
                    totals[ev] = totals.get(ev, 0) + n
            shown = ("NEW_FLOWLET", "MOVE_HELD", "FEEDBACK_SENT", "FEEDBACK_RECEIVED",
                     "TAG_SKIPPED", "FAILOVER")
            print(f"  {'':<28}data plane: " + ", ".join(f"{ev} {totals.get(ev, 0)}"
                                                       for ev in shown))


if __name__ == "__main__":
    sys.exit(main())
