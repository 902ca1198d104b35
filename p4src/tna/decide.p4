/* decide.p4 (TNA): what a leaf or a spine does with a packet toward
 * another leaf once it passed the checks, as lookups. Included inside the
 * body of SglbIngress after checks.p4 (drop_as): the actions read `meta`,
 * `hdr` and the intrinsic metadata of that control.
 *
 * Why lookups: the v1model program's decision is a chain of nested
 * conditions, and on Tofino each condition with its assignments takes
 * logical tables of the stage where the chain's inputs are ready; with
 * both passes' decisions and the spine's, that stage ran out of the
 * sixteen ids it shares with egress. Each table below is that chain in its
 * order, as ternary entries in priority order (the first that matches
 * decides); tests/sglb/test_sglb_tna.py checks them against the chain. */

    /* -- leaf_decision: a leaf's packet toward another leaf that passed the
     *    checks (drop_reason zero, to_leaf): a destination id of MAX_LEAVES
     *    or above has no route; a probe takes the port of the path it names
     *    whenever that is up, excluded or not (that is how a recovery is
     *    seen), else NO_LIVE_PATH; a tagged packet does not transit
     *    (NO_ROUTE); in one pass, no candidate means no live path; else it
     *    goes out (on Tofino round once first), with the fabric tag when
     *    SGLB's feedback is on and the frame has room (else counted as
     *    skipped). Anything else matches no entry. -- */
    action probe_out() {
        ig_tm_md.ucast_egress_port = meta.probe_port;
        meta.forwarded = 1;
    }

    action leaf_out() {
        hdr.bridge.raise_ce = 1;
        meta.forwarded = 1;
        meta.leaf_out = 1;
#ifdef SGLB_TWO_PASS
        /* round once: the GLB engine in the recirculation port's egress,
         * then the pick in the second pass */
        hdr.bridge.to_engine = 1;
        ig_tm_md.ucast_egress_port = RECIRC_PORT;
        hdr.pick.dst_leaf = meta.dst_leaf;
        hdr.pick.lb_mode = meta.lb_mode;
        hdr.pick.new_flowlet = 0;
        hdr.pick.pad = 0;
#endif
    }

    action leaf_out_untagged() {
        leaf_out();
        meta.tag_event = EV_TAG_SKIPPED;
    }

    /* the tag's constants (tag_stamp copies the rest, a step later: one
     * action may use few sources per container) */
    action leaf_out_tagged() {
        leaf_out();
        meta.tag_opened = 1;
        hdr.tag.setValid();
        hdr.tag.version = SGLB_VERSION;
        hdr.tag.kind = TAG_KIND;
        hdr.tag.length = TAG_LENGTH;
        hdr.tag.ce = 0;
    }

    action no_decision() { }

/* passed the checks, toward a leaf whose id is in range */
#define LEAF_GOOD 0, 1, 0 &&& (16w0xFFFF ^ (MAX_LEAVES - 1))
    table leaf_decision {
        key = {
            meta.drop_reason: ternary; meta.to_leaf: ternary; meta.dst_leaf: ternary;
            meta.is_probe: ternary; meta.probe_up: ternary; hdr.tag.isValid(): ternary;
            meta.lowest_word[15:15]: ternary; meta.lb_mode: ternary;
            GLB.feedback: ternary @name("meta.feedback"); meta.frame_over: ternary;
        }
        actions = { drop_as; probe_out; leaf_out; leaf_out_untagged; leaf_out_tagged;
                    no_decision; }
        const entries = {
            (LEAF_GOOD, 1, 0, _, _, _, _, _): drop_as(DROP_NO_LIVE_PATH);
            (LEAF_GOOD, 1, _, _, _, _, _, _): probe_out();
            (LEAF_GOOD, _, _, true, _, _, _, _): drop_as(DROP_NO_ROUTE);
#ifndef SGLB_TWO_PASS
            /* no candidate (the lowest's valid bit clear; on Tofino the
             * second pass decides this) */
            (LEAF_GOOD, _, _, _, 0, _, _, _): drop_as(DROP_NO_LIVE_PATH);
#endif
            (LEAF_GOOD, _, _, _, _, MODE_SGLB, 1, 0): leaf_out_tagged();
            (LEAF_GOOD, _, _, _, _, MODE_SGLB, 1, _): leaf_out_untagged();
            (LEAF_GOOD, _, _, _, _, _, _, _): leaf_out();
            (0, 1, _, _, _, _, _, _, _, _): drop_as(DROP_NO_ROUTE);
        }
        const default_action = no_decision();
        size = 8;
    }
#undef LEAF_GOOD

    /* -- spine_member: the link a spine sends a packet down, of the one or two
     *    to its leaf (v1model order): both up (links_now zero) and two ports
     *    (down_x non-zero): SGLB, the flow's member (flow_member: 1 a, else
     *    b), ECMP or a probe (flow_member zero) by the hash (split_left
     *    non-zero: a); else a when it is up, else b when it is up; else none
     *    (NO_LIVE_PATH). -- */
    action member_a() {
        ig_tm_md.ucast_egress_port = meta.down_a;
        hdr.bridge.raise_ce = 1;
        meta.forwarded = 1;
    }

    action member_b() {
        ig_tm_md.ucast_egress_port = meta.down_b;
        hdr.bridge.raise_ce = 1;
        meta.forwarded = 1;
    }

    action no_member() {
        meta.drop_reason = DROP_NO_LIVE_PATH;
    }

    table spine_member {
        key = {
            meta.links_now: ternary; meta.down_x: ternary;
            meta.flow_member: ternary; meta.split_left: ternary;
        }
        actions = { member_a; member_b; no_member; }
        const entries = {
            (0, 0, _, _): member_a();       /* one port: the split is moot */
            (0, _, 1, _): member_a();       /* the flow's member */
            (0, _, 0, 0): member_b();       /* no flow: the hash */
            (0, _, 0, _): member_a();
            (0, _, _, _): member_b();
            (0 &&& 1, _, _, _): member_a();
            (0 &&& 2, _, _, _): member_b();
        }
        const default_action = no_member();
        size = 8;
    }
