"""Front end diagnostics: exact locations, many errors at once, unsupported constructs named."""

import pytest

from softswitch.frontend import P4Error, compile_source

PRELUDE = """#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; }
struct hs { h_t h; }
struct m_t { bit<8> x; bool f; }
"""
# the user's code starts on line 5
TAIL = """
control E(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control V(inout hs hdr, inout m_t meta) { apply { } }
control D(packet_out pkt, in hs hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), C(), E(), V(), D()) main;
"""
PARSER = """parser P(packet_in pkt, out hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  state start { pkt.extract(hdr.h); transition accept; }
}
"""


def errors_of(src: str, filename: str = "e.p4"):
    with pytest.raises(P4Error) as ei:
        compile_source(src, filename=filename)
    return [d for d in ei.value.diagnostics if d.severity == "error"]


def control(body: str, locals_: str = "") -> str:
    # control C starts on line 8 (after PRELUDE and PARSER); apply body on line 10
    return (PRELUDE + PARSER
            + "control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {\n"
            + locals_ + "\n  apply {\n" + body + "\n  }\n}\n" + TAIL)


def only(errs):
    assert len(errs) == 1, [str(e) for e in errs]
    return errs[0]


def test_width_mismatch_location_and_caret():
    e = only(errors_of(control("    hdr.h.a = hdr.h.b;")))
    assert (e.file, e.line, e.col) == ("e.p4", 11, 15)
    assert e.message == ("expected bit<8>, got bit<16> "
                         "(P4 does not change widths implicitly; cast it)")
    text = str(e).splitlines()
    assert text[0] == f"e.p4:11:15: error: {e.message}"
    assert text[1] == "    hdr.h.a = hdr.h.b;"
    assert text[2] == " " * 14 + "^"


def test_bool_and_bit1_are_distinct():
    e = only(errors_of(control("    if (hdr.h.a[0:0]) { }")))
    assert (e.line, e.col) == (11, 9)
    assert e.message == "if condition must be bool, not bit<1>"


def test_many_errors_reported_at_once():
    body = "\n".join([
        "    hdr.h.a = hdr.h.b;",          # line 11
        "    meta.f = 1;",                  # line 12
        "    meta.x = nothing;",            # line 13
        "    hdr.h.a = 8w1 + 16w1;",        # line 14
        "    hdr.h.a = meta.x / 0;",        # line 15
    ])
    errs = errors_of(control(body))
    got = [(e.line, e.col, e.message) for e in errs]
    assert got == [
        (11, 15, "expected bit<8>, got bit<16> (P4 does not change widths implicitly; cast it)"),
        (12, 14, "expected bool, got int"),
        (13, 14, "unknown name 'nothing'"),
        (14, 15, "'+': operand types differ: bit<8> and bit<16>; cast one side"),
        (15, 15, "division by zero"),
    ]


def test_direction_checks():
    locals_ = ("  action a(in bit<8> v) { v = 1; }\n"       # line 9
               "  action b(bit<8> d) { d = 2; }\n")          # line 10
    errs = errors_of(control("    a(1);", locals_))
    assert [(e.line, e.col, e.message) for e in errs] == [
        (9, 27, "cannot assign to an 'in' parameter 'v'"),
        (10, 24, "cannot assign to action data parameter 'd'"),
    ]


def test_out_argument_must_be_writable():
    body = "    hash(8w1, HashAlgorithm.crc16, 8w0, {hdr.h.a}, 8w16);"
    e = only(errors_of(control(body)))
    assert e.line == 11 and e.message.startswith("cannot pass as 'out' argument 'result'")


def test_table_errors():
    locals_ = ("  action a() { }\n"
               "  table t { key = { hdr.h.a: fuzzy; } actions = { a; a2; } colour = 3;"
               " default_action = a(1); }\n")
    errs = errors_of(control("    t.apply();", locals_))
    msgs = [(e.line, e.message) for e in errs]
    assert (10, "unknown match kind 'fuzzy'") in msgs
    assert (10, "unknown action 'a2'") in msgs
    assert (10, "unknown table property 'colour'") in msgs
    assert (10, "action 'a' takes 0 argument(s), got 1") in msgs


def test_unsupported_constructs_are_named():
    src = control("    t.apply();", "  action a() { }\n"
                  "  table t { key = { hdr.h.a: exact; } actions = { a; }"
                  " entries = { 1: a(); } support_timeout = true; }\n")
    errs = errors_of(src)
    assert [(e.line, e.message) for e in errs] == [
        (10, "unsupported: table property 'support_timeout'"),
        (10, "unsupported: non-const table entries"),
    ]


