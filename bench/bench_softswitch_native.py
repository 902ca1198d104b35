"""Native engine vs Python engine, in-process, in the same run: packets/s and the ratio.

Programs: (a) bench/programs/l3_router.p4 (lpm, ttl, checksum verify + update),
(b) bench/programs/ecmp_router.p4 (+ crc16 5-tuple hash, second table, register),
(c) p4src/sglb.p4 as a leaf in SGLB mode with feedback (flowlets, per-path state,
crc16/crc32 hashes, the tag pushed on every packet to another leaf).

Each engine gets the same table entries and the same packets. Figures are by the
process's CPU time (what one core delivers; this shared machine's other work
inflates wall-clock time), best of `--repeat` runs:
  python        Switch.process_packet per packet (the reference engine)
  native/pkt    Switch.process_packet per packet, engine="native" (one call into C each)
  native/batch  Switch.process_batch of a prepared batch: one call into C (no Python per packet)
The outputs of both engines are compared on the first 2,000 packets before timing.

Usage: python bench/bench_softswitch_native.py [--packets N] [--routes N] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_softswitch_engine import ipv4_packet, routes, setup_ecmp, setup_l3  # noqa: E402

from softswitch import Exact, Lpm, Switch, compile_file  # noqa: E402

PROGRAMS = ROOT / "bench" / "programs"


class FixedClock:
    """The same microsecond clock for both engines (SGLB reads it)."""

    def __init__(self) -> None:
        self.now = 1000

    def __call__(self) -> int:
        return self.now


def setup_sglb_leaf(sw: Switch, table_routes) -> None:
    """Leaf 0 in SGLB mode with feedback; 4 uplinks; every route leads to leaf 1 or 2."""
    from sglb.codes import LbMode, Role
    from sglb.config import profile_args, uplinks_args
    from sglb.settings import Feedback, SwitchSettings, SwitchTarget, switch_args

    settings = SwitchSettings(flowlet_gap_us=50, feedback=Feedback(enabled=True))
    sw.table_set_default("switch_config", "set_switch",
                         switch_args(SwitchTarget.V1MODEL, Role.LEAF, 0, 0x0200000000F0, settings,
                                     LbMode.SGLB))
    sw.table_set_default("uplinks", "set_uplinks", uplinks_args([1, 2, 3, 4], [8] * 4, 8))
    sw.table_add("port_neighbour", [Exact(10)], "bind_host", [])
    for i, port in enumerate((1, 2, 3, 4)):
        sw.table_add("port_neighbour", [Exact(port)], "bind_spine", [100 + i])
    for i, (prefix, plen) in enumerate(table_routes):
        sw.table_add("ipv4_route", [Lpm(prefix, plen)], "to_leaf", [1 + i % 2])
    for leaf in (1, 2):
        sw.table_add("dst_profile", [Exact(leaf)], "set_profile",
                     profile_args(0x0F, [0, 1, 0, 2], [1, 1, 2, 1], [], 8))


CASES = (
    ("(a) l3_router", lambda: compile_file(str(PROGRAMS / "l3_router.p4")), setup_l3, 1),
    ("(b) ecmp_router", lambda: compile_file(str(PROGRAMS / "ecmp_router.p4")), setup_ecmp, 1),
    ("(c) sglb leaf", lambda: compile_file(str(ROOT / "p4src" / "sglb.p4")), setup_sglb_leaf, 10),
)


def per_packet(sw: Switch, port: int, packets: list[bytes], repeat: int) -> tuple[float, int]:
    best, sent = 0.0, 0
    for _ in range(repeat):
        c0 = time.process_time()
        sent = 0
        for p in packets:
            sent += len(sw.process_packet(port, p))
        best = max(best, len(packets) / max(time.process_time() - c0, 1e-9))
    return best, sent


def batched(sw: Switch, port: int, packets: list[bytes], repeat: int) -> tuple[float, int]:
    best, sent = 0.0, 0
    batch = sw.prepare_batch(packets)  # laid out once, as a receive ring would hand them over
    for _ in range(repeat):
        c0 = time.process_time()
        sent, _, _ = sw.process_batch(port, batch)
        best = max(best, len(packets) / max(time.process_time() - c0, 1e-9))
    return best, sent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=20000, help="packets per run of the Python engine")
    ap.add_argument("--native-packets", type=int, default=1_000_000, help="packets per batched native run")
    ap.add_argument("--routes", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    rng = random.Random(7)
    table_routes = routes(args.routes, rng)
    dsts = [p + rng.randrange(1, 255) for p, _ in table_routes]
    packets = [ipv4_packet(rng, rng.choice(dsts)) for _ in range(args.packets)]
    many = (packets * (args.native_packets // len(packets) + 1))[: args.native_packets]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{len(table_routes)} routes, {len(packets)} distinct packets")
    failed = False
    for label, compile_prog, setup, port in CASES:
        prog = compile_prog()
        t0 = time.perf_counter()
        clock = FixedClock()
        py = Switch(prog, engine="python", clock=clock)
        t1 = time.perf_counter()
        nat = Switch(prog, engine="native", clock=clock)
        t2 = time.perf_counter()
        setup(py, table_routes)
        setup(nat, table_routes)
        for p in packets[:2000]:
            if py.process_packet(port, p) != nat.process_packet(port, p):
                print(f"{label}: the engines differ on {p.hex()}", file=sys.stderr)
                failed = True
                break
        py_pps, py_sent = per_packet(py, port, packets, args.repeat)
        pkt_pps, pkt_sent = per_packet(nat, port, packets, args.repeat)
        batch_pps, batch_sent = batched(nat, port, many, args.repeat)
        if py_sent != pkt_sent or py_sent != len(packets) or batch_sent != len(many):
            print(f"{label}: not every packet was forwarded (python {py_sent}, native {pkt_sent}, "
                  f"batch {batch_sent} of {len(many)})", file=sys.stderr)
            failed = True
        print(f"{label:16s} python {py_pps:9.0f} pkt/s | native/pkt {pkt_pps:10.0f} pkt/s "
              f"({pkt_pps / py_pps:5.1f}x) | native/batch {batch_pps:11.0f} pkt/s "
              f"({batch_pps / py_pps:6.1f}x, {1e9 / batch_pps:6.0f} ns/pkt) | "
              f"build python {(t1 - t0) * 1000:.0f} ms, native {(t2 - t1) * 1000:.0f} ms (cached after the first)")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
