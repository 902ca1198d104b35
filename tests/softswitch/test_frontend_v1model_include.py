"""softswitch's core.p4 and v1model.p4 declare what p4c's do, with the same guards and
version logic (P4_16 spec appendix "core library"; p4c's p4include/v1model.p4).

What is checked against p4c's documented behaviour:

* `V1MODEL_VERSION` defaults to 20180101 unless the program defines it first;
  from 20200408 on counter/meter/register take their index type as a type
  parameter (`register<T, I>`), before that the index is bit<32> (`register<T>`);
* `__v1model_version` must be non-negative and within [20180101, 20200408]
  (p4c's messages, testdata/p4_16_errors/issue5296_*.p4);
* `static_assert` is evaluated at compile time (p4c's core.p4 comment and
  testdata/p4_16_errors/issue3188.p4);
* the include guards `_CORE_P4_` and `_V1_MODEL_P4_` are defined;
* the deprecated declarations exist and programs using them run.

Where p4c is installed (`p4test` on PATH), the accept/reject verdicts are
compared with p4c's own on the same sources. p4c checks the version when it
writes the program back as P4 (`--pp`), as its test harness does for every
program of its testdata; a plain compile with p4c-bm2-ss skips that check.
"""

import shutil
import subprocess

import pytest

from softswitch import Switch
from softswitch.frontend import P4Error, compile_source
from softswitch.frontend import ast as A

BLOCKS = """
header h_t { bit<8> a; bit<8> b; bit<16> c; }
struct hs { h_t h; }
struct m_t { bit<8> x; }
parser P(packet_in pkt, out hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout hs hdr, inout m_t meta) { apply { } }
control E(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in hs hdr) { apply { pkt.emit(hdr.h); } }
"""
IG_HEAD = "control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {\n"
MAIN = "V1Switch(P(), V(), C(), E(), V(), D()) main;\n"


def program(head: str, ingress_body: str) -> str:
    """`head` (defines, includes) + the blocks + an ingress control with the given body."""
    return head + BLOCKS + IG_HEAD + ingress_body + "}\n" + MAIN


def constant(prog, name):
    return next(d.value.const_value for d in prog.ast.decls
                if isinstance(d, A.ConstantDecl) and d.name == name)


def messages(src: str) -> list[str]:
    with pytest.raises(P4Error) as ei:
        compile_source(src, filename="m.p4")
    return [d.message for d in ei.value.diagnostics if d.severity == "error"]


OLD_REGISTER = program("#include <v1model.p4>\n", """
  register<bit<8>>(4) r;
  counter(4, CounterType.packets) c;
  apply { r.write(32w1, hdr.h.a); r.read(hdr.h.b, 32w1); c.count(32w2); sm.egress_spec = 1; }
""")
NEW_REGISTER = program("#define V1MODEL_VERSION 20200408\n#include <v1model.p4>\n", """
  register<bit<8>, bit<2>>(4) r;
  counter<bit<2>>(4, CounterType.packets) c;
  apply { r.write(2w1, hdr.h.a); r.read(hdr.h.b, 2w1); c.count(2w2); sm.egress_spec = 1; }
""")
NEW_REGISTER_DEFAULT_VERSION = NEW_REGISTER.replace("#define V1MODEL_VERSION 20200408\n", "")
PORT_ID_OLD = program("#include <v1model.p4>\n", "  PortId_t p;\n  apply { }\n")
PORT_ID_NEW = "#define V1MODEL_VERSION 20200408\n" + PORT_ID_OLD
GUARDS = program("#include <v1model.p4>\n#include <core.p4>\n#include <v1model.p4>\n"
                 "#if defined(_CORE_P4_) && defined(_V1_MODEL_P4_)\nconst bit<8> GUARDED = 1;\n"
                 "#endif\n", "  apply { }\n")
VERSION_NEGATIVE = program("#define V1MODEL_VERSION -6419018\n#include <v1model.p4>\n",
                           "  apply { }\n")
VERSION_UNKNOWN = program("#define V1MODEL_VERSION 20000101\n#include <v1model.p4>\n",
                          "  apply { }\n")
VERSION_TOO_NEW = program("#define V1MODEL_VERSION 20990101\n#include <v1model.p4>\n",
                          "  apply { }\n")
STATIC_ASSERT_OK = program(
    "#include <v1model.p4>\n"
    "const bool ok = static_assert(V1MODEL_VERSION >= 20180101, \"v1model too old\");\n",
    "  apply { static_assert(8w1 + 8w1 == 8w2); sm.egress_spec = 1; }\n")
STATIC_ASSERT_FALSE = program(
    "#include <v1model.p4>\n"
    "const bool ok = static_assert(V1MODEL_VERSION >= 20200408, \"needs v1model 20200408\");\n",
    "  apply { static_assert(3 == 1); }\n")
STATIC_ASSERT_RUNTIME = program("#include <v1model.p4>\n",
                                "  apply { static_assert(hdr.h.a == 1); }\n")
DEPRECATED = program("#include <v1model.p4>\n", """
  Checksum16() ck;
  action drop() { mark_to_drop(); }
  apply {
    hdr.h.c = ck.get({hdr.h.a, hdr.h.b});
    sm.egress_spec = 1;
    if (hdr.h.a == 0xff) { drop(); }
  }
""")

