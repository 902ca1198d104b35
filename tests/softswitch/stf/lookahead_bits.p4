// lookahead of widths that are not whole bytes (the IP version nibble, a
// 12-bit VLAN id after 4 bits), and of a width larger than 64 bits.
#include <core.p4>
#include <v1model.p4>

header v4_t {
    bit<4> version;
    bit<4> ihl;
}

header v6_t {
    bit<4>  version;
    bit<12> rest;
}

header res_t {
    bit<8>  which;
    bit<16> vid;      // the 12 bits after the first nibble, as a lookahead
    bit<8>  wide_ok;  // 1 if a 72-bit lookahead saw the expected tail byte
}

struct headers_t {
    res_t res;
    v4_t  v4;
    v6_t  v6;
}

struct meta_t {
    bit<12> vid;
    bit<72> wide;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        m.vid = pkt.lookahead<bit<16>>()[11:0];
        transition select(pkt.lookahead<bit<4>>()) {
            4: parse_v4;
            6: parse_v6;
            default: try_wide;
        }
    }
    state parse_v4 {
        pkt.extract(hdr.v4);
        transition accept;
    }
    state parse_v6 {
        pkt.extract(hdr.v6);
        transition accept;
    }
    state try_wide {
        m.wide = pkt.lookahead<bit<72>>();
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.res.setValid();
        hdr.res.which = hdr.v4.isValid() ? 8w4 : (hdr.v6.isValid() ? 8w6 : 8w0);
        hdr.res.vid = (bit<16>)m.vid;
        hdr.res.wide_ok = m.wide[7:0] == 0x99 ? 8w1 : 8w0;
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.res);
        pkt.emit(hdr.v4);
        pkt.emit(hdr.v6);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
