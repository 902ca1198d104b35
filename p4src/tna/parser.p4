/* parser.p4 (TNA): headers, metadata, parsers and deparsers of the Tofino
 * program. The wire formats are the shared ones of ../include/headers.p4;
 * what is TNA's own is the bridged header (ingress -> egress) and the
 * split of per-packet state into ingress and egress metadata. */

#ifndef SGLB_TNA_PARSER_P4
#define SGLB_TNA_PARSER_P4

#include "words.p4"
#include "../include/headers.p4"

/* Bridged from ingress to egress (TNA has no metadata shared by the two). */
header bridge_t {
    bit<8>  punt_reason;    /* PUNT_*: packet_in.reason when sent to the CPU */
    bit<1>  to_engine;      /* Tofino: the glb and pick headers follow (recirculation port) */
    bit<1>  untag;          /* Tofino: a received tag egress takes off (ethernet, tag follow) */
    bit<1>  fb_store;       /* Tofino: ... after storing the metric it returns (feedback.p4) */
    bit<4>  pad0;
    port_t  ingress_port;   /* packet_in.ingress_port */
    bit<7>  pad1;
    bit<1>  raise_ce;       /* egress raises tag.ce / probe.hop_dre (spine, leaf uplink) */
}

#ifdef SGLB_TWO_PASS
/* The GLB engine's inputs on Tofino (GLB, words.p4): filled by the first
 * pass (configuration, profile, register reads, flowlet), read by the
 * engine in the recirculation port's egress, which works on some of them in
 * place and takes the header off. Only the pipeline's own ingress puts it
 * on a packet. */
header glb_t {
    pathmask_t forced_up;   /* the paths a RECOVER notice forces up */
    /* times (ns) */
    bit<32> idle;
    bit<32> gap_unknown;
    bit<32> gap_margin;
    bit<32> flowlet_gap;
    bit<8>  feedback;
}

/* What the pick takes on Tofino (PICK, words.p4): the first pass writes the
 * draws, the flowlet, the destination and its feedback path count, and the
 * paths the engine starts from; the engine (egress) the live paths, the
 * candidates and whether a new flowlet starts; the second pass reads it. The second pass parses only this header
 * (not glb), so that it stays within the parser's depth at 64 paths. Only
 * a packet from the recirculation port is parsed with it. */
header pick_t {
    pathmask_t live;        /* configured and up (path_down), then the engine's live paths */
    pathmask_t candidates;  /* SGLB: those less the forced down, then the engine's */
    bit<16> draw_word0; bit<16> draw_word1; bit<16> draw_word2; bit<16> draw_word3;
    bit<16> flowlet_index;
    bit<16> dst_leaf;
    bit<8>  fb_npaths;      /* read by the first pass (the register its tags store) */
    bit<8>  lb_mode;        /* switch_config's, or ECMP without a profile */
    bit<1>  new_flowlet;
    bit<7>  pad;
}
#endif

