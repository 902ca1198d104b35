"""Forwarding basics of sglb.p4 through the software target: IPv4 TTL and
checksum, local hosts, proxy ARP, packet I/O, probes, counters, drops."""

from __future__ import annotations

import subprocess
import sys

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import ARP, Ether
from sglb_harness import (
    CPU_PORT,
    HOST_MAC,
    HOST_PORT,
    LEAF_MAC,
    P4_PATH,
    UPLINK_PORTS,
    Clock,
    configure_leaf,
    ip_int,
    mac_int,
    make_switch,
    out_ports,
    udp,
)

from sglb.codes import DropReason, Event, Role
from sglb.headers import (
    PACKET_OUT_DIRECT,
    PUNT_HOST,
    PUNT_PROBE,
    PacketIn,
    PacketOut,
    SglbProbe,
)
from softswitch import Exact, Lpm


def test_softswitch_check_is_clean():
    done = subprocess.run([sys.executable, "-m", "softswitch.cli", "check", str(P4_PATH)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 warning(s)" in done.stdout and "error" not in done.stdout + done.stderr


def test_program_surface(program):
    info = program.info
    names = {t.name.split(".")[-1] for t in info.tables}
    assert {"switch_config", "uplinks", "ipv4_route", "arp_proxy", "dst_profile",
            "spine_paths", "port_peer", "leaf_downlinks"} <= names
    assert {h.name for h in info.controller_headers} == {"packet_in", "packet_out"}


def test_counters_in_p4info(program):
    assert {c.name for c in program.info.counters} == {
        "SglbIngress.port_rx", "SglbIngress.drops", "SglbIngress.events",
        "SglbEgress.port_tx", "SglbEgress.egress_drops"}


def test_registers_in_p4info(program):
    assert "port_down" in {r.name for r in program.info.registers}


def test_ttl_decrement_and_checksum(leaf):
    leaf.set_profile(1)
    outs = leaf.send(HOST_PORT, udp(ttl=64))
    assert len(outs) == 1 and outs[0].port in UPLINK_PORTS
    pkt = Ether(outs[0].data)
    assert pkt[IP].ttl == 63
    assert pkt.src == LEAF_MAC
    sent = pkt[IP].chksum
    del pkt[IP].chksum
    assert Ether(bytes(pkt))[IP].chksum == sent  # checksum recomputed correctly
    assert pkt[UDP].payload.load == b"x" * 64


def test_ttl_expiry_dropped_and_counted(leaf):
    leaf.set_profile(1)
    assert leaf.send(HOST_PORT, udp(ttl=1)) == []
    assert leaf.send(HOST_PORT, udp(ttl=0)) == []
    assert leaf.drops(DropReason.TTL_EXPIRED) == 2


def test_bad_ipv4_checksum_dropped(leaf):
    leaf.set_profile(1)
    pkt = Ether(udp())
    pkt[IP].chksum = pkt[IP].chksum ^ 0xFFFF
    assert leaf.send(HOST_PORT, pkt) == []
    assert leaf.drops(DropReason.BAD_IPV4) == 1


def test_local_host_delivery(leaf):
    outs = leaf.send(UPLINK_PORTS[0], udp(dst="10.0.0.1", src="10.1.0.5"))
    assert out_ports(outs) == [HOST_PORT]
    pkt = Ether(outs[0].data)
    assert (pkt.dst, pkt.src, pkt[IP].ttl) == (HOST_MAC, LEAF_MAC, 63)


def test_no_route_dropped_and_counted(leaf):
    assert leaf.send(HOST_PORT, udp(dst="192.168.1.1")) == []
    assert leaf.drops(DropReason.NO_ROUTE) == 1


def test_proxy_arp_reply(leaf):
    req = Ether(src=HOST_MAC, dst="ff:ff:ff:ff:ff:ff") / ARP(
        op=1, hwsrc=HOST_MAC, psrc="10.0.0.1", pdst="10.1.0.5")
    outs = leaf.send(HOST_PORT, req)
    assert out_ports(outs) == [HOST_PORT]
    rep = Ether(outs[0].data)
    assert (rep.dst, rep.src) == (HOST_MAC, LEAF_MAC)
    assert (rep[ARP].op, rep[ARP].hwsrc, rep[ARP].psrc) == (2, LEAF_MAC, "10.1.0.5")
    assert (rep[ARP].hwdst, rep[ARP].pdst) == (HOST_MAC, "10.0.0.1")
    assert leaf.event(Event.ARP_REPLIED) == 1
    # Duplicate-address probes (sender = target) and unknown targets are not answered.
    probe = req.copy()
    probe[ARP].pdst = "10.0.0.1"
    assert leaf.send(HOST_PORT, probe) == []
    other = req.copy()
    other[ARP].pdst = "172.16.0.1"
    assert leaf.send(HOST_PORT, other) == []
    assert leaf.drops(DropReason.UNSUPPORTED) == 1
    assert leaf.drops(DropReason.NO_ROUTE) == 1


def test_unsupported_ethertype_dropped(leaf):
    assert leaf.send(HOST_PORT, Ether(src=HOST_MAC, dst=LEAF_MAC, type=0x86DD) / (b"\0" * 40)) == []
    assert leaf.drops(DropReason.UNSUPPORTED) == 1


def test_port_counters(leaf):
    leaf.set_profile(1)
    frame = udp()
    outs = leaf.send(HOST_PORT, frame)
    assert leaf.sw.counter_read("port_rx", HOST_PORT) == (1, len(frame))
    assert leaf.sw.counter_read("port_tx", outs[0].port) == (1, len(outs[0].data))


def test_punt_to_cpu_and_packet_out(leaf):
    outs = leaf.send(HOST_PORT, udp(dst="10.0.0.254"))
    assert out_ports(outs) == [CPU_PORT]
    pin = PacketIn(outs[0].data)
    assert (pin.ingress_port, pin.reason) == (HOST_PORT, PUNT_HOST)
    assert pin[IP].dst == "10.0.0.254"
    # PacketOut direct: sent out as is, without the controller header.
    frame = udp(dst="10.1.0.5")
    outs = leaf.sw.process_packet(CPU_PORT, bytes(PacketOut(op=PACKET_OUT_DIRECT, egress_port=3))
                                  + frame)
    assert [(o.port, o.data) for o in outs] == [(3, frame)]
    outs = leaf.sw.process_packet(CPU_PORT, bytes(PacketOut(op=9)) + frame)
    assert outs == [] and leaf.drops(DropReason.BAD_PACKET_OUT) == 1


def test_probe_path_spine_stamp_and_punt(program, leaf):
    probe = (Ether(src=LEAF_MAC, dst="ff:ff:ff:ff:ff:ff")
             / SglbProbe(path=2, src_leaf=0, dst_leaf=1, seq=11))
    # Source leaf: the controller's probe leaves on the path it names.
    leaf.set_profile(1, rq=[0, 0, 7, 0])
    outs = leaf.sw.process_packet(CPU_PORT, bytes(PacketOut()) + bytes(probe))
    assert out_ports(outs) == [UPLINK_PORTS[2]]
    # Spine: forwards to leaf 1 and stamps its egress DRE.
    spine = make_switch(program, Clock())
    spine.table_set_default("switch_config", "set_switch",
                            [int(Role.SPINE), 0, 102, mac_int("02:00:00:00:00:66"), 50, 0, 0])
    spine.table_add("leaf_downlinks", [Exact(1)], "set_downlinks", [3, 3])
    spine.table_add("ipv4_route", [Lpm(ip_int("10.1.0.0"), 16)], "to_leaf", [1])
    big = udp(dst="10.1.0.5", payload=b"z" * 1000)
    spine.process_packet(1, big)
    outs = spine.process_packet(1, outs[0].data)
    assert out_ports(outs) == [3]
    assert Ether(outs[0].data)[SglbProbe].hop_dre >= len(big)
    # Destination leaf 1 punts it to its controller.
    dst = configure_leaf(program, switch_id=1)
    punted = dst.send(UPLINK_PORTS[2], outs[0].data)
    assert out_ports(punted) == [CPU_PORT]
    pin = PacketIn(punted[0].data)
    assert pin.reason == PUNT_PROBE and pin[SglbProbe].seq == 11
    assert dst.event(Event.PROBE_PUNTED) == 1


def test_malformed_probe_dropped_and_counted(leaf):
    for fields in (dict(version=3), dict(length=12), dict(path=8), dict(dst_leaf=1024)):
        pkt = Ether(src=LEAF_MAC) / SglbProbe(**fields)
        assert leaf.sw.process_packet(CPU_PORT, bytes(PacketOut()) + bytes(pkt)) == []
    # A leaf does not relay probes for other leaves that arrive on data ports.
    assert leaf.send(UPLINK_PORTS[0], Ether() / SglbProbe(dst_leaf=5)) == []
    assert leaf.drops(DropReason.BAD_PROBE) == 5
    truncated = bytes(Ether() / SglbProbe(dst_leaf=5))[:-1]
    assert leaf.send(UPLINK_PORTS[0], truncated) == []
    assert leaf.drops(DropReason.MALFORMED) == 1
