"""A small v1model program around an ingress body, for engine semantics tests.

The packet is `in_t` (four bytes a, b, c, d); ingress makes `out_t` valid and the
deparser emits both, so a test reads its results from the eight `r` bytes.
"""

from __future__ import annotations

from softswitch import Switch, compile_source

TEMPLATE = r"""
#include <core.p4>
#include <v1model.p4>
header in_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
header out_t { bit<8> r0; bit<8> r1; bit<8> r2; bit<8> r3;
               bit<8> r4; bit<8> r5; bit<8> r6; bit<8> r7; }
%(types)s
struct headers_t { in_t i; out_t o; %(fields)s }
struct meta_t { bit<8> m; bit<8> n; }
%(top)s
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.i); transition accept; }
}
control NoCk(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ig(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
%(decls)s
    apply {
        hdr.o.setValid();
        sm.egress_spec = 1;
%(body)s
    }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.i); pkt.emit(hdr.o); } }
V1Switch(P(), NoCk(), Ig(), Eg(), NoCk(), D()) main;
"""


def switch(body: str, decls: str = "", top: str = "", types: str = "", fields: str = "") -> Switch:
    """A switch running `body` in ingress (with control-level `decls`, top-level `top`)."""
    src = TEMPLATE % {"body": body, "decls": decls, "top": top, "types": types,
                      "fields": fields}
    return Switch(compile_source(src, "harness.p4"))


def results(sw: Switch, a: int = 0, b: int = 0, c: int = 0, d: int = 0) -> list[int]:
    """The eight result bytes r0..r7 for a packet (a, b, c, d); the packet must come out."""
    out = sw.process_packet(0, bytes([a, b, c, d]))
    assert len(out) == 1 and out[0].port == 1, out
    return list(out[0].data[4:12])


def run(body: str, a: int = 0, b: int = 0, c: int = 0, d: int = 0, **kw: str) -> list[int]:
    """results() of a fresh switch running `body`."""
    return results(switch(body, **kw), a, b, c, d)
