// Program structure: nested structs of headers and a stack emitted with one
// emit(hdr), a sub-parser instantiated and applied with an out argument,
// functions with inout / out parameters and early return, and copy-in /
// copy-out of an action's inout argument (P4_16 spec 6.8).
#include <core.p4>
#include <v1model.p4>

header a_t {
    bit<8> v;
    bit<8> w;
}

header s_t {
    bit<8> x;
}

header t_t {
    bit<8> x;
    bit<8> c;
    bit<8> d;
}

struct inner_t {
    a_t    a;
    s_t[2] st;
}

struct headers_t {
    inner_t inner;
    t_t     tail;
}

struct meta_t { }

parser TailParser(packet_in pkt, out t_t t) {
    state start {
        pkt.extract(t);
        transition accept;
    }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    TailParser() tail_parser;

    state start {
        pkt.extract(hdr.inner.a);
        transition parse_st;
    }
    state parse_st {
        pkt.extract(hdr.inner.st.next);
        pkt.extract(hdr.inner.st.next);
        tail_parser.apply(pkt, hdr.tail);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

void swap(inout bit<8> p, inout bit<8> q) {
    bit<8> t = p;
    p = q;
    q = t;
}

bit<8> classify(in bit<8> v, out bit<8> doubled) {
    doubled = v << 1;
    if (v > 100) {
        return 2;
    }
    return 1;
}

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    action bump(inout bit<8> x) {
        x = x + 1;
        hdr.inner.a.w = hdr.inner.a.v;   // still the value before the call
        hdr.inner.a.v = 0xEE;            // overwritten by the copy-out of x
    }

    apply {
        sm.egress_spec = 1;
        swap(hdr.inner.st[0].x, hdr.inner.st[1].x);
        bump(hdr.inner.a.v);
        bit<8> d;
        hdr.tail.c = classify(hdr.tail.x, d);
        hdr.tail.d = d;
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
