/* sglb.p4 (TNA): the SGLB data plane for Tofino (tna) and Tofino 2 (t2na).
 *
 *     bf-p4c --target tofino  --arch tna  p4src/tna/sglb.p4
 *     bf-p4c --target tofino2 --arch t2na p4src/tna/sglb.p4
 *     (-DMAX_PATHS=64 for 64 paths; 8 by default)
 *
 * The same GLB engine, roles, wire formats (../include/headers.p4), in-band
 * feedback and notice rules as ../sglb.p4 (v1model), in Tofino's idioms:
 * per-path state is bitmaps in 32-bit register words, one RegisterAction per
 * register per packet; the congestion levels of all paths are three bit
 * planes, so the least-congested band is found with bitwise logic instead of
 * a 64-way comparison chain; the capacity-weighted pick draws four paths
 * from a table the control plane fills in proportion to capacity and takes
 * the first one that is a candidate; the local utilisation is an Lpf per
 * egress port, quantised by a range table; times are nanoseconds. Tofino 2
 * runs it all in one pass; on Tofino a leaf's data packets go round once
 * through the recirculation port (words.p4, SGLB_TWO_PASS). Where the rules
 * differ, and why, is in docs/sglb.md ("The Tofino program").
 */

#include <core.p4>
#if __TARGET_TOFINO__ == 2
#include <t2na.p4>
#else
#include <tna.p4>
#endif

#include "parser.p4"
#include "regs.p4"

/* Tofino at 64 paths: the PHV containers of the masks, two 32-bit words
 * each. Left to itself, bf-p4c's first PHV allocation searches until it runs
 * out of memory (18 GB and more); with the masks that ingress writes in
 * 32-bit containers and the egress engine's in 16-bit ones (egress's 32-bit
 * containers hold its times and delays) it allocates in seconds. */
