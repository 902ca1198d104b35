/* constants.p4: sizes, codes and wire constants of the SGLB program.
 *
 * Architecture-neutral (no v1model names): p4src/tna/sglb.p4 includes it with
 * headers.p4 and shares the wire formats. Every size can be overridden with -D
 * at compile time (e.g. a smaller FLOWLET_ENTRIES for tests); MAX_PATHS is a
 * compile-time choice of 8, 16 or 64 (paths.p4 expands the per-path steps). */

#ifndef SGLB_CONSTANTS_P4
#define SGLB_CONSTANTS_P4

#ifndef CPU_PORT
#define CPU_PORT 255
#endif
#ifndef MAX_PORTS
#define MAX_PORTS 512
#endif
#ifndef MAX_LEAVES
#define MAX_LEAVES 1024
#endif
#ifndef MAX_SPINES
#define MAX_SPINES 64
#endif
#ifndef FLOWLET_ENTRIES
#define FLOWLET_ENTRIES 4096
#endif
/* DRE period T = 2^DRE_PERIOD_SHIFT microseconds; the estimate halves every
 * period, so it holds about the bytes of the last 2T. */
#ifndef DRE_PERIOD_SHIFT
#define DRE_PERIOD_SHIFT 6
#endif
/* In-band feedback timestamps count units of 2^FB_TIME_SHIFT microseconds in
 * 28 bits (16 us units: the clock wraps after 71 minutes). */
#ifndef FB_TIME_SHIFT
#define FB_TIME_SHIFT 4
#endif

/* New-flowlet draws in SGLB mode (sglb.p4): the n-th draw toward a leaf is
 * at n * 0.618... + leaf * 0.414... (mod 1) in 16-bit fixed point; both
 * irrational, so the points of one leaf never repeat a pattern and two
 * leaves' sequences stay apart. */
const bit<16> DRAW_STRIDE      = 40503;   /* (sqrt(5) - 1) / 2 * 2^16 */
const bit<16> DRAW_LEAF_STRIDE = 27146;   /* (sqrt(2) - 1) * 2^16 */

/* Quantised congestion: 3 bits (0 = idle .. 7 = saturated), as in CONGA. */
#define QMAX 7
/* Cost of a path that is not live: larger than any real cost. */
#define COST_DEAD 15
/* fb_level of a tag that carries no feedback. */
#define FB_NONE 0xFF

typedef bit<9> port_t;

/* EtherTypes: the two IEEE 802 local experimental values; 0x88B5 is fixed by
 * the target for port-status packets, 0x88B6 carries the SGLB headers (notice,
 * probe, probe reply or fabric tag, told apart by their second byte, `kind`). */
const bit<16> ETHERTYPE_IPV4        = 0x0800;
const bit<16> ETHERTYPE_ARP         = 0x0806;
const bit<16> ETHERTYPE_PORT_STATUS = 0x88B5;
const bit<16> ETHERTYPE_SGLB        = 0x88B6;

const bit<8> IPPROTO_TCP = 6;
const bit<8> IPPROTO_UDP = 17;

/* Port-status packet (docs/softswitch-api.md). */
const bit<8> PORT_STATUS_VERSION = 1;
const bit<8> PORT_STATUS_DOWN    = 1;
const bit<8> PORT_STATUS_UP      = 2;

/* SGLB headers: version, kinds and lengths (bytes). */
const bit<8> SGLB_VERSION       = 1;
const bit<8> NOTICE_FAIL        = 1;
const bit<8> NOTICE_RECOVER     = 2;
const bit<8> PROBE_KIND         = 3;
const bit<8> PROBE_REPLY_KIND   = 4;
const bit<8> TAG_KIND           = 5;
const bit<8> NOTICE_LENGTH      = 12;
const bit<8> PROBE_LENGTH       = 20;
const bit<8> TAG_LENGTH         = 20;

/* packet_out.op */
const bit<8> PACKET_OUT_PIPELINE = 0;   /* process as a packet from the CPU port */
const bit<8> PACKET_OUT_DIRECT   = 1;   /* send out of packet_out.egress_port as is */

