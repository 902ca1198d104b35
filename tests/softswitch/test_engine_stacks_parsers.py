"""Header stacks and parser constructs: run-time indexes (spec 8.18, 8.26), stacks of
header unions (8.20), varbit extract errors (13.8.2), lookahead of a struct (13.8.3),
sub-parsers with scalar out parameters (6.8, 13.x)."""

import logging

from engine_harness import run

from softswitch import Switch, compile_source

STACK = dict(types="header e_t { bit<8> x; }", fields="e_t[2] s;")


def test_run_time_index_in_range_reads_and_writes_the_element():
    body = """hdr.s[0].setValid(); hdr.s[1].setValid(); hdr.s[0].x = 10; hdr.s[1].x = 11;
        hdr.s[hdr.i.a].x = hdr.s[hdr.i.a].x + 5;
        hdr.o.r0 = hdr.s[0].x; hdr.o.r1 = hdr.s[1].x;"""
    assert run(body, a=1, **STACK)[:2] == [10, 16]


def test_run_time_index_out_of_range_reads_invalid_and_writes_nothing(caplog):
    # spec 8.26: reading an element out of range gives an unspecified value and isValid()
    # may return either (softswitch: an invalid header, fields 0); writing to it must not
    # change any defined state. (BMv2 simple_switch aborts the process here.)
    body = """hdr.s[0].setValid(); hdr.s[1].setValid(); hdr.s[0].x = 10; hdr.s[1].x = 11;
        hdr.o.r0 = hdr.s[hdr.i.a].isValid() ? 8w1 : 8w2;
        hdr.o.r1 = hdr.s[hdr.i.a].x;
        hdr.s[hdr.i.a].x = 99;
        hdr.s[hdr.i.a] = hdr.s[0];
        hdr.o.r2 = hdr.s[0].x; hdr.o.r3 = hdr.s[1].x;"""
    with caplog.at_level(logging.WARNING, logger="softswitch.engine"):
        assert run(body, a=7, **STACK)[:4] == [2, 0, 10, 11]
    assert any("index 7 out of range (size 2)" in r.getMessage() for r in caplog.records)


UNION_STACK = r"""
#include <core.p4>
#include <v1model.p4>
header kind_t { bit<8> k; }
header a_t { bit<8> a; }
header b_t { bit<16> b; }
header_union u_t { a_t a; b_t b; }
header res_t { bit<8> n; bit<8> first_a; bit<8> second_b; bit<8> last_valid; }
struct H { kind_t[3] kinds; u_t[3] u; res_t res; }
struct M { bit<8> n; }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.kinds.next);
        transition select(hdr.kinds.last.k) { 1: one; 2: two; default: accept; }
    }
    state one { pkt.extract(hdr.u.next.a); m.n = m.n + 1; transition start; }
    state two { pkt.extract(hdr.u.next.b); m.n = m.n + 1; transition start; }
}
control C(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.res.setValid();
        hdr.res.n = m.n;
        hdr.res.first_a = hdr.u[0].a.isValid() ? hdr.u[0].a.a : 8w0xee;
        hdr.res.second_b = hdr.u[1].b.isValid() ? hdr.u[1].b.b[7:0] : 8w0xee;
        hdr.res.last_valid = hdr.u[2].a.isValid() || hdr.u[2].b.isValid() ? 8w1 : 8w0;
    }
}
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.res); } }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
"""


def test_next_on_a_stack_of_header_unions_advances():
    # spec 8.20 / 13.8.2: extract into `u.next.a` fills element nextIndex and advances it,
    # so the second extract lands in u[1] (BMv2 simple_switch gives the same bytes)
    sw = Switch(compile_source(UNION_STACK, "ustack.p4"))
    # kind 1, a = 0x41; kind 2, b = 0x1234; kind 0 (stop)
    out = sw.process_packet(0, bytes([1, 0x41, 2, 0x12, 0x34, 0]))
    assert out[0].data == bytes([2, 0x41, 0x34, 0])


VARBIT = r"""
#include <core.p4>
#include <v1model.p4>
header len_t { bit<8> bits; }
header opt_t { bit<8> fixed; varbit<32> data; }
header res_t { bit<8> err; }
struct H { len_t len; opt_t opt; res_t res; }
struct M { }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.len);
        pkt.extract(hdr.opt, (bit<32>) hdr.len.bits);
        transition accept;
    }
}
control C(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.res.setValid();
        hdr.res.err = 9;
        if (sm.parser_error == error.NoError) { hdr.res.err = 0; }
        if (sm.parser_error == error.ParserInvalidArgument) { hdr.res.err = 1; }
        if (sm.parser_error == error.PacketTooShort) { hdr.res.err = 2; }
        if (sm.parser_error == error.HeaderTooShort) { hdr.res.err = 3; }
    }
}
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.res); pkt.emit(hdr.len); pkt.emit(hdr.opt); } }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
"""


