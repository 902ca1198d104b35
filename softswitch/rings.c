/* Switch ports on TPACKET_V3 mmap rings (softswitch/rings.py drives this file).
 *
 * Per port one AF_PACKET socket holds an RX ring of blocks (the kernel fills a block with
 * frames and hands it over when it is full or its timeout expires) and a TX ring of fixed
 * frames (filled here, sent by one sendto per batch); a second socket bound with protocol
 * 0 (it receives nothing) sends the frames that do not fit a TX frame. rio_forward runs
 * the frames of ready blocks through a native engine's ss_process, given as a function
 * pointer, and queues its outputs on the TX rings without returning to Python; packets to
 * the CPU port and digests are collected for Python. rio_rx copies frames out instead, for
 * the Python engine. TPACKET_V2 (RX frames of one size, each handed over at once) is the
 * choice without the block timeout's latency.
 *
 * Every offset and length in a block comes from shared memory: each is checked against
 * the block before use, so no read leaves the block whatever the descriptors say.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <sys/mman.h>
#include <sys/socket.h>

#define RIO_PORTS 512               /* port numbers are 9 bits */
#define V3_OFF TPACKET_ALIGN(sizeof(struct tpacket3_hdr))  /* frame data (TX), sockaddr_ll (RX) */
#define V2_OFF TPACKET_ALIGN(sizeof(struct tpacket2_hdr))
#define ETH_MIN 14                  /* the kernel refuses shorter frames (EINVAL) */

enum { C_RX_PACKETS, C_RX_BYTES, C_TX_PACKETS, C_TX_BYTES, C_TX_DROPS, C_RX_TRUNCATED,
       C_RX_MALFORMED, C_TX_OVERSIZE, C_NCOUNT };

typedef struct { uint32_t port; uint32_t off; uint32_t len; } rio_out_t;
typedef int (*process_fn)(void *sw, uint32_t port, const uint8_t *data, uint32_t len, uint64_t now,
                          rio_out_t *outs, uint32_t max_outs, uint8_t *buf, uint32_t cap,
                          uint32_t *dropped, uint32_t *dg_type, uint64_t *dg_vals, uint32_t max_dg,
                          uint32_t *ndg);

typedef struct {
    uint32_t number, version;
    int fd, txfd;
    uint8_t *map; size_t map_len;
    uint32_t block_size, block_nr, rx_cur;
    int in_block; uint32_t pkt_i, pkt_n, pkt_off;   /* V3: position inside the current RX block */
    uint32_t rx_frame, rx_nr;                        /* V2: RX frames */
    uint8_t *tx; uint32_t tx_frame, tx_nr, tx_cur, tx_pending;
    pthread_mutex_t txlock;
    uint64_t c[C_NCOUNT];
} rport_t;

typedef struct rio {
    uint32_t nports, cpu_port;
    rport_t *ports;
    int16_t by_number[RIO_PORTS];
    uint8_t *scratch; uint64_t scap;
    rio_out_t *outs; uint32_t max_outs;
    uint64_t st_in[RIO_PORTS], st_out[RIO_PORTS], st_drop[RIO_PORTS];
} rio_t;

/* What one rio_forward call hands back to Python (rings.py reads it). */
typedef struct {
    uint32_t packets;            /* frames run through the engine */
    uint32_t npin;               /* packet-ins in pin (offsets and lengths in pin_off/pin_len) */
    uint32_t pin_lost;           /* packet-ins that did not fit the buffer */
    uint32_t ndg;                /* digests written to dg_type / dg_vals */
    uint32_t nstat;              /* ports with packets in, out or dropped this call */
    uint32_t stat_port[RIO_PORTS];
    uint32_t stat_in[RIO_PORTS], stat_out[RIO_PORTS], stat_drop[RIO_PORTS];
} rio_result_t;

/* The engine and its buffers for one rio_forward call. */
typedef struct {
    uintptr_t fn, sw;
    uint64_t now;                /* the switch's clock at the call (microseconds) */
    int64_t mono_base_ns;        /* >= 0: now = (CLOCK_MONOTONIC - base) / 1000 per packet */
    uint32_t mc_max, emit_max, passes;
    uintptr_t dg_type, dg_vals;  /* uint32_t[max_dg], uint64_t[max_dg * dg_width] */
    uint32_t max_dg, dg_width, dg_per_packet;
    uintptr_t pin;               /* uint8_t[pin_cap] */
    uint32_t pin_cap, max_pin;
    uintptr_t pin_off, pin_len;  /* uint32_t[max_pin] each */
} rio_engine_t;

