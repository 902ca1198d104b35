"""The PTF-style helpers of sst_packets.py fail when they should, with a useful message."""

from __future__ import annotations

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from sst_packets import Expected, program, verify_no_packets, verify_packets


@pytest.fixture(scope="module")
def routed():
    """One real output of the router: (input frame, outputs)."""
    from softswitch import Lpm, Switch

    sw = Switch(program("router.p4"))
    sw.table_add("ipv4_lpm", [Lpm(0x0A000000, 8)], "set_nhop", [2, 2])
    frame = Ether(bytes(Ether(dst="00:00:00:00:00:aa") / IP(dst="10.0.0.1") / UDP() / b"x"))
    return frame, sw.process_packet(1, bytes(frame))


def test_dont_care_masks_exactly_the_field() -> None:
    p = Ether(bytes(Ether() / IP(dst="10.0.0.1") / UDP()))
    exp = Expected.exact(p).dont_care(p, IP, "chksum")
    cleared = [i for i, m in enumerate(exp.mask) if m != 0xFF]
    assert cleared == [14 + 10, 14 + 11]
    exp = Expected.exact(p).dont_care(p, IP, "flags")   # 3 bits inside byte 20
    assert exp.mask[20] == 0x1F and all(m == 0xFF for i, m in enumerate(exp.mask) if i != 20)
    with pytest.raises(KeyError):
        Expected.exact(p).dont_care(p, IP, "no_such_field")


def test_matches_needs_equal_length_and_masked_bits() -> None:
    exp = Expected(b"\x12\x34", bytearray(b"\xff\x0f"))
    assert exp.matches(b"\x12\xa4")
    assert not exp.matches(b"\x13\x34")
    assert not exp.matches(b"\x12\x34\x00")


def test_verify_packets_reports_what_arrived(routed) -> None:
    frame, outs = routed
    assert [o.port for o in outs] == [2]
    with pytest.raises(AssertionError) as info:
        verify_packets(outs, [(2, bytes(frame))])   # MACs and TTL differ
    text = str(info.value)
    assert "port 2 packet 0" in text and bytes(outs[0].data).hex() in text
    with pytest.raises(AssertionError) as info:
        verify_packets(outs, [(3, bytes(outs[0].data))])
    assert "port 2: expected 0 packet(s), got 1" in str(info.value)
    with pytest.raises(AssertionError):
        verify_no_packets(outs)
    verify_packets(outs, [(2, bytes(outs[0].data))])