# (source, p4c accepts it)
VERDICTS = {
    "old_register": (OLD_REGISTER, True),
    "new_register": (NEW_REGISTER, True),
    "new_register_default_version": (NEW_REGISTER_DEFAULT_VERSION, False),
    "port_id_old": (PORT_ID_OLD, False),
    "port_id_new": (PORT_ID_NEW, True),
    "guards": (GUARDS, True),
    "version_negative": (VERSION_NEGATIVE, False),
    "version_unknown": (VERSION_UNKNOWN, False),
    "version_too_new": (VERSION_TOO_NEW, False),
    "static_assert_ok": (STATIC_ASSERT_OK, True),
    "static_assert_false": (STATIC_ASSERT_FALSE, False),
    "static_assert_runtime": (STATIC_ASSERT_RUNTIME, False),
    "deprecated": (DEPRECATED, True),
}


def accepts(src: str) -> bool:
    try:
        compile_source(src, filename="m.p4")
    except P4Error:
        return False
    return True


@pytest.mark.parametrize("name", sorted(VERDICTS))
def test_accepts_what_p4c_accepts(name):
    src, p4c_accepts = VERDICTS[name]
    assert accepts(src) is p4c_accepts


@pytest.mark.skipif(shutil.which("p4test") is None, reason="p4c (p4test) is not installed")
@pytest.mark.parametrize("name", sorted(VERDICTS))
def test_verdicts_agree_with_installed_p4c(name, tmp_path):
    src, p4c_accepts = VERDICTS[name]
    path = tmp_path / f"{name}.p4"
    path.write_text(src)
    run = subprocess.run(["p4test", "--pp", str(tmp_path / "out.p4"), str(path)],
                         capture_output=True, text=True, timeout=120)
    assert (run.returncode == 0) is p4c_accepts, run.stderr


def test_default_version_is_the_first_one():
    prog = compile_source(OLD_REGISTER, filename="m.p4")
    assert constant(prog, "__v1model_version") == 20180101
    # register<T> with bit<32> indexes
    reg = prog.types["register"]
    assert [tv.name for tv in reg.type_params] == ["T"]
    read = reg.methods_named("read")[0]
    assert str(read.params[1].type) == "bit<32>"


def test_a_defined_version_selects_the_new_signatures():
    prog = compile_source(NEW_REGISTER, filename="m.p4")
    assert constant(prog, "__v1model_version") == 20200408
    assert [tv.name for tv in prog.types["register"].type_params] == ["T", "I"]
    assert [tv.name for tv in prog.types["counter"].type_params] == ["I"]
    sm = prog.types["standard_metadata_t"]
    assert str(sm.field_named("egress_spec").type) == "bit<9>"  # PortId_t is a typedef


def test_register_with_the_old_signature_needs_one_type_argument():
    assert any("takes 1 type argument" in m for m in messages(NEW_REGISTER_DEFAULT_VERSION))


def test_guards_make_double_inclusion_harmless_and_are_visible():
    assert constant(compile_source(GUARDS, filename="m.p4"), "GUARDED") == 1


@pytest.mark.parametrize(("src", "message"), [
    (VERSION_NEGATIVE, "-6419018: expected v1model version to be a non-negative number"),
    (VERSION_UNKNOWN, "20000101: unknown v1model version; initial supported version is "
                      "20180101, latest is 20200408"),
    (VERSION_TOO_NEW, "20990101: unknown v1model version; initial supported version is "
                      "20180101, latest is 20200408"),
])
def test_invalid_versions_are_diagnosed_as_p4c_does(src, message):
    assert messages(src) == [message]


def test_static_assert_is_evaluated_at_compile_time():
    prog = compile_source(STATIC_ASSERT_OK, filename="m.p4")
    assert constant(prog, "ok") is True
    assert messages(STATIC_ASSERT_FALSE) == ["static_assert failed: needs v1model 20200408",
                                             "static_assert failed"]
    assert messages(STATIC_ASSERT_RUNTIME) == ["static_assert needs a compile-time condition"]


def test_static_assert_statement_runs_as_nothing():
    sw = Switch(compile_source(STATIC_ASSERT_OK, filename="m.p4"))
    assert sw.process_packet(0, bytes([1, 2, 0, 0])) == [(1, bytes([1, 2, 0, 0]))]


def test_programs_for_the_old_version_run():
    sw = Switch(compile_source(OLD_REGISTER, filename="m.p4"))
    assert sw.process_packet(0, bytes([7, 0, 0, 0])) == [(1, bytes([7, 7, 0, 0]))]
    assert sw.registers["C.r"].values[1] == 7
    assert sw.counters["C.c"].packets[2] == 1


def test_deprecated_declarations_warn_and_run():
    prog = compile_source(DEPRECATED, filename="m.p4")
    warned = [w.message for w in prog.warnings if "deprecated" in w.message]
    assert "'Checksum16' is deprecated: Please use verify_checksum/update_checksum instead." \
        in warned
    assert "'mark_to_drop' is deprecated: Please use mark_to_drop(standard_metadata) instead." \
        in warned
    sw = Switch(prog)
    # one's complement sum of 0x1234 is 0x1234, its complement 0xedcb (RFC 1071)
    assert sw.process_packet(0, bytes([0x12, 0x34, 0, 0])) == [(1, bytes([0x12, 0x34, 0xED, 0xCB]))]
    assert sw.process_packet(0, bytes([0xFF, 0, 0, 0])) == []  # mark_to_drop() dropped it