/* packet_in.reason */
const bit<8> PUNT_HOST        = 1;      /* addressed to the switch (route to_cpu) */
const bit<8> PUNT_PROBE_REPLY = 2;      /* reply to this leaf's probe; probe.time = RTT (us) */
const bit<8> PUNT_NOTICE      = 3;      /* notice this leaf has just applied (epoch write-back) */

/* switch_config.role / lb_mode */
const bit<8> ROLE_LEAF  = 0;
const bit<8> ROLE_SPINE = 1;
const bit<8> MODE_SGLB  = 0;
const bit<8> MODE_ECMP  = 1;

/* port_neighbour: what the control plane bound an ingress port to. */
const bit<8> NEIGHBOUR_NONE  = 0;
const bit<8> NEIGHBOUR_HOST  = 1;
const bit<8> NEIGHBOUR_SPINE = 2;
const bit<8> NEIGHBOUR_LEAF  = 3;

/* Index of the `drops` counter. */
const bit<32> DROP_MALFORMED         = 1;   /* parser error: truncated header */
const bit<32> DROP_TTL_EXPIRED       = 2;
const bit<32> DROP_NO_ROUTE          = 3;   /* no ipv4_route / arp_proxy entry */
const bit<32> DROP_NO_LIVE_PATH      = 4;
const bit<32> DROP_BAD_NOTICE        = 5;   /* version / length / kind / leaf / role */
const bit<32> DROP_BAD_PORT_STATUS   = 6;   /* version / op / port, or not from the CPU port */
const bit<32> DROP_BAD_PROBE         = 7;
const bit<32> DROP_EGRESS_PORT_DOWN  = 8;
const bit<32> DROP_UNSUPPORTED       = 9;   /* other EtherType, IPv4 options, ARP not a request */
const bit<32> DROP_BAD_IPV4          = 10;  /* version, or header checksum */
const bit<32> DROP_UNKNOWN_SPINE     = 11;  /* notice from a spine not in spine_paths */
const bit<32> DROP_BAD_PACKET_OUT    = 12;
const bit<32> DROP_NOTICE_WRONG_PORT = 13;  /* notice not on the port bound to its spine */
const bit<32> DROP_BAD_TAG           = 14;  /* fabric tag: version / length / fields */
const bit<32> DROP_TAG_WRONG_PORT    = 15;  /* fabric tag from a host or unbound port */
const bit<32> DROP_COUNTER_SIZE      = 32;

/* Index of the `events` counter. */
const bit<32> EV_FAILOVER          = 0;   /* flowlet moved because its path died */
const bit<32> EV_NEW_FLOWLET       = 1;   /* path chosen for a new flowlet */
const bit<32> EV_NOTICE_SENT       = 2;   /* spine turned a port-status into a notice */
const bit<32> EV_NOTICE_RECEIVED   = 3;   /* valid, newer notice applied by a leaf */
const bit<32> EV_NOTICE_STALE      = 4;   /* notice older than the one applied, ignored */
const bit<32> EV_PORT_DOWN         = 5;
const bit<32> EV_PORT_UP           = 6;
const bit<32> EV_PORT_STATUS_DUP   = 7;   /* port-status that changed nothing */
const bit<32> EV_PROBE_REPLIED     = 8;   /* probe reply punted at its source leaf */
const bit<32> EV_ARP_REPLIED       = 9;
const bit<32> EV_NOTICE_DUPLICATE  = 10;  /* another copy of the notice applied last */
const bit<32> EV_FEEDBACK_SENT     = 11;  /* tag carried a fresh (source, path) metric back */
const bit<32> EV_FEEDBACK_RECEIVED = 12;  /* metric of one of this leaf's paths stored */
const bit<32> EV_TAG_SKIPPED       = 13;  /* frame too long for the tag: sent untagged */
const bit<32> EV_MOVE_HELD         = 14;  /* new flowlet kept off paths by the delay-skew rule */
const bit<32> EV_PROBE_REFLECTED   = 15;  /* probe turned around at its destination leaf */
const bit<32> EV_COUNTER_SIZE      = 32;

#endif
