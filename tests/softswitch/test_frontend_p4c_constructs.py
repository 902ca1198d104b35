"""Valid P4_16 that p4c accepts and softswitch once rejected: each construct compiled and,
where it has a run-time effect, run through the engine. References are the P4_16
specification (v1.2.5; sections cited per test) and p4c's documented behaviour; where
p4c is installed, its verdict on the same source is checked too.
"""

import subprocess

import pytest
from p4c_ref import needs_p4c, run_p4c

from softswitch import Exact, Switch
from softswitch.frontend import P4Error, compile_source
from softswitch.frontend import ast as A
from softswitch.p4info import p4info_from_program_info

HEAD = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct m_t { bit<8> x; }
"""
BLOCKS = """
control V(inout hs hdr, inout m_t meta) { apply { } }
control E(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in hs hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), V(), C(), E(), V(), D()) main;
"""
SIMPLE_PARSER = """
struct hs { h_t h; }
parser P(packet_in pkt, out hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  state start { pkt.extract(hdr.h); transition accept; }
}
"""


def with_ingress(body: str, locals_: str = "", head: str = HEAD, parser: str = SIMPLE_PARSER):
    return (head + parser + "control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {\n"
            + locals_ + "\n  apply {\n" + body + "\n  }\n}\n" + BLOCKS)


def run(src: str, data: bytes, setup=None) -> list:
    sw = Switch(compile_source(src, filename="c.p4"))
    if setup is not None:
        setup(sw)
    return sw.process_packet(0, data)


# ---- parsers


IMPLICIT_REJECT = HEAD + """
struct hs { h_t h; }
parser P(packet_in pkt, out hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  state start { pkt.extract(hdr.h); transition select(hdr.h.a) { 1: accept; default: other; } }
  state other { }
}
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  apply { sm.egress_spec = 1; hdr.h.d = (bit<8>)(bit<1>)(sm.parser_error == error.NoError); }
}
""" + BLOCKS


def test_state_without_transition_goes_to_reject():
    # spec 13.5: "a state without a transition statement ... transitions to reject";
    # p4c warns "implicit transition to `reject'"
    prog = compile_source(IMPLICIT_REJECT, filename="c.p4")
    assert [w.message for w in prog.warnings] == ["other: implicit transition to 'reject'"]
    other = prog.main.parser.states[1]
    assert isinstance(other.transition, A.PathExpr) and other.transition.name == "reject"
    explicit = IMPLICIT_REJECT.replace("state other { }", "state other { transition reject; }")
    for data in (bytes([1, 2, 3, 4]), bytes([2, 2, 3, 4])):
        assert run(IMPLICIT_REJECT, data) == run(explicit, data)


def test_select_without_keys():
    # spec 13.6: the select expression list may be empty; only `default` matches
    src = IMPLICIT_REJECT.replace("state other { }",
                                  "state other { transition select() { default: accept; } }")
    assert run(src, bytes([2, 0, 0, 0])) == [(1, bytes([2, 0, 0, 1]))]


def test_dont_care_extract_skips_a_header():
    # spec 8.20: `_` as an out argument discards the value; `extract<H>(_)` reads and drops H
    parser = """
