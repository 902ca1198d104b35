"""sglb/config.py: the one copy of the SGLB encodings, checked against the P4
source, by hand, and end to end on the software target (a full-rate uplink
reads congested, a lightly used one reads idle)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from sglb_harness import CPU_PORT, UPLINK_PORTS, Clock, Node, make_switch, out_ports, udp

from sglb import config
from sglb.codes import LbMode, Role
from sglb.config import (
    DRE_PERIOD_SHIFT,
    capacity_weights,
    dre_shift,
    profile_args,
    quantise,
    switch_args,
    uplinks_args,
)
from sglb.headers import PACKET_OUT_DIRECT, PacketOut
from softswitch import Exact, Lpm

P4SRC = Path(__file__).resolve().parents[2] / "p4src"


def _p4_defines() -> dict[str, int]:
    text = (P4SRC / "include" / "constants.p4").read_text()
    return {k: int(v, 0) for k, v in re.findall(r"^#define (\w+) (\w+)\s*$", text, re.M)}


def _action_params(action: str) -> dict[str, int]:
    """{parameter: width} of an action of sglb.p4, in declaration order (typedefs resolved)."""
    typedefs = dict((name, int(w)) for w, name in re.findall(
        r"typedef bit<(\d+)> (\w+);", (P4SRC / "include" / "constants.p4").read_text()))
    m = re.search(rf"action {action}\(([^)]*)\)", (P4SRC / "sglb.p4").read_text())
    assert m, f"no action {action} in sglb.p4"
    return {name: int(w) if w else typedefs[alias]
            for w, alias, name in re.findall(r"(?:bit<(\d+)>|(\w+))\s+(\w+)", m.group(1))}


def _param_width(action: str, param: str) -> int:
    return _action_params(action)[param]


def test_constants_match_the_p4_program():
    defines = _p4_defines()
    for name in ("MAX_PATHS", "QMAX", "DRE_PERIOD_SHIFT"):
        assert getattr(config, name) == defines[name], name
    assert config.DRE_PERIOD_US == 1 << defines["DRE_PERIOD_SHIFT"]
    # widths of what the control plane writes: a level or weight must fit its field
    for i in range(config.MAX_PATHS):
        assert _param_width("set_profile", f"rq{i}") == config.QBITS
        assert _param_width("set_profile", f"w{i}") == config.WBITS
        assert _param_width("set_uplinks", f"port{i}") == 9 == config.PORT_MAX.bit_length()
        assert (1 << _param_width("set_uplinks", f"shift{i}")) > config.SHIFT_MAX
    assert _param_width("set_profile", "live_mask") == config.MAX_PATHS
    assert config.QMAX == (1 << config.QBITS) - 1 and config.WMAX == (1 << config.WBITS) - 1
    # every parameter the checked builders fill, in the order sglb.p4 declares them
    for action, params in (("set_profile", config.profile_params(1, 1, [], [])),
                           ("set_uplinks", config.uplinks_params({})),
                           ("set_switch", config.switch_params(Role.LEAF, 1, 0, 1))):
        assert list(_action_params(action)) == [n for n, _ in params], action


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
    assert profile_args(0b11, 2, [1, 7], [15, 3]) == [3, 2, 1, 7, 0, 0, 0, 0, 0, 0,
                                                      15, 3, 0, 0, 0, 0, 0, 0]
    assert uplinks_args([5, 6], [11, 11])[:3] == [0b11, 5, 6]
    assert switch_args(Role.SPINE, 7, 1, 100, notice_group=3) == [1, 0, 7, 1, 100, 1, 3]
    with pytest.raises(ValueError, match=r"remote\[1\] = 8 is outside 0..7"):
        profile_args(1, 1, [0, 8], [1])
    with pytest.raises(ValueError, match="at most 8 paths"):
        profile_args(1, 1, [0] * 9, [1])
    with pytest.raises(ValueError, match="live_mask"):
        profile_args(0x100, 1, [], [])
    with pytest.raises(ValueError, match="2 ports but 1 shifts"):
        uplinks_args([1, 2], [3])


def _leaf_with_load(program, gap_us: int) -> Node:
    """Two 1 Gb/s paths (ports 1, 2); path 0's port carries 1,000-byte frames
    every gap_us for 2 ms (sent by the controller straight out of port 1)."""
    clock = Clock()
    sw = make_switch(program, clock)
    sw.table_set_default("switch_config", "set_switch",
                         switch_args(Role.LEAF, 0, 0x0200000000F0, 50, LbMode.SGLB, 0))
    shift = dre_shift(1000)  # 1 Gbit/s
    sw.table_set_default("uplinks", "set_uplinks", uplinks_args(UPLINK_PORTS[:2], [shift] * 2))
    sw.table_add("ipv4_route", [Lpm(0x0A010000, 16)], "to_leaf", [1])
    sw.table_add("dst_profile", [Exact(1)], "set_profile", profile_args(0b11, 1, [0, 2], [1, 1]))
    load = bytes(PacketOut(op=PACKET_OUT_DIRECT, egress_port=UPLINK_PORTS[0])) + bytes(
        Ether() / IP(dst="10.9.9.9") / UDP() / (b"L" * (1000 - 42)))
    for _ in range(2000 // gap_us):
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
