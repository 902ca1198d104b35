/* steps.p4 (TNA): the access tables of the registers, the GLB engine's
 * bitwise steps and the other one-step tables of SglbIngress. Included
 * inside the body of SglbIngress after its tables: the actions read `meta`
 * and `hdr` of that control. Why steps are tables: bf-p4c runs a P4 action
 * in one stage and merges straight-line statements into one action, so
 * dependent operations go to successive tables; saturated differences are
 * computed here because a gateway cannot compute them. */
    /* the default of the access tables: an index from the PHV needs the
     * hash unit, which a default action cannot use */
    action access_none() { }

    /* -- notice_seen: marked by an offer, read by a write-back -- */
    action seen_mark() { meta.notice_seen = notice_seen_mark.execute(meta.notice_index); }
    action seen_read() { meta.notice_seen = notice_seen_get.execute(meta.notice_index); }
    @hidden table notice_seen_access {
        key = { meta.notice_ok: exact; hdr.notice.kind: ternary; }
        actions = { seen_mark; seen_read; access_none; }
        const entries = { (1, NOTICE_WRITEBACK): seen_read(); (1, _): seen_mark(); }
        const default_action = access_none();
        size = 2;
    }

    /* -- register access tables: each register is executed by one table
     *    (regs.p4), the operation chosen by its key (0, no entry: read) -- */
    SGLB_FOR_EACH_WORD(SGLB_WORD_ACCESS)

    action owd_low_read() { meta.owd_min_c = owd_low_get.execute(meta.dst_leaf); }
    action owd_low_store() { owd_low_put.execute(meta.dst_leaf); }
    SGLB_ACCESS_TABLE(owd_low_access, meta.fb_op: exact;, owd_low_store;,
                      1: owd_low_store();, owd_low_read)
    action owd_high_read() { meta.owd_max = owd_high_get.execute(meta.dst_leaf); }
    action owd_high_store() { owd_high_put.execute(meta.dst_leaf); }
    SGLB_ACCESS_TABLE(owd_high_access, meta.fb_op: exact;, owd_high_store;,
                      1: owd_high_store();, owd_high_read)

    action npaths_read() { meta.fb_npaths = fb_npaths_get.execute(meta.dst_leaf); }
    action npaths_store() { fb_npaths_put.execute(meta.dst_leaf); }
    SGLB_ACCESS_TABLE(npaths_access, meta.rx_op: exact;, npaths_store;,
                      1: npaths_store();, npaths_read)

    action rx_level_read() { meta.fb_word = rx_level_get.execute(meta.rx_index); }
    action rx_level_store() { rx_level_put.execute(meta.rx_index); }
    SGLB_ACCESS_TABLE(rx_level_access, meta.rx_op: exact;, rx_level_store;,
                      1: rx_level_store();, rx_level_read)
    action rx_owd_read() { meta.fb_owd = rx_owd_get.execute(meta.rx_index); }
    action rx_owd_store() { rx_owd_put.execute(meta.rx_index); }
    SGLB_ACCESS_TABLE(rx_owd_access, meta.rx_op: exact;, rx_owd_store;,
                      1: rx_owd_store();, rx_owd_read)

    action links_read() { meta.links_now = leaf_links_get.execute(meta.dst_leaf); }
    action links_down() { meta.links_was = leaf_links_down.execute(meta.dst_leaf); }
    action links_up() { meta.links_was = leaf_links_up.execute(meta.dst_leaf); }
    SGLB_ACCESS_TABLE(links_access, meta.links_op: exact;, links_down; links_up;,
                      OP_DOWN: links_down(); OP_UP: links_up();, links_read)

    /* -- the GLB engine's bitwise steps, one table per stage (see apply) --
     * In place, to keep the masks few (at 64 paths each takes two 32-bit
     * containers): `live` goes from the configured paths to the live ones
     * (weighted, port up, not forced down, allowed: the mask or forced up);
     * `live_safe` from the fresh paths to the live, safe ones; fb_j from the
     * fed-back planes to the levels (fresh feedback, else the profile's
     * rq_j), where band_level turns fb2 into the paths above the band. */
