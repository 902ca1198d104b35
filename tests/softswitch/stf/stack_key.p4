// A header stack element and the validity of a stack element as table keys,
// e.g. an MPLS label switch keyed on the top label.
#include <core.p4>
#include <v1model.p4>

header label_t {
    bit<20> label;
    bit<3>  tc;
    bit<1>  bos;
    bit<8>  ttl;
}

struct headers_t {
    label_t[2] mpls;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.mpls.next);
        transition select(hdr.mpls.last.bos) {
            0: start;
            default: accept;
        }
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    action swap_label(bit<20> label, bit<9> port) {
        hdr.mpls[0].label = label;
        hdr.mpls[0].ttl = hdr.mpls[0].ttl - 1;
        sm.egress_spec = port;
    }
    action pop_label(bit<9> port) {
        hdr.mpls.pop_front(1);
        sm.egress_spec = port;
    }
    action drop() {
        mark_to_drop(sm);
    }
    table lfib {
        key = {
            hdr.mpls[0].label     : exact;
            hdr.mpls[1].isValid() : exact;
        }
        actions = { swap_label; pop_label; drop; }
        default_action = drop();
    }
    apply {
        lfib.apply();
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.mpls); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
