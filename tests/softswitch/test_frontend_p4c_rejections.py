"""Invalid programs softswitch used to accept (or crash on): each is rejected with p4c's
message, at its location. The rules are p4c's (pass named per case) and, where they
concern P4Runtime, the P4Runtime specification's; where p4c-bm2-ss is installed it must
reject the same source.
"""

import pytest
from p4c_ref import needs_p4c, run_p4c

from softswitch.frontend import P4Error, compile_source

HEAD = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<16> c; }
struct hs { h_t h; }
struct pair_t { bit<8> x; bit<8> y; }
struct m_t { pair_t p; bit<8> x; }
parser P(packet_in pkt, out hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  state start { pkt.extract(hdr.h); transition accept; }
}
"""
TAIL = """
control V(inout hs hdr, inout m_t meta) { apply { } }
control E(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in hs hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), V(), C(), E(), V(), D()) main;
"""


def ingress(locals_: str, body: str) -> str:
    return (HEAD + "control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {\n"
            + locals_ + "\n  apply {\n" + body + "\n  }\n}\n" + TAIL)


TABLE = "  action a(bit<8> v) { hdr.h.b = v; }\n  action n() { }\n"

CASES = {
    # frontends/p4/duplicateActionControlPlaneNameCheck.cpp
    "conflicting_action_names": (
        ingress('  @name(".foo") action a1() { }\n  @name(".foo") action a2() { }\n'
                "  table t { key = { hdr.h.a: exact; } actions = { a1; a2; } }\n", "    t.apply();"),
        ".foo: conflicting control plane name: .foo"),
    # control-plane/p4RuntimeSerializer.cpp: one P4Info name per object
    "duplicate_table_names": (
        HEAD + """
