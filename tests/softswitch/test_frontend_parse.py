"""Front end: every supported construct parses and is checked into the promised shape."""

from pathlib import Path

import pytest

from softswitch.frontend import P4Error, compile_file, compile_source
from softswitch.frontend import ast as A
from softswitch.frontend import types as T
from softswitch.frontend.ast import iter_nodes

PROGRAMS = Path(__file__).parent / "programs"

# A minimal v1model skeleton; tests fill in headers / parser states / ingress body.
SKELETON = """
#include <core.p4>
#include <v1model.p4>
{decls}
struct meta_t {{ bit<8> x; bit<16> y; bool f; int<8> s; }}
parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {{
{parser}
}}
control VC(inout headers hdr, inout meta_t meta) {{ apply {{ }} }}
control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {{
{ingress_locals}
  apply {{
{ingress}
  }}
}}
control E(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}
control CC(inout headers hdr, inout meta_t meta) {{ apply {{ }} }}
control D(packet_out pkt, in headers hdr) {{ apply {{ pkt.emit(hdr); }} }}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

HEADERS = """
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header h8_t { bit<8> v; }
struct headers { eth_t eth; h8_t[4] st; h8_t one; }
"""


def prog(ingress="", ingress_locals="", parser=None, decls=HEADERS):
    parser = parser if parser is not None else (
        "state start { pkt.extract(hdr.eth); transition accept; }")
    src = SKELETON.format(decls=decls, parser=parser, ingress=ingress,
                          ingress_locals=ingress_locals)
    return compile_source(src, filename="t.p4")


def nodes(program, cls):
    return [n for d in program.ast.decls for n in iter_nodes(d) if isinstance(n, cls)]


def ingress_stmts(program):
    return program.main.ingress.body.stmts


@pytest.fixture(scope="module")
def constructs():
    return compile_file(PROGRAMS / "frontend_constructs.p4")


def test_main_package_resolves_six_blocks(constructs):
    m = constructs.main
    assert m.package == "V1Switch"
    names = [m.parser.name, m.verify_checksum.name, m.ingress.name, m.egress.name,
             m.compute_checksum.name, m.deparser.name]
    assert names == ["P", "VC", "Ing", "Eg", "CC", "D"]
    assert isinstance(m.parser, A.ParserDecl) and isinstance(m.deparser, A.ControlDecl)


def test_every_expression_is_typed_and_every_name_resolved(constructs):
    exprs = nodes(constructs, A.Expression)
    assert len(exprs) > 300
    untyped = [e for e in exprs if e.type is None]
    assert untyped == []
    assert [p for p in nodes(constructs, A.PathExpr) if p.decl is None] == []
    assert [m for m in nodes(constructs, A.MemberExpr) if m.kind is None] == []
    assert [c for c in nodes(constructs, A.CallExpr) if c.kind is None] == []


def test_call_classification(constructs):
    kinds = {c.kind for c in nodes(constructs, A.CallExpr)}
    for k in (A.CallKind.PACKET_EXTRACT, A.CallKind.PACKET_LOOKAHEAD, A.CallKind.PACKET_ADVANCE,
              A.CallKind.PACKET_EMIT, A.CallKind.HEADER_IS_VALID, A.CallKind.HEADER_SET_VALID,
              A.CallKind.HEADER_SET_INVALID, A.CallKind.STACK_PUSH_FRONT,
              A.CallKind.STACK_POP_FRONT, A.CallKind.TABLE_APPLY, A.CallKind.ACTION,
              A.CallKind.FUNCTION, A.CallKind.EXTERN_FUNCTION, A.CallKind.EXTERN_METHOD,
              A.CallKind.CONTROL_APPLY):
        assert k in kinds, k
    extracts = [c for c in nodes(constructs, A.CallExpr) if c.kind is A.CallKind.PACKET_EXTRACT]
    two_arg = [c for c in extracts if len(c.bound_args) == 2]
    assert len(two_arg) == 1 and isinstance(two_arg[0].bound_args[0].type.fields[0].type, T.Varbit)
    look = next(c for c in nodes(constructs, A.CallExpr) if c.kind is A.CallKind.PACKET_LOOKAHEAD)
    assert look.type == T.Bits(8) and look.type_args == [T.Bits(8)]


def test_extern_method_targets_their_instance(constructs):
    reads = [c for c in nodes(constructs, A.CallExpr)
             if c.kind is A.CallKind.EXTERN_METHOD and c.method == "read"
             and isinstance(c.target, A.Instantiation) and c.target.name == "flows"]
    assert len(reads) == 1
    call = reads[0]
    assert call.receiver.decl is call.target
    # register<bit<32>>: T bound by the type argument, I inferred from the index argument
    assert [p.type for p in call.params] == [T.Bits(32), T.Bits(32)]


def test_constant_folding_and_implicit_casts():
    p = prog(decls=HEADERS + "const bit<8> K = 3 * 4 + 1;\nconst int<8> N = -8s1 - 1;",
             ingress="meta.x = K + 1; meta.y = K ++ 8w2 & 16w0xFFFF;"
                     " meta.s = N |-| 127; meta.x = 8w250 |+| 10;")
    consts = {d.name: d.value.const_value for d in p.ast.decls if isinstance(d, A.ConstantDecl)}
    assert consts["K"] == 13 and consts["N"] == -2
    s0, s1, s2, s3 = ingress_stmts(p)
    # the unsized literal took the width of the other operand
    assert s0.rhs.type == T.Bits(8) and s0.rhs.right.type == T.Bits(8)
    assert s0.rhs.const_value == 14
    assert s1.rhs.type == T.Bits(16) and s1.rhs.const_value == (13 << 8) | 2
    assert s2.rhs.const_value == -128  # saturating subtraction in int<8>
    assert s3.rhs.const_value == 255   # saturating addition in bit<8>


def test_wraparound_folding():
    p = prog(ingress="meta.x = 8w255 + 8w2; meta.s = (int<8>)8w200; meta.x = 8w1 << 9;")
    vals = [s.rhs.const_value for s in ingress_stmts(p)]
    assert vals == [1, -56, 0]


def test_non_constant_int_gets_explicit_cast_node():
    p = prog(ingress="meta.y = meta.y + (bit<16>)meta.x; meta.f = meta.x == 1;")
    s0, s1 = ingress_stmts(p)
    assert s0.rhs.type == T.Bits(16)
    assert isinstance(s1.rhs, A.BinaryExpr) and s1.rhs.right.type == T.Bits(8)


def test_select_keysets():
    parser = """
    state start {
      pkt.extract(hdr.eth);
      transition select(hdr.eth.type, sm.ingress_port) {
        (0x0800, 1): s1;
        (0x8100 &&& 0xEFFF, _): s1;
        (0x0600 .. 0x06FF, 2 .. 3): reject;
        default: accept;
      }
    }
    state s1 { transition accept; }"""
    p = prog(parser=parser)
    sel = p.main.parser.states[0].transition
    assert isinstance(sel, A.SelectExpr) and len(sel.cases) == 4
    k0, k1, k2, k3 = [c.keyset for c in sel.cases]
    assert [i.const_value for i in k0.items] == [0x0800, 1]
    assert k0.items[1].type == T.Bits(9)
    assert isinstance(k1.items[0], A.MaskExpr) and k1.items[0].mask.const_value == 0xEFFF
    assert isinstance(k1.items[1], A.DontCareExpr)
    assert isinstance(k2.items[1], A.RangeExpr) and k2.items[1].hi.type == T.Bits(9)
    assert isinstance(k3, A.DefaultExpr)
    assert [c.state.decl.name for c in sel.cases] == ["s1", "s1", "reject", "accept"]


def test_header_stack_operations():
    parser = """
    state start { pkt.extract(hdr.st.next);
      transition select(hdr.st.last.v) { 0: accept; default: start; } }"""
    p = prog(parser=parser, ingress="""
      hdr.st.push_front(2); hdr.st.pop_front(1); hdr.st[1].v = 3;
      meta.x = (bit<8>)hdr.st.size;""")
    member_kinds = {m.kind for m in nodes(p, A.MemberExpr)}
    assert {A.MemberKind.STACK_NEXT, A.MemberKind.STACK_LAST, A.MemberKind.STACK_SIZE} <= member_kinds
    stmts = ingress_stmts(p)
    assert stmts[0].call.kind is A.CallKind.STACK_PUSH_FRONT
    assert stmts[0].call.bound_args[0].const_value == 2
    assert stmts[1].call.kind is A.CallKind.STACK_POP_FRONT
    assert isinstance(stmts[2].lhs.expr, A.IndexExpr)
    assert stmts[3].rhs.const_value == 4


def test_last_index_only_in_parser():
    parser = """
    state start { pkt.extract(hdr.st.next);
      transition select(hdr.st.lastIndex) { 3: accept; default: start; } }"""
    p = prog(parser=parser)
    li = [m for m in nodes(p, A.MemberExpr) if m.kind is A.MemberKind.STACK_LAST_INDEX]
    assert len(li) == 1 and li[0].type == T.Bits(32)


def test_serializable_enum_and_error_members():
    decls = HEADERS + "enum bit<16> ET { IPV4 = 0x0800, ARP = 0x0806 }\nerror { Mine }"
    p = prog(decls=decls, ingress="""
      if (hdr.eth.type == ET.ARP) { meta.y = (bit<16>)ET.IPV4; }
      if (sm.parser_error == error.Mine) { meta.x = 1; }""")
    enum_members = [m for m in nodes(p, A.MemberExpr) if m.kind is A.MemberKind.ENUM_MEMBER]
    assert sorted(m.const_value for m in enum_members) == [0x0800, 0x0806]
    err = [m for m in nodes(p, A.MemberExpr) if m.kind is A.MemberKind.ERROR_MEMBER]
    assert err[0].const_value == "Mine"
    assert p.error_type.members[:2] == ["NoError", "PacketTooShort"] and "Mine" in p.error_type.members
    cond = ingress_stmts(p)[0].cond
    # ET value compared with bit<16>: converted explicitly
    assert isinstance(cond.right, A.CastExpr) and cond.right.implicit


def test_tables_switch_hit_miss_exit_return():
    locals_ = """
      action a1(bit<8> v) { meta.x = v; }
      action a2() { }
      table t {
        key = { hdr.eth.dst: exact; meta.x: ternary; meta.y: range; meta.s: optional;
                hdr.eth.type: lpm @name("etype"); }
        actions = { a1; a2; @defaultonly NoAction; }
        const default_action = NoAction();
        size = 64;
      }"""
    body = """
      switch (t.apply().action_run) { a1: a2: { meta.x = 2; } default: { exit; } }
      if (t.apply().hit) { return; } else if (t.apply().miss) { meta.x = 1; }"""
    p = prog(ingress_locals=locals_, ingress=body)
    table = next(d for d in p.main.ingress.locals if isinstance(d, A.TableDecl))
    assert [k.match_kind for k in table.keys] == ["exact", "ternary", "range", "optional", "lpm"]
    assert [k.name for k in table.keys] == ["hdr.eth.dst", "meta.x", "meta.y", "meta.s", "etype"]
    assert table.default_action_const and table.size_value == 64
    sw = ingress_stmts(p)[0]
    assert sw.cases[0].body is None and sw.cases[0].action.name == "a1"
    assert isinstance(sw.cases[2].label, A.DefaultExpr)
    kinds = {m.kind for m in nodes(p, A.MemberExpr)}
    assert {A.MemberKind.TABLE_HIT, A.MemberKind.TABLE_MISS, A.MemberKind.TABLE_ACTION_RUN} <= kinds
    assert nodes(p, A.ExitStmt) and nodes(p, A.ReturnStmt)


def test_const_entries_with_priorities():
    locals_ = """
      action a1(bit<8> v) { meta.x = v; }
      table t {
        key = { hdr.eth.type: ternary; meta.x: exact; }
        actions = { a1; NoAction; }
        const entries = {
          (0x0800 &&& 0xFFFF, 1): a1(5);
          @priority(3) (_, 2): a1(6);
          priority = 9: (0x86DD, _): NoAction();
        }
      }"""
    p = prog(ingress_locals=locals_, ingress="t.apply();")
    table = next(d for d in p.main.ingress.locals if isinstance(d, A.TableDecl))
    assert [e.priority_value for e in table.entries] == [None, 3, 9]
    assert [e.action.action.name for e in table.entries] == ["a1", "a1", "NoAction"]
    assert table.entries[0].action.call.bound_args[0].const_value == 5
    info = p.info.table("I.t")
    assert info.is_const and [e.args for e in info.entries] == [(5,), (6,), ()]


def test_struct_and_list_initialisers_and_header_union():
    decls = HEADERS.replace("struct headers", """
