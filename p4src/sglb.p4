/* sglb.p4: the SGLB data plane (P4_16, v1model).
 *
 * One program for both roles of a 2-tier leaf-spine fabric; the role is the
 * `role` parameter of the default action of `switch_config`.
 *
 *   leaf:  IPv4 routing and proxy ARP; traffic to another leaf goes through
 *          the GLB engine: per destination leaf a congestion profile (remote
 *          congestion and capacity weight of each of 8 paths, control-plane
 *          liveness mask) combined with the local utilisation of each uplink
 *          (a DRE per egress port), port liveness and the exclusions learnt
 *          from failure notices; flowlets keep their path until a gap longer
 *          than flowlet_gap or until the path dies.
 *   spine: IPv4 routing down to the destination leaf over one or two parallel
 *          links; a port-status packet for a downlink whose leaf became
 *          unreachable (or reachable again) is turned into a failure
 *          (recovery) notice and multicast to the leaves.
 *
 * lb_mode ECMP turns the leaf into per-flow hash ECMP over the live paths
 * (the baseline). docs/sglb.md has the pipeline diagram, the header formats
 * and the table / counter reference.
 */

#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

#include "include/constants.p4"
#include "include/headers.p4"
#include "include/parser.p4"
#include "include/glb_unroll.p4"

/* ---- State shared by ingress and egress (data-plane only: registers) ---- */

register<bit<1>, bit<32>>(MAX_PORTS) port_down;    /* 1 = port has no carrier */
register<bit<32>, bit<32>>(MAX_PORTS) dre_bytes;   /* DRE of each egress port */
register<bit<48>, bit<32>>(MAX_PORTS) dre_time;    /* start of its current period */

