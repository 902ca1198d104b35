"""Program.info: the control-plane surface with p4c's fully-qualified names."""

from pathlib import Path

import pytest

from softswitch.frontend import compile_file, compile_source

PROGRAMS = Path(__file__).parent / "programs"


@pytest.fixture(scope="module")
def info():
    return compile_file(PROGRAMS / "frontend_constructs.p4").info


def test_basic_router_info():
    info = compile_file(PROGRAMS / "basic_router.p4").info
    t = info.table("MyIngress.ipv4_lpm")
    assert [(k.name, k.match_kind, k.bitwidth) for k in t.keys] == [("hdr.ipv4.dstAddr", "lpm", 32)]
    assert [a.name for a in t.actions] == ["MyIngress.ipv4_forward", "MyIngress.drop", "NoAction"]
    assert (t.default_action.name, t.default_action.args, t.default_action.const) == (
        "MyIngress.drop", (), False)
    assert (t.size, t.is_const, t.implementation) == (1024, False, None)
    fwd = info.action("MyIngress.ipv4_forward")
    assert [(p.name, p.bitwidth) for p in fwd.params] == [("dstAddr", 48), ("port", 9)]
    assert [(c.name, c.unit, c.size) for c in info.counters] == [
        ("MyIngress.port_packets", "packets_and_bytes", 512)]


def test_tables_keys_scopes_and_resources(info):
    l2 = info.table("Ing.l2")
    assert [(k.name, k.match_kind, k.bitwidth) for k in l2.keys] == [
        ("dmac", "exact", 48), ("hdr.vlan.vid", "ternary", 12), ("hdr.vlan.isValid()", "exact", 1)]
    assert [(a.name, a.scope) for a in l2.actions] == [
        ("Ing.fwd", "table_and_default"), ("Ing.drop", "default_only"),
        ("Ing.learn", "table_only"), ("NoAction", "table_and_default")]
    assert l2.size == 256 and l2.direct_counter == "Ing.dc"
    acl = info.table("Ing.acl")
    assert acl.default_action.const and acl.is_const and acl.direct_meter == "Ing.dm"
    assert [k.name for k in acl.keys][-1] == "hdr.ipv4.dst[31:24]"
    assert [(e.action, e.args, e.priority) for e in acl.entries] == [
        ("Ing.set_color", (3,), None), ("Ing.set_color", (4,), 5), ("NoAction", (), 7)]
    assert info.table("Ing.ecmp").implementation == "Ing.sel"


def test_actions_named_with_at_name(info):
    names = [a.name for a in info.actions]
    assert "Ing.set_color" in names and "Ing.color" not in names
    assert names.count("NoAction") == 1
    assert [p.name for p in info.action("Ing.count_it").params] == []  # directional only


def test_profiles_registers_meters_direct(info):
    profiles = {p.name: p for p in info.action_profiles}
    sel, prof = profiles["Ing.sel"], profiles["Ing.prof"]
    assert (sel.with_selector, sel.size, sel.max_group_size, sel.tables, sel.algorithm) == (
        True, 128, 16, ("Ing.ecmp",), "crc16")
    assert (prof.with_selector, prof.size, prof.tables) == (False, 64, ("Ing.prof_t",))
    assert [(r.name, r.size, r.bitwidth) for r in info.registers] == [
        ("Ing.flows", 1024, 32), ("Ing.small", 16, 8)]
    assert [(m.name, m.unit, m.size) for m in info.meters] == [("Ing.m", "bytes", 16)]
    assert [(d.name, d.unit, d.table) for d in info.direct_counters] == [
        ("Ing.dc", "packets_and_bytes", "Ing.l2")]
    assert [(d.name, d.unit, d.table) for d in info.direct_meters] == [
        ("Ing.dm", "packets", "Ing.acl")]


def test_controller_headers_digests_value_sets(info):
    hs = {h.name: h for h in info.controller_headers}
    assert hs["packet_in"].type_name == "cpu_in_t"
    assert [(f.name, f.bitwidth) for f in hs["packet_in"].fields] == [
        ("ingress_port", 9), ("pad", 7)]
    assert [(f.name, f.bitwidth) for f in hs["packet_out"].fields] == [
        ("egress_port", 9), ("pad", 7)]
    assert [(d.name, [(f.name, f.bitwidth) for f in d.fields]) for d in info.digests] == [
        ("learn_t", [("src", 48), ("port", 9)])]
    assert [(v.name, v.size) for v in info.value_sets] == [("P.tpids", 4)]


