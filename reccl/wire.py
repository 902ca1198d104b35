"""ReCCL wire format: encode and decode the datagrams of the reliable transport.

Every datagram starts with a 28-byte common header (network byte order):

    magic "RC" | version u8 | type u8 | session u32 | src u16 | dst u16 |
    channel u8 | flags u8 | epoch u16 | tsval u32 | tsecr u32 | crc32 u32

`crc32` covers the whole datagram with the crc field set to zero. The body
depends on `type` (see the `*_BODY` structs below). `reccl.layers` describes
the same format as scapy layers; tests check both agree byte for byte.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

MAGIC = b"RC"
VERSION = 1

DATA = 1
ACK = 2
NOTICE = 3
NOTICE_ACK = 4
PROBE = 5
PROBE_ACK = 6
TYPE_NAMES = {DATA: "DATA", ACK: "ACK", NOTICE: "NOTICE", NOTICE_ACK: "NOTICE_ACK",
              PROBE: "PROBE", PROBE_ACK: "PROBE_ACK"}

HEADER = struct.Struct("!2sBBIHHBBHIII")
DATA_BODY = struct.Struct("!IQII")          # seq, tag, msg_len, offset
ACK_BODY = struct.Struct("!IIHB")           # cum, trigger, window, nsack
SACK_BLOCK = struct.Struct("!II")           # start, end (exclusive)
NOTICE_BODY = struct.Struct("!BB")          # n_nics, n_channels
NIC_ENTRY = struct.Struct("!HBB")           # rank, rail, up
PROBE_BODY = struct.Struct("!I")            # nonce
CRC_OFFSET = HEADER.size - 4
MAX_SACK = 128


class WireError(ValueError):
    """A datagram that is not a well-formed ReCCL packet; `foreign` if not ReCCL at all."""

    def __init__(self, message: str, foreign: bool = False) -> None:
        super().__init__(message)
        self.foreign = foreign


@dataclass
class Header:
    """The common header (see module docstring)."""

    type: int
    session: int
    src: int
    dst: int
    channel: int
    epoch: int = 0
    tsval: int = 0
    tsecr: int = 0
    flags: int = 0


@dataclass
class Data:
    """One chunk of a message: bytes [offset, offset+len(payload)) of a msg_len-byte message."""

    seq: int
    tag: int
    msg_len: int
    offset: int
    payload: bytes | memoryview = b""


@dataclass
class Ack:
    """Cumulative ack (`cum` = next expected seq), the seq that triggered it, window, SACK blocks."""

    cum: int
    trigger: int
    window: int
    sacks: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class Notice:
    """Out-of-band failover notice: NIC states of the sender and channels it found dead."""

    nics: list[tuple[int, int, bool]] = field(default_factory=list)
    channels: list[int] = field(default_factory=list)


@dataclass
class Probe:
    """Liveness probe (PROBE) or its answer (PROBE_ACK)."""

    nonce: int


Body = Data | Ack | Notice | Probe


def _header_bytes(h: Header) -> bytes:
    return HEADER.pack(MAGIC, VERSION, h.type, h.session, h.src, h.dst, h.channel,
                       h.flags, h.epoch, h.tsval & 0xFFFFFFFF, h.tsecr & 0xFFFFFFFF, 0)


def encode(h: Header, body: Body) -> bytes:
    """Serialise a header and its body, filling in the CRC."""
    parts = [_header_bytes(h)]
    if h.type == DATA:
        assert isinstance(body, Data)
        parts += [DATA_BODY.pack(body.seq, body.tag, body.msg_len, body.offset), body.payload]
    elif h.type in (ACK, NOTICE_ACK):
        assert isinstance(body, Ack)
        sacks = body.sacks[:MAX_SACK]
        parts.append(ACK_BODY.pack(body.cum, body.trigger, min(body.window, 0xFFFF), len(sacks)))
        parts += [SACK_BLOCK.pack(s, e) for s, e in sacks]
    elif h.type == NOTICE:
        assert isinstance(body, Notice)
        parts.append(NOTICE_BODY.pack(len(body.nics), len(body.channels)))
        parts += [NIC_ENTRY.pack(r, rail, int(up)) for r, rail, up in body.nics]
        parts.append(bytes(body.channels))
    elif h.type in (PROBE, PROBE_ACK):
        assert isinstance(body, Probe)
        parts.append(PROBE_BODY.pack(body.nonce))
    else:
        raise ValueError(f"unknown packet type {h.type}")
    raw = bytearray(b"".join(parts))
    struct.pack_into("!I", raw, CRC_OFFSET, zlib.crc32(raw))
    return bytes(raw)


def decode(raw: bytes | memoryview) -> tuple[Header, Body]:
    """Parse a datagram; raises WireError naming the offending field and byte offset."""
    mv = memoryview(raw)
    if len(mv) < 2 or bytes(mv[:2]) != MAGIC:
        raise WireError("bad magic at byte 0 (not a ReCCL packet)", foreign=True)
    if len(mv) < HEADER.size:
        raise WireError(f"truncated header: {len(mv)} bytes, need {HEADER.size}")
    (_, version, ptype, session, src, dst, channel, flags, epoch, tsval, tsecr,
     crc) = HEADER.unpack_from(mv)
    if version != VERSION:
        raise WireError(f"unsupported version {version} at byte 2")
    check = bytearray(mv)
    struct.pack_into("!I", check, CRC_OFFSET, 0)
    if zlib.crc32(check) != crc:
        raise WireError(f"crc mismatch at byte {CRC_OFFSET}")
    h = Header(ptype, session, src, dst, channel, epoch, tsval, tsecr, flags)
    off = HEADER.size
    rest = len(mv) - off
    if ptype == DATA:
        if rest < DATA_BODY.size:
            raise WireError(f"truncated DATA body at byte {off}")
        seq, tag, msg_len, offset = DATA_BODY.unpack_from(mv, off)
        payload = mv[off + DATA_BODY.size:]
        if offset + len(payload) > msg_len:
            raise WireError(f"DATA chunk [{offset}, {offset + len(payload)}) exceeds "
                            f"message length {msg_len} at byte {off + 16}")
        return h, Data(seq, tag, msg_len, offset, payload)
    if ptype in (ACK, NOTICE_ACK):
        if rest < ACK_BODY.size:
            raise WireError(f"truncated ACK body at byte {off}")
        cum, trigger, window, nsack = ACK_BODY.unpack_from(mv, off)
        off += ACK_BODY.size
        if len(mv) - off != nsack * SACK_BLOCK.size:
            raise WireError(f"ACK announces {nsack} SACK blocks but has "
                            f"{len(mv) - off} bytes at byte {off}")
        sacks = [SACK_BLOCK.unpack_from(mv, off + i * SACK_BLOCK.size) for i in range(nsack)]
        for i, (s, e) in enumerate(sacks):
            if e <= s:
                raise WireError(f"empty SACK block {i} at byte {off + i * SACK_BLOCK.size}")
        return h, Ack(cum, trigger, window, sacks)
    if ptype == NOTICE:
        if rest < NOTICE_BODY.size:
            raise WireError(f"truncated NOTICE body at byte {off}")
        n_nics, n_ch = NOTICE_BODY.unpack_from(mv, off)
        off += NOTICE_BODY.size
        if len(mv) - off != n_nics * NIC_ENTRY.size + n_ch:
            raise WireError(f"NOTICE length mismatch at byte {off}")
        nics = []
        for _ in range(n_nics):
            r, rail, up = NIC_ENTRY.unpack_from(mv, off)
            nics.append((r, rail, bool(up)))
            off += NIC_ENTRY.size
        return h, Notice(nics, list(bytes(mv[off:])))
    if ptype in (PROBE, PROBE_ACK):
        if rest != PROBE_BODY.size:
            raise WireError(f"PROBE body must be {PROBE_BODY.size} bytes, got {rest} at byte {off}")
        return h, Probe(PROBE_BODY.unpack_from(mv, off)[0])
    raise WireError(f"unknown packet type {ptype} at byte 3")


def peek_route(raw: bytes | memoryview) -> tuple[int, int, int, int] | None:
    """(session, src, dst, channel) of a datagram without full decoding, for relays."""
    if len(raw) < HEADER.size or bytes(raw[:2]) != MAGIC:
        return None
    _, _, _, session, src, dst, channel, *_ = HEADER.unpack_from(raw)
    return session, src, dst, channel
