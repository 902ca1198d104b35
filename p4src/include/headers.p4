/* headers.p4: wire headers of the SGLB programs, architecture-neutral: both
 * p4src/sglb.p4 and p4src/tna/sglb.p4 include it (metadata.p4 holds the
 * v1model metadata).
 * The custom headers (packet_out/packet_in, port-status, notice, probe, tag)
 * have scapy layers in sglb/headers.py; docs/sglb.md draws their layouts. */

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
    bit<32> epoch;         /* spine's port-status sequence number: newer wins (mod 2^30) */
}

/* Path probe (20 bytes, EtherType 0x88B6, kind 3; kind 4 on the way back):
 * sent by a leaf's controller on one named path (even an excluded one, so a
 * recovery can be seen when every path is excluded), stamped by the spine
 * with the DRE of its egress port, turned around by the destination leaf and
 * punted at the source leaf with the round-trip time in `stamp`. */
header probe_t {
    bit<8>  version;       /* SGLB_VERSION */
    bit<8>  kind;          /* PROBE_KIND / PROBE_REPLY_KIND */
    bit<8>  length;        /* PROBE_LENGTH */
    bit<8>  path;          /* path index at the source leaf */
    bit<16> src_leaf;
    bit<16> dst_leaf;
    bit<32> seq;           /* the controller's, echoed */
    bit<32> hop_dre;       /* max DRE bytes seen at a spine egress port (outbound) */
    bit<32> stamp;         /* source leaf's send time (us); in a punted reply: RTT (us) */
}

/* Fabric tag (20 bytes, EtherType 0x88B6, kind 5), between Ethernet and IPv4
 * on leaf -> spine -> leaf hops only (CONGA-style in-band feedback): the
 * source leaf names the path and its clock, spines raise `ce` to the
 * congestion level of their egress port, and the destination leaf records
 * (source, path) -> (ce, one-way delay) and returns one such metric per
 * packet to the source in the fb_* fields of its own traffic. */
header tag_t {
    bit<8>  version;       /* SGLB_VERSION */
    bit<8>  kind;          /* TAG_KIND */
    bit<8>  length;        /* TAG_LENGTH */
    bit<8>  npaths;        /* paths of the source leaf: feedback cycles through them */
    bit<16> src_leaf;
    bit<8>  path;          /* path index at the source leaf */
    bit<8>  ce;            /* congestion level, max over spine egress ports (0..QMAX) */
    bit<32> ts;            /* source leaf's clock at ingress (us, mod 2^32) */
    bit<32> fb_owd;        /* feedback: one-way delay of fb_path (us, incl. clock offset) */
    bit<8>  fb_path;       /* feedback: a path of the receiving leaf toward src_leaf */
    bit<8>  fb_level;      /* feedback: its congestion level, FB_NONE = no feedback */
    bit<16> next_type;     /* EtherType of what follows (IPv4) */
}

struct headers_t {
    packet_out_t  packet_out;
    packet_in_t   packet_in;
    ethernet_t    ethernet;
    tag_t         tag;
    arp_t         arp;
    ipv4_t        ipv4;
    l4_ports_t    l4;
    port_status_t port_status;
    notice_t      notice;
    probe_t       probe;
}

#endif
