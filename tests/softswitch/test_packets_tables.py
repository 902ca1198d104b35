"""Table features through the Switch API (docs/softswitch-api.md), checked with packets.

Program: stf/tables_ext.p4 (plus tables.p4 and names.p4 for const tables,
default actions and control-plane names).  Header h = kind k_range k_opt
k_tern sel flow(32) r_range r_tern r_prof color vs_hit, 14 bytes, then a
payload.
Priorities follow P4Runtime: the larger number wins (simple_switch.md, "Range
tables" / "Ternary tables").
"""

from __future__ import annotations

import struct

import pytest
from sst_packets import Expected, program, verify_packets

PAYLOAD = b"\xca\xfe"
FMT = ">BBBBBIBBBBB"
FIELDS = ("kind", "k_range", "k_opt", "k_tern", "sel", "flow",
          "r_range", "r_tern", "r_prof", "color", "vs_hit")


def pkt(**fields: int) -> bytes:
    """The test header with the given fields (others 0) plus the payload."""
    return struct.pack(FMT, *(fields.get(name, 0) for name in FIELDS)) + PAYLOAD


def parse(data: bytes) -> dict[str, int]:
    """Field values of an output packet."""
    size = struct.calcsize(FMT)
    assert data[size:] == PAYLOAD, f"payload changed: {data.hex()}"
    return dict(zip(FIELDS, struct.unpack(FMT, data[:size]), strict=True))


@pytest.fixture(scope="module")
def prog():
    return program("tables_ext.p4")


@pytest.fixture
def clock():
    return [0]


@pytest.fixture
def sw(prog, clock):
    from softswitch import Switch

    return Switch(prog, clock=lambda: clock[0])


def one_output(sw, data: bytes, port: int | None = 1) -> dict[str, int]:
    """Send `data` on port 0, expect exactly one packet (on `port` unless None), return its fields."""
    outs = sw.process_packet(0, data)
    assert len(outs) == 1 and port in (None, outs[0].port), \
        f"outputs: {[(o.port, bytes(o.data).hex()) for o in outs]}"
    return parse(bytes(outs[0].data))


def test_range_and_optional_keys_highest_priority_wins(sw) -> None:
    from softswitch import Optional, Range

    sw.table_add("t_range", [Range(10, 20), Optional(None)], "set_range", [1], priority=10)
    sw.table_add("t_range", [Range(15, 30), Optional(7)], "set_range", [2], priority=20)
    sw.table_add("t_range", [Range(0, 255), Optional(None)], "set_range", [3], priority=1)
    assert one_output(sw, pkt(k_range=12, k_opt=7))["r_range"] == 1
    assert one_output(sw, pkt(k_range=16, k_opt=7))["r_range"] == 2
    assert one_output(sw, pkt(k_range=16, k_opt=8))["r_range"] == 1
    assert one_output(sw, pkt(k_range=20, k_opt=7))["r_range"] == 2   # range bounds inclusive
    assert one_output(sw, pkt(k_range=31, k_opt=7))["r_range"] == 3
    assert one_output(sw, pkt(k_range=255, k_opt=0))["r_range"] == 3


def test_ternary_priorities_and_delete(sw) -> None:
    from softswitch import Ternary

    sw.table_add("t_tern", [Ternary(0x10, 0xF0)], "set_tern", [0x0A], priority=5)
    exact = sw.table_add("t_tern", [Ternary(0x12, 0xFF)], "set_tern", [0x0B], priority=7)
    sw.table_add("t_tern", [Ternary(0x00, 0x00)], "set_tern", [0x0C], priority=1)
    assert one_output(sw, pkt(k_tern=0x12))["r_tern"] == 0x0B
    assert one_output(sw, pkt(k_tern=0x13))["r_tern"] == 0x0A
    assert one_output(sw, pkt(k_tern=0x22))["r_tern"] == 0x0C
    sw.table_delete("t_tern", exact)
    assert one_output(sw, pkt(k_tern=0x12))["r_tern"] == 0x0A
    assert len(sw.table_entries("t_tern")) == 2


def test_lower_priority_entry_added_later_does_not_win(sw) -> None:
    from softswitch import Ternary

    sw.table_add("t_tern", [Ternary(0x00, 0x00)], "set_tern", [0x0C], priority=100)
    sw.table_add("t_tern", [Ternary(0x12, 0xFF)], "set_tern", [0x0B], priority=2)
    assert one_output(sw, pkt(k_tern=0x12))["r_tern"] == 0x0C