struct hs { h_t h; }
parser P(packet_in pkt, out hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  state start { pkt.extract<h_t>(_); pkt.extract(hdr.h); transition accept; }
}
"""
    src = with_ingress("    sm.egress_spec = 1;", parser=parser)
    assert run(src, bytes(range(1, 9))) == [(1, bytes([5, 6, 7, 8]))]


# ---- names, types, constants


def test_state_and_type_as_names():
    # p4c's grammar takes `state` and `type` as names where they start no declaration
    src = HEAD.replace("bit<8> c; bit<8> d;", "bit<8> state; bit<8> type;") + SIMPLE_PARSER + """
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  action set(bit<8> type) { hdr.h.state = type; }
  apply { bit<8> state = hdr.h.a; bit<8> type = state + 1; set(type); sm.egress_spec = 1; }
}
""" + BLOCKS
    assert run(src, bytes([7, 0, 0, 0])) == [(1, bytes([7, 0, 8, 0]))]


def test_type_over_a_type():
    # spec 7.6.2: `type` introduces a new type over another `type` as well
    head = HEAD + "type bit<8> Byte_t;\ntype Byte_t Octet_t;\n"
    src = with_ingress("    Octet_t o = (Octet_t)(Byte_t)hdr.h.a;\n"
                       "    hdr.h.b = (bit<8>)(Byte_t)o;\n    sm.egress_spec = 1;", head=head)
    assert run(src, bytes([9, 0, 0, 0])) == [(1, bytes([9, 9, 0, 0]))]


def test_plus_slice():
    # p4c's `e[lo +: w]`: the w bits from lo up, e[lo + w - 1 : lo]
    src = with_ingress("    hdr.h.b = (bit<8>)hdr.h.a[4 +: 4];\n    hdr.h.c[2 +: 4] = 4w0xF;\n"
                       "    sm.egress_spec = 1;")
    assert run(src, bytes([0xA5, 0, 0, 0])) == [(1, bytes([0xA5, 0x0A, 0x3C, 0]))]


CONDITIONAL_CHAIN = with_ingress(
    "    bool b = hdr.h.a == 1 ? true : false ? false : true;\n"
    "    hdr.h.b = b ? 8w1 : 8w0;\n    sm.egress_spec = 1;")


def test_conditional_chain_nests_to_the_left_as_in_p4c():
    # p4c's grammar gives `?` a lower precedence than `:`, so `a ? b : c ? d : e` is
    # `(a ? b : c) ? d : e` (p4test --pp prints it so); C would read a ? b : (c ? d : e)
    assert run(CONDITIONAL_CHAIN, bytes([1, 0, 0, 0])) == [(1, bytes([1, 0, 0, 0]))]
    assert run(CONDITIONAL_CHAIN, bytes([2, 0, 0, 0])) == [(1, bytes([2, 1, 0, 0]))]
    # so a chain of bit<8> values is a type error, as in p4c ("different types")
    src = with_ingress("    hdr.h.b = hdr.h.a == 1 ? 8w1 : hdr.h.a == 2 ? 8w2 : 8w3;")
    with pytest.raises(P4Error, match="branches differ: bit<8> and bool"):
        compile_source(src, filename="c.p4")


def test_struct_valued_constant():
    head = HEAD + "struct pair_t { bit<8> lo; bit<8> hi; }\nconst pair_t PAIR = {8w3, 8w4};\n"
    src = with_ingress("    pair_t p = PAIR;\n    hdr.h.c = p.lo;\n    hdr.h.d = PAIR.hi;\n"
                       "    sm.egress_spec = 1;", head=head)
    assert run(src, bytes(4)) == [(1, bytes([0, 0, 3, 4]))]


def test_struct_fields_in_headers_on_the_wire():
    # spec 7.2.2: a header field may be a struct of fixed-width fields; on the wire the
    # struct's fields take its place, in order
    head = HEAD.replace("header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }", """
