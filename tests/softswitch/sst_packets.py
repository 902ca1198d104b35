"""Small PTF-style helpers for the softswitch packet tests.

An expected packet is bytes plus a bit mask of the bits that must match
(PTF's `Mask`); `dont_care` clears the mask over a scapy field.  The verify
helpers compare what the switch emitted per port, in order, and fail with a
dump of what did arrive.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scapy.packet import Packet

STF_DIR = Path(__file__).parent / "stf"


@dataclass
class Expected:
    """Expected packet bytes and a same-length mask (1 bits must match)."""

    data: bytes
    mask: bytearray

    @classmethod
    def exact(cls, pkt: Packet | bytes) -> Expected:
        """An expectation where every bit matters."""
        data = bytes(pkt)
        return cls(data, bytearray(b"\xff" * len(data)))

    def dont_care(self, pkt: Packet, layer: type, field: str) -> Expected:
        """Ignore `field` of the first `layer` in `pkt` (offsets from the scapy layout)."""
        start_bits = (len(bytes(pkt)) - len(bytes(pkt[layer]))) * 8
        for f in pkt[layer].fields_desc:
            width = round(f.sz * 8)
            if f.name == field:
                for bit in range(start_bits, start_bits + width):
                    self.mask[bit // 8] &= ~(0x80 >> (bit % 8)) & 0xFF
                return self
            start_bits += width
        raise KeyError(f"{layer.__name__} has no field {field!r}")

    def matches(self, got: bytes) -> bool:
        """True when `got` has the same length and agrees on every masked bit."""
        if len(got) != len(self.data):
            return False
        return all((g ^ e) & m == 0 for g, e, m in zip(got, self.data, self.mask, strict=True))


def program(name: str):
    """Compile a program of the corpus directory once per call."""
    from softswitch import compile_file

    return compile_file(str(STF_DIR / name))


def _dump(outputs) -> str:
    if not outputs:
        return "  (nothing)"
    return "\n".join(f"  port {o.port}: {bytes(o.data).hex()}" for o in outputs)


def verify_packets(outputs, expected: list[tuple[int, Expected | Packet | bytes]]) -> None:
    """Outputs must be exactly `expected`: same ports, same order per port."""
    want: dict[int, list[Expected]] = {}
    for port, exp in expected:
        if not isinstance(exp, Expected):
            exp = Expected.exact(exp)
        want.setdefault(port, []).append(exp)
    got: dict[int, list[bytes]] = {}
    for o in outputs:
        got.setdefault(o.port, []).append(bytes(o.data))
    problems = []
    for port in sorted(set(want) | set(got)):
        w, g = want.get(port, []), got.get(port, [])
        if len(w) != len(g):
            problems.append(f"port {port}: expected {len(w)} packet(s), got {len(g)}")
            continue
        for i, (exp, data) in enumerate(zip(w, g, strict=True)):
            if not exp.matches(data):
                problems.append(
                    f"port {port} packet {i}:\n    expected {exp.data.hex()}\n"
                    f"    mask     {bytes(exp.mask).hex()}\n    got      {data.hex()}"
                )
    if problems:
        raise AssertionError("\n".join(problems) + "\nwhat arrived:\n" + _dump(outputs))


def verify_no_packets(outputs) -> None:
    """The switch must not have emitted anything."""
    if outputs:
        raise AssertionError("expected no packets, got:\n" + _dump(outputs))
