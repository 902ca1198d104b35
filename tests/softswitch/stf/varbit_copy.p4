// Copying a header with a varbit field (p4c: assign_header / assign_VL): the
// copy carries the extracted length and is emitted with it.
#include <core.p4>
#include <v1model.p4>

header len_t {
    bit<8> len;   // option length in bytes
}

header opt_t {
    varbit<64> data;
}

struct headers_t {
    len_t l;
    opt_t opt;
    opt_t copy;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.l);
        pkt.extract(hdr.opt, (bit<32>)hdr.l.len * 8);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.copy = hdr.opt;
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.l);
        pkt.emit(hdr.opt);
        pkt.emit(hdr.copy);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
