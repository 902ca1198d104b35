"""The C the generated program links with: bit access, checksums, tables, replication.

`PRELUDE` comes before the generated types, `TABLES` after them; both are plain
C99 plus GCC statement expressions (gcc and clang accept them). Every read of
packet bytes is bounds-checked by the caller (`NEED` in the parser); the
writer drops what does not fit instead of writing past its buffer.
"""

PRELUDE = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t u64;
typedef int64_t i64;
#define MASK(w) ((w) >= 64 ? ~0ULL : ((1ULL << (w)) - 1))
/* value of a w-bit two's complement field as a signed number */
static inline i64 sext(u64 v, unsigned w) {
    if (w >= 64) return (i64)v;
    u64 m = 1ULL << (w - 1);
    return (i64)((v ^ m) - m);
}
static inline u64 shl_w(u64 a, u64 s, unsigned w) { return s >= w ? 0 : (a << s) & MASK(w); }
static inline u64 shr_u(u64 a, u64 s, unsigned w) { return s >= w ? 0 : a >> s; }
static inline u64 shr_s(u64 a, u64 s, unsigned w) {
    i64 v = sext(a, w);
    if (s >= w) s = w - 1;
    return ((u64)(v >> s)) & MASK(w);
}
static inline u64 div_u(u64 a, u64 b) { return b ? a / b : 0; }
static inline u64 mod_u(u64 a, u64 b) { return b ? a % b : 0; }
static inline u64 sat_add_u(u64 a, u64 b, unsigned w) { u64 r = a + b; return (r > MASK(w) || r < a) ? MASK(w) : r; }
static inline u64 sat_sub_u(u64 a, u64 b) { return a > b ? a - b : 0; }
static inline u64 sat_s(__int128 v, unsigned w) {
    __int128 lo = -((__int128)1 << (w - 1)), hi = ((__int128)1 << (w - 1)) - 1;
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    return ((u64)v) & MASK(w);
}

/* values of 65..128 bits: unsigned __int128, with the same operations as above */
typedef unsigned __int128 u128;
typedef __int128 i128;
#define MASK128(w) ((w) >= 128 ? ~(u128)0 : (((u128)1 << (w)) - 1))
#define U128(hi, lo) ((((u128)(hi)) << 64) | (u128)(lo))
static inline i128 sext128(u128 v, unsigned w) {
    if (w >= 128) return (i128)v;
    u128 m = (u128)1 << (w - 1);
    return (i128)((v ^ m) - m);
}
/* a shift amount wider than 64 bits: any value of 2^64 or more shifts everything out */
static inline u64 amt64(u128 s) { return (s >> 64) ? ~0ULL : (u64)s; }
static inline u128 shl_w128(u128 a, u64 s, unsigned w) { return s >= w ? 0 : (a << s) & MASK128(w); }
static inline u128 shr_u128(u128 a, u64 s, unsigned w) { return s >= w ? 0 : a >> s; }
static inline u128 shr_s128(u128 a, u64 s, unsigned w) {
    i128 v = sext128(a, w);
    if (s >= w) s = w - 1;
    return ((u128)(v >> s)) & MASK128(w);
}
static inline u128 div_u128(u128 a, u128 b) { return b ? a / b : 0; }
static inline u128 mod_u128(u128 a, u128 b) { return b ? a % b : 0; }
static inline u128 sat_add_u128(u128 a, u128 b, unsigned w) { u128 r = a + b; return (r > MASK128(w) || r < a) ? MASK128(w) : r; }
static inline u128 sat_sub_u128(u128 a, u128 b) { return a > b ? a - b : 0; }

/* w (<= 64) bits at bit offset pos of d (len bytes), network order; the caller checked
 * that they are inside the buffer. Eight bytes are loaded at once where they all are. */
static inline u64 rd_bits(const uint8_t *d, uint32_t len, uint32_t pos, unsigned w) {
    if (!w) return 0;
    uint32_t start = pos >> 3, sh = pos & 7;
    if ((u64)start + 8 <= len && sh + w <= 64) {
        u64 x;
        memcpy(&x, d + start, 8);
        x = __builtin_bswap64(x);
        return (x << sh) >> (64 - w);
    }
    uint32_t end = (pos + w + 7) >> 3;
    unsigned __int128 acc = 0;
    for (uint32_t i = start; i < end; i++) acc = (acc << 8) | d[i];
    return (u64)(acc >> (end * 8 - (pos + w))) & MASK(w);
}

