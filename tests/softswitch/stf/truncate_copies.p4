// truncate() in ingress and the copies made after ingress.  simple_switch
// keeps the truncation length on the Packet object (Packet::truncate) and
// applies it when that object is transmitted; clones and multicast copies are
// new Packet objects (clone_with_phv / clone_no_phv) and are not truncated.
// h.op: 1 unicast, 2 multicast to group 1, 3 unicast plus an I2E clone.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> pad;
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
        truncate(3);
        if (hdr.h.op == 2) {
            sm.mcast_grp = 1;
        } else {
            sm.egress_spec = 1;
        }
        if (hdr.h.op == 3) {
            clone(CloneType.I2E, 5);
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
