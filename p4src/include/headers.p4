/* headers.p4: wire headers and per-packet metadata of the SGLB program.
 * The custom headers (packet_out/packet_in, port-status, notice, probe) have
 * scapy layers in sglb/headers.py; docs/sglb.md draws their layouts. */

#ifndef SGLB_HEADERS_P4
#define SGLB_HEADERS_P4

#include "constants.p4"

/* Prepended by the controller to a PacketOut (P4Runtime packet metadata). */
@controller_header("packet_out")
header packet_out_t {
    bit<8>  op;            /* PACKET_OUT_PIPELINE (0) or PACKET_OUT_DIRECT (1) */
    bit<8>  reserved;
    bit<16> egress_port;   /* used by PACKET_OUT_DIRECT only */
}

/* Prepended to a packet sent to the CPU port (P4Runtime PacketIn metadata). */
@controller_header("packet_in")
header packet_in_t {
    bit<16> ingress_port;
    bit<8>  reason;        /* PUNT_* */
    bit<8>  reserved;
}

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

/* ARP for Ethernet / IPv4 (RFC 826). */
header arp_t {
    bit<16> htype;
    bit<16> ptype;
    bit<8>  hlen;
    bit<8>  plen;
    bit<16> oper;
    bit<48> sha;
    bit<32> spa;
    bit<48> tha;
    bit<32> tpa;
}

/* IPv4 without options (RFC 791 section 3.1). */
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

/* The first four bytes of TCP and UDP: the ports of the 5-tuple. */
header l4_ports_t {
    bit<16> srcPort;
    bit<16> dstPort;
}

/* Link state from the target or the controller (docs/softswitch-api.md). */
header port_status_t {
    bit<8>  version;       /* PORT_STATUS_VERSION */
    bit<8>  op;            /* PORT_STATUS_DOWN / PORT_STATUS_UP */
    bit<16> port;
    bit<32> seq;           /* per-switch event sequence number */
}

/* In-band failure / recovery notice, spine -> leaves (12 bytes, EtherType 0x88B6). */
header notice_t {
    bit<8>  version;       /* SGLB_VERSION */
    bit<8>  kind;          /* NOTICE_FAIL / NOTICE_RECOVER */
    bit<8>  length;        /* NOTICE_LENGTH: bytes of this header */
    bit<8>  reserved;
    bit<16> spine_id;      /* switch_id of the spine that lost / regained the link */
    bit<16> leaf_id;       /* destination leaf now unreachable / reachable through it */
    bit<32> epoch;         /* spine's port-status sequence number: newer wins */
}

/* Path probe (16 bytes, EtherType 0x88B6, kind 3): sent by a leaf's
 * controller on one uplink, stamped by the spine with the DRE of its egress
 * port, punted at the destination leaf. */
header probe_t {
    bit<8>  version;       /* SGLB_VERSION */
    bit<8>  kind;          /* PROBE_KIND */
    bit<8>  length;        /* PROBE_LENGTH */
    bit<8>  path;          /* path index at the source leaf */
    bit<16> src_leaf;
    bit<16> dst_leaf;
    bit<32> seq;
    bit<32> hop_dre;       /* max DRE bytes seen at a spine egress port */
}

struct headers_t {
    packet_out_t  packet_out;
    packet_in_t   packet_in;
    ethernet_t    ethernet;
    arp_t         arp;
    ipv4_t        ipv4;
    l4_ports_t    l4;
    port_status_t port_status;
    notice_t      notice;
    probe_t       probe;
}

struct metadata_t {
    /* switch_config */
    bit<8>  role;
    bit<8>  lb_mode;
    bit<16> switch_id;
    bit<48> switch_mac;
    bit<48> flowlet_gap;      /* microseconds */
    bit<8>  tie_tolerance;    /* cost levels within which paths tie */
    bit<16> notice_group;     /* multicast group of the notices (spine) */

    /* uplinks: the port and the DRE quantisation shift of each path */
    bit<8>  path_slots;       /* bit i set: path i exists on this switch */
    port_t  port0; port_t port1; port_t port2; port_t port3;
    port_t  port4; port_t port5; port_t port6; port_t port7;
    bit<8>  shift0; bit<8> shift1; bit<8> shift2; bit<8> shift3;
    bit<8>  shift4; bit<8> shift5; bit<8> shift6; bit<8> shift7;

    /* dst_profile: control-plane view of the destination leaf */
    bit<8>  cp_mask;          /* bit i set: path i usable per the control plane */
    bit<8>  profile_gen;      /* generation of this profile entry */
    bit<8>  rq0; bit<8> rq1; bit<8> rq2; bit<8> rq3;    /* remote congestion */
    bit<8>  rq4; bit<8> rq5; bit<8> rq6; bit<8> rq7;
    bit<8>  w0; bit<8> w1; bit<8> w2; bit<8> w3;        /* capacity weight */
    bit<8>  w4; bit<8> w5; bit<8> w6; bit<8> w7;

    /* GLB engine working state */
    bit<8>  lq0; bit<8> lq1; bit<8> lq2; bit<8> lq3;    /* local congestion */
    bit<8>  lq4; bit<8> lq5; bit<8> lq6; bit<8> lq7;
    bit<8>  cost0; bit<8> cost1; bit<8> cost2; bit<8> cost3;
    bit<8>  cost4; bit<8> cost5; bit<8> cost6; bit<8> cost7;
    bit<32> acc0; bit<32> acc1; bit<32> acc2; bit<32> acc3; /* cumulative weights */
    bit<32> acc4; bit<32> acc5; bit<32> acc6; bit<32> acc7;
    bit<8>  local_up;         /* bit i set: port of path i is up */
    bit<8>  excluded;         /* bit i set: excluded by a failure notice */
    bit<8>  weighted;         /* bit i set: capacity weight of path i is not 0 */
    bit<8>  live;
    bit<8>  candidates;
    bit<8>  min_cost;
    bit<32> weight_sum;
    bit<32> pick_hash;
    bit<32> pick_point;
    bit<8>  pick;             /* path picked for a new flowlet */
    bit<8>  chosen;           /* path the packet leaves on */
    bit<32> flowlet_index;

    /* classification and bookkeeping */
    bit<16> l4_src;
    bit<16> l4_dst;
    bit<16> dst_leaf;
    bit<1>  to_leaf;          /* leaf: send over a path; spine: down to dst_leaf */
    bit<1>  is_probe;         /* leaf: probe from the CPU, sent on probe.path */
    bit<1>  notice_apply;     /* leaf: apply hdr.notice to the exclusion state */
    bit<8>  notice_paths;     /* paths through the notice's spine */
    bit<32> notice_slot;      /* epoch slot of the notice's spine */
    bit<1>  peer_found;       /* spine: port_peer hit */
    bit<16> peer_leaf;
    port_t  peer_sibling;
    port_t  down_a;           /* spine: parallel downlinks to dst_leaf */
    port_t  down_b;
    bit<1>  has_downlinks;
    bit<1>  forwarded;        /* egress_spec or mcast_grp set */
    bit<1>  consumed;         /* control packet fully handled: no output, no drop count */
    bit<32> drop_reason;      /* 0 = none, else DROP_* */
    bit<8>  punt_reason;
    bit<32> tmp_ip;
}

#endif
