/* regs.p4 (TNA): the per-word registers of SglbIngress and their
 * RegisterActions, as macros expanded once per 32-bit word of the path
 * bitmaps by SGLB_FOR_EACH_WORD (words.p4). They use the names of
 * SglbIngress: `meta` and `hdr`.
 *
 * Each register is one stateful ALU, and every packet runs at most one of
 * its RegisterActions: a data packet reads, a port-status packet, a notice or
 * a fed-back tag updates (read-modify-write in the ALU). Updates take their
 * per-path bits from PHV masks built by tables (set: v | m, clear: v & ~m),
 * never a variable shift. */

#ifndef SGLB_TNA_REGS_P4
#define SGLB_TNA_REGS_P4

/* A bitmap register: `get` answers READ (of its value v), `set` ORs `MASK`
 * in, `clear` takes it out. */
#define SGLB_BITMAP_REGISTER(NAME, W, HI, LO, SIZE, INDEX_T, MASK, READ)       \
    Register<pword_t, INDEX_T>(SIZE, 0) NAME##_##W;                            \
    RegisterAction<pword_t, INDEX_T, pword_t>(NAME##_##W) NAME##_get_##W = {   \
        void apply(inout pword_t v, out pword_t rv) { rv = READ; }             \
    };                                                                         \
    RegisterAction<pword_t, INDEX_T, pword_t>(NAME##_##W) NAME##_set_##W = {   \
        void apply(inout pword_t v, out pword_t rv) {                          \
            rv = v;                                                            \
            v = v | MASK[HI:LO];                                               \
        }                                                                      \
    };                                                                         \
    RegisterAction<pword_t, INDEX_T, pword_t>(NAME##_##W) NAME##_clear_##W = { \
        void apply(inout pword_t v, out pword_t rv) {                          \
            rv = v;                                                            \
            v = v & ~MASK[HI:LO];                                              \
        }                                                                      \
    };

/* What a data packet reads of a register of paths that are out (down
 * ports, FAIL notices): the paths of FROM less those, into another mask
 * (a table that reads the mask it writes would wait for the table of the
 * other word). So the engine gets no mask of them (one fewer per gress on
 * Tofino at 64 paths). */
#define SGLB_LESS_OUT(FROM, HI, LO) FROM[HI:LO] & ~v

/* Port liveness of the leaf's paths (one cell: the whole bitmap), read as
 * the configured paths (uplinks: in `candidates`, stages before) whose
 * port is up: `live`. */
#define SGLB_DOWN_REGISTERS(W, HI, LO)                                         \
    SGLB_BITMAP_REGISTER(path_down, W, HI, LO, 1, bit<1>, meta.port_paths,    \
                         SGLB_LESS_OUT(PICK.candidates, HI, LO))

/* Notices in force per destination leaf: FAIL forces paths down, RECOVER up,
 * until the control plane writes the notice's epoch back. */
#define SGLB_NOTICE_REGISTERS(W, HI, LO)                                       \
    SGLB_BITMAP_REGISTER(forced_down, W, HI, LO, MAX_LEAVES, bit<16>,          \
                         meta.notice_paths, SGLB_LESS_OUT(PICK.live, HI, LO)) \
    SGLB_BITMAP_REGISTER(forced_up, W, HI, LO, MAX_LEAVES, bit<16>,            \
                         meta.notice_paths, v)

/* One bit plane J of the fed-back level of every path toward a destination:
 * feedback about path p sets or clears p's bit (fb_bit is one-hot, so the
 * words without p are left as they are). */
#define SGLB_PLANE_REGISTER(J, W, HI, LO)                                      \
    Register<pword_t, bit<16>>(MAX_LEAVES, 0) fb_plane##J##_##W;               \
    RegisterAction<pword_t, bit<16>, pword_t>(fb_plane##J##_##W)               \
            fb_plane##J##_get_##W = {                                          \
        void apply(inout pword_t v, out pword_t rv) { rv = v; }                \
    };                                                                         \
    RegisterAction<pword_t, bit<16>, pword_t>(fb_plane##J##_##W)               \
            fb_plane##J##_put_##W = {                                          \
        void apply(inout pword_t v) {                                          \
            if (meta.fb_l##J == 1) {                                           \
                v = v | meta.fb_bit[HI:LO];                                    \
            } else {                                                           \
                v = v & ~meta.fb_bit[HI:LO];                                   \
            }                                                                  \
        }                                                                      \
    };

