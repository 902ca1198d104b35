"""P4Info as p4c writes it: which entities exist and how they are named.

Each program exercises rules of p4c's front and mid end that decide what P4Info
lists (P4Runtime spec 1.4 section 6; p4c's CreateBuiltins, RemoveUnusedDeclarations,
InstantiateDirectCalls, RemoveActionParameters, tableKeyNames, P4RuntimeSerializer).
The expected facts are asserted directly; where p4c-bm2-ss is installed, softswitch's
P4Info must also equal the one p4c writes for the same source, entity by entity.
"""

import pytest
from p4c_ref import by_name, canonical_p4info, needs_p4c, p4c_p4info

from softswitch.frontend import compile_source
from softswitch.p4info import p4info_from_program_info

HEAD = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<16> c; }
struct hs { h_t h; h_t g; }
struct m_t { bit<8> x; }
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

PROGRAMS = {
    # no default_action: NoAction, listed @defaultonly, is the initial default
    "implicit_default": HEAD + """
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  action set(bit<8> v) { hdr.h.b = v; }
  table t { key = { hdr.h.a: exact; } actions = { set; } }
  apply { t.apply(); }
}
""" + TAIL,
    # const default with arguments: initial_default_action carries them, full width
    "default_with_args": HEAD + """
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  action set(bit<8> v, bit<16> w) { hdr.h.b = v; hdr.h.c = w; }
  table t { key = { hdr.h.a: exact; } actions = { set; } const default_action = set(7, 300); }
  apply { t.apply(); }
}
""" + TAIL,
    # an action called directly is listed (without its data parameters); one called
    # only from another action is inlined away; an unused one is dropped
    "direct_calls": HEAD + """
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  action inner() { hdr.h.b = 1; }
  action outer(bit<8> v) { inner(); hdr.h.c = (bit<16>)v; }
  action unused() { }
  apply { outer(3); }
}
""" + TAIL,
    # `if (false)` and `false ? ... :` never run: their tables and actions are dropped,
    # and so is a sub-control instance that is never applied
    "dead_code": HEAD + """
control Sub(inout h_t h) {
  action s() { h.b = 2; }
  table st { key = { h.a: exact; } actions = { s; } }
  apply { st.apply(); }
}
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  Sub() unused_sub;
  action a1() { } action a2() { } action a3() { }
  table live { key = { hdr.h.a: exact; } actions = { a1; } }
  table dead1 { key = { hdr.h.a: exact; } actions = { a2; } }
  table dead2 { key = { hdr.h.a: exact; } actions = { a3; } }
  apply {
    live.apply();
    if (false) { dead1.apply(); }
    hdr.h.b = false ? (dead2.apply().hit ? 8w1 : 8w2) : 8w3;
  }
}
""" + TAIL,
    # `Sub.apply()` without an instance: named after the type, under the caller
    "direct_type_invocation": HEAD + """
control Sub(inout h_t h) {
  @name("bar") action s(bit<8> v) { h.b = v; }
  table st { key = { h.a: exact; } actions = { s; } }
  apply { st.apply(); }
}
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  apply { Sub.apply(hdr.h); }
}
""" + TAIL,
    # an implementation constructed in the property is named by the property's @name,
    # without the control's prefix
    "inline_profile": HEAD + """
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  action set(bit<8> v) { hdr.h.b = v; }
  table t { key = { hdr.h.a: exact; } actions = { set; }
    @name("prof") implementation = action_profile(32w16); }
  apply { t.apply(); }
}
""" + TAIL,
    # a direct counter attached to no table is not described; validity keys are h.$valid$
    "keys_and_unattached_counter": HEAD + """
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  direct_counter(CounterType.packets) attached;
  direct_counter(CounterType.packets) spare;
  action n() { }
  table t {
    key = { hdr.g.isValid(): exact; hdr.h.c[7:0]: ternary; hdr.h.a & 0x0f: exact; }
    actions = { n; }
    counters = attached;
    support_timeout = true;
  }
  apply { t.apply(); }
}
""" + TAIL,
    # the selector-size annotations become ActionProfile fields, not preamble annotations
    "selector_annotations": HEAD + """
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  action set(bit<8> v) { hdr.h.b = v; }
  @max_group_size(200) @selector_size_semantics("sum_of_members") @max_member_weight(4000)
  @brief("kept") action_selector(HashAlgorithm.identity, 32w1024, 32w10) sel;
  table t { key = { hdr.h.a: exact; hdr.h.b: selector; } actions = { set; }
    implementation = sel; }
  apply { t.apply(); }
}
""" + TAIL,
    # value sets: a bit<W> element is one unnamed exact field, a struct's fields match as
    # their @match says; value sets alone create no type_info; an @name on the control type
    # does not rename main's instance; packet metadata fields of a struct field are s.f
    "value_sets_and_names": """#include <core.p4>
#include <v1model.p4>
struct pvs_t { @match(ternary) bit<8> a; @match(lpm) bit<8> b; bit<8> c; }
struct pair_t { bit<7> p; bit<9> q; }
@controller_header("packet_out") header out_t { pair_t pr; bit<8> z; }
header h_t { bit<8> a; bit<8> b; bit<8> c; }
struct hs { out_t o; h_t h; }
struct m_t { bit<8> x; }
parser P(packet_in pkt, out hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  value_set<bit<8>>(4) one;
  value_set<pvs_t>(4) three;
  state start { pkt.extract(hdr.o); pkt.extract(hdr.h); transition select(hdr.h.a) {
    one: accept; default: next; } }
  state next { transition select(hdr.h.a, hdr.h.b, hdr.h.c) { three: accept; default: reject; } }
}
@name("renamed")
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  @name("set_b") action set(@name("value") bit<8> v) { hdr.h.b = v; }
  table t { key = { hdr.h.a: exact; } actions = { set; } }
  apply { t.apply(); }
}
control V(inout hs hdr, inout m_t meta) { apply { } }
control E(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in hs hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), V(), C(), E(), V(), D()) main;
""",
    # `const entries = { }`: a const table without initial entries
    "empty_const_entries": HEAD + """
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  action set() { hdr.h.b = 1; }
  table t { key = { hdr.h.a: exact; } actions = { set; } const entries = { } }
  apply { t.apply(); }
}
""" + TAIL,
    # a `type` (spec 7.6.2) named by keys and action parameters, through typedefs and over
    # another `type`: type_name, and type_info.new_types with the chain's bit<W>
    "new_types": """#include <core.p4>
#include <v1model.p4>
type bit<8> Port_t;
typedef Port_t PortAlias_t;
type Port_t Port2_t;
header h_t { Port_t a; Port2_t b; bit<8> c; }
struct hs { h_t h; }
struct m_t { bit<8> x; }
parser P(packet_in pkt, out hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  state start { pkt.extract(hdr.h); transition accept; }
}
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  action set(PortAlias_t p, bit<8> v) { hdr.h.a = p; hdr.h.c = v; }
  table t { key = { hdr.h.a: exact; hdr.h.b: exact; hdr.h.c: exact; } actions = { set; } }
  apply { t.apply(); }
}
control V(inout hs hdr, inout m_t meta) { apply { } }
control E(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in hs hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), V(), C(), E(), V(), D()) main;
""",
}


