"""switchtarget/port_status.py: the one builder and parser of the port-status frame
(docs/softswitch-api.md), checked byte by byte and against the SGLB scapy layer."""

import pytest
from scapy.layers.l2 import Ether

from sglb.headers import PacketOut, PortStatus, port_status_frame
from switchtarget.port_status import PortStatusError, decode, encode


def test_layout_by_hand():
    assert encode(7, False, 0x01020304) == bytes.fromhex(
        "ffffffffffff" "000000000000" "88b5" "01" "01" "0007" "01020304")
    assert encode(0x0102, True, 1)[14:] == bytes.fromhex("01" "02" "0102" "00000001")


def test_round_trip_and_padding():
    for port, up, seq in ((0, False, 0), (511, True, 0xFFFFFFFF), (0xFFFF, True, 12)):
        frame = encode(port, up, seq)
        event = decode(frame)
        assert (event.port, event.up, event.seq) == (port, up, seq)
        assert decode(frame + b"\x00" * 38) == event  # Ethernet minimum-size padding


@pytest.mark.parametrize("mutate, message", [
    (lambda f: f[:21], "shorter than 22"),
    (lambda f: f[:12] + b"\x88\xb6" + f[14:], "EtherType 0x88b6"),
    (lambda f: f[:14] + b"\x02" + f[15:], "version 2"),
    (lambda f: f[:15] + b"\x03" + f[16:], "op 3"),
])
def test_decode_names_the_bad_field(mutate, message):
    with pytest.raises(PortStatusError, match=message):
        decode(mutate(encode(3, True, 9)))


def test_encode_refuses_values_that_do_not_fit():
    with pytest.raises(PortStatusError, match="port 65536"):
        encode(0x10000, True, 1)
    with pytest.raises(PortStatusError, match="seq -1"):
        encode(1, True, -1)


def test_the_sglb_layer_reads_the_same_bytes():
    pkt = PacketOut(port_status_frame(513, True, 0xABCDEF01))
    assert pkt[Ether].type == 0x88B5
    status = pkt[PortStatus]
    assert (status.version, status.op, status.port, status.seq) == (1, 2, 513, 0xABCDEF01)
    assert decode(bytes(pkt[Ether])).port == 513
