/* feedback.p4 (TNA): what a leaf keeps of the metrics its tags bring back
 * about its own paths: the fed-back level as three bit planes, which paths
 * are fresh, and the extremes of the fed-back delays, per destination leaf;
 * with the lookups and clock a store needs and the access tables.
 *
 * Included in the body of SglbIngress on Tofino 2 (one pass) and of
 * SglbEgress on Tofino (words.p4, SGLB_TWO_PASS): there the recirculation
 * port's egress reads them for the GLB engine, which runs in that egress,
 * and the egress of the host port stores the metric of a tag the ingress
 * passed (bridge.fb_store) before it takes the tag off. That takes their
 * stateful ALUs (6 at 8 paths, 10 at 64) out of Tofino's ingress, whose
 * 12 stages hold the checks and the other registers. Names: `meta` and
 * `hdr` of the including control, whose metadata has the fields used here
 * (dst_leaf, fb_op, fb_bit, fb_l0..2, fb_owd_c, gen, gen32). */

#ifdef SGLB_TWO_PASS
#define SGLB_FB_CLOCK eg_prsr_md.global_tstamp
    action access_none() { }    /* (ingress has its own: steps.p4) */
#else
#define SGLB_FB_CLOCK ig_prsr_md.global_tstamp
#endif

    SGLB_FOR_EACH_WORD(SGLB_FEEDBACK_WORD_REGISTERS)

    /* Per destination: the extremes of the fed-back one-way delays of this
     * generation (the delay-skew rule). owd_low keeps the largest complement
     * (~smallest delay), so that a stale read returns 0 like owd_high's: a
     * RegisterAction cannot output a constant such as 0xFFFFFFFF. */
    Register<owd_extreme_t, bit<16>>(MAX_LEAVES) owd_low;
    RegisterAction<owd_extreme_t, bit<16>, bit<32>>(owd_low) owd_low_get = {
        void apply(inout owd_extreme_t v, out bit<32> rv) {
            rv = 0;
            if (meta.gen32 - v.gen <= 1) {     /* this generation or the previous */
                rv = v.owd;
            }
        }
    };
    RegisterAction<owd_extreme_t, bit<16>, bit<32>>(owd_low) owd_low_put = {
        void apply(inout owd_extreme_t v) {
            if (v.gen != meta.gen32 || meta.fb_owd_c > v.owd) {
                v.owd = meta.fb_owd_c;
            }
            v.gen = meta.gen32;
        }
    };
    Register<owd_extreme_t, bit<16>>(MAX_LEAVES) owd_high;
    RegisterAction<owd_extreme_t, bit<16>, bit<32>>(owd_high) owd_high_get = {
        void apply(inout owd_extreme_t v, out bit<32> rv) {
            rv = 0;
            if (meta.gen32 - v.gen <= 1) {     /* this generation or the previous */
                rv = v.owd;
            }
        }
    };
    RegisterAction<owd_extreme_t, bit<16>, bit<32>>(owd_high) owd_high_put = {
        void apply(inout owd_extreme_t v) {
            if (v.gen != meta.gen32 || hdr.tag.fb_owd > v.owd) {
                v.owd = hdr.tag.fb_owd;
            }
            v.gen = meta.gen32;
        }
    };

    /* -- the generations of freshness (identity hashes: slices of the
     *    timestamp at other offsets; one step table per hash, at most 32
     *    bits of hash output per table) -- */
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) coarse_gen;
    Hash<pword_t>(HashAlgorithm_t.IDENTITY) coarse_gen_word;

    action read_clock_gen() {
        meta.gen32 = coarse_gen.get({ (bit<FB_GEN_SHIFT - 16>)0, SGLB_FB_CLOCK[47:FB_GEN_SHIFT] });
    }

    action read_clock_word() {
#if FB_GEN_SHIFT + WORD_BITS > 48
        meta.gen = coarse_gen_word.get({ (bit<FB_GEN_SHIFT + WORD_BITS - 48>)0,
                                         SGLB_FB_CLOCK[47:FB_GEN_SHIFT] });
#else
        meta.gen = coarse_gen_word.get({ SGLB_FB_CLOCK[FB_GEN_SHIFT + WORD_BITS - 1:FB_GEN_SHIFT] });
#endif
    }

    /* -- fb_paths: one-hot bit of a fed-back path -- */
    action set_fb_bit(pathmask_t path_bit) {
        meta.fb_bit = path_bit;
    }

    action no_fb_bit() {
        meta.fb_bit = 0;
    }

    table fb_paths {
        key = { hdr.tag.fb_path: exact; }
        actions = { set_fb_bit; no_fb_bit; }
        default_action = no_fb_bit();
        size = MAX_PATHS;
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

    /* -- the access tables: read (op 0) or store (fb_op 1) -- */
    SGLB_FOR_EACH_WORD(SGLB_FEEDBACK_ACCESS)

    action owd_low_read() { meta.owd_min_c = owd_low_get.execute(meta.dst_leaf); }
    action owd_low_store() { owd_low_put.execute(meta.dst_leaf); }
    SGLB_ACCESS_TABLE(owd_low_access, meta.fb_op: exact;, owd_low_store;,
                      1: owd_low_store();, owd_low_read)
    action owd_high_read() { meta.owd_max = owd_high_get.execute(meta.dst_leaf); }
    action owd_high_store() { owd_high_put.execute(meta.dst_leaf); }
    SGLB_ACCESS_TABLE(owd_high_access, meta.fb_op: exact;, owd_high_store;,
                      1: owd_high_store();, owd_high_read)

    /* (owd_low keeps complements; a step: an ALU operation of its own) */
    action fb_owd_complement() {
        meta.fb_owd_c = ~hdr.tag.fb_owd;
    }

    SGLB_STEP_TABLE(clock_gen, read_clock_gen)
    SGLB_STEP_TABLE(clock_word, read_clock_word)
    SGLB_STEP_TABLE(fb_owd_step, fb_owd_complement)
#undef SGLB_FB_CLOCK
