"""Scapy layers for the ReCCL transport header (format in `reccl.wire`).

    RecclHeader  28-byte common header; `type` selects the body layer
    RecclData    seq, tag, msg_len, offset, then the chunk payload
    RecclAck     cum, trigger, window, nsack, SACK blocks (ACK and NOTICE_ACK)
    RecclNotice  NIC states and dead channel ids (failover notice)
    RecclProbe   nonce (PROBE and PROBE_ACK)

The CRC is computed in `post_build` when left unset, so a packet built here
is byte-identical to what `reccl.wire.encode` produces. UDP port 29500 is
bound by default; use `bind_port` for others.
"""

from __future__ import annotations

import struct
import zlib

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
    XIntField,
)
from scapy.layers.inet import UDP
from scapy.packet import Packet, Raw, bind_layers

from . import wire

DEFAULT_PORT = 29500


class RecclHeader(Packet):
    """Common header of every ReCCL datagram."""

    name = "ReCCL"
    fields_desc = [
        StrFixedLenField("magic", wire.MAGIC, 2),
        ByteField("version", wire.VERSION),
        ByteEnumField("type", wire.DATA, wire.TYPE_NAMES),
        IntField("session", 0),
        ShortField("src", 0),
        ShortField("dst", 0),
        ByteField("channel", 0),
        ByteField("flags", 0),
        ShortField("epoch", 0),
        IntField("tsval", 0),
        IntField("tsecr", 0),
        XIntField("crc", None),
    ]

    def post_build(self, pkt: bytes, pay: bytes) -> bytes:
        """Fill in crc32 over header and body (crc field zero) when not given."""
        whole = pkt + pay
        if self.crc is None:
            zeroed = whole[:wire.CRC_OFFSET] + b"\0\0\0\0" + whole[wire.CRC_OFFSET + 4:]
            crc = zlib.crc32(zeroed)
            whole = whole[:wire.CRC_OFFSET] + struct.pack("!I", crc) + whole[wire.CRC_OFFSET + 4:]
        return whole


class RecclData(Packet):
    """DATA body: one chunk of a message."""

    name = "ReCCL DATA"
    fields_desc = [IntField("seq", 0), LongField("tag", 0), IntField("msg_len", 0),
                   IntField("offset", 0)]


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
        IntField("trigger", 0),
        ShortField("window", 0),
        FieldLenField("nsack", None, fmt="B", count_of="sacks"),
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


def bind_port(port: int) -> None:
    """Decode UDP traffic on `port` as ReCCL."""
    bind_layers(UDP, RecclHeader, dport=port)
    bind_layers(UDP, RecclHeader, sport=port)


bind_layers(RecclHeader, RecclData, type=wire.DATA)
bind_layers(RecclHeader, RecclAck, type=wire.ACK)
bind_layers(RecclHeader, RecclAck, type=wire.NOTICE_ACK)
bind_layers(RecclHeader, RecclNotice, type=wire.NOTICE)
bind_layers(RecclHeader, RecclProbe, type=wire.PROBE)
bind_layers(RecclHeader, RecclProbe, type=wire.PROBE_ACK)
bind_layers(RecclData, Raw)
bind_port(DEFAULT_PORT)
