// standard_metadata seen in egress by clones.  simple_switch builds an
// ingress clone by re-parsing the original bytes and then resetting all
// metadata (copy_field_list_and_set_type calls reset_metadata), and an egress
// clone with clone_with_phv_reset_metadata: in both, ingress_port reads 0
// unless a field list preserves it; packet_length is set again for egress.
// h.op: 1 clone I2E, 2 clone E2E.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> iport;
    bit<8> plen;
    bit<8> inst;
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
        sm.egress_spec = 1;
        if (hdr.h.op == 1) {
            clone(CloneType.I2E, 5);
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.iport = (bit<8>)sm.ingress_port;
        hdr.h.plen = (bit<8>)sm.packet_length;
        hdr.h.inst = (bit<8>)sm.instance_type;
        if (hdr.h.op == 2 && sm.instance_type == 0) {
            clone(CloneType.E2E, 5);
        }
    }
}

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
