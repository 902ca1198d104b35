"""Unit tests of the engine's runtime pieces: hashes, helpers of generated code, tables, meters, replication."""

import pytest

from softswitch.engine import Exact, Lpm, Optional, Range, SwitchError, Ternary, hashes, runtime
from softswitch.engine.errors import PacketTooShort
from softswitch.engine.externs import (
    GREEN,
    RED,
    YELLOW,
    MeterArray,
    RegisterArray,
    ReplicationEngine,
)
from softswitch.engine.runtime import HeaderStack, PacketOut
from softswitch.engine.tables import ActionProfile, ActionSpec, KeySpec, Table

CHECK = b"123456789"


# ---------------------------------------------------------------- hashes


@pytest.mark.parametrize(
    ("algo", "expected"),
    [
        ("crc32", 0xCBF43926),
        ("crc16", 0xBB3D),  # CRC-16/ARC, BMv2's crc16
        ("crcCCITT", 0x29B1),  # CRC-16/CCITT-FALSE
        ("crc32_custom", 0xCBF43926),  # defaults equal crc32
        ("crc16_custom", 0xBB3D),
    ],
)
def test_crc_check_values(algo, expected):
    assert hashes.HashEngine().algorithms[algo](CHECK) == expected


def test_csum16_matches_ipv4_header_checksum():
    header = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    assert hashes.csum16(header) == 0xB861
    with_sum = header[:10] + (0xB861).to_bytes(2, "big") + header[12:]
    assert hashes.csum16(with_sum) == 0


def test_xor16_identity_and_odd_length():
    assert hashes.xor16(bytes.fromhex("1234abcd")) == 0x1234 ^ 0xABCD
    assert hashes.xor16(b"\x01") == 0x0100
    assert hashes.identity(bytes.fromhex("0102")) == 0x0102
    assert hashes.identity(bytes(range(1, 11))) == int.from_bytes(bytes(range(1, 9)), "big")


def test_packed_field_list_is_left_aligned_with_zero_padding():
    eng = hashes.HashEngine()
    # 0x1 (4 bits) ++ 0xABC (12 bits) hashes as the bytes 1a bc; 0x7 (3 bits) as e0
    assert eng.compute_packed("identity", (0x1 << 12) | 0xABC, 16) == 0x1ABC
    assert eng.compute_packed("identity", 0x7, 3) == 0b11100000
    assert eng.compute_packed("crc32", 0x7, 3) == hashes.ALGORITHMS["crc32"](bytes([0b11100000]))


def test_hash_result_is_base_plus_modulo():
    assert hashes.hash_result(1000, 5, 7) == 5 + 1000 % 7
    assert hashes.hash_result(1000, 5, 0) == 5  # v1model: max == 0 yields base


def test_custom_crc_reconfigured():
    eng = hashes.HashEngine()
    eng.set_custom("crc16_custom", hashes.CRC_CCITT)
    assert eng.algorithms["crc16_custom"](CHECK) == 0x29B1
    with pytest.raises(ValueError):
        eng.set_custom("crc32", hashes.CRC32)


# ---------------------------------------------------------------- helpers of generated code


def test_read_bits_unaligned_and_too_short():
    data = bytes([0b10110011, 0b01010101])
    assert runtime.read_bits(data, 0, 4) == 0b1011
    assert runtime.read_bits(data, 3, 7) == 0b1001101
    assert runtime.read_bits(data, 0, 16) == 0xB355
    with pytest.raises(PacketTooShort):
        runtime.read_bits(data, 9, 8)


def test_value_semantics():
    # the generated code wraps results to the width of their type afterwards
    assert runtime.saturate(200, 8) == 127 and runtime.saturate(-200, 8) == -128
    assert runtime.saturate(-128, 8) == -128 and runtime.saturate(5, 8) == 5
    assert runtime.shl(0x81, 1, 8) == 0x102 and runtime.shl(1, 8, 8) == 0
    assert runtime.div(7, 2) == 3 and runtime.div(-7, 2) == -3 and runtime.div(7, 0) == 0
    assert runtime.mod(7, 2) == 1 and runtime.mod(-7, 2) == -1 and runtime.mod(7, 0) == 0


def test_packet_out_mixes_unaligned_fields():
    out = PacketOut()
    out.put(0x4, 4)
    out.put(0x5, 4)
    out.put(0xABCD, 16)
    out.put(0x1, 1)
    assert out.getvalue() == bytes.fromhex("45abcd80")


