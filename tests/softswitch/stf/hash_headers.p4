// Whole headers in a hash field list: BMv2 (calculations.cpp BufBuilder)
// appends a valid header's bytes and nothing for an invalid one.
#include <core.p4>
#include <v1model.p4>

header a_t {
    bit<8> x;
    bit<8> y;
}

header r_t {
    bit<16> whole;    // crc16 over { hdr.a }
    bit<16> fields;   // crc16 over { hdr.a.x, hdr.a.y }
    bit<16> skipped;  // crc16 over { hdr.b, hdr.a }, b never valid
}

struct headers_t {
    a_t a;
    a_t b;
    r_t r;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.a);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.r.setValid();
        hash(hdr.r.whole, HashAlgorithm.crc16, 16w0, { hdr.a }, 32w65536);
        hash(hdr.r.fields, HashAlgorithm.crc16, 16w0, { hdr.a.x, hdr.a.y }, 32w65536);
        hash(hdr.r.skipped, HashAlgorithm.crc16, 16w0, { hdr.b, hdr.a }, 32w65536);
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.a);
        pkt.emit(hdr.r);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
