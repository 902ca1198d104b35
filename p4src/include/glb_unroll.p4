/* glb_unroll.p4: per-path steps of the GLB engine, written once as macros and
 * expanded for each of the MAX_PATHS (8) paths in sglb.p4, because P4_16 for
 * BMv2 has no loops. They use the names of SglbIngress: `meta`,
 * `standard_metadata` and the registers `port_down`, `dre_bytes`, `dre_time`.
 * `I` is a literal path index; `##` builds the per-path field names. */

#ifndef SGLB_GLB_UNROLL_P4
#define SGLB_GLB_UNROLL_P4

/* Liveness of the path's port, its local congestion (the port's DRE decayed
 * to now and quantised by the path's shift, 0..QMAX), and its cost: the worse
 * of local and remote congestion. */
#define SGLB_PATH_STATE(I) {                                                   \
    bit<1> path_port_down;                                                     \
    port_down.read(path_port_down, (bit<32>)meta.port##I);                     \
    if (path_port_down == 0) {                                                 \
        meta.local_up = meta.local_up | (8w1 << I);                            \
    }                                                                          \
    bit<32> dre_x;                                                             \
    bit<48> dre_t;                                                             \
    dre_bytes.read(dre_x, (bit<32>)meta.port##I);                              \
    dre_time.read(dre_t, (bit<32>)meta.port##I);                               \
    bit<48> dre_periods = 0;                                                   \
    if (standard_metadata.ingress_global_timestamp > dre_t) {                  \
        dre_periods = (standard_metadata.ingress_global_timestamp - dre_t)     \
                      >> DRE_PERIOD_SHIFT;                                     \
    }                                                                          \
    if (dre_periods >= 32) {                                                   \
        dre_x = 0;                                                             \
    } else {                                                                   \
        dre_x = dre_x >> (bit<8>)dre_periods;                                  \
    }                                                                          \
    dre_x = dre_x >> meta.shift##I;                                            \
    if (dre_x > QMAX) {                                                        \
        meta.lq##I = QMAX;                                                     \
    } else {                                                                   \
        meta.lq##I = (bit<8>)dre_x;                                            \
    }                                                                          \
    if (meta.lq##I > meta.rq##I) {                                             \
        meta.cost##I = meta.lq##I;                                             \
    } else {                                                                   \
        meta.cost##I = meta.rq##I;                                             \
    }                                                                          \
    if (meta.w##I != 0) {                                                      \
        meta.weighted = meta.weighted | (8w1 << I);                            \
    }                                                                          \
}

/* Lowest cost over the live paths. */
#define SGLB_MIN_COST(I)                                                       \
    if (meta.live[I:I] == 1 && meta.cost##I < meta.min_cost) {                 \
        meta.min_cost = meta.cost##I;                                          \
    }

/* Candidate set and cumulative weights: in SGLB mode the live paths within
 * tie_tolerance of the lowest cost, weighted by capacity; in ECMP mode every
 * live path, weight 1. acc##I is the sum of the weights of candidates 0..I. */
#define SGLB_ACCUMULATE(I) {                                                   \
    bit<1> is_candidate = 0;                                                   \
    if (meta.live[I:I] == 1) {                                                 \
        if (meta.lb_mode == MODE_ECMP) {                                       \
            is_candidate = 1;                                                  \
        } else if ((bit<16>)meta.cost##I <=                                    \
                   (bit<16>)meta.min_cost + (bit<16>)meta.tie_tolerance) {     \
            is_candidate = 1;                                                  \
        }                                                                      \
    }                                                                          \
    if (is_candidate == 1) {                                                   \
        meta.candidates = meta.candidates | (8w1 << I);                        \
        if (meta.lb_mode == MODE_ECMP) {                                       \
            meta.weight_sum = meta.weight_sum + 1;                             \
        } else {                                                               \
            meta.weight_sum = meta.weight_sum + (bit<32>)meta.w##I;            \
        }                                                                      \
    }                                                                          \
    meta.acc##I = meta.weight_sum;                                             \
}

/* Weighted pick: applied from path 7 down to 0, the last match is the first
 * path whose cumulative weight exceeds the pick point. */
#define SGLB_PICK(I)                                                           \
    if (meta.pick_point < meta.acc##I) {                                       \
        meta.pick = I;                                                         \
    }

/* Output port of the chosen path. */
#define SGLB_PORT_OF(I)                                                        \
    if (meta.chosen == I) {                                                    \
        standard_metadata.egress_spec = meta.port##I;                          \
    }

#endif
