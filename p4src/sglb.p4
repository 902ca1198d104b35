/* sglb.p4: the SGLB data plane (P4_16, v1model).
 *
 * One program for both roles of a 2-tier leaf-spine fabric; the role is the
 * `role` parameter of the default action of `switch_config`.
 *
 *   leaf:  IPv4 routing and proxy ARP; traffic to another leaf goes through
 *          the GLB engine: per destination leaf a congestion profile from
 *          SyncMesh (remote congestion, capacity weight and written-back
 *          notice epoch of each path, liveness mask), combined with in-band
 *          feedback (a fabric tag on leaf-to-leaf traffic: spines raise its
 *          congestion field, the destination leaf returns the metric and the
 *          one-way delay of each path to the source), the local utilisation
 *          of each uplink (a DRE per egress port), port liveness and failure
 *          notices accepted only on the port bound to the spine they name;
 *          flowlets keep their path until idle longer than both flowlet_gap
 *          and the measured delay skew toward the new path, and then only if
 *          the path is no longer among the best, or until the path dies.
 *   spine: IPv4 routing down to the destination leaf over one or two parallel
 *          links split in proportion to their capacity (SGLB: per flow, by
 *          the destination's draw sequence); raises the tag's
 *          congestion field at egress; a port-status packet for a downlink
 *          whose leaf became unreachable (or reachable again) becomes a
 *          failure (recovery) notice, multicast to the leaves (k copies).
 *
 * lb_mode ECMP turns the leaf into per-flow hash ECMP over the live paths
 * (the baseline). MAX_PATHS (8, 16 or 64) is chosen at compile time with
 * -DMAX_PATHS=N. docs/sglb.md has the pipeline, the header formats and the
 * table / counter reference.
 */

/* register<T, I> needs the v1model of 2020-04-08; p4c's default is older. */
#define V1MODEL_VERSION 20200408
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

#include "include/constants.p4"
#include "include/paths.p4"
#include "include/headers.p4"
#include "include/metadata.p4"
#include "include/parser.p4"
#include "include/glb_unroll.p4"

/* ---- State shared by ingress and egress (data-plane only: registers) ---- */

register<bit<1>, bit<32>>(MAX_PORTS) port_down;    /* 1 = port has no carrier */
register<bit<32>, bit<32>>(MAX_PORTS) dre_bytes;   /* DRE of each egress port */
register<bit<48>, bit<32>>(MAX_PORTS) dre_time;    /* start of its current period */

