// enum, serializable enum bit<W> in a header, error declarations, verify(),
// select without default (NoMatch) and short packets (PacketTooShort).
// A parser error must not drop the packet: ingress sees
// standard_metadata.parser_error and writes a code into the header.
#include <core.p4>
#include <v1model.p4>

enum bit<8> Kind_t { DATA = 1, CTRL = 2 }
enum Color_t { RED, GREEN }
error { BadVersion }

header h_t {
    bit<8> version;
    Kind_t kind;
    bit<8> code;
    bit<8> mark;
}

header tail_t { bit<16> v; }

struct headers_t {
    h_t    h;
    tail_t tail;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        verify(hdr.h.version == 4, error.BadVersion);
        transition select(hdr.h.kind) {
            Kind_t.DATA: parse_tail;
            Kind_t.CTRL: accept;
        }
    }
    state parse_tail {
        pkt.extract(hdr.tail);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        Color_t c = Color_t.RED;
        bit<8> code = 0xEE;
        if (sm.parser_error == error.NoError) {
            code = 0;
        } else if (sm.parser_error == error.BadVersion) {
            code = 1;
        } else if (sm.parser_error == error.PacketTooShort) {
            code = 2;
        } else if (sm.parser_error == error.NoMatch) {
            code = 3;
        }
        if (hdr.h.isValid() && hdr.h.kind == Kind_t.CTRL) {
            c = Color_t.GREEN;
        }
        hdr.h.code = code;
        hdr.h.mark = c == Color_t.GREEN ? 8w0x22 : 8w0x11;
        if (hdr.tail.isValid()) {
            hdr.tail.v = hdr.tail.v + 1;
        }
        sm.egress_spec = 3;
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.tail);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
