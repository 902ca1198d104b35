// Exercises every construct the softswitch front end supports (parsed and checked by
// tests/softswitch/test_frontend_*.py; not meant as a forwarding program).
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

#define MAX_HOPS 4
#if defined(MAX_HOPS) && MAX_HOPS > 2
const bit<8> HOPS = MAX_HOPS;
#else
const bit<8> HOPS = 1;
#endif

typedef bit<48> mac_t;
type bit<32> ip_t;
enum bit<16> EthType { IPV4 = 0x0800, ARP = 0x0806, VLAN = 0x8100 }
enum Color { RED, GREEN }
error { BadVersion }

@controller_header("packet_in")
header cpu_in_t { bit<9> ingress_port; bit<7> pad; }
@controller_header("packet_out")
header cpu_out_t { bit<9> egress_port; bit<7> pad; }

header eth_t { mac_t dst; mac_t src; bit<16> type; }
header vlan_t { bit<3> pcp; bit<1> cfi; bit<12> vid; bit<16> type; }
header ipv4_t { bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id; bit<3> flags;
  bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst; }
header opt_t { varbit<320> data; }
header mpls_t { bit<20> label; bit<3> tc; bit<1> bos; bit<8> ttl; }
header tcp_t { bit<16> sport; bit<16> dport; }
header udp_t { bit<16> sport; bit<16> dport; }
header_union l4_t { tcp_t tcp; udp_t udp; }

struct learn_t { mac_t src; bit<9> port; }
struct headers { cpu_out_t cpu_out; cpu_in_t cpu_in; eth_t eth; vlan_t vlan; mpls_t[MAX_HOPS] mpls; ipv4_t ipv4; opt_t opt; l4_t l4; }
struct meta_t { @field_list(1) bit<32> hash; bit<8> color; bool flag; int<8> signed_v; bit<16> l4port; Color c; }

bit<16> add_one(in bit<16> x) { return x + 1; }

parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
  value_set<bit<16>>(4) tpids;
  bit<8> tmp;
  state start {
    transition select(sm.ingress_port) {
      255: parse_cpu;
      default: parse_eth;
    }
  }
  state parse_cpu { pkt.extract(hdr.cpu_out); transition parse_eth; }
  state parse_eth {
    pkt.extract(hdr.eth);
    tmp = pkt.lookahead<bit<8>>();
    transition select(hdr.eth.type) {
      EthType.IPV4: parse_ipv4;
      tpids: parse_vlan;
      0x8847: parse_mpls;
      0x9000 &&& 0xF000: accept;
      0x0600 .. 0x06FF: reject;
      default: accept;
    }
  }
  state parse_vlan { pkt.extract(hdr.vlan); transition accept; }
  state parse_mpls {
    pkt.extract(hdr.mpls.next);
    transition select(hdr.mpls.last.bos) { 1: parse_ipv4; default: parse_mpls; }
  }
  state parse_ipv4 {
    pkt.extract(hdr.ipv4);
    verify(hdr.ipv4.version == 4, error.BadVersion);
    pkt.extract(hdr.opt, (bit<32>)(((bit<16>)hdr.ipv4.ihl - 5) * 32));
    transition select(hdr.ipv4.proto, hdr.ipv4.frag) {
      (6, 0): parse_tcp;
      (17, _): parse_udp;
      (_, _): accept;
    }
  }
  state parse_tcp { pkt.extract(hdr.l4.tcp); pkt.advance(32); transition accept; }
  state parse_udp { pkt.extract(hdr.l4.udp); transition accept; }
}

control VC(inout headers hdr, inout meta_t meta) { apply { } }

control Sub(inout headers hdr, inout meta_t meta) {
  apply { meta.color = meta.color |+| 8w1; }
}