header a_t { bit<8> a; }
header b_t { bit<16> b; }
header_union u_t { a_t a; b_t b; }
struct pair_t { bit<8> l; bit<16> r; }
struct headers""").replace("h8_t one;", "h8_t one; u_t u;")
    p = prog(decls=decls, ingress="""
      pair_t p1 = { 1, 2 };
      pair_t p2 = { r = 3, l = 4 };
      hdr.one = { 7 };
      if (hdr.u.isValid()) { hdr.u.a.setInvalid(); }
      meta.y = p1.r + p2.r;""")
    s = ingress_stmts(p)
    assert isinstance(s[0].decl.init, A.ListExpr) and s[0].decl.init.type.name == "pair_t"
    assert s[0].decl.init.items[1].type == T.Bits(16)
    assert isinstance(s[1].decl.init, A.StructInitExpr) and s[1].decl.init.type.name == "pair_t"
    assert isinstance(s[3].cond.receiver.type, T.HeaderUnionType)


def test_functions_and_slices_and_ternary():
    decls = HEADERS + """
bit<8> pick(in bit<8> a, in bit<8> b) { if (a > b) { return a; } return b; }"""
    p = prog(decls=decls, ingress="""
      meta.x = pick(hdr.eth.dst[7:0], meta.x);
      meta.x = meta.f ? 8w1 : meta.x;
      hdr.eth.dst[47:40] = 0xAB;""")
    s = ingress_stmts(p)
    call = s[0].rhs
    assert call.kind is A.CallKind.FUNCTION and call.target.name == "pick"
    sl = call.bound_args[0]
    assert isinstance(sl, A.SliceExpr) and (sl.hi_value, sl.lo_value) == (7, 0)
    assert sl.type == T.Bits(8)
    assert s[1].rhs.type == T.Bits(8)
    assert s[2].lhs.type == T.Bits(8) and s[2].rhs.const_value == 0xAB


def test_typedef_and_newtype():
    decls = HEADERS + "typedef bit<32> u32_t;\ntype bit<9> port_t;"
    p = prog(decls=decls, ingress="u32_t a = 5; port_t q = (port_t)sm.ingress_port;"
                                  " sm.egress_spec = (bit<9>)q; meta.y = (bit<16>)a;")
    s = ingress_stmts(p)
    assert s[0].decl.type == T.Bits(32)
    assert isinstance(s[1].decl.type, T.NewType) and s[1].decl.type.underlying == T.Bits(9)


def test_parser_value_set_and_verify():
    parser = """
    value_set<bit<16>>(8) pvs;
    state start {
      pkt.extract(hdr.eth);
      verify(hdr.eth.type != 0, error.NoMatch);
      transition select(hdr.eth.type) { pvs: accept; default: reject; }
    }"""
    p = prog(parser=parser)
    vs = p.info.value_sets[0]
    assert vs.name == "P.pvs" and vs.size == 8 and vs.fields[0].bitwidth == 16


def test_annotations_are_kept():
    locals_ = '@name("renamed") @brief("does things") action a() { }\n' \
              'table t { key = { meta.x: exact; } actions = { a; } }'
    p = prog(ingress_locals=locals_, ingress="t.apply();")
    act = next(d for d in p.main.ingress.locals if isinstance(d, A.ActionDecl))
    assert [str(a) for a in act.annotations] == ['@name("renamed")', '@brief("does things")']
    assert act.fqname == "I.renamed"
    assert act.annotations[0].args == ["renamed"]


def test_shift_right_and_nested_type_arguments_lex_correctly():
    locals_ = "register<bit<32>>(4) r;"
    p = prog(ingress_locals=locals_, ingress="""
      bit<32> v; r.read(v, 0); v = v >> 2; v = v >> (bit<8>)meta.x;
      meta.f = v >= 3 && v > 1;""")
    s = ingress_stmts(p)
    assert s[2].rhs.op == ">>" and s[4].rhs.left.op == ">="


def test_basic_router_program_compiles():
    p = compile_file(PROGRAMS / "basic_router.p4")
    assert p.main.ingress.name == "MyIngress"
    assert p.info.table("MyIngress.ipv4_lpm").keys[0].match_kind == "lpm"


def test_syntax_error_is_a_p4error_with_location():
    with pytest.raises(P4Error) as ei:
        prog(ingress="meta.x = ;")
    d = ei.value.diagnostics[0]
    assert (d.file, d.severity) == ("t.p4", "error")
    assert "syntax error: unexpected ';'" in d.message
    assert d.source_line.strip() == "meta.x = ;"
    assert str(d).splitlines()[2].index("^") == d.col - 1


def test_context_keywords_and_type_names_as_values():
    # `key`, `actions`, `entries`, `priority`, `type`, `size` as field names; a parameter
    # named like its struct type; variables named like v1model's type parameters (T, M)
    src = """#include <v1model.p4>
