"""Scapy layers for the custom headers of the SGLB data plane (p4src/sglb.p4).

Formats (all fields big-endian, docs/sglb.md draws them):

* ``PacketOut`` (4 bytes, precedes Ethernet on packets from the controller):
  op (8: 0 = run the pipeline, 1 = send out of egress_port as is),
  reserved (8), egress_port (16).
* ``PacketIn`` (4 bytes, precedes Ethernet on packets to the controller):
  ingress_port (16), reason (8: 1 = addressed to the switch, 2 = probe), reserved (8).
* ``PortStatus`` (EtherType 0x88B5, 8 bytes; fixed by the target,
  docs/softswitch-api.md, whose one builder and parser is
  ``switchtarget.port_status``): version (8) = 1, op (8: 1 = down, 2 = up),
  port (16), seq (32).
* ``SglbNotice`` (EtherType 0x88B6, 12 bytes): version (8) = 1, kind (8: 1 = fail,
  2 = recover), length (8) = 12, reserved (8), spine_id (16), leaf_id (16), epoch (32).
* ``SglbProbe`` (EtherType 0x88B6, 20 bytes): version (8) = 1, kind (8: 3 = probe,
  4 = reply), length (8) = 20, path (8), src_leaf (16), dst_leaf (16), seq (32),
  hop_dre (32), stamp (32: send time, or the round-trip time in a punted reply).
* ``SglbTag`` (EtherType 0x88B6, 20 bytes, then IPv4): version (8) = 1,
  kind (8) = 5, length (8) = 20, npaths (8), src_leaf (16), path (8), ce (8),
  ts (32), fb_owd (32), fb_path (8), fb_level (8: 255 = none), next_type (16).

0x88B5 and 0x88B6 are the two IEEE 802 local experimental EtherTypes; notice,
probe and tag share the second and are told apart by ``kind`` (kinds 3 and 4
dissect as a probe, 5 as a tag, any other as a notice, as the P4 parser
does). PacketOut and
PacketIn are the P4Runtime controller headers; they are not bound to any
EtherType and are built explicitly: ``PacketOut() / Ether() / ...``.
"""

from __future__ import annotations

from scapy.fields import ByteEnumField, ByteField, IntField, ShortField, XShortField
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, bind_layers, bind_top_down

from switchtarget import port_status

ETHERTYPE_PORT_STATUS = port_status.ETHERTYPE
ETHERTYPE_SGLB = 0x88B6

SGLB_VERSION = 1
NOTICE_LENGTH = 12
PROBE_LENGTH = 20
TAG_LENGTH = 20

PACKET_OUT_PIPELINE = 0
PACKET_OUT_DIRECT = 1

PUNT_HOST = 1
PUNT_PROBE_REPLY = 2
PUNT_NOTICE = 3

PORT_DOWN = port_status.OP_DOWN
PORT_UP = port_status.OP_UP

NOTICE_FAIL = 1
NOTICE_RECOVER = 2
NOTICE_WRITEBACK = 6   # Tofino program only: the controller confirms an epoch

PROBE_KIND = 3
PROBE_REPLY_KIND = 4
TAG_KIND = 5
FB_NONE = 0xFF


class PacketOut(Packet):
    """P4Runtime packet_out controller header of sglb.p4."""

    name = "SGLB PacketOut"
    fields_desc = [
        ByteEnumField("op", PACKET_OUT_PIPELINE, {0: "pipeline", 1: "direct"}),
        ByteField("reserved", 0),
        ShortField("egress_port", 0),
    ]

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        return Ether


class PacketIn(Packet):
    """P4Runtime packet_in controller header of sglb.p4."""

    name = "SGLB PacketIn"
    fields_desc = [
        ShortField("ingress_port", 0),
        ByteEnumField("reason", 0, {1: "host", 2: "probe_reply", 3: "notice"}),
        ByteField("reserved", 0),
    ]

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        return Ether


class PortStatus(Packet):
    """Port-status event injected through the CPU port (docs/softswitch-api.md)."""

    name = "PortStatus"
    fields_desc = [
        ByteField("version", port_status.VERSION),
        ByteEnumField("op", PORT_DOWN, {PORT_DOWN: "down", PORT_UP: "up"}),
        ShortField("port", 0),
        IntField("seq", 0),
    ]


class SglbNotice(Packet):
    """In-band failure / recovery notice, multicast by a spine to the leaves."""

    name = "SGLB Notice"

    @classmethod
    def dispatch_hook(cls, _pkt: bytes | None = None, *args, **kargs) -> type[Packet]:
        """Dissect probes and tags by their kind: all share EtherType 0x88B6."""
        if _pkt is not None and len(_pkt) >= 2:
            if _pkt[1] in (PROBE_KIND, PROBE_REPLY_KIND):
                return SglbProbe
            if _pkt[1] == TAG_KIND:
                return SglbTag
        return cls
    fields_desc = [
        ByteField("version", SGLB_VERSION),
        ByteEnumField("kind", NOTICE_FAIL, {NOTICE_FAIL: "fail", NOTICE_RECOVER: "recover",
                                            NOTICE_WRITEBACK: "writeback"}),
        ByteField("length", NOTICE_LENGTH),
        ByteField("reserved", 0),
        ShortField("spine_id", 0),
        ShortField("leaf_id", 0),
        IntField("epoch", 0),
    ]


class SglbProbe(Packet):
    """Path probe: sent on one path, stamped by the spine, turned around at the
    destination leaf, punted at the source with the round-trip time."""

    name = "SGLB Probe"
    fields_desc = [
        ByteField("version", SGLB_VERSION),
        ByteEnumField("kind", PROBE_KIND, {PROBE_KIND: "probe", PROBE_REPLY_KIND: "reply"}),
        ByteField("length", PROBE_LENGTH),
        ByteField("path", 0),
        ShortField("src_leaf", 0),
        ShortField("dst_leaf", 0),
        IntField("seq", 0),
        IntField("hop_dre", 0),
        IntField("stamp", 0),
    ]


class SglbTag(Packet):
    """Fabric tag between Ethernet and IPv4 on leaf-spine-leaf hops (in-band feedback)."""

    name = "SGLB Tag"
    fields_desc = [
        ByteField("version", SGLB_VERSION),
        ByteField("kind", TAG_KIND),
        ByteField("length", TAG_LENGTH),
        ByteField("npaths", 1),
        ShortField("src_leaf", 0),
        ByteField("path", 0),
        ByteField("ce", 0),
        IntField("ts", 0),
        IntField("fb_owd", 0),
        ByteField("fb_path", 0),
        ByteField("fb_level", FB_NONE),
        XShortField("next_type", 0x0800),
    ]

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        return IP if self.next_type == 0x0800 else Packet


bind_layers(Ether, PortStatus, type=ETHERTYPE_PORT_STATUS)
bind_layers(Ether, SglbNotice, type=ETHERTYPE_SGLB)
bind_top_down(Ether, SglbProbe, type=ETHERTYPE_SGLB)  # dissection goes through SglbNotice
bind_top_down(Ether, SglbTag, type=ETHERTYPE_SGLB)


def port_status_frame(port: int, up: bool, seq: int) -> bytes:
    """The bytes the target injects on the CPU port for a link event: sglb.p4's
    packet_out header (all fields 0) and ``switchtarget.port_status.encode``."""
    return bytes(PacketOut()) + port_status.encode(port, up, seq)
