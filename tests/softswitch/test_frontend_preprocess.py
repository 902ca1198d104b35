"""Front end preprocessing: includes, macros, conditionals, and diagnostics mapped to the
original file:line."""

import os

import pytest

from softswitch.frontend import P4Error, compile_file, compile_source
from softswitch.frontend import ast as A

MAIN_TAIL = """
struct m_t { bit<8> x; }
parser P(packet_in pkt, out hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  state start { pkt.extract(hdr.h); transition accept; }
}
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control E(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control V(inout hs hdr, inout m_t meta) { apply { } }
control D(packet_out pkt, in hs hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), C(), E(), V(), D()) main;
"""


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def constants(prog):
    return {d.name: d.value.const_value for d in prog.ast.decls if isinstance(d, A.ConstantDecl)}


def test_relative_and_system_includes(tmp_path):
    write(tmp_path / "lib" / "hdrs.p4",
          '#include "inner.p4"\nheader h_t { bit<W> a; }\nstruct hs { h_t h; }\n')
    write(tmp_path / "lib" / "inner.p4", "#define W 8\nconst bit<8> FROM_INNER = 7;\n")
    main = write(tmp_path / "main.p4", '#include <v1model.p4>\n#include "lib/hdrs.p4"\n'
                 + MAIN_TAIL)
    prog = compile_file(main)
    assert constants(prog)["FROM_INNER"] == 7
    assert prog.types["h_t"].fields[0].type.width == 8


def test_include_dirs_option(tmp_path):
    write(tmp_path / "inc" / "extra.p4", "const bit<8> EXTRA = 3;\n")
    src = "#include <core.p4>\n#include <extra.p4>\n"
    with pytest.raises(P4Error) as ei:
        compile_source(src, filename="m.p4")
    assert "include file 'extra.p4' not found" in ei.value.diagnostics[0].message
    assert ei.value.diagnostics[0].line == 2
    # with the directory given, it compiles (without a main package: a warning)
    prog = compile_source(src, filename="m.p4", include_dirs=[str(tmp_path / "inc")])
    assert prog.main is None


def test_object_and_function_macros_conditionals_and_undef():
    src = """#include <v1model.p4>
#define A 3
#define TWICE(x) ((x) * 2)
#if A > 2 && defined(TWICE)
const bit<8> C1 = TWICE(A);
#elif A == 2
const bit<8> C1 = 100;
#else
const bit<8> C1 = 101;
#endif
#ifdef NOT_DEFINED
const bit<8> C2 = 1;
#else
const bit<8> C2 = 2;
#endif
#undef A
#ifndef A
const bit<8> C3 = 9;
#endif
const bit<8> C4 = FROM_CLI;
header h_t { bit<8> a; }
struct hs { h_t h; }
""" + MAIN_TAIL
    prog = compile_source(src, filename="m.p4", defines={"FROM_CLI": "42"})
    assert {k: v for k, v in constants(prog).items() if k.startswith("C")} == {
        "C1": 6, "C2": 2, "C3": 9, "C4": 42}


def test_error_directive():
    with pytest.raises(P4Error) as ei:
        compile_source("#define X 1\n#if X\n#error X must not be set\n#endif\n", filename="m.p4")
    d = ei.value.diagnostics[0]
    assert (d.file, d.line) == ("m.p4", 3)
    assert d.message == "#error X must not be set"


def test_diagnostic_in_included_file_points_into_it(tmp_path):
    write(tmp_path / "bad.p4", "// line 1\n\nconst bit<8> Z = true;\n")
    main = write(tmp_path / "main.p4", '#include "bad.p4"\n')
    with pytest.raises(P4Error) as ei:
        cwd = os.getcwd()
        os.chdir(tmp_path)
        try:
            compile_file(main)
        finally:
            os.chdir(cwd)
    d = ei.value.diagnostics[0]
    assert (d.file, d.line, d.col) == ("bad.p4", 3, 18)
    assert d.message == "expected bit<8>, got bool"
    assert d.source_line == "const bit<8> Z = true;"


def test_line_numbers_after_includes_and_multiline_comments():
    src = """#include <v1model.p4>
/* a comment
   over three lines */
header h_t { bit<8> a; }


struct hs { h_t h; }
const bit<8> BAD = 8w1 + 16w2;
"""
    with pytest.raises(P4Error) as ei:
        compile_source(src, filename="m.p4")
    d = ei.value.diagnostics[0]
    assert (d.file, d.line, d.col) == ("m.p4", 8, 20)


def test_missing_file():
    with pytest.raises(P4Error) as ei:
        compile_file("does/not/exist.p4")
    assert ei.value.diagnostics[0].message.startswith("cannot read file")
