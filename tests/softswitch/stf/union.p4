// Header unions: extract into one member, isValid on members and on the union,
// setValid on one member invalidates the other, emit(union) writes the valid one.
#include <core.p4>
#include <v1model.p4>

header sel_t {
    bit<8> kind;
    bit<8> result;
}

header v4_t {
    bit<8>  tag;
    bit<32> addr;
}

header v6_t {
    bit<8>  tag;
    bit<64> addr;
}

header_union addr_u {
    v4_t v4;
    v6_t v6;
}

struct headers_t {
    sel_t  sel;
    addr_u u;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.sel);
        transition select(hdr.sel.kind) {
            0x04: parse_v4;
            0x46: parse_v4;
            0x06: parse_v6;
            default: accept;
        }
    }
    state parse_v4 {
        pkt.extract(hdr.u.v4);
        transition accept;
    }
    state parse_v6 {
        pkt.extract(hdr.u.v6);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (hdr.sel.kind == 0x46) {
            // convert: making v6 valid must invalidate v4 (P4_16 spec 8.19)
            hdr.u.v6.setValid();
            hdr.u.v6.tag = 0x66;
            hdr.u.v6.addr = 0x1122334455667788;
        }
        bit<8> r = 0;
        if (hdr.u.v4.isValid()) { r = r | 0x04; }
        if (hdr.u.v6.isValid()) { r = r | 0x06; }
        if (hdr.u.isValid()) { r = r | 0x80; }
        hdr.sel.result = r;
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.sel);
        pkt.emit(hdr.u);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
