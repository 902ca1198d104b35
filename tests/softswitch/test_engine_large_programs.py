"""Large legal programs: the code generator does not depend on CPython's nesting limits
(100 indentation levels, 200 nested parentheses, the recursion limit, 4,300-digit int
conversions). Each program is correct P4 whose result is worked out by hand."""

import pytest
from engine_harness import results, switch

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("n", [98, 1000])
def test_long_else_if_chain(n):
    body = "if (hdr.i.a == 0) { hdr.o.r0 = 0; }\n" + "".join(
        f"else if (hdr.i.a == {i}) {{ hdr.o.r0 = {i % 256}; hdr.o.r1 = {i // 256}; }}\n"
        for i in range(1, n)) + "else { hdr.o.r0 = 0xff; hdr.o.r1 = 0xff; }"
    body = body.replace("hdr.i.a", "(hdr.i.a ++ hdr.i.b)")  # a 16-bit key
    sw = switch(body)
    last = n - 1
    assert results(sw, a=last >> 8, b=last & 0xFF)[:2] == [last % 256, last // 256]
    assert results(sw, a=0xFF, b=0xFF)[:2] == [0xFF, 0xFF]  # 65535: no branch matches


def test_long_else_if_chain_whose_conditions_need_statements():
    # each condition calls a function with an inout argument: the chain stops at the first
    # true condition, so exactly that many calls run
    top = "bool step(inout bit<8> n, in bit<8> k) { n = n + 1; return k == n; }"
    body = "bit<8> n = 0;\nif (step(n, hdr.i.a)) { hdr.o.r0 = 1; }\n" + "".join(
        f"else if (step(n, hdr.i.a)) {{ hdr.o.r0 = {i}; }}\n" for i in range(2, 120)) + \
        "hdr.o.r1 = n;"
    sw = switch(body, top=top)
    assert results(sw, a=100)[:2] == [100, 100]
    assert results(sw, a=200)[:2] == [0, 119]  # no condition true: all 119 ran


@pytest.mark.parametrize("n", [101, 1000])
def test_sum_of_many_terms(n):
    sw = switch("hdr.o.r0 = " + " + ".join(["hdr.i.a"] * n) + ";")
    assert results(sw, a=7)[0] == (7 * n) % 256


def test_deep_right_nested_sum():
    n = 500  # a + (a + (a + ...)): as deep as it is long, on the other side
    sw = switch("hdr.o.r0 = " + "hdr.i.a + (" * n + "hdr.i.a" + ")" * n + ";")
    assert results(sw, a=3)[0] == (3 * (n + 1)) % 256


def test_long_conjunction_and_conditional_chain():
    conj = " && ".join(f"(hdr.i.a ++ hdr.i.b) != {i}" for i in range(1, 301))
    chain = "".join(f"hdr.i.b == {i} ? 8w{i} : " for i in range(200)) + "8w255"
    sw = switch(f"hdr.o.r0 = ({conj}) ? 8w1 : 8w0; hdr.o.r1 = {chain};")
    assert results(sw, a=0, b=0)[:2] == [1, 0]
    assert results(sw, a=0, b=150)[:2] == [0, 150]  # 150 is among the 300 excluded keys
    assert results(sw, a=1, b=250)[:2] == [1, 255]  # 506 is not; no chain condition holds


def test_literal_of_200000_digits():
    # 10**200000 - 1 is -1 modulo 2**8: truncation keeps the low byte, 0xff (spec 8.9.1)
    sw = switch("hdr.o.r0 = (bit<8>)(" + "9" * 200_000 + ");")
    assert results(sw)[0] == 0xFF


def test_switch_with_many_cases():
    cases = "".join(f"{i}: {{ hdr.o.r0 = {255 - i}; }}\n" for i in range(200))
    sw = switch(f"switch (hdr.i.a) {{ {cases} default: {{ hdr.o.r0 = 7; }} }}")
    assert results(sw, a=199)[0] == 56
    assert results(sw, a=201)[0] == 7
