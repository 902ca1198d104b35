"""Front end robustness: garbage and mutated programs give P4Error, never another exception."""

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from softswitch.frontend import P4Error, compile_source

ROUTER = (Path(__file__).parent / "programs" / "basic_router.p4").read_text()

TOKENS = [
    "header", "struct", "control", "parser", "state", "transition", "select", "apply", "table",
    "key", "actions", "=", "{", "}", "(", ")", "<", ">", ">>", "<<", ";", ":", ",", ".", "bit",
    "int", "varbit", "8w5", "0x1F", "x", "hdr", "h_t", "const", "if", "else", "switch", "default",
    "_", "&&&", "..", "|+|", "++", "[", "]", "@name(\"a\")", "extern", "action", "return", "exit",
    "#include", "#define", "#if", "#endif", "\"str", "/*", "*/", "//", "\n", " ", "typedef",
    "enum", "error", "V1Switch", "main", "true", "!", "~", "?", "-", "+", "*", "/", "%",
]

FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])


def compile_or_p4error(text: str) -> None:
    try:
        compile_source(text, filename="fuzz.p4")
    except P4Error as exc:
        assert exc.diagnostics, "P4Error without diagnostics"
        for d in exc.diagnostics:
            assert "internal error" not in d.message, str(d)
            assert d.line >= 0 and d.col >= 0
            str(d)  # rendering never fails


@FUZZ
@given(st.text(max_size=300))
def test_arbitrary_text(text):
    compile_or_p4error(text)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=80))
def test_token_soup(tokens):
    compile_or_p4error(" ".join(tokens))


@FUZZ
@given(st.data())
def test_mutated_router(data):
    text = ROUTER
    n = len(text)
    op = data.draw(st.sampled_from(["delete", "duplicate", "insert"]))
    i = data.draw(st.integers(0, n - 1))
    j = data.draw(st.integers(i, min(n, i + 40)))
    if op == "delete":
        text = text[:i] + text[j:]
    elif op == "duplicate":
        text = text[:j] + text[i:j] + text[j:]
    else:
        text = text[:i] + " " + data.draw(st.sampled_from(TOKENS)) + " " + text[i:]
    compile_or_p4error(text)


def test_deep_nesting_is_an_error_not_a_crash():
    for text in [
        "const bit<8> X = " + "(" * 3000 + "1" + ")" * 3000 + ";",
        "const bit<8> X = " + "-" * 20000 + "1;",
        "control C() { apply { " + "{" * 20000 + "}" * 20000 + " } }",
        "const bit<8> X = " + "1 + " * 20000 + "1;",
    ]:
        compile_or_p4error(text)


def test_long_expression_chain_compiles():
    src = ROUTER.replace("const bit<16> TYPE_IPV4 = 0x0800;",
                         "const bit<16> TYPE_IPV4 = " + "1 + " * 600 + "0x0800 - 600;")
    prog = compile_source(src, filename="long.p4")
    assert prog.main is not None
