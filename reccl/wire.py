"""ReCCL wire format: the frames that travel on a link (a TCP or Unix stream).

A link is one authenticated stream between two neighbouring ranks (one per
NIC rail, or the intra-host Unix socket). Every frame starts with a 24-byte
header (network byte order):

    magic "RC" | version u8 | type u8 | src u16 | dst u16 | channel u8 |
    flags u8 | epoch u16 | length u32 | tsval u32 | tsecr u32

`length` is the number of body bytes that follow; `src`/`dst` are the ranks
at the ends of the channel (a relay forwards frames whose `dst` is another
rank). The stream's integrity comes from TCP and the link's handshake (see
`reccl.auth`), so there is no per-frame checksum. The body depends on `type`
(the `*_BODY` structs below). `reccl.layers` describes the same format as
scapy layers; tests check both agree byte for byte.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

MAGIC = b"RC"
VERSION = 2

DATA = 1
ACK = 2
NOTICE = 3
NOTICE_ACK = 4
PROBE = 5
PROBE_ACK = 6
HELLO = 7
CHALLENGE = 8
AUTH = 9
TYPE_NAMES = {DATA: "DATA", ACK: "ACK", NOTICE: "NOTICE", NOTICE_ACK: "NOTICE_ACK",
              PROBE: "PROBE", PROBE_ACK: "PROBE_ACK", HELLO: "HELLO", CHALLENGE: "CHALLENGE",
              AUTH: "AUTH"}

HEADER = struct.Struct("!2sBBHHBBHIII")
DATA_BODY = struct.Struct("!IQQQ")          # seq, tag, msg_len, offset
ACK_BODY = struct.Struct("!IH")             # cum, nsack
SACK_BLOCK = struct.Struct("!II")           # start, end (exclusive)
NOTICE_BODY = struct.Struct("!BB")          # n_nics, n_channels
NIC_ENTRY = struct.Struct("!HBB")           # rank, rail, up
PROBE_BODY = struct.Struct("!I")            # nonce
HELLO_BODY = struct.Struct("!I16s")         # session, client nonce
CHALLENGE_BODY = struct.Struct("!16s32s")   # server nonce, server proof
AUTH_BODY = struct.Struct("!32s")           # client proof
MAX_SACK = 256
MAX_BODY = 64 << 20
"""Largest body a receiver accepts (a chunk plus its DATA header fits well below)."""
IPC_RAIL = 0xFF
"""`channel` value of a handshake on the intra-host (Unix socket) link."""


class WireError(ValueError):
    """A frame that is not well-formed; `foreign` if it is not ReCCL at all."""

    def __init__(self, message: str, foreign: bool = False) -> None:
        super().__init__(message)
        self.foreign = foreign


@dataclass
class Header:
    """The common header (see module docstring); `length` is filled in by `encode`."""

    type: int
    src: int
    dst: int
    channel: int
    epoch: int = 0
    tsval: int = 0
    tsecr: int = 0
    flags: int = 0
    length: int = 0


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
    """Cumulative ack (`cum` = next expected seq) and SACK blocks [start, end)."""

    cum: int
    sacks: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class Notice:
    """Failover notice: NIC states of the sender and channels it found dead (accumulated
    until acknowledged)."""

    nics: list[tuple[int, int, bool]] = field(default_factory=list)
    channels: list[int] = field(default_factory=list)


@dataclass
class Probe:
    """Keepalive (PROBE) or its answer (PROBE_ACK)."""

    nonce: int


@dataclass
class Hello:
    """Link handshake, first frame from the connecting side."""

    session: int
    nonce: bytes


@dataclass
class Challenge:
    """Link handshake: the accepting side's nonce and its proof of the secret."""

    nonce: bytes
    proof: bytes


@dataclass
class Auth:
    """Link handshake: the connecting side's proof of the secret."""

    proof: bytes


Body = Data | Ack | Notice | Probe | Hello | Challenge | Auth


