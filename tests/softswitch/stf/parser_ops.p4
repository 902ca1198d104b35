// Parser constructs: varbit with the two-argument extract, lookahead, advance,
// transition select with masks, ranges, tuples with don't-care, value sets
// and default.  A result header (path, peeked byte, validity bits, error code)
// is made valid in ingress and emitted first.
#include <core.p4>
#include <v1model.p4>

header res_t {
    bit<8> path;
    bit<8> peeked;
    bit<8> valid_bits;
    bit<8> err;
}

header base_t {
    bit<8> kind;
    bit<8> len;    // option length in bytes
}

header opt_t {
    varbit<64> data;
}

header tail_t {
    bit<8> x;
    bit<8> y;
}

struct headers_t {
    res_t  res;
    base_t base;
    opt_t  opt;
    tail_t tail;
}

struct meta_t {
    bit<8> path;
    bit<8> peeked;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    value_set<bit<8>>(4) pvs;

    state start {
        pkt.extract(hdr.base);
        transition select(hdr.base.kind) {
            0x10 &&& 0xF0: with_opt;
            0x20 .. 0x2F: skip2;
            0x30: look;
            0x31: look_select;
            pvs: in_value_set;
            default: by_tuple;
        }
    }
    state with_opt {
        pkt.extract(hdr.opt, (bit<32>)hdr.base.len * 8);
        m.path = 1;
        transition parse_tail;
    }
    state skip2 {
        pkt.advance(16);
        m.path = 2;
        transition parse_tail;
    }
    state look {
        m.peeked = pkt.lookahead<bit<8>>();
        m.path = 3;
        transition parse_tail;
    }
    state look_select {
        // select directly on a 16-bit lookahead
        transition select(pkt.lookahead<bit<16>>()) {
            0xBEEF: beef;
            default: parse_tail;
        }
    }
    state beef {
        m.path = 8;
        transition parse_tail;
    }
    state by_tuple {
        transition select(hdr.base.kind, hdr.base.len) {
            (0x40, 0x01): t_exact;
            (0x40, _): t_first;
            (_, 0x07): t_second;
            default: accept;
        }
    }
    state t_exact {
        m.path = 4;
        transition parse_tail;
    }
    state t_first {
        m.path = 5;
        transition parse_tail;
    }
    state t_second {
        m.path = 6;
        transition parse_tail;
    }
    state in_value_set {
        m.path = 7;
        transition parse_tail;
    }
    state parse_tail {
        pkt.extract(hdr.tail);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.res.setValid();
        hdr.res.path = m.path;
        hdr.res.peeked = m.peeked;
        hdr.res.valid_bits = 0;
        if (hdr.opt.isValid()) { hdr.res.valid_bits = hdr.res.valid_bits | 1; }
        if (hdr.tail.isValid()) { hdr.res.valid_bits = hdr.res.valid_bits | 2; }
        if (sm.parser_error == error.NoError) {
            hdr.res.err = 0;
        } else if (sm.parser_error == error.HeaderTooShort) {
            hdr.res.err = 1;
        } else if (sm.parser_error == error.PacketTooShort) {
            hdr.res.err = 2;
        } else {
            hdr.res.err = 3;
        }
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.res);
        pkt.emit(hdr.base);
        pkt.emit(hdr.opt);
        pkt.emit(hdr.tail);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