#define SGLB_COPY(DST, HASH, SRC, W, HI, LO) DST[HI:LO] = HASH##_##W.get({ SRC[HI:LO] });
#define SGLB_COPY_FRESH(W, HI, LO) SGLB_COPY(meta.live_safe, fresh_copy, meta.fresh, W, HI, LO)
#define SGLB_COPY_LIVE(W, HI, LO) SGLB_COPY(meta.candidates, live_copy, meta.live, W, HI, LO)
#define SGLB_COPY_SAFE(W, HI, LO) SGLB_COPY(meta.candidates, safe_copy, meta.live_safe, W, HI, LO)

    /* The weighted paths whose port is up: the forced bits (read after the
     * notice checks) are needed only by glb_levels. */
    action glb_weights() {
        meta.weighted = meta.weighted & ~meta.down;
    }

    action glb_inputs() {
        meta.live = meta.live & meta.weighted;
        meta.fb0 = meta.fresh & meta.fb0;
        meta.fb1 = meta.fresh & meta.fb1;
        meta.fb2 = meta.fresh & meta.fb2;
        meta.rq0 = meta.rq0 & ~meta.fresh;
        meta.rq1 = meta.rq1 & ~meta.fresh;
        meta.rq2 = meta.rq2 & ~meta.fresh;
        meta.unknown_left = meta.gap_unknown |-| meta.idle;
        meta.idle_margin = meta.idle |-| meta.gap_margin;
        meta.gap_over = meta.idle |-| meta.flowlet_gap;
    }

    /* ECMP knows only local link state and the control plane's mask. */
    action glb_inputs_ecmp() {
        meta.live = meta.live & ~meta.down;
    }

    /* lv_j (in fb_j): fresh & fb_j and rq_j & ~fresh are disjoint, so ^ is
     * their union (bf-p4c does not take (a & b) | (c & d) yet). */
    action glb_levels() {
        meta.live = meta.live & ~meta.forced_down;
        meta.cp_mask = meta.cp_mask | meta.forced_up;
        meta.fb0 = meta.fb0 ^ meta.rq0;
        meta.fb1 = meta.fb1 ^ meta.rq1;
        meta.fb2 = meta.fb2 ^ meta.rq2;
        meta.skew_bound = meta.owd_max + meta.owd_min_c;    /* max - min - 1 */
    }

    /* idle is past max - min - 1 + gap_margin iff idle >= max - min + gap_margin:
     * (idle - gap_margin) - (max - min - 1), both saturated; the delays are
     * needed only by glb_levels, so their registers may be read a stage later */
    action glb_live() {
        meta.live = meta.live & meta.cp_mask;
        meta.skew_over = meta.idle_margin |-| meta.skew_bound;
    }

    /* The two plane pairs band_level combines with fb2; and live_safe (where a
     * new flowlet may go, see apply) in one of three variants. */
#define SGLB_PAIRS                                                             \
        meta.pl_and = meta.fb1 & meta.fb0;                                     \
        meta.pl_or = meta.fb1 | meta.fb0;
    action glb_safe_all() {
        SGLB_PAIRS
        meta.live_safe = meta.live;
    }

    action glb_safe_fresh() {
        SGLB_PAIRS
        meta.live_safe = meta.live & meta.live_safe;
    }

    action glb_safe_none() {
        SGLB_PAIRS
        meta.live_safe = 0;
    }
