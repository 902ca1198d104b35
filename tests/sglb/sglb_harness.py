"""Fixtures for the SGLB packet tests: the program compiled once per
MAX_PATHS, switches configured as a leaf or a spine of a small fabric, a
controllable clock, and a wired fabric of several switches.

The switches run on the target ``--target`` selects (tests/p4target.py):
softswitch in-process, or BMv2 with the program compiled by p4c."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import p4target
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from sglb.codes import DropReason, Event, LbMode, Role
from sglb.config import (
    MAX_PATHS,
    downlink_share,
    downlinks_params,
    levels_params,
    profile_args,
    uplinks_args,
    writeback,
)
from sglb.headers import port_status_frame
from sglb.settings import Feedback, SwitchSettings, SwitchTarget, switch_args
from softswitch import Exact, Lpm, compile_file

if TYPE_CHECKING:
    from bmv2.switch import Bmv2Switch
    from softswitch import Switch as SoftSwitch

    Switch = SoftSwitch | Bmv2Switch

# SGLB_P4 points the packet tests at another build of the program (e.g. a
# deliberately broken copy, to see that the tests catch it).
P4_PATH = Path(os.environ.get("SGLB_P4")
               or Path(__file__).resolve().parents[2] / "p4src" / "sglb.p4")
CPU_PORT = 255

LEAF_MAC = "02:00:00:00:00:f0"
SPINE_MAC = "02:00:00:00:00:65"
HOST_MAC = "02:00:00:00:01:01"
HOST_PORT = 10
UPLINK_PORTS = [1, 2, 3, 4]          # paths 0..3 of the test leaf
SPINE_IDS = [100, 101, 102, 103]     # spine behind each path
FLOWLET_GAP = 50                     # microseconds
DRE_SHIFT = 8                        # 256 bytes per congestion level
NO_FEEDBACK = Feedback(enabled=False)
LEAF_SETTINGS = SwitchSettings(flowlet_gap_us=FLOWLET_GAP, tie_tolerance=0, feedback=NO_FEEDBACK)
"""A test leaf's settings: gaps of exactly FLOWLET_GAP, exact ties, no feedback (each test
turns on what it exercises)."""
SPINE_SETTINGS = SwitchSettings(flowlet_gap_us=FLOWLET_GAP)


def sticky_spine_settings() -> SwitchSettings:
    """SPINE_SETTINGS for the tests that keep flows on a spine member across idle times:
    on BMv2 the clock is the host's and runs on while the packets go in (some ms each),
    so a round of up to 50 flows must fit in gap_unknown there: 2 s instead of 100 ms."""
    if not p4target.on_bmv2():
        return SPINE_SETTINGS
    return dataclasses.replace(SPINE_SETTINGS, feedback=dataclasses.replace(
        SPINE_SETTINGS.feedback, gap_unknown_us=2_000_000, stale_us=2_000_000))


def longest_kept_idle(gap_unknown_us: int, flows: int) -> int:
    """The longest idle (us, moved by hand) after which each of `flows` flows sent one by
    one, 1 us apart, must still keep its member: just under gap_unknown in softswitch;
    on BMv2, whose clock runs on while the packets go in, half of it."""
    return gap_unknown_us // 2 if p4target.on_bmv2() else gap_unknown_us - flows - 1


@dataclass
class Clock:
    """Microsecond clock the tests move by hand."""

    now: int = 1000

    def __call__(self) -> int:
        return self.now


def _defines(max_paths: int, dre_period_shift: int | None,
             phase: bool = False) -> dict[str, str] | None:
    defines = {} if max_paths == MAX_PATHS else {"MAX_PATHS": str(max_paths)}
    if dre_period_shift is not None:
        defines["DRE_PERIOD_SHIFT"] = str(dre_period_shift)
    if phase:
        defines["SGLB_DRE_IN_PHASE"] = "1"
    return defines or None


@functools.cache
def softswitch_compiled(max_paths: int = MAX_PATHS, dre_period_shift: int | None = None,
                        phase: bool = False):
    """sglb.p4 compiled by softswitch's front end whatever the target: the tests of
    the program's surface (its ProgramInfo) read it."""
    return compile_file(str(P4_PATH), defines=_defines(max_paths, dre_period_shift, phase))


