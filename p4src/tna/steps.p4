/* steps.p4 (TNA): the access tables of the registers and the other
 * one-step tables of SglbIngress (the engine's are engine.p4's). Included
 * inside the body of SglbIngress after its tables: the actions read `meta`
 * and `hdr` of that control. Why steps are tables: bf-p4c runs a P4 action
 * in one stage and merges straight-line statements into one action, so
 * dependent operations go to successive tables; saturated differences are
 * computed here because a gateway cannot compute them. */
    /* the default of the access tables: an index from the PHV needs the
     * hash unit, which a default action cannot use */
    action access_none() { }

    /* -- notice_seen: marked by an offer, read by a write-back -- */
    action seen_mark() { meta.notice_seen = notice_seen_mark.execute(meta.notice_index); }
    action seen_read() { meta.notice_seen = notice_seen_get.execute(meta.notice_index); }
    @hidden table notice_seen_access {
        key = { meta.notice_ok: exact; hdr.notice.kind: ternary; }
        actions = { seen_mark; seen_read; access_none; }
        const entries = { (1, NOTICE_WRITEBACK): seen_read(); (1, _): seen_mark(); }
        const default_action = access_none();
        size = 2;
    }

    /* -- register access tables: each register is executed by one table
     *    (regs.p4), the operation chosen by its key (0, no entry: read) -- */
    SGLB_FOR_EACH_WORD(SGLB_STATE_WORD_ACCESS)

    action npaths_read() { PICK.fb_npaths = fb_npaths_get.execute(meta.dst_leaf); }
    action npaths_store() { fb_npaths_put.execute(meta.dst_leaf); }
    SGLB_ACCESS_TABLE(npaths_access, meta.rx_op: exact;, npaths_store;,
                      1: npaths_store();, npaths_read)

    action rx_level_read() { meta.fb_word = rx_level_get.execute(meta.rx_index); }
    action rx_level_store() { rx_level_put.execute(meta.rx_index); }
    action rx_owd_read() { meta.fb_owd = rx_owd_get.execute(meta.rx_index); }
    action rx_owd_store() { rx_owd_put.execute(meta.rx_index); }
#ifdef SGLB_TWO_PASS
    /* On Tofino the first pass stores a received tag's metric and the
     * second reads the one a tag returns: a table in each pass's branch
     * (exclusive, so bf-p4c puts both in the register's stage). */
    SGLB_ONE_OP_TABLE(rx_level_access, meta.rx_op, rx_level_store)
    SGLB_ONE_OP_TABLE(rx_owd_access, meta.rx_op, rx_owd_store)
    SGLB_ONE_OP_TABLE(rx_level_fetch, meta.fb_try, rx_level_read)
    SGLB_ONE_OP_TABLE(rx_owd_fetch, meta.fb_try, rx_owd_read)
#else
    SGLB_ACCESS_TABLE(rx_level_access, meta.rx_op: exact;, rx_level_store;,
                      1: rx_level_store();, rx_level_read)
    SGLB_ACCESS_TABLE(rx_owd_access, meta.rx_op: exact;, rx_owd_store;,
                      1: rx_owd_store();, rx_owd_read)
