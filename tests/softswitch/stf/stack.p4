// Header stacks: extract(next) in a parser loop, select on last, lastIndex,
// StackOutOfBounds, push_front / pop_front, indexing and emitting the stack.
// The ingress port picks the operation: 0 push_front(1), 1 pop_front(1), 2 none,
// 3 push_front(2) then pop_front(1).
#include <core.p4>
#include <v1model.p4>

header label_t {
    bit<8> value;
    bit<7> pad;
    bit<1> bos;
}

header info_t {
    bit<8> last_index;
    bit<8> count;
    bit<8> overflow;
    bit<8> top;
}

struct headers_t {
    label_t[4] labels;
    info_t     info;
}

struct meta_t {
    bit<32> last;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        transition parse_label;
    }
    state parse_label {
        pkt.extract(hdr.labels.next);
        transition select(hdr.labels.last.bos) {
            1: done;
            default: parse_label;
        }
    }
    state done {
        m.last = hdr.labels.lastIndex;
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (sm.ingress_port == 0) {
            hdr.labels.push_front(1);
            hdr.labels[0].setValid();
            hdr.labels[0].value = 0xAA;
            hdr.labels[0].pad = 0;
            hdr.labels[0].bos = 0;
        } else if (sm.ingress_port == 1) {
            hdr.labels.pop_front(1);
        } else if (sm.ingress_port == 3) {
            // leaves a hole at index 0; emit skips invalid elements
            hdr.labels.push_front(2);
            hdr.labels.pop_front(1);
        }
        bit<8> n = 0;
        if (hdr.labels[0].isValid()) { n = n + 1; }
        if (hdr.labels[1].isValid()) { n = n + 1; }
        if (hdr.labels[2].isValid()) { n = n + 1; }
        if (hdr.labels[3].isValid()) { n = n + 1; }
        hdr.info.setValid();
        hdr.info.last_index = (bit<8>)m.last;
        hdr.info.count = n;
        hdr.info.overflow = sm.parser_error == error.StackOutOfBounds ? 8w1 : 8w0;
        hdr.info.top = hdr.labels[0].isValid() ? hdr.labels[0].value : 8w0xFF;
        sm.egress_spec = 4;
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.labels);
        pkt.emit(hdr.info);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