struct nib_t { bit<4> hi; bit<4> lo; }
struct inner_t { nib_t n; bit<8> b; }
header h_t { bit<8> a; inner_t s; bit<16> c; }""")
    src = with_ingress("    hdr.h.s.n.lo = hdr.h.s.n.hi;\n    hdr.h.c = hdr.h.c + (bit<16>)hdr.h.s.b;"
                       "\n    sm.egress_spec = 1;", head=head)
    assert run(src, bytes([0x11, 0xA5, 0x02, 0x00, 0x10])) == [
        (1, bytes([0x11, 0xAA, 0x02, 0x00, 0x12]))]


GENERIC = """
#include <core.p4>
#include <v1model.p4>
header pair_t<T> { T first; T second; }
struct hs_t<T> { pair_t<T> p; }
struct m_t { bit<8> x; }
parser P(packet_in pkt, out hs_t<bit<8>> hdr, inout m_t meta, inout standard_metadata_t sm) {
  state start { pkt.extract(hdr.p); transition accept; }
}
control C(inout hs_t<bit<8>> hdr, inout m_t meta, inout standard_metadata_t sm) {
  apply { pair_t<bit<8>> q = hdr.p; hdr.p.first = q.second; hdr.p.second = q.first;
          sm.egress_spec = 1; }
}
control V(inout hs_t<bit<8>> hdr, inout m_t meta) { apply { } }
control E(inout hs_t<bit<8>> hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in hs_t<bit<8>> hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), V(), C(), E(), V(), D()) main;
"""


def test_generic_structs_and_headers():
    # spec 7.2.9: a generic struct/header is specialised where it is used: pair_t<bit<8>>
    # is a header of two bytes
    prog = compile_source(GENERIC, filename="c.p4")
    hdr_t = prog.main.parser.params[1].type
    assert str(hdr_t) == "hs_t<bit<8>>" and hdr_t.fields[0].type.bit_width() == 16
    assert run(GENERIC, bytes([1, 2, 3])) == [(1, bytes([2, 1, 3]))]


def test_gnu_line_markers_name_the_original_lines(tmp_path):
    # a program run through cpp first: p4c reads `# N "file"` markers for its positions
    src = with_ingress("    sm.egress_spec = 1;")
    cpp = '# 1 "orig.p4"\n# 1 "<built-in>" 1\n# 1 "orig.p4" 2\n' + src.replace(
        "#include <core.p4>\n", "").replace("#include <v1model.p4>\n", "") \
        .replace("control V(", '# 40 "orig.p4"\ncontrol V(')
    cpp = "#include <v1model.p4>\n" + cpp
    assert compile_source(cpp, filename="pre.p4").main is not None
    broken = cpp.replace("control V(inout hs hdr, inout m_t meta) { apply { } }",
                         "control V(inout hs hdr, inout m_t meta) { apply { hdr.h.z = 1; } }")
    with pytest.raises(P4Error) as ei:
        compile_source(broken, filename="pre.p4")
    d = ei.value.diagnostics[0]
    assert (d.file, d.line, d.message) == ("orig.p4", 40, "h_t has no field 'z'")


# ---- tables


SER_ENUM_MASK = HEAD + """
enum bit<16> Kind { A = 0x0100, B = 0x0200 }
header k_t { Kind k; }
struct hs { k_t k; h_t h; }
parser P(packet_in pkt, out hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  state start { pkt.extract(hdr.k); pkt.extract(hdr.h); transition accept; }
}
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  action fwd(bit<9> p) { sm.egress_spec = p; }
  table t {
    key = { hdr.k.k: ternary; }
    actions = { fwd; }
    default_action = fwd(3);
    const entries = { Kind.B &&& 0xff00: fwd(2); }
  }
  apply { t.apply(); }
}
""" + BLOCKS


def test_mask_on_a_serializable_enum_key():
    # spec 14.2.1.4: a keyset value `v &&& m`; for a serializable enum key the mask is a
    # value of its underlying type
    assert run(SER_ENUM_MASK, bytes([0x02, 0x33, 0, 0, 0, 0]))[0].port == 2
    assert run(SER_ENUM_MASK, bytes([0x01, 0x00, 0, 0, 0, 0]))[0].port == 3


PRIORITIES = HEAD + SIMPLE_PARSER + """
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  action fwd(bit<9> p) { sm.egress_spec = p; }
  table t {
    key = { hdr.h.a: ternary; }
    actions = { fwd; }
    default_action = fwd(9);
    largest_priority_wins = false;
    priority_delta = 10;
    entries = {
      priority = 30: 0x10 &&& 0xf0: fwd(1);
                     0x11 &&& 0xff: fwd(2);
      const priority = 20: 0x00 &&& 0x00: fwd(3);
    }
  }
  apply { t.apply(); }
}
""" + BLOCKS


def test_entry_priorities_and_non_const_entries():
    # spec 14.2.1.4: with largest_priority_wins = false the smallest priority wins; an entry
    # without one gets the previous + priority_delta (0x11 -> 40); entries may be const
    prog = compile_source(PRIORITIES, filename="c.p4")
    table = next(d for d in prog.main.ingress.locals if isinstance(d, A.TableDecl))
    assert not table.entries_const and [e.const for e in table.entries] == [False, False, True]
    # the catch-all has priority 20 (wins), then 30, then 40
    assert run(PRIORITIES, bytes([0x11, 0, 0, 0]))[0].port == 3
    no_catch_all = PRIORITIES.replace("const priority = 20: 0x00 &&& 0x00: fwd(3);", "")
    assert run(no_catch_all, bytes([0x11, 0, 0, 0]))[0].port == 1
    assert run(no_catch_all, bytes([0x21, 0, 0, 0]))[0].port == 9
    # initial entries that are not const can be deleted by the control plane
    sw = Switch(compile_source(no_catch_all, filename="c.p4"))
    assert not sw.tables["C.t"].is_const


def test_support_timeout_and_unknown_properties():
    # support_timeout is a v1model table property (P4Info idle_timeout_behavior);
    # p4c-bm2-ss ignores other unknown properties with a warning
    src = with_ingress("    t.apply();", "  action a() { }\n  table t { key = { hdr.h.a: exact; }"
                       " actions = { a; } support_timeout = true; colour = 3; }\n")
    prog = compile_source(src, filename="c.p4")
    assert [w.message for w in prog.warnings] == ["Unknown table property: colour"]
    (t,) = p4info_from_program_info(prog.info).tables
    assert t.idle_timeout_behavior == t.IdleTimeoutBehavior.NOTIFY_CONTROL


# ---- annotations


def test_structured_annotations_are_constants_in_p4info():
    # spec 18.1.2: `@name[expressions]` / `@name[key=value, ...]`, compile-time constants
    src = with_ingress("    t.apply();", """
  action a() { }
  @Mixed[1, "two", true, 1 == 2, 5 + 6]
  @KV[label = "x", n = 2 * 3]
  table t { key = { hdr.h.a: exact; } actions = { @myid[7] a; } }
