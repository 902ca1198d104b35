/* words.p4: TNA sizes, units and the per-word macros of the Tofino program.
 *
 * Tofino registers are at most 32 bits wide and a packet may run one
 * RegisterAction per register, so per-path state is kept as bitmaps over
 * the paths of a destination, split into 32-bit words: one word for
 * MAX_PATHS 8 or 16 (a bit<8> / bit<16> cell), two for 64. Every per-word
 * register is declared, read and updated through SGLB_FOR_EACH_WORD(M),
 * which calls M(W, HI, LO) with the word's number and its bit range in a
 * bit<MAX_PATHS> mask. */

#ifndef SGLB_TNA_WORDS_P4
#define SGLB_TNA_WORDS_P4

/* The CPU port: the PCIe port of pipe 0 (Tofino: 192 on a 2-pipe device, 320
 * on a 4-pipe one: compile with -DCPU_PORT=320; Tofino 2: 0). */
#ifndef CPU_PORT
#if __TARGET_TOFINO__ == 2
#define CPU_PORT 0
#else
#define CPU_PORT 192
#endif
#endif

/* Tofino (12 stages per gress) cannot run the checks, the register reads and
 * the GLB engine in one pass through ingress, so a leaf sends its data
 * packets round once: the first pass runs the checks and reads the
 * registers into the `glb` header (the engine's inputs) and the `pick`
 * header (what the second pass needs), the egress of the recirculation port
 * runs the engine (its temporaries in egress metadata) and writes the
 * candidates into `pick`, and the second pass through ingress makes the pick
 * and forwards (docs/sglb.md, "Two passes on Tofino"). Tofino 2 does it all
 * in one pass. So the engine's inputs are GLB.*, what the pick takes PICK.*:
 * the headers on Tofino, ingress metadata on Tofino 2; its temporaries are
 * meta.* on both. */
#if __TARGET_TOFINO__ != 2 && !defined(SGLB_ONE_PASS)
#define SGLB_TWO_PASS
#endif
#ifdef SGLB_TWO_PASS
#define GLB hdr.glb
#define PICK hdr.pick
#else
#define GLB meta
#define PICK meta
#endif
/* The masks of a destination's profile (dst_profile; on Tofino dst_masks):
 * the paths the control plane allows, those with a capacity weight, the
 * remote level's three planes; without a profile everything, at level 0. */
#define SGLB_PROFILE_MASKS(LIVE, WEIGHTED, RQ0, RQ1, RQ2)                      \
    meta.cp_mask = LIVE;                                                       \
    meta.weighted = WEIGHTED;                                                  \
    meta.rq0 = RQ0;                                                            \
    meta.rq1 = RQ1;                                                            \
    meta.rq2 = RQ2;
#define SGLB_NO_PROFILE_MASKS SGLB_PROFILE_MASKS((pathmask_t)-1, (pathmask_t)-1, 0, 0, 0)
/* Where forced_down's read puts the live paths less those a FAIL notice
 * forces down, for glb_inputs: a mask of its own would cost PHV, the live
 * paths themselves would make each word's read wait for the other's. On
 * Tofino the pick header's candidates (free until the engine writes them);
 * on Tofino 2 live_safe, which the engine's PHV group of the live paths
 * holds (free until glb_inputs' stage). */
#ifdef SGLB_TWO_PASS
#define LIVE_UNFORCED PICK.candidates
#else
#define LIVE_UNFORCED meta.live_safe
#endif
/* A key on PICK.F or GLB.F named meta.F in the P4Info on both targets, so
 * that the control plane writes the same match fields. */
#define SGLB_STRING(X) #X
#define PICK_KEY(F, KIND) PICK.F: KIND @name(SGLB_STRING(meta.F))
/* The recirculation port of pipe 0 (Tofino: 68; for a leaf whose hosts are
 * on another pipe, that pipe's, e.g. -DRECIRC_PORT=196: registers are per
 * pipe, so both passes must run in the hosts' pipe). */
#ifndef RECIRC_PORT
#define RECIRC_PORT 68
#endif

/* A step table: one action, always applied (bf-p4c runs a P4 action in one
 * stage, so dependent operations go to successive tables). */
#define SGLB_STEP_TABLE(NAME, ACTION)                                          \
    @hidden table NAME {                                                       \
        actions = { ACTION; }                                                  \
        const default_action = ACTION();                                       \
        size = 1;                                                              \
    }

/* Tofino counts nanoseconds. Feedback times are 28-bit units of
 * 2^FB_TIME_SHIFT ns (16.4 us, as the v1model program's 16 us). */
#ifndef FB_TIME_SHIFT
#define FB_TIME_SHIFT 14
#endif
/* Freshness of fed-back levels and delays is a generation of 2^FB_GEN_SHIFT
 * ns (2^23 ns = 8.4 ms, the v1model default fb_fresh being 10 ms): a value
 * is fresh while it was stored in the current or the previous generation. */
#ifndef FB_GEN_SHIFT
#define FB_GEN_SHIFT 23
#endif
/* Flowlet table: 2^16 entries indexed by a CRC-16 of the 5-tuple. */
#define FLOWLET_INDEX_BITS 16
/* An SGLB spine's flows: as many slots as the v1model program's
 * FLOWLET_ENTRIES (4,096), one SRAM block per register. */
#define SPINE_FLOW_BITS 12
/* Capacity-weighted draws: DRAW_ROWS rows per weight profile (2^6). */
#ifndef DRAW_ROW_BITS
#define DRAW_ROW_BITS 6
#endif
#ifndef WEIGHT_PROFILES
#define WEIGHT_PROFILES 64
#endif
#define DRAW_TABLE_SIZE (WEIGHT_PROFILES << DRAW_ROW_BITS)

#include "../include/constants.p4"
#include "../include/paths.p4"

/* Notice kind of the Tofino program only: the controller confirms a notice's
 * epoch with a notice header sent from the CPU port (the v1model program
 * takes written-back epochs in dst_profile instead, and rejects this kind
 * as BAD_NOTICE). */
const bit<8> NOTICE_WRITEBACK = 6;

/* tag_check's verdicts (0: no tag, or a good one) */
#define TAG_OK 0
#define TAG_BAD 1
#define TAG_WRONG_PORT 2

/* Operations of the register access tables keyed by an op field (0: read). */
#define OP_DOWN 1
#define OP_UP 2

/* Notice state is indexed by spine slot ++ leaf id: MAX_LEAVES is 2^10 here. */
#define LEAF_INDEX_BITS 10
#if MAX_LEAVES != 1024
#error "the Tofino program indexes notice state by a 10-bit leaf id: MAX_LEAVES must be 1024"
#endif

#if MAX_PATHS == 64
#define WORD_BITS 32
#define SGLB_FOR_EACH_WORD(M) M(0, 31, 0) M(1, 63, 32)
#else
#define WORD_BITS MAX_PATHS
#define SGLB_FOR_EACH_WORD(M) M(0, MAX_PATHS - 1, 0)
#endif

typedef bit<WORD_BITS> pword_t;

#define PATH_BIT(I) ((pathmask_t)1 << I)

/* Fed-back freshness: the paths fed back in generation `gen`. */
struct fresh_t {
    pword_t bits;
    pword_t gen;
}

/* A per-destination extreme of fed-back one-way delays, in generation `gen`. */
struct owd_extreme_t {
    bit<32> owd;
    bit<32> gen;
}

#endif