def ours(name: str) -> dict:
    prog = compile_source(PROGRAMS[name], filename=f"{name}.p4")
    return by_name(canonical_p4info(p4info_from_program_info(prog.info)))


def test_implicit_default_is_noaction():
    p = ours("implicit_default")
    t = p["tables"]["C.t"]
    noaction = p["actions"]["NoAction"]["preamble"]["id"]
    assert t["action_refs"][-1] == {"id": noaction, "annotations": ["@defaultonly"],
                                    "scope": "DEFAULT_ONLY"}
    assert t["initial_default_action"] == {"action_id": noaction}
    assert "const_default_action_id" not in t


def test_initial_default_action_with_arguments():
    t = ours("default_with_args")["tables"]["C.t"]
    args = t["initial_default_action"]["arguments"]
    # bytes as in P4Runtime: big-endian, the parameter's full width (base64 in JSON)
    assert [(a["param_id"], a["value"]) for a in args] == [(1, "Bw=="), (2, "ASw=")]
    assert t["const_default_action_id"] == t["initial_default_action"]["action_id"]


def test_directly_called_actions():
    actions = ours("direct_calls")["actions"]
    assert sorted(actions) == ["C.outer"]
    assert "params" not in actions["C.outer"]


def test_dead_entities_are_not_listed():
    p = ours("dead_code")
    assert sorted(p["tables"]) == ["C.live"]
    assert sorted(p["actions"]) == ["C.a1", "NoAction"]


