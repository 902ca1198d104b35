/* checks.p4 (TNA): the checks of SglbIngress as lookups, and what a
 * port-status packet or a notice that passed does. Included inside the body
 * of SglbIngress before steps.p4: the actions read `meta`, `hdr` and the
 * intrinsic metadata of that control.
 *
 * Why lookups: on Tofino 2 a stage holds 16 logical tables, and a chain of
 * conditions takes one per condition with its assignment, which filled the
 * early stages and pushed the GLB engine past the last one. Each table below
 * is the v1model program's chain of checks in its order, as ternary entries
 * in priority order where the first that matches decides; the good values
 * are listed (a ternary entry cannot say "not equal"), the rest falls to the
 * entry below or the default. Fields compared with fields are XORed by a
 * step beforehand (nb_x, nb_sx: zero when equal). */

    /* -- packet_kind: what a packet is, in the order of the v1model
     *    program's chain: a parser error (MALFORMED); a PacketOut sent as
     *    it is (to a port below MAX_PORTS, else BAD_PACKET_OUT) or of an op
     *    other than PIPELINE (BAD_PACKET_OUT); a port-status packet, a
     *    notice, a probe, ARP; a tag without IPv4 (BAD_TAG); IPv4; anything
     *    else UNSUPPORTED. The apply block switches on the action, so each
     *    kind's checks are the next table of this one. -- */
    action drop_as(bit<32> reason) {
        meta.drop_reason = reason;
    }

    action packet_out_direct() {
        ig_tm_md.ucast_egress_port = (port_t)hdr.packet_out.egress_port;
        meta.forwarded = 1;
    }

    action kind_port_status() { }
    action kind_notice() { }
    action kind_probe() { }
    action kind_arp() { }
    action kind_ipv4() { }

/* the kinds, without a PacketOut header or with one of op PIPELINE */
#define KIND_ENTRIES(...)                                                      \
    (0, __VA_ARGS__, true, _, _, _, _, _): kind_port_status();                 \
    (0, __VA_ARGS__, _, true, _, _, _, _): kind_notice();                      \
    (0, __VA_ARGS__, _, _, true, _, _, _): kind_probe();                       \
    (0, __VA_ARGS__, _, _, _, true, _, _): kind_arp();                         \
    (0, __VA_ARGS__, _, _, _, _, true, false): drop_as(DROP_BAD_TAG);          \
    (0, __VA_ARGS__, _, _, _, _, _, true): kind_ipv4();                        \
    (0, __VA_ARGS__, _, _, _, _, _, _): drop_as(DROP_UNSUPPORTED);
    table packet_kind {
        key = {
            ig_prsr_md.parser_err: ternary; hdr.packet_out.isValid(): ternary;
            hdr.packet_out.op: ternary; hdr.packet_out.egress_port: ternary;
            hdr.port_status.isValid(): ternary; hdr.notice.isValid(): ternary;
            hdr.probe.isValid(): ternary; hdr.arp.isValid(): ternary;
            hdr.tag.isValid(): ternary; hdr.ipv4.isValid(): ternary;
        }
        actions = { drop_as; packet_out_direct; kind_port_status; kind_notice;
                    kind_probe; kind_arp; kind_ipv4; }
        const entries = {
            (0, true, PACKET_OUT_DIRECT, 0 &&& (16w0xFFFF ^ (MAX_PORTS - 1)),
             _, _, _, _, _, _): packet_out_direct();
            (0, true, PACKET_OUT_DIRECT, _, _, _, _, _, _, _): drop_as(DROP_BAD_PACKET_OUT);
            KIND_ENTRIES(false, _, _)
            KIND_ENTRIES(true, PACKET_OUT_PIPELINE, _)
            (0, true, _, _, _, _, _, _, _, _): drop_as(DROP_BAD_PACKET_OUT);
        }
        const default_action = drop_as(DROP_MALFORMED);
        size = 20;
    }
