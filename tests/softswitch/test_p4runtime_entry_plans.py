"""The short path for table-entry updates (entry_plans.py) against the general path.

Two devices run the same program; on one the short path is switched off. Random
updates, valid and invalid (wrong ids, kinds, widths, prefixes, masks, ranges,
priorities, actions and params, extra fields), go to both: every update must get the
same result (status code and message) and the tables must read back the same.
"""

from pathlib import Path

import pytest
from finsy.proto import p4r
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from softswitch.p4info import p4info_from_program
from softswitch.p4runtime.device import Device
from softswitch.p4runtime.entry_plans import TablePlan, plan_for
from softswitch.p4runtime.pipeline_loader import device_config_from_file, load_program

PROG = Path(__file__).with_name("test_p4runtime_prog.p4")
A = p4r.SetForwardingPipelineConfigRequest
U = p4r.Update


@pytest.fixture(scope="module")
def program():
    blob = device_config_from_file(PROG)
    prog = load_program(blob)
    return prog, p4info_from_program(prog), blob


def fresh_device(program, short_path: bool) -> Device:
    prog, p4info, blob = program
    device = Device(device_id=1, cpu_port=255, load_program=lambda _config: prog)
    device.set_pipeline(A.VERIFY_AND_COMMIT,
                        p4r.ForwardingPipelineConfig(p4info=p4info, p4_device_config=blob))
    if not short_path:
        for table_id in device.pipeline.schema.tables:
            device.pipeline.table_plans[table_id] = None
    return device


def ids(program):
    p4info = program[1]
    tables = {t.preamble.name.rsplit(".", 1)[-1]: t.preamble.id for t in p4info.tables}
    actions = {a.preamble.name.rsplit(".", 1)[-1]: a.preamble.id for a in p4info.actions}
    return tables, actions


# small pools, so that keys collide (ALREADY_EXISTS, MODIFY and DELETE of existing entries)
VALUES = [b"", b"\x00", b"\x01", b"\x0a", b"\x0a\x00\x00\x01", b"\x0a\x00\x00\x00", b"\xff\xff\xff\xff",
          b"\x00\x0a\x00\x00\x01", b"\x01\xff", b"\x02\x00", b"\x02\x00\x00\x00\x00\x01",
          b"\x00\x00\x00\x00\x00\x00\x01", b"\xff\x00\x00\x00", b"\x06", b"\x11"]
value = st.sampled_from(VALUES)


@st.composite
def field_match(draw, field_ids):
    fm = p4r.FieldMatch(field_id=draw(field_ids))
    kind = draw(st.sampled_from(["exact", "lpm", "ternary", "range", "optional", "none"]))
    if kind == "exact":
        fm.exact.value = draw(value)
    elif kind == "lpm":
        fm.lpm.value = draw(value)
        fm.lpm.prefix_len = draw(st.sampled_from([0, 1, 8, 24, 31, 32, 33, 48]))
    elif kind == "ternary":
        fm.ternary.value = draw(value)
        fm.ternary.mask = draw(value)
    elif kind == "range":
        fm.range.low = draw(value)
        fm.range.high = draw(value)
    elif kind == "optional":
        fm.optional.value = draw(value)
    return fm


@st.composite
def good_match(draw, table):
    """Matches of the right ids and kinds (values still random), so that many are valid."""
    if table == "ipv4_lpm":
        v, plen = draw(st.sampled_from([(b"\x0a\x00\x00\x01", 32), (b"\x0a\x00\x00\x00", 24),
                                        (b"\x0b\x00\x00\x00", 8), (b"\x0a\x00\x00\x01", 24)]))
        return [p4r.FieldMatch(field_id=1, lpm=p4r.FieldMatch.LPM(value=v, prefix_len=plen))]
    if table in ("smac", "dmac"):
        return [p4r.FieldMatch(field_id=1, exact=p4r.FieldMatch.Exact(value=draw(value)))]
    out = []
    if draw(st.booleans()):
        out.append(p4r.FieldMatch(field_id=1, ternary=p4r.FieldMatch.Ternary(
            value=b"\x0a\x00\x00\x00", mask=draw(st.sampled_from([b"\xff\x00\x00\x00", b"\x0f\x00\x00\x00",
                                                                  b"\xff"])))))
    if draw(st.booleans()):
        out.append(p4r.FieldMatch(field_id=2, range=p4r.FieldMatch.Range(
            low=draw(st.sampled_from([b"\x06", b"\x00"])), high=b"\x11")))
    if draw(st.booleans()):
        out.append(p4r.FieldMatch(field_id=3, optional=p4r.FieldMatch.Optional(
            value=draw(st.sampled_from([b"\x01", b"\x01\xff", b"\x00\x01", b"\x02\x00"])))))
    return draw(st.permutations(out)) if draw(st.booleans()) else out


TABLE_ACTIONS = {"ipv4_lpm": ["set_nhop", "drop"], "acl": ["to_cpu", "drop"], "smac": ["NoAction"],
                 "dmac": ["forward", "flood"]}


