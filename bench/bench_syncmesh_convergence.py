"""Time for every SyncMesh daemon to agree after a link failure, and after a daemon restart.

Runs all daemons of a leaf-spine fabric in this process (real gRPC streams with
mutual TLS on loopback, one asyncio loop, no switch attached): the protocol's
cost without the testbed (one process per switch, real switches:
bench/bench_syncmesh_testbed.py). A seeded RNG picks a leaf uplink;
its leaf daemon is told the port went down (as its switch would), and the
time until every daemon holds the same link view, with that link down, is
measured; then the port comes back and the same is measured for recovery.
Also measured: a daemon restarted after missing a failure, from its start to
agreeing with the others (session set-up plus full resync).

The daemons' cores record, per accepted change, the time from the owner
seeing it to accepting it (the convergence histogram of the metrics page);
the "agree" figure here is the wall time until the last daemon has it.

Usage: python bench/bench_syncmesh_convergence.py [--events N]
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

from syncmesh import certs  # noqa: E402
from syncmesh.certs import TlsFiles  # noqa: E402
from syncmesh.config import CoreConfig  # noqa: E402
from syncmesh.daemon import Daemon, DaemonOptions  # noqa: E402

from fabricmodel import leaf_spine  # noqa: E402
from testsupport import free_ports  # noqa: E402

CONFIG = CoreConfig()


def make(fab, name: str, cert_dir: Path) -> Daemon:
    return Daemon(fab, name, DaemonOptions(TlsFiles.in_dir(cert_dir, name),
                                           state_file=cert_dir / f"{name}.inc"), CONFIG)


def agreed(daemons, link: str, up: bool) -> bool:
    views = [d.core.link_view() for d in daemons]
    return views[0][link] is up and all(v == views[0] for v in views)


async def until(cond, timeout=20.0) -> float:
    t0 = time.perf_counter()
    while not cond():
        if time.perf_counter() - t0 > timeout:
            raise RuntimeError("no agreement within the timeout")
        await asyncio.sleep(0.0005)
    return time.perf_counter() - t0


async def run(leaves: int, spines: int, events: int, seed: int) -> dict:
    fab = leaf_spine(leaves, spines, 1, 1)
    ports = free_ports(len(fab.switches))
    fab = dataclasses.replace(fab, switches=tuple(
        dataclasses.replace(s, syncmesh=f"127.0.0.1:{p}")
        for s, p in zip(fab.switches, ports, strict=True)))
    cert_dir = Path(tempfile.mkdtemp(prefix="sm-bench-certs-"))
    certs.generate(fab, cert_dir)
    ds = {s.name: make(fab, s.name, cert_dir) for s in fab.switches}
    for d in ds.values():
        await d.start()
    rng = random.Random(seed)
    down, up = [], []
    try:
        await until(lambda: all(len(d.core.peers.up()) == len(d.core.peer_names)
                                for d in ds.values()))
        uplinks = [lk for lk in fab.links]
        for _ in range(events):
            lk = rng.choice(uplinks)
            leaf = ds[lk.leaf.switch]
            leaf.port_status({lk.leaf.port: False})
            down.append(await until(lambda lk=lk: agreed(ds.values(), lk.name, False)))
            leaf.port_status({lk.leaf.port: True})
            up.append(await until(lambda lk=lk: agreed(ds.values(), lk.name, True)))
        # restart: a leaf daemon misses a failure, then rejoins
        victim = fab.leaves[-1].name
        await ds[victim].stop()
        lk = next(lk for lk in fab.links if lk.leaf.switch != victim)
        ds[lk.leaf.switch].port_status({lk.leaf.port: False})
        others = [d for n, d in ds.items() if n != victim]
        await until(lambda: agreed(others, lk.name, False))
        fresh = make(fab, victim, cert_dir)
        ds[victim] = fresh
        t0 = time.perf_counter()
        await fresh.start()
        await until(lambda: agreed(ds.values(), lk.name, False))
        restart = time.perf_counter() - t0
        samples = [s for d in ds.values() for s in d.core.stats.convergence]
        return {"down": down, "up": up, "restart": restart, "samples": samples}
    finally:
        for d in ds.values():
            await d.stop()


def ms(x: float) -> str:
    return f"{x * 1000:.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=20, help="link failures per fabric")
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    print("SyncMesh agreement time after a link change (ms; all daemons hold the same view)")
    print(f"{'leaves':>6} {'spines':>6} | {'fail med':>8} {'fail max':>8} | {'recov med':>9} "
          f"{'recov max':>9} | {'per-daemon med':>14} | {'restart resync':>14}")
    for leaves, spines in [(2, 2), (4, 2), (8, 4), (16, 4)]:
        r = asyncio.run(run(leaves, spines, args.events, args.seed))
        print(f"{leaves:>6} {spines:>6} | {ms(statistics.median(r['down'])):>8} "
              f"{ms(max(r['down'])):>8} | {ms(statistics.median(r['up'])):>9} "
              f"{ms(max(r['up'])):>9} | {ms(statistics.median(r['samples'])):>14} | "
              f"{ms(r['restart']):>14}")
    print("(one Python process runs every daemon on 2 shared cores: times include queueing "
          "behind the other daemons; a leaf's notice takes two hops, leaf -> spines -> leaves)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