#undef KIND_ENTRIES

    /* -- tag_check and ipv4_check: the checks of an IPv4 packet in the order
     *    of the v1model program (the tag's fields, the port it came from, the
     *    route, then IPv4). -- */
    action tag_verdict_is(bit<2> verdict) {
        meta.tag_verdict = verdict;
    }

/* A tag's fields are good: version, length, ce <= QMAX, src_leaf below
 * MAX_LEAVES, 1 <= npaths <= MAX_PATHS (tag_span, npaths - path saturated, is
 * non-zero: checked first; npaths below MAX_PATHS or equal to it), and FB_NONE
 * or a level <= QMAX about a path below MAX_PATHS; then the port's rule. */
#define TAG_NPATHS_LOW 0 &&& (8w0xFF ^ (MAX_PATHS - 1))
#define TAG_NPATHS_MAX MAX_PATHS &&& 0xFF
#define TAG_FB_NONE FB_NONE &&& 0xFF, _
#define TAG_FB_SOME 0 &&& 0xF8, 0 &&& (8w0xFF ^ (MAX_PATHS - 1))
#define TAG_GOOD(...)                                                          \
    (_, SGLB_VERSION &&& 0xFF, TAG_LENGTH &&& 0xFF, 0 &&& 0xF8,                \
     0 &&& (16w0xFFFF ^ (MAX_LEAVES - 1)), __VA_ARGS__)
/* a leaf takes tags from its spines, a spine from the leaf they name (nb_x:
 * nb_id ^ src_leaf, zero when equal) */
#define TAG_PORT_LEAF ROLE_LEAF &&& 0xFF, NEIGHBOUR_SPINE &&& 0xFF, _
#define TAG_PORT_SPINE ROLE_SPINE &&& 0xFF, NEIGHBOUR_LEAF &&& 0xFF, 0 &&& 0xFFFF
#define TAG_PORT_ANY _, _, _
#define TAG_GOOD_ALL(VERDICT, ...)                                             \
    TAG_GOOD(TAG_NPATHS_LOW, TAG_FB_NONE, __VA_ARGS__): tag_verdict_is(VERDICT); \
    TAG_GOOD(TAG_NPATHS_MAX, TAG_FB_NONE, __VA_ARGS__): tag_verdict_is(VERDICT); \
    TAG_GOOD(TAG_NPATHS_LOW, TAG_FB_SOME, __VA_ARGS__): tag_verdict_is(VERDICT); \
    TAG_GOOD(TAG_NPATHS_MAX, TAG_FB_SOME, __VA_ARGS__): tag_verdict_is(VERDICT);
    table tag_check {
        key = {
            meta.tag_span: ternary; hdr.tag.version: ternary; hdr.tag.length: ternary;
            hdr.tag.ce: ternary; hdr.tag.src_leaf: ternary; hdr.tag.npaths: ternary;
            hdr.tag.fb_level: ternary; hdr.tag.fb_path: ternary;
            meta.role: ternary; meta.nb_kind: ternary; meta.nb_x: ternary;
        }
        actions = { tag_verdict_is; }
        const entries = {
            (0 &&& 0xFF, _, _, _, _, _, _, _, _, _, _): tag_verdict_is(TAG_BAD);
            TAG_GOOD_ALL(TAG_OK, TAG_PORT_LEAF)
            TAG_GOOD_ALL(TAG_OK, TAG_PORT_SPINE)
            TAG_GOOD_ALL(TAG_WRONG_PORT, TAG_PORT_ANY)
        }
        const default_action = tag_verdict_is(TAG_BAD);
        size = 16;
    }
