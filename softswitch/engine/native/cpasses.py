"""The C pipeline of programs that clone, resubmit or recirculate: a queue of passes.

Programs without those externs use the straight pipeline in cprogram.py (one
ingress pass, then one egress pass per copy, no allocation). This one follows
`softswitch.engine.switch` job by job: an ingress job (a packet from a port, a
resubmitted or a recirculated one, with the metadata it carries) and egress jobs
(unicast, multicast replicas, I2E and E2E clones with their session's
truncation), in BMv2's order, bounded by 32 ingress passes and 4096 jobs per
injected packet. Every job owns its packet state (`malloc`); recirculated
packets own their bytes; all of it is freed when the packet is done.
"""

from __future__ import annotations

from collections.abc import Callable


def job_driver(sm: Callable[..., str], ts48: str, field_lists: str) -> str:
    """C of `run_packet` for the job pipeline; `sm(name, value, var)` writes a
    standard_metadata field (nothing when the program's struct lacks it)."""
    spec = "q->sm.f_egress_spec" if sm("egress_spec", "0") else "0"
    mgid = "p->sm.f_mcast_grp" if sm("mcast_grp", "0") else "0"
    pspec = "p->sm.f_egress_spec" if sm("egress_spec", "0") else "0"
    return f"""
{field_lists}

typedef struct {{
    int ingress;
    const uint8_t *data; uint32_t len;
    uint32_t port, itype, eport, strunc;
    int carried; u64 fl;
    pkt_t *p;   /* egress: the packet's state; ingress with carried: the metadata's source */
}} job_t;
typedef struct {{ job_t *q; uint32_t n, cap; uint8_t **bufs; uint32_t nbufs, capbufs; int oom; }} jobs_t;

static void push(jobs_t *J, job_t j) {{
    if (J->n == J->cap) {{
        uint32_t cap = J->cap ? 2 * J->cap : 16;
        job_t *q = realloc(J->q, sizeof(job_t) * cap);
        if (!q) {{ J->oom = 1; free(j.p); return; }}
        J->q = q; J->cap = cap;
    }}
    J->q[J->n++] = j;
}}

static uint8_t *own(jobs_t *J, const uint8_t *src, uint32_t len) {{
    if (J->nbufs == J->capbufs) {{
        uint32_t cap = J->capbufs ? 2 * J->capbufs : 8;
        uint8_t **b = realloc(J->bufs, sizeof(uint8_t *) * cap);
        if (!b) return NULL;
        J->bufs = b; J->capbufs = cap;
    }}
    uint8_t *d = malloc(len ? len : 1);
    if (!d) return NULL;
    memcpy(d, src, len);
    J->bufs[J->nbufs++] = d;
    return d;
}}

static pkt_t *fresh(sw_t *sw, const uint8_t *data, uint32_t len, u64 now) {{
    pkt_t *p = calloc(1, sizeof(pkt_t));
    if (!p) return NULL;
    p->sw = sw; p->data = data; p->len = len; p->plen = len; p->now = now;
    return p;
}}

/* a copy that continues as a new packet: the requests of the old pass are not its own */
static pkt_t *copy_new(const pkt_t *p) {{
    pkt_t *c = malloc(sizeof(pkt_t));
    if (!c) return NULL;
    *c = *p;
    c->trunc = 0; c->ci = c->ce = c->resub = c->recirc = 0; c->dg = 0; c->dm = 0;
    c->exited = 0; c->abort = 0; c->plen = c->len;
    return c;
}}

static void find_session(sw_t *sw, u64 sid, sess_t **out) {{
    *out = NULL;
    for (uint32_t i = 0; i < sw->nsess; i++) if (sw->sess[i].id == sid) {{ *out = &sw->sess[i]; return; }}
}}

static int do_ingress(sw_t *sw, job_t *j, u64 now, jobs_t *J, sink_t *s) {{
    pkt_t *p = fresh(sw, j->data, j->len, now);
    if (!p) return -1;
    if (j->carried) {{ field_list(j->fl, &j->p->meta, &p->meta); }}
    if (j->itype == 0) {{ {sm('ingress_port', 'j->port', 'p')} {sm('ingress_global_timestamp', f'now & {ts48}', 'p')} }}
    {sm('instance_type', 'j->itype', 'p')} {sm('packet_length', 'j->len', 'p')}
    CTL_parser(p);
    if (p->abort) {{ s->dropped++; free(p); return 0; }}
    p->payload = (p->pos + 7) >> 3; if (p->payload > p->len) p->payload = p->len;
    p->exited = 0; CTL_verify_checksum(p);
    if (p->abort) {{ s->dropped++; free(p); return 0; }}
    p->exited = 0; CTL_ingress(p);
    if (p->abort) {{ s->dropped++; free(p); return 0; }}
    if (p->ci) {{  /* ingress clone: the original packet parsed again, metadata reset */
        sess_t *ss; find_session(sw, p->ci_sess, &ss);
        for (uint32_t r = 0; ss && r < ss->n; r++) {{
            pkt_t *c = fresh(sw, j->data, j->len, now);
            if (!c) return -1;
            {sm('ingress_port', 'p->sm.f_ingress_port', 'c') if sm('ingress_port', '0') else ''}
            {sm('packet_length', 'j->len', 'c')}
            CTL_parser(c);
            c->payload = (c->pos + 7) >> 3; if (c->payload > c->len) c->payload = c->len;
            c->exited = 0; CTL_verify_checksum(c);
            memset(&c->meta, 0, sizeof c->meta); memset(&c->sm, 0, sizeof c->sm);
            c->exited = 0; c->abort = 0;
            {sm('packet_length', 'j->len', 'c')}
            if (p->ci_fl != ~0ULL) field_list(p->ci_fl, &p->meta, &c->meta);
            {sm('instance_type', '1', 'c')} {sm('egress_rid', 'ss->rid[r]', 'c')}
            push(J, (job_t){{0, j->data, j->len, j->port, 1, ss->port[r], ss->trunc, 0, 0, c}});
        }}
    }}
    if (p->dg) digest_out(p, s);
    if (p->resub) {{
        push(J, (job_t){{1, j->data, j->len, j->port, 6, 0, 0, 1, p->resub_fl, p}});
        return 0;  /* p carries the metadata; freed with the job */
    }}
    u64 mgid = {mgid};
    if (mgid) {{
        mc_t *g = mc_find(sw, mgid);
        if (!g) {{ s->dropped++; free(p); return 0; }}
        for (uint32_t r = 0; r < g->n; r++) {{
            pkt_t *q = copy_new(p);
            if (!q) {{ free(p); return -1; }}
            {sm('packet_length', 'p->plen')} {sm('egress_rid', 'g->rid[r]')} {sm('instance_type', '5')}
            push(J, (job_t){{0, j->data, j->len, j->port, 5, g->port[r], 0, 0, 0, q}});
        }}
        free(p);
        return 0;
    }}
    u64 spec = {pspec};
    if (spec == 511) {{ s->dropped++; free(p); return 0; }}
    {sm('instance_type', '0', 'p')} {sm('packet_length', 'p->plen', 'p')}
    push(J, (job_t){{0, j->data, j->len, j->port, 0, (uint32_t)spec, 0, 0, 0, p}});
    return 0;
}}

static int do_egress(sw_t *sw, job_t *j, u64 now, jobs_t *J, sink_t *s) {{
    pkt_t *q = j->p;
    j->p = NULL;
    uint32_t eport = j->eport;
    q->now = now;
    {sm('egress_port', 'eport')} {sm('egress_spec', '0')}
    {sm('egress_global_timestamp', f'now & {ts48}')} {sm('enq_timestamp', 'now & 0xFFFFFFFFULL')}
    {sm('deq_timedelta', '0')} {sm('enq_qdepth', '0')} {sm('deq_qdepth', '0')}
    q->exited = 0; CTL_egress(q);
    if (q->abort) {{ s->dropped++; free(q); return 0; }}
    if (q->ce) {{  /* egress clone: headers as they are now, metadata reset */
        sess_t *ss; find_session(sw, q->ce_sess, &ss);
        for (uint32_t r = 0; ss && r < ss->n; r++) {{
            pkt_t *c = copy_new(q);
            if (!c) {{ free(q); return -1; }}
            memset(&c->meta, 0, sizeof c->meta); memset(&c->sm, 0, sizeof c->sm);
            if (q->ce_fl != ~0ULL) field_list(q->ce_fl, &q->meta, &c->meta);
            {sm('packet_length', 'q->sm.f_packet_length', 'c') if sm('packet_length', '0') else ''}
            {sm('instance_type', '2', 'c')} {sm('egress_rid', 'ss->rid[r]', 'c')}
            push(J, (job_t){{0, j->data, j->len, j->port, 2, ss->port[r], ss->trunc, 0, 0, c}});
        }}
    }}
    if ({spec} == 511) {{ s->dropped++; free(q); return 0; }}
    q->exited = 0; CTL_compute_checksum(q);
    if (q->abort) {{ s->dropped++; free(q); return 0; }}
    uint32_t rest = q->len - q->payload;
    if (s->nout >= s->max_outs || s->cap - s->used < rest) {{ s->dropped++; free(q); return 0; }}
    q->out.buf = s->buf + s->used; q->out.nbits = 0; q->out.cap = s->cap - s->used - rest; q->out.overflow = 0;
    q->exited = 0; CTL_deparser(q);
    if (q->out.overflow || q->abort) {{ s->dropped++; free(q); return 0; }}
    uint32_t hb = wr_bytes(&q->out);
    memcpy(s->buf + s->used + hb, q->data + q->payload, rest);
    uint32_t total = hb + rest;
    if (q->recirc) {{  /* the deparsed packet enters ingress again */
        uint8_t *d = own(J, s->buf + s->used, total);
        if (!d) {{ free(q); return -1; }}
        push(J, (job_t){{1, d, total, j->port, 4, 0, 0, 1, q->recirc_fl, q}});
        return 0;
    }}
    u64 t = q->trunc;
    if (j->strunc && (!t || j->strunc < t)) t = j->strunc;
    if (t && t < total) total = (uint32_t)t;
    s->outs[s->nout].port = eport; s->outs[s->nout].off = s->used; s->outs[s->nout].len = total;
    s->nout++; s->used += total;
    free(q);
    return 0;
}}

static void run_packet(sw_t *sw, uint32_t port, const uint8_t *data, uint32_t len, u64 now, sink_t *s) {{
    jobs_t J = {{0}};
    push(&J, (job_t){{1, data, len, port, 0, 0, 0, 0, 0, NULL}});
    uint32_t head = 0, passes = 0, jobs = 0;
    while (head < J.n && !J.oom) {{
        job_t j = J.q[head++];
        jobs++;
        if (j.ingress) passes++;
        if (passes > 32 || jobs > 4096) {{ s->dropped++; head--; break; }}
        int rc = j.ingress ? do_ingress(sw, &j, now, &J, s) : do_egress(sw, &j, now, &J, s);
        if (j.ingress && j.carried) free(j.p);  /* the pass that carried the metadata is over */
        if (rc < 0) {{ J.oom = 1; s->dropped++; }}
    }}
    for (uint32_t i = head; i < J.n; i++) free(J.q[i].p);  /* jobs left by the bounds */
    for (uint32_t i = 0; i < J.nbufs; i++) free(J.bufs[i]);
    free(J.q); free(J.bufs);
}}
"""
