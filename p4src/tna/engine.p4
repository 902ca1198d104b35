/* engine.p4 (TNA): the GLB engine's bitwise steps, from the registers'
 * reads to the eligible paths (safe_empty), and the fallback to the live
 * paths. Included in the body of SglbIngress on Tofino 2 and of SglbEgress
 * on Tofino (the egress of the recirculation port: words.p4), after the
 * tables; its actions read GLB (the engine's state) and `meta` (the
 * temporaries unknown_left, idle_margin, skew_bound, skew_over). */

    /* Copies between the engine's PHV groups (see parser.p4): a copy by the
     * hash unit links no containers, where an ALU move would. */
#define SGLB_COPY_HASHES(W, HI, LO)                                            \
    Hash<pword_t>(HashAlgorithm_t.IDENTITY) fresh_copy_##W;                    \
    Hash<pword_t>(HashAlgorithm_t.IDENTITY) live_copy_##W;                     \
    Hash<pword_t>(HashAlgorithm_t.IDENTITY) safe_copy_##W;
    SGLB_FOR_EACH_WORD(SGLB_COPY_HASHES)
#undef SGLB_COPY_HASHES

    /* -- the GLB engine's bitwise steps, one table per stage (see apply) --
     * In place, to keep the masks few (at 64 paths each takes two 32-bit
     * containers): `live` goes from the configured paths to the live ones
     * (weighted, port up, not forced down, allowed: the mask or forced up);
     * `live_safe` from the fresh paths to the live, safe ones; fb_j from the
     * fed-back planes to the levels (fresh feedback, else the profile's
     * rq_j), where band_level turns fb2 into the paths above the band. */
#define SGLB_COPY(DST, HASH, SRC, W, HI, LO) DST[HI:LO] = HASH##_##W.get({ SRC[HI:LO] });
#define SGLB_COPY_FRESH(W, HI, LO) SGLB_COPY(GLB.live_safe, fresh_copy, GLB.fresh, W, HI, LO)
#define SGLB_COPY_LIVE(W, HI, LO) SGLB_COPY(GLB.candidates, live_copy, GLB.live, W, HI, LO)
#define SGLB_COPY_SAFE(W, HI, LO) SGLB_COPY(GLB.candidates, safe_copy, GLB.live_safe, W, HI, LO)

    /* The weighted paths whose port is up: the forced bits (read after the
     * notice checks) are needed only by glb_levels. */
    action glb_weights() {
        GLB.weighted = GLB.weighted & ~GLB.down;
    }

    action glb_inputs() {
        GLB.live = GLB.live & GLB.weighted;
        GLB.fb0 = GLB.fresh & GLB.fb0;
        GLB.fb1 = GLB.fresh & GLB.fb1;
        GLB.fb2 = GLB.fresh & GLB.fb2;
        GLB.rq0 = GLB.rq0 & ~GLB.fresh;
        GLB.rq1 = GLB.rq1 & ~GLB.fresh;
        GLB.rq2 = GLB.rq2 & ~GLB.fresh;
        meta.unknown_left = GLB.gap_unknown |-| GLB.idle;
        meta.idle_margin = GLB.idle |-| GLB.gap_margin;
        GLB.gap_over = GLB.idle |-| GLB.flowlet_gap;
    }

    /* ECMP knows only local link state and the control plane's mask. */
    action glb_inputs_ecmp() {
        GLB.live = GLB.live & ~GLB.down;
    }

    /* lv_j (in fb_j): fresh & fb_j and rq_j & ~fresh are disjoint, so ^ is
     * their union (bf-p4c does not take (a & b) | (c & d) yet). */
    action glb_levels() {
        GLB.live = GLB.live & ~GLB.forced_down;
        GLB.cp_mask = GLB.cp_mask | GLB.forced_up;
        GLB.fb0 = GLB.fb0 ^ GLB.rq0;
        GLB.fb1 = GLB.fb1 ^ GLB.rq1;
        GLB.fb2 = GLB.fb2 ^ GLB.rq2;
        meta.skew_bound = GLB.owd_max + GLB.owd_min_c;    /* max - min - 1 */
    }

    /* idle is past max - min - 1 + gap_margin iff idle >= max - min + gap_margin:
     * (idle - gap_margin) - (max - min - 1), both saturated; the delays are
     * needed only by glb_levels, so their registers may be read a stage later */
    action glb_live() {
        GLB.live = GLB.live & GLB.cp_mask;
        meta.skew_over = meta.idle_margin |-| meta.skew_bound;
    }

    /* The two plane pairs band_level combines with fb2; and live_safe (where a
     * new flowlet may go, see apply) in one of three variants. */
#define SGLB_PAIRS                                                             \
        GLB.pl_and = GLB.fb1 & GLB.fb0;                                        \
        GLB.pl_or = GLB.fb1 | GLB.fb0;
    action glb_safe_all() {
        SGLB_PAIRS
        GLB.live_safe = GLB.live;
    }

    action glb_safe_fresh() {
        SGLB_PAIRS
        GLB.live_safe = GLB.live & GLB.live_safe;
    }

    action glb_safe_none() {
        SGLB_PAIRS
        GLB.live_safe = 0;
    }
#undef SGLB_PAIRS

    /* The copies between the groups, one table per word (a table's action
     * takes at most 32 bits from the hash unit): fresh into live_safe, the
     * eligible paths (live_safe) into the candidates, and for a flowlet with
     * nowhere safe to move (or ECMP) the live paths: it stays on its path, or
     * the lowest live one if it has none or it died. */
#define SGLB_COPY_TABLES(W, HI, LO)                                            \
    action copy_fresh_##W() { SGLB_COPY_FRESH(W, HI, LO) }                     \
    action copy_safe_##W() { SGLB_COPY_SAFE(W, HI, LO) }                       \
    action copy_live_##W() { SGLB_COPY_LIVE(W, HI, LO) }                       \
    SGLB_STEP_TABLE(glb_fresh_##W, copy_fresh_##W)                             \
    SGLB_STEP_TABLE(glb_eligible_##W, copy_safe_##W)                           \
    SGLB_STEP_TABLE(glb_live_band_##W, copy_live_##W)

    /* -- safe_empty: no path is live and safe (a lookup, not a fold) -- */
    action safe_is_empty() { GLB.safe_none = 1; }
    action safe_not_empty() { GLB.safe_none = 0; }
    @hidden table safe_empty {
        key = { GLB.live_safe: ternary; }
        actions = { safe_is_empty; safe_not_empty; }
        const entries = { (pathmask_t)0 &&& (pathmask_t)-1: safe_is_empty(); }
        const default_action = safe_not_empty();
        size = 1;
    }

    SGLB_STEP_TABLE(glb_step0, glb_weights)
    SGLB_STEP_TABLE(glb_step1, glb_inputs)
    SGLB_STEP_TABLE(glb_step1_ecmp, glb_inputs_ecmp)
    SGLB_STEP_TABLE(glb_step2, glb_levels)
    SGLB_STEP_TABLE(glb_step3, glb_live)
    SGLB_STEP_TABLE(glb_step4_all, glb_safe_all)
    SGLB_STEP_TABLE(glb_step4_fresh, glb_safe_fresh)
    SGLB_STEP_TABLE(glb_step4_none, glb_safe_none)
    SGLB_FOR_EACH_WORD(SGLB_COPY_TABLES)
#undef SGLB_COPY_TABLES
#undef SGLB_COPY
#undef SGLB_COPY_FRESH
#undef SGLB_COPY_LIVE
#undef SGLB_COPY_SAFE
