"""Parser constructs, header stacks/unions, selectors, sub-controls and the STF runner end to end."""

import pytest

from softswitch import Exact, Switch, SwitchError, compile_source
from softswitch.engine.hashes import HashEngine
from softswitch.stf import main as stf_main
from softswitch.stf import run_file

PARSE = r"""
#include <core.p4>
#include <v1model.p4>
header tag_t { bit<8> kind; bit<8> len; }
header opt_t { varbit<64> data; }
header label_t { bit<7> value; bit<1> bos; }
header a_t { bit<16> x; }
header b_t { bit<8> y; }
header_union ab_t { a_t a; b_t b; }
header res_t { bit<8> nlabels; bit<8> peek; bit<8> optlen; bit<8> which; bit<8> err; }
struct headers_t { tag_t tag; opt_t opt; label_t[3] labels; ab_t ab; res_t res; }
struct metadata_t { bit<8> n; }

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.tag);
        pkt.extract(hdr.opt, (bit<32>) hdr.tag.len * 8);
        transition select(hdr.tag.kind) {
            1: labels;
            2: union_a;
            3: union_b;
            4: skip;
            default: accept;
        }
    }
    state labels {
        pkt.extract(hdr.labels.next);
        meta.n = meta.n + 1;
        transition select(hdr.labels.last.bos) {
            0: labels;
            1: accept;
        }
    }
    state union_a { pkt.extract(hdr.ab.a); transition accept; }
    state union_b { pkt.extract(hdr.ab.b); transition accept; }
    state skip {
        meta.n = pkt.lookahead<bit<8>>();
        pkt.advance(16);
        transition accept;
    }
}
control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control Stamp(inout res_t r, in bit<8> which) {
    apply { r.which = which; }
}

control Ig(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    Stamp() stamp;
    apply {
        sm.egress_spec = 1;
        hdr.res.setValid();
        hdr.res.nlabels = meta.n;
        hdr.res.optlen = hdr.tag.len;
        if (sm.parser_error == error.StackOutOfBounds) { hdr.res.err = 1; }
        if (sm.parser_error == error.HeaderTooShort) { hdr.res.err = 2; }
        if (sm.parser_error == error.PacketTooShort) { hdr.res.err = 3; }
        if (hdr.ab.a.isValid()) { stamp.apply(hdr.res, 0xA); }
        else if (hdr.ab.b.isValid()) { stamp.apply(hdr.res, 0xB); }
        if (hdr.tag.kind == 5) {           // push a label in front
            hdr.labels.push_front(1);
            hdr.labels[0].setValid();
            hdr.labels[0].value = 0x55;
            hdr.labels[0].bos = 0;
        }
        if (hdr.tag.kind == 6) {           // set b valid: a becomes invalid
            hdr.ab.b.setValid();
            hdr.ab.b.y = 0x66;
        }
    }
}
control Eg(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.tag); pkt.emit(hdr.opt); pkt.emit(hdr.labels); pkt.emit(hdr.ab); pkt.emit(hdr.res); }
}
V1Switch(P(), NoVerify(), Ig(), Eg(), NoCompute(), D()) main;
"""


@pytest.fixture(scope="module")
def parse_sw():
    return Switch(compile_source(PARSE, "parse.p4"))


def run(sw, data):
    out = sw.process_packet(0, data)
    assert len(out) == 1
    return out[0].data


def test_varbit_and_label_stack(parse_sw):
    # kind 1, 2 option bytes, labels 0x10 (bos 0), 0x11 (bos 1), payload ff
    data = bytes([1, 2, 0xAB, 0xCD, 0x20, 0x23, 0xFF])
    out = run(parse_sw, data)
    assert out == bytes([1, 2, 0xAB, 0xCD, 0x20, 0x23]) + bytes([2, 0, 2, 0, 0]) + b"\xff"


def test_stack_overflow_is_a_parser_error(parse_sw):
    data = bytes([1, 0, 0x20, 0x20, 0x20, 0x20])  # four labels without bos: stack of 3
    out = run(parse_sw, data)
    assert out[:5] == bytes([1, 0, 0x20, 0x20, 0x20])
    assert out[5:10] == bytes([3, 0, 0, 0, 1])
    assert out[10:] == bytes([0x20])  # unparsed rest is payload


def test_varbit_too_long_and_too_short(parse_sw):
    out = run(parse_sw, bytes([0, 9]) + bytes(range(9)))
    assert out == bytes([0, 9]) + bytes([0, 0, 9, 0, 2]) + bytes(range(9))
    out = run(parse_sw, bytes([0, 4, 1]))
    assert out == bytes([0, 4, 0, 0, 4, 0, 3, 1])  # res after tag, then the unparsed byte