/* Which paths were fed back in the current generation: the first feedback
 * of a new generation about a path of the word starts the bitmap afresh; a
 * read returns the bits of the current or the previous generation, else
 * none. */
#define SGLB_FRESH_REGISTER(W, HI, LO)                                         \
    Register<fresh_t, bit<16>>(MAX_LEAVES) fresh_##W;                          \
    RegisterAction<fresh_t, bit<16>, pword_t>(fresh_##W) fresh_get_##W = {     \
        void apply(inout fresh_t v, out pword_t rv) {                          \
            rv = 0;                                                            \
            if (meta.gen - v.gen <= 1) {  /* this generation or the previous */\
                rv = v.bits;                                                   \
            }                                                                  \
        }                                                                      \
    };                                                                         \
    RegisterAction<fresh_t, bit<16>, pword_t>(fresh_##W) fresh_put_##W = {     \
        void apply(inout fresh_t v) {                                          \
            if (v.gen == meta.gen) {                                           \
                v.bits = v.bits | meta.fb_bit[HI:LO];                          \
            } else if (meta.fb_bit[HI:LO] != 0) {                              \
                v.bits = meta.fb_bit[HI:LO];                                   \
                v.gen = meta.gen;                                              \
            }                                                                  \
        }                                                                      \
    };

/* The ingress's per-word registers (link state and notices), and the
 * feedback's (feedback.p4: in ingress on Tofino 2, in egress on Tofino). */
#define SGLB_STATE_WORD_REGISTERS(W, HI, LO)                                   \
    SGLB_DOWN_REGISTERS(W, HI, LO)                                             \
    SGLB_NOTICE_REGISTERS(W, HI, LO)
#define SGLB_FEEDBACK_WORD_REGISTERS(W, HI, LO)                                \
    SGLB_PLANE_REGISTER(0, W, HI, LO)                                          \
    SGLB_PLANE_REGISTER(1, W, HI, LO)                                          \
    SGLB_PLANE_REGISTER(2, W, HI, LO)                                          \
    SGLB_FRESH_REGISTER(W, HI, LO)

/* ---- the access tables of SglbIngress ----
 * Every register is executed by one table only (its access table: one
 * action per operation, chosen by the key), because bf-p4c must place all
 * the tables of a register in the same stage, which it cannot do when their
 * dependences differ (the reads of the GLB engine, the updates after the
 * checks). Per-destination state is indexed by meta.dst_leaf: the
 * destination of a data packet, the leaf a notice names, the source of a
 * tag. */

/* One access table per register (and word): bf-p4c allows one stateful ALU
 * operation per address per action. The tables are keyed by an op field
 * (0: read); the read is an entry, not the default action, because an
 * index from the PHV needs the hash unit, which only the hit path has. */
#define SGLB_ACCESS_TABLE(NAME, KEYS, ACTIONS, ENTRIES, READ)                  \
    @hidden table NAME {                                                       \
        key = { KEYS }                                                         \
        actions = { ACTIONS READ; access_none; }                               \
        const entries = { ENTRIES 0: READ(); }                                 \
        const default_action = access_none();                                  \
        size = 4;                                                              \
    }

/* An access table of one operation, run when KEY is 1 (an entry, as above),
 * where another table in an exclusive branch runs the register's other. */
#define SGLB_ONE_OP_TABLE(NAME, KEY, ACTION)                                   \
    @hidden table NAME {                                                       \
        key = { KEY: exact; }                                                  \
        actions = { ACTION; access_none; }                                     \
        const entries = { 1: ACTION(); }                                       \
        const default_action = access_none();                                  \
        size = 1;                                                              \
    }

