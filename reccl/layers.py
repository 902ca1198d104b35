"""Scapy layers for the ReCCL frame header (format in `reccl.wire`).

    RecclHeader     24-byte common header; `type` selects the body layer
    RecclData       seq, tag, msg_len, offset, then the chunk payload
    RecclAck        cum, nsack, SACK blocks (ACK and NOTICE_ACK)
    RecclNotice     NIC states and dead channel ids (failover notice)
    RecclProbe      nonce (PROBE and PROBE_ACK)
    RecclHello, RecclChallenge, RecclAuth   the link handshake

`length` is computed in `post_build` when left unset, so a frame built here is
byte-identical to what `reccl.wire.encode` produces. Frames travel on TCP
streams, so a capture needs reassembly before these layers apply.
"""

from __future__ import annotations

import struct

from scapy.fields import (
    ByteEnumField,
    ByteField,
    FieldLenField,
    FieldListField,
    IntField,
    LongField,
    PacketListField,
    ShortField,
    StrFixedLenField,
)
from scapy.packet import Packet, Raw, bind_layers

from . import wire

LENGTH_OFFSET = 12


class RecclHeader(Packet):
    """Common header of every ReCCL frame."""

    name = "ReCCL"
    fields_desc = [
        StrFixedLenField("magic", wire.MAGIC, 2),
        ByteField("version", wire.VERSION),
        ByteEnumField("type", wire.DATA, wire.TYPE_NAMES),
        ShortField("src", 0),
        ShortField("dst", 0),
        ByteField("channel", 0),
        ByteField("flags", 0),
        ShortField("epoch", 0),
        IntField("length", None),
        IntField("tsval", 0),
        IntField("tsecr", 0),
    ]

    def post_build(self, pkt: bytes, pay: bytes) -> bytes:
        """Fill in the body length when not given."""
        if self.length is None:
            pkt = pkt[:LENGTH_OFFSET] + struct.pack("!I", len(pay)) + pkt[LENGTH_OFFSET + 4:]
        return pkt + pay


class RecclData(Packet):
    """DATA body: one chunk of a message."""

    name = "ReCCL DATA"
    fields_desc = [IntField("seq", 0), LongField("tag", 0), LongField("msg_len", 0),
                   LongField("offset", 0)]


class SackBlock(Packet):
    """One SACK block [start, end)."""

    name = "SACK block"
    fields_desc = [IntField("start", 0), IntField("end", 0)]

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


class RecclAck(Packet):
    """ACK / NOTICE_ACK body: the receiver's acknowledged frontier."""

    name = "ReCCL ACK"
    fields_desc = [
        IntField("cum", 0),
        FieldLenField("nsack", None, fmt="H", count_of="sacks"),
        PacketListField("sacks", [], SackBlock, count_from=lambda p: p.nsack),
    ]


class NicEntry(Packet):
    """One NIC state in a notice."""

    name = "NIC state"
    fields_desc = [ShortField("rank", 0), ByteField("rail", 0), ByteField("up", 1)]

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


class RecclNotice(Packet):
    """NOTICE body: the sender's NIC states and the channels it found dead."""

    name = "ReCCL NOTICE"
    fields_desc = [
        FieldLenField("n_nics", None, fmt="B", count_of="nics"),
        FieldLenField("n_channels", None, fmt="B", count_of="channels"),
        PacketListField("nics", [], NicEntry, count_from=lambda p: p.n_nics),
        FieldListField("channels", [], ByteField("ch", 0), count_from=lambda p: p.n_channels),
    ]


class RecclProbe(Packet):
    """PROBE / PROBE_ACK body."""

    name = "ReCCL PROBE"
    fields_desc = [IntField("nonce", 0)]


class RecclHello(Packet):
    """HELLO body: the connecting side's session and nonce."""

    name = "ReCCL HELLO"
    fields_desc = [IntField("session", 0), StrFixedLenField("nonce", b"\0" * 16, 16)]


class RecclChallenge(Packet):
    """CHALLENGE body: the accepting side's nonce and proof of the job secret."""

    name = "ReCCL CHALLENGE"
    fields_desc = [StrFixedLenField("nonce", b"\0" * 16, 16),
                   StrFixedLenField("proof", b"\0" * 32, 32)]


class RecclAuth(Packet):
    """AUTH body: the connecting side's proof of the job secret."""

    name = "ReCCL AUTH"
    fields_desc = [StrFixedLenField("proof", b"\0" * 32, 32)]


bind_layers(RecclHeader, RecclData, type=wire.DATA)
bind_layers(RecclHeader, RecclAck, type=wire.ACK)
bind_layers(RecclHeader, RecclAck, type=wire.NOTICE_ACK)
bind_layers(RecclHeader, RecclNotice, type=wire.NOTICE)
bind_layers(RecclHeader, RecclProbe, type=wire.PROBE)
bind_layers(RecclHeader, RecclProbe, type=wire.PROBE_ACK)
bind_layers(RecclHeader, RecclHello, type=wire.HELLO)
bind_layers(RecclHeader, RecclChallenge, type=wire.CHALLENGE)
bind_layers(RecclHeader, RecclAuth, type=wire.AUTH)
bind_layers(RecclData, Raw)