#undef TAG_NPATHS_LOW
#undef TAG_NPATHS_MAX
#undef TAG_FB_NONE
#undef TAG_FB_SOME
#undef TAG_GOOD
#undef TAG_PORT_LEAF
#undef TAG_PORT_SPINE
#undef TAG_PORT_ANY
#undef TAG_GOOD_ALL

    /* passed; rx / fb: a tagged packet from the fabric on a leaf, whose
     * metric (rx_op) and returned metric (fb_op) the access tables store */
    action ipv4_ok(bit<8> rx, bit<8> fb) {
        meta.rx_op = rx;
        meta.fb_op = fb;
#ifdef SGLB_TWO_PASS
        /* the egress of the host port stores the metric the tag returns
         * (feedback.p4) and takes the tag off */
        hdr.bridge.untag = (bit<1>)rx;
        hdr.bridge.fb_store = (bit<1>)fb;
#endif
    }

    /* routed (to a host or a leaf): the TTL and the source MAC, once checked */
    action ipv4_forward(bit<8> rx, bit<8> fb) {
        ipv4_ok(rx, fb);
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        hdr.ethernet.srcAddr = meta.switch_mac;
    }

/* IPv4 version 4, no checksum error, no options; a tagged packet that a leaf
 * takes from the fabric (not routed to another leaf) */
#define IP_BASIC 4 &&& 0xF, false, 5 &&& 0xF
#define IP_FROM_FABRIC ROLE_LEAF &&& 0xFF, true, 0
    table ipv4_check {
        key = {
            meta.tag_verdict: ternary; meta.route_miss: ternary;
            hdr.ipv4.version: ternary; meta.checksum_error: ternary;
            hdr.ipv4.ihl: ternary; hdr.ipv4.ttl: ternary; meta.dec_ttl: ternary;
            meta.role: ternary; hdr.tag.isValid(): ternary; meta.leaf_route: ternary;
            hdr.tag.fb_level: ternary;
        }
        actions = { drop_as; ipv4_ok; ipv4_forward; }
        const entries = {
            (TAG_BAD, _, _, _, _, _, _, _, _, _, _): drop_as(DROP_BAD_TAG);
            (TAG_WRONG_PORT, _, _, _, _, _, _, _, _, _, _): drop_as(DROP_TAG_WRONG_PORT);
            (_, 1, _, _, _, _, _, _, _, _, _): drop_as(DROP_NO_ROUTE);
            (_, _, IP_BASIC, 0 &&& 0xFE, _, _, _, _, _): drop_as(DROP_TTL_EXPIRED);
            (_, _, IP_BASIC, _, 1, IP_FROM_FABRIC, FB_NONE): ipv4_forward(1, 0);
            (_, _, IP_BASIC, _, 1, IP_FROM_FABRIC, _): ipv4_forward(1, 1);
            (_, _, IP_BASIC, _, 1, _, _, _, _): ipv4_forward(0, 0);
            (_, _, IP_BASIC, _, _, IP_FROM_FABRIC, FB_NONE): ipv4_ok(1, 0);
            (_, _, IP_BASIC, _, _, IP_FROM_FABRIC, _): ipv4_ok(1, 1);
            (_, _, IP_BASIC, _, _, _, _, _, _): ipv4_ok(0, 0);
            (_, _, 4 &&& 0xF, false, _, _, _, _, _, _, _): drop_as(DROP_UNSUPPORTED);
        }
        const default_action = drop_as(DROP_BAD_IPV4);
        size = 8;
    }
#undef IP_BASIC
#undef IP_FROM_FABRIC

    /* -- port_status_check: a port-status packet's checks (v1model order: from
     *    the CPU port, its version, op DOWN or UP, a port below MAX_PORTS;
     *    else BAD_PORT_STATUS) and the op of the access table it updates
     *    (path_down on a leaf, leaf_links on a spine when the port leads to a
     *    leaf). The op does not depend on the state held before (the update
     *    is idempotent), so the access tables need not wait for port_state. -- */
    action port_status_takes(bit<8> goes_down, bit<8> down_op, bit<8> links_op) {
        meta.consumed = 1;
        meta.goes_down = goes_down;
        meta.down_op = down_op;
        meta.links_op = links_op;
    }

