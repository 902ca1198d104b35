// Stateful externs driven by test_packets_externs.py: register, counter,
// meter (trTCM colours), digest, random, truncate and the global timestamps.
// h.op: 1 register read-modify-write, 2 counter, 3 meter, 4 digest,
// 5 random in [10, 20], 6 truncate(10), 7 counter with an index out of range,
// 8 digest then mark_to_drop, 9 register read with an index out of range,
// 10 meter execution with an index out of range, 11 two digest calls.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  op;
    bit<8>  idx;
    bit<32> val;
    bit<8>  color;
    bit<32> flow;
    bit<8>  rnd;
    bit<48> ts_in;
    bit<48> ts_eg;
}

struct headers_t { h_t h; }

struct learn_t {
    bit<32> flow;
    bit<9>  port;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<32>>(8) reg;
    counter(8, CounterType.packets_and_bytes) cnt;
    meter(4, MeterType.bytes) mtr;

    apply {
        sm.egress_spec = 1;
        hdr.h.ts_in = sm.ingress_global_timestamp;
        if (hdr.h.op == 1) {
            bit<32> v;
            reg.read(v, (bit<32>)hdr.h.idx);
            v = v + 1;
            reg.write((bit<32>)hdr.h.idx, v);
            hdr.h.val = v;
        } else if (hdr.h.op == 11) {
            // one digest per pass in simple_switch: the last call wins
            digest<learn_t>(1, { hdr.h.flow, sm.ingress_port });
            digest<learn_t>(1, { hdr.h.flow + 1, sm.ingress_port });
        } else if (hdr.h.op == 10) {
            // as register_read: execute_meter leaves the colour alone out of
            // range; c first gets meter 0's colour, which is used
            bit<8> c;
            mtr.execute_meter(32w0, c);
            hdr.h.rnd = c;
            mtr.execute_meter((bit<32>)hdr.h.idx, c);
            hdr.h.color = c;
        } else if (hdr.h.op == 2) {
            cnt.count((bit<32>)hdr.h.idx);
        } else if (hdr.h.op == 3) {
            bit<8> c;
            mtr.execute_meter((bit<32>)hdr.h.idx, c);
            hdr.h.color = c;
        } else if (hdr.h.op == 4) {
            digest<learn_t>(1, { hdr.h.flow, sm.ingress_port });
        } else if (hdr.h.op == 5) {
            random(hdr.h.rnd, 8w10, 8w20);
        } else if (hdr.h.op == 6) {
            truncate(10);
        } else if (hdr.h.op == 7) {
            cnt.count(32w100);
        } else if (hdr.h.op == 8) {
            digest<learn_t>(1, { hdr.h.flow, sm.ingress_port });
            mark_to_drop(sm);
        } else if (hdr.h.op == 9) {
            // BMv2's register_read leaves the destination alone out of range.
            // v gets its value from an in-range read that is used, so no
            // compiler can drop it as a dead store before the second read.
            bit<32> v;
            reg.read(v, 32w0);
            hdr.h.flow = v;
            reg.read(v, (bit<32>)hdr.h.idx);
            hdr.h.val = v;
        } else if (hdr.h.op == 11) {
            // one digest per pass in simple_switch: the last call wins
            digest<learn_t>(1, { hdr.h.flow, sm.ingress_port });
            digest<learn_t>(1, { hdr.h.flow + 1, sm.ingress_port });
        } else if (hdr.h.op == 10) {
            // as register_read: execute_meter leaves the colour alone out of
            // range; c first gets meter 0's colour, which is used
            bit<8> c;
            mtr.execute_meter(32w0, c);
            hdr.h.rnd = c;
            mtr.execute_meter((bit<32>)hdr.h.idx, c);
            hdr.h.color = c;
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.ts_eg = sm.egress_global_timestamp;
    }
}

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
