// Assignment copies values (P4_16 spec 6.7): after `x = y`, changing y does
// not change x, for headers, structs, stack elements and local copies of
// function arguments.
#include <core.p4>
#include <v1model.p4>

header p_t {
    bit<8> x;
    bit<8> y;
}

struct pair_s {
    bit<8> x;
    bit<8> y;
}

struct headers_t {
    p_t    a;
    p_t    b;
    p_t[2] st;
    p_t    res;
}

struct meta_t {
    pair_s s1;
    pair_s s2;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.a);
        pkt.extract(hdr.b);
        pkt.extract(hdr.st.next);
        pkt.extract(hdr.st.next);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

bit<8> touch(in pair_s p) {
    pair_s q = p;
    q.x = 0xBB;     // changes the local copy only
    return q.x;
}

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.b = hdr.a;
        hdr.a.x = 0xEE;
        m.s1 = { hdr.b.x, hdr.b.y };
        m.s2 = m.s1;
        m.s1.y = 0xDD;
        hdr.st[1] = hdr.st[0];
        hdr.st[0].y = 0xCC;
        hdr.res.setValid();
        hdr.res.x = m.s2.y;
        hdr.res.y = m.s1.y;
        if (touch(m.s2) == 0xBB && m.s2.x == hdr.b.x) {
            hdr.res.x = hdr.res.x | 0x01;
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