""")
    (t,) = p4info_from_program_info(compile_source(src, filename="c.p4").info).tables
    mixed, kv = t.preamble.structured_annotations
    assert mixed.name == "Mixed" and [str(e).strip() for e in mixed.expression_list.expressions] \
        == ["int64_value: 1", 'string_value: "two"', "bool_value: true", "bool_value: false",
            "int64_value: 11"]
    assert [(p.key, p.value.WhichOneof("value")) for p in kv.kv_pair_list.kv_pairs] == [
        ("label", "string_value"), ("n", "int64_value")]
    assert kv.kv_pair_list.kv_pairs[1].value.int64_value == 6
    assert t.action_refs[0].structured_annotations[0].expression_list.expressions[0] \
        .int64_value == 7


def test_name_annotation_with_a_space():
    src = with_ingress("    t.apply();", '  action a() { }\n  @name ("tee") table t { key = '
                       '{ hdr.h.a: exact; } actions = { a; } }\n')
    assert [t.name for t in compile_source(src, filename="c.p4").info.tables] == ["C.tee"]


# ---- blocks


def test_direct_type_invocation():
    # spec 15.1: `T.apply()` on a control type instantiates T there; p4c names the
    # instance's objects after the type
    src = with_ingress("    if (true) Sub.apply(hdr.h);\n    sm.egress_spec = 1;", head=HEAD + """
control Sub(inout h_t h) {
  action set(bit<8> v) { h.b = v; }
  table t { key = { h.a: exact; } actions = { set; } }
  apply { t.apply(); }
}
""")
    prog = compile_source(src, filename="c.p4")
    assert [t.name for t in prog.info.tables] == ["C.Sub.t"]
    out = run(src, bytes([5, 0, 0, 0]), setup=lambda sw: sw.table_add(
        "C.Sub.t", [Exact(5)], "C.Sub.set", [0x42]))
    assert out == [(1, bytes([5, 0x42, 0, 0]))]


# ---- p4c's verdicts on the same programs


ACCEPTED = {
    "generic": GENERIC,
    "implicit_reject": IMPLICIT_REJECT,
    "ser_enum_mask": SER_ENUM_MASK,
    "priorities": PRIORITIES,
    "conditional_chain": CONDITIONAL_CHAIN,
}


@needs_p4c
@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_p4c_accepts_them_too(name, tmp_path):
    ok, err, _ = run_p4c(ACCEPTED[name], tmp_path)
    assert ok, err


def test_cpp_line_markers_from_a_real_preprocessor(tmp_path):
    cpp = subprocess.run(["cpp", "-P0", "--version"], capture_output=True)
    if cpp.returncode != 0:
        pytest.skip("no C preprocessor")
    src = tmp_path / "p.p4"
    src.write_text(with_ingress("    sm.egress_spec = 1;").replace(
        "#include <core.p4>\n#include <v1model.p4>\n", '#include "types.p4"\n'))
    (tmp_path / "types.p4").write_text("// only for the markers\n")
    out = subprocess.run(["cpp", str(src)], capture_output=True, text=True, check=True).stdout
    assert '# 1 "' in out
    prog = compile_source("#include <v1model.p4>\n" + out, filename="pre.p4")
    assert prog.main is not None
