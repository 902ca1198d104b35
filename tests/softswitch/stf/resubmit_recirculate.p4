// resubmit_preserving_field_list and recirculate_preserving_field_list.
// h.op 1: resubmit from ingress; 2: recirculate from egress; 0: neither;
// 3: resubmit and mark_to_drop; 4: recirculate and mark_to_drop in egress;
// 5: resubmit preserving field list 2; 6: resubmit twice (lists 1 then 2);
// 7: resubmit, then change the preserved field.
// A resubmitted packet restarts ingress with the original bytes; a
// recirculated one restarts with the deparsed bytes.  Field list 1 holds
// m.kept only, field list 2 holds m.kept and m.lost (op 5).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> pass;
    bit<8> kept;
    bit<8> lost;
    bit<8> inst;
    bit<8> len;
}

struct headers_t { h_t h; }

struct meta_t {
    @field_list(1, 2)
    bit<8> kept;
    @field_list(2)
    bit<8> lost;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.len = (bit<8>)sm.packet_length;
        if (sm.instance_type == 0) {
            m.kept = 0xA1;
            m.lost = 0xB2;
            hdr.h.pass = 0x01;
            sm.egress_spec = 2;
            if (hdr.h.op == 1) {
                resubmit_preserving_field_list(1);
            } else if (hdr.h.op == 7) {
                // preserved values are those at the end of ingress
                resubmit_preserving_field_list(1);
                m.kept = 0xA7;
            } else if (hdr.h.op == 6) {
                // one resubmit per pass: the last call's field list counts
                resubmit_preserving_field_list(1);
                resubmit_preserving_field_list(2);
            } else if (hdr.h.op == 5) {
                // field list 2 holds both kept and lost
                resubmit_preserving_field_list(2);
            } else if (hdr.h.op == 3) {
                // resubmit is checked before the drop port
                resubmit_preserving_field_list(1);
                mark_to_drop(sm);
            }
        } else {
            hdr.h.kept = m.kept;
            hdr.h.lost = m.lost;
            hdr.h.inst = (bit<8>)sm.instance_type;
            hdr.h.pass = hdr.h.pass | 0x10;
            sm.egress_spec = 3;
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        // pass == 0x01 marks the first pass: a recirculated packet reaches
        // egress again with instance_type NORMAL (simple_switch sets it before
        // enqueueing any unicast packet), so instance_type cannot tell
        if ((hdr.h.op == 2 || hdr.h.op == 4) && hdr.h.pass == 0x01) {
            m.kept = 0xC3;
            m.lost = 0xD4;
            hdr.h.pass = 0x02;
            recirculate_preserving_field_list(1);
            if (hdr.h.op == 4) {
                // the drop check comes before recirculation at the end of egress
                mark_to_drop(sm);
            }
        }
    }
}

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