def test_action_profile_members(sw) -> None:
    from softswitch import Exact, SwitchError

    sw.ap_member_add("prof", 1, "set_prof", [0x11, 2])
    sw.ap_member_add("prof", 2, "set_prof", [0x22, 3])
    sw.table_add_indirect("t_prof", [Exact(5)], member=1)
    sw.table_add_indirect("t_prof", [Exact(6)], member=2)
    assert one_output(sw, pkt(sel=5), port=2)["r_prof"] == 0x11
    assert one_output(sw, pkt(sel=6), port=3)["r_prof"] == 0x22
    # modifying the member changes every entry that points at it
    sw.ap_member_modify("prof", 1, "set_prof", [0x33, 4])
    assert one_output(sw, pkt(sel=5), port=4)["r_prof"] == 0x33
    # a member still referenced by an entry cannot go; nothing changes
    with pytest.raises(SwitchError):
        sw.ap_member_delete("prof", 2)
    assert one_output(sw, pkt(sel=6), port=3)["r_prof"] == 0x22
    # an entry pointing at a member that does not exist is refused
    with pytest.raises(SwitchError):
        sw.table_add_indirect("t_prof", [Exact(7)], member=99)
    assert len(sw.table_entries("t_prof")) == 2
    assert one_output(sw, pkt(sel=7), port=1)["r_prof"] == 0   # miss: no default action data


def test_action_selector_spreads_flows_by_hash(sw) -> None:
    """identity hash over flow: member = group[flow mod group size] (BMv2 action selector)."""
    from softswitch import Exact

    for m in (1, 2, 3):
        sw.ap_member_add("ecmp_sel", m, "set_prof", [m, 10 + m])
    sw.ap_group_add("ecmp_sel", 10, [1, 2, 3])
    sw.table_add_indirect("t_selector", [Exact(0x80)], group=10)

    def choice(flow: int) -> int:
        outs = sw.process_packet(0, pkt(sel=0x80, flow=flow))
        assert len(outs) == 1
        fields = parse(bytes(outs[0].data))
        assert outs[0].port == 10 + fields["r_prof"], "port and action data from one member"
        return fields["r_prof"]

    first = [choice(f) for f in range(12)]
    assert sorted(set(first[:3])) == [1, 2, 3], f"flows 0..2 must use three members: {first}"
    assert all(first[f] == first[f % 3] for f in range(12)), f"not flow mod 3: {first}"
    assert [choice(f) for f in range(12)] == first, "the same flow must stay on its member"
    # shrink the group: two members, flow mod 2
    sw.ap_group_modify("ecmp_sel", 10, [1, 3])
    second = [choice(f) for f in range(8)]
    assert set(second) == {1, 3}
    assert all(second[f] == second[f % 2] for f in range(8)), second


def test_direct_counter_counts_hits_only(sw) -> None:
    from softswitch import Exact

    handle = sw.table_add("t_counted", [Exact(0x21)], "counted")
    data = pkt(k_tern=0x21)
    for _ in range(3):
        one_output(sw, data)
    one_output(sw, pkt(k_tern=0x22))
    assert sw.direct_counter_read("t_counted", handle) == (3, 3 * len(data))
    sw.direct_counter_write("t_counted", handle, 0, 0)
    one_output(sw, data)
    assert sw.direct_counter_read("t_counted", handle) == (1, len(data))


def test_direct_meter_colours(sw, clock) -> None:
    """trTCM (RFC 2698), packets meter, CBS 1, PBS 2, clock stopped: GREEN YELLOW RED."""
    from softswitch import Exact

    handle = sw.table_add("t_metered", [Exact(0x31)], "metered")
    other = sw.table_add("t_metered", [Exact(0x32)], "metered")
    sw.direct_meter_set("t_metered", handle, 1, 1, 2, 2)
    colours = [one_output(sw, pkt(k_opt=0x31))["color"] for _ in range(4)]
    assert colours == [0, 1, 2, 2]
    # one second later both buckets are full again
    clock[0] += 1_000_000
    assert one_output(sw, pkt(k_opt=0x31))["color"] == 0
    # an entry whose meter was never configured is always GREEN
    assert [one_output(sw, pkt(k_opt=0x32))["color"] for _ in range(5)] == [0] * 5
    assert other != handle


def test_parser_value_set(sw) -> None:
    """Empty value set: no match.  Entries are written through the Switch API."""
    assert one_output(sw, pkt(kind=0x42))["vs_hit"] == 0
    sw.value_set_add("kinds", 0x42)
    assert one_output(sw, pkt(kind=0x42))["vs_hit"] == 1
    assert one_output(sw, pkt(kind=0x43))["vs_hit"] == 0


