/* glb_unroll.p4: per-path steps of the GLB engine, written once as macros and
 * expanded for each of the MAX_PATHS paths by SGLB_FOR_EACH_PATH (paths.p4),
 * because P4_16 has no loops. They use the names of SglbIngress: `hdr`,
 * `meta`, `standard_metadata`, the top-level registers `port_down`,
 * `dre_bytes`, `dre_time` and the per-path registers `notice_I`, `fb_I`,
 * `owd_I`. `I` is a literal path index; `##` builds the per-path names.
 *
 * Tofino rules kept by the per-path registers (docs/sglb.md, "The Tofino program"):
 * each of notice_I, fb_I, owd_I is at most 32 bits wide and accessed once per
 * packet (a read, or one read-modify-write), with constant shifts only. */

#ifndef SGLB_GLB_UNROLL_P4
#define SGLB_GLB_UNROLL_P4

#define PATH_BIT(I) ((pathmask_t)1 << I)

/* The per-path registers of SglbIngress (one array each per path). */
#define SGLB_PATH_REGISTERS(I)                                                 \
    register<bit<32>, bit<32>>(MAX_LEAVES) notice_##I;                         \
    register<bit<32>, bit<32>>(MAX_LEAVES) fb_##I;                             \
    register<bit<32>, bit<32>>(MAX_LEAVES) owd_##I;

/* Action parameters, each with a leading comma (follows a fixed parameter). */
#define SGLB_PORT_PARAM(I) , port_t port##I
#define SGLB_SHIFT_PARAM(I) , bit<8> shift##I
#define SGLB_RQ_PARAM(I) , bit<3> rq##I
#define SGLB_W_PARAM(I) , bit<4> w##I
#define SGLB_EP_PARAM(I) , bit<32> ep##I
#define SGLB_SET_UPLINK(I) meta.port##I = port##I; meta.shift##I = shift##I;
#define SGLB_SET_PROFILE(I) meta.rq##I = (bit<8>)rq##I; meta.w##I = (bit<8>)w##I; \
    meta.ep##I = ep##I;
#define SGLB_NO_PROFILE(I) meta.rq##I = 0; meta.w##I = 1; meta.ep##I = 0;

/* The DRE read in phase: a port fed at a steady rate R holds R*T bytes at the
 * start of a DRE period and 2*R*T at its end, so a bare reading of a busy port
 * swings over a factor of 2 (a 5 Gbit/s uplink at 100% read levels 4 to 7,
 * and looked emptier than 10 Gbit/s paths at 80% whenever a new flowlet came
 * early in a period: docs/sglb-vs-ecmp.md, #15). Scaled by about
 * 1.5 / (1 + phase) per quarter of the period (shifts only), the reading stays
 * within 12% of 1.5*R*T, the mean the level scale is fitted to (sglb.config.
 * dre_shift). With -DSGLB_DRE_IN_PHASE a leaf reads its uplinks so, a spine
 * its ports for the tag's congestion field; not the default: it made the
 * symmetric fabric 2-4% slower under Cubic (#15). */
#if !defined(SGLB_DRE_IN_PHASE) || DRE_PERIOD_SHIFT < 2
#define SGLB_DRE_PHASE(X, T, NOW)
#else
#define SGLB_DRE_PHASE(X, T, NOW) {                                            \
    bit<48> dre_quarter = 0;                                                   \
    if (NOW > T) {                                                             \
        dre_quarter = ((NOW - T) >> (DRE_PERIOD_SHIFT - 2)) & 3;               \
    }                                                                          \
    if (X < 0x40000000) {                                                      \
        if (dre_quarter == 0) {                                                \
            X = X + (X >> 2) + (X >> 4);                                       \
        } else if (dre_quarter == 1) {                                         \
            X = X + (X >> 3);                                                  \
        } else if (dre_quarter == 2) {                                         \
            X = X - (X >> 4);                                                  \
        } else {                                                               \
            X = X - (X >> 3) - (X >> 4);                                       \
        }                                                                      \
    }                                                                          \
}
#endif

/* Liveness of the path's port; its local congestion (the port's DRE decayed
 * to now, quantised by the path's shift); whether it is excluded (the newer of
 * the last failure notice of its spine for this destination and the control
 * plane's view: the notice wins while the control plane has written back no
 * epoch, or one behind the notice's, mod 2^30); its remote congestion (fresh
 * in-band feedback replaces the profile; ageing feedback only raises it;
 * without fresh feedback never below unknown_level); and its cost. */