static void set_err(char *err, uint32_t errlen, const char *what, int e) {
    if (err && errlen) snprintf(err, errlen, "%s: %s", what, strerror(e));
}

rio_t *rio_new(uint32_t nports, uint32_t cpu_port) {
    if (nports == 0 || nports > RIO_PORTS) return NULL;
    rio_t *r = calloc(1, sizeof(rio_t));
    if (!r) return NULL;
    r->ports = calloc(nports, sizeof(rport_t));
    if (!r->ports) { free(r); return NULL; }
    r->nports = nports;
    r->cpu_port = cpu_port;
    for (uint32_t i = 0; i < RIO_PORTS; i++) r->by_number[i] = -1;
    for (uint32_t i = 0; i < nports; i++) {
        r->ports[i].fd = r->ports[i].txfd = -1;
        pthread_mutex_init(&r->ports[i].txlock, NULL);
    }
    return r;
}

void rio_free(rio_t *r) {
    if (!r) return;
    for (uint32_t i = 0; i < r->nports; i++) {
        rport_t *p = &r->ports[i];
        if (p->map) munmap(p->map, p->map_len);
        if (p->fd >= 0) close(p->fd);
        if (p->txfd >= 0) close(p->txfd);
        pthread_mutex_destroy(&p->txlock);
    }
    free(r->ports); free(r->scratch); free(r->outs); free(r);
}

/* Frame i of a ring whose frames never straddle a block. */
static inline uint8_t *ring_frame(uint8_t *base, uint32_t block_size, uint32_t frame, uint32_t i) {
    uint32_t per = block_size / frame;
    return base + (size_t)(i / per) * block_size + (size_t)(i % per) * frame;
}

/* Open port slot idx on interface ifindex with TPACKET_V3 (RX blocks) or TPACKET_V2 (RX
 * frames of tx_frame bytes: no block timeout, a frame is seen at once): 0, or -1 with the
 * reason in err. */
