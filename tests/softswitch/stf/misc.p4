// log_msg, assert / assume that hold, egress_spec and egress_port semantics,
// mark_to_drop in ingress and egress, and timestamps / packet_length read in
// the pipeline.  h.op selects the case.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> eport;
    bit<8> len;
    bit<8> mark;
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
        log_msg("ingress packet");
        log_msg("op={} port={}", { hdr.h.op, sm.ingress_port });
        assert(hdr.h.isValid());
        assume(sm.ingress_port != 511);
        hdr.h.len = (bit<8>)sm.packet_length;
        sm.egress_spec = 2;
        if (hdr.h.op == 1) {
            // the last assignment wins
            sm.egress_spec = 3;
            sm.egress_spec = 4;
        } else if (hdr.h.op == 2) {
            // mark_to_drop only sets egress_spec; a later assignment undoes it
            mark_to_drop(sm);
            sm.egress_spec = 5;
        } else if (hdr.h.op == 3) {
            mark_to_drop(sm);
        } else if (hdr.h.op == 4) {
            // egress_spec = 511 by hand is the same drop port
            sm.egress_spec = 511;
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.eport = (bit<8>)sm.egress_port;
        if (hdr.h.op == 5) {
            // egress_spec written in egress does not move the packet
            sm.egress_spec = 7;
            hdr.h.mark = 0x55;
        } else if (hdr.h.op == 6) {
            mark_to_drop(sm);
        } else if (hdr.h.op == 7) {
            // exit ends egress; the deparser still runs
            hdr.h.mark = 0x77;
            exit;
        }
    }
}

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
