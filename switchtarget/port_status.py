"""The port-status frame: how the target tells a P4 program that a port lost or
regained carrier (docs/softswitch-api.md, "Port-status packets").

The one builder and parser of the format, shared by the target that injects
it (``softswitch run``), the SGLB scapy layer (``sglb.headers``) and the
SyncMesh driver that sends it as PacketOut on targets that do not inject it
(BMv2). No imports beyond the standard library, so any layer may use it.

Ethernet: dst ff:ff:ff:ff:ff:ff, src 00:00:00:00:00:00, EtherType 0x88B5 (the
first IEEE 802 local experimental EtherType), then 8 bytes, big-endian:
version (8) = 1, op (8: 1 = down, 2 = up), port (16), seq (32). The frame
carries no packet_out header; a caller that needs one prepends it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

ETHERTYPE = 0x88B5
VERSION = 1
OP_DOWN = 1
OP_UP = 2
DST_MAC = b"\xff" * 6
SRC_MAC = b"\x00" * 6
BODY_LEN = 8
FRAME_LEN = 14 + BODY_LEN

_BODY = struct.Struct("!BBHI")


class PortStatusError(ValueError):
    """Bytes that are not a port-status frame; the message names the offending field."""


@dataclass(frozen=True)
class PortStatus:
    """One carrier change of a data-plane port."""

    port: int
    """Data-plane port number (0..65535 on the wire; v1model ports are 9 bits)."""
    up: bool
    """True when the port regained carrier."""
    seq: int
    """Sequence number of the event, increasing per switch (0..2^32 - 1)."""


def encode(port: int, up: bool, seq: int) -> bytes:
    """The Ethernet frame (22 bytes) of a port-status event."""
    if not 0 <= port <= 0xFFFF:
        raise PortStatusError(f"port {port} does not fit 16 bits")
    if not 0 <= seq <= 0xFFFFFFFF:
        raise PortStatusError(f"seq {seq} does not fit 32 bits")
    return (DST_MAC + SRC_MAC + ETHERTYPE.to_bytes(2, "big")
            + _BODY.pack(VERSION, OP_UP if up else OP_DOWN, port, seq))


def decode(frame: bytes) -> PortStatus:
    """The event in an Ethernet frame from ``encode`` (trailing padding is ignored)."""
    if len(frame) < FRAME_LEN:
        raise PortStatusError(f"frame of {len(frame)} bytes is shorter than {FRAME_LEN}")
    ethertype = int.from_bytes(frame[12:14], "big")
    if ethertype != ETHERTYPE:
        raise PortStatusError(f"EtherType {ethertype:#06x} is not {ETHERTYPE:#06x}")
    version, op, port, seq = _BODY.unpack_from(frame, 14)
    if version != VERSION:
        raise PortStatusError(f"version {version} is not {VERSION}")
    if op not in (OP_DOWN, OP_UP):
        raise PortStatusError(f"op {op} is neither {OP_DOWN} (down) nor {OP_UP} (up)")
    return PortStatus(port, op == OP_UP, seq)
