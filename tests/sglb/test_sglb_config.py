"""sglb/config.py: the one copy of the SGLB encodings, checked against the P4
source, by hand, and end to end on the software target (a full-rate uplink
reads congested, a lightly used one reads idle)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from sglb_harness import (
    CPU_PORT,
    LEAF_SETTINGS,
    UPLINK_PORTS,
    Clock,
    Node,
    compiled,
    make_switch,
    out_ports,
    softswitch_compiled,
    udp,
)

from sglb import config
from sglb.codes import LbMode, Role
from sglb.config import (
    DRE_PERIOD_SHIFT,
    capacity_weights,
    dre_shift,
    flowlet_gap_floor_us,
    profile_args,
    quantise,
    uplinks_args,
)
from sglb.headers import PACKET_OUT_DIRECT, PacketOut
from sglb.settings import (
    DEFAULT,
    TESTBED,
    Feedback,
    SettingsError,
    SwitchSettings,
    SwitchTarget,
    switch_args,
    switch_params,
)
from softswitch import Exact, Lpm, P4Error, compile_file
from softswitch.p4info import p4info_from_program_info

P4SRC = Path(__file__).resolve().parents[2] / "p4src"


# MAX_PATHS = 64 compiles the widest program (seconds): marked slow
WIDTHS = [8, 16, pytest.param(64, marks=pytest.mark.slow)]


def _p4_defines() -> dict[str, int]:
    text = "".join((P4SRC / "include" / f).read_text() for f in ("constants.p4", "paths.p4"))
    return {k: int(v, 0) for k, v in re.findall(r"^#define (\w+) (\w+)\s*$", text, re.M)}


def _action_params(max_paths: int, action: str) -> dict[str, int]:
    """{parameter: width} of an action of the compiled program, in declaration order."""
    p4info = p4info_from_program_info(softswitch_compiled(max_paths).info)
    for a in p4info.actions:
        if a.preamble.name.split(".")[-1] == action:
            return {prm.name: prm.bitwidth for prm in a.params}
    raise AssertionError(f"no action {action} in sglb.p4")


def test_constants_match_the_p4_program():
    defines = _p4_defines()
    for name in ("MAX_PATHS", "QMAX", "DRE_PERIOD_SHIFT", "FB_TIME_SHIFT"):
        assert getattr(config, name) == defines[name], name
    assert config.DRE_PERIOD_US == 1 << defines["DRE_PERIOD_SHIFT"]
    assert config.QMAX == (1 << config.QBITS) - 1 and config.WMAX == (1 << config.WBITS) - 1
    consts = (P4SRC / "include" / "constants.p4").read_text()
    assert f"TAG_LENGTH         = {config.TAG_LENGTH};" in consts


def _default_set_switch(program: Path) -> list[int]:
    """The arguments of switch_config's default_action in a program's source, its named
    constants resolved from p4src/include/constants.p4."""
    consts = {k: int(v, 0) for k, v in re.findall(
        r"const bit<\d+> (\w+)\s*=\s*(\w+);", (P4SRC / "include" / "constants.p4").read_text())}
    (args,) = re.findall(r"default_action = set_switch\(([^)]*)\)", program.read_text())
    return [consts[a] if a in consts else int(a, 0) for a in (x.strip() for x in args.split(","))]


@pytest.mark.parametrize("target, program", [
    (SwitchTarget.V1MODEL, P4SRC / "sglb.p4"),
    (SwitchTarget.TOFINO2, P4SRC / "tna" / "sglb.p4"),
])
def test_default_actions_encode_the_default_settings(target, program):
    """Before SyncMesh writes, a switch runs sglb.settings.DEFAULT with feedback off (a
    leaf in SGLB mode, id 0, MAC 0, notice group 0): the program's default_action is
    that record encoded for its target, so the record is the one home of the defaults."""
    quiet = dataclasses.replace(DEFAULT, feedback=dataclasses.replace(DEFAULT.feedback,
                                                                      enabled=False))
    assert _default_set_switch(program) == switch_args(target, Role.LEAF, 0, 0, quiet,
                                                       LbMode.SGLB, 0)


def test_settings_are_checked_against_each_targets_limits():
    """One bounds check per target: 32-bit us on v1model, 32-bit ns (4.29 s) and a 16-bit
    frame length on Tofino; what no target holds is refused by the record itself."""
    wide = SwitchSettings(flowlet_gap_us=5_000_000, feedback=Feedback(tag_frame_max=70_000))
    assert wide.check(SwitchTarget.V1MODEL) is wide
    for target in (SwitchTarget.TOFINO, SwitchTarget.TOFINO2):
        with pytest.raises(SettingsError, match=f"flowlet_gap_us = 5000000 is outside "
                                                f"0..4294967 on {target.value}"):
            wide.check(target)
        with pytest.raises(SettingsError, match="tag_frame_max = 70000 is outside 0..65535"):
            dataclasses.replace(wide, flowlet_gap_us=4_294_967).check(target)
    with pytest.raises(SettingsError, match="flowlet_gap_us = 4294967296 is outside"):
        SwitchSettings(flowlet_gap_us=1 << 32).check(SwitchTarget.V1MODEL)
    with pytest.raises(SettingsError, match="gap_margin_us = 2147483648"):
        SwitchSettings(feedback=Feedback(gap_margin_us=1 << 31)).check(SwitchTarget.V1MODEL)
    for bad, what in (({"flowlet_gap_us": -1}, "flowlet_gap_us"),
                      ({"tie_tolerance": 1.5}, "tie_tolerance"),
                      ({"notice_copies": 17}, "notice_copies = 17 is outside 1..16"),
                      ({"dre_period_shift": 25}, "dre_period_shift = 25 is outside 0..24")):
        with pytest.raises(SettingsError, match=what):
            SwitchSettings(**bad)
    with pytest.raises(SettingsError, match="tie_tolerance = 256 is outside 0..255"):
        SwitchSettings(tie_tolerance=256).check(SwitchTarget.V1MODEL)
    assert TESTBED.flowlet_gap_us != DEFAULT.flowlet_gap_us   # the one value it changes
    assert dataclasses.replace(TESTBED, flowlet_gap_us=DEFAULT.flowlet_gap_us) == DEFAULT
    assert SwitchSettings().for_slowest_link(2).dre_period_shift == 15
    assert SwitchSettings(dre_period_shift=9).for_slowest_link(2).dre_period_shift == 9
    # the gap: at least 40 full frames of the slowest link (40 * 1514 * 8 bit at 2 Mbit/s =
    # 242,240 us), a longer one kept, a 10 Gbit/s fabric's default untouched
    assert flowlet_gap_floor_us(2) == 242_240
    assert TESTBED.for_slowest_link(2).flowlet_gap_us == 242_240
    assert SwitchSettings(flowlet_gap_us=10**6).for_slowest_link(2).flowlet_gap_us == 10**6
    assert DEFAULT.for_slowest_link(10_000) == dataclasses.replace(DEFAULT, dre_period_shift=6)
    with pytest.raises(ValueError, match="slowest link"):
        flowlet_gap_floor_us(0)


@pytest.mark.parametrize("max_paths", WIDTHS)
def test_builders_match_the_action_signatures(max_paths):
    """Every parameter the checked builders fill, in the order and width sglb.p4
    compiled with -DMAX_PATHS declares them; a value must fit its field."""
    profile = _action_params(max_paths, "set_profile")
    uplinks = _action_params(max_paths, "set_uplinks")
    for i in range(max_paths):
        assert profile[f"rq{i}"] == config.QBITS
        assert profile[f"w{i}"] == config.WBITS
        assert profile[f"ep{i}"] == 32
        assert uplinks[f"port{i}"] == 9 == config.PORT_MAX.bit_length()
        assert (1 << uplinks[f"shift{i}"]) > config.SHIFT_MAX
    assert f"rq{max_paths}" not in profile
    assert profile["live_mask"] == uplinks["path_slots"] == max_paths
    built = (("set_profile", config.profile_params(1, [], [], [], max_paths)),
             ("set_uplinks", config.uplinks_params({}, max_paths)),
             ("set_switch", switch_params(SwitchTarget.V1MODEL, Role.LEAF, 1, 0)),
             ("set_levels", config.levels_params(10)),
             ("set_downlinks", config.downlinks_params(1, 2, 3)))
    for action, params in built:
        widths = _action_params(max_paths, action)
        assert list(widths) == [n for n, _ in params], action
        for name, _ in params:
            assert widths[name] <= 64, (action, name)


def test_max_paths_choices_and_a_bad_one():
    assert config.check_max_paths(16) == 16
    for bad in (4, 32, 65, 0):
        with pytest.raises(ValueError, match="MAX_PATHS must be one of 8, 16, 64"):
            config.check_max_paths(bad)
    with pytest.raises(P4Error, match="MAX_PATHS must be 8, 16 or 64"):
        compile_file(str(P4SRC / "sglb.p4"), defines={"MAX_PATHS": "32"})


def test_epochs_and_writeback_by_hand():
    assert config.epoch_newer(5, 4) and not config.epoch_newer(4, 5)
    assert not config.epoch_newer(5, 5)
    top = (1 << 30) - 3
    assert config.epoch_newer(2, top) and not config.epoch_newer(top, 2)   # across the wrap
    assert config.epoch_newer(0xFFFFFFFF, 0x3FFFFFFE)                      # mod 2^30
    assert config.writeback(None) == 0
    assert config.writeback(5) == (1 << 31) | 5
    assert config.writeback(0xFFFFFFFF) == (1 << 31) | ((1 << 30) - 1)
    for bad in (-1, 1 << 32):
        with pytest.raises(ValueError, match="32 bits"):
            config.writeback(bad)


def test_level_thresholds_and_shares_by_hand():
    # 10 Mbit/s: shift 4, level k from k * 16 bytes
    assert config.level_thresholds(10) == [16, 32, 48, 64, 80, 96, 112]
    assert config.downlink_share(5, 10) == 85          # 256 / 3
    assert config.downlink_share(10, 10) == 128
    assert config.downlink_share(1, 1000) == 1         # never 0: both members carry flows
    assert config.downlink_share(1000, 1) == 255
    with pytest.raises(ValueError, match="capacity_b"):
        config.downlink_share(1, 0)
    with pytest.raises(ValueError, match="unknown_level"):
        Feedback(unknown_level=8)
    with pytest.raises(ValueError, match="stale_us"):
        Feedback(fresh_us=10, stale_us=5)


def test_quantise_and_weights():
    assert [quantise(u) for u in (0.0, 0.124, 0.125, 0.5, 0.99, 1.0, 3.0)] == [0, 0, 1, 4, 7, 7, 7]
    assert [quantise(u, 4) for u in (0.0624, 0.0625, 0.99)] == [0, 1, 15]
    assert capacity_weights([100, 50, 0, 1]) == [15, 8, 0, 1]
    assert capacity_weights([10, 5, 0, 10]) == [15, 8, 0, 15]
    assert capacity_weights([100, 1]) == [15, 1]  # a usable path never gets weight 0
    assert capacity_weights([0, 0]) == [0, 0]
    for bad in (-0.1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="utilisation"):
            quantise(bad)
    with pytest.raises(ValueError, match="bits"):
        quantise(0.5, 0)
    with pytest.raises(ValueError, match="capacities"):
        capacity_weights([1, float("nan")])
    with pytest.raises(ValueError, match="capacities"):
        capacity_weights([1, -1])


def test_dre_shift_by_hand():
    # 1 Gbit/s = 1,000 bit/us; T = 64 us: 8,000 B per period; mean of the
    # swing 12,000 B; 12,000 / 6 = 2,000 -> 2^11.
    assert dre_shift(1000) == 11
    assert dre_shift(10_000) == dre_shift(1000) + 3  # 8x the capacity: 3 more bits
    # 10 Mbit/s: 80 B per period, 1.5 * 80 / 6 = 20 -> 2^4
    assert dre_shift(10) == 4
    assert dre_shift(0.001) == 0  # a byte is already congestion: no shift
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="capacity"):
            dre_shift(bad)
    with pytest.raises(ValueError, match="overflows"):
        dre_shift(1e12)


def test_action_args_checked():
    assert profile_args(0b11, [1, 7], [15, 3], [config.writeback(9)]) == (
        [3, 1, 7] + [0] * 6 + [15, 3] + [0] * 6 + [(1 << 31) | 9] + [0] * 7)
    assert uplinks_args([5, 6], [11, 11])[:4] == [0b11, 2, 5, 6]
    assert len(uplinks_args([5], [11], max_paths=64)) == 2 + 128
    fb = Feedback(enabled=False, tag_frame_max=1534, fresh_us=1, stale_us=2,
                  unknown_level=4, gap_margin_us=5, gap_unknown_us=6)
    assert switch_args(SwitchTarget.V1MODEL, Role.SPINE, 7, 1,
                       SwitchSettings(flowlet_gap_us=100, feedback=fb), notice_group=3) == [
        1, 0, 7, 1, 100, 1, 3, 0, 1534, 1, 2, 4, 5, 6]
    with pytest.raises(ValueError, match=r"remote\[1\] = 8 is outside 0..7"):
        profile_args(1, [0, 8], [1])
    with pytest.raises(ValueError, match="at most 8 paths"):
        profile_args(1, [0] * 9, [1])
    with pytest.raises(ValueError, match="live_mask"):
        profile_args(0x100, [], [])
    assert profile_args(1 << 63, [0] * 64, [1] * 64, max_paths=64)[0] == 1 << 63
    with pytest.raises(ValueError, match="2 ports but 1 shifts"):
        uplinks_args([1, 2], [3])


def test_dre_period_for_the_slowest_link_by_hand():
    # 4 frames of 1,514 bytes at 2 Mbit/s: 24,224 us -> 2^15 us
    assert config.dre_period_shift_for(2) == 15
    assert config.dre_period_shift_for(1) == 16
    assert config.dre_period_shift_for(1000) == DRE_PERIOD_SHIFT    # never below 64 us
    assert config.dre_period_shift_for(1e-6) == config.DRE_PERIOD_SHIFT_MAX
    # 2 Mbit/s over 2^15 us: 8,192 B per period; mean swing 12,288 / 6 = 2,048 -> 2^11
    assert dre_shift(2, 15) == 11 and config.level_thresholds(2, 15)[0] == 2048
    with pytest.raises(ValueError, match="period_shift"):
        dre_shift(2, 25)


def _leaf_with_load(program, gap_us: int, capacity: float = 1000, period_shift: int = 6,
                    frame: int = 1000, span_us: int = 2000) -> Node:
    """Two paths of `capacity` Mbit/s (ports 1, 2); path 0's port carries `frame`-byte
    frames every gap_us for span_us (sent by the controller straight out of port 1)."""
    clock = Clock()
    sw = make_switch(program, clock)
    sw.table_set_default("switch_config", "set_switch",
                         switch_args(SwitchTarget.V1MODEL, Role.LEAF, 0, 0x0200000000F0,
                                     LEAF_SETTINGS, LbMode.SGLB))
    shift = dre_shift(capacity, period_shift)
    sw.table_set_default("uplinks", "set_uplinks", uplinks_args(UPLINK_PORTS[:2], [shift] * 2))
    sw.table_add("ipv4_route", [Lpm(0x0A010000, 16)], "to_leaf", [1])
    sw.table_add("dst_profile", [Exact(1)], "set_profile", profile_args(0b11, [0, 2], [1, 1]))
    load = bytes(PacketOut(op=PACKET_OUT_DIRECT, egress_port=UPLINK_PORTS[0])) + bytes(
        Ether() / IP(dst="10.9.9.9") / UDP() / (b"L" * (frame - 42)))
    for _ in range(span_us // gap_us):
        clock.now += gap_us
        assert out_ports(sw.process_packet(CPU_PORT, load)) == [UPLINK_PORTS[0]]
    return Node(sw, clock)


def test_full_rate_uplink_reads_congested(program):
    node = _leaf_with_load(program, gap_us=8)   # 125 B/us = 1 Gb/s
    dre = node.sw.register_read("dre_bytes", UPLINK_PORTS[0])
    rate_x_period = 125 * (1 << DRE_PERIOD_SHIFT)
    assert rate_x_period <= dre <= 2 * rate_x_period + 1004
    # Level >= 3 on path 0 beats nothing: the remote-congestion-2 path wins.
    assert out_ports(node.send(10, udp(sport=1))) == [UPLINK_PORTS[1]]


def test_light_uplink_reads_idle(program):
    node = _leaf_with_load(program, gap_us=64)  # 1/8 of the capacity
    assert out_ports(node.send(10, udp(sport=1))) == [UPLINK_PORTS[0]]


def test_slow_links_need_the_longer_dre_period():
    """2 Mbit/s (the testbed's links): with the period from dre_period_shift_for
    a full-rate link reads congested and a link at 1/8 of its rate idle; with
    the default 64 us a single frame would read saturated, then idle."""
    shift = config.dre_period_shift_for(2)
    program = compiled(dre_period_shift=shift)
    full = _leaf_with_load(program, gap_us=6056, capacity=2, period_shift=shift, frame=1514,
                           span_us=400_000)                       # one frame per frame time
    assert out_ports(full.send(10, udp(sport=1))) == [UPLINK_PORTS[1]]
    light = _leaf_with_load(program, gap_us=8 * 6056, capacity=2, period_shift=shift,
                            frame=1514, span_us=400_000)
    assert out_ports(light.send(10, udp(sport=1))) == [UPLINK_PORTS[0]]
