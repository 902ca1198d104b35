"""Packet tests through a real IPv4 router program: forwarding, checksums, parser errors."""

import random

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from softswitch import Lpm, Switch, compile_source

ROUTER = r"""
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen;
    bit<16> identification; bit<3> flags; bit<13> fragOffset;
    bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
struct headers_t { ethernet_t ethernet; ipv4_t ipv4; }
error { BadType }
struct metadata_t { bit<8> unused; }

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800: parse_ipv4;
            0x9999: reject_it;
            default: accept;
        }
    }
    state parse_ipv4 { pkt.extract(hdr.ipv4); transition accept; }
    state reject_it { verify(false, error.BadType); transition accept; }
}

control V(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset,
              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control Ig(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action drop() { mark_to_drop(sm); }
    action set_nhop(bit<48> dmac, bit<9> port) {
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = dmac;
        sm.egress_spec = port;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { set_nhop; drop; }
        default_action = drop();
    }
    apply {
        if (sm.parser_error == error.PacketTooShort) {
            sm.egress_spec = 100;
        } else if (sm.parser_error == error.BadType) {
            sm.egress_spec = 101;
        } else if (sm.checksum_error == 1) {
            sm.egress_spec = 102;
        } else if (hdr.ipv4.isValid()) {
            ipv4_lpm.apply();
        } else {
            sm.egress_spec = 103;
        }
    }
}

control Eg(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}

control C(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset,
              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.ethernet); pkt.emit(hdr.ipv4); }
}

V1Switch(P(), V(), Ig(), Eg(), C(), D()) main;
"""


@pytest.fixture(scope="module")
def program():
    return compile_source(ROUTER, "router.p4")


@pytest.fixture
def sw(program):
    s = Switch(program)
    s.table_add("ipv4_lpm", [Lpm(0x0A000000, 8)], "set_nhop", [0x0000000000AA, 2])
    s.table_add("ipv4_lpm", [Lpm(0x0A010000, 16)], "set_nhop", [0x0000000000BB, 3])
    return s


def frame(dst="10.1.2.3", ttl=64, payload=b"hello"):
    return bytes(Ether(dst="00:00:00:00:00:01", src="00:00:00:00:00:02") / IP(dst=dst, ttl=ttl) / UDP() / payload)


def test_longest_prefix_forwarding_rewrites_and_fixes_checksum(sw):
    out = sw.process_packet(1, frame("10.1.2.3"))
    assert [o.port for o in out] == [3]
    pkt = Ether(out[0].data)
    assert pkt.dst == "00:00:00:00:00:bb" and pkt.src == "00:00:00:00:00:01"
    assert pkt[IP].ttl == 63
    sent_chksum = pkt[IP].chksum
    del pkt[IP].chksum
    assert IP(bytes(pkt[IP]))[IP].chksum == sent_chksum  # scapy recomputes the same checksum
    assert bytes(pkt[UDP].payload) == b"hello"  # payload carried through unparsed


def test_shorter_prefix_and_miss(sw):
    assert [o.port for o in sw.process_packet(1, frame("10.9.9.9"))] == [2]
    assert sw.process_packet(1, frame("192.168.0.1")) == []  # default action drop
    assert sw.stats["dropped"][1] == 1


def test_bad_checksum_sets_checksum_error(sw):
    data = bytearray(frame())
    data[14 + 10] ^= 0xFF  # corrupt the IPv4 checksum
    assert [o.port for o in sw.process_packet(1, bytes(data))] == [102]


def test_truncated_header_sets_parser_error_and_keeps_going(sw):
    data = frame()[:14 + 10]  # ethernet + half an IPv4 header
    out = sw.process_packet(1, data)
    assert [o.port for o in out] == [100]
    # the half header stays unparsed payload: the packet comes out unchanged
    assert out[0].data == data


def test_verify_error_reaches_ingress(sw):
    data = bytes(Ether(type=0x9999) / b"xyz")
    assert [o.port for o in sw.process_packet(1, data)] == [101]


def test_non_ip_and_empty_frames(sw):
    assert [o.port for o in sw.process_packet(1, bytes(Ether(type=0x86DD) / b"v6"))] == [103]
    assert [o.port for o in sw.process_packet(1, b"")] == [100]


def test_garbage_never_crashes(sw):
    rng = random.Random(1)
    for _ in range(300):
        n = rng.randrange(0, 80)
        data = bytes(rng.getrandbits(8) for _ in range(n))
        if rng.random() < 0.5 and n > 14:
            data = data[:12] + b"\x08\x00" + data[14:]
        for out in sw.process_packet(rng.randrange(0, 8), data):
            assert 0 <= out.port < 512
    assert sum(sw.stats["in"].values()) == 300
