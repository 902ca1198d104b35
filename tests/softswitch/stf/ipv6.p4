// IPv6 forwarding: 128-bit lpm keys, 128-bit exact keys, hop limit decrement,
// and a 128-bit action parameter written into the packet.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv6_t {
    bit<4>   version;
    bit<8>   trafficClass;
    bit<20>  flowLabel;
    bit<16>  payloadLen;
    bit<8>   nextHdr;
    bit<8>   hopLimit;
    bit<128> srcAddr;
    bit<128> dstAddr;
}

struct headers_t {
    ethernet_t ethernet;
    ipv6_t     ipv6;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x86DD: parse_ipv6;
            default: accept;
        }
    }
    state parse_ipv6 {
        pkt.extract(hdr.ipv6);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    action route(bit<9> port) {
        sm.egress_spec = port;
        hdr.ipv6.hopLimit = hdr.ipv6.hopLimit - 1;
    }
    action rewrite_src(bit<128> src) {
        hdr.ipv6.srcAddr = src;
    }
    action drop() {
        mark_to_drop(sm);
    }
    table v6_lpm {
        key = { hdr.ipv6.dstAddr : lpm; }
        actions = { route; drop; }
        default_action = drop();
    }
    table v6_nat {
        key = { hdr.ipv6.srcAddr : exact; }
        actions = { rewrite_src; NoAction; }
        default_action = NoAction();
    }
    apply {
        if (hdr.ipv6.isValid()) {
            v6_lpm.apply();
            v6_nat.apply();
        } else {
            drop();
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv6);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
