/* metadata.p4: per-packet metadata of the SGLB program (v1model user
 * metadata). Per-path fields are declared once per path by paths.p4. */

#ifndef SGLB_METADATA_P4
#define SGLB_METADATA_P4

#include "constants.p4"
#include "paths.p4"

/* Per path I: configuration (uplinks, dst_profile) and GLB working state. */
#define SGLB_PATH_FIELDS(I)                                                    \
    port_t  port##I;       /* uplinks: egress port of path I */                \
    bit<8>  shift##I;      /* uplinks: DRE quantisation shift of that port */  \
    bit<8>  rq##I;         /* dst_profile: remote congestion (SyncMesh) */     \
    bit<8>  w##I;          /* dst_profile: capacity weight */                  \
    bit<32> ep##I;         /* dst_profile: written-back epoch (valid, mod 2^30) */\
    bit<8>  lq##I;         /* local congestion of the port */                  \
    bit<8>  cost##I;       /* max(local, remote) */                            \
    bit<16> acc##I;        /* cumulative weight of candidates 0..I */          \
    bit<32> owd##I;        /* fed-back one-way delay (valid if fresh) */

struct metadata_t {
    /* switch_config */
    bit<8>  role;
    bit<8>  lb_mode;
    bit<16> switch_id;
    bit<48> switch_mac;
    bit<32> flowlet_gap;      /* us: a flow idle this long may change path */
    bit<8>  tie_tolerance;    /* cost levels within which paths tie */
    bit<16> notice_group;     /* multicast group of the notices (spine) */
    bit<8>  feedback;         /* 1: tag fabric traffic, use in-band feedback */
    bit<32> tag_frame_max;    /* bytes: longer frames are sent untagged */
    bit<32> fb_fresh;         /* us: feedback this young replaces the profile */
    bit<32> fb_stale;         /* us: older feedback is unknown */
    bit<8>  unknown_level;    /* remote level assumed where feedback is not fresh */
    bit<32> gap_margin;       /* us added to a measured delay skew */
    bit<32> gap_unknown;      /* us: idle time needed to move where delays are unknown */

    /* uplinks */
    pathmask_t path_slots;    /* bit i set: path i exists on this switch */
    bit<8>  path_count;       /* highest path index + 1 (tag.npaths) */

    /* port_neighbour: what the ingress port is bound to */
    bit<8>  nb_kind;          /* NEIGHBOUR_* */
    bit<16> nb_id;            /* spine or leaf id */

    /* dst_profile: control-plane view of the destination leaf */
    pathmask_t cp_mask;       /* bit i set: path i usable per the control plane */

    SGLB_FOR_EACH_PATH(SGLB_PATH_FIELDS)

    /* GLB engine working state */
    pathmask_t local_up;      /* port of path i is up */
    pathmask_t allowed;       /* not excluded (newest of notice and control plane) */
    pathmask_t weighted;      /* capacity weight of path i is not 0 */
    pathmask_t fresh;         /* fresh in-band feedback for path i */
    pathmask_t live;
    pathmask_t safe;          /* a new flowlet may move there without reordering */
    pathmask_t candidates;
    bit<8>  min_cost;
    bit<32> weight_sum;
    bit<32> pick_hash;
    bit<32> pick_point;
    bit<8>  pick;             /* path picked for a new flowlet */
    bit<1>  picked;
    bit<8>  chosen;           /* path the packet leaves on */
    bit<32> now;              /* ingress time, us mod 2^32 */
    bit<28> now_fb;           /* ingress time in feedback units */

    /* flowlet of the packet */
    bit<32> flowlet_index;
    bit<8>  last_path;        /* path + 1 of the flowlet, 0 = none */
    bit<32> idle;             /* us since the flowlet's previous packet */
    bit<1>  last_live;
    bit<1>  last_fresh;
    bit<1>  last_candidate;   /* the previous path is still among the candidates */
    bit<32> last_owd;

    /* classification and bookkeeping */
    bit<16> l4_src;
    bit<16> l4_dst;
    bit<16> dst_leaf;
    bit<1>  to_leaf;          /* leaf: send over a path; spine: down to dst_leaf */
    bit<1>  is_probe;         /* leaf: probe from the CPU, sent on probe.path */
    bit<1>  probe_slot;       /* leaf: the probe's path exists */
    pathmask_t notice_paths;  /* paths through the notice's spine */
    bit<30> notice_epoch;     /* notice epoch, mod 2^30 */
    bit<1>  notice_new;
    bit<1>  notice_dup;
    bit<1>  peer_found;       /* spine: port_peer hit */
    bit<16> peer_leaf;
    port_t  peer_sibling;
    port_t  down_a;           /* spine: parallel downlinks to dst_leaf */
    port_t  down_b;
    bit<8>  share_a;          /* spine: flows (of 256) on down_a when both are up */
    bit<1>  has_downlinks;
    bit<1>  forwarded;        /* egress_spec or mcast_grp set */
    bit<1>  consumed;         /* control packet fully handled: no output, no drop count */
    bit<32> drop_reason;      /* 0 = none, else DROP_* */
    bit<8>  punt_reason;
    bit<32> tmp_ip;

    /* egress: port_levels thresholds (DRE bytes of levels 1..7) */
    bit<32> t1; bit<32> t2; bit<32> t3; bit<32> t4;
    bit<32> t5; bit<32> t6; bit<32> t7;
}

#endif
