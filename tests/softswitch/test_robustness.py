"""Malformed packets never crash the engine (issue 2, "Malformed packets").

Garbage, truncated and corrupted frames go through realistic parsers of the
corpus (router, UDP checksum, stacks, varbit / lookahead / advance, unions).
process_packet must return a list of outputs and never raise; where the
program verifies a checksum, corruption must be detected.
"""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from sst_packets import program, verify_no_packets

PROGRAMS = ["router.p4", "udp_checksum.p4", "stack.p4", "parser_ops.p4", "union.p4",
            "enum_error.p4", "tables.p4"]
FAST = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


@cache
def compiled(name: str):
    return program(name)


def fresh_switch(name: str):
    from softswitch import Lpm, Switch

    sw = Switch(compiled(name))
    if name == "router.p4":
        sw.table_add("ipv4_lpm", [Lpm(0x0A000000, 8)], "set_nhop", [2, 2])
    return sw


@cache
def shared_switch(name: str):
    """One switch per program for the hypothesis tests: these programs keep no
    per-packet state that could change a later result, and building a switch
    per example would dominate the run time."""
    return fresh_switch(name)


def run(sw, port: int, data: bytes) -> list:
    outs = sw.process_packet(port, data)
    assert isinstance(outs, list)
    for o in outs:
        assert isinstance(o.port, int) and 0 <= o.port < 512
        assert isinstance(bytes(o.data), bytes)
    return outs


def valid_router_frame(payload: bytes = b"hello world") -> bytes:
    return bytes(Ether(dst="00:00:00:00:00:aa", src="00:00:00:00:00:01")
                 / IP(src="192.168.0.1", dst="10.1.2.3", ttl=64)
                 / TCP(sport=1, dport=2) / payload)


@pytest.mark.parametrize("name", PROGRAMS)
@FAST
@given(data=st.binary(max_size=200), port=st.integers(min_value=0, max_value=510))
def test_garbage_never_raises(name: str, data: bytes, port: int) -> None:
    run(shared_switch(name), port, data)


ETH_IPV4 = bytes.fromhex("0000000000aa000000000001") + b"\x08\x00"


@pytest.mark.parametrize("name", ["router.p4", "udp_checksum.p4"])
@FAST
@given(ip=st.binary(max_size=80), proto=st.sampled_from([6, 17, 1, 255]))
def test_ipv4_shaped_garbage_never_raises(name: str, ip: bytes, proto: int) -> None:
    """Random IPv4 headers (any ihl, lengths, protocol) behind a valid Ethernet header."""
    ip = bytearray(ip)
    if len(ip) > 9:
        ip[9] = proto
    run(shared_switch(name), 1, ETH_IPV4 + bytes(ip))


@pytest.mark.parametrize("name", PROGRAMS)
def test_empty_and_tiny_frames(name: str) -> None:
    sw = fresh_switch(name)
    for n in range(0, 5):
        run(sw, 0, bytes([0xFF] * n))
        run(sw, 1, bytes(n))


def test_every_truncation_of_a_valid_frame() -> None:
    """Shorter than Ethernet + IPv4: parser error, dropped.  Longer: TCP may be cut."""
    sw = fresh_switch("router.p4")
    frame = valid_router_frame()
    assert len(run(sw, 1, frame)) == 1
    for n in range(len(frame)):
        outs = run(sw, 1, frame[:n])
        if n < 14 + 20:
            verify_no_packets(outs)


def test_truncated_tcp_header_is_a_parser_error() -> None:
    """IPv4 intact, TCP cut short: PacketTooShort reaches ingress, which drops it."""
    sw = fresh_switch("router.p4")
    frame = valid_router_frame(b"")
    for n in range(14 + 20, 14 + 20 + 20):
        verify_no_packets(run(sw, 1, frame[:n]))


@FAST
@given(offset=st.integers(min_value=14, max_value=33), value=st.integers(0, 255))
def test_any_ipv4_header_byte_change_is_caught(offset: int, value: int) -> None:
    """One changed byte in the IPv4 header always breaks the ones' complement sum."""
    sw = shared_switch("router.p4")
    frame = bytearray(valid_router_frame())
    if frame[offset] == value:
        value ^= 0x01
    frame[offset] = value
    verify_no_packets(run(sw, 1, bytes(frame)))


@FAST
@given(offset=st.integers(min_value=0, max_value=10), flip=st.integers(1, 255))
def test_udp_payload_corruption_is_flagged(offset: int, flip: int) -> None:
    """udp_checksum.p4 sends packets with checksum_error to port 9."""
    sw = shared_switch("udp_checksum.p4")
    frame = bytearray(bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=7, dport=8)
                            / b"hello world"))
    assert [o.port for o in run(sw, 0, bytes(frame))] == [1]
    frame[14 + 20 + 8 + offset] ^= flip
    assert [o.port for o in run(sw, 0, bytes(frame))] == [9]


