// Multicast through the packet replication engine: mcast_grp set in ingress,
// one copy per (port, rid) of the group, egress sees egress_port, egress_rid
// and instance_type REPLICATION (5).  grp 0 means unicast to port 1.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  grp;
    bit<16> rid;
    bit<8>  port;
    bit<8>  inst;
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
        if (hdr.h.grp == 0) {
            sm.egress_spec = 1;
        } else if (hdr.h.grp == 0x81) {
            // mark_to_drop also clears mcast_grp
            sm.mcast_grp = 1;
            mark_to_drop(sm);
        } else if (hdr.h.grp == 0x82) {
            // mcast_grp != 0 wins over egress_spec
            sm.egress_spec = 1;
            sm.mcast_grp = 2;
        } else {
            sm.mcast_grp = (bit<16>)hdr.h.grp;
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.rid = sm.egress_rid;
        hdr.h.port = (bit<8>)sm.egress_port;
        hdr.h.inst = (bit<8>)sm.instance_type;
        // one replica of group 2 is dropped in egress
        if (hdr.h.grp == 2 && sm.egress_port == 6) {
            mark_to_drop(sm);
        }
    }
}

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
