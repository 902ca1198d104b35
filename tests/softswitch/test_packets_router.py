"""The L3 router of the corpus (stf/router.p4) with scapy packets.

Checks the v1model pipeline end to end: lpm next hop, MAC rewrite, TTL
decrement, IPv4 checksum verified in verifyChecksum and recomputed in
computeChecksum, drops on TTL expiry, bad checksum, parser errors and non-IPv4.
"""

from __future__ import annotations

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import ARP, Ether
from sst_packets import Expected, program, verify_no_packets, verify_packets

ROUTER_MAC = "00:00:00:00:00:aa"


@pytest.fixture(scope="module")
def prog():
    return program("router.p4")


@pytest.fixture
def sw(prog):
    from softswitch import Lpm, Switch

    sw = Switch(prog)
    sw.table_add("ipv4_lpm", [Lpm(0x0A000000, 8)], "set_nhop", [0x000000000002, 2])
    sw.table_add("ipv4_lpm", [Lpm(0x0A000000, 24)], "set_nhop", {"dmac": 0x000000000003, "port": 3})
    sw.table_add("ipv4_lpm", [Lpm(0x0A000005, 32)], "set_nhop", [0x000000000004, 4])
    return sw


def ip_packet(dst: str, ttl: int = 64, l4=None, payload: bytes = b"data") -> Ether:
    l4 = UDP(sport=1234, dport=80) if l4 is None else l4
    built = Ether(dst=ROUTER_MAC, src="00:00:00:00:00:01") / IP(src="192.168.0.1", dst=dst, ttl=ttl)
    return Ether(bytes(built / l4 / payload))   # re-dissect so checksums and lengths are fixed


def routed(p: Ether, dmac: str) -> Ether:
    """What the router must emit: MACs rewritten, TTL - 1, checksum recomputed."""
    q = p.copy()
    q[Ether].src = p[Ether].dst
    q[Ether].dst = dmac
    q[IP].ttl = p[IP].ttl - 1
    del q[IP].chksum
    return Ether(bytes(q))


@pytest.mark.parametrize(("dst", "port", "dmac"), [
    ("10.0.0.5", 4, "00:00:00:00:00:04"),     # /32 beats /24 and /8
    ("10.0.0.6", 3, "00:00:00:00:00:03"),     # /24 beats /8
    ("10.200.1.1", 2, "00:00:00:00:00:02"),   # only /8
])
def test_longest_prefix_wins(sw, dst, port, dmac) -> None:
    p = ip_packet(dst)
    verify_packets(sw.process_packet(1, bytes(p)), [(port, routed(p, dmac))])


def test_tcp_payload_untouched_and_checksum_valid(sw) -> None:
    p = ip_packet("10.0.0.6", ttl=9, l4=TCP(sport=5, dport=6, flags="PA"), payload=b"x" * 100)
    outs = sw.process_packet(1, bytes(p))
    verify_packets(outs, [(3, routed(p, "00:00:00:00:00:03"))])
    got = Ether(bytes(outs[0].data))
    recomputed = Ether(bytes(got))
    del recomputed[IP].chksum
    assert Ether(bytes(recomputed))[IP].chksum == got[IP].chksum
    assert got[IP].ttl == 8


def test_dont_care_mask_on_checksum(sw) -> None:
    """A PTF-style mask: only the checksum is left unchecked."""
    p = ip_packet("10.200.1.1", ttl=2)
    exp = routed(p, "00:00:00:00:00:02")
    verify_packets(sw.process_packet(1, bytes(p)),
                   [(2, Expected.exact(exp).dont_care(exp, IP, "chksum"))])


def test_expiring_ttl_is_dropped(sw) -> None:
    verify_no_packets(sw.process_packet(1, bytes(ip_packet("10.0.0.6", ttl=1))))


def test_no_route_is_dropped(sw) -> None:
    verify_no_packets(sw.process_packet(1, bytes(ip_packet("192.168.7.7"))))


def test_bad_ip_checksum_is_dropped(sw) -> None:
    p = ip_packet("10.0.0.6")
    p[IP].chksum ^= 0x0101
    verify_no_packets(sw.process_packet(1, bytes(p)))


def test_ip_options_are_a_parser_error_and_dropped(sw) -> None:
    p = Ether(dst=ROUTER_MAC) / IP(dst="10.0.0.6", options=b"\x01\x01\x01\x00") / UDP()
    verify_no_packets(sw.process_packet(1, bytes(p)))


def test_non_ip_is_dropped(sw) -> None:
    verify_no_packets(sw.process_packet(1, bytes(Ether(dst=ROUTER_MAC) / ARP())))


def test_entry_removal_changes_forwarding(sw) -> None:
    from softswitch import Lpm

    handle = sw.table_find("ipv4_lpm", [Lpm(0x0A000005, 32)])
    assert handle is not None
    sw.table_delete("ipv4_lpm", handle)
    p = ip_packet("10.0.0.5")
    verify_packets(sw.process_packet(1, bytes(p)), [(3, routed(p, "00:00:00:00:00:03"))])
    assert sw.table_find("ipv4_lpm", [Lpm(0x0A000005, 32)]) is None


def test_default_route_and_table_size(prog) -> None:
    """A /0 prefix matches everything; ipv4_lpm has size = 1024 (RESOURCE_EXHAUSTED beyond)."""
    from softswitch import Lpm, Switch, SwitchError

    sw = Switch(prog)
    sw.table_add("ipv4_lpm", [Lpm(0, 0)], "set_nhop", [0x000000000009, 9])
    p = ip_packet("203.0.113.7")
    verify_packets(sw.process_packet(1, bytes(p)), [(9, routed(p, "00:00:00:00:00:09"))])
    for i in range(1, 1024):
        sw.table_add("ipv4_lpm", [Lpm(0x0A000000 + (i << 8), 24)], "drop", [])
    with pytest.raises(SwitchError) as info:
        sw.table_add("ipv4_lpm", [Lpm(0x0B000000, 8)], "drop", [])
    assert info.value.code == "RESOURCE_EXHAUSTED"
    assert len(sw.table_entries("ipv4_lpm")) == 1024
    verify_packets(sw.process_packet(1, bytes(p)), [(9, routed(p, "00:00:00:00:00:09"))])