control Ing(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
  register<bit<32>>(1024) flows;
  register<bit<8>, bit<32>>(16) small;
  counter<bit<32>>(64, CounterType.packets) pkts;
  meter(32w16, MeterType.bytes) m;
  direct_counter(CounterType.packets_and_bytes) dc;
  direct_meter<bit<8>>(MeterType.packets) dm;
  @max_group_size(16) action_selector(HashAlgorithm.crc16, 32w128, 32w10) sel;
  action_profile(64) prof;
  Sub() sub;
  bit<32> idx = 0;
  const bit<9> CPU = 255;

  action drop() { mark_to_drop(sm); }
  action fwd(bit<9> port, mac_t dmac) { sm.egress_spec = port; hdr.eth.dst = dmac; }
  @name("set_color") action color(bit<8> c) { meta.color = c; dm.read(meta.color); }
  action count_it(inout bit<32> h) { h = h + 1; dc.count(); }
  action learn() { digest<learn_t>(1, {hdr.eth.src, sm.ingress_port}); }
  action learn2() { digest(1, (learn_t){src = hdr.eth.src, port = sm.ingress_port}); }

  table l2 {
    key = { hdr.eth.dst: exact @name("dmac"); hdr.vlan.vid: ternary; hdr.vlan.isValid(): exact; }
    actions = { fwd; @defaultonly drop; @tableonly learn; NoAction; }
    default_action = drop();
    size = 256;
    counters = dc;
  }
  table acl {
    key = { hdr.ipv4.src: lpm; hdr.l4.tcp.dport: range; meta.color: optional; hdr.ipv4.dst[31:24]: exact; }
    actions = { color; NoAction; }
    const default_action = NoAction();
    meters = dm;
    const entries = {
      (0x0A000000 &&& 0xFF000000, 80 .. 90, 1, 10): color(3);
      @priority(5) (_, _, _, 11): color(4);
      (0x0B000000 &&& 0xFF000000, 1 .. 2, _, 12): NoAction();
    }
  }
  table ecmp {
    key = { hdr.ipv4.dst: exact; meta.hash: selector; }
    actions = { fwd; drop; }
    implementation = sel;
  }
  table prof_t {
    key = { sm.ingress_port: exact; }
    actions = { fwd; count_it(meta.hash); }
    implementation = prof;
  }

  apply {
    bit<8> x = 8w3;
    int<8> y = -8s2;
    bool b = true && !false;
    x = x + 1;
    x = (x << 2) | (x >> 1) ^ ~x & 0x0F;
    y = y |-| 1;
    meta.signed_v = y * 2;
    bit<16> cc = x ++ x;
    bit<4> sl = cc[7:4];
    meta.l4port = add_one(cc);
    meta.flag = hdr.ipv4.ttl > 0 ? true : false;
    hash(meta.hash, HashAlgorithm.crc32, 32w0, {hdr.ipv4.src, hdr.ipv4.dst, hdr.ipv4.proto}, 32w65536);
    random(meta.color, 8w0, 8w7);
    flows.read(idx, meta.hash);
    flows.write(meta.hash, idx + 1);
    pkts.count(meta.hash);
    m.execute_meter(meta.hash, meta.color);
    if (!hdr.ipv4.isValid()) { exit; }
    if (meta.c == Color.RED) { meta.c = Color.GREEN; }
    if ((bit<16>)EthType.ARP == hdr.eth.type) { return; }
    if (hdr.eth.type == EthType.IPV4) { hdr.vlan.setValid(); hdr.vlan.setInvalid(); }
    hdr.mpls.push_front(1);
    hdr.mpls[0].setValid();
    hdr.mpls[0] = {label = 1, tc = 0, bos = 1, ttl = 64};
    hdr.mpls.pop_front(1);
    switch (l2.apply().action_run) {
      fwd:
      drop: { sm.mcast_grp = 1; }
      default: { }
    }
    if (acl.apply().hit) { clone(CloneType.I2E, 5); }
    else if (ecmp.apply().miss) { prof_t.apply(); }
    sub.apply(hdr, meta);
    switch (x) { 1: { x = 2; } default: { } }
    log_msg("x={}", {x});
    assert(x != 0);
    truncate(64);
    resubmit_preserving_field_list(1);
    if (sm.ingress_port == CPU) { hdr.cpu_in.setValid(); hdr.cpu_in.ingress_port = sm.ingress_port; }
    fwd(1, 0);
    sm.priority = (bit<3>)(HOPS + 1);
  }
}

control Eg(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
  apply { recirculate_preserving_field_list(1); clone_preserving_field_list(CloneType.E2E, 2, 1); }
}
control CC(inout headers hdr, inout meta_t meta) {
  apply {
    update_checksum_with_payload(hdr.ipv4.isValid(), {hdr.ipv4.src, hdr.ipv4.dst}, hdr.ipv4.csum, HashAlgorithm.csum16);
  }
}
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.cpu_in); pkt.emit(hdr.eth); pkt.emit(hdr.mpls); pkt.emit(hdr); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