def test_union_members_and_sub_control(parse_sw):
    assert run(parse_sw, bytes([2, 0, 0x12, 0x34])) == bytes([2, 0, 0x12, 0x34, 0, 0, 0, 0xA, 0])
    assert run(parse_sw, bytes([3, 0, 0x56])) == bytes([3, 0, 0x56, 0, 0, 0, 0xB, 0])
    # setValid on b invalidates a: only b is emitted
    assert run(parse_sw, bytes([6, 0])) == bytes([6, 0, 0x66, 0, 0, 0, 0, 0])


def test_lookahead_advance_and_push_front(parse_sw):
    out = run(parse_sw, bytes([4, 0, 0x77, 0x88, 0x99]))
    assert out == bytes([4, 0, 0x77, 0, 0, 0, 0, 0x99])
    out = run(parse_sw, bytes([5, 0]))
    assert out == bytes([5, 0, 0xAA, 0, 0, 0, 0, 0])


SELECTOR = r"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<32> src; bit<32> dst; bit<8> tag; }
struct headers_t { h_t h; }
struct metadata_t { bit<8> n; }
parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }
control Ig(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action_selector(HashAlgorithm.crc16, 32w64, 32w16) sel;
    action fwd(bit<9> port, bit<8> tag) { sm.egress_spec = port; hdr.h.tag = tag; }
    table ecmp {
        key = { hdr.h.dst: exact; hdr.h.src: selector; }
        actions = { fwd; NoAction; }
        implementation = sel;
        default_action = NoAction();
    }
    apply { sm.egress_spec = 9; ecmp.apply(); }
}
control Eg(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), NoVerify(), Ig(), Eg(), NoCompute(), D()) main;
"""


def test_action_selector_picks_member_by_crc16_of_selector_keys():
    sw = Switch(compile_source(SELECTOR, "sel.p4"))
    for m in range(3):
        sw.ap_member_add("sel", 10 + m, "fwd", {"port": 1 + m, "tag": m})
    sw.ap_group_add("sel", 1, [12, 10, 11])
    sw.table_add_indirect("ecmp", [Exact(7)], group=1)
    sw.table_add_indirect("ecmp", [Exact(8)], member=11)
    crc16 = HashEngine().algorithms["crc16"]
    for src in range(40):
        data = src.to_bytes(4, "big") + (7).to_bytes(4, "big") + b"\x00"
        out = sw.process_packet(0, data)
        index = crc16(src.to_bytes(4, "big")) % 3
        assert [o.port for o in out] == [1 + index]  # members ordered by id: 10, 11, 12
    out = sw.process_packet(0, bytes(4) + (8).to_bytes(4, "big") + b"\x00")
    assert [o.port for o in out] == [2]
    with pytest.raises(SwitchError):
        sw.table_add("ecmp", [Exact(9)], "fwd", [1, 1])
    sw.ap_group_modify("sel", 1, [])
    assert [o.port for o in sw.process_packet(0, bytes(4) + (7).to_bytes(4, "big") + b"\x00")] == [9]
    assert sw.ap_groups("sel") == {1: ()}


STF_PROG = r"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<8> v; }
struct headers_t { h_t h; }
struct metadata_t { bit<8> n; }
parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }
control Ig(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    counter(4, CounterType.packets) hits;
    register<bit<8>>(4) last;
    action set(bit<9> port, bit<8> v) { sm.egress_spec = port; hdr.h.v = v; hits.count((bit<32>) 0); }
    action drop() { mark_to_drop(sm); }
    table t {
        key = { hdr.h.k: ternary; }
        actions = { set; drop; }
        default_action = drop();
    }
    apply { t.apply(); last.write((bit<32>) 0, hdr.h.k); if (hdr.h.k == 0x77) { sm.mcast_grp = 1; } }
}
control Eg(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), NoVerify(), Ig(), Eg(), NoCompute(), D()) main;
"""

STF_OK = """
# explicit priorities: the largest number wins (p4c's runner gives BMv2's CLI
# 10000 - priority); then entries without priority, the first written winning
add t 10 hdr.h.k:0x5* set(port:6, v:0x20)
add t 20 hdr.h.k:0x55 set(port:6, v:0x10)
add t hdr.h.k:0x1* set(port:2, v:0xAA)
add t hdr.h.k:0x** set(port:3, v:0xBB)
packet 0 55 00
expect 6 55 10
packet 0 56 00
expect 6 56 20
packet 0 12 00 ffff
expect 2 12 AA ff**$
packet 0 22 00
expect 3 22 BB
counter_read hits 0 packets:4
register_read last 0 0x22
mc_mgrp_create 1
mc_node_create 0 4 5
mc_node_associate 1 0
packet 0 77 00
expect 4 77
expect 5 77 bb
"""


def write(tmp_path, p4, stf):
    (tmp_path / "p.p4").write_text(p4)
    (tmp_path / "t.stf").write_text(stf)
    return str(tmp_path / "p.p4"), str(tmp_path / "t.stf")


def test_stf_run_passes(tmp_path):
    result = run_file(*write(tmp_path, STF_PROG, STF_OK))
    assert result.ok, result.report
    assert result.code == 0


