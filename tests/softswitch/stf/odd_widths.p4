// Fields that are not byte aligned: wrap-around and saturation at widths 3, 5,
// 12, 4, 7 and 1, a signed int<5>, a concatenation of odd widths, and an
// action with an if statement in its body.
#include <core.p4>
#include <v1model.p4>

header odd_t {
    bit<3>  a;
    bit<5>  b;
    bit<12> c;
    bit<4>  d;
    bit<7>  e;
    bit<1>  f;
}

header res_t {
    int<5> s;     // (int<5>)b + 10, wraps in 5 bits
    bit<11> ab;   // a ++ b ++ 3w7
    bit<8>  big;  // set by an action with an if
}

struct headers_t {
    odd_t odd;
    res_t res;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.odd);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    action classify(bit<12> limit) {
        if (hdr.odd.c > limit) {
            hdr.res.big = 1;
        } else {
            hdr.res.big = 0;
        }
    }

    apply {
        sm.egress_spec = 1;
        hdr.res.setValid();
        hdr.res.s = (int<5>)hdr.odd.b + 10;
        hdr.res.ab = hdr.odd.a ++ hdr.odd.b ++ 3w7;
        classify(0x800);
        hdr.odd.a = hdr.odd.a + 5;
        hdr.odd.b = hdr.odd.b |+| 20;
        hdr.odd.c = hdr.odd.c - 1;
        hdr.odd.d = hdr.odd.d << 1;
        hdr.odd.e = ~hdr.odd.e;
        hdr.odd.f = hdr.odd.f ^ 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.odd);
        pkt.emit(hdr.res);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
