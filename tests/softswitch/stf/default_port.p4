// A program that never sets egress_spec: simple_switch starts ingress with
// egress_spec = 0 (reset metadata), so the packet leaves on port 0.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> eport;
    bit<8> espec;
}

struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.espec = (bit<8>)sm.egress_spec;
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.eport = (bit<8>)sm.egress_port;
    }
}

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