@functools.cache
def compiled(max_paths: int = MAX_PATHS, dre_period_shift: int | None = None,
             phase: bool = False):
    """sglb.p4 compiled once per MAX_PATHS (and DRE_PERIOD_SHIFT, and the in-phase
    DRE reading SGLB_DRE_IN_PHASE) for the session, for the selected target."""
    if not p4target.on_bmv2():
        return softswitch_compiled(max_paths, dre_period_shift, phase)
    return p4target.compile_program(P4_PATH,
                                    defines=_defines(max_paths, dre_period_shift, phase))


@pytest.fixture(scope="session")
def program():
    """sglb.p4 compiled with the default MAX_PATHS (for the selected target)."""
    return compiled()


@pytest.fixture(scope="session")
def program_phase():
    """The same with the in-phase DRE reading (-DSGLB_DRE_IN_PHASE)."""
    return compiled(phase=True)


def mac_int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


def ip_int(ip: str) -> int:
    a, b, c, d = (int(x) for x in ip.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


@dataclass
class Node:
    """A switch under test with helpers to drive and read it."""

    sw: Switch
    clock: Clock
    handles: dict = field(default_factory=dict)
    max_paths: int = MAX_PATHS

    def send(self, port: int, frame) -> list:
        return self.sw.process_packet(port, bytes(frame))

    def drops(self, reason: DropReason) -> int:
        """Packets dropped for `reason`, in ingress and egress."""
        return (self.sw.counter_read("SglbIngress.drops", int(reason))[0]
                + self.sw.counter_read("egress_drops", int(reason))[0])

    def event(self, ev: Event) -> int:
        return self.sw.counter_read("events", int(ev))[0]

    def port_event(self, port: int, up: bool, seq: int) -> list:
        return self.sw.process_packet(CPU_PORT, port_status_frame(port, up, seq))

    def set_profile(self, leaf: int, mask: int = 0x0F, rq=(0,) * 4, w=(1, 1, 1, 1),
                    ep=()) -> None:
        """Write (add or modify) the congestion profile of destination `leaf`;
        `ep` are the notice epochs written back per path (None: none)."""
        args = profile_args(mask, list(rq), list(w), [writeback(e) for e in ep], self.max_paths)
        handle = self.handles.get(("profile", leaf))
        if handle is None:
            self.handles[("profile", leaf)] = self.sw.table_add(
                "dst_profile", [Exact(leaf)], "set_profile", args)
        else:
            self.sw.table_modify("dst_profile", handle, "set_profile", args)


def make_switch(program, clock: Clock) -> Switch:
    return p4target.make_switch(program, cpu_port=CPU_PORT, clock=clock)


def configure_leaf(program, mode: LbMode = LbMode.SGLB, tolerance: int = 0,
                   switch_id: int = 0, paths: int = 4, feedback: Feedback = NO_FEEDBACK,
                   max_paths: int = MAX_PATHS, clock: Clock | None = None,
                   uplink_ports=None, spine_ids=None, dre_shift: int = DRE_SHIFT,
                   flowlet_gap: int = FLOWLET_GAP) -> Node:
    """Leaf `switch_id`: host 10.<id>.0.1 on port 10 (bound to a host), paths
    0..n-1 on ports 1..n bound to spines 100..; leaves 1 and 2 behind 10.1/16
    and 10.2/16 (the other leaves' subnets)."""
    clock = clock or Clock()
    uplink_ports = list(uplink_ports or UPLINK_PORTS[:paths])
    spine_ids = list(spine_ids or SPINE_IDS[:paths])
    sw = make_switch(program, clock)
    sw.table_set_default("switch_config", "set_switch",
                         switch_args(SwitchTarget.V1MODEL, Role.LEAF, switch_id,
                                     mac_int(LEAF_MAC), dataclasses.replace(
                                         LEAF_SETTINGS, flowlet_gap_us=flowlet_gap,
                                         tie_tolerance=tolerance, feedback=feedback), mode))
    sw.table_set_default("uplinks", "set_uplinks",
                         uplinks_args(uplink_ports, [dre_shift] * len(uplink_ports), max_paths))
    own = f"10.{switch_id}.0"
    sw.table_add("ipv4_route", [Lpm(ip_int(f"{own}.1"), 32)], "to_host",
                 [HOST_PORT, mac_int(HOST_MAC)])
    sw.table_add("ipv4_route", [Lpm(ip_int(f"{own}.254"), 32)], "to_cpu", [])
    for other in (0, 1, 2):
        if other != switch_id:
            sw.table_add("ipv4_route", [Lpm(ip_int(f"10.{other}.0.0"), 16)], "to_leaf", [other])
    sw.table_add("arp_proxy", [Lpm(ip_int("10.0.0.0"), 8)], "arp_reply", [mac_int(LEAF_MAC)])
    sw.table_add("port_neighbour", [Exact(HOST_PORT)], "bind_host", [])
    spines: dict[int, int] = {}
    for index, (port, spine) in enumerate(zip(uplink_ports, spine_ids, strict=True)):
        sw.table_add("port_neighbour", [Exact(port)], "bind_spine", [spine])
        spines[spine] = spines.get(spine, 0) | 1 << index
    for spine, mask in spines.items():
        sw.table_add("spine_paths", [Exact(spine)], "set_spine", [mask])
    return Node(sw, clock, max_paths=max_paths)


def configure_spine(program, spine_id: int = 101, leaves=((1, (3,)), (2, (4, 5)), (3, (6,))),
                    capacities: dict[int, float] | None = None, notice_group: int = 7,
                    copies: int = 1, clock: Clock | None = None,
                    settings: SwitchSettings = SPINE_SETTINGS) -> Node:
    """Spine `spine_id`: each (leaf, ports) bundle bound to that leaf, split in
    proportion to `capacities` (Mbit/s, default 10 each), level thresholds
    from them, notices to `notice_group` with `copies` per leaf port."""
    clock = clock or Clock()
    caps = capacities or {}
    sw = make_switch(program, clock)
    sw.table_set_default("switch_config", "set_switch",
                         switch_args(SwitchTarget.V1MODEL, Role.SPINE, spine_id,
                                     mac_int(SPINE_MAC), settings,
                                     notice_group=notice_group))
    replicas = []
    for leaf, ports in leaves:
        for port in ports:
            sibling = next((p for p in ports if p != port), port)
            sw.table_add("port_peer", [Exact(port)], "peer", [leaf, sibling])
            sw.table_add("port_neighbour", [Exact(port)], "bind_leaf", [leaf])
            sw.table_add("port_levels", [Exact(port)], "set_levels",
                         [v for _, v in levels_params(caps.get(port, 10.0))])
        a = ports[0]
        b = ports[1] if len(ports) > 1 else a
        share = downlink_share(caps.get(a, 10.0), caps.get(b, 10.0)) if b != a else 255
        sw.table_add("leaf_downlinks", [Exact(leaf)], "set_downlinks",
                     [v for _, v in downlinks_params(a, b, share)])
        sw.table_add("ipv4_route", [Lpm(ip_int(f"10.{leaf}.0.0"), 16)], "to_leaf", [leaf])
        replicas += [(ports[0], rid) for rid in range(copies)]
    sw.mc_group_set(notice_group, replicas)
    return Node(sw, clock)


def udp(dst: str = "10.1.0.5", src: str = "10.0.0.1", sport: int = 1000,
        dport: int = 2000, ttl: int = 64, payload: bytes = b"x" * 64) -> bytes:
    """An Ethernet/IPv4/UDP frame from the local host to the switch MAC."""
    return bytes(Ether(src=HOST_MAC, dst=LEAF_MAC) / IP(src=src, dst=dst, ttl=ttl)
                 / UDP(sport=sport, dport=dport) / payload)


def out_ports(outs) -> list[int]:
    return [o.port for o in outs]


@pytest.fixture
def leaf(program) -> Node:
    return configure_leaf(program)


class WiredFabric:
    """Switches wired port to port, driven from the test: a frame sent out of a wired
    port arrives at the other end at once; what leaves on an unwired port is
    delivered (returned) as (switch name, port, frame)."""

    def __init__(self, nodes: dict[str, Node], wires: list[tuple[str, int, str, int]]):
        self.nodes = nodes
        self.peer: dict[tuple[str, int], tuple[str, int]] = {}
        for a, pa, b, pb in wires:
            self.peer[a, pa] = (b, pb)
            self.peer[b, pb] = (a, pa)
        self.crossed: list[tuple[str, int, bytes]] = []
        """Every frame that crossed a wire: (sending switch, its port, frame)."""

    def inject(self, name: str, port: int, frame) -> list[tuple[str, int, bytes]]:
        delivered = []
        queue = deque([(name, port, bytes(frame))])
        while queue:
            node, in_port, data = queue.popleft()
            for out in self.nodes[node].sw.process_packet(in_port, data):
                far = self.peer.get((node, out.port))
                if far is None:
                    delivered.append((node, out.port, out.data))
                else:
                    self.crossed.append((node, out.port, out.data))
                    queue.append((far[0], far[1], out.data))
        return delivered
