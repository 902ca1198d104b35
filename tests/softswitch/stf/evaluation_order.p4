// Evaluation order (P4_16 spec 8.1), the calling convention (6.8) and exit (12.5.5).
#include <core.p4>
#include <v1model.p4>
header in_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
header out_t { bit<8> r0; bit<8> r1; bit<8> r2; bit<8> r3; bit<8> r4; bit<8> r5; bit<8> r6; bit<8> r7; }
header e_t { bit<8> a; bit<8> b; }
struct s_t { bit<8> x; bit<8> y; }
struct headers_t { in_t i; out_t o; e_t e; }
struct meta_t { bit<8> m; bit<8> n; }
bit<8> inc(inout bit<8> v) { v = v + 1; return v; }
bit<8> set10(inout bit<8> z) { z = 10; return 5; }
bit<8> addto(inout bit<8> x, in bit<8> y) { x = x + y; return 0; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.i); transition accept; }
}
control NoCk(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ig(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    s_t v;
    action act(inout s_t s) { s.x = 5; hdr.o.r3 = v.x; }
    action two(inout e_t p, inout e_t q) { p.a = 9; q.b = q.a; }
    action a(inout bit<8> x) { x = 7; exit; }
    apply {
        hdr.o.setValid();
        sm.egress_spec = 1;
        meta.m = hdr.i.a;
        hdr.o.r0 = meta.m * 16 + inc(meta.m);
        meta.n = hdr.i.b;
        if (meta.n == 0 && inc(meta.n) == 1) { hdr.o.r1 = 1; } else { hdr.o.r1 = meta.n; }
        meta.m = 1;
        addto(meta.m, set10(meta.m));
        hdr.o.r2 = meta.m;
        v.x = 1; act(v); hdr.o.r4 = v.x;
        hdr.e.setValid(); hdr.e.a = 3; hdr.e.b = 0; two(hdr.e, hdr.e);
        hdr.o.r5 = hdr.e.a; hdr.o.r6 = hdr.e.b;
        a(hdr.o.r7);
        hdr.o.r7 = 100;
    }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.i); pkt.emit(hdr.o); } }
V1Switch(P(), NoCk(), Ig(), Eg(), NoCk(), D()) main;