#define PORT_STATUS_GOOD(OP)                                                   \
    CPU_PORT &&& 0x1FF, PORT_STATUS_VERSION, OP,                               \
    0 &&& (16w0xFFFF ^ (MAX_PORTS - 1))
    table port_status_check {
        key = {
            ig_intr_md.ingress_port: ternary; hdr.port_status.version: ternary;
            hdr.port_status.op: ternary; hdr.port_status.port: ternary;
            meta.role: ternary; meta.peer_found: ternary;
        }
        actions = { port_status_takes; drop_as; }
        const entries = {
            (PORT_STATUS_GOOD(PORT_STATUS_DOWN), ROLE_LEAF, _): port_status_takes(1, OP_DOWN, 0);
            (PORT_STATUS_GOOD(PORT_STATUS_UP), ROLE_LEAF, _): port_status_takes(0, OP_UP, 0);
            (PORT_STATUS_GOOD(PORT_STATUS_DOWN), _, 1): port_status_takes(1, 0, OP_DOWN);
            (PORT_STATUS_GOOD(PORT_STATUS_UP), _, 1): port_status_takes(0, 0, OP_UP);
            (PORT_STATUS_GOOD(PORT_STATUS_DOWN), _, _): port_status_takes(1, 0, 0);
            (PORT_STATUS_GOOD(PORT_STATUS_UP), _, _): port_status_takes(0, 0, 0);
        }
        const default_action = drop_as(DROP_BAD_PORT_STATUS);
        size = 8;
    }
#undef PORT_STATUS_GOOD

    /* -- port_status_event: its event, from the state held before (port_was):
     *    the same state again is a duplicate -- */
    action port_status_is(bit<32> event) {
        meta.event = event;
    }

    table port_status_event {
        key = { meta.goes_down: exact; meta.port_was: exact; }
        actions = { port_status_is; }
        const entries = {
            (1, 1): port_status_is(EV_PORT_STATUS_DUP);
            (0, 0): port_status_is(EV_PORT_STATUS_DUP);
            (1, 0): port_status_is(EV_PORT_DOWN);
        }
        const default_action = port_status_is(EV_PORT_UP);
        size = 4;
    }

    /* -- links_change: on a spine, whether a port-status update of a leaf's
     *    links (leaf_links: bit 0 member a down, bit 1 member b; member 3,
     *    the leaf's only link, is both bits) changed the leaf's
     *    reachability (both links down now and not before, or the other
     *    way): one lookup on the op, the links held before and the member,
     *    where computing the new links and both reachabilities took two
     *    stages -- */
    action reach_changes() { meta.reach_changed = 1; }
    action reach_stays() { meta.reach_changed = 0; }

    @hidden table links_change {
        key = { meta.links_op: exact; meta.links_was: exact; meta.peer_member: exact; }
        actions = { reach_changes; reach_stays; }
        const entries = {
            (OP_DOWN, 2, 1): reach_changes();   /* b was down, now a too */
            (OP_DOWN, 1, 2): reach_changes();   /* a was down, now b too */
            (OP_UP, 3, 1): reach_changes();     /* both were down, a is up */
            (OP_UP, 3, 2): reach_changes();     /* both were down, b is up */
            (OP_DOWN, 0, 3): reach_changes();   /* the only link goes down */
            (OP_DOWN, 1, 3): reach_changes();
            (OP_DOWN, 2, 3): reach_changes();
            (OP_UP, 3, 3): reach_changes();     /* the only link comes up */
        }
        const default_action = reach_stays();
        size = 8;
    }

    /* -- notice_check: the checks of a notice (v1model order): its format, a
     *    kind this program takes, a leaf id below MAX_LEAVES, on a leaf
     *    (BAD_NOTICE); a write-back from the CPU port as a PacketOut, an offer
     *    from the port bound to the spine it names (nb_sx: nb_id ^ spine_id,
     *    zero when equal; NOTICE_WRONG_PORT); a spine spine_paths knows
     *    (UNKNOWN_SPINE). The good values are listed, the rest falls through
     *    to the default. -- */
    action notice_passes() {
        meta.notice_ok = 1;
    }

#define NOTICE_GOOD(KIND, ...)                                                 \
    (SGLB_VERSION, NOTICE_LENGTH, KIND, 0 &&& (16w0xFFFF ^ (MAX_LEAVES - 1)),  \
     ROLE_LEAF, __VA_ARGS__)
