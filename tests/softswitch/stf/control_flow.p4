// Control flow and the preprocessor: #define / #if / #ifdef / #ifndef / #else,
// sub-controls instantiated twice and applied with arguments, exit inside an
// action and inside a sub-control (ingress ends, egress still runs), return
// inside an action, switch with grouped labels and default, bool values,
// signed overflow, shifts by run-time amounts, compile-time division and modulo.
#include <core.p4>
#include <v1model.p4>

#define STEP 1
#define WITH_EGRESS_MARK
#if STEP > 0
#define FIRST_ADD STEP
#else
#define FIRST_ADD 100
#endif
#ifndef NOT_DEFINED
#define SECOND_ADD 2
#endif

header h_t {
    bit<8> k;
    bit<8> x;
    bit<8> flags;
    bit<8> eg;
    int<8> s;
    bit<8> amount;
    bit<8> shifted;
    bit<8> quot;
    bit<8> rem;
}

struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Adder(inout h_t h, in bit<8> add) {
    apply {
        h.x = h.x + add;
        if (h.x == 0xFF) {
            exit;
        }
    }
}

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    Adder() first;
    Adder() second;

    // the conditions always hold; they keep the statements after exit /
    // return reachable for the compiler
    action stop() {
        hdr.h.flags = hdr.h.flags | 0x01;
        if (hdr.h.flags != 0) {
            exit;
        }
        hdr.h.flags = hdr.h.flags | 0x80;
    }
    action early(inout bit<8> f) {
        f = f | 0x02;
        if (f != 0) {
            return;
        }
        f = f | 0x80;
    }
    action plain() {
        hdr.h.flags = hdr.h.flags | 0x04;
    }
    action other() {
        hdr.h.flags = hdr.h.flags | 0x08;
    }
    table t {
        key = { hdr.h.k : exact; }
        actions = { stop; plain; other; NoAction; }
        const entries = {
            0x01 : stop();
            0x02 : plain();
            0x03 : other();
        }
        default_action = NoAction();
    }

    apply {
        sm.egress_spec = 1;
        first.apply(hdr.h, FIRST_ADD);
        second.apply(hdr.h, SECOND_ADD);
        switch (t.apply().action_run) {
            plain:
            other: { hdr.h.flags = hdr.h.flags | 0x10; }
            default: { hdr.h.flags = hdr.h.flags | 0x20; }
        }
        early(hdr.h.flags);
        bool big = hdr.h.x > 0x80;
        if (big) {
            hdr.h.flags = hdr.h.flags | 0x40;
        }
        hdr.h.s = hdr.h.s + 1;                       // int<8> wraps: 127 + 1 = -128
        hdr.h.shifted = hdr.h.x << hdr.h.amount;    // amount >= 8 gives 0
        hdr.h.quot = FIRST_ADD * 10 / 3;            // compile-time int arithmetic: 3
        hdr.h.rem = (SECOND_ADD + 8) % 4;           // 2
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
#ifdef WITH_EGRESS_MARK
        hdr.h.eg = 0xE0;
#else
        hdr.h.eg = 0x0E;
#endif
    }
}

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