def encode_parts(h: Header, body: Body) -> list[bytes | memoryview]:
    """Serialise as a list of buffers (header+body head, then the payload without a copy)."""
    tail: bytes | memoryview = b""
    if h.type == DATA:
        assert isinstance(body, Data)
        head = DATA_BODY.pack(body.seq, body.tag, body.msg_len, body.offset)
        tail = body.payload
    elif h.type in (ACK, NOTICE_ACK):
        assert isinstance(body, Ack)
        sacks = body.sacks[:MAX_SACK]
        head = ACK_BODY.pack(body.cum, len(sacks)) + b"".join(SACK_BLOCK.pack(s, e)
                                                              for s, e in sacks)
    elif h.type == NOTICE:
        assert isinstance(body, Notice)
        head = (NOTICE_BODY.pack(len(body.nics), len(body.channels))
                + b"".join(NIC_ENTRY.pack(r, rail, int(up)) for r, rail, up in body.nics)
                + bytes(body.channels))
    elif h.type in (PROBE, PROBE_ACK):
        assert isinstance(body, Probe)
        head = PROBE_BODY.pack(body.nonce)
    elif h.type == HELLO:
        assert isinstance(body, Hello)
        head = HELLO_BODY.pack(body.session, body.nonce)
    elif h.type == CHALLENGE:
        assert isinstance(body, Challenge)
        head = CHALLENGE_BODY.pack(body.nonce, body.proof)
    elif h.type == AUTH:
        assert isinstance(body, Auth)
        head = AUTH_BODY.pack(body.proof)
    else:
        raise ValueError(f"unknown frame type {h.type}")
    length = len(head) + len(tail)
    hdr = HEADER.pack(MAGIC, VERSION, h.type, h.src, h.dst, h.channel, h.flags, h.epoch,
                      length, h.tsval & 0xFFFFFFFF, h.tsecr & 0xFFFFFFFF)
    return [hdr + head, tail] if len(tail) else [hdr + head]


def encode(h: Header, body: Body) -> bytes:
    """Serialise a header and its body into one bytes object."""
    return b"".join(bytes(p) for p in encode_parts(h, body))


def decode_header(raw: bytes | memoryview) -> Header:
    """Parse the 24-byte header; raises WireError naming the field and byte offset."""
    if len(raw) < 2 or bytes(raw[:2]) != MAGIC:
        raise WireError("bad magic at byte 0 (not a ReCCL frame)", foreign=True)
    if len(raw) < HEADER.size:
        raise WireError(f"truncated header: {len(raw)} bytes, need {HEADER.size}")
    (_, version, ptype, src, dst, channel, flags, epoch, length, tsval,
     tsecr) = HEADER.unpack_from(raw)
    if version != VERSION:
        raise WireError(f"unsupported version {version} at byte 2")
    if ptype not in TYPE_NAMES:
        raise WireError(f"unknown frame type {ptype} at byte 3")
    if length > MAX_BODY:
        raise WireError(f"body length {length} at byte 12 exceeds the limit {MAX_BODY}")
    return Header(ptype, src, dst, channel, epoch, tsval, tsecr, flags, length)


def decode(raw: bytes | memoryview) -> tuple[Header, Body]:
    """Parse one whole frame; raises WireError naming the offending field and byte offset."""
    mv = memoryview(raw)
    h = decode_header(mv)
    off = HEADER.size
    if len(mv) - off != h.length:
        raise WireError(f"frame has {len(mv) - off} body bytes, header at byte 12 says "
                        f"{h.length}")
    rest = h.length
    t = h.type
    if t == DATA:
        if rest < DATA_BODY.size:
            raise WireError(f"truncated DATA body at byte {off}")
        seq, tag, msg_len, offset = DATA_BODY.unpack_from(mv, off)
        payload = mv[off + DATA_BODY.size:]
        if offset + len(payload) > msg_len:
            raise WireError(f"DATA chunk [{offset}, {offset + len(payload)}) exceeds "
                            f"message length {msg_len} at byte {off + 12}")
        return h, Data(seq, tag, msg_len, offset, payload)
    if t in (ACK, NOTICE_ACK):
        if rest < ACK_BODY.size:
            raise WireError(f"truncated ACK body at byte {off}")
        cum, nsack = ACK_BODY.unpack_from(mv, off)
        off += ACK_BODY.size
        if len(mv) - off != nsack * SACK_BLOCK.size:
            raise WireError(f"ACK announces {nsack} SACK blocks but has "
                            f"{len(mv) - off} bytes at byte {off}")
        sacks = [SACK_BLOCK.unpack_from(mv, off + i * SACK_BLOCK.size) for i in range(nsack)]
        for i, (s, e) in enumerate(sacks):
            if ((e - s) & 0xFFFFFFFF) == 0 or ((e - s) & 0xFFFFFFFF) >= 0x80000000:
                raise WireError(f"empty SACK block {i} at byte {off + i * SACK_BLOCK.size}")
        return h, Ack(cum, sacks)
    if t == NOTICE:
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
    fixed = {PROBE: PROBE_BODY, PROBE_ACK: PROBE_BODY, HELLO: HELLO_BODY,
             CHALLENGE: CHALLENGE_BODY, AUTH: AUTH_BODY}[t]
    if rest != fixed.size:
        raise WireError(f"{TYPE_NAMES[t]} body must be {fixed.size} bytes, got {rest} at "
                        f"byte {off}")
    vals = fixed.unpack_from(mv, off)
    if t in (PROBE, PROBE_ACK):
        return h, Probe(vals[0])
    if t == HELLO:
        return h, Hello(vals[0], vals[1])
    if t == CHALLENGE:
        return h, Challenge(vals[0], vals[1])
    return h, Auth(vals[0])