def test_absolute_name_and_hidden():
    src = (PROGRAMS / "basic_router.p4").read_text().replace(
        "    action drop() {", '    @name(".global_drop") action drop() {').replace(
        "    table ipv4_lpm {", "    @hidden table helper { key = { hdr.ipv4.ttl: exact; }"
        " actions = { NoAction; } }\n    table ipv4_lpm {")
    info = compile_source(src, filename="r.p4").info
    assert info.action("global_drop") is not None
    assert info.table("MyIngress.helper") is None
    assert info.table("MyIngress.ipv4_lpm").default_action.name == "global_drop"


def test_p4info_can_be_built_from_info():
    p4info = pytest.importorskip("softswitch.p4info")
    out = p4info.p4info_from_program_info(compile_file(PROGRAMS / "frontend_constructs.p4").info)
    names = sorted(t.preamble.name for t in out.tables)
    assert names == ["Ing.acl", "Ing.ecmp", "Ing.l2", "Ing.prof_t"]


def test_inline_table_implementation_becomes_a_named_instance():
    src = (PROGRAMS / "basic_router.p4").read_text().replace(
        "        size = 1024;\n",
        "        size = 1024;\n        implementation = action_profile(32w64);\n").replace(
        "            hdr.ipv4.dstAddr: lpm;\n",
        "            hdr.ipv4.dstAddr: lpm;\n").replace(
        "        default_action = drop();\n", "")
    prog = compile_source(src, filename="r.p4")
    (ap,) = prog.info.action_profiles
    assert (ap.name, ap.size, ap.tables, ap.with_selector) == (
        "MyIngress.ipv4_lpm", 64, ("MyIngress.ipv4_lpm",), False)
    assert prog.info.table("MyIngress.ipv4_lpm").implementation == "MyIngress.ipv4_lpm"
    # the instance is a local of the control, just before its table
    names = [type(d).__name__ + ":" + d.name for d in prog.main.ingress.locals]
    assert names.index("Instantiation:ipv4_lpm") == names.index("TableDecl:ipv4_lpm") - 1


def _router_with_two_acl_instances() -> str:
    """basic_router.p4 with a sub-control instantiated twice, the second under @name."""
    src = (PROGRAMS / "basic_router.p4").read_text()
    src = src.replace("control MyIngress(", """control Acl(inout headers hdr, inout standard_metadata_t sm) {
    action deny() { mark_to_drop(sm); }
    counter(8, CounterType.packets) hits;
    table acl { key = { hdr.ipv4.srcAddr: ternary; } actions = { deny; NoAction; } }
    apply { acl.apply(); }
}

control MyIngress(""", 1)
    src = src.replace("    counter(PORT_COUNT, CounterType.packets_and_bytes) port_packets;",
                      "    counter(PORT_COUNT, CounterType.packets_and_bytes) port_packets;\n"
                      "    Acl() acl1;\n    @name(\"second\") Acl() acl2;")
    src = src.replace("        if (hdr.ipv4.isValid() && hdr.ipv4.ttl > 1) {",
                      "        acl1.apply(hdr, standard_metadata);\n"
                      "        acl2.apply(hdr, standard_metadata);\n"
                      "        if (hdr.ipv4.isValid() && hdr.ipv4.ttl > 1) {")
    return src


def test_sub_control_instances_named_by_instance_path():
    info = compile_source(_router_with_two_acl_instances(), filename="sub.p4").info
    assert [t.name for t in info.tables] == [
        "MyIngress.acl1.acl", "MyIngress.second.acl", "MyIngress.ipv4_lpm"]
    assert [a.name for a in info.table("MyIngress.second.acl").actions] == [
        "MyIngress.second.deny", "NoAction"]
    assert [c.name for c in info.counters] == [
        "MyIngress.acl1.hits", "MyIngress.second.hits", "MyIngress.port_packets"]
    assert "MyIngress.acl1.deny" in [a.name for a in info.actions]


def test_engine_names_sub_control_objects_as_program_info():
    from softswitch.engine import Switch

    prog = compile_source(_router_with_two_acl_instances(), filename="sub.p4")
    sw = Switch(prog)
    assert sorted(sw.tables) == sorted(t.name for t in prog.info.tables)
    assert sorted(sw.counters) == sorted(c.name for c in prog.info.counters)