#define SGLB_PATH_STATE(I) {                                                   \
    bit<1> path_port_down;                                                     \
    port_down.read(path_port_down, (bit<32>)meta.port##I);                     \
    if (path_port_down == 0) {                                                 \
        meta.local_up = meta.local_up | PATH_BIT(I);                           \
    }                                                                          \
    bit<32> dre_x;                                                             \
    bit<48> dre_t;                                                             \
    dre_bytes.read(dre_x, (bit<32>)meta.port##I);                              \
    dre_time.read(dre_t, (bit<32>)meta.port##I);                               \
    bit<48> dre_periods = 0;                                                   \
    if (standard_metadata.ingress_global_timestamp > dre_t) {                  \
        dre_periods = (standard_metadata.ingress_global_timestamp - dre_t)     \
                      >> DRE_PERIOD_SHIFT;                                     \
    }                                                                          \
    if (dre_periods >= 32) {                                                   \
        dre_x = 0;                                                             \
    } else {                                                                   \
        dre_x = dre_x >> (bit<8>)dre_periods;                                  \
    }                                                                          \
    SGLB_DRE_PHASE(dre_x, dre_t, standard_metadata.ingress_global_timestamp)  \
    dre_x = dre_x >> meta.shift##I;                                            \
    if (dre_x > QMAX) {                                                        \
        meta.lq##I = QMAX;                                                     \
    } else {                                                                   \
        meta.lq##I = (bit<8>)dre_x;                                            \
    }                                                                          \
    bit<32> notice_state;                                                      \
    notice_##I.read(notice_state, (bit<32>)meta.dst_leaf);                     \
    bit<1> path_allowed = meta.cp_mask[I:I];                                   \
    if (notice_state[31:31] == 1) {                                            \
        bit<30> notice_ahead = notice_state[30:1] - meta.ep##I[29:0];          \
        if (meta.ep##I[31:31] == 0                                             \
                || (notice_ahead != 0 && notice_ahead[29:29] == 0)) {          \
            path_allowed = ~notice_state[0:0];                                 \
        }                                                                      \
    }                                                                          \
    if (path_allowed == 1) {                                                   \
        meta.allowed = meta.allowed | PATH_BIT(I);                             \
    }                                                                          \
    bit<32> fb_word;                                                           \
    bit<32> owd_word;                                                          \
    fb_##I.read(fb_word, (bit<32>)meta.dst_leaf);                              \
    owd_##I.read(owd_word, (bit<32>)meta.dst_leaf);                            \
    bit<8> remote = meta.rq##I;                                                \
    if (meta.feedback == 1) {                                                  \
        if (meta.unknown_level > remote) {                                     \
            remote = meta.unknown_level;                                       \
        }                                                                      \
        if (fb_word[31:31] == 1) {                                             \
            bit<28> fb_age_units = meta.now_fb - fb_word[27:0];                \
            bit<32> fb_age = ((bit<32>)fb_age_units) << FB_TIME_SHIFT;         \
            bit<8> fb_level = (bit<8>)fb_word[30:28];                          \
            if (fb_age <= meta.fb_fresh) {                                     \
                remote = fb_level;                                             \
                meta.fresh = meta.fresh | PATH_BIT(I);                         \
                meta.owd##I = owd_word;                                        \
            } else if (fb_age <= meta.fb_stale && fb_level > remote) {         \
                remote = fb_level;                                             \
            }                                                                  \
        }                                                                      \
    }                                                                          \
    if (meta.lq##I > remote) {                                                 \
        meta.cost##I = meta.lq##I;                                             \
    } else {                                                                   \
        meta.cost##I = remote;                                                 \
    }                                                                          \
    if (meta.w##I != 0) {                                                      \
        meta.weighted = meta.weighted | PATH_BIT(I);                           \
    }                                                                          \
}

/* State of the flowlet's previous path (last_path = path + 1). */
#define SGLB_LAST_PATH(I)                                                      \
    if (meta.last_path == I + 1) {                                             \
        meta.last_live = meta.live[I:I];                                       \
        meta.last_fresh = meta.fresh[I:I];                                     \
        meta.last_owd = meta.owd##I;                                           \
    }

/* May a new flowlet go to path I without overtaking the previous flowlet's
 * packets? Yes if it has no previous path, or that path died, or it is that
 * path, or it has been idle at least the measured one-way-delay difference
 * between its previous path and I plus gap_margin (clock offsets cancel: both
 * delays are from this leaf to the same leaf); where either delay is not
 * fresh, at least gap_unknown. */
#define SGLB_SAFE(I)                                                           \
    if (meta.live[I:I] == 1) {                                                 \
        bit<1> move_ok = 0;                                                    \
        if (meta.last_path == 0 || meta.last_live == 0                         \
                || meta.last_path == I + 1) {                                  \
            move_ok = 1;                                                       \
        } else if (meta.last_fresh == 1 && meta.fresh[I:I] == 1) {             \
            int<32> skew = (int<32>)(meta.last_owd - meta.owd##I)              \
                           + (int<32>)meta.gap_margin;                         \
            if (skew <= 0) {                                                   \
                move_ok = 1;                                                   \
            } else if (meta.idle >= (bit<32>)skew) {                           \
                move_ok = 1;                                                   \
            }                                                                  \
        } else if (meta.idle >= meta.gap_unknown) {                            \
            move_ok = 1;                                                       \
        }                                                                      \
        if (move_ok == 1) {                                                    \
            meta.safe = meta.safe | PATH_BIT(I);                               \
        }                                                                      \
    }

/* Lowest cost over the paths a new flowlet may take. */
#define SGLB_MIN_COST(I)                                                       \
    if (meta.safe[I:I] == 1 && meta.cost##I < meta.min_cost) {                 \
        meta.min_cost = meta.cost##I;                                          \
    }

/* Candidate set and cumulative weights: in SGLB mode the safe live paths
 * within tie_tolerance of the lowest cost, weighted by capacity; in ECMP mode
 * every live path, weight 1. acc##I is the sum of the weights of candidates
 * 0..I. */
#define SGLB_ACCUMULATE(I) {                                                   \
    bit<1> is_candidate = 0;                                                   \
    if (meta.safe[I:I] == 1) {                                                 \
        if (meta.lb_mode == MODE_ECMP) {                                       \
            is_candidate = 1;                                                  \
        } else if ((bit<16>)meta.cost##I <=                                    \
                   (bit<16>)meta.min_cost + (bit<16>)meta.tie_tolerance) {     \
            is_candidate = 1;                                                  \
        }                                                                      \
    }                                                                          \
    if (is_candidate == 1) {                                                   \
        meta.candidates = meta.candidates | PATH_BIT(I);                       \
        if (meta.lb_mode == MODE_ECMP) {                                       \
            meta.weight_sum = meta.weight_sum + 1;                             \
        } else {                                                               \
            meta.weight_sum = meta.weight_sum + (bit<32>)meta.w##I;            \
        }                                                                      \
    }                                                                          \
    meta.acc##I = (bit<16>)meta.weight_sum;                                    \
}

/* Is the flowlet's previous path among the candidates? */
#define SGLB_LAST_CANDIDATE(I)                                                 \
    if (meta.last_path == I + 1) {                                             \
        meta.last_candidate = meta.candidates[I:I];                            \
    }

/* Weighted pick: the first path whose cumulative weight exceeds the point. */
#define SGLB_PICK(I)                                                           \
    if (meta.picked == 0 && meta.pick_point < (bit<32>)meta.acc##I) {          \
        meta.pick = I;                                                         \
        meta.picked = 1;                                                       \
    }

/* Output port of the chosen path. */
#define SGLB_PORT_OF(I)                                                        \
    if (meta.chosen == I) {                                                    \
        standard_metadata.egress_spec = meta.port##I;                          \
    }

/* Output port of the path a probe names, and whether that path exists. */
#define SGLB_PROBE_PORT(I)                                                     \
    if (hdr.probe.path == I) {                                                 \
        standard_metadata.egress_spec = meta.port##I;                          \
        meta.probe_slot = meta.path_slots[I:I];                                \
    }

/* A failure / recovery notice for the spine's paths toward hdr.notice.leaf_id:
 * stored per path as (valid, epoch mod 2^30, fail) if the path holds none or
 * an older one (RFC 1982 serial-number order), one read-modify-write per
 * path. */
#define SGLB_NOTICE_APPLY(I)                                                   \
    if (meta.notice_paths[I:I] == 1) {                                         \
        bit<32> held;                                                          \
        notice_##I.read(held, (bit<32>)hdr.notice.leaf_id);                    \
        bit<30> ahead = meta.notice_epoch - held[30:1];                        \
        if (held[31:31] == 1 && ahead == 0) {                                  \
            meta.notice_dup = 1;                                               \
        } else if (held[31:31] == 0 || ahead[29:29] == 0) {                    \
            bit<1> fail = 0;                                                   \
            if (hdr.notice.kind == NOTICE_FAIL) {                              \
                fail = 1;                                                      \
            }                                                                  \
            notice_##I.write((bit<32>)hdr.notice.leaf_id,                      \
                             1w1 ++ meta.notice_epoch ++ fail);                \
            meta.notice_new = 1;                                               \
        }                                                                      \
    }

/* Feedback from the destination leaf about one of this leaf's paths toward
 * it: (valid, level, time) and the one-way delay, one write each. */
#define SGLB_FB_STORE(I)                                                       \
    if (hdr.tag.fb_path == I) {                                                \
        fb_##I.write((bit<32>)hdr.tag.src_leaf,                                \
                     1w1 ++ hdr.tag.fb_level[2:0] ++ meta.now_fb);             \
        owd_##I.write((bit<32>)hdr.tag.src_leaf, hdr.tag.fb_owd);              \
    }

#endif