int rio_port_open(rio_t *r, uint32_t idx, uint32_t number, int ifindex, uint32_t version,
                  uint32_t block_size, uint32_t block_nr, uint32_t tx_frame, uint32_t tx_nr,
                  uint32_t tov_ms, char *err, uint32_t errlen) {
    if (idx >= r->nports || number >= RIO_PORTS || r->by_number[number] >= 0 ||
        (version != 2 && version != 3)) {
        if (err && errlen) snprintf(err, errlen, "bad port slot %u / number %u / version %u", idx,
                                    number, version);
        return -1;
    }
    if (tx_frame < V3_OFF + sizeof(struct sockaddr_ll) + ETH_MIN || block_size < tx_frame) {
        if (err && errlen) snprintf(err, errlen, "frames of %u bytes in blocks of %u cannot hold a frame",
                                    tx_frame, block_size);
        return -1;
    }
    rport_t *p = &r->ports[idx];
    p->number = number;
    p->version = version;
    /* protocol 0: nothing is captured until bind, after the rings exist */
    p->fd = socket(AF_PACKET, SOCK_RAW, 0);
    if (p->fd < 0) { set_err(err, errlen, "socket(AF_PACKET)", errno); return -1; }
    int v = version == 3 ? TPACKET_V3 : TPACKET_V2;
    if (setsockopt(p->fd, SOL_PACKET, PACKET_VERSION, &v, sizeof v) < 0) {
        set_err(err, errlen, version == 3 ? "PACKET_VERSION TPACKET_V3" : "PACKET_VERSION TPACKET_V2", errno);
        return -1;
    }
    v = 1;
    setsockopt(p->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &v, sizeof v);  /* 4.20+; pkttype below */
    setsockopt(p->fd, SOL_PACKET, PACKET_LOSS, &v, sizeof v);  /* a bad TX frame is skipped */
    struct tpacket_req3 rx = {0};
    rx.tp_block_size = block_size; rx.tp_block_nr = block_nr;
    /* V3 fills blocks with frames of any size; the frame size only has to divide the block */
    rx.tp_frame_size = version == 3 ? TPACKET_ALIGNMENT << 7 : tx_frame;
    rx.tp_frame_nr = (block_size / rx.tp_frame_size) * block_nr;
    if (version == 3) rx.tp_retire_blk_tov = tov_ms;
    if (setsockopt(p->fd, SOL_PACKET, PACKET_RX_RING, &rx, sizeof rx) < 0) {
        set_err(err, errlen, "PACKET_RX_RING", errno); return -1;
    }
    struct tpacket_req3 tx = {0};
    tx.tp_frame_size = tx_frame; tx.tp_frame_nr = tx_nr;
    tx.tp_block_size = block_size;
    uint32_t per = block_size / tx_frame;
    tx.tp_block_nr = (tx_nr + per - 1) / per;
    tx.tp_frame_nr = tx.tp_block_nr * per;
    if (setsockopt(p->fd, SOL_PACKET, PACKET_TX_RING, &tx, sizeof tx) < 0) {
        set_err(err, errlen, "PACKET_TX_RING", errno); return -1;
    }
    size_t rx_len = (size_t)block_size * block_nr, tx_len = (size_t)tx.tp_block_size * tx.tp_block_nr;
    void *m = mmap(NULL, rx_len + tx_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, p->fd, 0);
    if (m == MAP_FAILED) { set_err(err, errlen, "mmap of the rings", errno); return -1; }
    p->map = m; p->map_len = rx_len + tx_len;
    p->block_size = block_size; p->block_nr = block_nr;
    p->rx_frame = rx.tp_frame_size; p->rx_nr = rx.tp_frame_nr;
    p->tx = p->map + rx_len; p->tx_frame = tx_frame; p->tx_nr = tx.tp_frame_nr;
    struct sockaddr_ll ll = {0};
    ll.sll_family = AF_PACKET; ll.sll_protocol = htons(ETH_P_ALL); ll.sll_ifindex = ifindex;
    if (bind(p->fd, (struct sockaddr *)&ll, sizeof ll) < 0) { set_err(err, errlen, "bind", errno); return -1; }
    p->txfd = socket(AF_PACKET, SOCK_RAW, 0);
    if (p->txfd < 0) { set_err(err, errlen, "socket(AF_PACKET) for large frames", errno); return -1; }
    ll.sll_protocol = 0;
    if (bind(p->txfd, (struct sockaddr *)&ll, sizeof ll) < 0) {
        set_err(err, errlen, "bind of the large-frame socket", errno); return -1;
    }
    r->by_number[number] = (int16_t)idx;
    return 0;
}

/* Frames the kernel dropped on a port since the last call (PACKET_STATISTICS resets). */
int64_t rio_kernel_drops(rio_t *r, uint32_t idx) {
    if (idx >= r->nports || r->ports[idx].fd < 0) return -1;
    struct tpacket_stats_v3 st;
    socklen_t len = sizeof st;
    if (getsockopt(r->ports[idx].fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) < 0) return -1;
    return st.tp_drops;
}

void rio_counters(rio_t *r, uint32_t idx, uint64_t *out) {
    if (idx >= r->nports) return;
    for (int i = 0; i < C_NCOUNT; i++) out[i] = __atomic_load_n(&r->ports[idx].c[i], __ATOMIC_RELAXED);
}

static inline void bump(uint64_t *c, uint64_t by) { __atomic_fetch_add(c, by, __ATOMIC_RELAXED); }

/* ---------------------------------------------------------------- TX */

static inline uint8_t *tx_frame_at(const rport_t *p, uint32_t i) {
    return ring_frame(p->tx, p->block_size, p->tx_frame, i);
}
static inline uint32_t *tx_status(const rport_t *p, uint8_t *f) {
    return p->version == 3 ? &((struct tpacket3_hdr *)f)->tp_status : &((struct tpacket2_hdr *)f)->tp_status;
}
static inline uint32_t tx_len_of(const rport_t *p, uint8_t *f) {
    return p->version == 3 ? ((struct tpacket3_hdr *)f)->tp_len : ((struct tpacket2_hdr *)f)->tp_len;
}
static inline uint32_t tx_data_off(const rport_t *p) { return p->version == 3 ? V3_OFF : V2_OFF; }

/* Frames queued but refused by a down interface go back to the ring as drops; our cursor
 * moves back to the oldest of them, where the kernel's own cursor stands. */
