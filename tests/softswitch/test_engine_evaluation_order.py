"""Evaluation order (P4_16 spec 8.1) and the calling convention (spec 6.8, 12.1).

Every expected value is worked out by hand from the spec; a comment gives the
steps. The side effects come from functions with `inout` parameters, whose
copy-out is the effect a compiler may wrongly move.
"""

from engine_harness import run

# inc(v): v += 1 and returns the new value; dec likewise
FUNCS = """
bit<8> inc(inout bit<8> v) { v = v + 1; return v; }
bit<8> dec(inout bit<8> v) { v = v - 1; return v; }
bit<8> set10(inout bit<8> z) { z = 10; return 5; }
bit<8> addto(inout bit<8> x, in bit<8> y) { x = x + y; return 0; }
"""


def test_operands_left_to_right():
    # spec 8.1: `m * 16 + inc(m)` reads m (3) before inc runs: 48 + 4 = 52
    # (hoisting the call first would give 4 * 16 + 4 = 68)
    r = run("meta.m = hdr.i.a; hdr.o.r0 = meta.m * 16 + inc(meta.m); hdr.o.r1 = meta.m;",
            a=3, top=FUNCS)
    assert r[:2] == [52, 4]


def test_call_before_the_operand_it_changes():
    # inc(m) first: m becomes 4 and the right operand reads 4: 4 * 16 + 4 = 68
    r = run("meta.m = hdr.i.a; hdr.o.r0 = inc(meta.m) * 16 + meta.m;", a=3, top=FUNCS)
    assert r[0] == 68


def test_and_skips_the_right_operand():
    # spec 8.1: && evaluates its right operand only when the left is true
    body = """meta.m = hdr.i.a;
        if (meta.m == 0 && inc(meta.m) == 1) { hdr.o.r0 = 1; }
        hdr.o.r1 = meta.m;"""
    assert run(body, a=5, top=FUNCS)[:2] == [0, 5]  # left false: inc never runs
    assert run(body, a=0, top=FUNCS)[:2] == [1, 1]  # left true: inc runs once


def test_or_skips_the_right_operand():
    body = """meta.m = hdr.i.a;
        hdr.o.r0 = (meta.m != 0 || dec(meta.m) == 0xff) ? 8w1 : 8w2;
        hdr.o.r1 = meta.m;"""
    assert run(body, a=5, top=FUNCS)[:2] == [1, 5]  # left true: dec never runs
    assert run(body, a=0, top=FUNCS)[:2] == [1, 0xFF]  # left false: dec runs (0 - 1 = 255)


def test_conditional_operator_evaluates_one_branch():
    # spec 8.1: `e1 ? e2 : e3` evaluates e1, then only e2 or e3
    body = """meta.m = 10;
        hdr.o.r0 = hdr.i.a == 1 ? inc(meta.m) : dec(meta.m);
        hdr.o.r1 = meta.m;"""
    assert run(body, a=1, top=FUNCS)[:2] == [11, 11]
    assert run(body, a=2, top=FUNCS)[:2] == [9, 9]


def test_conditional_chain_runs_only_the_chosen_branch():
    # a ?: chain whose branches have effects: exactly one inc/dec runs
    body = """meta.m = 10;
        hdr.o.r0 = hdr.i.a == 1 ? inc(meta.m) : hdr.i.a == 2 ? dec(meta.m)
                 : hdr.i.a == 3 ? inc(meta.m) + inc(meta.m) : 8w77;
        hdr.o.r1 = meta.m;"""
    assert run(body, a=1, top=FUNCS)[:2] == [11, 11]
    assert run(body, a=2, top=FUNCS)[:2] == [9, 9]
    assert run(body, a=3, top=FUNCS)[:2] == [23, 12]  # 11 + 12, m incremented twice
    assert run(body, a=4, top=FUNCS)[:2] == [77, 10]


