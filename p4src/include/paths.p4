/* paths.p4: MAX_PATHS, the compile-time number of paths (uplinks) of a leaf,
 * and the macro that expands a per-path step once per path.
 *
 * P4_16 has no loops, so every per-path step of the GLB engine is a macro
 * M(I) over a literal path index I, written once and expanded here for
 * I = 0 .. MAX_PATHS-1. MAX_PATHS is 8 (default), 16 or 64:
 *     p4c-bm2-ss -DMAX_PATHS=16 p4src/sglb.p4
 * Path masks are bit<MAX_PATHS>. PATH_INDEX_BITS = log2(MAX_PATHS) builds the
 * (leaf, path) index of the per-source registers without a multiplication. */

#ifndef SGLB_PATHS_P4
#define SGLB_PATHS_P4

#ifndef MAX_PATHS
#define MAX_PATHS 8
#endif

#define SGLB_PATHS_0_7(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7)
#define SGLB_PATHS_8_15(M) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)
#define SGLB_PATHS_16_31(M) M(16) M(17) M(18) M(19) M(20) M(21) M(22) M(23) \
    M(24) M(25) M(26) M(27) M(28) M(29) M(30) M(31)
#define SGLB_PATHS_32_63(M) M(32) M(33) M(34) M(35) M(36) M(37) M(38) M(39) \
    M(40) M(41) M(42) M(43) M(44) M(45) M(46) M(47) \
    M(48) M(49) M(50) M(51) M(52) M(53) M(54) M(55) \
    M(56) M(57) M(58) M(59) M(60) M(61) M(62) M(63)

#if MAX_PATHS == 8
#define PATH_INDEX_BITS 3
#define SGLB_FOR_EACH_PATH(M) SGLB_PATHS_0_7(M)
#elif MAX_PATHS == 16
#define PATH_INDEX_BITS 4
#define SGLB_FOR_EACH_PATH(M) SGLB_PATHS_0_7(M) SGLB_PATHS_8_15(M)
#elif MAX_PATHS == 64
#define PATH_INDEX_BITS 6
#define SGLB_FOR_EACH_PATH(M) SGLB_PATHS_0_7(M) SGLB_PATHS_8_15(M) SGLB_PATHS_16_31(M) \
    SGLB_PATHS_32_63(M)
#else
#error "MAX_PATHS must be 8, 16 or 64"
#endif

typedef bit<MAX_PATHS> pathmask_t;

#endif
