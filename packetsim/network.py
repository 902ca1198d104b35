"""The fabric as ns-3 nodes and point-to-point links.

Switches are bare ns-3 nodes whose devices belong to the shim (every frame goes
to the P4 program); hosts are ns-3 nodes with the Internet stack, one device
per NIC, TCP as ns-3 provides. Every link gets ``delay_us`` of propagation delay.

Addresses and routes are the testbed's: a NIC has its fabric-file address with
its leaf's prefix length, and traffic from a NIC's address leaves through that
NIC (rails: NIC i talks to the peers' NIC i), here by a host route per peer
address through the NIC of the same rail. The fabric given is already scaled
(``sim.scaled``): its capacities are the simulated rates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fabricmodel import Fabric, Link

from .options import SimOptions


def mac_bytes(mac: str | int) -> bytes:
    """A MAC address (text or int) as 6 bytes."""
    if isinstance(mac, int):
        return mac.to_bytes(6, "big")
    return bytes(int(x, 16) for x in mac.split(":"))


@dataclass(frozen=True)
class SwitchPort:
    """A switch's end of a link, as the shim numbers devices."""

    switch: str
    port: int
    dev: int
    link: str
    """The link's name (``l1:3-s1:1``) or ``host:NIC`` for a host port."""


@dataclass
class Network:
    """What ``build`` made: device numbers both ways, hosts' nodes and addresses."""

    ports: dict[int, SwitchPort] = field(default_factory=dict)
    """Shim device number -> switch port."""
    dev_of: dict[tuple[str, int], int] = field(default_factory=dict)
    """(switch, port) -> shim device number."""
    host_nodes: dict[str, Any] = field(default_factory=dict)
    cut_models: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """Link name -> the error models of its two devices."""
    links: dict[str, Link] = field(default_factory=dict)
    link_gbps: dict[str, float] = field(default_factory=dict)


def _rate(mbps: float) -> str:
    return f"{round(mbps * 1e6)}bps"


def build(fabric: Fabric, opts: SimOptions, switch_macs: dict[str, bytes]) -> Network:
    """Create every node, device, address and route of ``fabric`` in ns-3."""
    from .shim import load

    ns, psim = load()
    net = Network()
    switch_nodes = {}
    for sw in fabric.switches:
        switch_nodes[sw.name] = ns.CreateObject[ns.Node]()
    hosts = {}
    stack = ns.InternetStackHelper()
    for h in fabric.hosts:
        node = ns.CreateObject[ns.Node]()
        stack.Install(node)
        hosts[h.name] = node
    net.host_nodes = hosts

    def p2p(mbps: float, queue: str):
        helper = ns.PointToPointHelper()
        helper.SetDeviceAttribute("DataRate", ns.StringValue(_rate(mbps)))
        helper.SetChannelAttribute("Delay", ns.StringValue(f"{opts.delay_us:g}us"))
        helper.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", ns.StringValue(queue))
        return helper

    ecn = opts.ecn_bytes if opts.ecn else 0
    switch_queue = f"{opts.buffer_bytes}B"
    for lk in fabric.links:
        devs = p2p(lk.capacity_mbps, switch_queue).Install(switch_nodes[lk.leaf.switch],
                                                          switch_nodes[lk.spine.switch])
        a = psim.AddSwitchPort(devs.Get(0), "", False, ecn)
        b = psim.AddSwitchPort(devs.Get(1), "", False, ecn)
        net.ports[a] = SwitchPort(lk.leaf.switch, lk.leaf.port, a, lk.name)
        net.ports[b] = SwitchPort(lk.spine.switch, lk.spine.port, b, lk.name)
        net.dev_of[lk.leaf.switch, lk.leaf.port] = a
        net.dev_of[lk.spine.switch, lk.spine.port] = b
        net.cut_models[lk.name] = (psim.DevCut(a), psim.DevCut(b))
        net.links[lk.name] = lk
        net.link_gbps[lk.name] = lk.capacity_mbps / 1000

    tc = ns.TrafficControlHelper()
    tc.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", ns.StringValue(f"{opts.host_queue}p"))
    static = ns.Ipv4StaticRoutingHelper()
    nic_if: dict[tuple[str, int], int] = {}
    for h in fabric.hosts:
        node = hosts[h.name]
        ipv4 = node.GetObject[ns.Ipv4]()
        for rail, nic in enumerate(h.nics):
            leaf = switch_nodes[nic.leaf]
            devs = p2p(nic.capacity_mbps, f"{opts.host_queue}p").Install(node, leaf)
            host_dev, leaf_dev = devs.Get(0), devs.Get(1)
            # the Ethernet header the host's NIC would have put on: to the leaf's MAC
            prefix = switch_macs[nic.leaf] + mac_bytes(nic.mac) + b"\x08\x00"
            d = psim.AddSwitchPort(leaf_dev, prefix.decode("latin-1"), True, ecn)
            name = f"{h.name}:{nic.name}"
            net.ports[d] = SwitchPort(nic.leaf, nic.port, d, name)
            net.dev_of[nic.leaf, nic.port] = d
            net.cut_models[name] = (psim.CutModel(host_dev), psim.DevCut(d))
            iface = fabric.nic_interface(nic)
            index = ipv4.AddInterface(host_dev)
            ipv4.AddAddress(index, ns.Ipv4InterfaceAddress(
                ns.Ipv4Address(str(iface.ip)), ns.Ipv4Mask(str(iface.netmask))))
            ipv4.SetUp(index)
            tc.Install(host_dev)
            nic_if[h.name, rail] = index
    for h in fabric.hosts:
        routing = static.GetStaticRouting(hosts[h.name].GetObject[ns.Ipv4]())
        for peer in fabric.hosts:
            if peer.name == h.name:
                continue
            for prail, pnic in enumerate(peer.nics):
                rail = prail % len(h.nics)
                if h.nics[rail].leaf == pnic.leaf:
                    continue  # the connected route of the shared subnet already goes there
                routing.AddHostRouteTo(ns.Ipv4Address(str(pnic.ip)), nic_if[h.name, rail])
    return net