#define NOTICE_FROM_CPU CPU_PORT &&& 0x1FF, true
#define NOTICE_FROM_SPINE _, _, NEIGHBOUR_SPINE &&& 0xFF, 0 &&& 0xFFFF
#define NOTICE_ANY_PORT _, _, _, _
    table notice_check {
        key = {
            hdr.notice.version: ternary; hdr.notice.length: ternary; hdr.notice.kind: ternary;
            hdr.notice.leaf_id: ternary; meta.role: ternary;
            ig_intr_md.ingress_port: ternary; hdr.packet_out.isValid(): ternary;
            meta.nb_kind: ternary; meta.nb_sx: ternary; meta.spine_known: ternary;
        }
        actions = { notice_passes; drop_as; }
        const entries = {
            NOTICE_GOOD(NOTICE_WRITEBACK, NOTICE_FROM_CPU, _, _, 1): notice_passes();
            NOTICE_GOOD(NOTICE_WRITEBACK, NOTICE_FROM_CPU, _, _, _): drop_as(DROP_UNKNOWN_SPINE);
            NOTICE_GOOD(NOTICE_WRITEBACK, NOTICE_ANY_PORT, _): drop_as(DROP_NOTICE_WRONG_PORT);
            NOTICE_GOOD(NOTICE_FAIL, NOTICE_FROM_SPINE, 1): notice_passes();
            NOTICE_GOOD(NOTICE_RECOVER, NOTICE_FROM_SPINE, 1): notice_passes();
            NOTICE_GOOD(NOTICE_FAIL, NOTICE_FROM_SPINE, _): drop_as(DROP_UNKNOWN_SPINE);
            NOTICE_GOOD(NOTICE_RECOVER, NOTICE_FROM_SPINE, _): drop_as(DROP_UNKNOWN_SPINE);
            NOTICE_GOOD(NOTICE_FAIL, NOTICE_ANY_PORT, _): drop_as(DROP_NOTICE_WRONG_PORT);
            NOTICE_GOOD(NOTICE_RECOVER, NOTICE_ANY_PORT, _): drop_as(DROP_NOTICE_WRONG_PORT);
        }
        const default_action = drop_as(DROP_BAD_NOTICE);
        size = 16;
    }
#undef NOTICE_GOOD
#undef NOTICE_FROM_CPU
#undef NOTICE_FROM_SPINE
#undef NOTICE_ANY_PORT

    /* -- probe_check: a probe's checks and what it does (v1model order): its
     *    format, a destination leaf below MAX_LEAVES and a path below
     *    MAX_PATHS (BAD_PROBE); a spine passes it down when it came from a
     *    leaf; a leaf sends a controller's PacketOut probe (kind PROBE, not
     *    to itself: probe_dx = dst_leaf ^ switch_id), and from the port of a
     *    spine takes one addressed to itself: a probe is reflected, a reply
     *    punted with its round trip. The rest is BAD_PROBE. One lookup where
     *    the chain of conditions took eleven logical tables. -- */
    action probe_transit() {
        meta.to_leaf = 1;
    }

    action probe_send() {
        hdr.probe.src_leaf = meta.switch_id;
        hdr.probe.hop_dre = 0;
        hdr.probe.stamp = meta.now;
        meta.to_leaf = 1;
        meta.is_probe = 1;
    }

    action probe_reflect() {
        hdr.probe.kind = PROBE_REPLY_KIND;
        hdr.probe.dst_leaf = hdr.probe.src_leaf;
        hdr.probe.src_leaf = meta.switch_id;
        hdr.ethernet.dstAddr = hdr.ethernet.srcAddr;
        hdr.ethernet.srcAddr = meta.switch_mac;
        ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port;
        meta.forwarded = 1;
        meta.event = EV_PROBE_REFLECTED;
    }

    action probe_reply() {
        hdr.probe.stamp = meta.now - hdr.probe.stamp;
        ig_tm_md.ucast_egress_port = CPU_PORT;
        hdr.bridge.punt_reason = PUNT_PROBE_REPLY;
        meta.forwarded = 1;
        meta.event = EV_PROBE_REPLIED;
    }

