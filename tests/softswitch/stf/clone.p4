// clone / clone_preserving_field_list, ingress-to-egress and
// egress-to-egress, with clone sessions set by mirroring_add.
// h.op: 1 clone I2E, 2 clone I2E preserving field list 1, 3 clone E2E
// preserving field list 1, 4 clone to an unconfigured session, 5 clone I2E
// and drop the original, 6 two clone calls (the last one counts), 7 clone
// E2E and drop the original in egress, 8 clone I2E and multicast, 9 clone I2E
// preserving field list 1 and change the field afterwards.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> ing_mark;
    bit<8> eg_mark;
    bit<8> inst;
    bit<8> saved;
}

struct headers_t { h_t h; }

struct meta_t {
    @field_list(1)
    bit<8> saved;
    bit<8> other;
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
        sm.egress_spec = 1;
        hdr.h.ing_mark = 0x11;
        m.saved = 0x5A;
        m.other = 0x77;
        if (hdr.h.op == 1) {
            clone(CloneType.I2E, 5);
        } else if (hdr.h.op == 2) {
            clone_preserving_field_list(CloneType.I2E, 5, 1);
        } else if (hdr.h.op == 4) {
            clone(CloneType.I2E, 9);
        } else if (hdr.h.op == 5) {
            clone(CloneType.I2E, 5);
            mark_to_drop(sm);
        } else if (hdr.h.op == 6) {
            // one clone per pipeline pass: the last call decides the session
            clone(CloneType.I2E, 5);
            clone(CloneType.I2E, 6);
        } else if (hdr.h.op == 9) {
            // the field list is copied at the end of ingress: the clone gets
            // the final value 0x6B, not the 0x5A of the call
            clone_preserving_field_list(CloneType.I2E, 5, 1);
            m.saved = 0x6B;
        } else if (hdr.h.op == 8) {
            // a clone and multicast in the same pass: both happen
            clone(CloneType.I2E, 5);
            sm.mcast_grp = 1;
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.inst = (bit<8>)sm.instance_type;
        hdr.h.saved = m.saved;
        if (sm.instance_type == 0 && hdr.h.op == 3) {
            hdr.h.eg_mark = 0x33;
            m.saved = 0x66;
            clone_preserving_field_list(CloneType.E2E, 6, 1);
        } else if (sm.instance_type == 0 && hdr.h.op == 7) {
            // E2E clone, then drop the original: the clone still goes
            hdr.h.eg_mark = 0x77;
            clone(CloneType.E2E, 6);
            mark_to_drop(sm);
        } else if (sm.instance_type == 2) {
            hdr.h.eg_mark = hdr.h.eg_mark | 0x80;
        }
    }
}

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
