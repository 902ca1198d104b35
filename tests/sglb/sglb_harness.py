"""Fixtures for the SGLB packet tests: the program compiled once, switches
configured as a leaf or a spine of a small fabric, a controllable clock.

The switches run on the target ``--target`` selects (tests/p4target.py):
softswitch in-process, or BMv2 with the program compiled by p4c."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import p4target
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from sglb.codes import DropReason, Event, LbMode, Role
from sglb.config import profile_args, switch_args, uplinks_args
from sglb.headers import port_status_frame
from softswitch import Exact, Lpm

# SGLB_P4 points the packet tests at another build of the program (e.g. a
# deliberately broken copy, to see that the tests catch it).
P4_PATH = Path(os.environ.get("SGLB_P4")
               or Path(__file__).resolve().parents[2] / "p4src" / "sglb.p4")
CPU_PORT = 255

LEAF_MAC = "02:00:00:00:00:f0"
HOST_MAC = "02:00:00:00:01:01"
HOST_PORT = 10
UPLINK_PORTS = [1, 2, 3, 4]          # paths 0..3 of the test leaf
SPINE_IDS = [100, 101, 102, 103]     # spine behind each path
FLOWLET_GAP = 50                     # microseconds
DRE_SHIFT = 8                        # 256 bytes per congestion level


@dataclass
class Clock:
    """Microsecond clock the tests move by hand."""

    now: int = 1000

    def __call__(self) -> int:
        return self.now


@pytest.fixture(scope="session")
def program():
    """sglb.p4 compiled once for the session (for the selected target)."""
    return p4target.compile_program(P4_PATH)


def mac_int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


def ip_int(ip: str) -> int:
    a, b, c, d = (int(x) for x in ip.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


@dataclass
class Node:
    """A switch under test with helpers to drive and read it."""

    sw: object
    clock: Clock
    handles: dict = field(default_factory=dict)

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

    def set_profile(self, leaf: int, mask: int = 0x0F, gen: int = 1,
                    rq=(0,) * 8, w=(1, 1, 1, 1, 0, 0, 0, 0)) -> None:
        """Write (add or modify) the congestion profile of destination `leaf`."""
        args = profile_args(mask, gen, list(rq), list(w))
        handle = self.handles.get(("profile", leaf))
        if handle is None:
            self.handles[("profile", leaf)] = self.sw.table_add(
                "dst_profile", [Exact(leaf)], "set_profile", args)
        else:
            self.sw.table_modify("dst_profile", handle, "set_profile", args)


def make_switch(program, clock: Clock):
    return p4target.make_switch(program, cpu_port=CPU_PORT, clock=clock)


def configure_leaf(program, mode: LbMode = LbMode.SGLB, tolerance: int = 0,
                   switch_id: int = 0, paths: int = 4) -> Node:
    """Leaf `switch_id`: host 10.0.0.1 on port 10, paths 0..3 on ports 1..4
    via spines 100..103; leaves 1 and 2 behind 10.1/16 and 10.2/16."""
    clock = Clock()
    sw = make_switch(program, clock)
    sw.table_set_default("switch_config", "set_switch",
                         switch_args(Role.LEAF, switch_id, mac_int(LEAF_MAC), FLOWLET_GAP, mode,
                                     tolerance))
    sw.table_set_default("uplinks", "set_uplinks",
                         uplinks_args(UPLINK_PORTS[:paths], [DRE_SHIFT] * paths))
    sw.table_add("ipv4_route", [Lpm(ip_int("10.0.0.1"), 32)], "to_host",
                 [HOST_PORT, mac_int(HOST_MAC)])
    sw.table_add("ipv4_route", [Lpm(ip_int("10.1.0.0"), 16)], "to_leaf", [1])
    sw.table_add("ipv4_route", [Lpm(ip_int("10.2.0.0"), 16)], "to_leaf", [2])
    sw.table_add("ipv4_route", [Lpm(ip_int("10.0.0.254"), 32)], "to_cpu", [])
    sw.table_add("arp_proxy", [Lpm(ip_int("10.0.0.0"), 8)], "arp_reply", [mac_int(LEAF_MAC)])
    for slot, spine in enumerate(SPINE_IDS[:paths]):
        sw.table_add("spine_paths", [Exact(spine)], "set_spine", [slot, 1 << slot])
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
