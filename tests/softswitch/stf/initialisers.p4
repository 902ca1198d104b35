// Header and struct initialisers: a list or named list assigned to a header
// makes it valid; a struct initialised with a nested header; copying a header
// copies its validity; setInvalid removes a parsed header from the output.
#include <core.p4>
#include <v1model.p4>

header pair_h {
    bit<8> a;
    bit<8> b;
}

struct wrap_t {
    bit<8> x;
    pair_h p;
}

struct headers_t {
    pair_h inp;
    pair_h o1;
    pair_h o2;
    pair_h o3;
    pair_h o4;
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
        hdr.o1 = { 0x12, 0x34 };
        hdr.o2 = { a = 0x56, b = 0x78 };
        wrap_t w = { x = 0x9A, p = { hdr.inp.b, hdr.inp.a } };
        hdr.o3 = w.p;
        hdr.o4 = hdr.o3;
        hdr.o4.a = w.x;
        if (hdr.inp.a == 0xFF) {
            hdr.inp.setInvalid();
        }
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.inp);
        pkt.emit(hdr.o1);
        pkt.emit(hdr.o2);
        pkt.emit(hdr.o3);
        pkt.emit(hdr.o4);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
