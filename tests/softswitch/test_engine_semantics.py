"""P4_16 expression and statement semantics, checked packet by packet against Python."""

import random

import pytest

from softswitch import Exact, Switch, compile_source

PROG = r"""
#include <core.p4>
#include <v1model.p4>
header in_t { bit<8> a; bit<8> b; int<8> c; int<8> d; bit<16> e; bit<4> sh; bit<4> sel; }
header out_t {
    bit<8> add; bit<8> sub; bit<8> mul; bit<8> satadd; bit<8> satsub;
    int<8> sadd; int<8> ssat; int<8> ssubsat; bit<8> slice; bit<16> concat;
    bit<8> shl; bit<8> shr; int<8> sshr; bit<8> neg; bit<8> inv;
    bit<16> widen; bit<8> cmp; bit<8> tern; bit<8> fnout; bit<8> ret;
    bit<8> div; bit<8> mod; bit<8> setslice; bit<8> path;
}
struct headers_t { in_t i; out_t o; }
struct metadata_t { bit<8> x; }

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.i); transition accept; }
}
control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

bit<8> twice_plus(in bit<8> v, out bit<8> doubled) {
    doubled = v + v;
    if (v > 100) {
        return 1;
    }
    return 2;
}

control Ig(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    bit<8> counter_local = 7;
    action mark(bit<8> v) { hdr.o.path = v; }
    action other() { hdr.o.path = 0xEE; }
    table choose {
        key = { hdr.i.sel: exact; }
        actions = { mark; other; NoAction; }
        default_action = NoAction();
    }
    apply {
        hdr.o.setValid();
        sm.egress_spec = 1;
        bit<8> a = hdr.i.a;
        bit<8> b = hdr.i.b;
        int<8> c = hdr.i.c;
        int<8> d = hdr.i.d;
        hdr.o.add = a + b;
        hdr.o.sub = a - b;
        hdr.o.mul = a * b;
        hdr.o.satadd = a |+| b;
        hdr.o.satsub = a |-| b;
        hdr.o.sadd = c + d;
        hdr.o.ssat = c |+| d;
        hdr.o.ssubsat = c |-| d;
        hdr.o.slice = hdr.i.e[11:4];
        hdr.o.concat = a ++ b;
        hdr.o.shl = a << hdr.i.sh;
        hdr.o.shr = a >> hdr.i.sh;
        hdr.o.sshr = c >> 2;
        hdr.o.neg = -a;
        hdr.o.inv = ~a;
        hdr.o.widen = (bit<16>) (int<16>) c;
        hdr.o.cmp = (a < b) ? 8w1 : ((c < d) ? 8w2 : 8w3);
        hdr.o.tern = (bit<8>) ((bit<1>) (a == b)) + counter_local;
        bit<8> dbl;
        hdr.o.ret = twice_plus(a, dbl);
        hdr.o.fnout = dbl;
        hdr.o.div = 8w200 / 8w3;
        hdr.o.mod = 8w200 % 8w3;
        bit<8> s = a;
        s[3:0] = b[7:4];
        hdr.o.setslice = s;
        switch (choose.apply().action_run) {
            mark: { hdr.o.path = hdr.o.path + 1; }
            other: { }
            default: { hdr.o.path = 0x55; }
        }
        if (hdr.i.sel == 15) {
            exit;
        }
        hdr.o.path = hdr.o.path | 0x80;
    }
}
control Eg(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.i); pkt.emit(hdr.o); } }
V1Switch(P(), NoVerify(), Ig(), Eg(), NoCompute(), D()) main;
"""

OUT_FIELDS = [
    ("add", 8), ("sub", 8), ("mul", 8), ("satadd", 8), ("satsub", 8), ("sadd", 8), ("ssat", 8),
    ("ssubsat", 8), ("slice", 8), ("concat", 16), ("shl", 8), ("shr", 8), ("sshr", 8), ("neg", 8),
    ("inv", 8), ("widen", 16), ("cmp", 8), ("tern", 8), ("fnout", 8), ("ret", 8), ("div", 8),
    ("mod", 8), ("setslice", 8), ("path", 8),
]


def s8(v):
    v &= 0xFF
    return v - 256 if v & 0x80 else v


def expected(a, b, c, d, e, sh, sel, table):
    """What the program computes, written independently in Python."""
    sat = lambda v: max(-128, min(127, v))  # noqa: E731
    o = {
        "add": (a + b) & 0xFF, "sub": (a - b) & 0xFF, "mul": (a * b) & 0xFF,
        "satadd": min(a + b, 255), "satsub": max(a - b, 0),
        "sadd": (c + d) & 0xFF, "ssat": sat(c + d) & 0xFF, "ssubsat": sat(c - d) & 0xFF,
        "slice": (e >> 4) & 0xFF, "concat": (a << 8) | b,
        "shl": (a << sh) & 0xFF, "shr": a >> sh, "sshr": (c >> 2) & 0xFF,
        "neg": (-a) & 0xFF, "inv": (~a) & 0xFF, "widen": c & 0xFFFF,
        "cmp": 1 if a < b else (2 if c < d else 3),
        "tern": (1 if a == b else 0) + 7,
        "fnout": (a + a) & 0xFF, "ret": 1 if a > 100 else 2,
        "div": 200 // 3, "mod": 200 % 3, "setslice": (a & 0xF0) | (b >> 4),
    }
    if sel in table:
        path = (table[sel] + 1) & 0xFF
    elif sel == 9:
        path = 0xEE
    else:
        path = 0x55
    o["path"] = path if sel == 15 else path | 0x80
    return o


