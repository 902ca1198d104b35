// Parser-side arithmetic: a count read from the packet drives a loop through
// metadata decremented in each state (the pattern of in-band telemetry
// stacks), and select on a field of a header-typed lookahead.
#include <core.p4>
#include <v1model.p4>

header peek_h {
    bit<8> kind;
    bit<8> count;
}

header count_t {
    bit<8> kind;
    bit<8> count;
}

header item_t {
    bit<16> value;
}

header sum_t {
    bit<16> total;
    bit<8>  parsed;
}

struct headers_t {
    count_t   cnt;
    item_t[3] items;
    sum_t     sum;
}

struct meta_t {
    bit<8> remaining;
    bit<8> parsed;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        transition select(pkt.lookahead<peek_h>().kind) {
            0x77: parse_count;
            default: accept;
        }
    }
    state parse_count {
        pkt.extract(hdr.cnt);
        m.remaining = hdr.cnt.count;
        transition select(m.remaining) {
            0: accept;
            default: parse_item;
        }
    }
    state parse_item {
        pkt.extract(hdr.items.next);
        m.remaining = m.remaining - 1;
        m.parsed = m.parsed + 1;
        transition select(m.remaining) {
            0: accept;
            default: parse_item;
        }
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.sum.setValid();
        hdr.sum.total = 0;
        if (hdr.items[0].isValid()) { hdr.sum.total = hdr.sum.total + hdr.items[0].value; }
        if (hdr.items[1].isValid()) { hdr.sum.total = hdr.sum.total + hdr.items[1].value; }
        if (hdr.items[2].isValid()) { hdr.sum.total = hdr.sum.total + hdr.items[2].value; }
        hdr.sum.parsed = m.parsed;
        if (sm.parser_error == error.StackOutOfBounds) {
            hdr.sum.parsed = hdr.sum.parsed | 0x80;
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.cnt);
        pkt.emit(hdr.items);
        pkt.emit(hdr.sum);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
