"""Hash and checksum algorithms as BMv2 implements them (v1model HashAlgorithm).

Field lists are packed bit by bit, left-aligned, into a byte buffer padded with
zero bits at the end, as BMv2's calculation buffer builder does; the algorithm
then runs over those bytes.
"""

from __future__ import annotations

import binascii
import random as _random
import zlib
from collections.abc import Callable
from dataclasses import dataclass


def _reflect(value: int, width: int) -> int:
    out = 0
    for _ in range(width):
        out = (out << 1) | (value & 1)
        value >>= 1
    return out


@dataclass(frozen=True)
class CrcParams:
    """Parameters of a CRC in the Rocksoft model (as BMv2's custom CRC configuration)."""

    width: int
    poly: int
    init: int
    xor_out: int
    reflect_in: bool
    reflect_out: bool


class Crc:
    """Table-driven CRC of any width in 8..64 bits."""

    def __init__(self, params: CrcParams) -> None:
        self.params = params
        width = params.width
        self._mask = (1 << width) - 1
        self._table = self._build_table()
        self._init = _reflect(params.init, width) if params.reflect_in else params.init

    def _build_table(self) -> list[int]:
        p = self.params
        width = p.width
        table = []
        if p.reflect_in:
            rpoly = _reflect(p.poly, width)
            for byte in range(256):
                crc = byte
                for _ in range(8):
                    crc = (crc >> 1) ^ rpoly if crc & 1 else crc >> 1
                table.append(crc)
        else:
            top = 1 << (width - 1)
            for byte in range(256):
                crc = byte << (width - 8)
                for _ in range(8):
                    crc = ((crc << 1) ^ p.poly) if crc & top else crc << 1
                table.append(crc & self._mask)
        return table

    def __call__(self, data: bytes) -> int:
        p = self.params
        table = self._table
        crc = self._init
        if p.reflect_in:
            for byte in data:
                crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
            if not p.reflect_out:
                crc = _reflect(crc, p.width)
        else:
            shift = p.width - 8
            mask = self._mask
            for byte in data:
                crc = table[((crc >> shift) ^ byte) & 0xFF] ^ ((crc << 8) & mask)
            if p.reflect_out:
                crc = _reflect(crc, p.width)
        return (crc ^ p.xor_out) & self._mask


# BMv2: crc16 is CRC-16/ARC, crc32 is the IEEE 802.3 CRC, crcCCITT is CRC-16/CCITT-FALSE;
# the *_custom algorithms start from the same parameters until the control plane changes them.
CRC16 = CrcParams(16, 0x8005, 0x0000, 0x0000, True, True)
CRC32 = CrcParams(32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, True, True)
CRC_CCITT = CrcParams(16, 0x1021, 0xFFFF, 0x0000, False, False)

crc16 = Crc(CRC16)


def _crc32_fast(data: bytes) -> int:
    return zlib.crc32(data)


def _crc_ccitt_fast(data: bytes) -> int:
    return binascii.crc_hqx(data, 0xFFFF)


def csum16_int(value: int) -> int:
    """RFC 1071 checksum of a bit string given as an integer whose width is a multiple of 16.

    Since 2^16 = 1 (mod 0xFFFF), the ones' complement sum of the 16-bit words is
    the value itself reduced mod 0xFFFF (0xFFFF standing for a non-zero multiple).
    """
    r = value % 0xFFFF
    if r == 0 and value:
        r = 0xFFFF
    return 0xFFFF - r


def csum16(data: bytes) -> int:
    """Internet checksum (RFC 1071): ones' complement of the ones' complement sum of 16-bit words."""
    if len(data) % 2:
        data = data + b"\x00"
    return csum16_int(int.from_bytes(data, "big"))


def xor16(data: bytes) -> int:
    """XOR of the 16-bit words of the buffer (odd byte padded with zero)."""
    if len(data) % 2:
        data = data + b"\x00"
    out = 0
    for i in range(0, len(data), 2):
        out ^= int.from_bytes(data[i : i + 2], "big")
    return out


def identity(data: bytes) -> int:
    """BMv2's identity hash: the first 8 bytes of the buffer read as a big-endian integer."""
    return int.from_bytes(data[:8], "big")


_rng = _random.Random(0)


def random_hash(data: bytes) -> int:
    """BMv2's 'random' algorithm: a pseudo-random 64-bit value, ignoring the data."""
    return _rng.getrandbits(64)


ALGORITHMS: dict[str, Callable[[bytes], int]] = {
    "crc16": crc16,
    "crc32": _crc32_fast,  # Crc(CRC32), computed by zlib
    "crcCCITT": _crc_ccitt_fast,  # Crc(CRC_CCITT), computed by binascii
    "csum16": csum16,
    "xor16": xor16,
    "identity": identity,
    "random": random_hash,
}

def hash_result(h: int, base: int, max_value: int) -> int:
    """v1model hash(): base + (H mod max), in [base, base + max - 1]; max == 0 gives base."""
    if max_value:
        return base + h % max_value
    return base


class HashEngine:
    """Per-switch algorithm table: the *_custom CRCs can be reconfigured per switch."""

    def __init__(self) -> None:
        self.algorithms: dict[str, Callable[[bytes], int]] = dict(ALGORITHMS)
        self.algorithms["crc16_custom"] = Crc(CRC16)
        self.algorithms["crc32_custom"] = Crc(CRC32)
        self.version = 0  # bumped by set_custom: the native engine reloads the CRCs when it moves

    def set_custom(self, name: str, params: CrcParams) -> None:
        """Reconfigure crc16_custom or crc32_custom."""
        if name not in ("crc16_custom", "crc32_custom"):
            raise ValueError(f"{name} is not a configurable CRC")
        self.algorithms[name] = Crc(params)
        self.version += 1

    def compute_packed(self, algo: str, value: int, nbits: int, payload: bytes = b"") -> int:
        """Hash a field list already packed into `value` of `nbits` bits (then the payload)."""
        if algo == "csum16" and not payload:
            return csum16_int(value << ((-nbits) % 16))
        pad = (-nbits) % 8
        data = (value << pad).to_bytes((nbits + pad) >> 3, "big")
        return self.algorithms[algo](data + payload if payload else data)