def decode(data: bytes) -> dict:
    v = int.from_bytes(data[7:], "big")
    total = sum(w for _, w in OUT_FIELDS)
    out, off = {}, 0
    for name, w in OUT_FIELDS:
        out[name] = (v >> (total - off - w)) & ((1 << w) - 1)
        off += w
    return out


@pytest.fixture(scope="module")
def sw():
    s = Switch(compile_source(PROG, "sem.p4"))
    s.table_add("choose", [Exact(1)], "mark", [0x10])
    s.table_add("choose", [Exact(15)], "mark", [0x20])
    s.table_add("choose", [Exact(9)], "other")
    return s


def test_expressions_match_python(sw):
    rng = random.Random(5)
    table = {1: 0x10, 15: 0x20}
    cases = [(0, 0, 0, 0, 0, 0, 0), (255, 1, 127, 1, 0xFFFF, 15, 1), (1, 255, -128, 1, 0x1234, 1, 15),
             (200, 100, -100, 100, 0xABCD, 7, 9)]
    cases += [(rng.randrange(256), rng.randrange(256), rng.randrange(-128, 128), rng.randrange(-128, 128),
               rng.randrange(1 << 16), rng.randrange(16), rng.randrange(16)) for _ in range(200)]
    for a, b, c, d, e, sh, sel in cases:
        data = bytes([a, b, c & 0xFF, d & 0xFF]) + e.to_bytes(2, "big") + bytes([(sh << 4) | sel])
        out = sw.process_packet(0, data)
        assert len(out) == 1, (a, b, c, d, e, sh, sel)
        got = decode(out[0].data)
        want = expected(a, b, c, d, e, sh, sel, table)
        assert got == want, (a, b, c, d, e, sh, sel)


SIGNED = r"""
#include <core.p4>
#include <v1model.p4>
header h_t { int<8> k; int<8> v; }
struct headers_t { h_t h; }
struct metadata_t { bit<8> x; }
parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }
control Ig(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action add(int<8> d) { hdr.h.v = hdr.h.v + d; sm.egress_spec = 1; }
    table t {
        key = { hdr.h.k: exact; }
        actions = { add; NoAction; }
        default_action = add(-2);
    }
    apply { sm.egress_spec = 2; t.apply(); }
}
control Eg(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), NoVerify(), Ig(), Eg(), NoCompute(), D()) main;
"""


def test_signed_keys_and_action_data_use_two_complement_on_the_control_plane():
    sw = Switch(compile_source(SIGNED, "signed.p4"))
    sw.table_add("t", [Exact(0xFF)], "add", [0xFD])  # k == -1: add -3
    assert sw.process_packet(0, bytes([0xFF, 10])) == [(1, bytes([0xFF, 7]))]
    assert sw.process_packet(0, bytes([0x01, 0x81])) == [(1, bytes([0x01, 0x7F]))]  # -127 - 2 wraps
    assert sw.table_get_default("t") == ("Ig.add", (0xFE,))


COPY = r"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct headers_t { h_t h; h_t g; }
struct metadata_t { bit<8> x; }
parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }
control Bump(inout h_t x) {
    apply { h_t t = x; t.a = t.a + 1; x = t; }
}
// a scalar parameter named like the aggregate parameters of the other controls
control Twice(inout bit<8> hdr) {
    action inc() { hdr = hdr + 1; }
    apply { inc(); inc(); }
}
control Ig(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    Bump() bump;
    Twice() twice;
    action copy_to(inout h_t dst, in h_t src) { dst = src; }
    apply {
        copy_to(hdr.g, hdr.h);
        bump.apply(hdr.h);
        h_t saved = hdr.h;
        hdr.h.b = 0x77;          // saved is a copy: unchanged
        hdr.g.b = saved.b;
        twice.apply(hdr.g.a);
        sm.egress_spec = 1;
    }
}
control Eg(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.g); } }
V1Switch(P(), NoVerify(), Ig(), Eg(), NoCompute(), D()) main;
"""


def test_aggregate_assignment_copies_and_writes_back_inout_params():
    sw = Switch(compile_source(COPY, "copy.p4"))
    out = sw.process_packet(0, bytes([0x10, 0x20]))
    # h: a bumped by the sub-control, b overwritten; g: a copy of the original h
    assert out == [(1, bytes([0x11, 0x77, 0x12, 0x20]))]  # g.a + 2 by the scalar-param control
