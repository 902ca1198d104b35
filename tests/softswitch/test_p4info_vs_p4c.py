"""What p4c 1.2.5.16 (``p4c-bm2-ss --p4runtime-files``) writes in P4Info and softswitch
must write too, one construct per test; found by tests/reference/test_ref_p4info.py,
which compares the two P4Infos of every program in the tests where p4c is installed.

These tests need no p4c: each states p4c's output for a small program. Those
softswitch does not match yet are xfail(strict=True) with the reason, so a fix
shows up as XPASS.
"""

from __future__ import annotations

import pytest

from softswitch.frontend import compile_source
from softswitch.p4info import p4info_from_program_info

SKELETON = r"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<8> v; }
struct headers { h_t h; h_t i; }
struct meta_t { bit<8> m; }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    %(parser)s
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control Ing(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    %(ingress)s
}
control Eg(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta_t m) { apply { } }
control Dep(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
"""
PARSER = "state start { pkt.extract(hdr.h); transition accept; }"


def p4info(ingress: str, parser: str = PARSER, prelude: str = ""):
    text = prelude + SKELETON % {"parser": parser, "ingress": ingress}
    return p4info_from_program_info(compile_source(text).info)


def test_value_set_of_bits_has_an_unnamed_match_field():
    """p4c: `value_set<bit<8>>(4) vs;` gives `match { id: 1 bitwidth: 8 match_type: EXACT }`."""
    info = p4info("apply { }", parser="""
        value_set<bit<8>>(4) vs;
        state start { pkt.extract(hdr.h);
                      transition select(hdr.h.k) { vs: accept; default: accept; } }""")
    (vs,) = info.value_sets
    assert [(f.id, f.name, f.bitwidth) for f in vs.match] == [(1, "", 8)]


def test_table_without_default_action_lists_noaction_default_only():
    info = p4info("""
        action set(bit<8> v) { hdr.h.v = v; }
        table t { key = { hdr.h.k: exact; } actions = { set; } }
        apply { t.apply(); }""")
    (table,) = info.tables
    actions = {a.preamble.name: a.preamble.id for a in info.actions}
    assert "NoAction" in actions
    refs = {r.id: r for r in table.action_refs}
    ref = refs[actions["NoAction"]]
    assert ref.scope == ref.DEFAULT_ONLY and list(ref.annotations) == ["@defaultonly"]


def test_action_called_directly_is_listed():
    info = p4info("""
        action bump(bit<8> by) { hdr.h.v = hdr.h.v + by; }
        apply { bump(1); }""")
    assert [a.preamble.name for a in info.actions] == ["Ing.bump"]


def test_validity_key_is_named_like_p4c():
    info = p4info("""
        action a() { }
        table t { key = { hdr.i.isValid(): exact; } actions = { a; } default_action = a(); }
        apply { t.apply(); }""")
    (table,) = info.tables
    assert [f.name for f in table.match_fields] == ["hdr.i.$valid$"]


@pytest.mark.xfail(strict=True, reason=(
    "softswitch writes no type_info.serializable_enums; p4c describes every serializable "
    "enum a table key or action parameter uses (name, underlying bitwidth, members)"))
def test_serializable_enum_is_described_in_type_info():
    info = p4info("""
        action a(Kind_t k) { hdr.h.v = (bit<8>)k; }
        table t { key = { hdr.h.k: exact; } actions = { a; } default_action = a(Kind_t.A); }
        apply { t.apply(); }""", prelude="enum bit<8> Kind_t { A = 1, B = 2 }\n")
    enum = info.type_info.serializable_enums["Kind_t"]
    assert enum.underlying_type.bitwidth == 8
    assert [(m.name, m.value) for m in enum.members] == [("A", b"\x01"), ("B", b"\x02")]


@pytest.mark.xfail(strict=True, reason=(
    "softswitch accepts annotations before an entry's keyset (`@priority(5) (_, 11): a();`, "
    "used by tests/softswitch/programs/frontend_constructs.p4); P4_16's grammar (spec "
    "appendix, `entry`) and p4c take them after the action only (`(_, 11): a() @priority(5);`) "
    "and p4c refuses the program: syntax error, unexpected @"))
def test_entry_annotation_before_keyset_is_refused():
    from softswitch import P4Error

    with pytest.raises(P4Error):
        p4info("""
            action a() { }
            table t { key = { hdr.h.k: ternary; } actions = { a; }
                      const entries = { @priority(5) 0x01 &&& 0xFF : a(); } }
            apply { t.apply(); }""")