control SglbIngress(inout headers_t hdr,
                    inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {

    /* Flowlets: last-seen time (us mod 2^32) and path + 1 (0 = empty). */
    register<bit<32>, bit<32>>(FLOWLET_ENTRIES) flowlet_time;
    register<bit<8>, bit<32>>(FLOWLET_ENTRIES) flowlet_path;

    /* Per path, per destination leaf: notice state (epoch mod 2^31, fail),
     * fed-back metric (valid, level, time) and one-way delay. */
    SGLB_FOR_EACH_PATH(SGLB_PATH_REGISTERS)

    /* Destination side of the feedback, per (source leaf, path): the last
     * tag's (valid, ce, time) and one-way delay; per source leaf the next
     * path to return and the source's path count. */
    register<bit<32>, bit<32>>(MAX_LEAVES * MAX_PATHS) rx_level;
    register<bit<32>, bit<32>>(MAX_LEAVES * MAX_PATHS) rx_owd;
    register<bit<16>, bit<32>>(MAX_LEAVES) fb_cursor;

    /* Per destination leaf, the position of its next new-flowlet draw in a
     * golden-ratio sequence (see the pick below). */
    register<bit<16>, bit<32>>(MAX_LEAVES) draw_cursor;

    /* Counters read by the control plane. */
    counter<bit<32>>(MAX_PORTS, CounterType.packets_and_bytes) port_rx;
    counter<bit<32>>(DROP_COUNTER_SIZE, CounterType.packets) drops;   /* index DROP_* */
    counter<bit<32>>(EV_COUNTER_SIZE, CounterType.packets) events;    /* index EV_* */

    /* The packet's flowlet (SGLB mode, leaves and spines): its slot, the
     * path (leaf) or member (spine) it took + 1, and how long it has been idle. */
    action flowlet_lookup() {
        hash(meta.flowlet_index, HashAlgorithm.crc16, (bit<32>)0,
             { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
               meta.l4_src, meta.l4_dst },
             (bit<32>)FLOWLET_ENTRIES);
        bit<32> last_seen;
        flowlet_time.read(last_seen, meta.flowlet_index);
        flowlet_path.read(meta.last_path, meta.flowlet_index);
        meta.idle = meta.now - last_seen;
    }

    /* The next point in [0, 2^16) for a new flowlet toward meta.dst_leaf: the
     * destination's sequence n * 0.618 + leaf * 0.414 (mod 1), which fills
     * [0, 1) evenly however few points it has. SGLB_HASH_DRAW: a hash of the
     * 5-tuple and the time instead. */
    action next_draw_point() {
#ifdef SGLB_HASH_DRAW
        hash(meta.pick_hash, HashAlgorithm.crc32, (bit<32>)0,
             { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
               meta.l4_src, meta.l4_dst, standard_metadata.ingress_global_timestamp },
             (bit<32>)65536);
#else
        bit<16> draws_made;
        draw_cursor.read(draws_made, (bit<32>)meta.dst_leaf);
        draws_made = draws_made + 1;
        draw_cursor.write((bit<32>)meta.dst_leaf, draws_made);
        meta.pick_hash = (bit<32>)(draws_made * DRAW_STRIDE + meta.dst_leaf * DRAW_LEAF_STRIDE);
#endif
    }

    /* -- switch_config: one per switch, set as the default action -- */
    action set_switch(bit<8> role, bit<8> lb_mode, bit<16> switch_id,
                      bit<48> switch_mac, bit<32> flowlet_gap,
                      bit<8> tie_tolerance, bit<16> notice_group,
                      bit<8> feedback, bit<32> tag_frame_max,
                      bit<32> fb_fresh, bit<32> fb_stale, bit<8> unknown_level,
                      bit<32> gap_margin, bit<32> gap_unknown) {
        meta.role = role;
        meta.lb_mode = lb_mode;
        meta.switch_id = switch_id;
        meta.switch_mac = switch_mac;
        meta.flowlet_gap = flowlet_gap;
        meta.tie_tolerance = tie_tolerance;
        meta.notice_group = notice_group;
        meta.feedback = feedback;
        meta.tag_frame_max = tag_frame_max;
        meta.fb_fresh = fb_fresh;
        meta.fb_stale = fb_stale;
        meta.unknown_level = unknown_level;
        meta.gap_margin = gap_margin;
        meta.gap_unknown = gap_unknown;
    }

    table switch_config {
        actions = { set_switch; }
        default_action = set_switch(ROLE_LEAF, MODE_SGLB, 0, 0, 200, 1, 0,
                                    0, 1514, 10000, 100000, 0, 100, 100000);
        size = 1;
    }

    /* -- uplinks: the paths of a leaf (port and DRE quantisation shift) -- */
    action set_uplinks(pathmask_t path_slots, bit<8> path_count
                       SGLB_FOR_EACH_PATH(SGLB_PORT_PARAM)
                       SGLB_FOR_EACH_PATH(SGLB_SHIFT_PARAM)) {
        meta.path_slots = path_slots;
        meta.path_count = path_count;
        SGLB_FOR_EACH_PATH(SGLB_SET_UPLINK)
    }

    action no_uplinks() {
        meta.path_slots = 0;
        meta.path_count = 0;
    }

    table uplinks {
        actions = { set_uplinks; no_uplinks; }
        default_action = no_uplinks();
        size = 1;
    }

    /* -- port_neighbour: what the control plane bound each port to -- */
    action bind_host() {
        meta.nb_kind = NEIGHBOUR_HOST;
        meta.nb_id = 0;
    }

    action bind_spine(bit<16> spine_id) {
        meta.nb_kind = NEIGHBOUR_SPINE;
        meta.nb_id = spine_id;
    }

    action bind_leaf(bit<16> leaf_id) {
        meta.nb_kind = NEIGHBOUR_LEAF;
        meta.nb_id = leaf_id;
    }

    action unbound() {
        meta.nb_kind = NEIGHBOUR_NONE;
        meta.nb_id = 0;
    }

    table port_neighbour {
        key = { standard_metadata.ingress_port: exact; }
        actions = { bind_host; bind_spine; bind_leaf; unbound; }
        default_action = unbound();
        size = MAX_PORTS;
    }

    /* -- ipv4_route: local host, remote leaf, the switch itself -- */
    action to_host(port_t port, bit<48> host_mac) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = meta.switch_mac;
        hdr.ethernet.dstAddr = host_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        meta.forwarded = 1;
    }

    action to_leaf(bit<16> leaf) {
        meta.dst_leaf = leaf;
        meta.to_leaf = 1;
        hdr.ethernet.srcAddr = meta.switch_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    action to_cpu() {
        standard_metadata.egress_spec = CPU_PORT;
        meta.punt_reason = PUNT_HOST;
        meta.forwarded = 1;
    }

    action no_route() {
        meta.drop_reason = DROP_NO_ROUTE;
    }

    table ipv4_route {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { to_host; to_leaf; to_cpu; no_route; }
        default_action = no_route();
        size = 4096;
    }

    /* -- arp_proxy: the switch answers ARP requests for the addresses it routes -- */
    action arp_reply(bit<48> mac) {
        hdr.arp.oper = 2;
        hdr.arp.tha = hdr.arp.sha;
        hdr.arp.sha = mac;
        meta.tmp_ip = hdr.arp.tpa;
        hdr.arp.tpa = hdr.arp.spa;
        hdr.arp.spa = meta.tmp_ip;
        hdr.ethernet.dstAddr = hdr.ethernet.srcAddr;
        hdr.ethernet.srcAddr = mac;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
        meta.forwarded = 1;
        events.count(EV_ARP_REPLIED);
    }

    action arp_miss() {
        meta.drop_reason = DROP_NO_ROUTE;
    }

    table arp_proxy {
        key = { hdr.arp.tpa: lpm; }
        actions = { arp_reply; arp_miss; }
        default_action = arp_miss();
        size = 1024;
    }

    /* -- dst_profile: SyncMesh's view of a destination leaf (leaf) -- */
    action set_profile(pathmask_t live_mask
                       SGLB_FOR_EACH_PATH(SGLB_RQ_PARAM)
                       SGLB_FOR_EACH_PATH(SGLB_W_PARAM)
                       SGLB_FOR_EACH_PATH(SGLB_EP_PARAM)) {
        meta.cp_mask = live_mask;
        SGLB_FOR_EACH_PATH(SGLB_SET_PROFILE)
    }

    /* No congestion data for this leaf: hash ECMP over the live paths. */
    action no_profile() {
        meta.cp_mask = (pathmask_t)-1;
        SGLB_FOR_EACH_PATH(SGLB_NO_PROFILE)
        meta.lb_mode = MODE_ECMP;
    }

    table dst_profile {
        key = { meta.dst_leaf: exact; }
        actions = { set_profile; no_profile; }
        default_action = no_profile();
        size = MAX_LEAVES;
    }

    /* -- spine_paths: the paths of this leaf that go through a spine (leaf) -- */
    action set_spine(pathmask_t paths) {
        meta.notice_paths = paths;
    }

    action unknown_spine() {
        meta.drop_reason = DROP_UNKNOWN_SPINE;
    }

    table spine_paths {
        key = { hdr.notice.spine_id: exact; }
        actions = { set_spine; unknown_spine; }
        default_action = unknown_spine();
        size = MAX_SPINES;
    }

    /* -- port_peer: the leaf behind a downlink and its parallel link (spine) -- */
    action peer(bit<16> leaf, port_t sibling) {
        meta.peer_found = 1;
        meta.peer_leaf = leaf;
        meta.peer_sibling = sibling;
    }

    action no_peer() {
        meta.peer_found = 0;
    }

    table port_peer {
        key = { hdr.port_status.port: exact; }
        actions = { peer; no_peer; }
        default_action = no_peer();
        size = MAX_PORTS;
    }

    /* -- leaf_downlinks: one or two parallel links to each leaf (spine) -- */
    action set_downlinks(port_t port_a, port_t port_b, bit<8> share_a) {
        meta.down_a = port_a;
        meta.down_b = port_b;
        meta.share_a = share_a;
        meta.has_downlinks = 1;
    }

    action no_downlinks() {
        meta.has_downlinks = 0;
    }

    table leaf_downlinks {
        key = { meta.dst_leaf: exact; }
        actions = { set_downlinks; no_downlinks; }
        default_action = no_downlinks();
        size = MAX_LEAVES;
    }

    apply {
        switch_config.apply();
        uplinks.apply();
        port_neighbour.apply();
        port_rx.count((bit<32>)standard_metadata.ingress_port);
        meta.now = standard_metadata.ingress_global_timestamp[31:0];
        meta.now_fb = (bit<28>)(standard_metadata.ingress_global_timestamp >> FB_TIME_SHIFT);

        /* ---- Stage 1: classify and handle control packets ---- */
        if (standard_metadata.parser_error != error.NoError) {
            meta.drop_reason = DROP_MALFORMED;
        } else if (hdr.packet_out.isValid() && hdr.packet_out.op == PACKET_OUT_DIRECT) {
            if (hdr.packet_out.egress_port >= MAX_PORTS) {
                meta.drop_reason = DROP_BAD_PACKET_OUT;
            } else {
                standard_metadata.egress_spec = (port_t)hdr.packet_out.egress_port;
                meta.forwarded = 1;
            }
            hdr.packet_out.setInvalid();
        } else if (hdr.packet_out.isValid() && hdr.packet_out.op != PACKET_OUT_PIPELINE) {
            meta.drop_reason = DROP_BAD_PACKET_OUT;
        } else if (hdr.port_status.isValid()) {
            hdr.packet_out.setInvalid();
            /* Link state: only from the CPU port, checked before any state change. */
            if (standard_metadata.ingress_port != CPU_PORT
                    || hdr.port_status.version != PORT_STATUS_VERSION
                    || (hdr.port_status.op != PORT_STATUS_DOWN
                        && hdr.port_status.op != PORT_STATUS_UP)
                    || hdr.port_status.port >= MAX_PORTS) {
                meta.drop_reason = DROP_BAD_PORT_STATUS;
            } else {
                meta.consumed = 1;
                bit<1> was_down;
                port_down.read(was_down, (bit<32>)hdr.port_status.port);
                bit<1> goes_down = 0;
                if (hdr.port_status.op == PORT_STATUS_DOWN) {
                    goes_down = 1;
                }
                if (was_down == goes_down) {
                    events.count(EV_PORT_STATUS_DUP);
                } else {
                    port_down.write((bit<32>)hdr.port_status.port, goes_down);
                    if (goes_down == 1) {
                        events.count(EV_PORT_DOWN);
                    } else {
                        events.count(EV_PORT_UP);
                    }
                    if (meta.role == ROLE_SPINE) {
                        port_peer.apply();
                        /* The leaf's reachability changes only if the parallel
                         * link (if any) is down too. */
                        bit<1> sibling_down = 1;
                        if (meta.peer_sibling != (port_t)hdr.port_status.port) {
                            port_down.read(sibling_down, (bit<32>)meta.peer_sibling);
                        }
                        if (meta.peer_found == 1 && sibling_down == 1
                                && meta.notice_group != 0) {
                            hdr.notice.setValid();
                            hdr.notice.version = SGLB_VERSION;
                            if (goes_down == 1) {
                                hdr.notice.kind = NOTICE_FAIL;
                            } else {
                                hdr.notice.kind = NOTICE_RECOVER;
                            }
                            hdr.notice.length = NOTICE_LENGTH;
                            hdr.notice.reserved = 0;
                            hdr.notice.spine_id = meta.switch_id;
                            hdr.notice.leaf_id = meta.peer_leaf;
                            hdr.notice.epoch = hdr.port_status.seq;
                            hdr.port_status.setInvalid();
                            hdr.ethernet.dstAddr = 0xFFFFFFFFFFFF;
                            hdr.ethernet.srcAddr = meta.switch_mac;
                            hdr.ethernet.etherType = ETHERTYPE_SGLB;
                            standard_metadata.mcast_grp = meta.notice_group;
                            meta.consumed = 0;
                            meta.forwarded = 1;
                            events.count(EV_NOTICE_SENT);
                        }
                    }
                }
            }
        } else if (hdr.notice.isValid()) {
            hdr.packet_out.setInvalid();
            if (hdr.notice.version != SGLB_VERSION
                    || hdr.notice.length != NOTICE_LENGTH
                    || (hdr.notice.kind != NOTICE_FAIL && hdr.notice.kind != NOTICE_RECOVER)
                    || hdr.notice.leaf_id >= MAX_LEAVES
                    || meta.role != ROLE_LEAF) {
                meta.drop_reason = DROP_BAD_NOTICE;
            } else if (meta.nb_kind != NEIGHBOUR_SPINE
                    || meta.nb_id != hdr.notice.spine_id) {
                /* Only the spine it names, on the port bound to that spine:
                 * never a host, another switch's port or the CPU. */
                meta.drop_reason = DROP_NOTICE_WRONG_PORT;
            } else {
                spine_paths.apply();
                if (meta.drop_reason == 0) {
                    meta.notice_epoch = hdr.notice.epoch[29:0];
                    SGLB_FOR_EACH_PATH(SGLB_NOTICE_APPLY)
                    if (meta.notice_new == 1) {
                        /* Applied: the control plane gets it, so that it can
                         * write back the epoch once its view includes it. */
                        events.count(EV_NOTICE_RECEIVED);
                        standard_metadata.egress_spec = CPU_PORT;
                        meta.punt_reason = PUNT_NOTICE;
                        meta.forwarded = 1;
                    } else if (meta.notice_dup == 1) {
                        events.count(EV_NOTICE_DUPLICATE);
                        meta.consumed = 1;
                    } else {
                        events.count(EV_NOTICE_STALE);
                        meta.consumed = 1;
                    }
                }
            }
        } else if (hdr.probe.isValid()) {
            if (hdr.probe.version != SGLB_VERSION
                    || hdr.probe.length != PROBE_LENGTH
                    || hdr.probe.dst_leaf >= MAX_LEAVES
                    || hdr.probe.path >= MAX_PATHS) {
                meta.drop_reason = DROP_BAD_PROBE;
            } else if (meta.role == ROLE_SPINE) {
                if (meta.nb_kind != NEIGHBOUR_LEAF) {
                    meta.drop_reason = DROP_BAD_PROBE;
                } else {
                    meta.dst_leaf = hdr.probe.dst_leaf;
                    meta.to_leaf = 1;
                }
            } else if (hdr.packet_out.isValid()) {
                /* From this leaf's controller: out on the path it names. */
                if (hdr.probe.kind != PROBE_KIND || hdr.probe.dst_leaf == meta.switch_id) {
                    meta.drop_reason = DROP_BAD_PROBE;
                } else {
                    hdr.probe.src_leaf = meta.switch_id;
                    hdr.probe.hop_dre = 0;
                    hdr.probe.stamp = meta.now;
                    meta.dst_leaf = hdr.probe.dst_leaf;
                    meta.to_leaf = 1;
                    meta.is_probe = 1;
                }
            } else if (meta.nb_kind != NEIGHBOUR_SPINE || hdr.probe.dst_leaf != meta.switch_id) {
                meta.drop_reason = DROP_BAD_PROBE;   /* leaves do not relay probes */
            } else if (hdr.probe.kind == PROBE_KIND) {
                /* At its destination: back to the source through the same spine. */
                hdr.probe.kind = PROBE_REPLY_KIND;
                hdr.probe.dst_leaf = hdr.probe.src_leaf;
                hdr.probe.src_leaf = meta.switch_id;
                hdr.ethernet.dstAddr = hdr.ethernet.srcAddr;
                hdr.ethernet.srcAddr = meta.switch_mac;
                standard_metadata.egress_spec = standard_metadata.ingress_port;
                meta.forwarded = 1;
                events.count(EV_PROBE_REFLECTED);
            } else {
                /* The reply, back at the source: round-trip time to the CPU. */
                hdr.probe.stamp = meta.now - hdr.probe.stamp;
                standard_metadata.egress_spec = CPU_PORT;
                meta.punt_reason = PUNT_PROBE_REPLY;
                meta.forwarded = 1;
                events.count(EV_PROBE_REPLIED);
            }
            hdr.packet_out.setInvalid();
        } else if (hdr.arp.isValid()) {
            hdr.packet_out.setInvalid();
            if (hdr.arp.oper == 1 && hdr.arp.htype == 1 && hdr.arp.ptype == ETHERTYPE_IPV4
                    && hdr.arp.spa != hdr.arp.tpa) {
                arp_proxy.apply();
            } else {
                meta.drop_reason = DROP_UNSUPPORTED;
            }
        } else if (hdr.tag.isValid() && !hdr.ipv4.isValid()) {
            meta.drop_reason = DROP_BAD_TAG;
        } else if (hdr.ipv4.isValid()) {
            hdr.packet_out.setInvalid();
            if (hdr.tag.isValid()) {
                if (hdr.tag.version != SGLB_VERSION || hdr.tag.length != TAG_LENGTH
                        || hdr.tag.npaths == 0 || hdr.tag.npaths > MAX_PATHS
                        || hdr.tag.path >= hdr.tag.npaths || hdr.tag.ce > QMAX
                        || hdr.tag.src_leaf >= MAX_LEAVES
                        || (hdr.tag.fb_level != FB_NONE
                            && (hdr.tag.fb_level > QMAX || hdr.tag.fb_path >= MAX_PATHS))) {
                    meta.drop_reason = DROP_BAD_TAG;
                } else if (meta.role == ROLE_LEAF && meta.nb_kind != NEIGHBOUR_SPINE) {
                    meta.drop_reason = DROP_TAG_WRONG_PORT;
                } else if (meta.role == ROLE_SPINE && (meta.nb_kind != NEIGHBOUR_LEAF
                                                       || meta.nb_id != hdr.tag.src_leaf)) {
                    /* A spine vouches for the source leaf it passes on. */
                    meta.drop_reason = DROP_TAG_WRONG_PORT;
                }
            }
            if (meta.drop_reason != 0) {
                /* counted below */
            } else if (hdr.ipv4.version != 4 || standard_metadata.checksum_error == 1) {
                meta.drop_reason = DROP_BAD_IPV4;
            } else if (hdr.ipv4.ihl != 5) {
                meta.drop_reason = DROP_UNSUPPORTED;
            } else if (hdr.ipv4.ttl <= 1) {
                meta.drop_reason = DROP_TTL_EXPIRED;
            } else {
                if (hdr.l4.isValid()) {
                    meta.l4_src = hdr.l4.srcPort;
                    meta.l4_dst = hdr.l4.dstPort;
                }
                ipv4_route.apply();
            }
        } else {
            meta.drop_reason = DROP_UNSUPPORTED;
        }

        if (meta.drop_reason == 0 && meta.to_leaf == 1 && meta.dst_leaf >= MAX_LEAVES) {
            meta.drop_reason = DROP_NO_ROUTE;
        }

        /* ---- Stage 2 (leaf): a tagged packet from the fabric ---- */
        if (meta.drop_reason == 0 && meta.role == ROLE_LEAF && hdr.tag.isValid()) {
            if (meta.to_leaf == 1) {
                meta.drop_reason = DROP_NO_ROUTE;   /* no leaf-to-leaf transit */
            } else {
                /* Record the metric of (source, path) for the feedback ... */
                bit<32> rx_index = ((bit<32>)hdr.tag.src_leaf << PATH_INDEX_BITS)
                                   + (bit<32>)hdr.tag.path;
                rx_level.write(rx_index, 1w1 ++ hdr.tag.ce[2:0] ++ meta.now_fb);
                rx_owd.write(rx_index, meta.now - hdr.tag.ts);
                bit<16> cursor;
                fb_cursor.read(cursor, (bit<32>)hdr.tag.src_leaf);
                if (cursor[7:0] != hdr.tag.npaths) {
                    bit<8> next_path = cursor[15:8];
                    if (next_path >= hdr.tag.npaths) {
                        next_path = 0;
                    }
                    fb_cursor.write((bit<32>)hdr.tag.src_leaf, next_path ++ hdr.tag.npaths);
                }
                /* ... and the metric it returns about one of our paths. */
                if (hdr.tag.fb_level != FB_NONE) {
                    SGLB_FOR_EACH_PATH(SGLB_FB_STORE)
                    events.count(EV_FEEDBACK_RECEIVED);
                }
                hdr.ethernet.etherType = hdr.tag.next_type;
                hdr.tag.setInvalid();
            }
        }

        /* ---- Stage 2 (leaf): the GLB engine ---- */
        if (meta.drop_reason == 0 && meta.role == ROLE_LEAF && meta.to_leaf == 1) {
            dst_profile.apply();
            if (meta.is_probe == 1) {
                /* A probe takes the path it names whenever that port is up,
                 * excluded or not: that is how a recovery is seen. */
                SGLB_FOR_EACH_PATH(SGLB_PROBE_PORT)
                bit<1> probe_port_down;
                port_down.read(probe_port_down, (bit<32>)standard_metadata.egress_spec);
                if (meta.probe_slot == 0 || probe_port_down == 1) {
                    meta.drop_reason = DROP_NO_LIVE_PATH;
                } else {
                    meta.forwarded = 1;
                }
            } else {
                /* The flowlet of the packet (SGLB mode): its path and idle time. */
                if (meta.lb_mode == MODE_SGLB) {
                    flowlet_lookup();
                }

                SGLB_FOR_EACH_PATH(SGLB_PATH_STATE)

                /* ECMP (the baseline) knows only local link state and the
                 * control plane's mask; SGLB also uses notices and weights. */
                if (meta.lb_mode == MODE_SGLB) {
                    meta.live = meta.path_slots & meta.local_up & meta.allowed & meta.weighted;
                } else {
                    meta.live = meta.path_slots & meta.local_up & meta.cp_mask;
                }

                if (meta.live == 0) {
                    meta.drop_reason = DROP_NO_LIVE_PATH;
                } else {
                    bit<1> keep = 0;
                    if (meta.lb_mode == MODE_SGLB) {
                        SGLB_FOR_EACH_PATH(SGLB_LAST_PATH)
                        if (meta.last_path != 0 && meta.last_live == 1
                                && meta.idle <= meta.flowlet_gap) {
                            keep = 1;   /* same flowlet, path alive */
                        } else if (meta.feedback == 1) {
                            SGLB_FOR_EACH_PATH(SGLB_SAFE)
                        } else {
                            meta.safe = meta.live;   /* no delays measured: the gap alone */
                        }
                    } else {
                        meta.safe = meta.live;
                    }

                    if (keep == 1) {
                        meta.chosen = meta.last_path - 1;
                    } else {
                        meta.min_cost = COST_DEAD;
                        SGLB_FOR_EACH_PATH(SGLB_MIN_COST)
                        meta.weight_sum = 0;
                        SGLB_FOR_EACH_PATH(SGLB_ACCUMULATE)

                        /* A point in [0, weight_sum). ECMP: from the 5-tuple.
                         * SGLB: the destination's next draw point, so that k
                         * new flowlets land on the candidates in proportion to
                         * their weights (a hash lands them so only on average:
                         * 6 of 16 bulk connections on a path whose share is 3.2). */
                        if (meta.lb_mode == MODE_ECMP) {
                            hash(meta.pick_hash, HashAlgorithm.crc32, (bit<32>)0,
                                 { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
                                   meta.l4_src, meta.l4_dst, 48w0 },   /* 48w0: the hash ECMP always had */
                                 (bit<32>)65536);
                        } else {
                            next_draw_point();
                        }
                        meta.pick_point = (meta.pick_hash * meta.weight_sum) >> 16;
                        SGLB_FOR_EACH_PATH(SGLB_PICK)
                        meta.chosen = meta.pick;
                        if (meta.lb_mode == MODE_SGLB) {
                            /* A new flowlet moves only if that helps: it keeps a
                             * previous path that is still a candidate. */
                            SGLB_FOR_EACH_PATH(SGLB_LAST_CANDIDATE)
                            if (meta.last_candidate == 1) {
                                meta.chosen = meta.last_path - 1;
                            }
                            if (meta.last_path != 0 && meta.last_live == 0) {
                                events.count(EV_FAILOVER);
                            } else {
                                events.count(EV_NEW_FLOWLET);
                            }
                            if (meta.live != meta.safe) {
                                events.count(EV_MOVE_HELD);
                            }
                        }
                    }

                    if (meta.lb_mode == MODE_SGLB) {
                        flowlet_time.write(meta.flowlet_index, meta.now);
                        flowlet_path.write(meta.flowlet_index, meta.chosen + 1);
                    }
                    SGLB_FOR_EACH_PATH(SGLB_PORT_OF)
                    meta.forwarded = 1;

                    /* The fabric tag: path, clock, and one fresh metric of the
                     * destination's paths toward us, in turn. */
                    if (meta.lb_mode == MODE_SGLB && meta.feedback == 1) {
                        if (standard_metadata.packet_length + (bit<32>)TAG_LENGTH
                                > meta.tag_frame_max) {
                            events.count(EV_TAG_SKIPPED);
                        } else {
                            hdr.tag.setValid();
                            hdr.tag.version = SGLB_VERSION;
                            hdr.tag.kind = TAG_KIND;
                            hdr.tag.length = TAG_LENGTH;
                            hdr.tag.npaths = meta.path_count;
                            hdr.tag.src_leaf = meta.switch_id;
                            hdr.tag.path = meta.chosen;
                            hdr.tag.ce = 0;
                            hdr.tag.ts = meta.now;
                            hdr.tag.fb_owd = 0;
                            hdr.tag.fb_path = 0;
                            hdr.tag.fb_level = FB_NONE;
                            hdr.tag.next_type = hdr.ethernet.etherType;
                            hdr.ethernet.etherType = ETHERTYPE_SGLB;
                            bit<16> cursor;
                            fb_cursor.read(cursor, (bit<32>)meta.dst_leaf);
                            bit<8> fb_path = cursor[15:8];
                            if (cursor[7:0] != 0) {
                                bit<8> next_path = fb_path + 1;
                                if (next_path >= cursor[7:0]) {
                                    next_path = 0;
                                }
                                fb_cursor.write((bit<32>)meta.dst_leaf, next_path ++ cursor[7:0]);
                                bit<32> rx_index = ((bit<32>)meta.dst_leaf << PATH_INDEX_BITS)
                                                   + (bit<32>)fb_path;
                                bit<32> level_word;
                                bit<32> owd_word;
                                rx_level.read(level_word, rx_index);
                                rx_owd.read(owd_word, rx_index);
                                bit<28> age_units = meta.now_fb - level_word[27:0];
                                bit<32> age = ((bit<32>)age_units) << FB_TIME_SHIFT;
                                if (level_word[31:31] == 1 && age <= meta.fb_fresh) {
                                    hdr.tag.fb_path = fb_path;
                                    hdr.tag.fb_level = (bit<8>)level_word[30:28];
                                    hdr.tag.fb_owd = owd_word;
                                    events.count(EV_FEEDBACK_SENT);
                                }
                            }
                        }
                    }
                }
            }
        }

        /* ---- Stage 2 (spine): down to the destination leaf ---- */
        if (meta.drop_reason == 0 && meta.role == ROLE_SPINE && meta.to_leaf == 1) {
            leaf_downlinks.apply();
            if (meta.has_downlinks == 0) {
                meta.drop_reason = DROP_NO_ROUTE;
            } else {
                bit<1> a_down;
                bit<1> b_down;
                port_down.read(a_down, (bit<32>)meta.down_a);
                port_down.read(b_down, (bit<32>)meta.down_b);
                if (a_down == 0 && b_down == 0 && meta.down_a != meta.down_b) {
                    /* Split in proportion to the members' capacity: ECMP by a
                     * hash of the 5-tuple; SGLB by the destination's draw
                     * sequence, so that k flows split k * share however few
                     * they are (a hash put 80% of the bytes on one of two
                     * equal members). The spine does not measure its members'
                     * delays, so, as a leaf does toward a path of unknown
                     * delay, it moves a flow only after gap_unknown idle: in
                     * effect once per flow, never reordering it. */
                    bit<1> to_a = 0;
                    if (meta.lb_mode == MODE_SGLB) {
                        flowlet_lookup();
                        if (meta.last_path != 0 && meta.idle < meta.gap_unknown) {
                            /* same flow: its member (none on a member of share 0) */
                            if (meta.last_path == 1 && meta.share_a != 0) {
                                to_a = 1;
                            }
                        } else {
                            next_draw_point();
                            if ((meta.pick_hash >> 8) < (bit<32>)meta.share_a) {
                                to_a = 1;
                            }
                        }
                        flowlet_time.write(meta.flowlet_index, meta.now);
                        flowlet_path.write(meta.flowlet_index, 2 - (bit<8>)to_a);
                    } else {
                        hash(meta.pick_hash, HashAlgorithm.crc32, (bit<32>)0,
                             { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
                               meta.l4_src, meta.l4_dst },
                             (bit<32>)256);
                        if (meta.pick_hash < (bit<32>)meta.share_a) {
                            to_a = 1;
                        }
                    }
                    if (to_a == 1) {
                        standard_metadata.egress_spec = meta.down_a;
                    } else {
                        standard_metadata.egress_spec = meta.down_b;
                    }
                    meta.forwarded = 1;
                } else if (a_down == 0) {
                    standard_metadata.egress_spec = meta.down_a;
                    meta.forwarded = 1;
                } else if (b_down == 0) {
                    standard_metadata.egress_spec = meta.down_b;
                    meta.forwarded = 1;
                } else {
                    meta.drop_reason = DROP_NO_LIVE_PATH;
                }
            }
        }

        /* ---- Stage 3: every packet not sent is consumed or counted ---- */
        if (meta.drop_reason != 0) {
            drops.count(meta.drop_reason);
            mark_to_drop(standard_metadata);
        } else if (meta.consumed == 1) {
            mark_to_drop(standard_metadata);
        } else if (meta.forwarded == 0) {
            drops.count(DROP_NO_ROUTE);
            mark_to_drop(standard_metadata);
        }
    }
}

control SglbEgress(inout headers_t hdr,
                   inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {

    /* Counters read by the control plane. */
    counter<bit<32>>(MAX_PORTS, CounterType.packets_and_bytes) port_tx;
    counter<bit<32>>(DROP_COUNTER_SIZE, CounterType.packets) egress_drops;  /* index DROP_* */

    /* -- port_levels: DRE bytes at which a port reaches congestion level k -- */
    action set_levels(bit<32> t1, bit<32> t2, bit<32> t3, bit<32> t4,
                      bit<32> t5, bit<32> t6, bit<32> t7) {
        meta.t1 = t1; meta.t2 = t2; meta.t3 = t3; meta.t4 = t4;
        meta.t5 = t5; meta.t6 = t6; meta.t7 = t7;
    }

    /* Default: thresholds 0, a port nobody described reads saturated. */
    table port_levels {
        key = { standard_metadata.egress_port: exact; }
        actions = { set_levels; }
        default_action = set_levels(0, 0, 0, 0, 0, 0, 0);
        size = MAX_PORTS;
    }

    apply {
        bit<1> out_down;
        port_down.read(out_down, (bit<32>)standard_metadata.egress_port);
        if (standard_metadata.egress_port != CPU_PORT && out_down == 1) {
            egress_drops.count(DROP_EGRESS_PORT_DOWN);
            mark_to_drop(standard_metadata);
        } else {
            port_tx.count((bit<32>)standard_metadata.egress_port);
            if (standard_metadata.egress_port == CPU_PORT) {
                hdr.packet_in.setValid();
                hdr.packet_in.ingress_port = (bit<16>)standard_metadata.ingress_port;
                hdr.packet_in.reason = meta.punt_reason;
                hdr.packet_in.reserved = 0;
            } else {
                /* DRE: halve once per elapsed period, then add this packet. */
                bit<32> dre_x;
                bit<48> dre_t;
                dre_bytes.read(dre_x, (bit<32>)standard_metadata.egress_port);
                dre_time.read(dre_t, (bit<32>)standard_metadata.egress_port);
                bit<48> now = standard_metadata.egress_global_timestamp;
                bit<48> periods = 0;
                if (now > dre_t) {
                    periods = (now - dre_t) >> DRE_PERIOD_SHIFT;
                }
                if (periods >= 32) {
                    dre_x = 0;
                } else {
                    dre_x = dre_x >> (bit<8>)periods;
                }
                dre_x = dre_x + standard_metadata.packet_length;
                dre_t = dre_t + (periods << DRE_PERIOD_SHIFT);
                dre_bytes.write((bit<32>)standard_metadata.egress_port, dre_x);
                dre_time.write((bit<32>)standard_metadata.egress_port, dre_t);
                if (meta.role == ROLE_SPINE && hdr.tag.isValid()) {
                    /* CONGA's CE: the worst level on the way, by comparisons
                     * with the port's thresholds (no variable shift). */
                    port_levels.apply();
                    bit<32> dre_read = dre_x;
                    SGLB_DRE_PHASE(dre_read, dre_t, now)
                    bit<8> level = 0;
                    if (dre_read >= meta.t1) { level = 1; }
                    if (dre_read >= meta.t2) { level = 2; }
                    if (dre_read >= meta.t3) { level = 3; }
                    if (dre_read >= meta.t4) { level = 4; }
                    if (dre_read >= meta.t5) { level = 5; }
                    if (dre_read >= meta.t6) { level = 6; }
                    if (dre_read >= meta.t7) { level = 7; }
                    if (level > hdr.tag.ce) {
                        hdr.tag.ce = level;
                    }
                }
                if (hdr.probe.isValid() && hdr.probe.kind == PROBE_KIND
                        && meta.role == ROLE_SPINE && dre_x > hdr.probe.hop_dre) {
                    hdr.probe.hop_dre = dre_x;
                }
            }
        }
    }
}

V1Switch(SglbParser(),
         SglbVerifyChecksum(),
         SglbIngress(),
         SglbEgress(),
         SglbComputeChecksum(),
         SglbDeparser()) main;
