/* engine.p4 (TNA): the GLB engine's bitwise steps, from the registers'
 * reads to the candidates: the eligible paths (safe_empty), the band
 * (band_level) or the fallback to the live paths, and whether a new flowlet
 * starts. Included in the body of SglbIngress on Tofino 2 and of SglbEgress
 * on Tofino (the egress of the recirculation port: words.p4), after the
 * tables; its actions read GLB (the engine's inputs), write PICK (the live
 * paths, the candidates, new_flowlet: what the pick takes) and keep their
 * temporaries in `meta` (the levels' planes, freshness, the delays, the
 * safe paths and the times). */

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
     * containers): `live` comes as the configured paths whose port is up
     * (path_down's read), and in SGLB mode is rebuilt from LIVE_UNFORCED
     * (words.p4: those less the forced-down paths) as the live ones
     * (weighted, allowed: the mask or forced up);
     * `live_safe` from the fresh paths to the live, safe ones; fb_j from the
     * fed-back planes to the levels (fresh feedback, else the profile's
     * rq_j), where band_level turns fb2 into the paths above the band. */
#define SGLB_COPY(DST, HASH, SRC, W, HI, LO) DST[HI:LO] = HASH##_##W.get({ SRC[HI:LO] });
#define SGLB_COPY_FRESH(W, HI, LO) SGLB_COPY(meta.live_safe, fresh_copy, meta.fresh, W, HI, LO)
#define SGLB_COPY_LIVE(W, HI, LO) SGLB_COPY(PICK.candidates, live_copy, PICK.live, W, HI, LO)
#define SGLB_COPY_SAFE(W, HI, LO) SGLB_COPY(PICK.candidates, safe_copy, meta.live_safe, W, HI, LO)

    /* -- dst_masks (Tofino): the masks of dst_profile, in the egress of the
     *    recirculation port (no PHV for them in ingress) -- */
#ifdef SGLB_TWO_PASS
    action set_masks(pathmask_t live_mask, pathmask_t weighted,
                     pathmask_t rq0, pathmask_t rq1, pathmask_t rq2) {
        SGLB_PROFILE_MASKS(live_mask, weighted, rq0, rq1, rq2)
    }

    action no_masks() {
        SGLB_NO_PROFILE_MASKS
    }

    table dst_masks {
        key = { meta.dst_leaf: exact; }
        actions = { set_masks; no_masks; }
        default_action = no_masks();
        size = MAX_LEAVES;
    }
#endif

    action glb_inputs() {
        PICK.live = LIVE_UNFORCED & meta.weighted;
        meta.fb0 = meta.fresh & meta.fb0;
        meta.fb1 = meta.fresh & meta.fb1;
        meta.fb2 = meta.fresh & meta.fb2;
        meta.rq0 = meta.rq0 & ~meta.fresh;
        meta.rq1 = meta.rq1 & ~meta.fresh;
        meta.rq2 = meta.rq2 & ~meta.fresh;
        meta.unknown_left = GLB.gap_unknown |-| GLB.idle;
        meta.idle_margin = GLB.idle |-| GLB.gap_margin;
        meta.gap_over = GLB.idle |-| GLB.flowlet_gap;
    }

    /* lv_j (in fb_j): fresh & fb_j and rq_j & ~fresh are disjoint, so ^ is
     * their union (bf-p4c does not take (a & b) | (c & d) yet). */
    action glb_levels() {
        meta.cp_mask = meta.cp_mask | GLB.forced_up;
        meta.fb0 = meta.fb0 ^ meta.rq0;
        meta.fb1 = meta.fb1 ^ meta.rq1;
        meta.fb2 = meta.fb2 ^ meta.rq2;
        meta.skew_bound = meta.owd_max + meta.owd_min_c;    /* max - min - 1 */
    }

    /* idle is past max - min - 1 + gap_margin iff idle >= max - min + gap_margin:
     * (idle - gap_margin) - (max - min - 1), both saturated; the delays are
     * needed only by glb_levels, so their registers may be read a stage later */
    action glb_live() {
        PICK.live = PICK.live & meta.cp_mask;
        meta.skew_over = meta.idle_margin |-| meta.skew_bound;
    }

    /* The two plane pairs band_level combines with fb2; and live_safe (where a
     * new flowlet may go, see apply) in one of three variants. On Tofino the
     * pairs reuse rq0 and rq1, dead after glb_levels (egress's PHV is short
     * at 64 paths); on Tofino 2 that reuse sends bf-p4c's PHV allocation out
     * of memory, so they have fields of their own. */
#ifdef SGLB_TWO_PASS
#define PL_AND meta.rq0
#define PL_OR meta.rq1
#else
#define PL_AND meta.pl_and
#define PL_OR meta.pl_or
#endif
#define SGLB_PAIRS                                                             \
        PL_AND = meta.fb1 & meta.fb0;                                          \
        PL_OR = meta.fb1 | meta.fb0;
    action glb_safe_all() {
        SGLB_PAIRS
        meta.live_safe = PICK.live;
    }

    action glb_safe_fresh() {
        SGLB_PAIRS
        meta.live_safe = PICK.live & meta.live_safe;
    }

    action glb_safe_none() {
        SGLB_PAIRS
        meta.live_safe = 0;
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
    action safe_is_empty() { meta.safe_none = 1; }
    action safe_not_empty() { meta.safe_none = 0; }
    @hidden table safe_empty {
        key = { meta.live_safe: ternary; }
        actions = { safe_is_empty; safe_not_empty; }
        const entries = { (pathmask_t)0 &&& (pathmask_t)-1: safe_is_empty(); }
        const default_action = safe_not_empty();
        size = 1;
    }

    /* -- band_level: the band, the eligible (live, safe) paths at most
     *    tie_tolerance levels above the lowest level of any: by entry
     *    priority (the control plane's, sglb.tna_config.band_entries), entry
     *    (k, i) matches path i eligible at level k (its bits in the three
     *    planes), those of level k before those of k + 1, and cuts at
     *    K = min(k + tolerance, 7): fb2 becomes the paths above K, in one
     *    operation with a pair made by glb_safe_* (level >= 1 is
     *    p2 | (p1 | p0), >= 2 p2 | p1, >= 3 p2 | (p1 & p0), >= 4 p2, >= 5
     *    p2 & (p1 | p0), >= 6 p2 & p1, 7 p2 & (p1 & p0)). No eligible path
     *    below 7: no cut. One lookup where eight "at most k" masks and a
     *    fold over them took 8 more masks and two more stages. -- */
    action above_0() { meta.fb2 = meta.fb2 | PL_OR; }
    action above_1() { meta.fb2 = meta.fb2 | meta.fb1; }
    action above_2() { meta.fb2 = meta.fb2 | PL_AND; }
    action above_3() { }
    action above_4() { meta.fb2 = meta.fb2 & PL_OR; }
    action above_5() { meta.fb2 = meta.fb2 & meta.fb1; }
    action above_6() { meta.fb2 = meta.fb2 & PL_AND; }
    action above_7() { meta.fb2 = 0; }

    table band_level {
        key = {
            meta.live_safe: ternary; meta.fb0: ternary; meta.fb1: ternary; meta.fb2: ternary;
        }
        actions = { above_0; above_1; above_2; above_3; above_4; above_5; above_6; above_7; }
        const default_action = above_7();
        size = 7 * MAX_PATHS;
    }

    /* The candidates: the eligible paths not above the band. */
    action band_take() {
        PICK.candidates = PICK.candidates & ~meta.fb2;
        meta.banded = 1;
    }

    SGLB_STEP_TABLE(glb_step1, glb_inputs)
    SGLB_STEP_TABLE(glb_step2, glb_levels)
    SGLB_STEP_TABLE(glb_step3, glb_live)
    SGLB_STEP_TABLE(glb_step4_all, glb_safe_all)
    SGLB_STEP_TABLE(glb_step4_fresh, glb_safe_fresh)
    SGLB_STEP_TABLE(glb_step4_none, glb_safe_none)
    SGLB_STEP_TABLE(glb_step5, band_take)
    SGLB_FOR_EACH_WORD(SGLB_COPY_TABLES)
#undef SGLB_COPY_TABLES
#undef SGLB_COPY
#undef SGLB_COPY_FRESH
#undef SGLB_COPY_LIVE
#undef SGLB_COPY_SAFE
