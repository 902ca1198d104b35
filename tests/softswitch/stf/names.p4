// Control-plane names: @name on tables, actions and keys (relative and
// absolute with a leading dot), a key that is an expression, a key of a
// serializable enum type, and a table applied under a negated .hit.
#include <core.p4>
#include <v1model.p4>

enum bit<8> Kind_t { A = 1, B = 2 }

header h_t {
    Kind_t kind;
    bit<8> k;
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
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
    @name("set_out") action forward(bit<9> port, bit<8> v) {
        sm.egress_spec = port;
        hdr.h.r1 = v;
    }
    @name(".global_mark") action mark(bit<8> v) {
        hdr.h.r2 = v;
    }
    action by_kind(bit<8> v) {
        hdr.h.r3 = v;
    }

    @name(".fwd") table t_fwd {
        key = { hdr.h.k & 0x0F : exact @name("k_low"); }
        actions = { forward; NoAction; }
        default_action = NoAction();
    }
    @name("marks") table t_mark {
        key = { hdr.h.k : exact; }
        actions = { mark; NoAction; }
        default_action = NoAction();
    }
    table t_kind {
        key = { hdr.h.kind : exact; }
        actions = { by_kind; NoAction; }
        default_action = NoAction();
    }

    apply {
        sm.egress_spec = 1;
        if (!t_fwd.apply().hit) {
            hdr.h.r1 = 0xEE;
        }
        t_mark.apply();
        t_kind.apply();
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