control Sub(inout h_t h) {
  action n() { }
  @name(".t0") table t0 { key = { h.a: exact; } actions = { n; } }
  apply { t0.apply(); }
}
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  Sub() s1; Sub() s2;
  apply { s1.apply(hdr.h); s2.apply(hdr.h); }
}
""" + TAIL, "Name 't0' is used for multiple table objects in the P4Info message"),
    # p4RuntimeSerializer.cpp addLpm: a prefix mask, ones then zeros
    "lpm_mask_not_a_prefix": (
        ingress(TABLE + "  table t { key = { hdr.h.a: lpm; } actions = { a; }\n"
                "    const entries = { 0x11 &&& 0xE1: a(1); } }\n", "    t.apply();"),
        "17 &&& 225 invalid mask for LPM key"),
    # p4RuntimeSerializer.cpp addOptional: a value or _
    "mask_on_optional_key": (
        ingress(TABLE + "  table t { key = { hdr.h.a: optional; } actions = { a; }\n"
                "    const entries = { 0xaa &&& 0xf0: a(1); } }\n", "    t.apply();"),
        "170 &&& 240 invalid key expression"),
    "range_the_wrong_way": (
        ingress(TABLE + "  table t { key = { hdr.h.a: range; } actions = { a; }\n"
                "    const entries = { 9 .. 3: a(1); } }\n", "    t.apply();"),
        "9 .. 3 Invalid range for table entry"),
    # frontends/p4/typeChecking/typeCheckExpr.cpp: @defaultonly / @tableonly
    "defaultonly_in_an_entry": (
        ingress(TABLE + "  table t { key = { hdr.h.a: exact; } actions = { a; @defaultonly n; }\n"
                "    const entries = { 1: n(); } }\n", "    t.apply();"),
        "Entry: Action marked with defaultonly used in table"),
    "tableonly_as_default": (
        ingress(TABLE + "  table t { key = { hdr.h.a: exact; } actions = { @tableonly a; n; }\n"
                "    default_action = a(1); }\n", "    t.apply();"),
        "default_action: Action marked with tableonly used as default action"),
    # the entries list refers to the key
    "entries_before_key": (
        ingress(TABLE + "  table t { const entries = { 1: a(1); }\n"
                "    key = { hdr.h.a: exact; } actions = { a; } }\n", "    t.apply();"),
        "Entries list must be after table key"),
    # frontends/p4/tableKeyNames.cpp
    "complex_key_without_name": (
        ingress(TABLE + "  table t { key = { hdr.h.a + hdr.h.b: exact; } actions = { a; } }\n",
                "    t.apply();"),
        "hdr.h.a + hdr.h.b: Complex key expression requires a @name annotation"),
    # frontends/p4/entryPriorities.cpp
    "priority_in_const_entries": (
        ingress(TABLE + "  table t { key = { hdr.h.a: ternary; } actions = { a; }\n"
                "    const entries = { priority = 3: 1 &&& 1: a(1); } }\n", "    t.apply();"),
        "Table with 'const' entries cannot have priorities"),
    # control-plane: P4Runtime cannot name an anonymous instance
    "anonymous_implementation": (
        ingress(TABLE + "  table t { key = { hdr.h.a: exact; } actions = { a; }\n"
                "    implementation = action_profile(32w4); }\n", "    t.apply();"),
        "Table 'C.t' has an anonymous table property 'implementation' with no name annotation, "
        "which is not supported by P4Runtime"),
    # frontends/p4/simplifyParsers.cpp
    "parser_never_ends": (
        HEAD.replace("transition accept; }", "transition loop; }\n"
                     "  state loop { transition start; }") + """
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
""" + TAIL, "parser P: Parser never reaches accept or reject state"),
    # backends/bmv2: action arguments are evaluated inside the action
    "table_applied_in_action_argument": (
        ingress(TABLE + "  table t { key = { hdr.h.a: exact; } actions = { a; } }\n",
                "    a(t.apply().hit ? 8w1 : 8w2);"),
        "t.apply(): table invocation in action argument"),
    # midend/flattenInterfaceStructs.cpp
    "struct_written_by_an_extern": (
        ingress("  register<pair_t>(4) r;\n", "    r.read(meta.p, 32w0);"),
        "meta.p: writing to a structure is not supported on this target"),
    # backends/bmv2: an action is a list of primitives
    "switch_in_an_action": (
        ingress("  action s() { switch (hdr.h.a) { 1: { hdr.h.b = 1; } } }\n", "    s();"),
        "SwitchStatement: switch statements not supported in actions on this target"),
    # spec 8.5: the shift amount is bit<S> or a constant
    "shift_by_a_type": (
        HEAD.replace("header h_t", "type bit<8> amount_t;\nheader h_t").replace(
            "bit<16> c; }", "bit<16> c; amount_t n; }") + """
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  apply { hdr.h.a = hdr.h.a << hdr.h.n; }
}
""" + TAIL,
        "hdr.h.n: The right operand of shift must be either an expression of type bit<S> or "
        "a compile-time known value that is a non-negative integer, but is amount_t"),
    # frontends/parsers: @p4runtime_translation(uri, bit<W> | string | integer)
    "bad_p4runtime_translation": (
        HEAD.replace("header h_t", '@p4runtime_translation("x.org/t", bool)\ntype bit<8> t_t;\n'
                     "header h_t").replace("bit<16> c; }", "bit<16> c; t_t t; }") + """
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
""" + TAIL, "@p4runtime_translation: syntax error, unexpected bool, expecting bit<W>, string "
             "or an integer"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rejected_with_p4cs_message(case):
    src, message = CASES[case]
    with pytest.raises(P4Error) as ei:
        compile_source(src, filename="r.p4")
    assert message in [d.message for d in ei.value.diagnostics if d.severity == "error"]


@needs_p4c
@pytest.mark.parametrize("case", sorted(CASES))
def test_p4c_rejects_them_too(case, tmp_path):
    ok, err, _ = run_p4c(CASES[case][0], tmp_path)
    assert not ok, "p4c accepted it"


def test_the_same_programs_without_the_fault_compile():
    """Each case differs from a valid program only by its fault (the test can fail)."""
    valid = ingress(TABLE + "  table t { key = { hdr.h.a: lpm; } actions = { a; }\n"
                    "    const entries = { 0x10 &&& 0xF0: a(1); } }\n", "    t.apply();")
    assert compile_source(valid, filename="r.p4").main is not None