#if defined(SGLB_TWO_PASS) && MAX_PATHS == 64
#define SGLB_MASK_IN_WORDS(F) @pa_container_size("ingress", F, 32, 32)
#define SGLB_MASK_IN_HALVES(F) @pa_container_size("egress", F, 16, 16, 16, 16)
SGLB_MASK_IN_WORDS("hdr.glb.forced_up")
SGLB_MASK_IN_WORDS("hdr.pick.live")
SGLB_MASK_IN_WORDS("hdr.pick.candidates")
#endif
control SglbIngress(inout tna_headers_t hdr,
                    inout ig_meta_t meta,
                    in ingress_intrinsic_metadata_t ig_intr_md,
                    in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                    inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                    inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    /* ---- Registers (data-plane state) ---- */
    SGLB_FOR_EACH_WORD(SGLB_STATE_WORD_REGISTERS)

    /* The other registers, each with its RegisterActions (state.p4). */
#include "state.p4"

    /* ---- Externs ---- */
    Hash<bit<FLOWLET_INDEX_BITS>>(HashAlgorithm_t.CRC16) flowlet_hash;
    Hash<bit<DRAW_ROW_BITS>>(HashAlgorithm_t.CRC32) flow_row_hash;
    Hash<bit<8>>(HashAlgorithm_t.CRC32) split_hash;
    Hash<bit<SPINE_FLOW_BITS>>(HashAlgorithm_t.CRC16) spine_flow_hash;
    Random<bit<DRAW_ROW_BITS>>() draw_random;
    /* Register indices that concatenate two fields: the identity hash builds
     * them, so the fields need not be placed at matching PHV offsets. */
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) notice_index_hash;
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) rx_index_hash;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) fail_key_hash;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) other_key_hash;
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) fb_index_hash;
    /* Likewise for fields made of another's bits (a zero-extended or
     * shifted slice would need the two fields at matching offsets). */
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) rx_word_hash;
    Hash<bit<8>>(HashAlgorithm_t.IDENTITY) chosen_of_lowest;
    Hash<bit<28>>(HashAlgorithm_t.IDENTITY) coarse_fb_time;
    /* ---- Counters read by the control plane ---- */
    Counter<bit<32>, port_t>(MAX_PORTS, CounterType_t.PACKETS_AND_BYTES) port_rx;
    Counter<bit<32>, bit<32>>(DROP_COUNTER_SIZE, CounterType_t.PACKETS) drops;
    Counter<bit<32>, bit<32>>(EV_COUNTER_SIZE, CounterType_t.PACKETS) events;
    Counter<bit<32>, bit<32>>(EV_COUNTER_SIZE, CounterType_t.PACKETS) tag_events;

    /* -- switch_config: one per switch, the default action (times in ns);
     *    tie_tolerance is not read here: SyncMesh writes band_level's entries
     *    from it (it stays so that the configuration reads back whole) -- */
    action set_switch(bit<8> role, bit<8> lb_mode, bit<16> switch_id,
                      bit<48> switch_mac, bit<32> flowlet_gap,
                      bit<8> tie_tolerance, bit<16> notice_group,
                      bit<8> feedback, bit<16> tag_frame_max,
                      bit<28> fb_fresh, bit<32> gap_margin, bit<32> gap_unknown) {
        meta.role = role;
        meta.lb_mode = lb_mode;
        meta.switch_id = switch_id;
        meta.switch_mac = switch_mac;
        GLB.flowlet_gap = flowlet_gap;
        meta.notice_group = notice_group;
        GLB.feedback = feedback;
        meta.tag_room = tag_frame_max;      /* room_step takes the headers off */
        meta.fb_fresh = fb_fresh;
        GLB.gap_margin = gap_margin;
        GLB.gap_unknown = gap_unknown;
    }

    table switch_config {
        actions = { set_switch; }
        default_action = set_switch(ROLE_LEAF, MODE_SGLB, 0, 0, 200000, 1, 0,
                                    0, 1514, 611, 100000, 100000000);
        size = 1;
    }

    /* -- uplinks: which paths exist (leaf) -- */
    action set_uplinks(pathmask_t path_slots, bit<8> path_count) {
        PICK.candidates = path_slots;   /* (path_down's read: the live ones) */
        meta.path_count = path_count;
    }

    action no_uplinks() {
        PICK.candidates = 0;
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
        key = { ig_intr_md.ingress_port: exact; }
        actions = { bind_host; bind_spine; bind_leaf; unbound; }
        default_action = unbound();
        size = MAX_PORTS;
    }

    /* -- ipv4_route -- */
    /* The source MAC is rewritten with the TTL, once the checks passed: the
     * route then needs nothing from switch_config and runs in stage 0. */
    /* A packet not routed to a leaf updates the state of its tag's source
     * (if it has a tag that passes): dst_leaf is that (set here, in stage
     * 1, so that the lookups by dst_leaf need not wait for a step). */
    action to_host(port_t port, bit<48> host_mac) {
        meta.dst_leaf = hdr.tag.src_leaf;
        ig_tm_md.ucast_egress_port = port;
        hdr.ethernet.dstAddr = host_mac;
        meta.dec_ttl = 1;
        meta.forwarded = 1;
    }

    action to_leaf(bit<16> leaf) {
        meta.dst_leaf = leaf;
        meta.to_leaf = 1;
        meta.leaf_route = 1;
        meta.dec_ttl = 1;
    }

    action to_cpu() {
        meta.dst_leaf = hdr.tag.src_leaf;
        ig_tm_md.ucast_egress_port = CPU_PORT;
        hdr.bridge.punt_reason = PUNT_HOST;
        meta.forwarded = 1;
    }

    action no_route() {
        meta.dst_leaf = hdr.tag.src_leaf;
        meta.route_miss = 1;
    }

    table ipv4_route {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { to_host; to_leaf; to_cpu; no_route; }
        default_action = no_route();
        size = 4096;
    }

    /* -- arp_proxy -- */
    action arp_reply(bit<48> mac) {
        hdr.arp.oper = 2;
        hdr.arp.tha = hdr.arp.sha;
        hdr.arp.sha = mac;
        meta.tmp_ip = hdr.arp.tpa;
        hdr.arp.tpa = hdr.arp.spa;
        hdr.arp.spa = meta.tmp_ip;
        hdr.ethernet.dstAddr = hdr.ethernet.srcAddr;
        hdr.ethernet.srcAddr = mac;
        ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port;
        meta.forwarded = 1;
        meta.event = EV_ARP_REPLIED;
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

    /* -- dst_profile: SyncMesh's view of a destination leaf (leaf). The
     *    remote level of each path (already floored by unknown_level) comes
     *    as three bit planes; wprof names the draws of its capacity weights. -- */
#ifdef SGLB_TWO_PASS
    /* Tofino: the masks are the engine's, looked up in its egress
     * (dst_masks); the first pass needs the weight profile and the mode. */
    action set_profile(bit<8> wprof) {
        meta.wprof = wprof;
    }

    action no_profile() {
        meta.wprof = 0;
        meta.lb_mode = MODE_ECMP;
    }
#else
    action set_profile(pathmask_t live_mask, pathmask_t weighted,
                       pathmask_t rq0, pathmask_t rq1, pathmask_t rq2, bit<8> wprof) {
        meta.wprof = wprof;
        SGLB_PROFILE_MASKS(live_mask, weighted, rq0, rq1, rq2)
    }

    /* No congestion data for this leaf: hash ECMP over the live paths
     * (weight profile 0: every path once). */
    action no_profile() {
        meta.wprof = 0;
        meta.lb_mode = MODE_ECMP;
        SGLB_NO_PROFILE_MASKS
    }
#endif

    table dst_profile {
        key = { meta.dst_leaf: exact; }
        actions = { set_profile; no_profile; }
        default_action = no_profile();
        size = MAX_LEAVES;
    }

    /* -- draws: four paths drawn in proportion to capacity, per weight
     *    profile and row (the control plane spreads each column over the
     *    weights); each as a word valid (bit 15) ++ path (14:9) ++ port (8:0),
     *    the word the flowlet keeps. -- */
    action set_draws(bit<16> word0, bit<16> word1, bit<16> word2, bit<16> word3) {
        PICK.draw_word0 = word0;
        PICK.draw_word1 = word1;
        PICK.draw_word2 = word2;
        PICK.draw_word3 = word3;
    }

    action no_draws() {
        PICK.draw_word0 = 0;
        PICK.draw_word1 = 0;
        PICK.draw_word2 = 0;
        PICK.draw_word3 = 0;
    }

    table draws {
        key = { meta.wprof: exact; meta.draw_row: exact; }
        actions = { set_draws; no_draws; }
        default_action = no_draws();
        size = DRAW_TABLE_SIZE;
    }

    /* -- lowest_path: the lowest path of the candidates as a word like the
     *    draws' (ternary: path i matches bit i set and bits 0..i-1 clear) -- */
    action set_lowest(bit<16> word) {
        meta.lowest_word = word;
    }

    action no_lowest() {
        meta.lowest_word = 0;
    }

    table lowest_path {
        key = { PICK_KEY(candidates, ternary); }
        actions = { set_lowest; no_lowest; }
        default_action = no_lowest();
        size = MAX_PATHS;
    }

    /* -- pick_draw: the first of the four draws that is a candidate, else the
     *    lowest candidate. One ternary lookup: entry (j, i) matches draw j
     *    naming path i (valid ++ path) while i's bit is set in the
     *    candidates; the entries of draw j come after those of draws 0..j-1,
     *    so a match on draw j means none of the earlier draws is a candidate.
     *    (One table instead of four hit lookups and a pick: one stage and
     *    four tables fewer.) -- */
    action pick_0() { meta.pick_word = PICK.draw_word0; }
    action pick_1() { meta.pick_word = PICK.draw_word1; }
    action pick_2() { meta.pick_word = PICK.draw_word2; }
    action pick_3() { meta.pick_word = PICK.draw_word3; }
    action pick_lowest() { meta.pick_word = meta.lowest_word; }

#define SGLB_DRAW_NAMES(I) (bit<7>)(64 + I) &&& 7w0x7F
#define SGLB_PICK_ENTRY_0(I) (SGLB_DRAW_NAMES(I), _, _, _, PATH_BIT(I) &&& PATH_BIT(I)) : pick_0();
#define SGLB_PICK_ENTRY_1(I) (_, SGLB_DRAW_NAMES(I), _, _, PATH_BIT(I) &&& PATH_BIT(I)) : pick_1();
#define SGLB_PICK_ENTRY_2(I) (_, _, SGLB_DRAW_NAMES(I), _, PATH_BIT(I) &&& PATH_BIT(I)) : pick_2();
#define SGLB_PICK_ENTRY_3(I) (_, _, _, SGLB_DRAW_NAMES(I), PATH_BIT(I) &&& PATH_BIT(I)) : pick_3();
    table pick_draw {
        key = {
            PICK.draw_word0[15:9]: ternary @name("meta.draw_word0[15:9]");
            PICK.draw_word1[15:9]: ternary @name("meta.draw_word1[15:9]");
            PICK.draw_word2[15:9]: ternary @name("meta.draw_word2[15:9]");
            PICK.draw_word3[15:9]: ternary @name("meta.draw_word3[15:9]");
            PICK_KEY(candidates, ternary);
        }
        actions = { pick_0; pick_1; pick_2; pick_3; pick_lowest; }
        const entries = {
            SGLB_FOR_EACH_PATH(SGLB_PICK_ENTRY_0)
            SGLB_FOR_EACH_PATH(SGLB_PICK_ENTRY_1)
            SGLB_FOR_EACH_PATH(SGLB_PICK_ENTRY_2)
            SGLB_FOR_EACH_PATH(SGLB_PICK_ENTRY_3)
        }
        default_action = pick_lowest();
        size = 4 * MAX_PATHS;
    }
#undef SGLB_DRAW_NAMES
#undef SGLB_PICK_ENTRY_0
#undef SGLB_PICK_ENTRY_1
#undef SGLB_PICK_ENTRY_2
#undef SGLB_PICK_ENTRY_3

    /* -- kept_alive: is the flowlet's path still live? (keyed by the word's
     *    valid bit and path: entry I gives the path's number). Applied by the
     *    decision of a packet that leaves toward a leaf: it sets the port and
     *    the event, so that the counters follow it directly, and the tag's
     *    path, after the tag is made valid (an invalid tag ignores it): a step
     *    after this one would cost a stage. -- */
    action keep_path(bit<8> path) {
        hdr.tag.path = path;
        ig_tm_md.ucast_egress_port = meta.flow_word[8:0];
    }

    action keep_path_new(bit<8> path) {
        keep_path(path);
        meta.event = EV_NEW_FLOWLET;
    }

    /* (a default action cannot use the hash unit: lowest_step numbers the
     * lowest candidate beforehand) */
    action path_dead() {
        hdr.tag.path = meta.lowest_chosen;
        ig_tm_md.ucast_egress_port = meta.lowest_word[8:0];
        meta.event = EV_FAILOVER;
    }

    table kept_alive {
        key = { meta.flow_word[15:9]: exact; PICK_KEY(live, ternary); PICK_KEY(new_flowlet, ternary); }
        actions = { keep_path; keep_path_new; path_dead; }
        const entries = {
            SGLB_FOR_EACH_PATH(SGLB_ALIVE_NEW_ENTRY)
            SGLB_FOR_EACH_PATH(SGLB_ALIVE_ENTRY)
        }
        default_action = path_dead();
        size = 2 * MAX_PATHS;
    }

    /* -- path_ports: the port of a probe's path -- */
    action set_path_port(port_t port) {
        meta.probe_port = port;
    }

    action no_path_port() {
        meta.probe_port = 0;
    }

    table path_ports {
        key = { hdr.probe.path: exact; }
        actions = { set_path_port; no_path_port; }
        default_action = no_path_port();
        size = MAX_PATHS;
    }

    /* -- probe_alive: the probe's path is configured and its port up (entry
     *    I: bit I set in live, which path_down's read made just that) -- */
    action probe_path_up() {
        meta.probe_up = 1;
    }

    action probe_path_down() {
        meta.probe_up = 0;
    }

#define SGLB_PROBE_ENTRY(I)                                                    \
    ((bit<8>)I, PATH_BIT(I) &&& PATH_BIT(I)) : probe_path_up();
    @hidden table probe_alive {
        key = { hdr.probe.path: exact; PICK.live: ternary; }
        actions = { probe_path_up; probe_path_down; }
        const entries = { SGLB_FOR_EACH_PATH(SGLB_PROBE_ENTRY) }
        const default_action = probe_path_down();
        size = MAX_PATHS;
    }
#undef SGLB_PROBE_ENTRY

    /* -- spine_paths: the paths through a spine and its notice slot (leaf) -- */
    action set_spine(pathmask_t paths, bit<16> slot) {
        meta.notice_paths = paths;
        meta.spine_slot = slot;
        meta.spine_known = 1;
    }

    action unknown_spine() {
        meta.spine_known = 0;
    }

    table spine_paths {
        key = { hdr.notice.spine_id: exact; }
        actions = { set_spine; unknown_spine; }
        default_action = unknown_spine();
        size = MAX_SPINES;
    }

    /* -- port_paths: the leaf's paths on a port (port-status) -- */
    action set_port_paths(pathmask_t paths) {
        meta.port_paths = paths;
    }

    action no_port_paths() {
        meta.port_paths = 0;
    }

    table port_paths {
        key = { hdr.port_status.port: exact; }
        actions = { set_port_paths; no_port_paths; }
        default_action = no_port_paths();
        size = MAX_PORTS;
    }

    /* -- port_peer: the leaf behind a downlink and which member it is (spine):
     *    member 1 = link a, 2 = link b, 3 = the leaf's only link -- */
    action peer(bit<16> leaf, bit<8> member) {
        meta.peer_found = 1;
        meta.peer_leaf = leaf;
        meta.dst_leaf = leaf;
        meta.peer_member = member;
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

    /* -- leaf_downlinks: one or two parallel links to each leaf (spine); in
     *    SGLB mode draw_base places the leaf's draw sequence (draw_cursor) -- */
    action set_downlinks(port_t port_a, port_t port_b, bit<8> share_a, bit<16> draw_base) {
        meta.down_a = port_a;
        meta.down_b = port_b;
        meta.share_a = share_a;
        meta.draw_base = draw_base;
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

    /* The checks as lookups, port-status and notice outcomes. */
#include "checks.p4"

    /* The decisions of a leaf and a spine as lookups. */
#include "decide.p4"

    /* The access tables, the GLB engine's steps, the other step tables. */
#include "steps.p4"
#ifndef SGLB_TWO_PASS
#include "feedback.p4"
#include "engine.p4"
#endif

    /* The pick, after the candidates: a new flowlet (a band and idle past
     * flowlet_gap) takes the first draw that is a candidate (the draws follow
     * capacity), else the lowest candidate; none when no path is live
     * (lowest_word's valid bit clear); flowlet_path keeps the flowlet's. */
#define SGLB_PICK_APPLY                                                        \
    lowest_path.apply();                                                       \
    lowest_step.apply();                                                       \
    pick_draw.apply();                                                         \
    if (PICK.lb_mode == MODE_SGLB) {                                           \
        meta.flow_word = flowlet_follow.execute(PICK.flowlet_index);           \
    } else {                                                                   \
        meta.flow_word = meta.pick_word;                                       \
    }

    /* The feedback the tag returns: one fresh metric of the destination's
     * paths toward us, in turn (it needs only the destination: beside the
     * engine). On Tofino in the second pass, where the tag is open iff the
     * first pass opened it (SGLB, feedback on, the frame has room). */
#ifdef SGLB_TWO_PASS
#define SGLB_FEEDBACK_SENDS hdr.tag.isValid()
#else
#define SGLB_FEEDBACK_SENDS meta.leaf_route == 1 && meta.lb_mode == MODE_SGLB && GLB.feedback == 1
#endif
#define SGLB_FEEDBACK_SEND                                                     \
    if (SGLB_FEEDBACK_SENDS) {                                                 \
        if (meta.frame_over == 0 && PICK.fb_npaths != 0) {                     \
            meta.fb_try = 1;                                                   \
            PICK.fb_npaths = PICK.fb_npaths - 1;                               \
            meta.fb_path = fb_cursor_next.execute(meta.dst_leaf);              \
            meta.rx_index = (bit<32>)fb_index_hash.get({                       \
                meta.dst_leaf[LEAF_INDEX_BITS - 1:0],                          \
                meta.fb_path[PATH_INDEX_BITS - 1:0] });                        \
        }                                                                      \
    }

    /* The age of the metric the tag returns, and whether it is fresh and
     * within the destination's paths (fb_step) */
#define SGLB_FEEDBACK_AGE                                                      \
    if (meta.fb_try == 1) {                                                    \
        meta.fb_age = meta.now_fb - meta.fb_word[27:0];                        \
        fb_step.apply();                                                       \
    }

    /* What the port a packet came in on says (not the second pass's) */
#define SGLB_PORT_LOOKUPS                                                      \
    uplinks.apply();                                                           \
    port_neighbour.apply();                                                    \
    port_rx.count(ig_intr_md.ingress_port);

    apply {
        meta.event = EV_COUNTER_SIZE;
        meta.tag_event = EV_COUNTER_SIZE;
        switch_config.apply();
        room_step.apply();
#ifndef SGLB_TWO_PASS
        SGLB_PORT_LOOKUPS
#endif
        meta.now = ig_intr_md.ingress_mac_tstamp[31:0];
        /* Coarse times from the parser's timestamp (the same ns clock): slices
         * of one field at several alignments would split the field, and with
         * it the 32-bit copies of the MAC timestamp into the tag and probe. */
        clock_fb.apply();
#ifndef SGLB_TWO_PASS
        clock_gen.apply();
        clock_word.apply();
#endif
        hdr.bridge.setValid();
        hdr.bridge.punt_reason = 0;
        hdr.bridge.pad0 = 0;
        hdr.bridge.ingress_port = ig_intr_md.ingress_port;
        hdr.bridge.pad1 = 0;
        hdr.bridge.raise_ce = 0;
        hdr.bridge.to_engine = 0;
        hdr.bridge.untag = 0;
        hdr.bridge.fb_store = 0;
#ifdef SGLB_TWO_PASS
        if (meta.second_pass == 1) {
            /* ---- Second pass (Tofino): a leaf's data packet back from the
             * recirculation port, whose egress ran the GLB engine and wrote
             * the candidates into the pick header. The first pass ran every
             * check and opened the tag; here the pick and the feedback the
             * tag returns; the port and the tag's path in the decision. ---- */
            SGLB_PICK_APPLY
            SGLB_FEEDBACK_SEND
            /* the metric it returns, from the registers the first pass
             * stores (rx_level_fetch, rx_owd_fetch: steps.p4) */
            rx_level_fetch.apply();
            rx_owd_fetch.apply();
            SGLB_FEEDBACK_AGE
            /* ---- the decision ---- */
            if (meta.lowest_word[15:15] == 0) {
                /* no candidate: no path is live */
                meta.drop_reason = DROP_NO_LIVE_PATH;
            } else {
                hdr.bridge.raise_ce = 1;
                meta.forwarded = 1;
                if (hdr.tag.isValid()) {
                    fb_level_out.apply();
                }
                kept_alive.apply();
            }
        } else
#endif
        {
            /* ---- The (first) pass ---- */
#ifdef SGLB_TWO_PASS
            SGLB_PORT_LOOKUPS
            hdr.glb.setValid();     /* the engine's inputs: GLB (words.p4) */
            hdr.pick.setValid();    /* what the pick takes: PICK */
#endif

            /* ---- Speculative work: lookups, reads and the whole GLB engine run
             * beside the checks of stage 1, not after them (the stage count is
             * the budget on Tofino). A packet that fails a check is dropped at
             * the end whatever they found; the side effects they keep are its
             * flowlet's (last-seen time; on Tofino 2 the path of a new
             * flowlet) and on Tofino 2 the feedback cursor's turn (see
             * docs/sglb.md). ---- */
            if (hdr.ipv4.isValid()) {
                if (hdr.l4.isValid()) {
                    meta.l4_src = hdr.l4.srcPort;
                    meta.l4_dst = hdr.l4.dstPort;
                }
                ipv4_route.apply();
            } else if (hdr.probe.isValid()) {
                meta.dst_leaf = hdr.probe.dst_leaf;
                meta.probe_dx = hdr.probe.dst_leaf ^ meta.switch_id;
            } else if (hdr.notice.isValid()) {
                meta.dst_leaf = hdr.notice.leaf_id;
                spine_paths.apply();
                /* its register index (spine slot ++ leaf) and key (epoch ++ valid
                 * ++ fail), by identity hashes: one step each */
                meta.notice_index = (bit<32>)notice_index_hash.get({
                    meta.spine_slot[5:0], hdr.notice.leaf_id[LEAF_INDEX_BITS - 1:0] });
                if (hdr.notice.kind == NOTICE_FAIL) {
                    notice_fail_key.apply();
                } else {
                    notice_other_key.apply();
                }
            } else if (hdr.port_status.isValid()) {
                if (meta.role == ROLE_LEAF) {
                    port_paths.apply();
                } else {
                    port_peer.apply();
                }
            }
            if (hdr.tag.isValid()) {
                /* what rx_level and rx_owd store if the checks pass (rx_op):
                 * the tag's metric of (source, path) for the feedback */
                meta.rx_index = (bit<32>)rx_index_hash.get({
                    hdr.tag.src_leaf[LEAF_INDEX_BITS - 1:0], hdr.tag.path[PATH_INDEX_BITS - 1:0] });
                /* valid ++ ce (at most QMAX: 3 bits) ++ time */
                meta.rx_word = rx_word_hash.get({ 1w1, hdr.tag.ce[2:0], meta.now_fb });
                meta.rx_owd = meta.now - hdr.tag.ts;
                tag_step.apply();
                tag_check.apply();
#ifndef SGLB_TWO_PASS
                fb_paths.apply();
                fb_level_bits.apply();
#endif
            }
            if (meta.role == ROLE_LEAF) {
                if (hdr.probe.isValid()) {
                    path_ports.apply();
                } else if (meta.leaf_route == 1) {
                    dst_profile.apply();
                    if (meta.lb_mode == MODE_SGLB) {
                        PICK.flowlet_index = flowlet_hash.get({ hdr.ipv4.srcAddr, hdr.ipv4.dstAddr,
                                                                hdr.ipv4.protocol, meta.l4_src,
                                                                meta.l4_dst });
                        GLB.idle = flowlet_touch.execute(PICK.flowlet_index);
                        meta.draw_row = draw_random.get();
                    } else {
                        meta.draw_row = flow_row_hash.get({ hdr.ipv4.srcAddr, hdr.ipv4.dstAddr,
                                                            hdr.ipv4.protocol, meta.l4_src,
                                                            meta.l4_dst });
                    }
                    draws.apply();
                    frame_step.apply();
                }
            } else if (meta.leaf_route == 1 || hdr.probe.isValid()) {
                /* SGLB: the flow's member (flow_member), as the v1model spine
                 * chooses it: kept while the flow idles less than gap_unknown
                 * (the spine does not know its members' delays), else the
                 * destination's next draw point against share_a, so that k
                 * flows split k * share however few they are (a 5-tuple hash
                 * put 80% of 16 connections' bytes on one member).
                 * Speculative, as a leaf's flowlet: spine_member uses it when
                 * both links are up and the packet passed the checks. The
                 * flow's time before leaf_downlinks: a table after it in this
                 * block would wait for it (bf-p4c's next-table order). */
#if defined(SGLB_TWO_PASS) || MAX_PATHS == 64
                /* Not yet on Tofino, nor on Tofino 2 at 64 paths: placement
                 * took 14 stages of 12 there, 20 of 20 here (then bf-p4c's
                 * second PHV allocation runs out of memory), so the spine
                 * splits by the hash in both modes (docs/sglb.md). */
                bool spine_flow = false;
#else
                bool spine_flow = meta.lb_mode == MODE_SGLB && meta.leaf_route == 1;
#endif
                if (spine_flow) {
                    meta.spine_flow_index = spine_flow_hash.get({ hdr.ipv4.srcAddr,
                                                                  hdr.ipv4.dstAddr,
                                                                  hdr.ipv4.protocol,
                                                                  meta.l4_src, meta.l4_dst });
                    meta.spine_idle = flow_age.execute(meta.spine_flow_index);
                    spine_age_step.apply();
                }
                leaf_downlinks.apply();
                if (spine_flow) {
                    if (meta.spine_left == 0) {
                        meta.draw_point = draw_next.execute(meta.dst_leaf);
                    }
                    spine_draw_step.apply();
                    spine_flow_access.apply();
                } else {
                    /* ECMP (and a probe): by a hash of the 5-tuple */
                    meta.split = split_hash.get({ hdr.ipv4.srcAddr, hdr.ipv4.dstAddr,
                                                  hdr.ipv4.protocol, meta.l4_src, meta.l4_dst });
                }
                spine_step.apply();
            }

            /* ---- Stage 1: classify and handle control packets ---- */
            /* what it is (packet_kind: a PacketOut sent as it is, or the
             * drops of the chain's order), then its kind's checks */
            switch (packet_kind.apply().action_run) {
                kind_port_status: {
                    /* its checks and the op of the access table it updates
                     * (idempotent: a duplicate changes nothing): the leaf's
                     * path_down, the spine's leaf_links (then a notice if the
                     * leaf's reachability changed, after them); its event from
                     * the state held before */
                    port_status_check.apply();
                    if (meta.consumed == 1) {
                        meta.port_was = port_state_put.execute((port_t)hdr.port_status.port);
                        port_status_event.apply();
                    }
                }
                kind_notice: {
                    /* the checks (notice_check), then the epoch rule */
                    notice_check.apply();
                    if (meta.notice_ok == 1) {
                        /* notice_rv: key - held (a write-back: held - key) */
                        if (hdr.notice.kind == NOTICE_WRITEBACK) {
                            meta.notice_rv = notice_peek.execute(meta.notice_index);
                        } else {
                            meta.notice_rv = notice_offer.execute(meta.notice_index);
                        }
                        notice_seen_access.apply();
                        notice_verdict.apply();
                    }
                }
                kind_probe: {
                    /* its checks and what it does (probe_check) */
                    probe_check.apply();
                }
                kind_arp: {
                    arp_check.apply();
                    if (meta.arp_ok == 1) {
                        if (hdr.arp.spa == hdr.arp.tpa) {
                            meta.drop_reason = DROP_UNSUPPORTED;
                        } else {
                            arp_proxy.apply();
                        }
                    }
                }
                kind_ipv4: {
                    /* the tag (tag_check, above), the route, then IPv4 */
                    ipv4_check.apply();
#ifdef SGLB_TWO_PASS
                    /* a passed tag's metric stored (rx_op; here, not in the
                     * leaf's block below: the second pass's rx_*_fetch must
                     * share the registers' stage) */
                    rx_level_access.apply();
                    rx_owd_access.apply();
#endif
                }
            }
            hdr.packet_out.setInvalid();

            /* ---- Stage 2 (leaf): a tagged packet from the fabric that passed
             * the checks (rx_op and fb_op, set by ipv4_check when it passes, so
             * that the access tables need not wait for drop_reason): the
             * access tables store its metric (computed beside the checks)
             * and the metric it returns about one of our paths ---- */
            if (meta.rx_op == 1) {     /* ipv4_check: passed, on a leaf, from the fabric */
                if (meta.fb_op == 1) {
#ifndef SGLB_TWO_PASS
                    fb_owd_step.apply();        /* (on Tofino in egress) */
#endif
                    fb_received_step.apply();
                }
            }

            /* ---- Stage 2: the registers, each by its access table; then the
             * GLB engine on what they read (on Tofino: the first pass); then
             * the feedback's registers; then the decision. A leaf's and a
             * spine's are in the two branches of one condition, so that bf-p4c
             * sees them exclusive and neither waits for the other's writes. ---- */
            if (meta.role == ROLE_LEAF) {
#ifdef SGLB_TWO_PASS
                /* (the feedback's registers are the egress's: feedback.p4) */
                SGLB_FOR_EACH_WORD(SGLB_APPLY_STATE_WORD_ACCESS)
#else
                SGLB_FOR_EACH_WORD(SGLB_APPLY_WORD_ACCESS)
                owd_low_access.apply();
                owd_high_access.apply();
#endif
                if (hdr.probe.isValid()) {
                    probe_alive.apply();
                } else if (meta.leaf_route == 1) {
                    /* The GLB engine and the pick (on Tofino: in the egress of
                     * the recirculation port and the second pass) */
#ifndef SGLB_TWO_PASS
                    SGLB_ENGINE_APPLY
                    SGLB_PICK_APPLY
#endif
                }
                /* After the engine in program order (bf-p4c orders a block after
                 * the tables before it), beside it in the pipeline: */
                npaths_access.apply();
#ifndef SGLB_TWO_PASS
                SGLB_FEEDBACK_SEND
#endif
#ifndef SGLB_TWO_PASS
                /* the feedback's registers: a received tag's metric stored, the
                 * one the tag returns read (on Tofino: after ipv4_check, and
                 * in the second pass) */
                rx_level_access.apply();
                rx_owd_access.apply();
                if (meta.rx_op == 1) {
                    /* stored (the access tables read the tag): deliver
                     * untagged (on Tofino the egress of the host port takes
                     * it off: ipv4_check sets the bridged untag bit) */
                    hdr.ethernet.etherType = hdr.tag.next_type;
                    hdr.tag.setInvalid();
                }
                SGLB_FEEDBACK_AGE
#endif

                /* ---- Stage 2 (leaf): the decision, from what the engine
                 * found (leaf_decision, decide.p4); then the tag's copies,
                 * and in one pass its feedback and the port ---- */
                leaf_decision.apply();
                if (meta.tag_opened == 1) {
                    tag_stamp.apply();
#ifndef SGLB_TWO_PASS
                    fb_level_out.apply();
#endif
                }
#ifndef SGLB_TWO_PASS
                if (meta.leaf_out == 1) {
                    /* the port, the event and the tag's path: the flowlet's
                     * path if still live, else the lowest candidate (failover) */
                    kept_alive.apply();
                }
#endif
            } else {
                links_access.apply();
                if (meta.links_op != 0) {
                    /* The leaf's reachability changed: both links down now
                     * and not before (FAIL), or the other way (RECOVER). */
                    links_change.apply();
                    if (meta.notice_group != 0 && meta.reach_changed == 1) {
                        hdr.notice.setValid();
                        hdr.notice.version = SGLB_VERSION;
                        if (meta.goes_down == 1) {
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
                        ig_tm_md.mcast_grp_a = meta.notice_group;
                        meta.consumed = 0;
                        meta.forwarded = 1;
                        meta.event = EV_NOTICE_SENT;
                    }
                } else if (meta.role == ROLE_SPINE && meta.drop_reason == 0 && meta.to_leaf == 1) {
                    /* ---- Stage 2 (spine): down to the destination leaf ---- */
                    if (meta.dst_leaf >= MAX_LEAVES || meta.has_downlinks == 0) {
                        meta.drop_reason = DROP_NO_ROUTE;
                    } else {
                        /* the member: by the split when both are up, else the
                         * one that is up (spine_member) */
                        spine_member.apply();
                    }
                }
            }
        }

        /* ---- Stage 3 (both passes): every packet not sent is consumed or
         * counted ---- */
        if (meta.drop_reason != 0) {
            drops.count(meta.drop_reason);
            ig_dprsr_md.drop_ctl = 1;
        } else if (meta.consumed == 1) {
            ig_dprsr_md.drop_ctl = 1;
        } else if (meta.forwarded == 0) {
            drops.count(DROP_NO_ROUTE);
            ig_dprsr_md.drop_ctl = 1;
        }
        if (meta.event != EV_COUNTER_SIZE) {
            events.count(meta.event);
        }
        if (meta.tag_event != EV_COUNTER_SIZE) {
            tag_events.count(meta.tag_event);
        }
#ifdef SGLB_TWO_PASS
        if (hdr.bridge.to_engine == 0) {
            hdr.glb.setInvalid();
            hdr.pick.setInvalid();
        }
#endif
    }
}

#if defined(SGLB_TWO_PASS) && MAX_PATHS == 64
SGLB_MASK_IN_HALVES("meta.cp_mask")
SGLB_MASK_IN_HALVES("meta.weighted")
SGLB_MASK_IN_HALVES("meta.rq0")
SGLB_MASK_IN_HALVES("meta.rq1")
SGLB_MASK_IN_HALVES("meta.rq2")
SGLB_MASK_IN_HALVES("meta.fb0")
SGLB_MASK_IN_HALVES("meta.fb1")
SGLB_MASK_IN_HALVES("meta.fb2")
SGLB_MASK_IN_HALVES("meta.fresh")
SGLB_MASK_IN_HALVES("meta.live_safe")
SGLB_MASK_IN_HALVES("meta.fb_bit")
SGLB_MASK_IN_HALVES("hdr.pick.live")
SGLB_MASK_IN_HALVES("hdr.pick.candidates")
SGLB_MASK_IN_HALVES("hdr.glb.forced_up")
#undef SGLB_MASK_IN_WORDS
#undef SGLB_MASK_IN_HALVES
#endif
control SglbEgress(inout tna_headers_t hdr,
                   inout eg_meta_t meta,
                   in egress_intrinsic_metadata_t eg_intr_md,
                   in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                   inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                   inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {

    Counter<bit<32>, port_t>(MAX_PORTS, CounterType_t.PACKETS_AND_BYTES) port_tx;

    /* The utilisation estimate of each egress port: a low-pass filter of the
     * bytes sent (the control plane sets it to rate mode, time constant = the
     * DRE period), so it reads like the v1model DRE's bytes. */
    Lpf<bit<32>, port_t>(MAX_PORTS) dre;

    /* -- port_levels: the level of a port's estimate (one ternary entry per
     *    level k: the estimate's bits above the port's shift equal k; bf-p4c
     *    matches a range on 5 nibbles at most) -- */
    action set_level(bit<8> level) {
        meta.level = level;
    }

    /* Default: a port nobody described reads saturated. */
    table port_levels {
        key = { eg_intr_md.egress_port: exact; meta.rate: ternary; }
        actions = { set_level; }
        default_action = set_level(QMAX);
        size = MAX_PORTS * 8;
    }

#ifdef SGLB_TWO_PASS
#include "feedback.p4"
#include "engine.p4"
#endif

    apply {
        port_tx.count(eg_intr_md.egress_port);
#ifdef SGLB_TWO_PASS
        /* The feedback's registers (feedback.p4): the recirculation port
         * reads them for the engine; the port of a host whose tag the
         * ingress passed stores the metric it returns (the egress parser
         * set fb_access, fb_op and dst_leaf), then delivers untagged. */
        clock_gen.apply();
        clock_word.apply();
        if (meta.fb_op == 1) {
            fb_paths.apply();
            fb_level_bits.apply();
            fb_owd_step.apply();
        }
        if (meta.fb_access == 1) {
            SGLB_FOR_EACH_WORD(SGLB_APPLY_FEEDBACK_WORD_ACCESS)
            owd_low_access.apply();
            owd_high_access.apply();
        }
        if (hdr.bridge.untag == 1) {
            hdr.ethernet.etherType = hdr.tag.next_type;
            hdr.tag.setInvalid();
        }
        if (hdr.glb.isValid()) {
            /* The recirculation port (Tofino): the GLB engine, for the
             * packet's second pass through ingress, which parses only the
             * pick header (the inputs stay here). */
            dst_masks.apply();
            SGLB_ENGINE_APPLY
            hdr.glb.setInvalid();
        } else
#endif
        if (eg_intr_md.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = (bit<16>)hdr.bridge.ingress_port;
            hdr.packet_in.reason = hdr.bridge.punt_reason;
            hdr.packet_in.reserved = 0;
        } else {
            meta.rate = dre.execute((bit<32>)eg_intr_md.pkt_length, eg_intr_md.egress_port);
            if (hdr.bridge.raise_ce == 1) {
                if (hdr.tag.isValid()) {
                    /* CONGA's CE: the worst level on the way, the source
                     * leaf's uplink included. */
                    port_levels.apply();
                    hdr.tag.ce = max(hdr.tag.ce, meta.level);
                }
                if (hdr.probe.isValid() && hdr.probe.kind == PROBE_KIND) {
                    hdr.probe.hop_dre = max(hdr.probe.hop_dre, meta.rate);
                }
            }
        }
        hdr.bridge.setInvalid();
    }
}

Pipeline(SglbIngressParser(),
         SglbIngress(),
         SglbIngressDeparser(),
         SglbEgressParser(),
         SglbEgress(),
         SglbEgressDeparser()) pipe;

Switch(pipe) main;