def test_direct_type_invocation_names():
    p = ours("direct_type_invocation")
    assert sorted(p["tables"]) == ["C.Sub.st"]
    assert "C.Sub.bar" in p["actions"]


def test_inline_profile_named_by_its_property():
    p = ours("inline_profile")
    assert sorted(p["action_profiles"]) == ["prof"]
    assert p["tables"]["C.t"]["implementation_id"] == p["action_profiles"]["prof"]["preamble"]["id"]


def test_key_names_and_direct_counters():
    p = ours("keys_and_unattached_counter")
    t = p["tables"]["C.t"]
    assert [m["name"] for m in t["match_fields"]] == [
        "hdr.g.$valid$", "hdr.h.c[7:0]", "hdr.h.a & 0xf"]  # constants as p4c prints them
    assert sorted(p["direct_counters"]) == ["C.attached"]
    assert t["idle_timeout_behavior"] == "NOTIFY_CONTROL"


def test_selector_size_annotations_are_fields():
    ap = ours("selector_annotations")["action_profiles"]["C.sel"]
    assert ap["preamble"]["doc"] == {"brief": "kept"}
    assert "annotations" not in ap["preamble"]
    assert ap["max_group_size"] == 200
    assert ap["sum_of_members"] == {"max_member_weight": 4000}


def test_value_sets_block_names_and_packet_metadata():
    p = ours("value_sets_and_names")
    assert p["value_sets"]["P.one"]["match"] == [{"id": 1, "bitwidth": 8, "match_type": "EXACT"}]
    assert [(m["name"], m["match_type"]) for m in p["value_sets"]["P.three"]["match"]] == [
        ("a", "TERNARY"), ("b", "LPM"), ("c", "EXACT")]
    assert sorted(p["tables"]) == ["C.t"]
    assert p["actions"]["C.set_b"]["params"][0]["name"] == "value"
    assert [(m["name"], m["bitwidth"]) for m in p["controller_packet_metadata"]["packet_out"][
        "metadata"]] == [("pr.p", 7), ("pr.q", 9), ("z", 8)]


def test_value_sets_alone_create_no_type_info():
    src = PROGRAMS["value_sets_and_names"].replace("apply { t.apply(); }", "apply { }")
    src = src.replace('@controller_header("packet_out") ', "")
    info = p4info_from_program_info(compile_source(src, filename="v.p4").info)
    assert len(info.value_sets) == 2 and not info.tables
    assert not info.HasField("type_info")


def test_empty_const_entries_make_a_const_table():
    t = ours("empty_const_entries")["tables"]["C.t"]
    assert t["is_const_table"] is True
    assert "has_initial_entries" not in t


def test_new_types_are_named():
    p = ours("new_types")
    keys = p["tables"]["C.t"]["match_fields"]
    assert [k.get("type_name") for k in keys] == [{"name": "Port_t"}, {"name": "Port2_t"}, None]
    params = p["actions"]["C.set"]["params"]
    assert [x.get("type_name") for x in params] == [{"name": "Port_t"}, None]
    bit8 = {"original_type": {"bitstring": {"bit": {"bitwidth": 8}}}}
    assert p["type_info"][""]["new_types"] == {"Port_t": bit8, "Port2_t": bit8}


@needs_p4c
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_equal_to_p4cs(name, tmp_path):
    theirs = by_name(p4c_p4info(PROGRAMS[name], tmp_path))
    assert ours(name) == theirs
