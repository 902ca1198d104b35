/* Benchmark program (b): the IPv4 router plus ECMP. The LPM result names an
 * ECMP group; a crc16 hash of the 5-tuple picks a member, and a register
 * counts packets per chosen next hop. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

header l4_t {
    bit<16> srcPort;
    bit<16> dstPort;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    l4_t       l4;
}

struct metadata_t {
    bit<16> ecmp_base;
    bit<16> ecmp_count;
    bit<16> ecmp_select;
}

parser EcmpParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            6: parse_l4;
            17: parse_l4;
            default: accept;
        }
    }
    state parse_l4 {
        pkt.extract(hdr.l4);
        transition accept;
    }
}

control EcmpVerify(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset,
              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control EcmpIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    register<bit<32>>(1024) nhop_packets;

    action drop() {
        mark_to_drop(standard_metadata);
    }
    action set_ecmp(bit<16> base, bit<16> count) {
        meta.ecmp_base = base;
        meta.ecmp_count = count;
        hash(meta.ecmp_select, HashAlgorithm.crc16, base,
             { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
               hdr.l4.srcPort, hdr.l4.dstPort },
             count);
    }
    action set_nhop(bit<48> dmac, bit<48> smac, bit<9> port) {
        hdr.ethernet.srcAddr = smac;
        hdr.ethernet.dstAddr = dmac;
        standard_metadata.egress_spec = port;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { set_ecmp; drop; }
        size = 4096;
        default_action = drop();
    }
    table ecmp_nhop {
        key = { meta.ecmp_select: exact; }
        actions = { set_nhop; drop; }
        size = 1024;
        default_action = drop();
    }
    apply {
        if (hdr.ipv4.isValid() && hdr.ipv4.ttl > 1) {
            if (ipv4_lpm.apply().hit) {
                ecmp_nhop.apply();
                bit<32> n;
                nhop_packets.read(n, (bit<32>) meta.ecmp_select);
                nhop_packets.write((bit<32>) meta.ecmp_select, n + 1);
            }
        } else {
            drop();
        }
    }
}

control EcmpEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    apply { }
}

control EcmpCompute(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset,
              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control EcmpDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.l4);
    }
}

V1Switch(EcmpParser(), EcmpVerify(), EcmpIngress(), EcmpEgress(),
         EcmpCompute(), EcmpDeparser()) main;