def test_header_stack_push_pop():
    class H:
        __slots__ = ("_v", "x")

        def __init__(self):
            self._v = False
            self.x = 0

        def copy(self):
            h = H()
            h._v, h.x = self._v, self.x
            return h

    s = HeaderStack([H() for _ in range(3)])
    s.e[0]._v, s.e[0].x = True, 7
    s.n = 1
    s.push_front(1)
    assert not s.e[0]._v and s.e[1].x == 7 and s.n == 2
    s.pop_front(2)
    assert s.n == 0 and not s.e[0]._v and s.e[0].x == 0


# ---------------------------------------------------------------- tables


def _noop(*_a):
    return None


def make_table(kinds, size=16, widths=None):
    widths = widths or [32] * len(kinds)
    keys = [KeySpec(f"k{i}", k, w) for i, (k, w) in enumerate(zip(kinds, widths, strict=True))]
    acts = [ActionSpec("C.fwd", (("port", 9),)), ActionSpec("NoAction", ())]
    t = Table("C.t", keys, acts, size=size)
    t.bind({"C.fwd": _noop, "NoAction": _noop})
    return t


def test_exact_table_add_find_delete_and_duplicates():
    t = make_table(["exact"])
    h = t.add([Exact(5)], "fwd", [3])
    assert t.lookup((5,)).args == (3,)
    assert t.lookup((6,)) is None
    with pytest.raises(SwitchError) as exc:
        t.add([Exact(5)], "fwd", [4])
    assert exc.value.code == "ALREADY_EXISTS"
    assert t.find([Exact(5)]) == h
    t.delete(h)
    assert t.lookup((5,)) is None
    with pytest.raises(SwitchError) as exc:
        t.delete(h)
    assert exc.value.code == "NOT_FOUND"


def test_lpm_longest_prefix_wins():
    t = make_table(["lpm"])
    t.add([Lpm(0x0A000000, 8)], "fwd", [1])
    t.add([Lpm(0x0A010000, 16)], "fwd", [2])
    t.add([Lpm(0, 0)], "fwd", [9])
    assert t.lookup((0x0A010203,)).args == (2,)
    assert t.lookup((0x0A020203,)).args == (1,)
    assert t.lookup((0x0B000000,)).args == (9,)


def test_lpm_rejects_bits_beyond_prefix_and_bad_length():
    t = make_table(["lpm"])
    for bad in (Lpm(0x0A000001, 8), Lpm(0, 33)):
        with pytest.raises(SwitchError) as exc:
            t.add([bad], "fwd", [1])
        assert exc.value.code == "INVALID_ARGUMENT"
    assert not t.entries


def test_ternary_larger_priority_wins_regardless_of_order():
    t = make_table(["ternary"])
    t.add([Ternary(0x0000_0001, 0x0000_00FF)], "fwd", [1], priority=10)
    t.add([Ternary(0, 0)], "fwd", [2], priority=1)
    t.add([Ternary(0x0000_0101, 0x0000_FFFF)], "fwd", [3], priority=20)
    assert t.lookup((0x0101,)).args == (3,)
    assert t.lookup((0x0201,)).args == (1,)
    assert t.lookup((0x0202,)).args == (2,)
    # same key, different priority is a different entry
    t.add([Ternary(0, 0)], "fwd", [4], priority=2)
    assert t.lookup((0x0202,)).args == (4,)


def test_range_and_optional_keys():
    t = make_table(["range", "optional"], widths=[16, 8])
    t.add([Range(10, 20), Optional(None)], "fwd", [1], priority=1)
    t.add([Range(15, 15), Optional(7)], "fwd", [2], priority=5)
    assert t.lookup((15, 7)).args == (2,)
    assert t.lookup((15, 8)).args == (1,)
    assert t.lookup((21, 7)) is None
    with pytest.raises(SwitchError):
        t.add([Range(9, 3), Optional(None)], "fwd", [1], priority=1)


