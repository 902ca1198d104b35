"""Reconciliation: writes only what differs from what the switch holds, never wipes."""

from hypothesis import given, settings
from hypothesis import strategies as st
from syncmesh.core import SyncMeshCore
from syncmesh.linkstate import PortState, Version
from syncmesh.messages import Hello, LinkNotice
from syncmesh.sglb_mapping import (
    Identity,
    MulticastWrite,
    SwitchBook,
    TableWrite,
    entities,
    entity_key,
    reconcile,
    switch_mac,
)

from fabricmodel import leaf_spine

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
    plan = reconcile(desired, actual)
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


def test_book_writes_changes_only_and_bumps_profile_generations():
    core = SyncMeshCore(FAB, "l1", 1)
    core.start(0.0)
    book = SwitchBook(Identity(switch_mac(1)))
    first = book.plan(core.desired())
    assert not first.delete and len(first.insert) + len(first.modify) == len(LEAF)
    book.commit(first)
    assert dict(first.generations) == {2: 1, 3: 1}
    assert book.plan(core.desired()).empty
    # s1 loses both links to l3: only l1's profile for l3 changes, with a new generation
    core.on_hello("s1", Hello(5, 1), 0.0)
    states = (PortState("l3", 3, False, Version(9, 1), 1.0),
              PortState("l3", 4, False, Version(9, 2), 1.0))
    core.on_notice("s1", LinkNotice(states), 1.0)
    plan = book.plan(core.desired())
    assert not plan.insert and not plan.delete
    (prof,) = plan.modify
    assert prof.table == "dst_profile" and dict(prof.match) == {"meta.dst_leaf": 3}
    params = dict(prof.params)
    assert params["gen"] == 2 and params["live_mask"] == 0b1100
    book.commit(plan)
    assert book.plan(core.desired()).empty


def test_book_adopts_what_a_restarted_switch_holds():
    core = SyncMeshCore(FAB, "l1", 1)
    book = SwitchBook(Identity(switch_mac(1)))
    desired = entities(core.desired(), Identity(switch_mac(1)), {2: 7, 3: 7})
    # the switch kept most entries (gen 7), lost one route and holds a stale extra route
    lost = next(e for e in desired if isinstance(e, TableWrite) and e.table == "ipv4_route")
    stale = TableWrite("ipv4_route", (("hdr.ipv4.dstAddr", (0x0B000000, 24)),), "to_leaf",
                       (("leaf", 9),))
    book.adopt([e for e in desired if e != lost] + [stale])
    plan = book.plan(core.desired())
    assert plan.insert == (lost,) and plan.delete == (stale,) and plan.modify == ()
    book.commit(plan)
    assert book.generations == {2: 7, 3: 7}  # unchanged profiles keep their generation


def test_congestion_only_update_keeps_the_profile_generation():
    """A new generation makes the leaf forget notice exclusions: congestion alone must not bump it."""
    from syncmesh.switchops import RemoteCongestion

    core = SyncMeshCore(FAB, "l1", 1)
    core.start(0.0)
    book = SwitchBook(Identity(switch_mac(1)))
    book.commit(book.plan(core.desired()))
    desired = dict(core.desired())
    congested = RemoteCongestion(3, 0, 5)
    desired[congested.key] = congested
    plan = book.plan(desired)
    (prof,) = plan.modify
    params = dict(prof.params)
    assert params["rq0"] == 5 and params["gen"] == 1
