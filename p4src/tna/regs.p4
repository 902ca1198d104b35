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

/* A bitmap register: `get` returns it, `set` ORs `MASK` in, `clear` takes it out. */
#define SGLB_BITMAP_REGISTER(NAME, W, HI, LO, SIZE, INDEX_T, MASK)             \
    Register<pword_t, INDEX_T>(SIZE, 0) NAME##_##W;                            \
    RegisterAction<pword_t, INDEX_T, pword_t>(NAME##_##W) NAME##_get_##W = {   \
        void apply(inout pword_t v, out pword_t rv) { rv = v; }                \
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

/* Port liveness of the leaf's paths (one cell: the whole bitmap). */
#define SGLB_DOWN_REGISTERS(W, HI, LO)                                         \
    SGLB_BITMAP_REGISTER(path_down, W, HI, LO, 1, bit<1>, meta.port_paths)

/* Notices in force per destination leaf: FAIL forces paths down, RECOVER up,
 * until the control plane writes the notice's epoch back. */
#define SGLB_NOTICE_REGISTERS(W, HI, LO)                                       \
    SGLB_BITMAP_REGISTER(forced_down, W, HI, LO, MAX_LEAVES, bit<16>,          \
                         meta.notice_paths)                                    \
    SGLB_BITMAP_REGISTER(forced_up, W, HI, LO, MAX_LEAVES, bit<16>,            \
                         meta.notice_paths)

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
 * of a new generation starts the bitmap afresh; a read returns the bits of
 * the current or the previous generation, else none. */
#define SGLB_FRESH_REGISTER(W, HI, LO)                                         \
    Register<fresh_t, bit<16>>(MAX_LEAVES) fresh_##W;                          \
    RegisterAction<fresh_t, bit<16>, pword_t>(fresh_##W) fresh_get_##W = {     \
        void apply(inout fresh_t v, out pword_t rv) {                          \
            rv = 0;                                                            \
            if (v.gen == meta.gen || v.gen == meta.gen_prev) {                 \
                rv = v.bits;                                                   \
            }                                                                  \
        }                                                                      \
    };                                                                         \
    RegisterAction<fresh_t, bit<16>, pword_t>(fresh_##W) fresh_put_##W = {     \
        void apply(inout fresh_t v) {                                          \
            if (v.gen == meta.gen) {                                           \
                v.bits = v.bits | meta.fb_bit[HI:LO];                          \
            } else {                                                           \
                v.bits = meta.fb_bit[HI:LO];                                   \
                v.gen = meta.gen;                                              \
            }                                                                  \
        }                                                                      \
    };

#define SGLB_WORD_REGISTERS(W, HI, LO)                                         \
    SGLB_DOWN_REGISTERS(W, HI, LO)                                             \
    SGLB_NOTICE_REGISTERS(W, HI, LO)                                           \
    SGLB_PLANE_REGISTER(0, W, HI, LO)                                          \
    SGLB_PLANE_REGISTER(1, W, HI, LO)                                          \
    SGLB_PLANE_REGISTER(2, W, HI, LO)                                          \
    SGLB_FRESH_REGISTER(W, HI, LO)

/* ---- uses in SglbIngress.apply ---- */

#define SGLB_PORT_DOWN(W, HI, LO) path_down_set_##W.execute(0);
#define SGLB_PORT_UP(W, HI, LO) path_down_clear_##W.execute(0);
#define SGLB_READ_DOWN(W, HI, LO) meta.down[HI:LO] = path_down_get_##W.execute(0);

#define SGLB_NOTICE_FAIL(W, HI, LO)                                            \
    forced_down_set_##W.execute(hdr.notice.leaf_id);                           \
    forced_up_clear_##W.execute(hdr.notice.leaf_id);
#define SGLB_NOTICE_RECOVER(W, HI, LO)                                         \
    forced_down_clear_##W.execute(hdr.notice.leaf_id);                         \
    forced_up_set_##W.execute(hdr.notice.leaf_id);
#define SGLB_NOTICE_CONFIRMED(W, HI, LO)                                       \
    forced_down_clear_##W.execute(hdr.notice.leaf_id);                         \
    forced_up_clear_##W.execute(hdr.notice.leaf_id);

#define SGLB_READ_DESTINATION(W, HI, LO)                                       \
    meta.forced_down[HI:LO] = forced_down_get_##W.execute(meta.dst_leaf);      \
    meta.forced_up[HI:LO] = forced_up_get_##W.execute(meta.dst_leaf);          \
    meta.fb0[HI:LO] = fb_plane0_get_##W.execute(meta.dst_leaf);                \
    meta.fb1[HI:LO] = fb_plane1_get_##W.execute(meta.dst_leaf);                \
    meta.fb2[HI:LO] = fb_plane2_get_##W.execute(meta.dst_leaf);                \
    meta.fresh[HI:LO] = fresh_get_##W.execute(meta.dst_leaf);

#define SGLB_STORE_FEEDBACK(W, HI, LO)                                         \
    fb_plane0_put_##W.execute(hdr.tag.src_leaf);                               \
    fb_plane1_put_##W.execute(hdr.tag.src_leaf);                               \
    fb_plane2_put_##W.execute(hdr.tag.src_leaf);                               \
    if (meta.fb_bit[HI:LO] != 0) {                                             \
        fresh_put_##W.execute(hdr.tag.src_leaf);                               \
    }

/* Const entries of kept_alive: a valid word of path I keeps it if I's bit is
 * set in `live`. */
#define SGLB_ALIVE_ENTRY(I) ((bit<7>)(64 + I), PATH_BIT(I) &&& PATH_BIT(I)) : keep_path(I);

#endif
