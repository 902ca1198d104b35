/* state.p4 (TNA): the registers of SglbIngress other than the per-word
 * bitmaps (regs.p4), each with its RegisterActions. Included inside the
 * body of SglbIngress: the actions read `meta` and `hdr` of that control.
 * Every packet runs at most one action of each register. */

    /* Port state of every port: detects port-status packets that change nothing. */
    Register<bit<8>, port_t>(MAX_PORTS, 0) port_state;
    RegisterAction<bit<8>, port_t, bit<8>>(port_state) port_state_put = {
        void apply(inout bit<8> v, out bit<8> rv) {
            rv = v;
            v = (bit<8>)meta.goes_down;
        }
    };

    /* Spine: which of the (one or two) links to each leaf are down (bit 0: a, bit 1: b). */
    Register<bit<8>, bit<16>>(MAX_LEAVES, 0) leaf_links;
    RegisterAction<bit<8>, bit<16>, bit<8>>(leaf_links) leaf_links_get = {
        void apply(inout bit<8> v, out bit<8> rv) { rv = v; }
    };
    RegisterAction<bit<8>, bit<16>, bit<8>>(leaf_links) leaf_links_down = {
        void apply(inout bit<8> v, out bit<8> rv) {
            rv = v;
            v = v | meta.peer_member;
        }
    };
    RegisterAction<bit<8>, bit<16>, bit<8>>(leaf_links) leaf_links_up = {
        void apply(inout bit<8> v, out bit<8> rv) {
            rv = v;
            v = v & ~meta.peer_member;
        }
    };

    /* Newest notice per (spine slot, leaf): epoch mod 2^30 << 2 | valid << 1 | fail.
     * Newer in serial-number order (RFC 1982 on 30 bits) iff the 32-bit
     * difference is above 1: the flag bits move it by at most 1. Both
     * actions answer the difference (a stateful ALU answers from one source
     * whatever its condition), and notice_seen whether anything is held:
     * the forced_* access tables decide on them in the next stage. */
    Register<bit<32>, bit<32>>(MAX_SPINES * MAX_LEAVES, 0) notice_epoch;
    RegisterAction<bit<32>, bit<32>, bit<32>>(notice_epoch) notice_offer = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = meta.notice_key - v;
            if (v == 0 || (int<32>)(meta.notice_key - v) > 1) {
                v = meta.notice_key;
            }
        }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(notice_epoch) notice_peek = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = v - meta.notice_key;
        }
    };
    Register<bit<8>, bit<32>>(MAX_SPINES * MAX_LEAVES, 0) notice_seen;
    RegisterAction<bit<8>, bit<32>, bit<8>>(notice_seen) notice_seen_mark = {
        void apply(inout bit<8> v, out bit<8> rv) {
            rv = v;
            v = 1;
        }
    };
    RegisterAction<bit<8>, bit<32>, bit<8>>(notice_seen) notice_seen_get = {
        void apply(inout bit<8> v, out bit<8> rv) { rv = v; }
    };

    /* Flowlets: last-seen time (ns) and path + 1 ++ port (0 = empty). */
    Register<bit<32>, bit<FLOWLET_INDEX_BITS>>(1 << FLOWLET_INDEX_BITS, 0) flowlet_time;
    RegisterAction<bit<32>, bit<FLOWLET_INDEX_BITS>, bit<32>>(flowlet_time) flowlet_touch = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = meta.now - v;
            v = meta.now;
        }
    };
    Register<bit<16>, bit<FLOWLET_INDEX_BITS>>(1 << FLOWLET_INDEX_BITS, 0) flowlet_path;
    RegisterAction<bit<16>, bit<FLOWLET_INDEX_BITS>, bit<16>>(flowlet_path) flowlet_follow = {
        void apply(inout bit<16> v, out bit<16> rv) {
            if (PICK.new_flowlet == 1 || v == 0) {
                v = meta.pick_word;
            }
            rv = v;
        }
    };

    /* Spine (SGLB): per flow (a slot of SPINE_FLOW_BITS), its last-seen time
     * (ns, never 0: now | 1) and its member, 1 = link a, 2 = link b (0 =
     * empty). Registers of their own, not the leaf's flowlet_time and
     * flowlet_path (the roles are exclusive): sharing them put these accesses
     * in the stages of the leaf's (docs/sglb.md). A slot never written
     * answers ~0: a flow not seen, drawn. (Used on Tofino 2 up to 16 paths.) */
    Register<bit<32>, bit<SPINE_FLOW_BITS>>(1 << SPINE_FLOW_BITS, 0) spine_time;
    RegisterAction<bit<32>, bit<SPINE_FLOW_BITS>, bit<32>>(spine_time) flow_age = {
        void apply(inout bit<32> v, out bit<32> rv) {
            if (v == 0) {
                rv = 0xFFFFFFFF;
            } else {
                rv = meta.now - v;
            }
            v = meta.now | 1;
        }
    };
    Register<bit<8>, bit<SPINE_FLOW_BITS>>(1 << SPINE_FLOW_BITS, 0) spine_flow;
    RegisterAction<bit<8>, bit<SPINE_FLOW_BITS>, bit<8>>(spine_flow) member_keep = {
        void apply(inout bit<8> v, out bit<8> rv) { rv = v; }
    };
    RegisterAction<bit<8>, bit<SPINE_FLOW_BITS>, bit<8>>(spine_flow) member_give_a = {
        void apply(inout bit<8> v, out bit<8> rv) {
            v = 1;
            rv = v;
        }
    };
    RegisterAction<bit<8>, bit<SPINE_FLOW_BITS>, bit<8>>(spine_flow) member_give_b = {
        void apply(inout bit<8> v, out bit<8> rv) {
            v = 2;
            rv = v;
        }
    };

    /* Spine (SGLB): per destination leaf, the next point of its draw sequence
     * less draw_base: point n = n * DRAW_STRIDE + leaf * DRAW_LEAF_STRIDE (mod
     * 2^16) as in the v1model program (the control plane adds the leaf's part
     * and the first stride: leaf_downlinks' draw_base; no multiplication). */
    Register<bit<16>, bit<16>>(MAX_LEAVES, 0) draw_cursor;
    RegisterAction<bit<16>, bit<16>, bit<16>>(draw_cursor) draw_next = {
        void apply(inout bit<16> v, out bit<16> rv) {
            rv = v + meta.draw_base;
            v = v + DRAW_STRIDE;
        }
    };

    /* Destination side of the feedback, per (source leaf, path): the last
     * tag's valid ++ ce ++ time and its one-way delay; per source leaf its
     * path count and the next path to return. */
    Register<bit<32>, bit<32>>(MAX_LEAVES * MAX_PATHS, 0) rx_level;
    RegisterAction<bit<32>, bit<32>, bit<32>>(rx_level) rx_level_get = {
        void apply(inout bit<32> v, out bit<32> rv) { rv = v; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(rx_level) rx_level_put = {
        void apply(inout bit<32> v) { v = meta.rx_word; }
    };
    Register<bit<32>, bit<32>>(MAX_LEAVES * MAX_PATHS, 0) rx_owd;
    RegisterAction<bit<32>, bit<32>, bit<32>>(rx_owd) rx_owd_get = {
        void apply(inout bit<32> v, out bit<32> rv) { rv = v; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(rx_owd) rx_owd_put = {
        void apply(inout bit<32> v) { v = meta.rx_owd; }
    };
    Register<bit<8>, bit<16>>(MAX_LEAVES, 0) fb_npaths;
    RegisterAction<bit<8>, bit<16>, bit<8>>(fb_npaths) fb_npaths_get = {
        void apply(inout bit<8> v, out bit<8> rv) { rv = v; }
    };
    RegisterAction<bit<8>, bit<16>, bit<8>>(fb_npaths) fb_npaths_put = {
        void apply(inout bit<8> v) { v = hdr.tag.npaths; }
    };
    Register<bit<8>, bit<16>>(MAX_LEAVES, 0) fb_cursor;
    RegisterAction<bit<8>, bit<16>, bit<8>>(fb_cursor) fb_cursor_next = {
        void apply(inout bit<8> v, out bit<8> rv) {
            rv = v;
            if (v >= PICK.fb_npaths) {
                v = 0;
            } else {
                v = v + 1;
            }
        }
    };