def test_stf_mismatch_reports_diff(tmp_path, capsys):
    bad = STF_OK.replace("expect 2 12 AA", "expect 2 12 AB").replace("expect 4 77", "expect 7 77")
    p4, stf = write(tmp_path, STF_PROG, bad)
    result = run_file(p4, stf)
    assert not result.ok and result.code == 1
    assert "expected 12ab" in result.report and "got      12aa" in result.report
    assert "port 4: unexpected packet" in result.report
    assert "port 7: expected packet #1 did not arrive" in result.report
    assert stf_main([p4, stf]) == 1
    assert "differs" in capsys.readouterr().err


def test_stf_malformed_and_refused_lines(tmp_path):
    p4, stf = write(tmp_path, STF_PROG, "packet 0 12\nexpect 2 zz\n")
    result = run_file(p4, stf)
    assert result.code == 2 and ":2:" in result.report
    assert stf_main([p4, stf]) == 2
    p4, stf = write(tmp_path, STF_PROG, "add t hdr.h.k:0x1* nosuch(a:1)\n")
    result = run_file(p4, stf)
    assert result.code == 1 and "t.stf:1: add refused" in result.report
    p4, stf = write(tmp_path, STF_PROG + "garbage", "packet 0 00\n")
    assert run_file(p4, stf).code == 2


def test_stf_show_python_prints_the_generated_module(tmp_path, capsys):
    p4, stf = write(tmp_path, STF_PROG, "packet 0 22 00\n")
    assert stf_main(["--show-python", p4, stf]) == 0  # the table is empty: dropped, nothing expected
    out = capsys.readouterr().out
    assert "def TA_" in out and "RUN_ingress = " in out


TWICE = r"""#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct headers_t { h_t h; }
struct metadata_t { bit<8> x; }
parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }
control Lookup(in bit<8> k, out bit<8> v) {
    counter(4, CounterType.packets) hits;
    action set(bit<8> x) { v = x; hits.count(0); }
    table t { key = { k: exact; } actions = { set; NoAction; } default_action = set(0); }
    apply { t.apply(); }
}
control Ig(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    Lookup() first;
    Lookup() second;
    apply {
        first.apply(hdr.h.a, hdr.h.a);
        second.apply(hdr.h.b, hdr.h.b);
        sm.egress_spec = 1;
    }
}
control Eg(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), NoVerify(), Ig(), Eg(), NoCompute(), D()) main;
"""


def test_two_instances_of_a_control_have_their_own_tables_and_counters():
    program = compile_source(TWICE, "twice.p4")
    sw = Switch(program)
    assert sorted(sw.tables) == sorted(t.name for t in program.info.tables) == ["Ig.first.t", "Ig.second.t"]
    sw.table_add("Ig.first.t", [Exact(1)], "set", [0x11])
    sw.table_add("Ig.second.t", [Exact(1)], "set", [0x22])
    assert sw.process_packet(0, bytes([1, 1])) == [(1, bytes([0x11, 0x22]))]  # out params copied back
    assert sw.process_packet(0, bytes([2, 1])) == [(1, bytes([0x00, 0x22]))]  # first misses: default
    assert sw.counter_read("Ig.first.hits", 0) == (2, 4)
    assert sw.counter_read("Ig.second.hits", 0) == (2, 4)


def test_check_program_names_what_the_engine_cannot_run():
    from softswitch.engine import check_program

    src = STF_PROG.replace("control Ig(", "extern void frob(in bit<8> x);\ncontrol Ig(").replace(
        "apply { t.apply();", "apply { frob(hdr.h.k); t.apply();")
    errors = check_program(compile_source(src, "frob.p4"))
    assert len(errors) == 1 and "frob.p4:" in errors[0] and "unsupported: extern function frob" in errors[0]
    assert check_program(compile_source(STF_PROG, "ok.p4")) == []


STATE_LOCAL = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct hs { h_t h; }
struct m_t { }
parser P(packet_in pkt, out hs hdr, inout m_t m, inout standard_metadata_t sm) {
    state start {
        bit<8> peek = pkt.lookahead<bit<8>>();
        pkt.extract(hdr.h);
        transition select(peek) { 1: one; default: accept; }
    }
    state one { hdr.h.b = 0xEE; transition accept; }
}
control VC(inout hs hdr, inout m_t m) { apply { } }
control I(inout hs hdr, inout m_t m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 2; }
}
control E(inout hs hdr, inout m_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout hs hdr, inout m_t m) { apply { } }
control D(packet_out pkt, in hs hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_local_variable_declared_in_a_parser_state_drives_select():
    """P4_16 13.4: a state may declare locals; here one holds a lookahead value."""
    sw = Switch(compile_source(STATE_LOCAL, "state_local.p4"))
    (out,) = sw.process_packet(1, bytes([1, 0x11]))
    assert out.port == 2 and out.data == bytes([1, 0xEE])
    (out,) = sw.process_packet(1, bytes([7, 0x11]))
    assert out.data == bytes([7, 0x11])
