// hash() with the v1model algorithms as BMv2 computes them (crc16, crc32,
// crc16_custom and crc32_custom with their default parameters, identity,
// csum16, xor16), base + (H mod max), and random() with lo == hi.
// (crcCCITT is a BMv2 algorithm but not a member of v1model's HashAlgorithm.)
#include <core.p4>
#include <v1model.p4>

header in_t {
    bit<32> a;
    bit<16> b;
    bit<8>  c;
    bit<8>  d;
}

header out_t {
    bit<16> crc16;
    bit<32> crc32;
    bit<16> c16c;
    bit<32> c32c;
    bit<16> ident;
    bit<16> csum;
    bit<16> xor;
    bit<16> ranged;
    bit<8>  rnd;
    bit<4>  narrow;   // (14 + crc16 mod 32), kept to 4 bits
    bit<4>  pad;
}

struct headers_t {
    in_t  inp;
    out_t res;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.inp);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.res.setValid();
        hash(hdr.res.crc16, HashAlgorithm.crc16, 16w0,
             { hdr.inp.a, hdr.inp.b, hdr.inp.c, hdr.inp.d }, 32w65536);
        hash(hdr.res.crc32, HashAlgorithm.crc32, 32w0,
             { hdr.inp.a, hdr.inp.b, hdr.inp.c, hdr.inp.d }, 64w4294967296);
        hash(hdr.res.c16c, HashAlgorithm.crc16_custom, 16w0,
             { hdr.inp.a, hdr.inp.b, hdr.inp.c, hdr.inp.d }, 32w65536);
        hash(hdr.res.c32c, HashAlgorithm.crc32_custom, 32w0,
             { hdr.inp.a, hdr.inp.b, hdr.inp.c, hdr.inp.d }, 64w4294967296);
        hash(hdr.res.ident, HashAlgorithm.identity, 16w0,
             { hdr.inp.b, hdr.inp.c }, 32w65536);
        hash(hdr.res.csum, HashAlgorithm.csum16, 16w0,
             { hdr.inp.a, hdr.inp.b, hdr.inp.c, hdr.inp.d }, 32w65536);
        hash(hdr.res.xor, HashAlgorithm.xor16, 16w0,
             { hdr.inp.a, hdr.inp.b, hdr.inp.c, hdr.inp.d }, 32w65536);
        hash(hdr.res.ranged, HashAlgorithm.crc16, 16w100,
             { hdr.inp.a, hdr.inp.b, hdr.inp.c, hdr.inp.d }, 32w7);
        random(hdr.res.rnd, 8w3, 8w3);
        hash(hdr.res.narrow, HashAlgorithm.crc16, 4w14,
             { hdr.inp.a, hdr.inp.b, hdr.inp.c, hdr.inp.d }, 32w32);
        hdr.res.pad = 0;
        sm.egress_spec = 2;
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
