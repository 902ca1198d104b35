// Tables and control flow: exact / lpm / ternary keys, action data, actions
// with a directional parameter bound in the actions list, default_action,
// const default_action, const entries, apply().hit / .miss, switch on
// action_run, exit and return, local variables and direct action calls.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  k1;
    bit<8>  k2;
    bit<16> k3;
    bit<8>  r1;
    bit<8>  r2;
    bit<8>  r3;
    bit<8>  trace;
    bit<8>  flags;
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

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    bit<8> seen = 0;

    action set_r1(bit<8> v) { hdr.h.r1 = v; }
    action set_r2(bit<8> v) { hdr.h.r2 = v; }
    action miss_r2(bit<8> v) { hdr.h.r2 = v; }
    action set_r3(bit<8> v) { hdr.h.r3 = v; }
    action set_trace(bit<8> v) { hdr.h.trace = v; }
    action add_to(inout bit<8> x, bit<8> by) { x = x + by; }
    action set_port(bit<9> port) { sm.egress_spec = port; }
    action mark(inout bit<8> f, in bit<8> bit_value) { f = f | bit_value; }

    table t_exact {
        key = { hdr.h.k1 : exact; }
        actions = { set_r1; NoAction; }
        default_action = NoAction();
    }
    table t_lpm {
        key = { hdr.h.k3 : lpm; }
        actions = { set_r2; miss_r2; }
        default_action = miss_r2(0xEE);
    }
    table t_tern {
        key = { hdr.h.k2 : ternary; }
        actions = { set_r3; NoAction; }
        default_action = NoAction();
    }
    table t_const {
        key = { hdr.h.k1 : exact; }
        actions = { set_trace; }
        const entries = {
            0x01 : set_trace(0x11);
            0x02 : set_trace(0x22);
        }
        const default_action = set_trace(0xFF);
    }
    table t_bind {
        key = { hdr.h.k2 : exact; }
        actions = { add_to(hdr.h.r1); NoAction; }
        default_action = NoAction();
    }
    table t_port {
        key = { hdr.h.k1 : exact; }
        actions = { set_port; }
        default_action = set_port(1);
    }

    apply {
        t_port.apply();
        if (t_exact.apply().hit) {
            seen = seen | 0x01;
        } else {
            seen = seen | 0x02;
        }
        switch (t_lpm.apply().action_run) {
            set_r2: { seen = seen | 0x04; }
            miss_r2: { seen = seen | 0x08; }
        }
        if (t_tern.apply().miss) {
            mark(seen, 0x10);
        }
        t_const.apply();
        t_bind.apply();
        hdr.h.flags = seen;
        if (hdr.h.k1 == 0xEE) {
            exit;
        }
        hdr.h.flags = hdr.h.flags | 0x40;
        if (hdr.h.k2 == 0xDD) {
            return;
        }
        hdr.h.flags = hdr.h.flags | 0x80;
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
