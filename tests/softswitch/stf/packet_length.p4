// standard_metadata.packet_length seen in egress after ingress added or
// removed headers.  simple_switch keeps the length in a packet register that
// its add_header / remove_header primitives (p4c's setValid / setInvalid)
// adjust by the header size when the validity actually changes, and egress
// reads packet_length from that register.
// h.op: 1 add a 4-byte header, 2 remove the 2-byte tail, 3 add it twice.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> len;
}

header extra_t {
    bit<32> v;
}

header tail_t {
    bit<16> t;
}

struct headers_t {
    h_t     h;
    extra_t extra;
    tail_t  tail;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.tail);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.h.op == 1) {
            hdr.extra.setValid();
        } else if (hdr.h.op == 2) {
            hdr.tail.setInvalid();
        } else if (hdr.h.op == 3) {
            hdr.extra.setValid();
            hdr.extra.setValid();   // already valid: no change
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    // byte counts use the arrival length (bm Counter: pkt.get_ingress_length())
    counter(1, CounterType.packets_and_bytes) eg_cnt;

    apply {
        hdr.h.len = (bit<8>)sm.packet_length;
        eg_cnt.count(0);
    }
}

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.extra);
        pkt.emit(hdr.tail);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