control SglbIngress(inout headers_t hdr,
                    inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {

    /* Data-plane state of the GLB engine. */
    register<bit<48>, bit<32>>(FLOWLET_ENTRIES) flowlet_time;
    register<bit<8>, bit<32>>(FLOWLET_ENTRIES) flowlet_path; /* path + 1, 0 = empty */
    register<bit<8>, bit<32>>(MAX_LEAVES) excl_mask;         /* paths excluded by notices */
    register<bit<8>, bit<32>>(MAX_LEAVES) excl_gen;          /* profile_gen they apply to */
    register<bit<32>, bit<32>>(MAX_SPINES) notice_epoch;     /* newest epoch per spine slot */

    /* Counters read by the control plane. */
    counter<bit<32>>(MAX_PORTS, CounterType.packets_and_bytes) port_rx;
    counter<bit<32>>(DROP_COUNTER_SIZE, CounterType.packets) drops;   /* index DROP_* */
    counter<bit<32>>(EV_COUNTER_SIZE, CounterType.packets) events;    /* index EV_* */

    /* -- switch_config: one per switch, set as the default action -- */
    action set_switch(bit<8> role, bit<8> lb_mode, bit<16> switch_id,
                      bit<48> switch_mac, bit<48> flowlet_gap,
                      bit<8> tie_tolerance, bit<16> notice_group) {
        meta.role = role;
        meta.lb_mode = lb_mode;
        meta.switch_id = switch_id;
        meta.switch_mac = switch_mac;
        meta.flowlet_gap = flowlet_gap;
        meta.tie_tolerance = tie_tolerance;
        meta.notice_group = notice_group;
    }

    table switch_config {
        actions = { set_switch; }
        default_action = set_switch(ROLE_LEAF, MODE_SGLB, 0, 0, 200, 1, 0);
        size = 1;
    }

    /* -- uplinks: port and DRE quantisation shift of each path (leaf) -- */
    action set_uplinks(bit<8> path_slots,
                       port_t port0, port_t port1, port_t port2, port_t port3,
                       port_t port4, port_t port5, port_t port6, port_t port7,
                       bit<8> shift0, bit<8> shift1, bit<8> shift2, bit<8> shift3,
                       bit<8> shift4, bit<8> shift5, bit<8> shift6, bit<8> shift7) {
        meta.path_slots = path_slots;
        meta.port0 = port0; meta.port1 = port1; meta.port2 = port2; meta.port3 = port3;
        meta.port4 = port4; meta.port5 = port5; meta.port6 = port6; meta.port7 = port7;
        meta.shift0 = shift0; meta.shift1 = shift1; meta.shift2 = shift2; meta.shift3 = shift3;
        meta.shift4 = shift4; meta.shift5 = shift5; meta.shift6 = shift6; meta.shift7 = shift7;
    }

    table uplinks {
        actions = { set_uplinks; }
        default_action = set_uplinks(0, 0, 0, 0, 0, 0, 0, 0, 0,
                                     0, 0, 0, 0, 0, 0, 0, 0);
        size = 1;
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

    /* -- dst_profile: congestion profile of a destination leaf (leaf) -- */
    action set_profile(bit<8> live_mask, bit<8> gen,
                       bit<3> rq0, bit<3> rq1, bit<3> rq2, bit<3> rq3,
                       bit<3> rq4, bit<3> rq5, bit<3> rq6, bit<3> rq7,
                       bit<4> w0, bit<4> w1, bit<4> w2, bit<4> w3,
                       bit<4> w4, bit<4> w5, bit<4> w6, bit<4> w7) {
        meta.cp_mask = live_mask;
        meta.profile_gen = gen;
        meta.rq0 = (bit<8>)rq0; meta.rq1 = (bit<8>)rq1; meta.rq2 = (bit<8>)rq2; meta.rq3 = (bit<8>)rq3;
        meta.rq4 = (bit<8>)rq4; meta.rq5 = (bit<8>)rq5; meta.rq6 = (bit<8>)rq6; meta.rq7 = (bit<8>)rq7;
        meta.w0 = (bit<8>)w0; meta.w1 = (bit<8>)w1; meta.w2 = (bit<8>)w2; meta.w3 = (bit<8>)w3;
        meta.w4 = (bit<8>)w4; meta.w5 = (bit<8>)w5; meta.w6 = (bit<8>)w6; meta.w7 = (bit<8>)w7;
    }

    /* No congestion data for this leaf: hash ECMP over the live paths. */
    action no_profile() {
        meta.cp_mask = 0xFF;
        meta.profile_gen = 0;
        meta.rq0 = 0; meta.rq1 = 0; meta.rq2 = 0; meta.rq3 = 0;
        meta.rq4 = 0; meta.rq5 = 0; meta.rq6 = 0; meta.rq7 = 0;
        meta.w0 = 1; meta.w1 = 1; meta.w2 = 1; meta.w3 = 1;
        meta.w4 = 1; meta.w5 = 1; meta.w6 = 1; meta.w7 = 1;
        meta.lb_mode = MODE_ECMP;
    }

    table dst_profile {
        key = { meta.dst_leaf: exact; }
        actions = { set_profile; no_profile; }
        default_action = no_profile();
        size = MAX_LEAVES;
    }

    /* -- spine_paths: the paths of this leaf that go through a spine (leaf) -- */
    action set_spine(bit<8> slot, bit<8> paths) {
        meta.notice_slot = (bit<32>)slot;
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
    action set_downlinks(port_t port_a, port_t port_b) {
        meta.down_a = port_a;
        meta.down_b = port_b;
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
        port_rx.count((bit<32>)standard_metadata.ingress_port);

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
            } else {
                spine_paths.apply();
                if (meta.drop_reason == 0 && meta.notice_slot >= MAX_SPINES) {
                    meta.drop_reason = DROP_UNKNOWN_SPINE;
                }
                if (meta.drop_reason == 0) {
                    meta.consumed = 1;
                    /* Serial-number comparison (RFC 1982): newer iff
                     * 0 < epoch - last < 2^31. */
                    bit<32> last_epoch;
                    notice_epoch.read(last_epoch, meta.notice_slot);
                    bit<32> delta = hdr.notice.epoch - last_epoch;
                    if (delta == 0 || delta[31:31] == 1) {
                        events.count(EV_NOTICE_STALE);
                    } else {
                        notice_epoch.write(meta.notice_slot, hdr.notice.epoch);
                        meta.dst_leaf = hdr.notice.leaf_id;
                        meta.notice_apply = 1;
                        events.count(EV_NOTICE_RECEIVED);
                    }
                }
            }
        } else if (hdr.probe.isValid()) {
            if (hdr.probe.version != SGLB_VERSION
                    || hdr.probe.length != PROBE_LENGTH
                    || hdr.probe.kind != PROBE_KIND
                    || hdr.probe.dst_leaf >= MAX_LEAVES
                    || hdr.probe.path >= MAX_PATHS) {
                meta.drop_reason = DROP_BAD_PROBE;
            } else if (meta.role == ROLE_SPINE) {
                meta.dst_leaf = hdr.probe.dst_leaf;
                meta.to_leaf = 1;
            } else if (hdr.probe.dst_leaf == meta.switch_id) {
                standard_metadata.egress_spec = CPU_PORT;
                meta.punt_reason = PUNT_PROBE;
                meta.forwarded = 1;
                events.count(EV_PROBE_PUNTED);
            } else if (hdr.packet_out.isValid()) {
                /* From this leaf's controller: out on the path it names. */
                meta.dst_leaf = hdr.probe.dst_leaf;
                meta.to_leaf = 1;
                meta.is_probe = 1;
            } else {
                meta.drop_reason = DROP_BAD_PROBE;   /* leaves do not relay probes */
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
        } else if (hdr.ipv4.isValid()) {
            hdr.packet_out.setInvalid();
            if (hdr.ipv4.version != 4 || standard_metadata.checksum_error == 1) {
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

        if (meta.drop_reason == 0 && (meta.to_leaf == 1 || meta.notice_apply == 1)
                && meta.dst_leaf >= MAX_LEAVES) {
            meta.drop_reason = DROP_NO_ROUTE;
        }

        /* ---- Stage 2 (leaf): the GLB engine ---- */
        if (meta.drop_reason == 0 && meta.role == ROLE_LEAF
                && (meta.to_leaf == 1 || meta.notice_apply == 1)) {
            dst_profile.apply();

            /* Exclusions learnt from notices hold only for the profile
             * generation they were made under: a newer profile written by
             * the control plane supersedes them (it is authoritative). */
            bit<8> ex_mask;
            bit<8> ex_gen;
            excl_mask.read(ex_mask, (bit<32>)meta.dst_leaf);
            excl_gen.read(ex_gen, (bit<32>)meta.dst_leaf);
            if (ex_gen != meta.profile_gen) {
                ex_mask = 0;
            }

            if (meta.notice_apply == 1) {
                if (hdr.notice.kind == NOTICE_FAIL) {
                    ex_mask = ex_mask | meta.notice_paths;
                } else {
                    ex_mask = ex_mask & ~meta.notice_paths;
                }
                excl_mask.write((bit<32>)meta.dst_leaf, ex_mask);
                excl_gen.write((bit<32>)meta.dst_leaf, meta.profile_gen);
            } else {
                meta.local_up = 0;
                meta.weighted = 0;
                SGLB_PATH_STATE(0)
                SGLB_PATH_STATE(1)
                SGLB_PATH_STATE(2)
                SGLB_PATH_STATE(3)
                SGLB_PATH_STATE(4)
                SGLB_PATH_STATE(5)
                SGLB_PATH_STATE(6)
                SGLB_PATH_STATE(7)

                /* ECMP (the baseline) knows only local link state and the
                 * control plane's mask; SGLB also uses notices and weights. */
                meta.live = meta.path_slots & meta.cp_mask & meta.local_up;
                if (meta.lb_mode == MODE_SGLB) {
                    meta.excluded = ex_mask;
                    meta.live = meta.live & ~ex_mask & meta.weighted;
                }

                if (meta.live == 0) {
                    meta.drop_reason = DROP_NO_LIVE_PATH;
                } else {
                    meta.min_cost = COST_DEAD;
                    SGLB_MIN_COST(0)
                    SGLB_MIN_COST(1)
                    SGLB_MIN_COST(2)
                    SGLB_MIN_COST(3)
                    SGLB_MIN_COST(4)
                    SGLB_MIN_COST(5)
                    SGLB_MIN_COST(6)
                    SGLB_MIN_COST(7)

                    meta.candidates = 0;
                    meta.weight_sum = 0;
                    SGLB_ACCUMULATE(0)
                    SGLB_ACCUMULATE(1)
                    SGLB_ACCUMULATE(2)
                    SGLB_ACCUMULATE(3)
                    SGLB_ACCUMULATE(4)
                    SGLB_ACCUMULATE(5)
                    SGLB_ACCUMULATE(6)
                    SGLB_ACCUMULATE(7)

                    /* A point in [0, weight_sum): from the 5-tuple in ECMP
                     * mode; from the 5-tuple and the time in SGLB mode, so
                     * that successive flowlets of a flow spread too. */
                    bit<48> salt = 0;
                    if (meta.lb_mode == MODE_SGLB) {
                        salt = standard_metadata.ingress_global_timestamp;
                    }
                    hash(meta.pick_hash, HashAlgorithm.crc32, (bit<32>)0,
                         { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
                           meta.l4_src, meta.l4_dst, salt },
                         (bit<32>)65536);
                    meta.pick_point = (meta.pick_hash * meta.weight_sum) >> 16;
                    meta.pick = 0;
                    SGLB_PICK(7)
                    SGLB_PICK(6)
                    SGLB_PICK(5)
                    SGLB_PICK(4)
                    SGLB_PICK(3)
                    SGLB_PICK(2)
                    SGLB_PICK(1)
                    SGLB_PICK(0)
                    meta.chosen = meta.pick;

                    if (meta.is_probe == 1) {
                        /* A probe measures the path it names, if that is up. */
                        bit<8> probe_bit = (meta.path_slots & meta.local_up) >> hdr.probe.path;
                        if (probe_bit[0:0] == 0) {
                            meta.drop_reason = DROP_NO_LIVE_PATH;
                        }
                        meta.chosen = hdr.probe.path;
                    } else if (meta.lb_mode == MODE_SGLB) {
                        /* Flowlets: keep the path within a flowlet unless it died. */
                        hash(meta.flowlet_index, HashAlgorithm.crc16, (bit<32>)0,
                             { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
                               meta.l4_src, meta.l4_dst },
                             (bit<32>)FLOWLET_ENTRIES);
                        bit<48> last_seen;
                        bit<8> last_path;
                        flowlet_time.read(last_seen, meta.flowlet_index);
                        flowlet_path.read(last_path, meta.flowlet_index);
                        bit<48> now = standard_metadata.ingress_global_timestamp;
                        if (last_path != 0 && now - last_seen <= meta.flowlet_gap) {
                            bit<8> kept = last_path - 1;
                            bit<8> kept_live = meta.live >> kept;
                            if (kept_live[0:0] == 1) {
                                meta.chosen = kept;
                            } else {
                                events.count(EV_FAILOVER);
                            }
                        } else {
                            events.count(EV_NEW_FLOWLET);
                        }
                        flowlet_time.write(meta.flowlet_index, now);
                        flowlet_path.write(meta.flowlet_index, meta.chosen + 1);
                    }

                    SGLB_PORT_OF(0)
                    SGLB_PORT_OF(1)
                    SGLB_PORT_OF(2)
                    SGLB_PORT_OF(3)
                    SGLB_PORT_OF(4)
                    SGLB_PORT_OF(5)
                    SGLB_PORT_OF(6)
                    SGLB_PORT_OF(7)
                    meta.forwarded = 1;
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
                    hash(meta.pick_hash, HashAlgorithm.crc32, (bit<32>)0,
                         { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
                           meta.l4_src, meta.l4_dst },
                         (bit<32>)2);
                    if (meta.pick_hash == 0) {
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
                if (hdr.probe.isValid() && meta.role == ROLE_SPINE
                        && dre_x > hdr.probe.hop_dre) {
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