static inline u128 rd_bits128(const uint8_t *d, uint32_t len, uint32_t pos, unsigned w) {
    if (w <= 64) return rd_bits(d, len, pos, w);
    return U128(rd_bits(d, len, pos, w - 64), rd_bits(d, len, pos + w - 64, 64));
}

/* bit writer: headers the deparser emits, field lists of hashes and checksums */
typedef struct { uint8_t *buf; uint32_t nbits; uint32_t cap; int overflow; } wr_t;
static inline void wr_bits(wr_t *o, u64 v, unsigned w) {
    if (!w) return;
    if ((u64)o->nbits + w > (u64)o->cap * 8) { o->overflow = 1; return; }
    v &= MASK(w);
    if (!(o->nbits & 7) && !(w & 7)) {
        uint32_t at = o->nbits >> 3;
        for (unsigned i = 0; i < w / 8; i++) o->buf[at + i] = (uint8_t)(v >> (w - 8 - 8 * i));
        o->nbits += w;
        return;
    }
    while (w) {  /* as many bits as the current byte has room for, at a time */
        unsigned used = o->nbits & 7, room = 8 - used, take = w < room ? w : room;
        uint32_t at = o->nbits >> 3;
        unsigned bits = (unsigned)(v >> (w - take)) & ((1u << take) - 1);
        if (!used) o->buf[at] = 0;
        o->buf[at] |= (uint8_t)(bits << (room - take));
        o->nbits += take;
        w -= take;
    }
}
static inline void wr_bits128(wr_t *o, u128 v, unsigned w) {
    if (w > 64) { wr_bits(o, (u64)(v >> 64), w - 64); wr_bits(o, (u64)v, 64); }
    else wr_bits(o, (u64)v, w);
}
static inline uint32_t wr_bytes(wr_t *o) { return (o->nbits + 7) >> 3; }