def test_bad_table_writes_are_refused_and_change_nothing(sw) -> None:
    from softswitch import Exact, Lpm, SwitchError, Ternary

    sw.table_add("t_tern", [Ternary(0x10, 0xF0)], "set_tern", [0x0A], priority=5)
    before = sw.table_entries("t_tern")
    bad_calls = [
        ("NOT_FOUND", lambda: sw.table_add("no_such_table", [Exact(1)], "set_tern", [1])),
        ("NOT_FOUND", lambda: sw.table_add("t_tern", [Ternary(1, 0xFF)], "no_such_action", [], priority=1)),
        ("INVALID_ARGUMENT", lambda: sw.table_add("t_tern", [Ternary(0x100, 0xFF)], "set_tern", [1], priority=1)),
        ("INVALID_ARGUMENT", lambda: sw.table_add("t_tern", [Ternary(1, 0xFF)], "set_tern", [0x100], priority=1)),
        ("INVALID_ARGUMENT", lambda: sw.table_add("t_tern", [Ternary(1, 0xFF)], "set_tern", [], priority=1)),
        ("INVALID_ARGUMENT", lambda: sw.table_add("t_tern", [Lpm(1, 8)], "set_tern", [1], priority=1)),
        ("ALREADY_EXISTS", lambda: sw.table_add("t_tern", [Ternary(0x10, 0xF0)], "set_tern", [0x0B], priority=5)),
        ("NOT_FOUND", lambda: sw.table_delete("t_tern", 987654)),
    ]
    for code, call in bad_calls:
        with pytest.raises(SwitchError) as info:
            call()
        assert info.value.code == code, f"{code} expected, got {info.value.code}: {info.value}"
    assert sw.table_entries("t_tern") == before
    assert one_output(sw, pkt(k_tern=0x1F))["r_tern"] == 0x0A


def test_const_table_refuses_changes() -> None:
    """tables.p4: t_const has const entries and a const default_action."""
    from softswitch import Exact, Switch, SwitchError

    sw = Switch(program("tables.p4"))
    h = bytes([0x01, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0])
    with pytest.raises(SwitchError):
        sw.table_set_default("t_const", "set_trace", [0x42])
    with pytest.raises(SwitchError):
        sw.table_add("t_const", [Exact(0x03)], "set_trace", [0x33])
    outs = sw.process_packet(0, h)
    verify_packets(outs, [(1, Expected.exact(bytes([0x01, 0x00, 0x00, 0x00, 0, 0xEE, 0, 0x11, 0xDA])))])
    outs = sw.process_packet(0, bytes([0x03]) + h[1:])
    verify_packets(outs, [(1, bytes([0x03, 0x00, 0x00, 0x00, 0, 0xEE, 0, 0xFF, 0xDA]))])


def test_control_plane_names_follow_p4c() -> None:
    """names.p4: @name (relative and absolute) on tables, actions and keys."""
    info = program("names.p4").info
    tables = {t.name: t for t in info.tables}
    assert set(tables) == {"fwd", "Ing.marks", "Ing.t_kind"}
    assert [(k.name, k.match_kind, k.bitwidth) for k in tables["fwd"].keys] == [("k_low", "exact", 8)]
    assert [(k.name, k.bitwidth) for k in tables["Ing.t_kind"].keys] == [("hdr.h.kind", 8)]
    assert {a.name for a in tables["Ing.marks"].actions} == {"global_mark", "NoAction"}
    params = {a.name: [(p.name, p.bitwidth) for p in a.params] for a in info.actions}
    assert params["Ing.set_out"] == [("port", 9), ("v", 8)]


def test_every_exact_key_value_can_be_installed(sw) -> None:
    """All 256 values of an 8-bit exact key fit (default size 1024); a duplicate is refused."""
    from softswitch import Exact, SwitchError

    for k in range(256):
        sw.table_add("t_counted", [Exact(k)], "counted")
    assert len(sw.table_entries("t_counted")) == 256
    with pytest.raises(SwitchError) as info:
        sw.table_add("t_counted", [Exact(0)], "counted")
    assert info.value.code == "ALREADY_EXISTS"
    assert len(sw.table_entries("t_counted")) == 256


def test_action_selector_orders_members_by_creation(sw) -> None:
    """BMv2 picks group.get_nth(hash mod size) over member handles, i.e. creation order.

    Handles are given out in creation order (member 7 first here), whatever the
    member ids and whatever order the group lists them in.
    """
    from softswitch import Exact

    for m in (7, 2, 5):
        sw.ap_member_add("ecmp_sel", m, "set_prof", [m, 20 + m])
    sw.ap_group_add("ecmp_sel", 1, [2, 5, 7])
    sw.table_add_indirect("t_selector", [Exact(0x80)], group=1)
    chosen = [one_output(sw, pkt(sel=0x80, flow=f), port=None)["r_prof"] for f in range(3)]
    assert chosen == [7, 2, 5]


def test_action_scopes_are_enforced(sw) -> None:
    """@tableonly actions cannot be the default, @defaultonly ones cannot be in entries."""
    from softswitch import Exact, SwitchError

    with pytest.raises(SwitchError):
        sw.table_add("t_scoped", [Exact(0x42)], "NoAction")
    with pytest.raises(SwitchError):
        sw.table_set_default("t_scoped", "set_tern", [0x01])
    assert sw.table_entries("t_scoped") == []
    sw.table_add("t_scoped", [Exact(0x42)], "set_tern", [0x07])
    assert one_output(sw, pkt(kind=0x42))["r_tern"] == 0x07
    assert one_output(sw, pkt(kind=0x43))["r_tern"] == 0x00