struct tna_headers_t {
    bridge_t      bridge;
#ifdef SGLB_TWO_PASS
    glb_t         glb;
    pick_t        pick;
#endif
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

/* bf-p4c zero-initialises the metadata, as v1model does. On Tofino the
 * fields of the engine's inputs and of the pick (GLB.*, PICK.*, words.p4)
 * are glb_t's and pick_t's, and their namesakes here go unused, as do the
 * engine's temporaries and the fields of the feedback's stores (egress
 * metadata there). */
@pa_auto_init_metadata
struct ig_meta_t {
    bool    checksum_error;
    bit<1>  second_pass;    /* Tofino: from the recirculation port, with pick */
    /* switch_config (times in ns) */
    bit<8>  role;
    bit<8>  lb_mode;
    bit<16> switch_id;
    bit<48> switch_mac;
    bit<32> flowlet_gap;
    bit<16> notice_group;
    bit<8>  feedback;
    bit<16> tag_room;       /* tag_frame_max - Ethernet and tag bytes, saturated */
    bit<28> fb_fresh;       /* feedback units (2^FB_TIME_SHIFT ns) */
    bit<32> gap_margin;
    bit<32> gap_unknown;
    /* uplinks: the configured paths (into `candidates`; path_down's read
     * narrows them into `live`: regs.p4) */
    pathmask_t live;
    bit<8>  path_count;
    /* port_neighbour */
    bit<8>  nb_kind;
    bit<16> nb_id;
    /* dst_profile */
    pathmask_t cp_mask;
    pathmask_t weighted;    /* paths with a non-zero capacity weight */
    pathmask_t rq0;         /* bit planes of the remote level (floored by unknown_level) */
    pathmask_t rq1;
    pathmask_t rq2;
    bit<8>  wprof;          /* weight profile of the draws */
    /* per-destination state read from registers */
    pathmask_t forced_up;   /* a RECOVER notice is in force */
    pathmask_t fb0;         /* bit planes of the fed-back level */
    pathmask_t fb1;
    pathmask_t fb2;
    pathmask_t fresh;
    bit<32> owd_min_c;      /* ~ the smallest fresh delay; 0: none fresh */
    bit<32> owd_max;
    /* The GLB engine (one ALU operation per statement; in place, see
     * steps.p4). Its masks form two groups that no ALU operation links, so
     * that bf-p4c can place each in one PHV container group (12 normal
     * containers of a size): liveness (live, weighted, forced_up, cp_mask,
     * live_safe) and levels (fresh, fb_j, rq_j, pl_and, pl_or, candidates);
     * on Tofino's egress glb_inputs links them (few masks there). Values cross between groups through identity
     * hashes (a copy by the hash unit links no containers, where an ALU move
     * would); band_level, the draws, the probe and kept_alive test bits by
     * lookups. */
    pathmask_t live_safe;   /* fresh, then the live and safe paths */
    pathmask_t pl_and;
    pathmask_t pl_or;
    bit<1>  safe_none;      /* live_safe is empty: nowhere safe to move */
    bit<1>  banded;         /* the candidates are a band (not all live paths) */
    pathmask_t candidates;  /* eligible (glb_step5), then those in the band */
    bit<16> draw_word0; bit<16> draw_word1; bit<16> draw_word2; bit<16> draw_word3;
    bit<16> lowest_word;    /* valid ++ path ++ port of the lowest candidate */
    bit<8>  lowest_chosen;  /* its path */
    bit<16> pick_word;      /* valid ++ path ++ port of the pick for a new flowlet */
    bit<16> flow_word;      /* valid ++ path ++ port the flowlet keeps (flowlet_path) */
    bit<1>  new_flowlet;
    bit<32> now;            /* ns mod 2^32 */
    bit<28> now_fb;
    pword_t gen;
    bit<32> gen32;
    bit<16> flowlet_index;
    bit<32> idle;
    bit<32> unknown_left;   /* gap_unknown - idle, saturated: 0 once idle long enough */
    bit<32> idle_margin;    /* idle - gap_margin, saturated */
    bit<32> skew_bound;
    bit<32> skew_over;      /* idle - (skew bound - 1), saturated: non-zero once past it */
    bit<32> gap_over;       /* idle - flowlet_gap, saturated */
    bit<DRAW_ROW_BITS> draw_row;
    bit<16> frame_over;     /* IPv4 bytes beyond tag_room, saturated */
    /* feedback received (a tag from the fabric) */
    bit<32> rx_index;
    bit<32> rx_word;        /* valid ++ ce ++ time (feedback units) */
    bit<32> rx_owd;         /* one-way delay of the tag (ns, incl. the clock offset) */
    bit<8>  tag_span;       /* tag.npaths - tag.path, saturated: 0 = path out of range */
    bit<16> nb_x;           /* nb_id ^ tag.src_leaf: 0 = the port is bound to the tag's source */
    bit<2>  tag_verdict;    /* tag_check: TAG_OK (or no tag), TAG_BAD, TAG_WRONG_PORT */
    pathmask_t fb_bit;      /* one-hot of tag.fb_path */
    bit<32> fb_owd_c;       /* ~tag.fb_owd (owd_low keeps complements) */
    bit<1>  fb_l0; bit<1> fb_l1; bit<1> fb_l2;
    /* feedback to return (read beside the GLB engine) */
    bit<8>  fb_npaths;
    bit<8>  fb_path;
    bit<8>  fb_over;
    bit<32> fb_index;
    bit<32> fb_word;        /* rx_level of (destination, fb_path) */
    bit<32> fb_owd;         /* rx_owd of (destination, fb_path) */
    bit<28> fb_age;
    bit<28> fb_fresh_left;
    bit<1>  fb_try;         /* the cursor named a path: fb_word, fb_owd are its */
    /* operations of the register access tables (0: read) */
    bit<8>  down_op;        /* OP_DOWN / OP_UP: port-status (leaf) */
    bit<8>  rx_op;          /* 1: store a tag's metric (rx_level, rx_owd, fb_npaths) */
    bit<8>  fb_op;          /* 1: store the metric a tag returns (planes, fresh, owd) */
    bit<8>  links_op;       /* OP_DOWN / OP_UP: port-status (spine) */
    /* classification and bookkeeping */
    bit<16> l4_src;
    bit<16> l4_dst;
    bit<16> dst_leaf;
    bit<1>  to_leaf;
    bit<1>  dec_ttl;        /* ipv4_route: to_host / to_leaf decrement the TTL once checked */
    bit<1>  leaf_route;     /* ipv4_route: to_leaf (the GLB engine runs on it) */
    bit<1>  route_miss;     /* ipv4_route: no_route */
    bit<1>  is_probe;
    bit<16> probe_dx;       /* probe.dst_leaf ^ switch_id: 0 = the probe is for this leaf */
    port_t  probe_port;     /* path_ports: port of the probe's path */
    bit<1>  probe_up;       /* probe_alive: the probe's path is configured and its port up */
    bit<1>  spine_known;    /* spine_paths hit */
    pathmask_t port_paths;  /* port_status: the paths on that port (leaf) */
    bit<8>  goes_down;
    bit<8>  port_was;
    bit<32> notice_key;     /* epoch mod 2^30 << 2 | valid << 1 | fail */
    bit<32> notice_rv;      /* notice_epoch's answer: key - held (write-back: held - key) */
    bit<8>  notice_seen;    /* notice_seen: something is held */
    bit<1>  notice_ok;      /* a notice that passed the checks */
    bit<16> nb_sx;          /* nb_id ^ notice.spine_id: 0 = the port is bound to that spine */
    bit<1>  arp_ok;         /* arp_check: a request for IPv4 over Ethernet */
    bit<1>  notice_applied;
    bit<32> notice_index;
    pathmask_t notice_paths;
    bit<16> spine_slot;
    bit<1>  peer_found;
    bit<16> peer_leaf;
    bit<8>  peer_member;    /* 1: member a, 2: member b of the leaf's downlinks */
    bit<8>  links_was;
    bit<8>  links_now;
    bit<1>  reach_changed;  /* links_change: the port-status changed the leaf's reachability */
    port_t  down_a;
    port_t  down_b;
    port_t  down_x;         /* down_a ^ down_b: zero when one port */
    bit<8>  share_a;
    bit<16> draw_base;      /* the destination's draw sequence offset (set_downlinks) */
    bit<1>  has_downlinks;
    bit<8>  split;
    bit<8>  split_left;     /* share_a - split, saturated: non-zero = link a */
    /* SGLB spine: the flow's member (spine_time, spine_flow: state.p4) */
    bit<SPINE_FLOW_BITS> spine_flow_index;
    bit<32> spine_idle;     /* flowlet_age: ns since the flow's last packet, ~0 if unseen */
    bit<32> spine_left;     /* gap_unknown - spine_idle, saturated: 0 = draw its member */
    bit<16> draw_point;     /* draw_next: the destination's next point of [0, 2^16) */
    bit<8>  draw_left;      /* share_a - draw_point's top 8 bits, saturated: non-zero = a */
    bit<8>  flow_member;    /* the member spine_flow keeps: 1 a, 2 b; 0 none (ECMP, probe) */
    bit<1>  forwarded;
    bit<1>  leaf_out;       /* leaf_decision: toward a leaf by the GLB engine's pick */
    bit<1>  tag_opened;     /* leaf_decision: the fabric tag opened (tag_stamp fills it) */
    bit<1>  consumed;
    bit<32> drop_reason;
    bit<32> event;          /* EV_* counted once, or EV_COUNTER_SIZE (none) */
    bit<32> tag_event;      /* EV_FEEDBACK_* / EV_TAG_SKIPPED, or none */
    bit<32> tmp_ip;
}

@pa_auto_init_metadata
struct eg_meta_t {
    bit<32> rate;           /* Lpf of the egress port's bytes */
    bit<8>  level;
#ifdef SGLB_TWO_PASS
    /* the feedback's registers (feedback.p4): set by the parser */
    bit<1>  fb_access;      /* read them (the glb header) or store (fb_op) */
    bit<8>  fb_op;          /* 1: store the metric of the tag */
    bit<16> dst_leaf;       /* their index: the engine's destination, the tag's source */
    pathmask_t fb_bit;      /* one-hot of tag.fb_path */
    bit<1>  fb_l0; bit<1> fb_l1; bit<1> fb_l2;
    bit<32> fb_owd_c;       /* ~tag.fb_owd */
    pword_t gen;            /* the generation of freshness */
    bit<32> gen32;
    /* the GLB engine's temporaries (engine.p4): the levels' planes (read
     * from the feedback's registers, then the levels), which paths are
     * fresh, then the live and safe ones, the delays, the flags and times */
    pathmask_t cp_mask;     /* dst_masks: the profile's masks */
    pathmask_t weighted;
    pathmask_t rq0;
    pathmask_t rq1;
    pathmask_t rq2;
    pathmask_t fb0;
    pathmask_t fb1;
    pathmask_t fb2;         /* then the paths above the band */
    pathmask_t fresh;
    pathmask_t live_safe;
    bit<32> owd_min_c;
    bit<32> owd_max;
    bit<32> gap_over;
    bit<1>  safe_none;
    bit<1>  banded;
    bit<32> unknown_left;
    bit<32> idle_margin;
    bit<32> skew_bound;
    bit<32> skew_over;
#endif
}

parser SglbIngressParser(packet_in pkt,
                         out tna_headers_t hdr,
                         out ig_meta_t meta,
                         out ingress_intrinsic_metadata_t ig_intr_md) {
    Checksum() ipv4_checksum;

    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        transition select(ig_intr_md.ingress_port) {
            CPU_PORT: parse_packet_out;
#ifdef SGLB_TWO_PASS
            RECIRC_PORT: parse_pick;
#endif
            default: parse_ethernet;
        }
    }

#ifdef SGLB_TWO_PASS
    state parse_pick {
        pkt.extract(hdr.pick);
        meta.second_pass = 1;
        meta.dst_leaf = hdr.pick.dst_leaf;
        transition parse_ethernet;
    }
#endif

    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_ARP: parse_arp;
            ETHERTYPE_PORT_STATUS: parse_port_status;
            ETHERTYPE_SGLB: parse_sglb;
            default: accept;
        }
    }

    state parse_arp {
        pkt.extract(hdr.arp);
        transition accept;
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        ipv4_checksum.add(hdr.ipv4);
        meta.checksum_error = ipv4_checksum.verify();
        transition select(hdr.ipv4.ihl, hdr.ipv4.protocol) {
            (4w5, IPPROTO_TCP): parse_l4;
            (4w5, IPPROTO_UDP): parse_l4;
            default: accept;
        }
    }

    state parse_l4 {
        pkt.extract(hdr.l4);
        transition accept;
    }

    state parse_port_status {
        pkt.extract(hdr.port_status);
        transition accept;
    }

    /* As in the v1model program: kind 3/4 probe, 5 tag, anything else a notice. */
    state parse_sglb {
        transition select(pkt.lookahead<bit<16>>()) {
            16w0x0003 &&& 16w0x00FF: parse_probe;
            16w0x0004 &&& 16w0x00FF: parse_probe;
            16w0x0005 &&& 16w0x00FF: parse_tag;
            default: parse_notice;
        }
    }

    state parse_tag {
        pkt.extract(hdr.tag);
        transition select(hdr.tag.next_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_notice {
        pkt.extract(hdr.notice);
        transition accept;
    }

    state parse_probe {
        pkt.extract(hdr.probe);
        transition accept;
    }
}

control SglbIngressDeparser(packet_out pkt,
                            inout tna_headers_t hdr,
                            in ig_meta_t meta,
                            in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_checksum;

    apply {
        hdr.ipv4.hdrChecksum = ipv4_checksum.update({
            hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
            hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset,
            hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr });
        pkt.emit(hdr.bridge);
#ifdef SGLB_TWO_PASS
        pkt.emit(hdr.glb);
        pkt.emit(hdr.pick);
#endif
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.tag);
        pkt.emit(hdr.arp);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.l4);
        pkt.emit(hdr.port_status);
        pkt.emit(hdr.notice);
        pkt.emit(hdr.probe);
    }
}

