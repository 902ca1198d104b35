"""Byte-exact round trips of the SGLB scapy layers (sglb/headers.py)."""

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from sglb.headers import (
    FB_NONE,
    PacketIn,
    PacketOut,
    PortStatus,
    SglbNotice,
    SglbProbe,
    SglbTag,
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
    raw = bytes(Ether(**ETH) / SglbProbe(path=3, src_leaf=1, dst_leaf=2, seq=5, hop_dre=0x100,
                                         stamp=0x0A0B0C0D))
    assert raw[12:14] == b"\x88\xb6"
    assert raw[14:] == bytes.fromhex("01031403" "0001" "0002" "00000005" "00000100" "0a0b0c0d")
    assert type(Ether(raw).payload) is SglbProbe
    assert type(Ether(raw[:15] + b"\x04" + raw[16:]).payload) is SglbProbe   # the reply
    assert type(Ether(raw[:15] + b"\x07" + raw[16:]).payload) is SglbNotice  # unknown kind


def test_tag_wire_format_and_payload():
    raw = bytes(Ether(**ETH) / SglbTag(npaths=4, src_leaf=0x0102, path=3, ce=6, ts=0x11223344,
                                       fb_owd=0x55667788, fb_path=2, fb_level=5)
                / IP(src="10.0.0.1", dst="10.1.0.1") / UDP())
    assert raw[12:14] == b"\x88\xb6"
    assert raw[14:34] == bytes.fromhex("01051404" "0102" "03" "06" "11223344" "55667788"
                                       "02" "05" "0800")
    parsed = Ether(raw)
    assert type(parsed.payload) is SglbTag and parsed[IP].dst == "10.1.0.1"
    assert SglbTag().fb_level == FB_NONE


@pytest.mark.parametrize(
    "pkt",
    [
        Ether(**ETH) / PortStatus(op=2, port=513, seq=0xFFFFFFFF),
        Ether(**ETH) / SglbNotice(kind=1, spine_id=65535, leaf_id=1023, epoch=123456),
        Ether(**ETH) / SglbProbe(path=7, src_leaf=3, dst_leaf=4, seq=99, hop_dre=4096, stamp=7),
        Ether(**ETH) / SglbTag(npaths=64, src_leaf=1023, path=63, ce=7, ts=1, fb_owd=2,
                               fb_path=9, fb_level=0),
    ],
    ids=["port_status", "notice", "probe", "tag"],
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
