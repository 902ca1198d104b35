"""SyncMesh traffic per switch as the fabric grows: measured, then projected to 1,024 leaves.

Runs every daemon of a leaf-spine fabric (real gRPC on loopback, one asyncio
loop in this process, no switch attached) for a measurement window while the
spines are fed port counters whose load follows a seeded random walk, so
profiles go out both on change (threshold) and on the period. Prints messages
and bytes per second per switch, for leaves and spines, sent and received.

The projection to 1,024 leaves uses the measured per-peer message rates and
the exact wire size of a profile with L entries (encoded, not estimated):
a spine sends every leaf its profile (size grows with L) and a Hello; a leaf
talks only to its spines, so its load does not grow with L except for the
size of the profiles it receives.

Usage: python bench/bench_syncmesh_scale.py [--window SECONDS]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "controller"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from syncmesh import wire  # noqa: E402
from syncmesh.config import CoreConfig  # noqa: E402
from syncmesh.daemon import Daemon, DaemonOptions  # noqa: E402
from syncmesh.linkstate import Version  # noqa: E402
from syncmesh.messages import Hello, HelloReply, ProfileUpdate  # noqa: E402
from syncmesh.profiles import Profile  # noqa: E402
from testsupport import free_ports  # noqa: E402

from fabricmodel import leaf_spine  # noqa: E402

CONFIG = CoreConfig()  # the defaults the daemon ships with
SIZES = [(2, 2), (4, 2), (8, 4), (16, 4)]
TOKEN = "bench-token"


async def measure(leaves: int, spines: int, window: float, seed: int) -> dict:
    fab = leaf_spine(leaves, spines, 1, 1)
    ports = free_ports(len(fab.switches))
    fab = dataclasses.replace(fab, switches=tuple(
        dataclasses.replace(s, syncmesh=f"127.0.0.1:{p}")
        for s, p in zip(fab.switches, ports, strict=True)))
    daemons = [Daemon(fab, s.name, DaemonOptions(token=TOKEN), CONFIG) for s in fab.switches]
    for d in daemons:
        await d.start()
    rng = random.Random(seed)
    loads = {(d.name, p): 0.3 for d in daemons if not d.core.is_leaf for p in d.core.ports}
    totals = {k: 0 for k in loads}
    try:
        deadline = time.monotonic() + 10
        while not all(len(d.core.peers.up()) == len(d.core.peer_names) for d in daemons):
            if time.monotonic() > deadline:
                raise RuntimeError("peer sessions did not come up")
            await asyncio.sleep(0.05)
        start = {d.name: (sum(d.transport.sent.values()) + sum(d.transport.received.values()),
                          sum(d.transport.sent_bytes.values())
                          + sum(d.transport.received_bytes.values())) for d in daemons}
        t0 = time.monotonic()
        step = 0.5  # counter polling interval of the daemon
        while time.monotonic() - t0 < window:
            for d in daemons:
                if d.core.is_leaf:
                    continue
                counters = {}
                for p in d.core.ports:
                    u = min(1.0, max(0.0, loads[d.name, p] + rng.gauss(0, 0.08)))
                    loads[d.name, p] = u
                    totals[d.name, p] += int(u * d.core.ports[p].capacity_mbps * 1e6 / 8 * step)
                    counters[p] = totals[d.name, p]
                d.counters(counters)
            await asyncio.sleep(step)
        elapsed = time.monotonic() - t0
        per = {}
        for d in daemons:
            msgs = sum(d.transport.sent.values()) + sum(d.transport.received.values())
            nbytes = sum(d.transport.sent_bytes.values()) + sum(d.transport.received_bytes.values())
            per[d.name] = ((msgs - start[d.name][0]) / elapsed,
                           (nbytes - start[d.name][1]) / elapsed)
        profiles_sent = [d.transport.sent["profile"] / max(1, len(d.core.peer_names))
                         for d in daemons if not d.core.is_leaf]
        return {
            "leaf": [per[d.name] for d in daemons if d.core.is_leaf],
            "spine": [per[d.name] for d in daemons if not d.core.is_leaf],
            "profile_rate_per_peer": statistics.mean(profiles_sent) / (time.monotonic() - t0),
            "hello_rate": 1 / CONFIG.keepalive_interval,
        }
    finally:
        for d in daemons:
            await d.stop()


def profile_bytes(leaves: int) -> int:
    """Exact wire size of one ProfileUpdate carrying ``leaves`` entries at mid load."""
    prof = Profile("s1", Version(time.time_ns(), 12345), CONFIG.level_bits,
                   tuple((i, 3) for i in range(1, leaves + 1)))
    return len(wire.encode(ProfileUpdate("s1", prof)))


def hello_bytes() -> int:
    return (len(wire.encode(Hello("l1000", time.time_ns(), 123456)))
            + len(wire.encode(HelloReply("s1", time.time_ns()))))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--window", type=float, default=6.0, help="seconds measured per fabric")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)  # the daemons' own log lines are not the output
    print(f"SyncMesh load per switch (keepalive {CONFIG.keepalive_interval}s, profile period "
          f"{CONFIG.profile_period}s, threshold {CONFIG.profile_threshold} level(s), "
          f"{CONFIG.level_bits}-bit levels); counts are messages sent + received, payload bytes")
    print(f"{'leaves':>6} {'spines':>6} | {'leaf msg/s':>10} {'leaf B/s':>10} | "
          f"{'spine msg/s':>11} {'spine B/s':>10} | {'profiles/s/peer':>15}")
    rates = []
    for leaves, spines in SIZES:
        r = asyncio.run(measure(leaves, spines, args.window, args.seed))
        rates.append(r["profile_rate_per_peer"])
        lm = statistics.mean(m for m, _ in r["leaf"])
        lb = statistics.mean(b for _, b in r["leaf"])
        sm = statistics.mean(m for m, _ in r["spine"])
        sb = statistics.mean(b for _, b in r["spine"])
        print(f"{leaves:>6} {spines:>6} | {lm:>10.1f} {lb:>10.0f} | {sm:>11.1f} {sb:>10.0f} | "
              f"{r['profile_rate_per_peer']:>15.2f}")
    # Projection. Per peer and per keepalive interval each side sends one Hello and answers
    # one (2 calls counted per side); a spine sends each leaf its profile at the measured
    # rate, answered by a 2-byte Ack. Bytes are payload both ways, gRPC framing excluded.
    rate = statistics.mean(rates)
    hello_rate = 1 / CONFIG.keepalive_interval
    hb = hello_bytes()
    ack = len(wire.encode_ack(True))
    print(f"\nprojection (measured profile rate {rate:.2f}/s per peer, a Hello every "
          f"{CONFIG.keepalive_interval}s each way, wire sizes encoded exactly):")
    print(f"{'leaves':>6} {'spines':>6} | {'leaf msg/s':>10} {'leaf B/s':>10} | "
          f"{'spine msg/s':>11} {'spine B/s':>12} | {'profile B':>9}")
    for leaves, spines in [(2, 2), (16, 4), (64, 8), (256, 16), (1024, 32), (1024, 64)]:
        pb = profile_bytes(leaves)
        per_peer_msgs = 2 * hello_rate + rate
        per_peer_bytes = 2 * hello_rate * hb + rate * (pb + ack)
        print(f"{leaves:>6} {spines:>6} | {spines * per_peer_msgs:>10.0f} "
              f"{spines * per_peer_bytes:>10.0f} | {leaves * per_peer_msgs:>11.0f} "
              f"{leaves * per_peer_bytes:>12.0f} | {pb:>9}")
    print("(a spine's bytes grow as leaves^2: every leaf gets a profile with one entry per leaf)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
