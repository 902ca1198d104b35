"""Benchmark: p4src/sglb.p4 on the software target, SGLB mode against ECMP mode.

Prints packets/s through a leaf in both modes (and the ratio SGLB/ECMP
measured in the same run), the share of new flowlets per path for a 2:1
capacity profile, and how many packets of the flowlets on a path were sent to
it after its port went down (the data-plane failover reaction, in packets).
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sglb.codes import Event, LbMode, Role  # noqa: E402
from sglb.config import profile_args, uplinks_args  # noqa: E402
from sglb.headers import port_status_frame  # noqa: E402
from sglb.settings import SwitchSettings, SwitchTarget, switch_args  # noqa: E402

CPU_PORT = 255
UPLINKS = [1, 2, 3, 4]
MAC = 0x0200000000F0


class Clock:
    """Microsecond clock moved by the benchmark."""

    def __init__(self) -> None:
        self.now = 1000

    def __call__(self) -> int:
        return self.now


def leaf(program, mode: LbMode, weights=(1, 1, 1, 1)):
    """A leaf with 4 uplinks and a profile for leaf 1 (10.1/16)."""
    from softswitch import Exact, Lpm, Switch

    clock = Clock()
    sw = Switch(program, cpu_port=CPU_PORT, clock=clock)
    sw.table_set_default("switch_config", "set_switch", switch_args(
        SwitchTarget.V1MODEL, Role.LEAF, 0, MAC,
        SwitchSettings(flowlet_gap_us=50, tie_tolerance=0), mode))
    sw.table_set_default("uplinks", "set_uplinks", uplinks_args(UPLINKS, [8] * len(UPLINKS)))
    sw.table_add("ipv4_route", [Lpm(0x0A010000, 16)], "to_leaf", [1])
    sw.table_add("dst_profile", [Exact(1)], "set_profile",
                 profile_args(0x0F, [], list(weights)))
    return sw, clock


def frames(n: int, seed: int) -> list[bytes]:
    """n UDP frames of distinct seeded 5-tuples towards leaf 1."""
    rng = random.Random(seed)
    return [bytes(Ether(dst="02:00:00:00:00:f0") / IP(src=f"10.0.0.{rng.randrange(1, 255)}",
                                                       dst="10.1.0.5")
                  / UDP(sport=rng.randrange(1024, 65536), dport=4791) / (b"x" * 64))
            for _ in range(n)]


def rate(program, mode: LbMode, pkts: list[bytes]) -> float:
    """Packets/s through a fresh leaf in `mode`."""
    sw, clock = leaf(program, mode)
    start = time.perf_counter()
    for f in pkts:
        clock.now += 7
        sw.process_packet(10, f)
    return len(pkts) / (time.perf_counter() - start)


def main() -> int:
    from softswitch import compile_file

    program = compile_file(str(ROOT / "p4src" / "sglb.p4"))
    pkts = frames(3000, seed=1)
    ecmp = rate(program, LbMode.ECMP, pkts)
    sglb = rate(program, LbMode.SGLB, pkts)
    print(f"leaf forwarding, ECMP mode: {ecmp:10.0f} packets/s")
    print(f"leaf forwarding, SGLB mode: {sglb:10.0f} packets/s  (SGLB/ECMP = {sglb / ecmp:.2f})")

    sw, clock = leaf(program, LbMode.SGLB, weights=(2, 1, 0, 0))
    counts = dict.fromkeys(UPLINKS, 0)
    for f in frames(3000, seed=2):
        clock.now += 1000  # every packet a new flowlet, idle DREs
        counts[sw.process_packet(10, f)[0].port] += 1
    share = counts[UPLINKS[0]] / (counts[UPLINKS[0]] + counts[UPLINKS[1]])
    print(f"2:1 capacity, new flowlets on the big path: {share:.3f} (ideal 0.667)")

    sw, clock = leaf(program, LbMode.SGLB)
    flows = frames(400, seed=3)
    first = [sw.process_packet(10, f)[0].port for f in flows]
    sw.process_packet(CPU_PORT, port_status_frame(UPLINKS[0], up=False, seq=1))
    clock.now += 1
    after = [sw.process_packet(10, f)[0].port for f in flows]
    on_dead = sum(1 for a in after if a == UPLINKS[0])
    moved = sum(1 for b, a in zip(first, after, strict=True) if b == UPLINKS[0])
    print(f"port down mid-flowlet: {moved} of {len(flows)} flows were on the dead path; "
          f"{on_dead} of their next packets went to it; "
          f"{sw.counter_read('events', int(Event.FAILOVER))[0]} flowlet failovers counted "
          f"(flows hashed to one flowlet slot move together)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
