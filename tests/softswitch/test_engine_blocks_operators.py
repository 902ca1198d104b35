"""Constructor parameters (P4_16 spec 14 "Parameterization"), direct invocation of a
control or parser type (spec "Direct type invocation"), `/` and `%` on run-time values
(8.5) and `==` on headers, unions, structs, stacks and tuples (8.12, 8.17-8.20)."""

import pytest
from engine_harness import results, switch

from softswitch import Exact, P4Error, Switch, compile_source
from softswitch.engine import CompileError


def test_constructor_parameters_values_controls_and_externs():
    top = """control Scale(inout bit<8> x)(bit<8> factor, bool twice) {
        apply { x = x * factor; if (twice) { x = x * factor; } }
    }
    control Proto(inout bit<8> x);
    control Add1(inout bit<8> x) { apply { x = x + 1; } }
    control Wrap(inout bit<8> x)(Proto inner, counter hits) {
        apply { inner.apply(x); inner.apply(x); hits.count(0); }
    }"""
    decls = """Scale(3, false) by3;
    Scale(2, true) by4;
    Add1() one;
    counter(1, CounterType.packets) hits;
    Wrap(one, hits) wrap;"""
    body = """hdr.o.r0 = hdr.i.a; by3.apply(hdr.o.r0);
        hdr.o.r1 = hdr.i.a; by4.apply(hdr.o.r1);
        hdr.o.r2 = hdr.i.a; wrap.apply(hdr.o.r2);"""
    sw = switch(body, decls=decls, top=top)
    assert results(sw, a=5)[:3] == [15, 20, 7]
    assert sw.counter_read("Ig.hits", 0)[0] == 1  # the counter passed in is the one counted


def test_constructor_arguments_of_the_top_level_blocks():
    src = r"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> v; }
struct H { h_t h; }
struct M { }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm)(bit<8> add) {
    state start { pkt.extract(hdr.h); hdr.h.v = hdr.h.v + add; transition accept; }
}
control C(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm)(bool drop_all) {
    apply { sm.egress_spec = 1; if (drop_all) { mark_to_drop(sm); } }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(10), C(), I(%s), E(), C(), D()) main;
