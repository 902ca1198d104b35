// BMv2 details that real programs rely on: copying an invalid
// header makes the destination invalid, the deparser's emit order (not the
// parse order) decides the output, 128- and 64-bit wrap-around, hash input
// built from fields that are not byte aligned, and a keyless table.
#include <core.p4>
#include <v1model.p4>

header a_t {
    bit<8> tag;
    bit<8> v;
}

header b_t {
    bit<8> tag;
    bit<8> v;
}

header w_t {
    bit<128> big;
    bit<64>  mid;
}

header r_t {
    bit<16> id9;
    bit<16> sum;
    bit<8>  kl;
    bit<8>  z1;
    bit<8>  z2;
}

struct headers_t {
    a_t a;
    b_t b;
    w_t w;
    b_t b2;
    r_t r;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.a);
        pkt.extract(hdr.b);
        pkt.extract(hdr.w);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    action set_kl(bit<8> v) { hdr.r.kl = v; }
    table t_keyless {
        actions = { set_kl; }
        default_action = set_kl(0x5A);
    }

    apply {
        sm.egress_spec = 1;
        if (hdr.a.tag == 3) {
            hdr.b.setInvalid();
        }
        hdr.b2 = hdr.b;
        hdr.w.big = hdr.w.big + 1;
        hdr.w.mid = hdr.w.mid - 1;
        hdr.r = { 0, 0, 0, 0, 0 };
        hash(hdr.r.id9, HashAlgorithm.identity, 16w0,
             { hdr.a.tag[2:0], hdr.a.v[5:0] }, 32w65536);
        hash(hdr.r.sum, HashAlgorithm.csum16, 16w0,
             { hdr.a.tag[3:0], 12w0xABC }, 32w65536);
        t_keyless.apply();
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.w);
        pkt.emit(hdr.b);
        pkt.emit(hdr.a);
        pkt.emit(hdr.b2);
        pkt.emit(hdr.r);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