static void tx_reclaim(rport_t *p) {
    for (uint32_t k = 0; k < p->tx_nr; k++) {
        uint32_t i = (p->tx_cur + p->tx_nr - 1) % p->tx_nr;
        uint8_t *f = tx_frame_at(p, i);
        if (__atomic_load_n(tx_status(p, f), __ATOMIC_ACQUIRE) != TP_STATUS_SEND_REQUEST) break;
        uint32_t len = tx_len_of(p, f);
        __atomic_store_n(tx_status(p, f), TP_STATUS_AVAILABLE, __ATOMIC_RELEASE);
        p->tx_cur = i;
        bump(&p->c[C_TX_DROPS], 1);
        __atomic_fetch_sub(&p->c[C_TX_PACKETS], 1, __ATOMIC_RELAXED);
        __atomic_fetch_sub(&p->c[C_TX_BYTES], len, __ATOMIC_RELAXED);
    }
}

/* A socket error the kernel left (ENETDOWN once the interface went down) fails the next
 * send whatever the interface's state is now: read it, so that it is reported once. */
static int clear_error(int fd) {
    int e = 0;
    socklen_t l = sizeof e;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l);
    return e;
}

static void tx_flush_locked(rport_t *p) {
    if (!p->tx_pending) return;
    p->tx_pending = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (sendto(p->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0 ||
            errno == EAGAIN || errno == ENOBUFS || errno == EINTR)
            return;  /* what the kernel did not take yet goes with the next flush */
        if (errno != ENETDOWN) break;
        clear_error(p->fd);  /* stale (a past down) or current: one more try tells */
    }
    tx_reclaim(p);  /* down or gone: as a failed send() on a socket, a drop */
}

