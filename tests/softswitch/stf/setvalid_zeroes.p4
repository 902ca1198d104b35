// setValid() on an invalid header, as BMv2 runs it: p4c turns setValid into
// the add_header primitive, which resets every field to 0 before marking the
// header valid when it was invalid, and does nothing to a valid header.
#include <core.p4>
#include <v1model.p4>

header a_t {
    bit<8> tag;
    bit<8> v;
}

header b_t {
    bit<8> x;
    bit<8> y;
}

struct headers_t {
    a_t a;
    b_t b;
    b_t c;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.a);
        pkt.extract(hdr.b);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.a.tag == 1) {
            hdr.b.setInvalid();
            hdr.b.setValid();
        } else if (hdr.a.tag == 2) {
            hdr.c.setValid();
        } else if (hdr.a.tag == 3) {
            hdr.b.setValid();
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.a);
        pkt.emit(hdr.b);
        pkt.emit(hdr.c);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
