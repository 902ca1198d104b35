"""Named arguments are bound by name, not by position (P4_16 spec 8.20 "Method invocations
and function calls": arguments may be named, then all of them are, each parameter at most
once; 6.8.2 "Optional parameters").

Every call form is written with its arguments in another order than the parameters, and
the program is run: a swap would change the packet that comes out.
"""

import shutil
import subprocess

import pytest

from softswitch import Switch
from softswitch.frontend import P4Error, compile_source

HEAD = """
#define V1MODEL_VERSION 20200408
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct hs { h_t h; }
struct m_t { bit<8> x; }
parser P(packet_in pkt, out hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout hs hdr, inout m_t meta) { apply { } }
control D(packet_out pkt, in hs hdr) { apply { pkt.emit(hdr.h); } }
bit<8> minus(in bit<8> x, in bit<8> y) { return x - y; }
control Sub(inout bit<8> target, in bit<8> value) { apply { target = value; } }
"""

INGRESS = """
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  register<bit<8>, bit<32>>(size = 4) r;
  Sub() sub;
  action set_b(bit<8> first, bit<8> second) { hdr.h.b = first - second; }
  apply {
    hdr.h.a = minus(y = 8w1, x = 8w10);                      // 9
    set_b(second = 8w2, first = 8w7);                         // 5
    r.write(value = 8w42, index = 32w3);
    r.read(index = 32w3, result = hdr.h.c);                   // 42
    sub.apply(value = 8w99, target = meta.x);
    sm.egress_spec = 1;
  }
}
"""
# egress copies meta.x into hdr.h.d: only the real egress does, so a swap of ig/eg shows
EGRESS = """
control E(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {
  apply { hdr.h.d = meta.x; }
}
"""


def run(main: str) -> bytes:
    sw = Switch(compile_source(HEAD + INGRESS + EGRESS + main, filename="named.p4"))
    out = sw.process_packet(0, bytes(4))
    assert len(out) == 1
    return out[0].data


def test_every_call_form_binds_by_name():
    assert run("V1Switch(P(), V(), C(), E(), V(), D()) main;") == bytes([9, 5, 42, 99])


def test_package_arguments_in_another_order():
    main = "V1Switch(dep = D(), ck = V(), eg = E(), ig = C(), vr = V(), p = P()) main;"
    assert run(main) == bytes([9, 5, 42, 99])


def test_named_package_arguments_pick_the_blocks_by_parameter_name():
    src = HEAD + INGRESS + EGRESS + (
        "V1Switch(dep = D(), ck = V(), eg = E(), ig = C(), vr = V(), p = P()) main;")
    main = compile_source(src, filename="named.p4").main
    assert (main.parser.name, main.ingress.name, main.egress.name, main.deparser.name) == (
        "P", "C", "E", "D")


ERRORS = {
    "unknown": ("hdr.h.a = minus(x = 8w1, z = 8w2);", "'minus' has no parameter 'z'"),
    "twice": ("hdr.h.a = minus(x = 8w1, x = 8w2);", "argument 'x' given twice"),
    "mixed": ("hdr.h.a = minus(8w1, y = 8w2);",
              "'minus': do not mix named and positional arguments"),
    "missing": ("hdr.h.a = minus(y = 8w2);", "'minus': missing argument 'x'"),
}


def _error_program(stmt: str) -> str:
    return HEAD + f"""
control C(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {{ apply {{ {stmt} }} }}
control E(inout hs hdr, inout m_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}
V1Switch(P(), V(), C(), E(), V(), D()) main;
"""


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_wrong_named_arguments_are_errors(case):
    stmt, message = ERRORS[case]
    with pytest.raises(P4Error) as ei:
        compile_source(_error_program(stmt), filename="named.p4")
    assert message in [d.message for d in ei.value.diagnostics]


def test_unknown_package_argument_name():
    src = HEAD + INGRESS + EGRESS + (
        "V1Switch(dep = D(), ck = V(), eg = E(), ingress = C(), vr = V(), p = P()) main;")
    with pytest.raises(P4Error) as ei:
        compile_source(src, filename="named.p4")
    assert "package 'V1Switch' has no parameter 'ingress'" in [
        d.message for d in ei.value.diagnostics]


@pytest.mark.skipif(shutil.which("p4test") is None, reason="p4c (p4test) is not installed")
@pytest.mark.parametrize("case", sorted(ERRORS) + ["ok"])
def test_p4c_agrees(case, tmp_path):
    if case == "ok":
        src, accepted = HEAD + INGRESS + EGRESS + (
            "V1Switch(dep = D(), ck = V(), eg = E(), ig = C(), vr = V(), p = P()) main;"), True
    else:
        src, accepted = _error_program(ERRORS[case][0]), False
    path = tmp_path / "named.p4"
    path.write_text(src)
    run_ = subprocess.run(["p4test", str(path)], capture_output=True, text=True, timeout=120)
    assert (run_.returncode == 0) is accepted, run_.stderr