/* Egress sees the bridged header, then only what it may change: the tag's
 * ce and the probe's hop_dre (the rest is payload to it). */
parser SglbEgressParser(packet_in pkt,
                        out tna_headers_t hdr,
                        out eg_meta_t meta,
                        out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.bridge);
#ifdef SGLB_TWO_PASS
        transition select(hdr.bridge.to_engine, hdr.bridge.fb_store) {
            (1, _): parse_glb;
            (0, 1): parse_fb_tag;
            default: parse_ethernet;
        }
    }

    /* the engine's packet: its inputs and the pick header, nothing more
     * (the Ethernet frame is payload here: within the parser's depth) */
    state parse_glb {
        pkt.extract(hdr.glb);
        pkt.extract(hdr.pick);
        meta.fb_access = 1;
        meta.dst_leaf = hdr.pick.dst_leaf;
        transition accept;
    }

    /* a tag the ingress passed (it follows the Ethernet header), whose
     * metric is stored under its source leaf */
    state parse_fb_tag {
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.tag);
        meta.fb_access = 1;
        meta.fb_op = 1;
        meta.dst_leaf = hdr.tag.src_leaf;
        transition accept;
#endif
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_SGLB: parse_sglb;
            default: accept;
        }
    }

    state parse_sglb {
        transition select(pkt.lookahead<bit<16>>()) {
            16w0x0003 &&& 16w0x00FF: parse_probe;
            16w0x0005 &&& 16w0x00FF: parse_tag;
            default: accept;
        }
    }

    state parse_tag {
        pkt.extract(hdr.tag);
        transition accept;
    }

    state parse_probe {
        pkt.extract(hdr.probe);
        transition accept;
    }
}

control SglbEgressDeparser(packet_out pkt,
                           inout tna_headers_t hdr,
                           in eg_meta_t meta,
                           in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply {
#ifdef SGLB_TWO_PASS
        pkt.emit(hdr.pick);     /* to the second pass */
#endif
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.tag);
        pkt.emit(hdr.probe);
    }
}

#endif
