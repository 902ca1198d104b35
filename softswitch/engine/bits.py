"""Bit-level packet access and P4_16 value semantics (spec section 8: expressions)."""

from __future__ import annotations

from .errors import PacketTooShort


def read_bits(data: bytes, bitpos: int, width: int) -> int:
    """Read `width` bits starting at bit `bitpos` (network order); PacketTooShort past the end."""
    end_bit = bitpos + width
    if end_bit > len(data) * 8:
        raise PacketTooShort(f"need {end_bit} bits, packet has {len(data) * 8}")
    if width == 0:
        return 0
    start = bitpos >> 3
    end = (end_bit + 7) >> 3
    value = int.from_bytes(data[start:end], "big")
    return (value >> (end * 8 - end_bit)) & ((1 << width) - 1)


class BitWriter:
    """Accumulates fields of arbitrary widths into a big-endian bit string."""

    __slots__ = ("value", "nbits")

    def __init__(self) -> None:
        self.value = 0
        self.nbits = 0

    def put(self, value: int, width: int) -> None:
        """Append the low `width` bits of `value`."""
        self.value = (self.value << width) | (value & ((1 << width) - 1))
        self.nbits += width

    def to_bytes(self) -> bytes:
        """The accumulated bits, zero-padded at the end to whole bytes."""
        pad = (-self.nbits) % 8
        return (self.value << pad).to_bytes((self.nbits + pad) // 8, "big")


def mask(width: int) -> int:
    """All-ones value of `width` bits."""
    return (1 << width) - 1


def to_signed(value: int, width: int) -> int:
    """Wrap an integer into int<width> two's complement range (spec 8.6)."""
    value &= (1 << width) - 1
    if value >> (width - 1):
        value -= 1 << width
    return value


def to_unsigned(value: int, width: int) -> int:
    """Wrap an integer into bit<width> (spec 8.5: arithmetic modulo 2^W)."""
    return value & ((1 << width) - 1)


def sat_add_unsigned(a: int, b: int, width: int) -> int:
    """Saturating |+| on bit<W> (spec 8.5)."""
    return min(a + b, (1 << width) - 1)


def sat_sub_unsigned(a: int, b: int, width: int) -> int:
    """Saturating |-| on bit<W> (spec 8.5)."""
    return max(a - b, 0)


def sat_signed(value: int, width: int) -> int:
    """Clamp an exact result to the range of int<W> (saturating |+| |-| on signed, spec 8.6)."""
    lo = -(1 << (width - 1))
    hi = (1 << (width - 1)) - 1
    return lo if value < lo else hi if value > hi else value


def shl(value: int, amount: int, width: int) -> int:
    """Left shift of bit<W>/int<W>: bits shifted past the width are lost (spec 8.5)."""
    if amount >= width:
        return 0
    return (value << amount) & ((1 << width) - 1)


def shr_signed(value: int, amount: int, width: int) -> int:
    """Arithmetic right shift of int<W> (spec 8.6)."""
    return value >> min(amount, width)


def slice_bits(value: int, hi: int, lo: int) -> int:
    """e[hi:lo] of an unsigned or two's complement value (spec 8.5)."""
    return (value >> lo) & ((1 << (hi - lo + 1)) - 1)


def set_slice(value: int, hi: int, lo: int, new: int) -> int:
    """Value with bits hi..lo replaced by `new`."""
    m = ((1 << (hi - lo + 1)) - 1) << lo
    return (value & ~m) | ((new << lo) & m)


def concat(a: int, b: int, b_width: int) -> int:
    """a ++ b where b has b_width bits (operands taken as unsigned bit strings)."""
    return (a << b_width) | (b & ((1 << b_width) - 1))


def truncating_div(a: int, b: int) -> int:
    """Division on non-negative values; division by zero yields 0 as BMv2 does not trap."""
    return a // b if b else 0


def read_varbit_bytes(value: int, nbits: int) -> bytes:
    """Bytes of a varbit value of nbits (nbits a multiple of 8)."""
    return value.to_bytes(nbits // 8, "big") if nbits else b""
