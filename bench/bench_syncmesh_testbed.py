"""SyncMesh on the 4x2 Mininet testbed, one `syncmesh run` process per switch: update latency.

Two figures, median and p99 (target: 10 ms each):

* **link cut -> all daemons agree**: a seeded RNG picks a leaf-spine link; it is
  cut (`ip link set down` at the spine end, the leaf loses carrier), and the
  figure is the time from the kernel's carrier change (the first netlink
  message about either end, as this process reads it) until the last of the
  six daemons changed its view of that link (each daemon stamps the change
  with its own clock, `syncmesh_link_changed_seconds`; one machine, one
  clock; when a daemon stamped the change before that process read it, the
  daemon's stamp is the reference). Restores are measured the same way. Split into detection (until the
  first daemon, an end of the link, saw it: its own netlink watch) and spread
  (first to last daemon: SyncMesh). Also shown: from just before Mininet's
  command, which itself takes several ms to reach the kernel.
* **spine link saturates -> every leaf's profile updated**: with l1-s2 and
  l2-s2 cut, two hosts behind l1 and l2 send 10 Mbit/s each to hosts behind
  l3, so s1's 10 Mbit/s downlink to l3 is offered twice its capacity from the
  first packet. The figure is the time from the first datagram sent (the
  senders' own log) until every leaf that routes to l3 (l1, l2, l4) has
  written level 6 or 7 (of 7) for its path through s1 into its switch
  (`syncmesh_remote_congested_since_seconds`: the P4Runtime write completed).
  Split into detection (until s1 published the level: its counter period,
  `--counter-interval`, 10 ms here) and spread (until the last leaf's write).

Needs root (Mininet); run it under the network lock:
    flock /tmp/sglb-net.lock .venv/bin/python bench/bench_syncmesh_testbed.py
Usage: bench_syncmesh_testbed.py [--cuts N] [--saturations N] [--seed S]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "controller"))

from fabricmodel import load  # noqa: E402
from rtnetlink import LinkWatch  # noqa: E402
from topologies.control import ControlOptions, FabricControl, value  # noqa: E402
from topologies.mininet_fabric import FabricNet, NetOptions  # noqa: E402

PREFIX = "sb"
PORT = 9100


def percentile(xs: list[float], q: float) -> float:
    return float(np.percentile(np.array(xs), q))


def show(label: str, xs: list[float]) -> str:
    ms = [x * 1000 for x in xs]
    return (f"{label:<44} median {statistics.median(ms):6.1f} ms   p99 {percentile(ms, 99):6.1f} ms"
            f"   max {max(ms):6.1f} ms   (n={len(ms)})")


def wait(cond, what: str, timeout: float = 15.0, every: float = 0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got is not None and got is not False:
            return got
        time.sleep(every)
    raise RuntimeError(f"timed out waiting for {what}")


def changed_times(control: FabricControl, link: str) -> dict[str, float]:
    return {name: value(page, "syncmesh_link_changed_seconds", link=link) or 0.0
            for name, page in control.all_metrics().items()}


class CarrierClock:
    """When the kernel changed a link's carrier: a child process reads rtnetlink and prints a
    time stamp per change (its own process, so that this one's polling never delays it)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, bool, float]] = []
        self._proc = subprocess.Popen([sys.executable, __file__, "--carrier-clock"],
                                      stdout=subprocess.PIPE, text=True,
                                      preexec_fn=lambda: os.nice(-10))
        assert self._proc.stdout is not None
        assert self._proc.stdout.readline().strip() == "ready"
        self._thread = threading.Thread(target=self._read, daemon=True, name="carrier-clock")
        self._thread.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            name, carrier, at = line.split()
            self.seen.append((name, carrier == "1", float(at)))

    def first(self, names: set[str], carrier: bool, after: float) -> float | None:
        times = [t for n, c, t in list(self.seen) if n in names and c is carrier and t >= after]
        return min(times) if times else None

    def close(self) -> None:
        self._proc.terminate()
        self._proc.wait(5)


def carrier_clock() -> int:
    """The child of ``CarrierClock``: one line per carrier change, 'name 0|1 unix-time'."""
    watch = LinkWatch()
    print("ready", flush=True)
    while True:
        select.select([watch.fileno()], [], [])
        now = time.time()
        for lk in watch.read():
            print(f"{lk.name} {int(lk.carrier)} {now:.6f}", flush=True)


def cut_events(fnet: FabricNet, control: FabricControl, n: int, rng: random.Random) -> dict:
    out: dict[str, list] = {"down": [], "up": [], "detect": [], "spread": [], "from_command": [],
                            "events": []}
    links = list(fnet.fabric.links)
    clock = CarrierClock()
    try:
        for _ in range(n):
            lk = rng.choice(links)
            ends = {fnet.switch_intf(lk.leaf.switch, lk.leaf.port),
                    fnet.switch_intf(lk.spine.switch, lk.spine.port)}
            for up in (False, True):
                t0 = time.time()
                fnet.set_link(lk, up=up)
                t1 = time.time()
                # the daemons stamp their own changes: slow polling changes no figure, and
                # keeps the metrics pages from taking CPU from the daemons meanwhile
                at = wait(lambda lk=lk, up=up: control.agreed_at(lk.name, up),
                          f"{lk.name} agreed", every=0.2)
                kernel = wait(lambda e=ends, up=up, t0=t0: clock.first(e, up, t0),
                              "the carrier change")
                per = changed_times(control, lk.name)
                first = min(per.values())
                # the carrier-clock process, on a loaded machine, may print after a daemon
                # already stamped the change: the earliest evidence is the reference
                kernel = min(kernel, first)
                out["events"].append({"link": lk.name, "up": up, "command_s": t1 - t0,
                                      "kernel_s": kernel - t0,
                                      "seen_s": {k: round(v - t0, 4) for k, v in per.items()}})
                out["up" if up else "down"].append(at - kernel)
                out["from_command"].append(at - t0)
                out["detect"].append(first - kernel)
                out["spread"].append(at - first)
                time.sleep(0.15)
    finally:
        clock.close()
    return out


def congested_since(control: FabricControl, leaves: list[str]) -> dict[str, float | None]:
    """Per leaf: since when its switch holds a top level toward l3 on path 0 (through s1)."""
    return {leaf: value(control.metrics(leaf), "syncmesh_remote_congested_since_seconds",
                        dst_leaf="3", path="0") for leaf in leaves}


def saturation_events(fnet: FabricNet, control: FabricControl, n: int, work: Path) -> dict:
    fab = fnet.fabric
    out: dict[str, list] = {"updated": [], "detect": [], "spread": [], "skipped": []}
    cuts = [fnet.find_link("l1", "s2"), fnet.find_link("l2", "s2")]
    for lk in cuts:  # all traffic from l1 and l2 toward l3 crosses s1
        fnet.set_link(lk, up=False)
        wait(lambda lk=lk: control.agreed_at(lk.name, False), f"{lk.name} down")
    leaves = [lf.name for lf in fab.leaves if lf.name != "l3"]
    py = sys.executable
    # (host, source NIC, destination host, destination NIC): l1 -> l3 and l2 -> l3
    flows = [("h2", 0, "h3", 0), ("h1", 1, "h4", 0)]
    receivers = []
    try:
        for dst in ("h3", "h4"):
            ip = str(fab.host(dst).nics[0].ip)
            receivers.append(fnet.host(dst).popen(
                [py, "-m", "topologies.udpload", "recv", "--listen", ip, "--port", str(PORT),
                 "--duration", str(3 + n * 3.0), "--out", str(work / f"recv-{dst}.npz")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO))
        time.sleep(1.0)
        for i in range(n):
            wait(lambda: all(at is None for at in congested_since(control, leaves).values()),
                 "levels back down before the next event", every=0.2)
            start = time.time() + 2.0  # both senders are up by then (python starts slowly)
            senders = []
            for k, (src, nic, dst, dnic) in enumerate(flows):
                s_nic, d_nic = fab.host(src).nics[nic], fab.host(dst).nics[dnic]
                senders.append(fnet.host(src).popen(
                    [py, "-m", "topologies.udpload", "send", "--flow", str(k),
                     "--src", str(s_nic.ip), "--ifaces", fnet.nic_intf(src, s_nic),
                     "--dst", str(d_nic.ip), "--port", str(PORT), "--rate-mbps", "12",
                     "--size", "1200", "--duration", "1.0", "--start-at", str(start),
                     "--out", str(work / f"send-{i}-{k}.npz")],
                    stdout=subprocess.DEVNULL, stderr=open(work / f"send-{i}-{k}.err", "w"),
                    cwd=REPO))

            def high():
                got = congested_since(control, leaves)
                if all(at is not None for at in got.values()):
                    spine = value(control.metrics("s1"),
                                  "syncmesh_profile_congested_since_seconds", dst_leaf="3")
                    return got, spine
                return None
            try:
                got, spine = wait(high, "every leaf's profile updated", timeout=10, every=0.2)
            except RuntimeError:
                got = None
            for p in senders:
                p.wait(timeout=30)
            sent = [np.load(work / f"send-{i}-{k}.npz")["send_ns"] for k in range(len(flows))]
            if not all(len(x) for x in sent):  # started after its end (a loaded machine)
                out["skipped"].append(i)
                print(f"saturation {i}: a sender sent nothing, event left out: "
                      + " | ".join((work / f"send-{i}-{k}.err").read_text()[-200:]
                                   for k in range(len(flows))))
                continue
            if got is None:
                raise RuntimeError(f"saturation {i}: the leaves never read s1's link to l3 "
                                   "as congested")
            first = min(int(x[0]) for x in sent) / 1e9
            last = max(got.values())
            out["updated"].append(last - first)
            out["detect"].append(spine - first)
            out["spread"].append(last - spine)
            time.sleep(0.5)
    finally:
        for p in receivers:
            p.terminate()
        for lk in cuts:
            fnet.set_link(lk, up=True)
    return out


def main() -> int:
    if sys.argv[1:] == ["--carrier-clock"]:
        return carrier_clock()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cuts", type=int, default=40, help="links cut (and restored)")
    ap.add_argument("--saturations", type=int, default=40, help="saturation events")
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--json", type=Path, help="also write the samples here")
    ap.add_argument("--nice", type=int, default=0,
                    help="priority change of the daemon processes (e.g. -10)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_syncmesh_testbed: skipped (needs root for Mininet)")
        return 0
    fabric = load(REPO / "topologies" / "fabrics" / "ls4x2.yaml")
    work = REPO / "out" / time.strftime("sm-testbed-%Y%m%d-%H%M%S")  # kept: the daemons' logs
    work.mkdir(parents=True, exist_ok=True)
    fnet = FabricNet(fabric, NetOptions(prefix=PREFIX, log_dir=work / "logs"))
    control = None
    try:
        fnet.start()
        opts = ControlOptions(intf_prefix=PREFIX, nice=args.nice)
        control = FabricControl(fnet.fabric, REPO / "p4src" / "sglb.p4", opts,
                                work_dir=work)
        control.start()
        control.wait_programmed()
        time.sleep(1.0)
        cuts = cut_events(fnet, control, args.cuts, random.Random(args.seed))
        sats = saturation_events(fnet, control, args.saturations, work)
        control.alive()
        rejected = control.total("syncmesh_rejected_total")
    finally:
        if control is not None:
            control.stop()
        fnet.stop()
    print(f"run folder (daemon and switch logs): {work}")
    print(f"SyncMesh on the {fabric.name} testbed: one daemon process per switch (mutual TLS), "
          f"spines read counters every {opts.counter_interval * 1000:.0f} ms, keepalive "
          f"{opts.keepalive} s; softswitch, 2 shared cores")
    print(show("link cut -> all daemons agree", cuts["down"]))
    print(show("link restored -> all daemons agree", cuts["up"]))
    print(show("  of which: carrier change -> first daemon", cuts["detect"]))
    print(show("  of which: first -> last daemon (SyncMesh)", cuts["spread"]))
    print(show("cut or restore, from Mininet's command", cuts["from_command"]))
    print(show("spine link saturates -> every leaf updated", sats["updated"]))
    print(show("  of which: first packet -> spine publishes", sats["detect"]))
    print(show("  of which: spine -> last leaf's switch write", sats["spread"]))
    print(f"messages refused during the run: {rejected:.0f}")
    if args.json:
        args.json.write_text(json.dumps({"cuts": cuts, "saturations": sats}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