/* path_down: read, set (port down), clear (port up) */
#define SGLB_DOWN_ACCESS(W, HI, LO)                                            \
    action down_read_##W() { PICK.live[HI:LO] = path_down_get_##W.execute(0); } \
    action down_set_##W() { path_down_set_##W.execute(0); }                    \
    action down_clear_##W() { path_down_clear_##W.execute(0); }                \
    SGLB_ACCESS_TABLE(path_down_access_##W, meta.down_op: exact;,              \
                      down_set_##W; down_clear_##W;,                           \
                      OP_DOWN: down_set_##W(); OP_UP: down_clear_##W();,       \
                      down_read_##W)

/* forced_down / forced_up: a data packet's read in SGLB mode (ECMP reads
 * no notices), or the update of a notice that acts, by ternary entries in
 * priority order on notice_rv (key - held; held - key for a write-back) and
 * notice_seen (anything held): an offer acts when nothing is held or
 * key - held > 1 as a signed number, a write-back when held - key <= 1.
 * FAIL forces down, RECOVER up, a write-back clears both. The read of
 * forced_down is the live paths less those forced down (after path_down's
 * read), into LIVE_UNFORCED (words.p4: glb_inputs starts from them);
 * forced_up's is the register. */
#define NOTICE_RV_NEAR 32w0 &&& 32w0xFFFFFFFE
#define NOTICE_RV_POSITIVE 32w0 &&& 32w0x80000000
#define NOTICE_RV_NEGATIVE 32w0x80000000 &&& 32w0x80000000
#define SGLB_FORCED_ENTRIES(FAIL_A, RECOVER_A, WB_A, READ_A)                   \
    (1, NOTICE_FAIL, 0, _, _): FAIL_A();                                       \
    (1, NOTICE_RECOVER, 0, _, _): RECOVER_A();                                 \
    (1, NOTICE_FAIL, 1, NOTICE_RV_NEAR, _): access_none();                     \
    (1, NOTICE_RECOVER, 1, NOTICE_RV_NEAR, _): access_none();                  \
    (1, NOTICE_FAIL, 1, NOTICE_RV_POSITIVE, _): FAIL_A();                      \
    (1, NOTICE_RECOVER, 1, NOTICE_RV_POSITIVE, _): RECOVER_A();                \
    (1, NOTICE_WRITEBACK, 1, NOTICE_RV_NEGATIVE, _): WB_A();                   \
    (1, NOTICE_WRITEBACK, 1, NOTICE_RV_NEAR, _): WB_A();                       \
    (0, _, _, _, MODE_SGLB): READ_A();
#define SGLB_FORCED_ACCESS_ONE(NAME, W, ON, OFF, WB, READ)                     \
    action NAME##_read_##W() { READ = NAME##_get_##W.execute(meta.dst_leaf); } \
    action NAME##_on_##W() { NAME##_set_##W.execute(meta.dst_leaf); }         \
    action NAME##_off_##W() { NAME##_clear_##W.execute(meta.dst_leaf); }      \
    @hidden table NAME##_access_##W {                                          \
        key = {                                                                \
            meta.notice_ok: ternary; hdr.notice.kind: ternary;                 \
            meta.notice_seen: ternary; meta.notice_rv: ternary;                \
            meta.lb_mode: ternary;                                             \
        }                                                                      \
        actions = { NAME##_read_##W; NAME##_on_##W; NAME##_off_##W; access_none; } \
        const entries = { SGLB_FORCED_ENTRIES(ON, OFF, WB, NAME##_read_##W) }  \
        const default_action = access_none();                                  \
        size = 9;                                                              \
    }
#define SGLB_FORCED_ACCESS(W, HI, LO)                                          \
    SGLB_FORCED_ACCESS_ONE(forced_down, W, forced_down_on_##W,                 \
                           forced_down_off_##W, forced_down_off_##W,           \
                           LIVE_UNFORCED[HI:LO])                             \
    SGLB_FORCED_ACCESS_ONE(forced_up, W, forced_up_off_##W, forced_up_on_##W,  \
                           forced_up_off_##W, GLB.forced_up[HI:LO])

/* A level plane J or the freshness of one word: read, or store the metric a
 * tag returns (fb_op). */
#define SGLB_PLANE_ACCESS(J, W, HI, LO)                                        \
    action plane##J##_read_##W() {                                             \
        meta.fb##J[HI:LO] = fb_plane##J##_get_##W.execute(meta.dst_leaf);     \
    }                                                                          \
    action plane##J##_store_##W() { fb_plane##J##_put_##W.execute(meta.dst_leaf); } \
    SGLB_ACCESS_TABLE(plane##J##_access_##W, meta.fb_op: exact;,               \
                      plane##J##_store_##W;,                                   \
                      1: plane##J##_store_##W();, plane##J##_read_##W)
#define SGLB_FEEDBACK_ACCESS(W, HI, LO)                                        \
    SGLB_PLANE_ACCESS(0, W, HI, LO)                                            \
    SGLB_PLANE_ACCESS(1, W, HI, LO)                                            \
    SGLB_PLANE_ACCESS(2, W, HI, LO)                                            \
    action fresh_read_##W() { meta.fresh[HI:LO] = fresh_get_##W.execute(meta.dst_leaf); } \
    action fresh_store_##W() { fresh_put_##W.execute(meta.dst_leaf); }         \
    SGLB_ACCESS_TABLE(fresh_access_##W, meta.fb_op: exact;,                    \
                      fresh_store_##W;,                                        \
                      1: fresh_store_##W();, fresh_read_##W)

#define SGLB_STATE_WORD_ACCESS(W, HI, LO)                                      \
    SGLB_DOWN_ACCESS(W, HI, LO)                                                \
    SGLB_FORCED_ACCESS(W, HI, LO)

#define SGLB_APPLY_STATE_WORD_ACCESS(W, HI, LO)                                \
    path_down_access_##W.apply();                                              \
    forced_down_access_##W.apply();                                            \
    forced_up_access_##W.apply();
#define SGLB_APPLY_FEEDBACK_WORD_ACCESS(W, HI, LO)                             \
    plane0_access_##W.apply();                                                 \
    plane1_access_##W.apply();                                                 \
    plane2_access_##W.apply();                                                 \
    fresh_access_##W.apply();
/* Tofino 2: both, a word at a time (the order its placement was measured in) */
#define SGLB_APPLY_WORD_ACCESS(W, HI, LO)                                      \
    SGLB_APPLY_STATE_WORD_ACCESS(W, HI, LO)                                    \
    SGLB_APPLY_FEEDBACK_WORD_ACCESS(W, HI, LO)

/* The GLB engine's copies between its PHV groups, one table per word. */
#define SGLB_APPLY_FRESH_COPY(W, HI, LO) glb_fresh_##W.apply();
#define SGLB_APPLY_ELIGIBLE_COPY(W, HI, LO) glb_eligible_##W.apply();
#define SGLB_APPLY_LIVE_COPY(W, HI, LO) glb_live_band_##W.apply();

/* The GLB engine (engine.p4), from the reads to the candidates. Live:
 * configured, port up, allowed (a notice in force, else the control plane's
 * mask) and a non-zero weight; ECMP knows only local link state and the
 * mask. Where a new flowlet may go without overtaking the flowlet before it
 * (safe): anywhere once idle for gap_unknown (or with feedback off); to the
 * paths with fresh delays once idle for the skew of this destination's fresh
 * delays plus gap_margin; nowhere before. The level of each path as three
 * bit planes: fresh feedback replaces the profile's (floored) remote level.
 * One step table per stage (glb_step*). Then band_level and band_take
 * (glb_step5) narrow the candidates to the band, except for ECMP and a
 * flowlet with nowhere safe to move (SGLB_FALLS_BACK): theirs are the live
 * paths (the copies glb_live_band_*). A packet that found a band and was
 * idle past flowlet_gap starts a new flowlet. */
#define SGLB_ENGINE_APPLY                                                      \
    if (PICK.lb_mode == MODE_SGLB) {                                           \
        glb_step1.apply();                                                     \
        SGLB_FOR_EACH_WORD(SGLB_APPLY_FRESH_COPY)                              \
        glb_step2.apply();                                                     \
    }                                                                          \
    glb_step3.apply();                                                         \
    if (PICK.lb_mode == MODE_SGLB && GLB.feedback == 1 && meta.unknown_left != 0) { \
        if (meta.owd_min_c != 0 && meta.skew_over != 0) {                      \
            glb_step4_fresh.apply();                                           \
        } else {                                                               \
            glb_step4_none.apply();                                            \
        }                                                                      \
    } else {                                                                   \
        glb_step4_all.apply();                                                 \
    }                                                                          \
    SGLB_FOR_EACH_WORD(SGLB_APPLY_ELIGIBLE_COPY)                               \
    safe_empty.apply();                                                        \
    band_level.apply();                                                        \
    if (SGLB_FALLS_BACK) {                                                     \
        SGLB_FOR_EACH_WORD(SGLB_APPLY_LIVE_COPY)                               \
    } else {                                                                   \
        glb_step5.apply();                                                     \
    }                                                                          \
    if (meta.banded == 1 && meta.gap_over != 0) {                              \
        PICK.new_flowlet = 1;                                                  \
    }
#define SGLB_FALLS_BACK (PICK.lb_mode == MODE_ECMP || meta.safe_none == 1)

/* Const entries of kept_alive: a valid word of path I keeps it if I's bit is
 * set in `live` (a new flowlet's first packet: counted as such). */
#define SGLB_ALIVE_NEW_ENTRY(I)                                                \
    ((bit<7>)(64 + I), PATH_BIT(I) &&& PATH_BIT(I), 1) : keep_path_new(I);
#define SGLB_ALIVE_ENTRY(I) ((bit<7>)(64 + I), PATH_BIT(I) &&& PATH_BIT(I), _) : keep_path(I);

#endif