def test_arguments_left_to_right_with_copy_in():
    # The spec's own example (6.8): f(a, g(a)). a (1) is copied in for x before g runs;
    # g sets a to 10 and returns 5; f computes x = 1 + 5 = 6 and copies it out: a = 6.
    body = """meta.m = 1;
        addto(meta.m, set10(meta.m));
        hdr.o.r0 = meta.m;"""
    assert run(body, top=FUNCS)[0] == 6


def test_assignment_evaluates_the_left_side_first():
    # spec 12.1: the left side is evaluated to an l-value before the right side runs;
    # the index reads m (1) before inc makes it 2: r[1] gets the value 2
    body = """meta.m = 1;
        hdr.s[meta.m].x = inc(meta.m);
        hdr.o.r0 = hdr.s[0].x; hdr.o.r1 = hdr.s[1].x; hdr.o.r2 = hdr.s[2].x;"""
    r = run(body, top=FUNCS, types="header e_t { bit<8> x; }", fields="e_t[3] s;")
    assert r[:3] == [0, 2, 0]


def test_out_argument_lvalue_saved_before_the_call():
    # spec 6.8 step 3: the l-value of an out argument is fixed before the call, so the
    # element written is s[1] even though the call changes m to 2 first (left to right)
    body = """meta.m = 1;
        addto(hdr.s[meta.m].x, inc(meta.m));
        hdr.o.r0 = hdr.s[1].x; hdr.o.r1 = hdr.s[2].x; hdr.o.r2 = meta.m;"""
    r = run(body, top=FUNCS, types="header e_t { bit<8> x; }", fields="e_t[3] s;")
    # s[1].x was 0: addto adds inc's result (2): s[1].x = 2
    assert r[:3] == [2, 0, 2]


def test_compound_assignment_evaluates_the_left_side_once():
    # spec 12.1: `A += B` evaluates A once: inc runs once, s[1] gets 0 + 7
    body = """meta.m = 0;
        hdr.s[inc(meta.m)].x += 7;
        hdr.o.r0 = hdr.s[0].x; hdr.o.r1 = hdr.s[1].x; hdr.o.r2 = hdr.s[2].x;
        hdr.o.r3 = meta.m;"""
    r = run(body, top=FUNCS, types="header e_t { bit<8> x; }", fields="e_t[3] s;")
    assert r[:4] == [0, 7, 0, 1]


def test_compound_assignment_operators():
    # spec 12.1: lhs op= rhs is lhs = lhs op rhs, with bit<8> wrap-around (spec 8.5)
    body = """bit<8> x = hdr.i.a;
        x += 10;  hdr.o.r0 = x;
        x -= 20;  hdr.o.r1 = x;
        x *= 3;   hdr.o.r2 = x;
        x |= 0x0f; hdr.o.r3 = x;
        x &= 0x3c; hdr.o.r4 = x;
        x ^= 0xff; hdr.o.r5 = x;
        x <<= 2;  hdr.o.r6 = x;
        x >>= 1;  x |+|= 200; hdr.o.r7 = x;"""
    # a = 15: 25, 5, 15, 0x0f, 0x0c, 0xf3, 0xcc, (0x66 + 200 saturates) 255
    assert run(body, a=15) == [25, 5, 15, 0x0F, 0x0C, 0xF3, 0xCC, 0xFF]


def test_table_apply_in_a_condition_runs_once_and_in_order():
    # `t.apply().hit` is a call with effects (spec 14.2.2): in `a && t.apply().hit` the table
    # runs only when a is true, and before the right operand of the enclosing expression
    decls = """
    action mark() { meta.n = meta.n + 1; }
    table t { key = { hdr.i.a: exact; } actions = { mark; } default_action = mark(); }"""
    body = """meta.n = 0;
        if (hdr.i.b == 1 && t.apply().hit) { hdr.o.r0 = 1; }
        hdr.o.r1 = meta.n;"""
    assert run(body, b=0, decls=decls)[:2] == [0, 0]  # table not applied
    assert run(body, b=1, decls=decls)[:2] == [0, 1]  # applied once: a miss runs mark()
