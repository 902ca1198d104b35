"""Byte-exact round trips of the SGLB scapy layers (sglb/headers.py)."""

import pytest
from scapy.layers.l2 import Ether

from sglb.headers import (
    PacketIn,
    PacketOut,
    PortStatus,
    SglbNotice,
    SglbProbe,
    port_status_frame,
)

ETH = dict(dst="ff:ff:ff:ff:ff:ff", src="02:00:00:00:00:01")


def test_port_status_wire_format():
    frame = port_status_frame(port=7, up=False, seq=0x01020304)
    assert frame == bytes.fromhex(
        "00000000"                        # packet_out, all zero
        "ffffffffffff" "000000000000" "88b5"
        "01" "01" "0007" "01020304"
    )
    assert port_status_frame(port=0x0102, up=True, seq=1)[-8:] == bytes.fromhex("0102010200000001")


def test_notice_wire_format():
    raw = bytes(Ether(**ETH) / SglbNotice(kind=2, spine_id=0x0A0B, leaf_id=0x0C0D, epoch=9))
    assert raw[12:14] == b"\x88\xb6"
    assert raw[14:] == bytes.fromhex("01020c00" "0a0b" "0c0d" "00000009")


def test_probe_wire_format():
    raw = bytes(Ether(**ETH) / SglbProbe(path=3, src_leaf=1, dst_leaf=2, seq=5, hop_dre=0x100))
    assert raw[12:14] == b"\x88\xb6"
    assert raw[14:] == bytes.fromhex("01031003" "0001" "0002" "00000005" "00000100")
    assert type(Ether(raw).payload) is SglbProbe
    assert type(Ether(raw[:15] + b"\x07" + raw[16:]).payload) is SglbNotice  # unknown kind


@pytest.mark.parametrize(
    "pkt",
    [
        Ether(**ETH) / PortStatus(op=2, port=513, seq=0xFFFFFFFF),
        Ether(**ETH) / SglbNotice(kind=1, spine_id=65535, leaf_id=1023, epoch=123456),
        Ether(**ETH) / SglbProbe(path=7, src_leaf=3, dst_leaf=4, seq=99, hop_dre=4096),
    ],
    ids=["port_status", "notice", "probe"],
)
def test_ether_layers_round_trip(pkt):
    raw = bytes(pkt)
    parsed = Ether(raw)
    assert bytes(parsed) == raw
    assert type(parsed.payload) is type(pkt.payload)
    for field in pkt.payload.fields_desc:
        assert parsed.payload.getfieldval(field.name) == pkt.payload.getfieldval(field.name)


@pytest.mark.parametrize("cls", [PacketOut, PacketIn])
def test_controller_headers_round_trip(cls):
    pkt = cls(b"\x01\x02\x03\x04") / Ether(**ETH) / SglbNotice(epoch=3)
    raw = bytes(pkt)
    parsed = cls(raw)
    assert bytes(parsed) == raw
    assert raw[:4] == b"\x01\x02\x03\x04"
    assert isinstance(parsed.payload, Ether)
    assert parsed[SglbNotice].epoch == 3


def test_packet_in_fields():
    p = PacketIn(bytes.fromhex("00050200"))
    assert (p.ingress_port, p.reason) == (5, 2)