#endif

    /* -- spine_flow on an SGLB spine (v1model order): a flow idle
     *    gap_unknown or never seen (spine_left zero) takes the member its draw
     *    gives; a seen one keeps its member, except a (never kept when its
     *    share is 0). The member written is the one flow_member answers. -- */
    action flow_kept() { meta.flow_member = member_keep.execute(meta.spine_flow_index); }
    action flow_to_a() { meta.flow_member = member_give_a.execute(meta.spine_flow_index); }
    action flow_to_b() { meta.flow_member = member_give_b.execute(meta.spine_flow_index); }
    table spine_flow_access {
        key = { meta.spine_left: ternary; meta.draw_left: ternary; meta.share_a: ternary; }
        actions = { flow_kept; flow_to_a; flow_to_b; access_none; }
        const entries = {
            (0, 0, _): flow_to_b();
            (0, _, _): flow_to_a();
            (_, _, 0): flow_to_b();
            (_, _, _): flow_kept();
        }
        const default_action = access_none();
        size = 4;
    }

    action links_read() { meta.links_now = leaf_links_get.execute(meta.dst_leaf); }
    action links_down() { meta.links_was = leaf_links_down.execute(meta.dst_leaf); }
    action links_up() { meta.links_was = leaf_links_up.execute(meta.dst_leaf); }
    SGLB_ACCESS_TABLE(links_access, meta.links_op: exact;, links_down; links_up;,
                      OP_DOWN: links_down(); OP_UP: links_up();, links_read)

    /* Saturated differences in step actions: a gateway cannot compute them
     * (the front end would fold a plain statement into the condition). */
    action fb_freshness() {
        meta.fb_fresh_left = meta.fb_age |-| meta.fb_fresh;
        meta.fb_over = meta.fb_path |-| PICK.fb_npaths;
    }

    action key_of_fail() {
        meta.notice_key = fail_key_hash.get({ hdr.notice.epoch[29:0], 2w0b11 });
        meta.nb_sx = meta.nb_id ^ hdr.notice.spine_id;
    }

    action key_of_other() {
        meta.notice_key = other_key_hash.get({ hdr.notice.epoch[29:0], 2w0b10 });
        meta.nb_sx = meta.nb_id ^ hdr.notice.spine_id;
    }

    /* an IPv4 packet longer than tag_frame_max less the Ethernet header and
     * the tag is sent untagged (a step: an action parameter less a constant
     * would need the constant in the PHV first, a stage before
     * switch_config) */
    action room_of() {
        meta.tag_room = meta.tag_room |-| (14 + (bit<16>)TAG_LENGTH);
    }

    action frame_overrun() {
        meta.frame_over = hdr.ipv4.totalLen |-| meta.tag_room;
    }

    action tag_span_of() {
        meta.tag_span = hdr.tag.npaths |-| hdr.tag.path;
        meta.nb_x = meta.nb_id ^ hdr.tag.src_leaf;
    }

    action spine_split() {
        meta.split_left = meta.share_a |-| meta.split;
        meta.down_x = meta.down_a ^ meta.down_b;
    }

    /* SGLB spine: time left before the flow's member may change (0: draw it),
     * and whether the draw falls within share_a (non-zero: link a) */
    action spine_age() {
        meta.spine_left = GLB.gap_unknown |-| meta.spine_idle;
    }

    action spine_draw() {
        meta.draw_left = meta.share_a |-| meta.draw_point[15:8];
    }

    action lowest_number() {
        meta.lowest_chosen = chosen_of_lowest.get({ meta.lowest_word[14:9] });
    }

    action fb_received() {
        meta.tag_event = EV_FEEDBACK_RECEIVED;
    }


    /* No fresh metric to return (fb_level_out returns one). */
    action tag_no_feedback() {
        hdr.tag.fb_owd = 0;
        hdr.tag.fb_path = 0;
        hdr.tag.fb_level = FB_NONE;
    }

    /* The tag's fields copied from the PHV (leaf_decision sets its
     * constants: one action may use few sources per container); kept_alive
     * writes its path. */
    action tag_copies() {
        hdr.tag.npaths = meta.path_count;
        hdr.tag.src_leaf = meta.switch_id;
        hdr.tag.ts = meta.now;
        hdr.tag.next_type = hdr.ethernet.etherType;
        hdr.ethernet.etherType = ETHERTYPE_SGLB;
    }

    /* -- clock: the feedback units (an identity hash: a slice of the
     *    timestamp at another offset; the generations are feedback.p4's) -- */
    action read_clock_fb() {
        meta.now_fb = coarse_fb_time.get({ ig_prsr_md.global_tstamp[FB_TIME_SHIFT + 27:FB_TIME_SHIFT] });
    }

    /* -- fb_level_out: the metric a tag returns: fb_path, the level from
     *    rx_level's word, the delay from rx_owd; only when the cursor named a
     *    path (fb_try) whose word is valid (bit 31), within the paths the
     *    destination has (fb_over zero) and fresh (fb_fresh_left zero): the
     *    conditions are keys, so no step decides them beforehand -- */
    action put_fb_level(bit<8> level) {
        hdr.tag.fb_level = level;
        hdr.tag.fb_path = meta.fb_path;
        hdr.tag.fb_owd = meta.fb_owd;
        meta.tag_event = EV_FEEDBACK_SENT;
    }

#define SGLB_FB_OUT(L) (1, 8 + L, 0 &&& 0xFF, 0 &&& 0xFFFFFFF) : put_fb_level(L);
    table fb_level_out {
        key = {
            meta.fb_try: exact; meta.fb_word[31:28]: exact;
            meta.fb_over: ternary; meta.fb_fresh_left: ternary;
        }
        actions = { put_fb_level; tag_no_feedback; }
        const entries = {
            SGLB_FB_OUT(0) SGLB_FB_OUT(1) SGLB_FB_OUT(2) SGLB_FB_OUT(3)
            SGLB_FB_OUT(4) SGLB_FB_OUT(5) SGLB_FB_OUT(6) SGLB_FB_OUT(7)
        }
        const default_action = tag_no_feedback();
        size = 8;
    }
#undef SGLB_FB_OUT

    SGLB_STEP_TABLE(fb_step, fb_freshness)
    SGLB_STEP_TABLE(tag_step, tag_span_of)
    SGLB_STEP_TABLE(room_step, room_of)
    SGLB_STEP_TABLE(frame_step, frame_overrun)
    SGLB_STEP_TABLE(notice_fail_key, key_of_fail)
    SGLB_STEP_TABLE(notice_other_key, key_of_other)
    SGLB_STEP_TABLE(spine_step, spine_split)
    SGLB_STEP_TABLE(spine_age_step, spine_age)
    SGLB_STEP_TABLE(spine_draw_step, spine_draw)
    SGLB_STEP_TABLE(clock_fb, read_clock_fb)
    SGLB_STEP_TABLE(lowest_step, lowest_number)
    SGLB_STEP_TABLE(fb_received_step, fb_received)
    SGLB_STEP_TABLE(tag_stamp, tag_copies)