def test_reset_default_restores_the_program_default() -> None:
    """tables.p4: t_lpm's default is miss_r2(0xEE) in the program."""
    from softswitch import Switch

    sw = Switch(program("tables.p4"))
    miss = bytes([0xEE, 0, 0, 0, 0, 0, 0, 0, 0])
    assert bytes(sw.process_packet(0, miss)[0].data)[5] == 0xEE
    sw.table_set_default("t_lpm", "set_r2", [0x77])
    assert bytes(sw.process_packet(0, miss)[0].data)[5] == 0x77
    sw.table_reset_default("t_lpm")
    assert bytes(sw.process_packet(0, miss)[0].data)[5] == 0xEE


def test_program_info_describes_the_control_plane_surface(prog) -> None:
    """Program.info (what P4Info is built from) for tables_ext.p4, named as p4c names them."""
    info = prog.info
    profiles = {a.name: (a.with_selector, a.size, list(a.tables)) for a in info.action_profiles}
    assert profiles == {"Ing.prof": (False, 16, ["Ing.t_prof"]),
                        "Ing.ecmp_sel": (True, 16, ["Ing.t_selector"])}
    assert [(d.name, d.table) for d in info.direct_counters] == [("Ing.dc", "Ing.t_counted")]
    assert [(d.name, d.table) for d in info.direct_meters] == [("Ing.dm", "Ing.t_metered")]
    assert [(v.name, v.size) for v in info.value_sets] == [("P.kinds", 4)]
    tables = {t.name: t for t in info.tables}
    assert tables["Ing.t_selector"].implementation == "Ing.ecmp_sel"
    assert [(k.name, k.match_kind) for k in tables["Ing.t_range"].keys] == [
        ("hdr.h.k_range", "range"), ("hdr.h.k_opt", "optional")]
    assert {a.name: a.scope for a in tables["Ing.t_scoped"].actions} == {
        "Ing.set_tern": "table_only", "NoAction": "default_only"}


def test_direct_meter_runs_on_every_hit_whatever_the_action(sw) -> None:
    """BMv2 executes a table's direct meter on each hit and writes the colour to the
    field given to read() (the meter's result target), even when the entry's
    action is not the one that calls read()."""
    from softswitch import Exact

    handle = sw.table_add("t_metered", [Exact(0x34)], "NoAction")
    sw.direct_meter_set("t_metered", handle, 1, 1, 2, 2)
    assert [one_output(sw, pkt(k_opt=0x34))["color"] for _ in range(3)] == [0, 1, 2]


def test_direct_counter_counts_every_hit_whatever_the_action(sw) -> None:
    """BMv2 updates a table's direct counter in the lookup, on each hit, whether or
    not the entry's action calls count()."""
    from softswitch import Exact

    handle = sw.table_add("t_counted", [Exact(0x35)], "NoAction")
    data = pkt(k_tern=0x35)
    for _ in range(2):
        one_output(sw, data)
    assert sw.direct_counter_read("t_counted", handle) == (2, 2 * len(data))


def test_lpm_field_in_a_ternary_table_does_not_set_the_priority(sw) -> None:
    """simple_switch.md "Ternary tables": with a ternary field present, the prefix
    length only masks; the numeric priority picks the winner."""
    from softswitch import Lpm, Ternary

    sw.table_add("t_mixed", [Ternary(0, 0), Lpm(0x0A000000, 8)], "set_vs", [1], priority=10)
    sw.table_add("t_mixed", [Ternary(0, 0), Lpm(0x0A010000, 16)], "set_vs", [2], priority=5)
    assert one_output(sw, pkt(flow=0x0A010203))["vs_hit"] == 1
    assert one_output(sw, pkt(flow=0x0A020203))["vs_hit"] == 1
    assert one_output(sw, pkt(flow=0x0B010203))["vs_hit"] == 0


def test_tables_without_size_hold_1024_entries(sw) -> None:
    """p4c gives a table without `size` 1024 entries (BMv2 JSON max_size); one more is refused."""
    from softswitch import Optional, Range, SwitchError

    for prio in range(1, 1025):
        sw.table_add("t_range", [Range(0, 255), Optional(None)], "set_range", [1], priority=prio)
    with pytest.raises(SwitchError) as info:
        sw.table_add("t_range", [Range(0, 255), Optional(None)], "set_range", [1], priority=2000)
    assert info.value.code == "RESOURCE_EXHAUSTED"
    assert len(sw.table_entries("t_range")) == 1024