#define PROBE_GOOD SGLB_VERSION, PROBE_LENGTH,                                 \
    0 &&& (16w0xFFFF ^ (MAX_LEAVES - 1)), 0 &&& (8w0xFF ^ (MAX_PATHS - 1))
#define PROBE_FOR_US 0 &&& 0xFFFF
    table probe_check {
        key = {
            hdr.probe.version: ternary; hdr.probe.length: ternary;
            hdr.probe.dst_leaf: ternary; hdr.probe.path: ternary; meta.role: ternary;
            meta.nb_kind: ternary; hdr.packet_out.isValid(): ternary;
            hdr.probe.kind: ternary; meta.probe_dx: ternary;
        }
        actions = { probe_transit; probe_send; probe_reflect; probe_reply; drop_as; }
        const entries = {
            (PROBE_GOOD, ROLE_SPINE, NEIGHBOUR_LEAF, _, _, _): probe_transit();
            (PROBE_GOOD, ROLE_SPINE, _, _, _, _): drop_as(DROP_BAD_PROBE);
            (PROBE_GOOD, _, _, true, _, PROBE_FOR_US): drop_as(DROP_BAD_PROBE);
            (PROBE_GOOD, _, _, true, PROBE_KIND, _): probe_send();
            (PROBE_GOOD, _, _, true, _, _): drop_as(DROP_BAD_PROBE);
            (PROBE_GOOD, _, NEIGHBOUR_SPINE, false, PROBE_KIND, PROBE_FOR_US): probe_reflect();
            (PROBE_GOOD, _, NEIGHBOUR_SPINE, false, _, PROBE_FOR_US): probe_reply();
        }
        const default_action = drop_as(DROP_BAD_PROBE);
        size = 8;
    }
#undef PROBE_GOOD
#undef PROBE_FOR_US

    /* -- arp_check: a request for IPv4 over Ethernet (else UNSUPPORTED) -- */
    action arp_request() {
        meta.arp_ok = 1;
    }

    table arp_check {
        key = { hdr.arp.oper: ternary; hdr.arp.htype: ternary; hdr.arp.ptype: ternary; }
        actions = { arp_request; drop_as; }
        const entries = { (1, 1, ETHERTYPE_IPV4): arp_request(); }
        const default_action = drop_as(DROP_UNSUPPORTED);
        size = 1;
    }

    /* -- notice_verdict: what a notice that passed the checks does, from
     *    notice_rv (key - held; a write-back: held - key) and notice_seen
     *    (anything held): an offer is applied (punted to the control plane
     *    for the write-back) when nothing is held or key - held > 1 as a
     *    signed number, a duplicate at 0, 1 or -1, stale otherwise; a
     *    write-back is consumed (the forced_* access tables act on it). -- */
    action notice_consumed(bit<32> event) {
        meta.event = event;
        meta.consumed = 1;
    }

    action notice_apply() {
        meta.notice_applied = 1;
        meta.event = EV_NOTICE_RECEIVED;
        ig_tm_md.ucast_egress_port = CPU_PORT;
        hdr.bridge.punt_reason = PUNT_NOTICE;
        meta.forwarded = 1;
    }

    table notice_verdict {
        key = { hdr.notice.kind: ternary; meta.notice_seen: ternary; meta.notice_rv: ternary; }
        actions = { notice_consumed; notice_apply; }
        const entries = {
            (NOTICE_WRITEBACK, _, _): notice_consumed(EV_COUNTER_SIZE);
            (_, 0, _): notice_apply();
            (_, _, NOTICE_RV_NEAR): notice_consumed(EV_NOTICE_DUPLICATE);
            (_, _, NOTICE_RV_POSITIVE): notice_apply();
            (_, _, 0xFFFFFFFF &&& 0xFFFFFFFF): notice_consumed(EV_NOTICE_DUPLICATE);
        }
        const default_action = notice_consumed(EV_NOTICE_STALE);
        size = 8;
    }
