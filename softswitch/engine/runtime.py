"""Objects the generated code uses at run time: packet context, stacks, signals."""

from __future__ import annotations

import logging
import random as _random

from .bits import read_bits
from .errors import PacketDropped, PacketTooShort, ParserReject

log = logging.getLogger("softswitch.engine")

__all__ = [
    "PacketContext",
    "PacketOut",
    "HeaderStack",
    "ExitSignal",
    "PacketDropped",
    "PacketTooShort",
    "ParserReject",
    "read_bits",
]


class ExitSignal(Exception):
    """`exit;`: leaves the top-level control being applied (spec 12.5.5)."""


class PacketOut:
    """Bytes emitted by the deparser; partial bytes accumulate in a bit buffer."""

    __slots__ = ("parts", "acc", "nbits")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.acc = 0
        self.nbits = 0

    def put(self, value: int, width: int) -> None:
        """Append the low `width` bits of `value`."""
        if not self.nbits and not width & 7:
            self.parts.append((value & ((1 << width) - 1)).to_bytes(width >> 3, "big"))
            return
        self.acc = (self.acc << width) | (value & ((1 << width) - 1))
        self.nbits += width
        if not self.nbits & 7:
            self.parts.append(self.acc.to_bytes(self.nbits >> 3, "big"))
            self.acc = 0
            self.nbits = 0

    def getvalue(self) -> bytes:
        """All emitted bytes; a trailing partial byte is zero-padded."""
        if self.nbits:
            pad = (-self.nbits) % 8
            self.parts.append((self.acc << pad).to_bytes((self.nbits + pad) >> 3, "big"))
            self.acc = 0
            self.nbits = 0
        return b"".join(self.parts)


class HeaderStack:
    """A header stack: `e` the elements, `n` nextIndex (spec 8.18)."""

    __slots__ = ("e", "n")

    def __init__(self, elements: list) -> None:
        self.e = elements
        self.n = 0

    def copy(self) -> HeaderStack:
        """Deep copy (P4 assignment copies values)."""
        s = HeaderStack([h.copy() for h in self.e])
        s.n = self.n
        return s

    def push_front(self, count: int) -> None:
        """Shift elements up by `count`; the first `count` become invalid (spec 8.18)."""
        size = len(self.e)
        count = min(count, size)
        if count <= 0:
            return
        cls = type(self.e[0])
        self.e[count:] = self.e[: size - count]
        self.e[:count] = [cls() for _ in range(count)]
        self.n = min(self.n + count, size)

    def pop_front(self, count: int) -> None:
        """Shift elements down by `count`; the last `count` become invalid (spec 8.18)."""
        size = len(self.e)
        count = min(count, size)
        if count <= 0:
            return
        cls = type(self.e[0])
        self.e[: size - count] = self.e[count:]
        self.e[size - count :] = [cls() for _ in range(count)]
        self.n = max(self.n - count, 0)

    def next_for_extract(self):
        """Element at nextIndex for extract; StackOutOfBounds when full."""
        if self.n >= len(self.e):
            raise ParserReject("StackOutOfBounds")
        return self.e[self.n]

    def last(self):
        """Element at nextIndex - 1; StackOutOfBounds when empty."""
        if self.n == 0:
            raise ParserReject("StackOutOfBounds")
        return self.e[self.n - 1]


class PacketContext:
    """Per-pass state of one packet: input bytes, parse position and the extern requests.

    Rarely set requests (clone, resubmit, ...) are class-level defaults, so a
    packet pays only for what its program asks for.
    """

    payload = b""
    out: PacketOut | None = None
    sm = None
    clone_i2e = None
    clone_e2e = None
    resubmit = None
    recirc = None
    truncate = 0
    dm = 0

    def __init__(self, sw, data: bytes, now: int) -> None:
        self.sw = sw
        self.data = data
        self.pos = 0
        self.nbits = len(data) * 8
        self.length = len(data)
        self.plen = len(data)  # BMv2's packet length register, moved by add/remove_header
        self.now = now
        self.digests: list = []


def random_value(lo: int, hi: int) -> int:
    """v1model random(): uniform in [lo, hi] (lo when hi < lo)."""
    if hi <= lo:
        return lo
    return _random.randint(lo, hi)


def log_msg(msg: str, values: tuple = ()) -> None:
    """v1model log_msg: `{}` placeholders replaced by the values in order."""
    parts = msg.split("{}")
    text = parts[0]
    for i, rest in enumerate(parts[1:]):
        text += (str(values[i]) if i < len(values) else "{}") + rest
    log.info("log_msg: %s", text)


def agg_fields(value) -> tuple:
    """Comparable content of a header/struct/stack value (for == and !=)."""
    if isinstance(value, HeaderStack):
        return tuple(agg_fields(h) for h in value.e)
    slots = getattr(type(value), "__slots__", None)
    if slots is None:
        return value
    if "_v" in slots and not value._v:
        return (False,)  # two invalid headers are equal whatever their fields
    return tuple(agg_fields(getattr(value, s)) for s in slots)


def assign_into(dst, src) -> None:
    """Overwrite aggregate `dst` with the content of `src` (a fresh copy), keeping its identity."""
    if isinstance(dst, HeaderStack):
        dst.e = src.e
        dst.n = src.n
        return
    for slot in type(dst).__slots__:
        setattr(dst, slot, getattr(src, slot))


def pack_dynamic(items: tuple) -> tuple[int, int]:
    """(value, bit count) of (value, width, included) triples packed left to right."""
    acc = 0
    n = 0
    for v, w, ok in items:
        if ok:
            acc = (acc << w) | (v & ((1 << w) - 1))
            n += w
    return acc, n
