"""Reconciliation: writes only what differs from what the switch holds, never wipes."""

from hypothesis import given, settings
from hypothesis import strategies as st
from syncmesh.core import SyncMeshCore
from syncmesh.linkstate import PortState, Version
from syncmesh.messages import Hello, LinkNotice
from syncmesh.sglb_mapping import (
    SGLB_TABLES,
    Identity,
    MulticastWrite,
    NoticeSeen,
    SwitchBook,
    TableWrite,
    V1ModelMapping,
    confirmed_writebacks,
    entities,
    entity_key,
    punted_notice,
    reconcile,
    switch_mac,
)

from fabricmodel import leaf_spine
from sglb.config import writeback

FAB = leaf_spine(3, 2, 2, 1, links_per_pair=2)
LEAF = entities(SyncMeshCore(FAB, "l1", 1).desired(), Identity(switch_mac(1)))
SPINE = entities(SyncMeshCore(FAB, "s1", 1).desired(), Identity(switch_mac(4)))
FOREIGN = TableWrite("some_other_table", (("k", 1),), "act", ())
CPU_ROUTE = TableWrite("ipv4_route", (("hdr.ipv4.dstAddr", (0x0A000001, 32)),), "to_cpu", ())


def apply(state: dict, plan) -> dict:
    state = dict(state)
    for e in plan.delete:
        del state[entity_key(e)]
    for e in plan.insert + plan.modify:
        state[entity_key(e)] = e
    return state


def tweak(e):
    if isinstance(e, MulticastWrite):
        return MulticastWrite(e.group_id, e.ports[:-1])
    params = tuple((k, (v + 1) % 2) if i == 0 else (k, v) for i, (k, v) in enumerate(e.params))
    return TableWrite(e.table, e.match, e.action, params) if params else \
        TableWrite(e.table, e.match, e.action + "_x", ())


@given(st.sampled_from([LEAF, SPINE]), st.data())
@settings(max_examples=150, deadline=None)
def test_plan_turns_any_drift_into_the_desired_state(desired, data):
    n = len(desired)
    drop = data.draw(st.sets(st.integers(0, n - 1)))
    change = data.draw(st.sets(st.integers(0, n - 1)))
    actual = [tweak(e) if i in change else e for i, e in enumerate(desired) if i not in drop]
    extras = data.draw(st.lists(st.sampled_from([FOREIGN, CPU_ROUTE]), unique=True))
    actual += extras
    plan = reconcile(desired, actual, SGLB_TABLES)
    after = apply({entity_key(e): e for e in actual}, plan)
    want = {entity_key(e): e for e in desired}
    if FOREIGN in extras:
        want[entity_key(FOREIGN)] = FOREIGN  # someone else's table: left alone
    assert after == want
    untouched = {entity_key(e) for e in actual} & {entity_key(e) for e in desired}
    written = {entity_key(e) for e in plan.insert + plan.modify + plan.delete}
    for key in untouched - written:
        assert dict(after)[key] in actual  # equal entries are not rewritten
    assert len(written) == len({entity_key(e) for e in desired if e not in actual}) + (
        CPU_ROUTE in extras)


def _profile(plan_or_list, dst: int) -> dict:
    ents = plan_or_list if isinstance(plan_or_list, list) else list(plan_or_list.modify)
    (prof,) = [e for e in ents if isinstance(e, TableWrite) and e.table == "dst_profile"
               and dict(e.match) == {"meta.dst_leaf": dst}]
    return dict(prof.params)


def test_book_writes_changes_only():
    core = SyncMeshCore(FAB, "l1", 1)
    core.start(0.0)
    book = SwitchBook(V1ModelMapping(Identity(switch_mac(1))))
    first = book.plan(core.desired())
    assert not first.delete and len(first.insert) + len(first.modify) == len(LEAF)
    book.commit(first)
    assert book.plan(core.desired()).empty
    # s1 loses both links to l3: only l1's profile for l3 changes
    core.on_hello("s1", Hello(5, 1), 0.0)
    states = (PortState("l3", 3, False, Version(9, 1), 1.0),
              PortState("l3", 4, False, Version(9, 2), 1.0))
    core.on_notice("s1", LinkNotice(states), 1.0)
    plan = book.plan(core.desired())
    assert not plan.insert and not plan.delete
    params = _profile(plan, 3)
    assert params["live_mask"] == 0b1100
    assert [params[f"ep{i}"] for i in range(4)] == [0] * 4   # no notice seen: nothing written back
    book.commit(plan)
    assert book.plan(core.desired()).empty


S1 = 4  # spine ids of FAB: s1 = 4, s2 = 5; l1's paths 0, 1 cross s1