/* ---- hash and checksum algorithms (BMv2's, softswitch/engine/hashes.py) ---- */
static uint16_t crc16_tab[256];
static uint32_t crc32_tab[256];
static uint16_t ccitt_tab[256];
static void crc_init(void) {
    for (unsigned b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0xA001 : c >> 1;
        crc16_tab[b] = (uint16_t)c;
        c = b;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
        crc32_tab[b] = c;
        c = b << 8;
        for (int k = 0; k < 8; k++) c = (c & 0x8000) ? ((c << 1) ^ 0x1021) : c << 1;
        ccitt_tab[b] = (uint16_t)c;
    }
}
static u64 alg_crc16(const uint8_t *d, uint32_t n) {
    uint32_t c = 0;
    for (uint32_t i = 0; i < n; i++) c = crc16_tab[(c ^ d[i]) & 0xFF] ^ (c >> 8);
    return c & 0xFFFF;
}
static u64 alg_crc32(const uint8_t *d, uint32_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (uint32_t i = 0; i < n; i++) c = crc32_tab[(c ^ d[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}
static u64 alg_crcCCITT(const uint8_t *d, uint32_t n) {
    uint32_t c = 0xFFFF;
    for (uint32_t i = 0; i < n; i++) c = (ccitt_tab[((c >> 8) ^ d[i]) & 0xFF] ^ (c << 8)) & 0xFFFF;
    return c;
}
static u64 alg_csum16(const uint8_t *d, uint32_t n) {
    u64 s = 0;
    for (uint32_t i = 0; i + 1 < n; i += 2) s += ((u64)d[i] << 8) | d[i + 1];
    if (n & 1) s += (u64)d[n - 1] << 8;
    while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
    return (~s) & 0xFFFF;
}
static u64 alg_xor16(const uint8_t *d, uint32_t n) {
    u64 s = 0;
    for (uint32_t i = 0; i + 1 < n; i += 2) s ^= ((u64)d[i] << 8) | d[i + 1];
    if (n & 1) s ^= (u64)d[n - 1] << 8;
    return s;
}
/* crc16_custom / crc32_custom: a CRC of any width in 8..64 bits in the Rocksoft model, as
 * hashes.Crc; each switch holds its own parameters (the control plane can change them) */
typedef struct { unsigned width; int refin, refout; u64 poly, init, xor_out, mask, start, tab[256]; } crcp_t;
static u64 crc_reflect(u64 v, unsigned w) {
    u64 out = 0;
    for (unsigned i = 0; i < w; i++) { out = (out << 1) | (v & 1); v >>= 1; }
    return out;
}
static void crcp_set(crcp_t *c, unsigned w, u64 poly, u64 init, u64 xor_out, int refin, int refout) {
    c->width = w; c->poly = poly; c->init = init; c->xor_out = xor_out;
    c->refin = refin; c->refout = refout; c->mask = MASK(w);
    c->start = refin ? crc_reflect(init, w) : init;
    u64 rpoly = crc_reflect(poly, w), top = 1ULL << (w - 1);
    for (unsigned b = 0; b < 256; b++) {
        u64 x;
        if (refin) {
            x = b;
            for (int k = 0; k < 8; k++) x = (x & 1) ? (x >> 1) ^ rpoly : x >> 1;
        } else {
            x = (u64)b << (w - 8);
            for (int k = 0; k < 8; k++) x = (x & top) ? (x << 1) ^ poly : x << 1;
            x &= c->mask;
        }
        c->tab[b] = x;
    }
}
static u64 crc_custom(const crcp_t *c, const uint8_t *d, uint32_t n) {
    u64 x = c->start;
    if (c->refin) {
        for (uint32_t i = 0; i < n; i++) x = c->tab[(x ^ d[i]) & 0xFF] ^ (x >> 8);
        if (!c->refout) x = crc_reflect(x, c->width);
    } else {
        unsigned sh = c->width - 8;
        for (uint32_t i = 0; i < n; i++) x = c->tab[((x >> sh) ^ d[i]) & 0xFF] ^ ((x << 8) & c->mask);
        if (c->refout) x = crc_reflect(x, c->width);
    }
    return (x ^ c->xor_out) & c->mask;
}
static u64 alg_identity(const uint8_t *d, uint32_t n) {
    u64 s = 0;
    for (uint32_t i = 0; i < n && i < 8; i++) s = (s << 8) | d[i];
    return s;
}
"""

TABLES = r"""
/* a parser value set: n members of nk words (a masked member: one word under its mask),
 * as runtime.ValueSet.match */
typedef struct { uint32_t n; u64 *v, *m; uint8_t *hm; } vs_t;
static int vs_match(const vs_t *s, const u64 *k, uint32_t nk) {
    for (uint32_t i = 0; i < s->n; i++) {
        const u64 *v = s->v + (size_t)i * nk;
        if (s->hm[i]) {
            if (nk == 1 && (k[0] & s->m[i]) == (v[0] & s->m[i])) return 1;
            continue;
        }
        uint32_t j = 0;
        while (j < nk && k[j] == v[j]) j++;
        if (j == nk) return 1;
    }
    return 0;
}
/* a two-rate three-colour marker (RFC 2698, colour-blind) as externs.py's MeterCell, in the
 * same double arithmetic, so that both engines colour alike */
typedef struct { int configured, has_last; u64 cir, cburst, pir, pburst, last_us; double tc, tp; } meter_t;
static u64 meter_exec(meter_t *m, u64 amount, u64 now) {
    if (!m->configured) return 0;
    if (m->has_last && now > m->last_us) {
        double dt = (double)(now - m->last_us) / 1e6;
        double tc = m->tc + (double)m->cir * dt, tp = m->tp + (double)m->pir * dt;
        m->tc = tc < (double)m->cburst ? tc : (double)m->cburst;
        m->tp = tp < (double)m->pburst ? tp : (double)m->pburst;
    }
    m->last_us = now; m->has_last = 1;
    if (m->tp < (double)amount) return 2;
    if (m->tc < (double)amount) { m->tp -= (double)amount; return 1; }
    m->tp -= (double)amount; m->tc -= (double)amount;
    return 0;
}

/* ---- match-action tables: entries written by the control plane (engine.py) ----
 * Every entry has per key field a test (kind 0: (v & a) == b; kind 1: a <= v <= b).
 * Hashed tables (exact, lpm) group entries by their mask vector, groups tried in
 * order (longest prefix first); a group is an open-addressing hash of entry indexes.
 * Linear tables (ternary, range, optional) scan entries in priority order. */
typedef struct { u64 *mask; uint32_t cap; int32_t *slot; } grp_t;
typedef struct {
    uint32_t nk, nargs, n, linear, ngroups;
    u64 *a, *b; uint8_t *kind; uint32_t *action; u64 *args;
    grp_t *groups;
    uint32_t def_action; u64 *def_args;
    int has_dc, has_dm;          /* direct counter / meter: one cell per entry */
    u64 *dc_p, *dc_b; meter_t *dm;
    /* action selectors: an entry's action 0x80000000 | g names group g */
    uint32_t ngrp; uint32_t *grp_off, *grp_len; uint32_t *mem_action; u64 *mem_args;
} tbl_t;

static inline u64 key_hash(const u64 *k, uint32_t nk) {
    u64 h = 0x9E3779B97F4A7C15ULL;
    for (uint32_t i = 0; i < nk; i++) { h ^= k[i]; h *= 0xBF58476D1CE4E5B9ULL; h ^= h >> 31; }
    return h;
}

static void tbl_free(tbl_t *t) {
    for (uint32_t g = 0; g < t->ngroups; g++) { free(t->groups[g].mask); free(t->groups[g].slot); }
    free(t->groups); free(t->a); free(t->b); free(t->kind); free(t->action); free(t->args);
    free(t->dc_p); free(t->dc_b); free(t->dm);
    free(t->grp_off); free(t->grp_len); free(t->mem_action); free(t->mem_args);
    t->grp_off = t->grp_len = t->mem_action = NULL; t->mem_args = NULL; t->ngrp = 0;
    t->groups = NULL; t->a = t->b = NULL; t->kind = NULL; t->action = NULL; t->args = NULL;
    t->dc_p = t->dc_b = NULL; t->dm = NULL;
    t->n = t->ngroups = 0;
}

/* memcpy of n bytes; nothing when n is 0 (the source may then be NULL: memcpy forbids it) */
static inline void copy_n(void *dst, const void *src, size_t n) {
    if (n) memcpy(dst, src, n);
}

/* order: for hashed tables, the group order is the order masks first appear in */
static int tbl_load(tbl_t *t, uint32_t linear, uint32_t n, const u64 *a, const u64 *b,
                    const uint8_t *kind, const uint32_t *action, const u64 *args,
                    uint32_t def_action, const u64 *def_args) {
    uint32_t nk = t->nk, na = t->nargs;
    tbl_free(t);
    memcpy(t->def_args, def_args, sizeof(u64) * (na ? na : 1));
    t->def_action = def_action;
    t->linear = linear;
    if (!n) return 0;
    size_t kn = (size_t)n * (nk ? nk : 1);
    t->a = malloc(sizeof(u64) * kn); t->b = malloc(sizeof(u64) * kn);
    t->kind = malloc(kn); t->action = malloc(sizeof(uint32_t) * n);
    t->args = malloc(sizeof(u64) * (size_t)n * (na ? na : 1));
    if (!t->a || !t->b || !t->kind || !t->action || !t->args) { tbl_free(t); return -1; }
    copy_n(t->a, a, sizeof(u64) * (size_t)n * nk); copy_n(t->b, b, sizeof(u64) * (size_t)n * nk);
    copy_n(t->kind, kind, (size_t)n * nk); copy_n(t->action, action, sizeof(uint32_t) * n);
    copy_n(t->args, args, sizeof(u64) * (size_t)n * na);
    if (t->has_dc) {
        t->dc_p = calloc(n, sizeof(u64)); t->dc_b = calloc(n, sizeof(u64));
        if (!t->dc_p || !t->dc_b) { tbl_free(t); return -1; }
    }
    if (t->has_dm) {
        t->dm = calloc(n, sizeof(meter_t));
        if (!t->dm) { tbl_free(t); return -1; }
    }
    t->n = n;
    if (linear) return 0;
    t->groups = calloc(n, sizeof(grp_t));
    if (!t->groups) { tbl_free(t); return -1; }
    uint32_t *count = calloc(n, sizeof(uint32_t)), *gof = malloc(sizeof(uint32_t) * n);
    if (!count || !gof) { free(count); free(gof); tbl_free(t); return -1; }
    for (uint32_t e = 0; e < n; e++) {
        uint32_t g;
        for (g = 0; g < t->ngroups; g++)
            if (!memcmp(t->groups[g].mask, t->a + (size_t)e * nk, sizeof(u64) * nk)) break;
        if (g == t->ngroups) {
            t->groups[g].mask = malloc(sizeof(u64) * (nk ? nk : 1));
            if (!t->groups[g].mask) { free(count); free(gof); tbl_free(t); return -1; }
            memcpy(t->groups[g].mask, t->a + (size_t)e * nk, sizeof(u64) * nk);
            t->ngroups++;
        }
        gof[e] = g; count[g]++;
    }
    for (uint32_t g = 0; g < t->ngroups; g++) {
        uint32_t cap = 8;
        while (cap < 2 * count[g]) cap <<= 1;
        t->groups[g].cap = cap;
        t->groups[g].slot = malloc(sizeof(int32_t) * cap);
        if (!t->groups[g].slot) { free(count); free(gof); tbl_free(t); return -1; }
        for (uint32_t i = 0; i < cap; i++) t->groups[g].slot[i] = -1;
    }
    for (uint32_t e = 0; e < n; e++) {
        grp_t *G = &t->groups[gof[e]];
        uint32_t i = (uint32_t)key_hash(t->b + (size_t)e * nk, nk) & (G->cap - 1);
        while (G->slot[i] >= 0) i = (i + 1) & (G->cap - 1);
        G->slot[i] = (int32_t)e;
    }
    free(count); free(gof);
    return 0;
}

static int tbl_groups(tbl_t *t, uint32_t ngrp, const uint32_t *grp_len, uint32_t nmem,
                      const uint32_t *mem_action, const u64 *mem_args) {
    uint32_t na = t->nargs;
    free(t->grp_off); free(t->grp_len); free(t->mem_action); free(t->mem_args);
    t->grp_off = calloc(ngrp ? ngrp : 1, sizeof(uint32_t));
    t->grp_len = calloc(ngrp ? ngrp : 1, sizeof(uint32_t));
    t->mem_action = calloc(nmem ? nmem : 1, sizeof(uint32_t));
    t->mem_args = calloc((size_t)(nmem ? nmem : 1) * (na ? na : 1), sizeof(u64));
    t->ngrp = 0;
    if (!t->grp_off || !t->grp_len || !t->mem_action || !t->mem_args) return -1;
    uint32_t off = 0;
    for (uint32_t g = 0; g < ngrp; g++) {
        if (grp_len[g] > nmem - off) return -1;
        t->grp_off[g] = off; t->grp_len[g] = grp_len[g]; off += grp_len[g];
    }
    copy_n(t->mem_action, mem_action, sizeof(uint32_t) * nmem);
    copy_n(t->mem_args, mem_args, sizeof(u64) * (size_t)nmem * na);
    t->ngrp = ngrp;
    return 0;
}

static inline int32_t tbl_lookup(const tbl_t *t, const u64 *k) {
    uint32_t nk = t->nk;
    if (t->linear) {
        for (uint32_t e = 0; e < t->n; e++) {
            const u64 *a = t->a + (size_t)e * nk, *b = t->b + (size_t)e * nk;
            const uint8_t *kd = t->kind + (size_t)e * nk;
            uint32_t i;
            for (i = 0; i < nk; i++) {
                if (kd[i] == 0) { if ((k[i] & a[i]) != b[i]) break; }
                else if (k[i] < a[i] || k[i] > b[i]) break;
            }
            if (i == nk) return (int32_t)e;
        }
        return -1;
    }
    u64 m[16];
    for (uint32_t g = 0; g < t->ngroups; g++) {
        const grp_t *G = &t->groups[g];
        for (uint32_t i = 0; i < nk; i++) m[i] = k[i] & G->mask[i];
        uint32_t i = (uint32_t)key_hash(m, nk) & (G->cap - 1);
        for (;;) {
            int32_t e = G->slot[i];
            if (e < 0) break;
            if (!memcmp(t->b + (size_t)e * nk, m, sizeof(u64) * nk)) return e;
            i = (i + 1) & (G->cap - 1);
        }
    }
    return -1;
}

/* one packet the switch sends: port and bytes at off in the caller's buffer */
typedef struct { uint32_t port; uint32_t off; uint32_t len; } ss_out_t;

/* multicast groups: replicas (port, rid) */
typedef struct { uint32_t gid, n; uint16_t *port; uint16_t *rid; } mc_t;
/* clone sessions: replicas and the truncation of their clones */
typedef struct { u64 id; uint32_t n; uint16_t *port; uint16_t *rid; u64 trunc; } sess_t;
"""
