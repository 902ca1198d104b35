"""Bounded work in every front-end stage (softswitch/frontend/limits.py).

Each hostile input must end in a P4Error located at the user's file and line, with a
message naming the limit, and never in another exception or unbounded work. Programs
at each limit must still compile and run on the engine.
"""

import threading

import pytest

from softswitch.engine import Switch
from softswitch.frontend import P4Error, compile_file, compile_source
from softswitch.frontend.limits import LIMITS


def program(decls: str = "", ingress: str = "", field: str = "", locals_: str = "") -> str:
    return f"""#include <core.p4>
#include <v1model.p4>
header h_t {{ bit<8> a; {field} }}
{decls}
struct H {{ h_t h; }}
struct M {{ bit<8> x; bit<8> y; }}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t s) {{
    state start {{ p.extract(h.h); transition accept; }}
}}
control V(inout H h, inout M m) {{ apply {{ }} }}
control I(inout H h, inout M m, inout standard_metadata_t s) {{
    {locals_}
    apply {{
        {ingress}
    }}
}}
control E(inout H h, inout M m, inout standard_metadata_t s) {{ apply {{ }} }}
control C(inout H h, inout M m) {{ apply {{ }} }}
control D(packet_out p, in H h) {{ apply {{ p.emit(h.h); }} }}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


INGRESS_LINE = program().splitlines().index("    apply {") + 2  # the line `ingress` lands on


def errors_of(text: str, **kw) -> list:
    with pytest.raises(P4Error) as e:
        compile_source(text, filename="user.p4", **kw)
    return [d for d in e.value.diagnostics if d.severity == "error"]


def single_error(text: str, **kw):
    errs = errors_of(text, **kw)
    assert len(errs) == 1, [str(d) for d in errs]
    return errs[0]


# ---------------------------------------------------------------- self-contained configs


def test_self_contained_refuses_a_host_file_that_would_compile(tmp_path):
    host_file = tmp_path / "prog.p4"
    host_file.write_text(program())
    compile_file(host_file)  # a valid program: if it were read, it would compile
    d = single_error(f'#include "{host_file}"\n', self_contained=True)
    assert (d.file, d.line) == ("user.p4", 1)
    assert f'#include "{host_file}" is refused' in d.message
    assert "core.p4" in d.message and "v1model.p4" in d.message


def test_self_contained_never_resolves_relative_to_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "mine.p4").write_text(program())
    monkeypatch.chdir(tmp_path)
    d = single_error('#include "mine.p4"\n', self_contained=True)
    assert d.message.startswith('#include "mine.p4" is refused')
    compile_source('#include "mine.p4"\n', filename="user.p4")  # the CLI mode does resolve it


def test_self_contained_refusal_says_nothing_about_the_file():
    present = single_error('#include "/etc/hostname"\n', self_contained=True).message
    absent = single_error('#include "/no/such/file.p4"\n', self_contained=True).message
    assert present.replace("/etc/hostname", "X") == absent.replace("/no/such/file.p4", "X")


def test_self_contained_refuses_macro_computed_and_device_includes():
    d = single_error('#define F "/dev/zero"\n#include F\n', self_contained=True)
    assert (d.line, d.message.split(" is refused")[0]) == (2, "#include \"/dev/zero\"")
    d = single_error("#include </proc/self/environ>\n", self_contained=True)
    assert "is refused" in d.message


def test_self_contained_serves_the_shipped_includes_from_memory():
    text = program().replace("#include <core.p4>", '#include "core.p4"')
    prog = compile_source(text, filename="user.p4", self_contained=True)
    assert prog.main is not None


def test_cli_include_of_a_device_is_refused():
    d = single_error('#include "/dev/zero"\n')
    assert (d.file, d.line) == ("user.p4", 1) and "not a regular file" in d.message


# ---------------------------------------------------------------- preprocessor


def test_macro_bomb_stops_at_the_expansion_limit():
    bomb = "#define A0 x x\n" + "".join(f"#define A{i} A{i - 1} A{i - 1}\n" for i in range(1, 21))
    d = single_error(bomb + "A20\n")
    assert (d.file, d.line) == ("user.p4", 22)
    assert f"macro expansion exceeds the limit of {LIMITS.macro_tokens} tokens" in d.message


def test_macro_nesting_limit():
    chain = "#define M0 1\n" + "".join(f"#define M{i} M{i - 1}\n" for i in range(1, 101))
    d = single_error(chain + "const bit<8> X = M100;\n")
    assert d.line == 102 and f"macros nested deeper than {LIMITS.macro_depth}" in d.message


def test_if_expression_with_a_huge_shift_is_evaluated_in_64_bits():
    text = "#if (1 << 100000000000) == 0\n#define OK 1\n#endif\nconst bit<8> X = OK;\n" + program()
    compile_source(text, filename="user.p4")


def test_include_cycle_is_named_at_the_directive(tmp_path):
    (tmp_path / "a.p4").write_text('#include "b.p4"\n')
    (tmp_path / "b.p4").write_text('// b\n#include "a.p4"\n')
    main = tmp_path / "main.p4"
    main.write_text('#include "a.p4"\n' + program())
    with pytest.raises(P4Error) as e:
        compile_file(main)
    (d,) = e.value.diagnostics
    assert "include cycle:" in d.message and "(no include guard ends it)" in d.message
    assert d.file.endswith(("a.p4", "b.p4")) and d.line == (1 if d.file.endswith("a.p4") else 2)


def test_include_guards_make_a_cycle_harmless(tmp_path):
    (tmp_path / "a.p4").write_text('#ifndef A\n#define A\n#include "b.p4"\n#endif\n')
    (tmp_path / "b.p4").write_text('#include "a.p4"\nconst bit<8> B = 1;\n')
    main = tmp_path / "main.p4"
    main.write_text('#include "a.p4"\n' + program())
    compile_file(main)


def test_include_depth_limit(tmp_path):
    n = LIMITS.include_depth + 5
    for i in range(n):
        (tmp_path / f"f{i}.p4").write_text(f'#include "f{i + 1}.p4"\n' if i + 1 < n else "\n")
    main = tmp_path / "main.p4"
    main.write_text('#include "f0.p4"\n')
    with pytest.raises(P4Error) as e:
        compile_file(main)
    (d,) = e.value.diagnostics
    assert f"includes nested deeper than {LIMITS.include_depth} files" in d.message
    assert d.file.endswith(".p4") and d.line == 1


def test_source_and_included_file_size_limits(tmp_path):
    big = "// " + "x" * LIMITS.source_bytes + "\n"
    assert "above the limit" in single_error(big).message
    (tmp_path / "big.p4").write_text(big)
    main = tmp_path / "main.p4"
    main.write_text('\n#include "big.p4"\n')
    with pytest.raises(P4Error) as e:
        compile_file(main)
    (d,) = e.value.diagnostics
    assert d.line == 2 and "larger than the limit" in d.message


# ---------------------------------------------------------------- tokens and syntax tree


def test_bracket_nesting_is_reported_at_the_user_line():
    depth = LIMITS.bracket_depth + 1
    d = single_error(program(ingress="m.x = " + "(" * depth + "m.y" + ")" * depth + ";"))
    assert (d.file, d.line) == ("user.p4", INGRESS_LINE)
    assert f"brackets nested deeper than {LIMITS.bracket_depth}" in d.message


def test_syntax_depth_is_reported_at_the_user_line_not_in_core_p4():
    d = single_error(program(ingress="m.x = m.y" + " + m.y" * (LIMITS.syntax_depth + 10) + ";"))
    assert (d.file, d.line) == ("user.p4", INGRESS_LINE)
    assert f"nested deeper than {LIMITS.syntax_depth} levels" in d.message


def test_run_time_expression_depth_limit():
    n = LIMITS.expression_depth
    d = single_error(program(ingress="m.x = m.y" + " + m.y" * (n + 1) + ";"))
    assert d.line == INGRESS_LINE and f"expression nested deeper than {n}" in d.message


def test_constant_chains_are_folded_not_limited():
    compile_source(program(decls="const bit<8> K = 1" + " + 1" * 600 + ";"), filename="user.p4")


def test_statement_depth_limit():
    n = LIMITS.statement_depth
    d = single_error(program(ingress="if (m.y == 1) " * (n + 1) + "m.x = 1;"))
    assert d.line == INGRESS_LINE and f"statements nested deeper than {n}" in d.message


# ---------------------------------------------------------------- values, widths, sizes


@pytest.mark.parametrize("ingress, message", [
    ("m.x = 8w1 << 100000000000;", "shift amount 100000000000 is above the limit"),
    ("m.x = (bit<8>)(1 << 100000000000);", "shift amount 100000000000 is above the limit"),
    ("m.x = (bit<8>)100000000000w1;", "integer literal width 100000000000w1 is above the limit"),
    ("m.x = (bit<8>)0x" + "f" * 300000 + ";", "has more than 1048576 bits"),
])
def test_value_limits(ingress, message):
    d = single_error(program(ingress=ingress))
    assert (d.file, d.line) == ("user.p4", INGRESS_LINE) and message in d.message


def test_named_constants_are_followed():
    d = single_error(program(decls="const int N = 100000000000;", ingress="m.x = 8w1 << N;"))
    assert d.line == INGRESS_LINE and "shift amount 100000000000" in d.message
    squares = "const int A0 = 1 << 60;\n" + "".join(
        f"const int A{i} = A{i - 1} * A{i - 1};\n" for i in range(1, 40))
    d = errors_of(program(decls=squares))[0]
    assert "compile-time value needs more than 1048576 bits" in d.message


def test_long_decimal_literal_is_converted():
    digits = "9" * 5000  # above CPython's one-call conversion limit, below the value limit
    compile_source(program(ingress=f"m.x = (bit<8>){digits};"), filename="user.p4")


@pytest.mark.parametrize("kw, message", [
    ({"decls": "struct S { h_t[100000000] st; }"}, "header stack of 100000000 elements"),
    ({"decls": "const bit<32> N = 1 << 20; struct S { h_t[N] st; }"}, "header stack of 1048576"),
    ({"field": "bit<100000000> big;"}, "width 100000000 is above the limit"),
    ({"locals_": "counter(100000000, CounterType.packets) c;"}, "counter c has 100000000 cells"),
    ({"locals_": "register<bit<32>>(1 << 30) r;"}, "register r has 1073741824 cells"),
])
def test_size_limits(kw, message):
    d = single_error(program(**kw))
    assert d.file == "user.p4" and message in d.message


def test_programs_at_the_limits_compile_and_run():
    n = LIMITS.expression_depth
    text = program(
        decls=f"struct S {{ h_t[{LIMITS.stack_size}] st; }}",
        ingress="m.x = m.y" + " + m.y" * n + ";\n" + "if (m.y == 1) " * LIMITS.statement_depth
        + "m.x = 2;",
        field="bit<4096> wide;")
    prog = compile_source(text, filename="user.p4")
    result: list = []

    def run():  # the P4Runtime server builds engines in worker threads
        result.append(Switch(prog).process_packet(1, bytes(600)))

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert result and len(result[0]) == 1
