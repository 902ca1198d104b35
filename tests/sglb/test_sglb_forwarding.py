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
    SPINE_MAC,
    UPLINK_PORTS,
    Node,
    configure_leaf,
    configure_spine,
    out_ports,
    udp,
)

from sglb.codes import DropReason, Event
from sglb.headers import (
    PACKET_OUT_DIRECT,
    PROBE_REPLY_KIND,
    PUNT_HOST,
    PUNT_PROBE_REPLY,
    PacketIn,
    PacketOut,
    SglbNotice,
    SglbProbe,
)


def test_softswitch_check_is_clean():
    done = subprocess.run([sys.executable, "-m", "softswitch.cli", "check", str(P4_PATH)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 warning(s)" in done.stdout and "error" not in done.stdout + done.stderr


def test_program_surface(program):
    info = program.info
    names = {t.name.split(".")[-1] for t in info.tables}
    assert {"switch_config", "uplinks", "port_neighbour", "ipv4_route", "arp_proxy",
            "dst_profile", "spine_paths", "port_peer", "leaf_downlinks", "port_levels"} <= names
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


def _probe_round_trip(program, src: Node, path: int = 2) -> tuple[list, Node, Node]:
    """A probe from leaf 0's controller on `path` (spine 102) to leaf 1 and back."""
    probe = (Ether(src=LEAF_MAC, dst="ff:ff:ff:ff:ff:ff")
             / SglbProbe(path=path, src_leaf=77, dst_leaf=1, seq=11))
    sent = src.sw.process_packet(CPU_PORT, bytes(PacketOut()) + bytes(probe))
    assert out_ports(sent) == [UPLINK_PORTS[path]]
    assert Ether(sent[0].data)[SglbProbe].src_leaf == 0     # the leaf stamps its own id
    # Spine 102 (leaf 0 on port 1, leaf 1 on port 3): forwards and stamps its egress DRE.
    spine = configure_spine(program, spine_id=102, leaves=((0, (1,)), (1, (3,))))
    big = udp(dst="10.1.0.5", payload=b"z" * 1000)
    spine.send(1, big)
    there = spine.send(1, sent[0].data)
    assert out_ports(there) == [3]
    assert Ether(there[0].data)[SglbProbe].hop_dre >= len(big)
    # Destination leaf 1 turns it around on the port it came in.
    dst = configure_leaf(program, switch_id=1)
    back = dst.send(UPLINK_PORTS[path], there[0].data)
    assert out_ports(back) == [UPLINK_PORTS[path]]
    reply = Ether(back[0].data)[SglbProbe]
    assert (reply.kind, reply.src_leaf, reply.dst_leaf, reply.seq) == (PROBE_REPLY_KIND, 1, 0, 11)
    assert dst.event(Event.PROBE_REFLECTED) == 1
    returned = spine.send(3, back[0].data)
    assert out_ports(returned) == [1]
    src.clock.now += 300
    return src.send(UPLINK_PORTS[path], returned[0].data), spine, dst


def test_probe_round_trip_punted_with_rtt(program, leaf):
    leaf.set_profile(1, rq=[0, 0, 7, 0])
    punted, _, _ = _probe_round_trip(program, leaf)
    assert out_ports(punted) == [CPU_PORT]
    pin = PacketIn(punted[0].data)
    assert pin.reason == PUNT_PROBE_REPLY and pin[SglbProbe].seq == 11
    assert pin[SglbProbe].stamp == 300                     # round-trip time, us
    assert leaf.event(Event.PROBE_REPLIED) == 1


def test_probe_detects_recovery_when_every_path_is_excluded(program, leaf):
    """All four spines said leaf 1 is unreachable: data is dropped, but the
    controller's probes still leave, so it can see a path come back."""
    leaf.set_profile(1)
    for port, spine in zip(UPLINK_PORTS, (100, 101, 102, 103), strict=True):
        leaf.send(port, bytes(Ether(src=SPINE_MAC) / SglbNotice(kind=1, spine_id=spine,
                                                                 leaf_id=1, epoch=3)))
    assert leaf.send(HOST_PORT, udp()) == []
    assert leaf.drops(DropReason.NO_LIVE_PATH) == 1
    punted, _, _ = _probe_round_trip(program, leaf)
    assert PacketIn(punted[0].data).reason == PUNT_PROBE_REPLY
    # a probe on a path whose own port is down is dropped, and counted
    leaf.port_event(UPLINK_PORTS[1], up=False, seq=1)
    probe = Ether(src=LEAF_MAC) / SglbProbe(path=1, dst_leaf=1)
    assert leaf.sw.process_packet(CPU_PORT, bytes(PacketOut()) + bytes(probe)) == []
    assert leaf.drops(DropReason.NO_LIVE_PATH) == 2


def test_malformed_probe_dropped_and_counted(leaf):
    bad = (dict(version=3), dict(length=16), dict(path=8), dict(dst_leaf=1024),
           dict(dst_leaf=0), dict(kind=PROBE_REPLY_KIND))   # to itself; a reply from the CPU
    for fields in bad:
        pkt = Ether(src=LEAF_MAC) / SglbProbe(**{"dst_leaf": 1, **fields})
        assert leaf.sw.process_packet(CPU_PORT, bytes(PacketOut()) + bytes(pkt)) == []
    # A leaf does not relay probes for other leaves, nor take one from a host.
    assert leaf.send(UPLINK_PORTS[0], Ether() / SglbProbe(dst_leaf=5)) == []
    assert leaf.send(HOST_PORT, Ether() / SglbProbe(dst_leaf=0)) == []
    assert leaf.send(HOST_PORT, Ether() / SglbProbe(kind=PROBE_REPLY_KIND, dst_leaf=0)) == []
    assert leaf.drops(DropReason.BAD_PROBE) == len(bad) + 3
    truncated = bytes(Ether() / SglbProbe(dst_leaf=5))[:-1]
    assert leaf.send(UPLINK_PORTS[0], truncated) == []
    assert leaf.drops(DropReason.MALFORMED) == 1