@st.composite
def action(draw, actions, table):
    if table in TABLE_ACTIONS and draw(st.integers(0, 3)):
        name = draw(st.sampled_from(TABLE_ACTIONS[table]))
    else:
        name = draw(st.sampled_from(["set_nhop", "forward", "drop", "learn", "to_cpu", "flood",
                                     "NoAction", "unknown"]))
    act = p4r.Action(action_id=actions.get(name, 0x01000001))
    params = {"set_nhop": [(1, b"\x02\x00\x00\x00\x00\x01"), (2, b"\x01")], "forward": [(1, b"\x01")],
              "flood": [(1, b"\x00\x07")]}.get(name, [])
    shape = draw(st.sampled_from(["ok"] * 6 + ["missing", "extra", "swapped", "random"]))
    if shape == "missing":
        params = params[:-1]
    elif shape == "extra":
        params = params + [(9, b"\x01")]
    elif shape == "swapped":
        params = list(reversed(params))
    elif shape == "random":
        params = [(pid, draw(value)) for pid, _v in params]
    for pid, v in params:
        act.params.add(param_id=pid, value=v)
    return act


@st.composite
def update(draw, program):
    tables, actions = ids(program)
    name = draw(st.sampled_from(["ipv4_lpm"] * 3 + ["acl"] * 3 + ["smac", "dmac", "dmac", "port_map",
                                 "ecmp", "unknown"]))
    e = p4r.TableEntry(table_id=tables.get(name, 0x02000001))
    if draw(st.integers(0, 4)):
        e.match.extend(draw(good_match(name)))
    else:
        e.match.extend(draw(st.lists(field_match(st.sampled_from([1, 2, 3, 4])), max_size=4)))
    choice = draw(st.integers(0, 9))
    if choice < 8:
        e.action.action.CopyFrom(draw(action(actions, name)))
    elif choice == 8:
        e.action.action_profile_member_id = 1
    if draw(st.integers(0, 3)):
        e.priority = 10 if name == "acl" else 0
    else:
        e.priority = draw(st.sampled_from([0, 1, 10, -1, (1 << 31) - 1]))
    if draw(st.integers(0, 9)) == 0:
        extra = draw(st.sampled_from(["default", "idle", "counter", "meter", "metadata", "metadata"]))
        if extra == "default":
            e.is_default_action = True
        elif extra == "idle":
            e.idle_timeout_ns = 10
        elif extra == "counter":
            e.counter_data.packet_count = 3
        elif extra == "meter":
            e.meter_config.cir = 10
            e.meter_config.cburst = 10
            e.meter_config.pir = 20
            e.meter_config.pburst = 20
        else:
            e.metadata = draw(st.sampled_from([b"cookie", b"\x00"]))
    op = draw(st.sampled_from([U.INSERT] * 4 + [U.MODIFY, U.MODIFY, U.DELETE, U.DELETE, U.UNSPECIFIED]))
    return p4r.Update(type=op, entity=p4r.Entity(table_entry=e))


def outcome(device: Device, u: p4r.Update):
    result = device.write([u]).results[0]
    return None if result is None else (result.code, result.message)


def table_state(device: Device, program) -> list[bytes]:
    tables, _ = ids(program)
    query = [p4r.Entity(table_entry=p4r.TableEntry(table_id=tid)) for tid in tables.values()]
    return sorted(e.SerializeToString(deterministic=True) for e in device.read(query))


TAKEN = {"short": 0, "general": 0}


@pytest.fixture(scope="module", autouse=True)
def count_short_path():
    """Count the updates the short path applied, to check that it was exercised."""
    original = TablePlan._make_apply

    def counting(self):
        apply = original(self)

        def counted(op, e):
            applied = apply(op, e)
            TAKEN["short" if applied else "general"] += 1
            return applied

        return counted

    TablePlan._make_apply = counting
    yield
    TablePlan._make_apply = original


# derandomize: the same 60 examples every run, so that test_both_paths_were_exercised
# counts the same updates each time (with fresh random draws the short path once took only
# 38 of 629 updates and that test failed by chance)
@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_short_path_and_general_path_agree(program, data):
    short, general = fresh_device(program, True), fresh_device(program, False)
    updates = data.draw(st.lists(update(program), min_size=10, max_size=40))
    for u in updates:
        assert outcome(short, u) == outcome(general, u), u
    assert table_state(short, program) == table_state(general, program)
    assert all(plan is None for plan in general.pipeline.table_plans.values())


def test_both_paths_were_exercised():
    """Runs after the test above (file order): many updates took each path."""
    assert TAKEN["short"] >= 50 and TAKEN["general"] >= 50, TAKEN


def test_the_short_path_is_taken_for_the_usual_updates(program):
    """The plans exist where they should, so the agreement above is not vacuous."""
    device = fresh_device(program, True)
    tables, actions = ids(program)
    p = device.pipeline
    assert plan_for(p, tables["ipv4_lpm"]) is not None and plan_for(p, tables["acl"]) is not None
    assert plan_for(p, tables["ecmp"]) is None  # action profile
    assert plan_for(p, tables["port_map"]) is None  # const entries
    lpm = p4r.TableEntry(table_id=tables["ipv4_lpm"], match=[p4r.FieldMatch(
        field_id=1, lpm=p4r.FieldMatch.LPM(value=b"\x0a\x00\x00\x01", prefix_len=32))])
    lpm.action.action.CopyFrom(p4r.Action(action_id=actions["set_nhop"], params=[
        p4r.Action.Param(param_id=1, value=b"\x02\x00\x00\x00\x00\x01"),
        p4r.Action.Param(param_id=2, value=b"\x02")]))
    plan = plan_for(p, tables["ipv4_lpm"])
    assert plan.apply(U.INSERT, lpm)
    assert not plan.apply(U.INSERT, lpm)  # exists: left to the general path (ALREADY_EXISTS)
    assert plan.apply(U.MODIFY, lpm) and plan.apply(U.DELETE, lpm)
    assert not plan.apply(U.DELETE, lpm)  # missing: NOT_FOUND from the general path