def test_unsupported_generic_function_and_missing_ctor_argument():
    src = PRELUDE + "T id<T>(in T x) { return x; }\n" + PARSER.replace(
        "parser P(packet_in pkt, out hs hdr, inout m_t meta, inout standard_metadata_t sm)",
        "parser P(packet_in pkt, out hs hdr, inout m_t meta, inout standard_metadata_t sm)"
        "(bit<8> k)")
    src += ("control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) "
            "{ apply { } }\n") + TAIL
    msgs = [(e.line, e.message) for e in errors_of(src)]
    assert (5, "unsupported: generic functions") in msgs
    # constructor parameters are supported (spec 14); the instance `P()` lacks the argument
    assert any(m == "'P': missing argument 'k'" for _, m in msgs)


def test_parser_errors():
    src = PRELUDE + """parser P(packet_in pkt, out hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  state begin { pkt.extract(hdr.h); transition nowhere; }
}
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
""" + TAIL
    errs = errors_of(src)
    assert [(e.line, e.col, e.message) for e in errs] == [
        (5, 1, "parser 'P' has no 'start' state"),
        (6, 48, "unknown parser state 'nowhere'"),
    ]


def test_select_keyset_arity():
    src = PRELUDE + """parser P(packet_in pkt, out hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  state start { pkt.extract(hdr.h);
    transition select(hdr.h.a, hdr.h.b) { (1, 2, 3): accept; 5: reject; default: accept; } }
}
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
""" + TAIL
    msgs = [(e.line, e.message) for e in errors_of(src)]
    assert msgs == [(7, "keyset has 3 elements, the key has 2"),
                    (7, "keyset must be a tuple of 2 elements")]


def test_package_block_signature_checked():
    src = PRELUDE + PARSER + """control C(inout hs hdr, inout m_t meta) { apply { } }
""" + TAIL
    e = errors_of(src)[0]
    assert e.message == "'C' has 2 parameter(s) but 'Ingress' needs 3"
    assert (e.line, e.col) == (13, 20)  # at `C()` in the V1Switch instantiation


def test_missing_main():
    src = PRELUDE + PARSER
    e = only(errors_of(src))
    assert e.message.startswith("no top-level 'main' package instantiation")


def test_duplicate_declarations_and_fields():
    src = PRELUDE + "header g_t { bit<8> a; bit<8> a; }\nconst bit<8> K = 1;\nconst bit<8> K = 2;\n"
    msgs = [(e.line, e.message) for e in errors_of(src)][:2]
    assert msgs == [(5, "duplicate field 'a'"), (7, "duplicate declaration of 'K'")]


def test_lexer_error_location():
    e = errors_of("header h { bit<8> a; }\nconst bit<8> X = 1 $ 2;\n")[0]
    assert (e.line, e.col) == (2, 20)
    assert e.message == "unexpected character '$'"


def test_unterminated_comment_and_string():
    assert errors_of('const bit<8> X = 1;\n/* never closed\n')[0].line == 2
    e = errors_of('@name("x) action a() { }')[0]
    assert e.line == 1


def test_exit_in_function_and_return_value_in_action():
    src = PRELUDE + "bit<8> f(in bit<8> a) { exit; }\n" \
        "bit<8> g(in bit<8> a) { if (a == 1) { return a; } }\n" \
        "action z() { return 1; }\n"
    msgs = [(e.line, e.message) for e in errors_of(src)]
    assert (5, "exit is not allowed in a function") in msgs
    assert (6, "function 'g' may end without returning a value") in msgs
    assert (7, "return with a value outside a function") in msgs


def test_next_outside_parser():
    src = PRELUDE.replace("struct hs { h_t h; }", "struct hs { h_t h; h_t[2] st; }")
    src += PARSER + "control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {" \
                    " apply { hdr.st.next.a = 1; } }\n" + TAIL
    e = only(errors_of(src))
    assert e.message == "'next' may only be used in a parser" and e.line == 8


def test_unsized_list_element_needs_width():
    body = "    hash(meta.x, HashAlgorithm.crc16, 8w0, {hdr.h.a, 5}, 8w16);"
    e = only(errors_of(control(body)))
    assert (e.line, e.col) == (11, 54)
    assert e.message == "list element needs a width; cast the integer, e.g. 8w5"


def test_several_syntax_errors_one_per_declaration():
    src = """header h_t { bit<8> a bit<8> b; }
struct s { h_t h; }
const bit<8> X = (1 + ;
control C(inout s hdr) {
  apply {
    hdr.h.a = 1
    hdr.h.b = 2;
  }
}
const bit<8> Y = 2;
"""
    errs = errors_of(src)
    assert [(e.line, e.col, e.message.split(" (")[0]) for e in errs] == [
        (1, 23, "syntax error: unexpected 'bit'"),
        (3, 23, "syntax error: unexpected ';'"),
        (7, 5, "syntax error: unexpected 'hdr'"),
    ]


def test_syntax_error_lists_few_alternatives_and_end_of_input():
    e = only(errors_of("struct s { bit<8> h }"))
    assert (e.col, e.message) == (21, "syntax error: unexpected '}' (expected ';')")
    e = only(errors_of("header h { bit<8> a; }\nconst bit<8> X = 1"))
    assert (e.line, e.col) == (2, 19)
    assert e.message.startswith("syntax error: unexpected end of input")
