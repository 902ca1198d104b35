"""Random packets for the differential tests of the native engine against the Python one.

`frames(rng, ...)` makes frames that reach deep into a program (Ethernet, IPv4
with a valid checksum, TCP/UDP ports, ARP, the SGLB EtherType with each header's
version/kind/length, port-status frames from the CPU port) and then breaks some
of them (truncated anywhere, bits flipped, random bytes). `run_both` sends the
same frames at the same clock to two switches and compares every output, and at
the end every register cell, counter cell and the stats, byte for byte.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from softswitch.engine.hashes import csum16

ETHERTYPES = (0x0800, 0x0806, 0x88B5, 0x88B6)


@dataclass
class FuzzClock:
    """A microsecond clock both switches of a pair read."""

    now: int = 1000

    def __call__(self) -> int:
        return self.now


def ipv4(rng: random.Random, dsts: list[int]) -> bytes:
    ihl = 5 if rng.random() < 0.9 else rng.randrange(16)
    version = 4 if rng.random() < 0.95 else rng.randrange(16)
    proto = rng.choice((6, 17, 17, 1, rng.randrange(256)))
    ttl = rng.choice((0, 1, 2, 64, 255))
    dst = rng.choice(dsts) if dsts and rng.random() < 0.85 else rng.getrandbits(32)
    head = bytearray(bytes([version << 4 | ihl, rng.randrange(256), 0, 0, rng.randrange(256),
                            rng.randrange(256), rng.randrange(256), rng.randrange(256), ttl,
                            proto, 0, 0]) + rng.getrandbits(32).to_bytes(4, "big")
                     + dst.to_bytes(4, "big"))
    if rng.random() < 0.9:
        head[10:12] = csum16(bytes(head)).to_bytes(2, "big")
    else:
        head[10:12] = rng.getrandbits(16).to_bytes(2, "big")
    l4 = rng.getrandbits(32).to_bytes(4, "big") + bytes(rng.randrange(4, 40))
    return bytes(head) + l4


def sglb_header(rng: random.Random) -> bytes:
    """A notice, probe or tag (kind 1..5), mostly with the right version and length."""
    kind = rng.choice((1, 2, 3, 4, 5, rng.randrange(256)))
    length = {1: 16, 2: 16, 3: 24, 4: 24, 5: 20}.get(kind, rng.randrange(256))
    if rng.random() < 0.1:
        length = rng.randrange(256)
    version = 1 if rng.random() < 0.9 else rng.randrange(256)
    body = bytearray(rng.getrandbits(8) for _ in range(max(length, 24) - 3))
    if rng.random() < 0.7 and len(body) > 4:
        body[0] = rng.choice((4, 8, 2))  # npaths / path-ish small values
        body[1] = 0
        body[2] = rng.randrange(4)
    return bytes([version, kind, length]) + bytes(body)


def frame(rng: random.Random, dsts: list[int], cpu: bool) -> bytes:
    et = rng.choice(ETHERTYPES + (rng.getrandbits(16),))
    eth = rng.getrandbits(48).to_bytes(6, "big") + rng.getrandbits(48).to_bytes(6, "big")
    if et == 0x0800:
        body = ipv4(rng, dsts)
    elif et == 0x0806:
        body = bytes([0, 1, 8, 0, 6, 4, 0, rng.choice((1, 2, 3))]) + bytes(rng.getrandbits(8) for _ in range(20))
    elif et == 0x88B5:
        body = bytes([1, rng.choice((0, 1, 2)), 0, rng.randrange(8)]) + rng.getrandbits(32).to_bytes(4, "big")
    elif et == 0x88B6:
        body = sglb_header(rng)
        if body[1] == 5 and rng.random() < 0.8:
            body = body[:18] + b"\x08\x00" + ipv4(rng, dsts)
    else:
        body = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 60)))
    data = eth + et.to_bytes(2, "big") + body
    if cpu:
        data = bytes([rng.choice((0, 1, 2)), 0]) + rng.randrange(0, 20).to_bytes(2, "big") + data
    return data


def mutate(rng: random.Random, data: bytes) -> bytes:
    r = rng.random()
    if r < 0.15:
        return data[: rng.randrange(0, len(data) + 1)]
    if r < 0.3:
        b = bytearray(data)
        for _ in range(rng.randrange(1, 4)):
            if b:
                b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        return bytes(b)
    if r < 0.33:
        return bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 80)))
    return data


def frames(rng: random.Random, n: int, ports: list[int], dsts: list[int],
           cpu_port: int = 255) -> Iterator[tuple[int, bytes, int]]:
    """(port, frame, microseconds to advance the clock first)."""
    for _ in range(n):
        port = rng.choice(ports)
        step = rng.choice((0, 0, 1, 7, 40, 60, 300, 5000, 70_000))
        yield port, mutate(rng, frame(rng, dsts, port == cpu_port)), step


def state(sw: Any) -> dict[str, Any]:
    """Every register cell, counter cell and the stats of a switch."""
    out: dict[str, Any] = {"stats": sw.stats}
    for name, reg in sorted(sw.registers.items()):
        out["reg " + name] = list(reg.values)
    for name, ctr in sorted(sw.counters.items()):
        out["ctr " + name] = (list(ctr.packets), list(ctr.bytes))
    return out


def run_both(make: Callable[[str, FuzzClock], Any], seed: int, n: int, ports: list[int],
             dsts: list[int], cpu_port: int = 255) -> tuple[int, int]:
    """Send the same frames to a python and a native switch; AssertionError at the first
    difference (naming the packet). Returns (packets sent, outputs)."""
    clock = FuzzClock()
    py, nat = make("python", clock), make("native", clock)
    assert py.engine == "python" and nat.engine == "native"
    rng = random.Random(seed)
    outputs = 0
    for i, (port, data, step) in enumerate(frames(rng, n, ports, dsts, cpu_port)):
        clock.now += step
        a = py.process_packet(port, data)
        b = nat.process_packet(port, data)
        assert a == b, f"seed {seed} packet {i} (port {port}, {data.hex()}): python {a} native {b}"
        outputs += len(a)
    sa, sb = state(py), state(nat)
    assert sa.keys() == sb.keys()
    for key in sa:
        assert sa[key] == sb[key], f"seed {seed}: {key} differs after {n} packets"
    return n, outputs
