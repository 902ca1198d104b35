"""STF parsing and expectation matching (no P4 program needed)."""

import pytest

from softswitch.engine import Exact, Lpm, Optional, Range, Ternary
from softswitch.stf import StfSyntaxError, _match_value, _nibble_diff, parse_number, parse_stf


def test_parse_numbers():
    assert parse_number("0x0A") == 10
    assert parse_number("0b101") == 5
    assert parse_number("42") == 42
    assert parse_number("10.0.0.1") == 0x0A000001
    assert parse_number("00:11:22:33:44:55") == 0x001122334455
    with pytest.raises(ValueError):
        parse_number("ten")


def test_parse_commands():
    text = """
    # a comment
    add MyIngress.fwd 10 hdr.h.f1:0x****0101 hdr.h.f2:10.0.0.0/8 setb1(val:0x7f, port:2)
    setdefault fwd drop()
    packet 1 00 01 02 03
    expect 2 0001**03$
    expect 3
    wait
    mc_node_create 5 1 2
    check_counter c(3) bytes == 64
    """
    cmds = parse_stf(text)
    ops = [c.op for c in cmds]
    assert ops == ["add", "setdefault", "packet", "expect", "expect", "wait", "mc_node_create", "check_counter"]
    table, prio, keys, (action, args) = cmds[0].args
    assert (table, prio, action) == ("MyIngress.fwd", 10, "setb1")
    assert keys == [("hdr.h.f1", ("ternary", 0x0101, 0xFFFF)), ("hdr.h.f2", ("lpm", 0x0A000000, 8))]
    assert args == [("val", 0x7F), ("port", 2)]
    assert cmds[2].args == (1, bytes([0, 1, 2, 3]))
    assert cmds[3].args == (2, "0001**03", True)
    assert cmds[4].args == (3, None, False)
    assert cmds[6].args == (5, (1, 2))
    assert cmds[7].args == ("c", 3, {"bytes": 64})
    assert cmds[2].line == 5


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("packet 1 0g", 1, "bad hex"),
        ("\n\nfrobnicate 3", 3, "unknown command"),
        ("packet 1 abc", 1, "odd number"),
        ("add t k:1 act(x)", 1, "name:value"),
        ("expect", 1, "missing port"),
        ("packet 1 ab*d", 1, "only allowed in expect"),
    ],
)
def test_malformed_lines_report_line_number(text, line, fragment):
    with pytest.raises(StfSyntaxError) as exc:
        parse_stf(text, "t.stf")
    assert exc.value.line == line
    assert f"t.stf:{line}:" in str(exc.value)
    assert fragment in str(exc.value)


def test_wildcards():
    cmds = parse_stf("add t 5 hdr.a:* hdr.b:0b1*0 act()")
    assert cmds[0].args[2] == [("hdr.a", ("ternary", 0, 0)), ("hdr.b", ("ternary", 0b100, 0b101))]
    assert _match_value("optional", 8, ("ternary", 0, 0)) == Optional(None)
    assert _match_value("range", 8, ("ternary", 0, 0)) == Range(0, 255)


def test_match_values_by_kind():
    assert _match_value("exact", 8, ("value", 3)) == Exact(3)
    assert _match_value("lpm", 32, ("lpm", 0x0A0000FF, 8)) == Lpm(0x0A000000, 8)
    assert _match_value("ternary", 16, ("value", 3)) == Ternary(3, 0xFFFF)
    assert _match_value("range", 16, ("range", 1, 9)) == Range(1, 9)


def test_nibble_diff_marks_differences():
    ok, marks = _nibble_diff("00ff**", "00fe1234", exact=False)
    assert not ok and marks == "   ^"
    ok, _ = _nibble_diff("00ff**", "00ff1234", exact=False)
    assert ok
    ok, marks = _nibble_diff("00ff**", "00ff1234", exact=True)
    assert not ok and marks.endswith("^^")
    ok, _ = _nibble_diff("00ff", "00", exact=False)
    assert not ok
