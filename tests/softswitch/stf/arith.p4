// Expressions: wrap-around bit<W>, signed int<W>, saturating |+| |-|, shifts,
// slices, concatenation, casts, comparisons, functions, typedef / type,
// constants, struct initialisers and setValid on an output header.
#include <core.p4>
#include <v1model.p4>

#define OUT_PORT 2
const bit<8> LOW_NIBBLE = 0x0F;

typedef bit<8> byte_t;
type bit<9> port_t;
const port_t EGRESS = (port_t)(bit<9>)OUT_PORT;

header in_t {
    byte_t a;
    byte_t b;
    int<8> sa;
    int<8> sb;
}

header out_t {
    bit<8>  add;    // a + b (mod 256)
    bit<8>  sub;    // a - b (mod 256)
    bit<8>  mul;    // a * b (mod 256)
    bit<8>  sadd;   // a |+| b
    bit<8>  ssub;   // a |-| b
    bit<8>  ssadd;  // sa |+| sb
    bit<8>  sssub;  // sa |-| sb
    bit<8>  shl;    // a << 3
    bit<8>  shr;    // a >> 3
    bit<8>  sshr;   // sa >> 2 (arithmetic)
    bit<4>  hi;     // a[7:4]
    bit<4>  lo;     // b[3:0]
    bit<16> cat;    // a ++ b
    bit<16> sext;   // (bit<16>)(int<16>)sa
    bit<16> zext;   // (bit<16>)a
    bit<8>  logic;  // (a & 0xF0) | (b ^ LOW_NIBBLE), then ~ of it
    bit<8>  cmp;    // flags, see below
    bit<8>  fmax;   // max8(a, b)
    bit<8>  neg;    // -a
}

struct pair_t {
    bit<8> x;
    bit<8> y;
}

struct headers_t {
    in_t  inp;
    out_t res;
}

struct meta_t { }

bit<8> max8(in bit<8> x, in bit<8> y) {
    return x > y ? x : y;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.inp);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        pair_t p = { hdr.inp.a, hdr.inp.b };
        pair_t q = { x = hdr.inp.sa == hdr.inp.sb ? 8w1 : 8w0, y = 0 };
        hdr.res.setValid();
        hdr.res.add = p.x + p.y;
        hdr.res.sub = p.x - p.y;
        hdr.res.mul = p.x * p.y;
        hdr.res.sadd = p.x |+| p.y;
        hdr.res.ssub = p.x |-| p.y;
        hdr.res.ssadd = (bit<8>)(hdr.inp.sa |+| hdr.inp.sb);
        hdr.res.sssub = (bit<8>)(hdr.inp.sa |-| hdr.inp.sb);
        hdr.res.shl = p.x << 3;
        hdr.res.shr = p.x >> 3;
        hdr.res.sshr = (bit<8>)(hdr.inp.sa >> 2);
        hdr.res.hi = p.x[7:4];
        hdr.res.lo = p.y[3:0];
        hdr.res.cat = p.x ++ p.y;
        hdr.res.sext = (bit<16>)((int<16>)hdr.inp.sa);
        hdr.res.zext = (bit<16>)p.x;
        hdr.res.logic = ~((p.x & 0xF0) | (p.y ^ LOW_NIBBLE));
        bit<8> flags = 0;
        if (p.x < p.y) { flags = flags | 8w1; }                 // unsigned compare
        if (hdr.inp.sa < hdr.inp.sb) { flags = flags | 8w2; }   // signed compare
        if (p.x == p.y) { flags = flags | 8w4; }
        flags[7:7] = q.x[0:0];                                  // slice assignment
        hdr.res.cmp = flags;
        hdr.res.fmax = max8(p.x, p.y);
        hdr.res.neg = -p.x;
        sm.egress_spec = (bit<9>)EGRESS;
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.inp);
        pkt.emit(hdr.res);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