def test_book_writes_back_a_notice_epoch_only_once_its_view_includes_it():
    """The double-failure race from the control plane's side: notices from s1 and
    s2 are punted; the core has heard only of s1's loss; s2's epoch stays
    unwritten, so the data plane's exclusion of s2 survives the write."""
    assert FAB.switch("s1").id == S1
    core = SyncMeshCore(FAB, "l1", 1)
    core.start(0.0)
    book = SwitchBook(V1ModelMapping(Identity(switch_mac(1))))
    book.commit(book.plan(core.desired()))
    book.note_notice(NoticeSeen(S1, 3, fail=True, epoch=12))
    book.note_notice(NoticeSeen(S1 + 1, 3, fail=True, epoch=40))
    book.note_notice(NoticeSeen(S1, 3, fail=False, epoch=11))       # an older copy: ignored
    assert book.plan(core.desired()).empty                           # nothing confirmed yet
    core.on_hello("s1", Hello(5, 1), 0.0)
    core.on_notice("s1", LinkNotice((PortState("l3", 3, False, Version(9, 1), 1.0),
                                     PortState("l3", 4, False, Version(9, 2), 1.0))), 1.0)
    plan = book.plan(core.desired())
    params = _profile(plan, 3)
    assert params["live_mask"] == 0b1100
    assert [params[f"ep{i}"] for i in range(4)] == [writeback(12)] * 2 + [0] * 2
    book.commit(plan)
    # the link comes back, the RECOVER notice (13) is punted before the core hears of it
    book.note_notice(NoticeSeen(S1, 3, fail=False, epoch=13))
    assert book.plan(core.desired()).empty                           # still 12: notice rules
    core.on_notice("s1", LinkNotice((PortState("l3", 3, True, Version(9, 3), 2.0),)), 2.0)
    params = _profile(book.plan(core.desired()), 3)
    assert params["live_mask"] == 0b1111
    assert [params[f"ep{i}"] for i in range(2)] == [writeback(13)] * 2
    assert confirmed_writebacks(core.desired(), book.seen, {(S1, 3): 20}) == {(S1, 3): 20}


def test_punted_notices_are_decoded_and_anything_else_is_not():
    frame = bytes.fromhex("ffffffffffff" "020000000065" "88b6" "01010c00" "0004" "0003" "0000000c")
    assert punted_notice(3, frame) == NoticeSeen(4, 3, True, 12)
    assert punted_notice(2, frame) is None                 # a probe reply's reason
    assert punted_notice(3, frame[:-1]) is None
    assert punted_notice(3, frame[:15] + b"\x05" + frame[16:]) is None
    assert punted_notice(3, frame[:12] + b"\x08\x00" + frame[14:]) is None


def test_book_adopts_what_a_restarted_switch_holds():
    core = SyncMeshCore(FAB, "l1", 1)
    book = SwitchBook(V1ModelMapping(Identity(switch_mac(1))))
    desired = entities(core.desired(), Identity(switch_mac(1)), {(S1, 3): 7, (S1, 2): 5})
    # the switch kept most entries (epochs written back), lost one route, holds a stale one
    lost = next(e for e in desired if isinstance(e, TableWrite) and e.table == "ipv4_route")
    stale = TableWrite("ipv4_route", (("hdr.ipv4.dstAddr", (0x0B000000, 24)),), "to_leaf",
                       (("leaf", 9),))
    book.adopt([e for e in desired if e != lost] + [stale])
    assert book.writebacks == {(S1, 3): 7, (S1, 2): 5}
    # a punted notice older than what is written back changes nothing
    book.note_notice(NoticeSeen(S1, 3, fail=False, epoch=6))
    plan = book.plan(core.desired())
    assert plan.insert == (lost,) and plan.delete == (stale,) and plan.modify == ()
    book.commit(plan)
    assert book.writebacks == {(S1, 3): 7, (S1, 2): 5}   # never moved back


def test_congestion_only_update_keeps_the_written_back_epochs():
    from syncmesh.switchops import RemoteCongestion

    core = SyncMeshCore(FAB, "l1", 1)
    core.start(0.0)
    book = SwitchBook(V1ModelMapping(Identity(switch_mac(1))))
    book.adopt([])
    book.writebacks = {(S1, 3): 9}
    book.commit(book.plan(core.desired()))
    desired = dict(core.desired())
    congested = RemoteCongestion(3, 0, 5)
    desired[congested.key] = congested
    plan = book.plan(desired)
    (prof,) = plan.modify
    params = dict(prof.params)
    assert params["rq0"] == 5 and params["ep0"] == params["ep1"] == writeback(9)