def test_varbit_size_not_a_multiple_of_8_is_parser_invalid_argument():
    # core.p4 / BMv2 extract_VL: a size that is no whole number of bytes is
    # ParserInvalidArgument, checked before the packet length and the maximum (the same
    # bytes come out of BMv2 simple_switch)
    sw = Switch(compile_source(VARBIT, "varbit.p4"))
    err = [sw.process_packet(0, bytes(p))[0].data[0] for p in (
        [16, 0xAA, 1, 2],        # 16 bits: fine
        [12, 0xAA, 1, 2],        # 12 bits: not whole bytes
        [12],                    # 12 bits and a packet too short as well: still 1
        [40, 0xAA, 1, 2, 3, 4, 5, 6],  # 40 bits > varbit<32>: HeaderTooShort
        [24, 0xAA, 1],           # 24 bits but only 8 left: PacketTooShort
    )]
    assert err == [0, 1, 1, 3, 2]


LOOKAHEAD = r"""
#include <core.p4>
#include <v1model.p4>
header pair_t { bit<4> hi; bit<4> lo; bit<8> next; }
struct peek_t { bit<4> hi; pair_t inner; bit<4> rest; }
header res_t { bit<8> hi; bit<8> ihi; bit<8> ilo; bit<8> inext; bit<8> rest; bit<8> valid; bit<8> pos; }
struct H { pair_t p; res_t res; }
struct M { peek_t peek; }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start {
        m.peek = pkt.lookahead<peek_t>();
        pkt.extract(hdr.p);
        transition accept;
    }
}
control C(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.res.setValid();
        hdr.res.hi = (bit<8>) m.peek.hi;
        hdr.res.ihi = (bit<8>) m.peek.inner.hi;
        hdr.res.ilo = (bit<8>) m.peek.inner.lo;
        hdr.res.inext = m.peek.inner.next;
        hdr.res.rest = (bit<8>) m.peek.rest;
        hdr.res.valid = m.peek.inner.isValid() ? 8w1 : 8w0;
        hdr.res.pos = hdr.p.next;
    }
}
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.res); } }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
"""


def test_lookahead_of_a_struct_cuts_the_bits_in_field_order():
    # spec 13.8.3: lookahead<T> reads sizeof(T) bits without advancing; as p4c's
    # ExpandLookahead, the bits fill the fields in order and headers inside become valid
    # (BMv2 simple_switch gives the same bytes).
    # 28 bits 0x12 0x34 0x56 0x7.: hi=1, inner.hi=2, inner.lo=3, inner.next=0x45, rest=6
    sw = Switch(compile_source(LOOKAHEAD, "lookahead.p4"))
    out = sw.process_packet(0, bytes([0x12, 0x34, 0x56, 0x78]))
    # the extract after the lookahead still starts at bit 0: p.next = 0x34; the rest of
    # the packet follows as payload
    assert list(out[0].data) == [1, 2, 3, 0x45, 6, 1, 0x34, 0x56, 0x78]


SUBPARSER = r"""
#include <core.p4>
#include <v1model.p4>
header t_t { bit<8> v; }
header res_t { bit<8> count; bit<8> sum; bit<8> flag; }
struct H { t_t[4] t; res_t res; }
struct M { bit<8> count; bit<8> sum; }
parser Count(packet_in pkt, inout H hdr, out bit<8> count, inout bit<8> sum) {
    state start { count = 0; transition loop; }
    state loop {
        pkt.extract(hdr.t.next);
        count = count + 1;
        sum = sum + hdr.t.last.v;
        transition select(hdr.t.last.v) { 0: accept; default: loop; }
    }
}
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    Count() counter;
    state start { m.sum = 100; counter.apply(pkt, hdr, m.count, m.sum); transition accept; }
}
control C(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.res.setValid();
        hdr.res.count = m.count;
        hdr.res.sum = m.sum;
        hdr.res.flag = hdr.t[2].isValid() ? 8w1 : 8w0;
    }
}
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.res); } }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
"""


def test_sub_parser_copies_out_scalar_out_and_inout_arguments():
    # spec 6.8: the sub-parser's out `count` and inout `sum` are copied back when it accepts
    # (BMv2 simple_switch gives the same bytes)
    sw = Switch(compile_source(SUBPARSER, "subparser.p4"))
    out = sw.process_packet(0, bytes([5, 7, 0]))
    assert list(out[0].data) == [3, 112, 1]  # 3 elements, 100 + 5 + 7 + 0, t[2] valid
