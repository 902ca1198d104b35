"""Copy-in/copy-out (P4_16 spec 6.8) and `exit` (spec 12.5.5 "Exit statement").

Arguments are copied into the callee and the out/inout ones copied back after
it, also when the callee ends with `exit`. An argument is never shared with the
caller while the callee runs: the tests below tell a copy from an alias.
"""

from engine_harness import run

HDR = "header e_t { bit<8> a; bit<8> b; }"


def test_exit_in_an_action_copies_inout_arguments_back():
    # spec 12.5.5: copy-out of the enclosing action's inout parameters still happens
    decls = "action a(inout bit<8> x) { x = 7; exit; }"
    body = "hdr.o.r0 = 1; a(hdr.o.r1); hdr.o.r2 = 9;"  # r2 never written: exit ends ingress
    assert run(body, decls=decls)[:3] == [1, 7, 0]


def test_exit_in_a_nested_action_copies_out_at_every_level():
    decls = """action inner(inout bit<8> y) { y = y + 1; exit; }
    action outer(inout bit<8> x) { x = 10; inner(x); x = 99; }"""
    # outer sets x = 10, inner makes it 11 and exits: both copy out, the 99 never happens
    assert run("outer(hdr.o.r0);", decls=decls)[0] == 11


def test_exit_in_a_table_action_copies_out_the_bound_argument():
    decls = """action set_and_exit(inout bit<8> x, bit<8> v) { x = v; exit; }
    table t { key = { hdr.i.a: exact; } actions = { set_and_exit(hdr.o.r0); }
              default_action = set_and_exit(hdr.o.r0, 42); }"""
    assert run("t.apply(); hdr.o.r1 = 5;", decls=decls)[:2] == [42, 0]


def test_exit_in_a_sub_control_copies_out_its_scalar_parameters():
    # the sub-control's exit ends ingress too (spec 12.5.5), after copying x and y out
    top = """control Sub(inout bit<8> x, out bit<8> y) {
        apply { x = x + 1; y = 3; exit; }
    }"""
    r = run("hdr.o.r0 = 0; sub.apply(hdr.o.r0, hdr.o.r1); hdr.o.r2 = 1;", top=top,
            decls="Sub() sub;")
    assert r[:3] == [1, 3, 0]


def test_inout_struct_argument_is_a_copy_not_an_alias():
    # the action reads the caller's variable by name while changing its parameter: with
    # copy-in the name still shows the old value (1); an alias would show 5
    types = "struct s_t { bit<8> x; bit<8> y; }"
    decls = """s_t v;
    action act(inout s_t s) { s.x = 5; hdr.o.r0 = v.x; }"""
    body = "v.x = 1; act(v); hdr.o.r1 = v.x;"
    assert run(body, decls=decls, types=types)[:2] == [1, 5]


def test_two_inout_arguments_on_the_same_header_are_copied_out_left_to_right():
    # p and q are separate copies of hdr.e; copy-out writes p then q, so q's content wins:
    # q.b = q.a reads q's own a (3), never p's 9
    types = HDR
    decls = "action two(inout e_t p, inout e_t q) { p.a = 9; q.b = q.a; }"
    body = "hdr.e.setValid(); hdr.e.a = 3; hdr.e.b = 0; two(hdr.e, hdr.e); " \
           "hdr.o.r0 = hdr.e.a; hdr.o.r1 = hdr.e.b;"
    assert run(body, decls=decls, types=types, fields="e_t e;")[:2] == [3, 3]


def test_out_header_parameter_starts_invalid():
    # spec 6.8: an out parameter of header type is invalid when the callee starts, and that
    # invalid header is copied back
    decls = "action clear(out e_t x) { hdr.o.r0 = x.isValid() ? 8w1 : 8w2; }"
    body = "hdr.e.setValid(); clear(hdr.e); hdr.o.r1 = hdr.e.isValid() ? 8w1 : 8w2;"
    assert run(body, decls=decls, types=HDR, fields="e_t e;")[:2] == [2, 2]


def test_in_header_argument_keeps_its_value_while_the_caller_changes():
    decls = "action show(in e_t x) { hdr.e.a = 9; hdr.o.r0 = x.a; }"
    body = "hdr.e.setValid(); hdr.e.a = 3; show(hdr.e); hdr.o.r1 = hdr.e.a;"
    assert run(body, decls=decls, types=HDR, fields="e_t e;")[:2] == [3, 9]


def test_function_returning_a_struct_returns_a_copy():
    top = """struct s_t { bit<8> x; }
    s_t pick(in s_t a) { return a; }"""
    body = "s_t p = {1}; s_t q = pick(p); q.x = 2; hdr.o.r0 = p.x; hdr.o.r1 = q.x;"
    assert run(body, top=top)[:2] == [1, 2]


def test_sub_control_modifies_headers_in_place_for_the_caller():
    # a sub-control's inout argument comes back whole (copy-out) whatever path it took
    top = """control Sub(inout headers_t h) { apply { h.o.r3 = h.i.a + 1; } }"""
    assert run("Sub.apply(hdr);", a=4, top=top)[3] == 5