#undef SGLB_PAIRS

    /* The candidates: the eligible paths not above the band. */
    action band_take() {
        meta.candidates = meta.candidates & ~meta.fb2;
        meta.banded = 1;
    }

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

    /* Saturated differences in step actions: a gateway cannot compute them
     * (the front end would fold a plain statement into the condition). */
    action fb_freshness() {
        meta.fb_fresh_left = meta.fb_age |-| meta.fb_fresh;
        meta.fb_over = meta.fb_path |-| meta.fb_npaths;
    }

    action key_of_fail() {
        meta.notice_key = fail_key_hash.get({ hdr.notice.epoch[29:0], 2w0b11 });
        meta.nb_sx = meta.nb_id ^ hdr.notice.spine_id;
    }

    action key_of_other() {
        meta.notice_key = other_key_hash.get({ hdr.notice.epoch[29:0], 2w0b10 });
        meta.nb_sx = meta.nb_id ^ hdr.notice.spine_id;
    }

    action frame_overrun() {
        meta.frame_over = hdr.ipv4.totalLen |-| meta.tag_room;
    }

    action tag_span_of() {
        meta.tag_span = hdr.tag.npaths |-| hdr.tag.path;
        meta.nb_x = meta.nb_id ^ hdr.tag.src_leaf;
    }

    action spine_split() {
        meta.split_left = meta.share_a |-| meta.split;
    }

    action lowest_number() {
        meta.lowest_chosen = chosen_of_lowest.get({ meta.lowest_word[14:9] });
    }

    action fb_received() {
        meta.tag_event = EV_FEEDBACK_RECEIVED;
    }


    /* The tag in two actions: its constants, then the fields copied from
     * the PHV (one action may use few sources per container); kept_alive
     * writes its path. */
    action tag_constants() {
        hdr.tag.setValid();
        hdr.tag.version = SGLB_VERSION;
        hdr.tag.kind = TAG_KIND;
        hdr.tag.length = TAG_LENGTH;
        hdr.tag.ce = 0;
    }

    /* No fresh metric to return (fb_level_out returns one). */
    action tag_no_feedback() {
        hdr.tag.fb_owd = 0;
        hdr.tag.fb_path = 0;
        hdr.tag.fb_level = FB_NONE;
    }

    action tag_copies() {
        hdr.tag.npaths = meta.path_count;
        hdr.tag.src_leaf = meta.switch_id;
        hdr.tag.ts = meta.now;
        hdr.tag.next_type = hdr.ethernet.etherType;
        hdr.ethernet.etherType = ETHERTYPE_SGLB;
    }

    /* -- fb_level_bits: the three bit planes of a fed-back level -- */
    action set_fb_levels(bit<1> l0, bit<1> l1, bit<1> l2) {
        meta.fb_l0 = l0;
        meta.fb_l1 = l1;
        meta.fb_l2 = l2;
    }

    @hidden table fb_level_bits {
        key = { hdr.tag.fb_level: exact; }
        actions = { set_fb_levels; }
        const entries = {
            0: set_fb_levels(0, 0, 0); 1: set_fb_levels(1, 0, 0);
            2: set_fb_levels(0, 1, 0); 3: set_fb_levels(1, 1, 0);
            4: set_fb_levels(0, 0, 1); 5: set_fb_levels(1, 0, 1);
            6: set_fb_levels(0, 1, 1); 7: set_fb_levels(1, 1, 1);
        }
        const default_action = set_fb_levels(0, 0, 0);
        size = 8;
    }

    /* -- clock: the coarse times (identity hashes: slices of the timestamp
     *    at other offsets), then the previous generation -- */
    action read_clock_fb() {
        meta.now_fb = coarse_fb_time.get({ ig_prsr_md.global_tstamp[FB_TIME_SHIFT + 27:FB_TIME_SHIFT] });
    }

    /* (one step table per hash: at most 32 bits of hash output per table) */
    action read_clock_gen() {
        meta.gen32 = coarse_gen.get({ (bit<FB_GEN_SHIFT - 16>)0, ig_prsr_md.global_tstamp[47:FB_GEN_SHIFT] });
    }

    action read_clock_word() {
#if FB_GEN_SHIFT + WORD_BITS > 48
        meta.gen = coarse_gen_word.get({ (bit<FB_GEN_SHIFT + WORD_BITS - 48>)0,
                                         ig_prsr_md.global_tstamp[47:FB_GEN_SHIFT] });
#else
        meta.gen = coarse_gen_word.get({ ig_prsr_md.global_tstamp[FB_GEN_SHIFT + WORD_BITS - 1:FB_GEN_SHIFT] });
#endif
    }


    /* -- fb_level_out: the metric a tag returns: fb_path, the level from
     *    rx_level's word, the delay from rx_owd; only when the cursor named a
     *    path (fb_try) whose word is valid (bit 31), within the paths the
     *    destination has (fb_over zero) and fresh (fb_fresh_left zero): the
     *    conditions are keys, so no step decides them beforehand -- */
    action put_fb_level(bit<8> level) {
        hdr.tag.fb_level = level;
        hdr.tag.fb_path = meta.fb_path;
        hdr.tag.fb_owd = meta.fb_owd;
        meta.tag_event = EV_FEEDBACK_SENT;
    }

#define SGLB_FB_OUT(L) (1, 8 + L, 0 &&& 0xFF, 0 &&& 0xFFFFFFF) : put_fb_level(L);
    table fb_level_out {
        key = {
            meta.fb_try: exact; meta.fb_word[31:28]: exact;
            meta.fb_over: ternary; meta.fb_fresh_left: ternary;
        }
        actions = { put_fb_level; tag_no_feedback; }
        const entries = {
            SGLB_FB_OUT(0) SGLB_FB_OUT(1) SGLB_FB_OUT(2) SGLB_FB_OUT(3)
            SGLB_FB_OUT(4) SGLB_FB_OUT(5) SGLB_FB_OUT(6) SGLB_FB_OUT(7)
        }
        const default_action = tag_no_feedback();
        size = 8;
    }
#undef SGLB_FB_OUT

#define SGLB_STEP_TABLE(NAME, ACTION)                                          \
    @hidden table NAME {                                                       \
        actions = { ACTION; }                                                  \
        const default_action = ACTION();                                       \
        size = 1;                                                              \
    }
    SGLB_STEP_TABLE(glb_step0, glb_weights)
    SGLB_STEP_TABLE(glb_step1, glb_inputs)
    SGLB_STEP_TABLE(glb_step1_ecmp, glb_inputs_ecmp)
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
    SGLB_STEP_TABLE(fb_step, fb_freshness)
    SGLB_STEP_TABLE(tag_step, tag_span_of)
    SGLB_STEP_TABLE(frame_step, frame_overrun)
    SGLB_STEP_TABLE(notice_fail_key, key_of_fail)
    SGLB_STEP_TABLE(notice_other_key, key_of_other)
    SGLB_STEP_TABLE(spine_step, spine_split)
    SGLB_STEP_TABLE(tag_open, tag_constants)
    SGLB_STEP_TABLE(clock_fb, read_clock_fb)
    SGLB_STEP_TABLE(clock_gen, read_clock_gen)
    SGLB_STEP_TABLE(clock_word, read_clock_word)
    SGLB_STEP_TABLE(lowest_step, lowest_number)
    SGLB_STEP_TABLE(fb_received_step, fb_received)
    SGLB_STEP_TABLE(tag_stamp, tag_copies)
#undef SGLB_STEP_TABLE
