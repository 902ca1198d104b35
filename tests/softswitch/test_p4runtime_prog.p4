/* P4Runtime server tests: one program with every entity kind the server serves.
 * Packets from the CPU port carry a packet_out header; packets to it a packet_in header.
 * Port-status packets (EtherType 0x88B5, docs/softswitch-api.md) are counted per port
 * in `port_events` and punted to the controller. */
#include <core.p4>
#include <v1model.p4>

const bit<9> CPU_PORT = 255;

@controller_header("packet_in")
header packet_in_h {
    bit<9> ingress_port;
    bit<7> _pad;
}

@controller_header("packet_out")
header packet_out_h {
    bit<9> egress_port;
    bit<7> _pad;
}

header ethernet_h {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header port_status_h {
    bit<8>  version;
    bit<8>  op;
    bit<16> port;
    bit<32> seq;
}

header ipv4_h {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src;
    bit<32> dst;
}

struct headers_t {
    packet_out_h  packet_out;
    packet_in_h   packet_in;
    ethernet_h    ethernet;
    port_status_h port_status;
    ipv4_h        ipv4;
}

struct learn_t {
    bit<48> src;
    bit<9>  port;
}

struct meta_t {
    bit<2> color;
}

parser TestParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        transition select(sm.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etype) {
            0x0800: parse_ipv4;
            0x88B5: parse_port_status;
            default: accept;
        }
    }
    state parse_port_status {
        pkt.extract(hdr.port_status);
        transition accept;
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control TestVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control TestIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(64, CounterType.packets_and_bytes) port_rx;
    counter(512, CounterType.packets) port_events;
    meter(16, MeterType.packets) port_meter;
    register<bit<32>>(16) last_seq;
    direct_counter(CounterType.packets_and_bytes) acl_counter;
    direct_meter<bit<2>>(MeterType.packets) acl_meter;
    action_selector(HashAlgorithm.crc16, 32w64, 32w16) ecmp_selector;

    action drop() {
        mark_to_drop(sm);
    }
    action to_cpu() {
        acl_meter.read(meta.color);
        sm.egress_spec = CPU_PORT;
    }
    action forward(bit<9> port) {
        sm.egress_spec = port;
    }
    action set_nhop(bit<48> dmac, bit<9> port) {
        hdr.ethernet.dst = dmac;
        sm.egress_spec = port;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    action flood(bit<16> group) {
        sm.mcast_grp = group;
    }
    action learn() {
        digest<learn_t>(1, {hdr.ethernet.src, sm.ingress_port});
    }

    table ipv4_lpm {
        key = { hdr.ipv4.dst : lpm; }
        actions = { set_nhop; drop; NoAction; }
        default_action = drop();
        size = 1024;
    }

    table acl {
        key = {
            hdr.ipv4.src      : ternary;
            hdr.ipv4.protocol : range;
            sm.ingress_port   : optional;
        }
        actions = { to_cpu; drop; NoAction; }
        default_action = NoAction();
        counters = acl_counter;
        meters = acl_meter;
        size = 256;
    }

    table ecmp {
        key = {
            hdr.ipv4.dst : exact;
            hdr.ipv4.src : selector;
        }
        actions = { set_nhop; }
        implementation = ecmp_selector;
        size = 64;
    }

    table smac {
        key = { hdr.ethernet.src : exact; }
        actions = { NoAction; @defaultonly learn; }
        default_action = learn();
        size = 256;
    }

    table dmac {
        key = { hdr.ethernet.dst : exact; }
        actions = { forward; flood; @defaultonly drop; }
        const default_action = drop();
        size = 256;
    }

    table port_map {
        key = { sm.ingress_port : exact; }
        actions = { forward; NoAction; }
        const entries = {
            9w7 : forward(9w1);
        }
    }

    apply {
        if (hdr.packet_out.isValid()) {
            hdr.packet_out.setInvalid();
            if (hdr.port_status.isValid()) {
                port_events.count((bit<32>)hdr.port_status.port);
                last_seq.write((bit<32>)hdr.port_status.port[3:0], hdr.port_status.seq);
                sm.egress_spec = CPU_PORT;
            } else {
                sm.egress_spec = hdr.packet_out.egress_port;
            }
            return;
        }
        port_rx.count((bit<32>)sm.ingress_port);
        port_map.apply();
        if (hdr.ipv4.isValid()) {
            acl.apply();
            if (sm.egress_spec != CPU_PORT) {
                if (!ecmp.apply().hit) {
                    ipv4_lpm.apply();
                }
            }
        } else if (hdr.ethernet.isValid()) {
            smac.apply();
            dmac.apply();
        }
    }
}

control TestEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = sm.ingress_port;
        }
    }
}

control TestCompute(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control TestDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.port_status);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(TestParser(), TestVerify(), TestIngress(), TestEgress(), TestCompute(), TestDeparser()) main;