"""
    sw = Switch(compile_source(src % "false", "top_ctor.p4"))
    assert sw.process_packet(0, bytes([1])) == [(1, bytes([11]))]
    assert Switch(compile_source(src % "true", "top_ctor.p4")).process_packet(0, bytes([1])) == []


def test_missing_or_run_time_constructor_argument_is_an_error():
    top = "control Scale(inout bit<8> x)(bit<8> factor) { apply { x = x * factor; } }"
    with pytest.raises(P4Error, match="missing argument 'factor'"):
        switch("", decls="Scale() s;", top=top)
    with pytest.raises(P4Error, match="must be a compile-time constant"):
        switch("", decls="bit<8> n = 2; Scale(n) s;", top=top)


def test_direct_invocation_is_a_local_instance_named_after_the_type():
    # spec: `Callee.apply()` is `@name("Callee") Callee() Callee_inst; Callee_inst.apply()`;
    # p4c names its table Ig.Lookup.t
    top = """control Lookup(inout headers_t h) {
        action set(bit<8> v) { h.o.r0 = v; }
        table t { key = { h.i.a: exact; } actions = { set; NoAction; } default_action = NoAction(); }
        apply { t.apply(); }
    }"""
    sw = switch("Lookup.apply(hdr);", top=top)
    assert sorted(sw.tables) == ["Ig.Lookup.t"]
    sw.table_add("Ig.Lookup.t", [Exact(4)], "Ig.Lookup.set", [0x44])
    assert results(sw, a=4)[0] == 0x44
    assert results(sw, a=5)[0] == 0


def test_division_and_modulo_of_run_time_values():
    # spec 8.5: truncating division and modulo of unsigned values
    body = "hdr.o.r0 = hdr.i.a / hdr.i.b; hdr.o.r1 = hdr.i.a % hdr.i.b; " \
           "hdr.o.r2 = (bit<8>)((bit<16>)hdr.i.a * 100 / (bit<16>)hdr.i.c);"
    sw = switch(body)
    assert results(sw, a=200, b=7, c=3)[:3] == [28, 4, (200 * 100 // 3) & 0xFF]
    # the spec leaves a zero divisor undefined (p4c-bm2-ss only divides constants):
    # softswitch gives 0 rather than stopping the packet
    assert results(sw, a=200, b=0, c=1)[:2] == [0, 0]


def test_division_of_signed_values_is_refused():
    # p4c: "Cannot operate on signed values"
    with pytest.raises(P4Error, match="cannot operate on signed values"):
        switch("int<8> x = (int<8>)hdr.i.a; hdr.o.r0 = (bit<8>)(x / 2);")


EQ_TYPES = """header e_t { bit<8> a; bit<8> b; }
header f_t { bit<16> c; }
header_union u_t { e_t e; f_t f; }
struct s_t { bit<8> x; e_t h; }"""
EQ_FIELDS = "e_t e1; e_t e2; e_t[2] s1; e_t[2] s2; u_t u1; u_t u2;"


def test_equality_of_headers_stacks_unions_and_structs():
    # spec 8.17: headers equal when both invalid, or both valid with equal fields;
    # 8.18: stacks element by element, nextIndex ignored; 8.19: unions; 8.12: structs
    body = """
        hdr.o.r0 = hdr.e1 == hdr.e2 ? 8w1 : 8w0;          // both invalid
        hdr.e1.setValid(); hdr.e1.a = hdr.i.a;
        hdr.o.r1 = hdr.e1 == hdr.e2 ? 8w1 : 8w0;          // one valid
        hdr.e2 = hdr.e1; hdr.e2.b = hdr.i.b;
        hdr.o.r2 = hdr.e1 == hdr.e2 ? 8w1 : 8w0;          // b differs unless b == 0
        hdr.o.r3 = hdr.e1 != {hdr.i.a, 0} ? 8w1 : 8w0;     // initializer takes e_t
        hdr.s1[1] = hdr.e1; hdr.s2[1] = hdr.e1;
        hdr.s2.push_front(0);                              // no change to elements
        hdr.o.r4 = hdr.s1 == hdr.s2 ? 8w1 : 8w0;
        hdr.u1.f.setValid(); hdr.u1.f.c = 7; hdr.u2.f.setValid(); hdr.u2.f.c = 7;
        hdr.o.r5 = hdr.u1 == hdr.u2 ? 8w1 : 8w0;
        s_t p = { hdr.i.c, hdr.e1 }; s_t q = { 1, hdr.e1 };
        hdr.o.r6 = p == q ? 8w1 : 8w0;"""
    sw = switch(body, types=EQ_TYPES, fields=EQ_FIELDS)
    assert results(sw, a=3, b=0, c=1)[:7] == [1, 0, 1, 0, 1, 1, 1]
    assert results(sw, a=3, b=5, c=2)[:7] == [1, 0, 0, 0, 1, 1, 0]


def test_a_const_entry_the_table_refuses_is_a_located_compile_error():
    # an lpm entry whose mask is no prefix (p4c refuses it, p4_16_errors/table-entries-lpm-2):
    # a CompileError at the entry, never another exception out of the switch's constructor
    decls = """action set(bit<8> v) { hdr.o.r0 = v; }
    table t { key = { hdr.i.a: lpm; } actions = { set; }
              const entries = { 0x11 &&& 0xe1 : set(1); } }"""
    with pytest.raises(CompileError, match=r"harness\.p4:\d+:\d+: error: entry refused: .*prefix"):
        switch("t.apply();", decls=decls)


def test_extern_passed_as_an_apply_argument():
    # a directionless apply parameter of extern type is passed by reference (spec 6.8): the
    # sub-control counts in the caller's register
    top = """control Bump(inout bit<8> v, register<bit<8>> r) {
        apply { bit<8> x; r.read(x, 0); x = x + v; r.write(0, x); v = x; }
    }"""
    decls = "register<bit<8>>(1) total; Bump() bump;"
    sw = switch("hdr.o.r0 = hdr.i.a; bump.apply(hdr.o.r0, total);", decls=decls, top=top)
    assert results(sw, a=5)[0] == 5
    assert results(sw, a=7)[0] == 12
    assert sw.register_read("Ig.total", 0) == 12


def test_error_and_enum_values_as_keys_and_stack_indexes():
    # a table keyed on an error (spec 14.2.1.1) with a const entry, and a stack indexed by a
    # serializable enum (its value)
    decls = """action set(bit<8> v) { hdr.o.r0 = v; }
    table t { key = { sm.parser_error: exact; } actions = { set; NoAction; }
              const entries = { error.NoError : set(1); error.PacketTooShort : set(2); } }"""
    top = "enum bit<8> Slot { A = 0, B = 1 }"
    body = """t.apply();
        hdr.s[0].setValid(); hdr.s[0].x = 10; hdr.s[1].setValid(); hdr.s[1].x = 11;
        Slot k = (Slot) hdr.i.b;
        hdr.o.r1 = hdr.s[k].x;"""
    sw = switch(body, decls=decls, top=top, types="header e_t { bit<8> x; }", fields="e_t[2] s;")
    assert results(sw, b=1)[:2] == [1, 11]


def test_enum_and_error_values_in_a_hash_field_list():
    # BMv2 packs an enum or error value as its member number in 32 bits: identity of Blue
    # is 2; crc16 over (NoError, Blue) and (NoError, Green) as simple_switch computes them
    body = """Color c = hdr.i.a == 2 ? Color.Blue : Color.Green;
        bit<16> hv;
        hash(hv, HashAlgorithm.identity, 16w0, {c}, 32w0x10000);
        hdr.o.r2 = (bit<8>) hv;
        hash(hv, HashAlgorithm.crc16, 16w0, {sm.parser_error, c}, 32w0x10000);
        hdr.o.r3 = hv[15:8]; hdr.o.r4 = hv[7:0];"""
    sw = switch(body, top="enum Color { Red, Green, Blue }")
    assert results(sw, a=2)[2:5] == [2, 0xC1, 0x81]
    assert results(sw, a=1)[2:5] == [1, 0xC0, 0xC1]
