"""Feedback delay on the Mininet testbed: from a spine-leaf link saturating to
the source leaf moving new flowlets away.

Fabric ls4x2 (4 leaves, 2 spines, one link per leaf-spine pair) with links
at ``--scale`` of their capacity (0.2: 2 Mbit/s), the l3-s2 link cut so that
l3 reaches l2 only through s1. Then:

* a prober on h3 sends a small UDP datagram from l4 (10.0.4.10) to an echo
  server behind l2 (10.0.2.10) every ``--interval`` s, each from a new source
  port: every probe is a new flowlet at l4, which may take s1 or s2. The
  echoes are the reverse traffic that carries the in-band feedback back.
* each trial, two blasters behind l3 (h3 and h4, first rail) send 1.5x the
  s1-l2 link's rate to h2's second rail (behind l2), through s1 only: the
  s1 -> l2 link saturates while l4's own uplinks stay lightly used.

The benchmark sniffs l4's two uplinks (kernel timestamps) and l3's uplink to
s1. t0 is the first blaster frame leaving l3; the reaction time is the time
from t0 to the first probe after which ``--window`` consecutive probes all
leave l4 through s2. It runs SGLB twice in the same invocation: with in-band
feedback (sglb.p4's fabric tag) and with SyncMesh profiles only (the
baseline: counters polled every 0.25 s, profiles sent on change), and prints
both, their ratio, and the reaction in round-trip times (median ping from l4's
host to l2's host, measured before the first trial).

Run as root: ``flock /tmp/sglb-net.lock .venv/bin/python bench/bench_testbed_feedback.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import select
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fabricmodel import load  # noqa: E402
from sglb.config import DRE_PERIOD_SHIFT, ETHERNET_FRAME_MAX  # noqa: E402
from sglb.settings import TESTBED, Feedback  # noqa: E402
from testsupport import stop_processes  # noqa: E402
from topologies import alltoall  # noqa: E402
from topologies.demo import log_to_file  # noqa: E402

FABRIC = REPO / "topologies" / "fabrics" / "ls4x2.yaml"
PROGRAM = REPO / "p4src" / "sglb.p4"
WORKER = REPO / "bench" / "feedback_worker.py"
PREFIX = "tbf"
ECHO_PORT = 9300
BLAST_PORT = 9301
PROBE_SRC, ECHO_DST = "10.0.4.10", "10.0.2.10"           # h3 rail 1 (l4) -> h1 rail 1 (l2)
BLASTERS = (("h3", "10.0.3.10"), ("h4", "10.0.3.11"))      # rail 0 (l3)
BLAST_DST = "10.0.2.11"                                   # h2 rail 1 (l2)
ETH_P_ALL = 0x0003
SO_TIMESTAMPNS = 35
PACKET_OUTGOING = 4


def udp_of(frame: bytes) -> tuple[str, str, int, int] | None:
    """(src ip, dst ip, src port, dst port) of a UDP/IPv4 frame, tagged (sglb.p4's fabric tag) or not."""
    if len(frame) < 14:
        return None
    ethertype = int.from_bytes(frame[12:14], "big")
    off = 14
    if ethertype == 0x88B6 and len(frame) > 34 and frame[15] == 5:   # tag kind 5, then IPv4
        ethertype, off = int.from_bytes(frame[32:34], "big"), 34
    if ethertype != 0x0800 or len(frame) < off + 28 or frame[off + 9] != 17:
        return None
    ihl = (frame[off] & 0x0F) * 4
    src = socket.inet_ntoa(frame[off + 12:off + 16])
    dst = socket.inet_ntoa(frame[off + 16:off + 20])
    sport, dport = struct.unpack("!HH", frame[off + ihl:off + ihl + 4])
    return src, dst, sport, dport


@dataclass
class Sniffer:
    """Outgoing UDP frames on some interfaces of the root namespace, with kernel timestamps."""

    interfaces: dict[str, str]
    """{interface: label}"""
    records: list[tuple[float, str, tuple[str, str, int, int]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._socks = {}
        for name, label in self.interfaces.items():
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            s.bind((name, 0))
            s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            s.setblocking(False)
            self._socks[s] = label
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sniffer", daemon=True)
        self._lock = threading.Lock()

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select(list(self._socks), [], [], 0.1)
            for s in ready:
                try:
                    data, anc, _, addr = s.recvmsg(2048, socket.CMSG_SPACE(16))
                except BlockingIOError:
                    continue
                if addr[2] != PACKET_OUTGOING:
                    continue
                udp = udp_of(data)
                if udp is None:
                    continue
                ts = time.time()
                for level, kind, value in anc:
                    if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                        sec, nsec = struct.unpack("qq", value[:16])
                        ts = sec + nsec / 1e9
                with self._lock:
                    self.records.append((ts, self._socks[s], udp))

    def snapshot(self) -> list[tuple[float, str, tuple[str, str, int, int]]]:
        with self._lock:
            return list(self.records)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2)
        for s in self._socks:
            s.close()


def reaction(probes: list[tuple[float, str]], t0: float, window: int) -> float | None:
    """Seconds from t0 to the first probe after which `window` probes in a row left by s2."""
    after = [(t, spine) for t, spine in probes if t >= t0]
    for k in range(len(after) - window + 1):
        if all(spine == "s2" for _, spine in after[k:k + window]):
            return after[k][0] - t0
    return None


def ping_rtt(fnet, count: int = 20) -> float:
    """Median RTT (s) from l4's host to l2's host, idle fabric."""
    out = fnet.host("h3").cmd(f"ping -n -q -c {count} -i 0.05 -I {PROBE_SRC} {ECHO_DST}")
    for line in out.splitlines():
        if "min/avg/max" in line:
            return float(line.split("=")[1].split("/")[1]) / 1000   # avg of the idle pings
    raise RuntimeError(f"ping from {PROBE_SRC} to {ECHO_DST} failed:\n{out}")


def run_mode(fabric, label: str, feedback: Feedback, args, run_dir: Path, pipeline) -> dict:
    """Build the network, run the trials in one mode, tear down; figures."""
    from topologies.control import ControlOptions, FabricControl
    from topologies.mininet_fabric import FabricNet, NetOptions

    fnet = FabricNet(fabric, NetOptions(prefix=PREFIX, log_dir=run_dir / "logs",
                                        fabric_mtu=args.fabric_mtu))
    control = None
    procs: list[subprocess.Popen] = []
    sniffer = None
    py = sys.executable
    link_mbps = fabric.links[0].capacity_mbps
    trials = []
    try:
        fnet.start()
        control = FabricControl(fnet.fabric, PROGRAM, ControlOptions(
            glb=True, intf_prefix=PREFIX, settings=dataclasses.replace(
                TESTBED, flowlet_gap_us=args.flowlet_gap_us, feedback=feedback)),
            pipeline=pipeline)
        control.start()
        control.wait_programmed()
        fnet.set_link(fnet.find_link("l3", "s2"), up=False)
        echo = fnet.host("h1").popen([py, str(WORKER), "echo", "--listen", ECHO_DST, "--port",
                                      str(ECHO_PORT)], stdout=subprocess.PIPE, text=True)
        procs.append(echo)
        assert echo.stdout is not None
        echo.stdout.readline()
        time.sleep(args.settle)
        rtt = ping_rtt(fnet)
        sniffer = Sniffer({fnet.switch_intf("l4", 3): "s1", fnet.switch_intf("l4", 4): "s2",
                           fnet.switch_intf("l3", 3): "l3-s1"})
        sniffer.start()
        prober = fnet.host("h3").popen([py, str(WORKER), "probe", "--src", PROBE_SRC, "--dst",
                                        ECHO_DST, "--port", str(ECHO_PORT), "--interval",
                                        str(args.interval)], stdout=subprocess.PIPE, text=True)
        procs.append(prober)
        time.sleep(args.quiet)
        for trial in range(args.trials):
            started = time.time()
            blasters = [fnet.host(h).popen(
                [py, str(WORKER), "blast", "--src", src, "--dst", BLAST_DST, "--port",
                 str(BLAST_PORT), "--rate-mbps", f"{0.75 * link_mbps:.3f}", "--duration",
                 str(args.blast)], stdout=subprocess.PIPE, text=True) for h, src in BLASTERS]
            time.sleep(args.blast + args.quiet)
            stop_processes(blasters, timeout=5)
            records = sniffer.snapshot()
            blast_seen = [t for t, where, u in records if where == "l3-s1" and t >= started
                          and u[1] == BLAST_DST and u[3] == BLAST_PORT]
            probes = [(t, where) for t, where, u in records if where in ("s1", "s2")
                      and u[0] == PROBE_SRC and u[3] == ECHO_PORT]
            if not blast_seen:
                raise RuntimeError(f"{label} trial {trial + 1}: no blaster frame left l3")
            t0 = min(blast_seen)
            before = [s for t, s in probes if t0 - 1.0 <= t < t0]
            late = [s for t, s in probes if t0 + args.blast - 1.0 <= t < t0 + args.blast]
            r = reaction(probes, t0, args.window)
            trial_fig = {"reaction_s": r, "probes_before": len(before),
                         "s1_share_before": before.count("s1") / len(before) if before else None,
                         "s1_share_last_second": late.count("s1") / len(late) if late else None}
            trials.append(trial_fig)
            shown = "did not move" if r is None else f"{r * 1000:7.1f} ms = {r / rtt:5.1f} RTT"
            print(f"  {label:<14} trial {trial + 1}: {shown}; s1 share before "
                  f"{trial_fig['s1_share_before'] or 0:.2f}, in the last second "
                  f"{trial_fig['s1_share_last_second'] or 0:.2f}", flush=True)
        events = control.data_plane_events()
    finally:
        if sniffer is not None:
            sniffer.stop()
        stop_processes(procs, timeout=5)
        if control is not None:
            control.stop()
        fnet.stop()
    return {"rtt_s": rtt, "trials": trials, "events": events}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--scale", type=float, default=0.2, help="link rate = fabric capacity x this")
    p.add_argument("--interval", type=float, default=0.005, help="s between probes (new flowlets)")
    p.add_argument("--window", type=int, default=10, help="probes in a row via s2 = moved away")
    p.add_argument("--blast", type=float, default=3.0, help="s the s1-l2 link is saturated")
    p.add_argument("--quiet", type=float, default=3.0, help="s between trials")
    p.add_argument("--settle", type=float, default=2.0, help="s after programming and the cut")
    p.add_argument("--flowlet-gap-us", type=int, default=TESTBED.flowlet_gap_us)
    p.add_argument("--fabric-mtu", type=int, default=1520)
    p.add_argument("--fresh-us", type=int, default=200_000)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    if args.trials < 1 or args.window < 1 or args.interval <= 0 or args.scale <= 0:
        p.error("need --trials, --window >= 1 and --interval, --scale > 0")
    if os.geteuid() != 0:
        print("bench_testbed_feedback: needs root (Mininet)", file=sys.stderr)
        return 2
    from switchtarget.pipeline import compile_pipeline
    from topologies.control import ControlOptions, program_defines

    run_dir = REPO / "out" / time.strftime("tbf-feedback-%Y%m%d-%H%M%S")
    run_dir.mkdir(parents=True, exist_ok=True)
    log_to_file(run_dir / "syncmesh.log")
    fabric = alltoall.scale_fabric(load(FABRIC), args.scale)
    defines = program_defines(fabric, ControlOptions())
    pipeline = compile_pipeline(PROGRAM, run_dir / "pipeline", defines)
    load_before = os.getloadavg()[0]
    shift = int(defines.get("DRE_PERIOD_SHIFT", DRE_PERIOD_SHIFT))
    frame_ms = ETHERNET_FRAME_MAX * 8 / fabric.links[0].capacity_mbps / 1000
    print(f"{fabric.name}: links at {fabric.links[0].capacity_mbps:g} Mbit/s (a full frame: "
          f"{frame_ms:.1f} ms), sglb.p4 with {defines or 'default defines'} (DRE period "
          f"{(1 << shift) / 1000:.1f} ms); probes every {args.interval * 1000:g} ms, moved = "
          f"{args.window} in a row via s2", flush=True)
    modes = {
        "feedback": Feedback(enabled=True, tag_frame_max=args.fabric_mtu + 14,
                             fresh_us=args.fresh_us, stale_us=10 * args.fresh_us,
                             gap_margin_us=50_000, gap_unknown_us=200_000),
        "profiles only": Feedback(enabled=False),
    }
    results: dict = {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                     "defines": defines, "modes": {}}
    try:
        for label, fb in modes.items():
            results["modes"][label] = run_mode(fabric, label, fb, args, run_dir, pipeline)
    except (RuntimeError, TimeoutError, OSError) as e:
        print(f"bench_testbed_feedback: error: {e}", file=sys.stderr)
        return 1
    print(f"\n== reaction: saturation of s1->l2 to l4's new flowlets leaving by s2 "
          f"({args.trials} trials each): median [min, max]")
    medians = {}
    for label, m in results["modes"].items():
        got = [t["reaction_s"] for t in m["trials"] if t["reaction_s"] is not None]
        missed = len(m["trials"]) - len(got)
        if got:
            med = statistics.median(got)
            medians[label] = med
            print(f"  {label:<14} {med * 1000:8.1f} ms [{min(got) * 1000:.1f}, {max(got) * 1000:.1f}]"
                  f" = {med / m['rtt_s']:6.1f} idle RTTs (ping {m['rtt_s'] * 1000:.1f} ms)"
                  f"{f'; {missed} trials never moved' if missed else ''}")
        else:
            print(f"  {label:<14} never moved in {missed} trials")
    if len(medians) == 2:
        print(f"  profiles only / feedback: {medians['profiles only'] / medians['feedback']:.1f}x")
    print(f"  load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after (2 cores shared)")
    out = args.json or run_dir / "feedback.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"figures: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