@FAST
@given(data=st.binary(min_size=1, max_size=64))
def test_stack_overflow_garbage(data: bytes) -> None:
    """Labels without bottom-of-stack bits overflow the 4-entry stack; no crash."""
    sw = shared_switch("stack.p4")
    labels = b"".join(bytes([i, 0]) for i in range(6))
    outs = run(sw, 2, labels + data)
    assert [o.port for o in outs] == [4]


def test_state_survives_bad_packets() -> None:
    """After a burst of garbage the router still forwards valid frames the same way."""
    sw = fresh_switch("router.p4")
    good = valid_router_frame()
    before = [(o.port, bytes(o.data)) for o in run(sw, 1, good)]
    for junk in (b"", b"\x00", b"\xff" * 13, b"\x08\x00" * 40, bytes(range(256))):
        run(sw, 1, junk)
    assert [(o.port, bytes(o.data)) for o in run(sw, 1, good)] == before


LOOPING = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> n; }
struct headers_t { h_t h; }
struct meta_t { @field_list(1) bit<8> passes; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        m.passes = m.passes + 1;
        if (hdr.h.n == 1) { resubmit_preserving_field_list(1); }
    }
}
control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply { if (hdr.h.n == 2) { recirculate_preserving_field_list(1); } }
}
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
"""


@pytest.mark.parametrize("n", [1, 2], ids=["resubmit", "recirculate"])
def test_endless_resubmit_or_recirculate_terminates(n: int) -> None:
    """A program that resubmits / recirculates forever loops in BMv2; here the call returns."""
    from softswitch import Switch, compile_source

    sw = Switch(compile_source(LOOPING, filename="looping.p4"))
    outs = run(sw, 0, bytes([n, 0xAB]))
    assert all(o.port == 1 for o in outs)
    # the switch keeps working afterwards
    assert [(o.port, bytes(o.data)) for o in run(sw, 0, bytes([0, 0xAB]))] == [(1, bytes([0, 0xAB]))]


@pytest.mark.parametrize("port", [512, -1, "1", None])
def test_bad_ingress_port_is_a_switch_error(port) -> None:
    from softswitch import SwitchError

    sw = fresh_switch("router.p4")
    with pytest.raises(SwitchError) as info:
        sw.process_packet(port, valid_router_frame())
    assert info.value.code == "INVALID_ARGUMENT"
    assert len(run(sw, 1, valid_router_frame())) == 1


def test_non_bytes_payload_is_a_switch_error() -> None:
    from softswitch import SwitchError

    sw = fresh_switch("router.p4")
    with pytest.raises(SwitchError):
        sw.process_packet(1, "not bytes")


def test_bytes_like_payloads_are_accepted() -> None:
    sw = fresh_switch("router.p4")
    frame = valid_router_frame()
    want = [(o.port, bytes(o.data)) for o in run(sw, 1, frame)]
    for like in (bytearray(frame), memoryview(frame)):
        assert [(o.port, bytes(o.data)) for o in run(sw, 1, like)] == want


SPINNING_PARSER = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> n; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { transition select(pkt.lookahead<bit<8>>()) { 0: start; default: parse_h; } }
    state parse_h { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error != error.NoError) { sm.egress_spec = 2; }
    }
}
control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
"""


def test_parser_loop_without_progress_ends_with_an_error() -> None:
    """A parser state that loops without consuming input must not hang the switch."""
    from softswitch import Switch, compile_source

    sw = Switch(compile_source(SPINNING_PARSER, filename="spinning.p4"))
    assert [(o.port, bytes(o.data)) for o in run(sw, 0, b"\x00\x01")] == [(2, b"\x00\x01")]
    assert [(o.port, bytes(o.data)) for o in run(sw, 0, b"\x05\x01")] == [(1, b"\x05\x01")]


def test_jumbo_frame_is_routed_intact() -> None:
    sw = fresh_switch("router.p4")
    frame = valid_router_frame(bytes(range(256)) * 35)
    outs = run(sw, 1, frame)
    assert [o.port for o in outs] == [2]
    out = bytes(outs[0].data)
    assert len(out) == len(frame) and out[34:] == frame[34:]


ASSERTING = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> n; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        assert(hdr.h.n != 7);
        assume(hdr.h.n != 8);
        hdr.h.n = hdr.h.n + 1;
    }
}
control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
"""


def test_failed_assert_or_assume_drops_the_packet_only() -> None:
    """simple_switch stops the whole process on a failed assert; here only the packet goes."""
    from softswitch import Switch, compile_source

    sw = Switch(compile_source(ASSERTING, filename="asserting.p4"))
    assert [(o.port, bytes(o.data)) for o in run(sw, 0, b"\x01")] == [(1, b"\x02")]
    assert run(sw, 0, b"\x07") == []
    assert run(sw, 0, b"\x08") == []
    assert [(o.port, bytes(o.data)) for o in run(sw, 0, b"\x02")] == [(1, b"\x03")]
