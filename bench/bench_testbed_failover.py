"""Failover time in the Mininet testbed: a leaf-spine link cut repeatedly under traffic.

Runs the `make run` scenario (topologies/demo.py) on ls4x2 at its native-engine
rates (``--link-scale 10``: 100 Mbit/s links, 10 Mbit/s per flow in 1,400-byte
datagrams, a packet every ~2.2 ms per flow and rail), cuts and restores the l1-s1 link N times, and
prints per cut: how long packets were still lost after the cut for flows whose
source leaf is at the cut (local failover, decided by l1's data plane) and for
flows toward l1 (remote: the other leaves learn it from s1's in-band notice),
when every SyncMesh daemon agreed, and where the time goes (the cut until the
switch process logged the carrier loss). Median and worst over the cuts.
The published hardware figure is 45 us; this is a software switch (softswitch's
engine, native by default) on 2 shared cores. ``--link-scale 1 --size 172`` is the
Python engine's setting (200-byte datagrams every ~1.6 ms per flow and rail); small
datagrams at 10x overrun the hosts' Python senders (docs/testbed.md).
Needs root (Mininet). Usage: bench_testbed_failover.py [--cuts N] [--phase S] [--link-scale K] [--size B]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from topologies.demo import Scenario, run  # noqa: E402

LINE = re.compile(r"ts=(\S+)Z .* switch=(\S+) port_status port=(\d+) up=(\w+)")


def carrier_seen(log_dir: Path, switch: str, port: int, up: bool, after: float) -> float | None:
    """Seconds from ``after`` until the switch logged the port's carrier change."""
    path = log_dir / f"{switch}.softswitch.log"
    if not path.exists():
        return None
    for line in path.read_text().splitlines():
        m = LINE.search(line)
        if not m or int(m.group(3)) != port or (m.group(4) == "True") != up:
            continue
        t = dt.datetime.fromisoformat(m.group(1)).replace(tzinfo=dt.UTC).timestamp()
        if t >= after - 0.001:
            return t - after
    return None


def stats(values: list[float | None]) -> str:
    v = [x * 1000 for x in values if x is not None]
    if not v:
        return "n/a"
    return f"median {statistics.median(v):7.1f} ms   worst {max(v):7.1f} ms   (n={len(v)})"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cuts", type=int, default=5)
    p.add_argument("--phase", type=float, default=2.0)
    p.add_argument("--link-scale", type=float, default=10.0,
                   help="link rates = the fabric's capacities x this; the load per flow too")
    p.add_argument("--size", type=int, default=1372,
                   help="UDP payload bytes (1372: 1,400-byte datagrams, a scaled load in few "
                        "enough packets for the hosts' Python senders and receivers)")
    args = p.parse_args()
    if args.cuts < 1 or args.phase < 1 or not 0 < args.link_scale <= 1000 or \
            not 20 <= args.size <= 1400:
        p.error("need --cuts >= 1, --phase >= 1, 0 < --link-scale <= 1000, 20 <= --size <= 1400")
    if os.geteuid() != 0:
        print("bench_testbed_failover: skipped (needs root for Mininet)")
        return 0
    with tempfile.TemporaryDirectory(prefix="tb-bench-") as out:
        s = run(Scenario(phase_s=args.phase, rate_mbps=args.link_scale, size=args.size, prefix="tb",
                         out_dir=Path(out), quiet=True, fabric_cuts=args.cuts, nic_cut=False,
                         reccl=False, link_scale=args.link_scale))
        log_dir = Path(s["run_dir"]) / "logs"
        cuts = [e for e in s["events"] if e["kind"] == "cut"]
        link = cuts[0]["label"].split()[1]  # l1:3-s1:1
        (leaf, lport), (spine, sport) = (x.split(":") for x in link.split("-"))
        local = [f["local_outage_s"] for f in s["faults"]]
        remote = [f["remote_outage_s"] for f in s["faults"]]
        agree = [f["syncmesh_convergence_s"] for f in s["faults"]]
        leaf_seen = [carrier_seen(log_dir, f"tb{leaf}", int(lport), False, e["t"]) for e in cuts]
        spine_seen = [carrier_seen(log_dir, f"tb{spine}", int(sport), False, e["t"]) for e in cuts]
    datagram = args.size + 28  # IP + UDP headers
    pps = args.link_scale * 1.0e6 / (datagram * 8)
    engine = f", {s['engine']} engine" if s.get("engine") else ""
    print(f"testbed failover, {s['fabric']} (links x{args.link_scale:g}{engine}), link {link} cut "
          f"{len(cuts)} times under {len(s['flows'])} flows x {args.link_scale:g} Mbit/s of "
          f"{datagram}-byte datagrams (~{pps:.0f} pkt/s per flow); load average {os.getloadavg()[0]:.1f}")
    print(f"  local  (l1 data plane, flows from l1):        {stats(local)}")
    print(f"  remote (notice from {spine}, flows toward {leaf}):   {stats(remote)}")
    print(f"  SyncMesh: every daemon agrees link down:      {stats(agree)}")
    print(f"  where it goes: cut -> {leaf} logs carrier loss:  {stats(leaf_seen)}")
    print(f"                 cut -> {spine} logs carrier loss:  {stats(spine_seen)}")
    print(f"  lost per cut: {[f['lost'] for f in s['faults']]}; "
          f"all delivered packets correct: {s['correct']}")
    print("  (hardware reference: 45 us; an outage of 0 means no packet was lost, "
          f"below one packet interval per rail, ~{2000 / pps:.2g} ms on two rails)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