header h_t { bit<8> key; bit<8> actions; bit<8> entries; bit<8> priority; bit<8> type; bit<8> size; }
struct hs { h_t h; }
struct meta { bit<8> x; }
parser P(packet_in pkt, out hs hdr, inout meta meta, inout standard_metadata_t sm) {
  state start { pkt.extract(hdr.h); transition accept; }
}
control C(inout hs hdr, inout meta meta, inout standard_metadata_t sm) {
  bit<8> T = 1;
  action a(bit<8> M) { meta.x = M + T; }
  table t { key = { hdr.h.key: exact; hdr.h.priority: exact; } actions = { a; }
            default_action = a(1); }
  apply {
    hdr.h.key = hdr.h.actions + hdr.h.entries + hdr.h.priority + hdr.h.type + hdr.h.size;
    T = T + 1;
    meta.x = T;
    if (T == 2) { t.apply(); }
  }
}
control E(inout hs hdr, inout meta meta, inout standard_metadata_t sm) { apply { } }
control V(inout hs hdr, inout meta meta) { apply { } }
control D(packet_out pkt, in hs hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), C(), E(), V(), D()) main;
"""
    p = compile_source(src, filename="names.p4")
    table = next(d for d in p.main.ingress.locals if isinstance(d, A.TableDecl))
    assert [k.name for k in table.keys] == ["hdr.h.key", "hdr.h.priority"]
    stmts = p.main.ingress.body.stmts
    assert isinstance(stmts[1].lhs.decl, A.VariableDecl) and stmts[1].lhs.name == "T"
    assert stmts[2].lhs.expr.decl.direction == "inout"  # `meta` the parameter, not the type


def test_explicit_type_arguments_on_methods():
    parser = """
    state start {
      pkt.extract<eth_t>(hdr.eth);
      transition select(pkt.lookahead<h8_t>().v) { 0: accept; default: reject; }
    }"""
    p = prog(parser=parser)
    calls = [c for c in nodes(p, A.CallExpr) if c.kind in (A.CallKind.PACKET_EXTRACT,
                                                          A.CallKind.PACKET_LOOKAHEAD)]
    assert sorted(str(c.type_args[0]) for c in calls) == ["eth_t", "h8_t"]
