// Which parser error a varbit extract reports when the requested size both
// exceeds the varbit's maximum and runs past the end of the packet.
// BMv2 (src/bm_sim/parser.cpp, extract_VL) checks the packet length first.
#include <core.p4>
#include <v1model.p4>

header len_t {
    bit<8> len;    // option length in bytes
    bit<8> err;    // written in ingress: 1 HeaderTooShort, 2 PacketTooShort
}

header opt_t {
    varbit<32> data;
}

struct headers_t {
    len_t l;
    opt_t opt;
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
        if (sm.parser_error == error.HeaderTooShort) {
            hdr.l.err = 1;
        } else if (sm.parser_error == error.PacketTooShort) {
            hdr.l.err = 2;
        } else {
            hdr.l.err = 0;
        }
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.l);
        pkt.emit(hdr.opt);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
