"""SyncMesh traffic per switch as the fabric grows: measured, then projected to 1,024 leaves.

Runs every daemon of a leaf-spine fabric in this process (real gRPC streams with
mutual TLS on loopback, no switch attached) for a measurement window while the
spines are fed port counters every 10 ms (the testbed's period) whose load
follows a seeded random walk, so profiles go out as deltas when levels move
and whole once a period. Prints messages and bytes per second per switch, for
leaves and spines (sent + received), and per spine-leaf session the rate of
deltas, their mean number of entries, and the rate of whole profiles.

The projection to 1,024 leaves uses those measured rates with the exact wire
sizes of the messages (encoded, not estimated): per session, a Hello each
way per keepalive interval, the deltas (the measured fraction of leaves per
delta) and the whole profile once a period. A spine's load grows with its
leaves and the entries per profile; a leaf's only with its spines.

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
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "controller"))

from syncmesh import certs, wire  # noqa: E402
from syncmesh.certs import TlsFiles  # noqa: E402
from syncmesh.config import CoreConfig  # noqa: E402
from syncmesh.daemon import Daemon, DaemonOptions  # noqa: E402
from syncmesh.linkstate import Version  # noqa: E402
from syncmesh.messages import Hello, ProfileUpdate  # noqa: E402
from syncmesh.profiles import Profile  # noqa: E402

from fabricmodel import leaf_spine  # noqa: E402
from testsupport import free_ports  # noqa: E402

CONFIG = CoreConfig()  # the defaults the daemon ships with
SIZES = [(2, 2), (4, 2), (8, 4), (16, 4)]
STEP = 0.01  # counter period of the spines (s)
STEP_SCALE = (STEP / 0.5) ** 0.5  # a random walk's spread grows with the square root of time


async def measure(leaves: int, spines: int, window: float, seed: int) -> dict:
    fab = leaf_spine(leaves, spines, 1, 1)
    ports = free_ports(len(fab.switches))
    fab = dataclasses.replace(fab, switches=tuple(
        dataclasses.replace(s, syncmesh=f"127.0.0.1:{p}")
        for s, p in zip(fab.switches, ports, strict=True)))
    cert_dir = Path(tempfile.mkdtemp(prefix="sm-bench-certs-"))
    certs.generate(fab, cert_dir)
    daemons = [Daemon(fab, s.name, DaemonOptions(TlsFiles.in_dir(cert_dir, s.name)), CONFIG)
               for s in fab.switches]
    for d in daemons:
        await d.start()
    rng = random.Random(seed)
    loads = {(d.name, p): 0.3 for d in daemons if not d.core.is_leaf for p in d.core.ports}
    totals = {k: 0 for k in loads}
    deltas: list[int] = []  # entries per delta sent
    try:
        deadline = time.monotonic() + 20
        while not all(len(d.core.peers.up()) == len(d.core.peer_names) for d in daemons):
            if time.monotonic() > deadline:
                raise RuntimeError("peer sessions did not come up")
            await asyncio.sleep(0.05)
        spine_daemons = [d for d in daemons if not d.core.is_leaf]
        for d in spine_daemons:  # count the entries of every delta the spine publishes
            pub = d.core.publisher
            assert pub is not None
            orig = pub.due

            def due(now, pub=pub, orig=orig):
                out = orig(now)
                if out is not None and out.delta:
                    deltas.append(len(out.profile.levels))
                return out
            pub.due = due  # type: ignore[method-assign]
        start = {d.name: (sum(d.transport.sent.values()) + sum(d.transport.received.values()),
                          sum(d.transport.sent_bytes.values())
                          + sum(d.transport.received_bytes.values())) for d in daemons}
        sent0 = {d.name: (d.transport.sent["profile"]) for d in spine_daemons}
        t0 = time.monotonic()
        while time.monotonic() - t0 < window:
            for d in spine_daemons:
                counters = {}
                for p in d.core.ports:
                    # the same walk as 0.08 per 0.5 s (the earlier version of this bench)
                    u = min(1.0, max(0.0, loads[d.name, p] + rng.gauss(0, 0.08 * STEP_SCALE)))
                    loads[d.name, p] = u
                    totals[d.name, p] += int(u * d.core.ports[p].capacity_mbps * 1e6 / 8 * STEP)
                    counters[p] = totals[d.name, p]
                d.counters(counters)
            await asyncio.sleep(STEP)
        elapsed = time.monotonic() - t0
        per = {}
        for d in daemons:
            msgs = sum(d.transport.sent.values()) + sum(d.transport.received.values())
            nbytes = sum(d.transport.sent_bytes.values()) + sum(d.transport.received_bytes.values())
            per[d.name] = ((msgs - start[d.name][0]) / elapsed,
                           (nbytes - start[d.name][1]) / elapsed)
        profiles = sum(d.transport.sent["profile"] - sent0[d.name] for d in spine_daemons)
        sessions = sum(len(d.core.peer_names) for d in spine_daemons)
        whole_rate = 1 / CONFIG.profile_period
        profile_rate = profiles / sessions / elapsed
        return {
            "leaf": [per[d.name] for d in daemons if d.core.is_leaf],
            "spine": [per[d.name] for d in spine_daemons],
            "delta_rate": max(0.0, profile_rate - whole_rate),
            "delta_fraction": statistics.mean(deltas) / leaves if deltas else 0.0,
            "whole_rate": whole_rate,
        }
    finally:
        for d in daemons:
            await d.stop()


def profile_bytes(entries: int, delta: bool) -> int:
    """Exact wire size of one profile message carrying ``entries`` entries at mid load."""
    prof = Profile("s1", Version(time.time_ns() // 10**6, 12345), CONFIG.level_bits,
                   tuple((i, 3) for i in range(1, entries + 1)))
    return len(wire.encode(ProfileUpdate(prof, delta)))


def hello_bytes() -> int:
    return len(wire.encode(Hello(time.time_ns() // 10**6, 123456)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--window", type=float, default=6.0, help="seconds measured per fabric")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--profile-threshold", type=int, default=CoreConfig.profile_threshold,
                    help="deltas when a level moves by more than this (the testbed runs 1)")
    args = ap.parse_args()
    global CONFIG
    CONFIG = dataclasses.replace(CONFIG, profile_threshold=args.profile_threshold)
    logging.basicConfig(level=logging.ERROR)  # the daemons' own log lines are not the output
    print(f"SyncMesh load per switch (keepalive {CONFIG.keepalive_interval}s, counters every "
          f"{STEP * 1000:.0f} ms, deltas when a level moves by > {CONFIG.profile_threshold}, "
          f"whole profile every {CONFIG.profile_period}s, {CONFIG.level_bits}-bit levels); "
          "messages sent + received, payload bytes")
    print(f"{'leaves':>6} {'spines':>6} | {'leaf msg/s':>10} {'leaf B/s':>10} | "
          f"{'spine msg/s':>11} {'spine B/s':>10} | {'deltas/s/session':>16} "
          f"{'entries/delta':>13}")
    rates, fractions = [], []
    for leaves, spines in SIZES:
        r = asyncio.run(measure(leaves, spines, args.window, args.seed))
        rates.append(r["delta_rate"])
        fractions.append(r["delta_fraction"])
        lm = statistics.mean(m for m, _ in r["leaf"])
        lb = statistics.mean(b for _, b in r["leaf"])
        sm = statistics.mean(m for m, _ in r["spine"])
        sb = statistics.mean(b for _, b in r["spine"])
        print(f"{leaves:>6} {spines:>6} | {lm:>10.1f} {lb:>10.0f} | {sm:>11.1f} {sb:>10.0f} | "
              f"{r['delta_rate']:>16.1f} {r['delta_fraction'] * leaves:>13.1f}")
    rate = statistics.mean(rates)
    fraction = statistics.mean(fractions)
    hello_rate = 1 / CONFIG.keepalive_interval
    hb = hello_bytes()
    print(f"\nprojection (per session: {rate:.1f} deltas/s with {fraction:.0%} of the leaves "
          f"each, a whole profile every {CONFIG.profile_period}s, a Hello every "
          f"{CONFIG.keepalive_interval}s each way; wire sizes encoded exactly):")
    print(f"{'leaves':>6} {'spines':>6} | {'leaf msg/s':>10} {'leaf B/s':>10} | "
          f"{'spine msg/s':>11} {'spine B/s':>12} | {'whole B':>8} {'delta B':>8}")
    for leaves, spines in [(2, 2), (16, 4), (64, 8), (256, 16), (1024, 32), (1024, 64)]:
        whole = profile_bytes(leaves, False)
        delta = profile_bytes(max(1, round(fraction * leaves)), True)
        per_msgs = 2 * hello_rate + rate + 1 / CONFIG.profile_period
        per_bytes = 2 * hello_rate * hb + rate * delta + whole / CONFIG.profile_period
        print(f"{leaves:>6} {spines:>6} | {spines * per_msgs:>10.0f} "
              f"{spines * per_bytes:>10.0f} | {leaves * per_msgs:>11.0f} "
              f"{leaves * per_bytes:>12.0f} | {whole:>8} {delta:>8}")
    print("(a spine's bytes grow as leaves^2: every leaf gets entries for every leaf; deltas "
          "carry only what moved)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
