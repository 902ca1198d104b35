// const entries with ternary, range, lpm, masks and don't-care: for ternary
// and range tables the entry written first wins (simple_switch.md, "Ternary
// tables"); for lpm the longest prefix wins whatever the order.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
    bit<8> r_acl;
    bit<8> r_lpm;
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
    action set_acl(bit<8> v) { hdr.h.r_acl = v; }
    action set_lpm(bit<8> v) { hdr.h.r_lpm = v; }

    table acl {
        key = {
            hdr.h.a : ternary;
            hdr.h.b : range;
        }
        actions = { set_acl; }
        const entries = {
            (0x10 &&& 0xF0, 1 .. 8) : set_acl(1);
            (0x12, _)               : set_acl(2);
            (_, 5 .. 5)             : set_acl(3);
            (_, _)                  : set_acl(4);
        }
    }
    table routes {
        key = { hdr.h.c : lpm; }
        actions = { set_lpm; }
        const entries = {
            0x40 &&& 0xF0 : set_lpm(1);
            0x44 &&& 0xFF : set_lpm(2);
            _             : set_lpm(3);
        }
    }

    apply {
        sm.egress_spec = 1;
        acl.apply();
        routes.apply();
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