static void tx_queue_locked(rport_t *p, const uint8_t *data, uint32_t len) {
    if (len < ETH_MIN) { bump(&p->c[C_TX_DROPS], 1); return; }
    if (len > p->tx_frame - tx_data_off(p)) {  /* larger than a ring frame: one send(), in order */
        tx_flush_locked(p);
        if (send(p->txfd, data, len, MSG_DONTWAIT) == (ssize_t)len) {
            bump(&p->c[C_TX_PACKETS], 1); bump(&p->c[C_TX_BYTES], len); bump(&p->c[C_TX_OVERSIZE], 1);
        } else {
            bump(&p->c[C_TX_DROPS], 1);
        }
        return;
    }
    uint8_t *f = tx_frame_at(p, p->tx_cur);
    if (__atomic_load_n(tx_status(p, f), __ATOMIC_ACQUIRE) != TP_STATUS_AVAILABLE) {
        tx_flush_locked(p);  /* the ring is full: hand the kernel what waits, then look again */
        f = tx_frame_at(p, p->tx_cur);
        if (__atomic_load_n(tx_status(p, f), __ATOMIC_ACQUIRE) != TP_STATUS_AVAILABLE) {
            bump(&p->c[C_TX_DROPS], 1);
            return;
        }
    }
    memcpy(f + tx_data_off(p), data, len);
    if (p->version == 3) {
        struct tpacket3_hdr *h = (void *)f;
        h->tp_len = len; h->tp_snaplen = len; h->tp_next_offset = 0;
    } else {
        struct tpacket2_hdr *h = (void *)f;
        h->tp_len = len; h->tp_snaplen = len;
    }
    __atomic_store_n(tx_status(p, f), TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
    p->tx_cur = (p->tx_cur + 1) % p->tx_nr;
    bump(&p->c[C_TX_PACKETS], 1); bump(&p->c[C_TX_BYTES], len);
    if (++p->tx_pending >= p->tx_nr / 2) tx_flush_locked(p);
}

/* Send one frame on port `number` now (Python's transmit): 0 sent or queued, -1 no such port. */
int rio_send(rio_t *r, uint32_t number, const uint8_t *data, uint32_t len) {
    if (number >= RIO_PORTS || r->by_number[number] < 0) return -1;
    rport_t *p = &r->ports[r->by_number[number]];
    pthread_mutex_lock(&p->txlock);
    tx_queue_locked(p, data, len);
    tx_flush_locked(p);
    pthread_mutex_unlock(&p->txlock);
    return 0;
}

static void tx_flush_all(rio_t *r) {
    for (uint32_t i = 0; i < r->nports; i++) {
        rport_t *p = &r->ports[i];
        if (!p->tx_pending) continue;
        pthread_mutex_lock(&p->txlock);
        tx_flush_locked(p);
        pthread_mutex_unlock(&p->txlock);
    }
}

/* ---------------------------------------------------------------- RX */

static void rx_release(rport_t *p) {
    struct tpacket_block_desc *bd = (void *)(p->map + (size_t)p->rx_cur * p->block_size);
    __atomic_store_n(&bd->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
    p->rx_cur = (p->rx_cur + 1) % p->block_nr;
    p->in_block = 0;
}

/* TPACKET_V2: the next frame (held until rx_done). */
static int rx_next_v2(rport_t *p, const uint8_t **data, uint32_t *len) {
    const uint32_t fs = p->rx_frame;
    for (uint32_t guard = 0; guard < p->rx_nr; guard++) {
        uint8_t *f = ring_frame(p->map, p->block_size, fs, p->rx_cur);
        struct tpacket2_hdr *h = (void *)f;
        if (!(__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)) return 0;
        p->in_block = 1;
        uint32_t mac = h->tp_mac, snap = h->tp_snaplen, wire = h->tp_len;
        const struct sockaddr_ll *ll = (const void *)(f + V2_OFF);  /* inside: checked at open */
        int ok = 0;
        if (mac < sizeof(struct tpacket2_hdr) || mac > fs || snap > fs - mac) bump(&p->c[C_RX_MALFORMED], 1);
        else if (ll->sll_pkttype == PACKET_OUTGOING) ;  /* kernels without PACKET_IGNORE_OUTGOING */
        else if (snap < wire) bump(&p->c[C_RX_TRUNCATED], 1);  /* larger than a frame */
        else ok = 1;
        if (ok) {
            bump(&p->c[C_RX_PACKETS], 1); bump(&p->c[C_RX_BYTES], snap);
            *data = f + mac;
            *len = snap;
            return 1;
        }
        __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
        p->rx_cur = (p->rx_cur + 1) % p->rx_nr;
        p->in_block = 0;
    }
    return 0;
}

/* TPACKET_V3: the next frame of the current block (the block is held until its last frame
 * is done). Truncated captures and malformed descriptors are counted and skipped; a
 * descriptor that points outside its block ends the block. */
static int rx_next_v3(rport_t *p, const uint8_t **data, uint32_t *len) {
    const uint32_t bs = p->block_size;
    for (uint32_t guard = 0; guard <= p->block_nr; ) {
        uint8_t *blk = p->map + (size_t)p->rx_cur * bs;
        struct tpacket_block_desc *bd = (void *)blk;
        if (!p->in_block) {
            if (!(__atomic_load_n(&bd->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER))
                return 0;
            p->in_block = 1;
            p->pkt_i = 0;
            p->pkt_n = bd->hdr.bh1.num_pkts;
            p->pkt_off = bd->hdr.bh1.offset_to_first_pkt;
        }
        if (p->pkt_i >= p->pkt_n) { rx_release(p); guard++; continue; }
        uint32_t off = p->pkt_off;
        if (off < sizeof(struct tpacket_block_desc) || off > bs || bs - off < V3_OFF + sizeof(struct sockaddr_ll)) {
            bump(&p->c[C_RX_MALFORMED], 1); p->pkt_i = p->pkt_n; continue;
        }
        struct tpacket3_hdr *h = (void *)(blk + off);
        uint32_t mac = h->tp_mac, snap = h->tp_snaplen, wire = h->tp_len, next = h->tp_next_offset;
        const struct sockaddr_ll *ll = (const void *)(blk + off + V3_OFF);
        unsigned char pkttype = ll->sll_pkttype;
        p->pkt_i++;
        if (p->pkt_i < p->pkt_n) {
            if (next == 0 || next > bs - off) { bump(&p->c[C_RX_MALFORMED], 1); p->pkt_i = p->pkt_n; }
            else p->pkt_off = off + next;
        }
        if (mac < sizeof(struct tpacket3_hdr) || mac > bs - off || snap > bs - off - mac) {
            bump(&p->c[C_RX_MALFORMED], 1); continue;
        }
        if (pkttype == PACKET_OUTGOING) continue;  /* kernels without PACKET_IGNORE_OUTGOING */
        if (snap < wire) { bump(&p->c[C_RX_TRUNCATED], 1); continue; }  /* larger than a block */
        bump(&p->c[C_RX_PACKETS], 1); bump(&p->c[C_RX_BYTES], snap);
        *data = blk + off + mac;
        *len = snap;
        return 1;
    }
    return 0;
}

/* The next frame of a port's RX ring: 1 with *data and *len set (valid until rx_done), 0
 * when none is ready. */
static int rx_next(rport_t *p, const uint8_t **data, uint32_t *len) {
    return p->version == 3 ? rx_next_v3(p, data, len) : rx_next_v2(p, data, len);
}

/* The frame rx_next gave is done with: its slot (V2) or its finished block (V3) goes back to
 * the kernel now, so that poll() waits for the next one. */
static void rx_done(rport_t *p) {
    if (!p->in_block) return;
    if (p->version == 3) {
        if (p->pkt_i >= p->pkt_n) rx_release(p);
        return;
    }
    struct tpacket2_hdr *h = (void *)ring_frame(p->map, p->block_size, p->rx_frame, p->rx_cur);
    __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
    p->rx_cur = (p->rx_cur + 1) % p->rx_nr;
    p->in_block = 0;
}

/* Copy up to max frames (round robin over the ports) into buf for the Python engine. */
uint32_t rio_rx(rio_t *r, uint8_t *buf, uint32_t cap, uint32_t *ports, uint32_t *offs,
                uint32_t *lens, uint32_t max) {
    uint32_t n = 0, used = 0;
    for (int more = 1; more && n < max; ) {
        more = 0;
        for (uint32_t i = 0; i < r->nports && n < max; i++) {
            rport_t *p = &r->ports[i];
            const uint8_t *d; uint32_t l;
            if (p->map == NULL || cap - used < p->block_size) continue;  /* a whole frame fits */
            if (!rx_next(p, &d, &l)) continue;
            memcpy(buf + used, d, l);
            rx_done(p);
            ports[n] = p->number; offs[n] = used; lens[n] = l;
            used += l; n++; more = 1;
        }
    }
    return n;
}

/* ---------------------------------------------------------------- forwarding */

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void stat_add(rio_t *r, rio_result_t *res, uint64_t *arr, uint32_t port, uint32_t by) {
    if (port >= RIO_PORTS || !by) return;
    if (!r->st_in[port] && !r->st_out[port] && !r->st_drop[port] && res->nstat < RIO_PORTS)
        res->stat_port[res->nstat++] = port;
    arr[port] += by;
}

static int grow(rio_t *r, uint64_t need, uint32_t outs) {
    if (need > r->scap) {
        uint8_t *s = realloc(r->scratch, need);
        if (!s) return -1;
        r->scratch = s; r->scap = need;
    }
    if (outs > r->max_outs) {
        rio_out_t *o = realloc(r->outs, sizeof(rio_out_t) * outs);
        if (!o) return -1;
        r->outs = o; r->max_outs = outs;
    }
    return 0;
}

/* One frame through the engine; its outputs queued (ports), kept (CPU port) or ignored. */
static void run_one(rio_t *r, const rio_engine_t *e, rio_result_t *res, uint32_t in,
                    const uint8_t *data, uint32_t len, uint32_t *pin_used) {
    uint32_t copies = e->mc_max + 1;
    uint64_t extra = e->emit_max;
    if (e->passes) { if (copies < 64) copies = 64; extra = 33ull * e->emit_max; }
    uint64_t need = (uint64_t)copies * (len + extra) + 64;
    uint32_t max_outs = copies > 64 ? copies : 64;
    if (need > 0xFFFFFFFFull || grow(r, need, max_outs) != 0) {
        stat_add(r, res, r->st_in, in, 1); stat_add(r, res, r->st_drop, in, 1);
        return;
    }
    uint32_t dropped = 0, ndg = 0;
    uint64_t now = e->mono_base_ns >= 0 ? (mono_ns() - (uint64_t)e->mono_base_ns) / 1000 : e->now;
    uint32_t *dgt = (uint32_t *)e->dg_type;
    uint64_t *dgv = (uint64_t *)e->dg_vals;
    int n = ((process_fn)e->fn)((void *)e->sw, in, data, len, now, r->outs, max_outs, r->scratch,
                                (uint32_t)need, &dropped, dgt + res->ndg,
                                dgv + (size_t)res->ndg * e->dg_width, e->max_dg - res->ndg, &ndg);
    res->ndg += ndg;
    stat_add(r, res, r->st_in, in, 1);
    stat_add(r, res, r->st_drop, in, dropped);
    for (int j = 0; j < n; j++) {
        rio_out_t o = r->outs[j];
        if (o.off > need || o.len > need - o.off) continue;  /* never: the engine bounds both */
        stat_add(r, res, r->st_out, o.port, 1);
        if (o.port == r->cpu_port) {
            if (res->npin < e->max_pin && e->pin_cap - *pin_used >= o.len) {
                memcpy((uint8_t *)e->pin + *pin_used, r->scratch + o.off, o.len);
                ((uint32_t *)e->pin_off)[res->npin] = *pin_used;
                ((uint32_t *)e->pin_len)[res->npin] = o.len;
                *pin_used += o.len;
                res->npin++;
            } else {
                res->pin_lost++;
            }
            continue;
        }
        if (o.port >= RIO_PORTS || r->by_number[o.port] < 0) continue;  /* as send() to no port */
        rport_t *p = &r->ports[r->by_number[o.port]];
        pthread_mutex_lock(&p->txlock);
        tx_queue_locked(p, r->scratch + o.off, o.len);
        pthread_mutex_unlock(&p->txlock);
    }
}

/* Run up to `budget` frames from the RX rings (round robin, up to 64 a port a turn) through
 * the engine; returns early when the packet-in or digest buffers may not take another
 * packet's. Flushes the TX rings at the end. */
uint32_t rio_forward(rio_t *r, const rio_engine_t *e, uint32_t budget, rio_result_t *res) {
    res->packets = res->npin = res->pin_lost = res->ndg = res->nstat = 0;
    uint32_t pin_used = 0;
    for (int more = 1; more && res->packets < budget; ) {
        more = 0;
        for (uint32_t i = 0; i < r->nports && res->packets < budget; i++) {
            rport_t *p = &r->ports[i];
            if (p->map == NULL) continue;
            for (uint32_t k = 0; k < 64 && res->packets < budget; k++) {
                if (e->max_dg - res->ndg < e->dg_per_packet || res->npin >= e->max_pin ||
                    e->pin_cap - pin_used < e->pin_cap / 2) { more = 0; budget = res->packets; break; }
                const uint8_t *d; uint32_t l;
                if (!rx_next(p, &d, &l)) break;
                run_one(r, e, res, p->number, d, l, &pin_used);
                rx_done(p);
                res->packets++;
                more = 1;
            }
        }
    }
    tx_flush_all(r);
    for (uint32_t i = 0; i < res->nstat; i++) {
        uint32_t port = res->stat_port[i];
        res->stat_in[i] = (uint32_t)r->st_in[port]; res->stat_out[i] = (uint32_t)r->st_out[port];
        res->stat_drop[i] = (uint32_t)r->st_drop[port];
        r->st_in[port] = r->st_out[port] = r->st_drop[port] = 0;
    }
    return res->packets;
}

/* Wait until an RX ring has a block or an extra fd is readable: bit 0 a ring, bit 1 extra[0],
 * bit 2 extra[1]; 0 on timeout. */
int rio_wait(rio_t *r, int timeout_ms, int fd_a, int fd_b) {
    struct pollfd pf[RIO_PORTS + 2];
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->nports; i++)
        if (r->ports[i].fd >= 0) { pf[n].fd = r->ports[i].fd; pf[n].events = POLLIN; pf[n].revents = 0; n++; }
    uint32_t a = n;
    pf[n].fd = fd_a; pf[n].events = POLLIN; pf[n].revents = 0; n++;
    pf[n].fd = fd_b; pf[n].events = POLLIN; pf[n].revents = 0; n++;
    if (poll(pf, n, timeout_ms) <= 0) return 0;
    int out = 0;
    for (uint32_t i = 0; i < a; i++) {
        if (pf[i].revents & POLLERR) clear_error(pf[i].fd);  /* else poll would not block again */
        if (pf[i].revents) out |= 1;
    }
    if (pf[a].revents) out |= 2;
    if (pf[a + 1].revents) out |= 4;
    return out;
}