def test_bad_arguments_leave_table_unchanged():
    t = make_table(["exact"], widths=[8])
    cases = [
        ([Exact(256)], "fwd", [1]),  # key too wide
        ([Exact(1)], "fwd", [512]),  # param too wide
        ([Exact(1)], "nosuch", [1]),
        ([Exact(1)], "fwd", []),
        ([Exact(1), Exact(2)], "fwd", [1]),
        ([Lpm(1, 8)], "fwd", [1]),
    ]
    for keys, action, args in cases:
        with pytest.raises(SwitchError):
            t.add(keys, action, args)
    assert not t.entries and t.lookup((1,)) is None


def test_table_size_and_dict_args():
    t = make_table(["exact"], size=2)
    t.add({"k0": Exact(1)}, "C.fwd", {"port": 5})
    t.add([Exact(2)], "fwd", [6])
    with pytest.raises(SwitchError) as exc:
        t.add([Exact(3)], "fwd", [6])
    assert exc.value.code == "RESOURCE_EXHAUSTED"
    assert t.lookup((1,)).args == (5,)


def test_default_action_set_and_reset():
    t = make_table(["exact"])
    t.set_default("fwd", [4])
    assert (t.default_action, t.default_args) == ("C.fwd", (4,))
    t.reset_default()
    assert t.default_action == "NoAction"


def test_action_selector_members_and_groups():
    prof = ActionProfile("C.sel", True, 8, algorithm="crc16")
    t = Table("C.t", [KeySpec("k", "exact", 8), KeySpec("s", "selector", 32)],
              [ActionSpec("C.fwd", (("port", 9),))], profile=prof)
    t.bind({"C.fwd": _noop})
    prof.member_add(1, "fwd", [1])
    prof.member_add(2, "fwd", [2])
    prof.group_add(10, [2, 1])
    assert prof.groups[10] == (1, 2)
    h = t.add([Exact(3)], None, member=None, group=10)
    with pytest.raises(SwitchError) as exc:
        prof.member_delete(1)
    assert exc.value.code == "FAILED_PRECONDITION"
    with pytest.raises(SwitchError):
        prof.group_add(11, [3])
    assert 11 not in prof.groups
    with pytest.raises(SwitchError):
        t.add([Exact(4)], None, member=1, group=10)
    t.delete(h)
    prof.group_delete(10)
    prof.member_delete(1)
    assert list(prof.members) == [2]


# ---------------------------------------------------------------- externs


def test_meter_two_rate_three_colour():
    m = MeterArray("C.m", 2, "packets")
    assert m.execute(0, 100, 0) == GREEN  # unconfigured: always green
    m.set(0, cir=1, cburst=2, pir=2, pburst=3)
    colours = [m.execute(0, 100, 0) for _ in range(4)]
    assert colours == [GREEN, GREEN, YELLOW, RED]
    # after one second one committed and two peak tokens came back
    assert [m.execute(0, 100, 1_000_000) for _ in range(3)] == [GREEN, YELLOW, RED]
    with pytest.raises(SwitchError):
        m.set(0, cir=5, cburst=1, pir=1, pburst=1)
    with pytest.raises(SwitchError):
        m.set(2, 1, 1, 1, 1)


def test_byte_meter_counts_bytes():
    m = MeterArray("C.m", 1, "bytes")
    m.set(0, cir=1000, cburst=1500, pir=2000, pburst=3000)
    assert m.execute(0, 1500, 0) == GREEN
    assert m.execute(0, 1000, 0) == YELLOW
    assert m.execute(0, 1000, 0) == RED


def test_register_control_plane_checks():
    r = RegisterArray("C.r", 4, 8)
    r.cp_write(1, 255)
    assert r.cp_read(1) == 255
    for idx, val in ((4, 1), (0, 256), (-1, 0)):
        with pytest.raises(SwitchError):
            r.cp_write(idx, val)
    assert r.read(99) == 0  # data-plane read out of range: zero, no crash


def test_replication_engine_validation():
    pre = ReplicationEngine()
    pre.mc_group_set(1, [(1, 0), (2, 1)])
    assert pre.groups[1] == ((1, 0), (2, 1))
    for bad in ([(1, 0), (1, 0)], [(600, 0)], [(1,)]):
        with pytest.raises(SwitchError):
            pre.mc_group_set(2, bad)
    assert 2 not in pre.groups
    with pytest.raises(SwitchError) as exc:
        pre.mc_group_delete(5)
    assert exc.value.code == "NOT_FOUND"
    pre.clone_session_set(7, [(3, 0)], truncate=64)
    assert pre.sessions[7].truncate == 64
