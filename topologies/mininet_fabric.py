"""A Mininet network built from a fabric description (the ``fabricmodel`` package).

Every switch of the fabric becomes a ``P4RuntimeSwitch`` (``softswitch run`` by
default, BMv2 with ``TARGET=bmv2``) started without a program: its controller
(SyncMesh through ``syncmesh.p4runtime_driver``) pushes ``p4src/sglb.p4``.
Every link becomes a ``TCLink`` shaped to the fabric's capacity with an HTB
rate limit (no netem: some kernels lack it; ``topologies.shapedintf`` names the HTB
quantum so that rates above 16 Mbit/s raise no tc warnings). Hosts get one interface per NIC
(rail) with the fabric's MAC and address, and source-based routing so that
traffic from a NIC's address leaves by that NIC and everything in the fabric
is reached through its leaf (the leaves answer ARP for the whole fabric).

Node names carry an optional prefix (tests use ``tb``) so that several
networks can coexist on one machine; interface names are ``<node>-eth<port>``
for switches and ``<host>-<nic>`` for hosts, at most 15 characters.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bmv2.process import free_ports
from fabricmodel import Fabric, Link, Nic

IFNAMSIZ = 15  # Linux interface names: 15 characters + NUL
FABRIC_SUPERNET = "10.0.0.0/8"  # what hosts route through their leaves
ROUTE_TABLE_BASE = 100  # policy routing table of NIC k: ROUTE_TABLE_BASE + k


class FabricNetError(RuntimeError):
    """The fabric cannot be built as a Mininet network (message names the node or link)."""


@dataclass(frozen=True)
class NetOptions:
    """How the Mininet network is built."""

    prefix: str = ""
    """Prepended to every node name (and so to every interface name)."""
    rate_scale: float = 1.0
    """Link rates are the fabric's capacities times this factor."""
    log_dir: Path = Path("out/logs")
    """Switch process logs go here."""
    target: str | None = None
    """softswitch (default) or bmv2; None: the TARGET environment variable."""
    free_ports: bool = True
    """Serve P4Runtime and SyncMesh on free local ports instead of the fabric's fixed ones."""
    fabric_mtu: int = 1500
    """MTU of the leaf-spine interfaces; above 1500 when the fabric tags frames (an
    overlay's usual jumbo fabric): sglb.p4's tag adds 20 bytes to leaf-to-leaf frames."""


def with_free_addresses(fabric: Fabric) -> Fabric:
    """A copy of ``fabric`` whose switches serve P4Runtime, SyncMesh and metrics on free ports."""
    ports = iter(free_ports(3 * len(fabric.switches)))
    switches = tuple(dataclasses.replace(
        sw, p4runtime=f"127.0.0.1:{next(ports)}", syncmesh=f"127.0.0.1:{next(ports)}",
        metrics=f"127.0.0.1:{next(ports)}") for sw in fabric.switches)
    return dataclasses.replace(fabric, switches=switches)


def check_names(fabric: Fabric, prefix: str) -> None:
    """Refuse prefixes that make an interface name longer than Linux allows."""
    for sw in fabric.switches:
        for port in fabric.ports(sw.name):
            name = f"{prefix}{sw.name}-eth{port}"
            if len(name) > IFNAMSIZ:
                raise FabricNetError(f"interface name {name!r} of switch {sw.name} is longer than "
                                   f"{IFNAMSIZ} characters: use a shorter prefix")
    for host in fabric.hosts:
        for nic in host.nics:
            name = f"{prefix}{host.name}-{nic.name}"
            if len(name) > IFNAMSIZ:
                raise FabricNetError(f"interface name {name!r} of host {host.name} is longer than "
                                   f"{IFNAMSIZ} characters: use a shorter prefix")


class FabricNet:
    """The Mininet network of one fabric: build, start, cut and restore links, stop."""

    def __init__(self, fabric: Fabric, options: NetOptions | None = None) -> None:
        self.options = options or NetOptions()
        check_names(fabric, self.options.prefix)
        self.fabric = with_free_addresses(fabric) if self.options.free_ports else fabric
        self.net = None
        self._started = False
        target = (self.options.target or os.environ.get("TARGET") or "softswitch").lower()
        self.spliced = target == "bmv2"
        """Links are spliced (topologies.splicedlink): a cut leaves both ends admin up."""

    # -- names -------------------------------------------------------------

    def node_name(self, name: str) -> str:
        """The Mininet node of a fabric switch or host."""
        return f"{self.options.prefix}{name}"

    def switch_intf(self, switch: str, port: int) -> str:
        """Interface name of a switch port."""
        return f"{self.node_name(switch)}-eth{port}"

    def nic_intf(self, host: str, nic: Nic) -> str:
        """Interface name of a host NIC."""
        return f"{self.node_name(host)}-{nic.name}"

    def host(self, name: str):
        """The Mininet host of a fabric host."""
        assert self.net is not None
        return self.net.get(self.node_name(name))

    def switch(self, name: str):
        """The Mininet switch node of a fabric switch."""
        assert self.net is not None
        return self.net.get(self.node_name(name))

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> None:
        """Create nodes and shaped links, start the switch processes, configure the hosts."""
        from mininet.net import Mininet

        from topologies.p4switch import P4RuntimeSwitch
        from topologies.shapedintf import ShapedLink

        link_cls: type = ShapedLink
        if self.spliced:
            from topologies.splicedlink import SplicedTCLink

            link_cls = SplicedTCLink
        net = Mininet(topo=None, build=False, controller=None, autoSetMacs=False,
                      autoStaticArp=False, waitConnected=False)
        self.net = net
        log_dir = self.options.log_dir
        for sw in self.fabric.switches:
            port = int(sw.p4runtime.rpartition(":")[2])
            net.addSwitch(self.node_name(sw.name), cls=P4RuntimeSwitch, program=None,
                          grpc_port=port, device_id=sw.id, target=self.options.target,
                          log_dir=str(log_dir), cpu_port=self.fabric.cpu_port)
        for host in self.fabric.hosts:
            net.addHost(self.node_name(host.name), ip=None)
        scale = self.options.rate_scale
        for link in self.fabric.links:
            net.addLink(self.node_name(link.leaf.switch), self.node_name(link.spine.switch),
                        port1=link.leaf.port, port2=link.spine.port, cls=link_cls,
                        bw=link.capacity_mbps * scale)
        for host in self.fabric.hosts:
            for k, nic in enumerate(host.nics):
                net.addLink(self.node_name(host.name), self.node_name(nic.leaf), port1=k,
                            port2=nic.port, intfName1=self.nic_intf(host.name, nic),
                            cls=link_cls, bw=nic.capacity_mbps * scale)
        net.build()
        if self.options.fabric_mtu != 1500:
            for link in self.fabric.links:
                for end in (link.leaf, link.spine):
                    intf = self.switch_intf(end.switch, end.port)
                    names = [intf]
                    if self.spliced:  # a veth takes what its peer sends only up to its own MTU
                        from topologies.splicedlink import middle_name

                        names.append(middle_name(intf))
                    for name in names:
                        self.switch(end.switch).cmd(f"ip link set {name} mtu {self.options.fabric_mtu}")
        for host in self.fabric.hosts:
            self._configure_host(host.name)
        for sw in net.switches:
            sw.start([])
        self._started = True
        for link in self.fabric.links:
            if not link.up:
                self.set_link(link, up=False)

    def _configure_host(self, name: str) -> None:
        node = self.host(name)
        # several NICs on one host: answer ARP only for a NIC's own address, and
        # accept traffic on any NIC (rails are symmetric, the fabric is routed)
        for key, value in (("net.ipv4.conf.all.arp_ignore", 1),
                           ("net.ipv4.conf.all.arp_announce", 2),
                           ("net.ipv4.conf.all.rp_filter", 0),
                           ("net.ipv4.conf.default.rp_filter", 0)):
            node.cmd(f"sysctl -qw {key}={value}")
        for k, nic in enumerate(self.fabric.host(name).nics):
            intf = self.nic_intf(name, nic)
            iface = self.fabric.nic_interface(nic)
            table = ROUTE_TABLE_BASE + k
            node.cmd(f"sysctl -qw net.ipv4.conf.{intf}.rp_filter=0")
            node.cmd(f"ethtool -K {intf} tx off rx off sg off tso off gso off gro off "
                     ">/dev/null 2>&1")
            node.cmd(f"ip link set {intf} address {nic.mac}")
            node.cmd(f"ip addr flush dev {intf}")
            node.cmd(f"ip addr add {iface.with_prefixlen} dev {intf}")
            node.cmd(f"ip link set {intf} up")
            node.cmd(f"ip route replace {FABRIC_SUPERNET} dev {intf} table {table}")
            node.cmd(f"ip rule del from {nic.ip} table {table} 2>/dev/null")
            node.cmd(f"ip rule add from {nic.ip} table {table} pref {table}")
        # a socket not bound to an address follows the first rail
        first = self.fabric.host(name).nics[0]
        node.cmd(f"ip route replace {FABRIC_SUPERNET} dev {self.nic_intf(name, first)}")

    def stop(self) -> None:
        """Stop switch processes and remove every node and interface this network created."""
        net, self.net = self.net, None
        if net is None:
            return
        try:
            net.stop()
        finally:
            leftover_cleanup(self.options.prefix, self.fabric)

    def __enter__(self) -> FabricNet:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- faults --------------------------------------------------------------

    def find_link(self, a: str, b: str, index: int = 0) -> Link:
        """The ``index``-th fabric link between switches ``a`` and ``b`` (either order)."""
        for leaf, spine in ((a, b), (b, a)):
            found = self.fabric.links_between(leaf, spine) if self._is_leaf(leaf) else ()
            if found:
                if index >= len(found):
                    raise FabricNetError(f"{a}-{b} has {len(found)} links, no index {index}")
                return found[index]
        raise FabricNetError(f"no link between {a} and {b} in fabric {self.fabric.name}")

    def _is_leaf(self, name: str) -> bool:
        try:
            return self.fabric.switch(name).is_leaf
        except (KeyError, ValueError):
            return False

    def set_link(self, link: Link, up: bool) -> None:
        """Cut or restore a leaf-spine link: the spine end goes admin down, the leaf loses
        carrier (on BMv2: both ends lose carrier, topologies.splicedlink)."""
        assert self.net is not None
        if self.spliced:
            from topologies.splicedlink import set_middles

            set_middles(self.switch_intf(link.leaf.switch, link.leaf.port),
                        self.switch_intf(link.spine.switch, link.spine.port), up)
            return
        self.switch(link.spine.switch).set_port_up(link.spine.port, up)

    def set_nic(self, host: str, nic: str, up: bool) -> None:
        """Cut or restore a host's last-hop link: the leaf end goes admin down, the NIC loses carrier.

        The host side keeps its addresses and routes, as with a pulled cable (on BMv2
        both ends lose carrier and stay admin up, topologies.splicedlink).
        """
        h = self.fabric.host(host)
        matches = [n for n in h.nics if n.name == nic]
        if not matches:
            raise FabricNetError(f"host {host} has no NIC {nic!r} (has {[n.name for n in h.nics]})")
        if self.spliced:
            from topologies.splicedlink import set_middles

            set_middles(self.nic_intf(host, matches[0]),
                        self.switch_intf(matches[0].leaf, matches[0].port), up)
            return
        self.switch(matches[0].leaf).set_port_up(matches[0].port, up)


def _interfaces() -> Iterator[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split(":", 2)
        if len(parts) > 1:
            yield parts[1].strip().split("@", 1)[0]


def leftover_cleanup(prefix: str, fabric: Fabric) -> list[str]:
    """Delete root-namespace interfaces of this fabric's switches that survived a crash.

    Only names ``<prefix><switch>-eth<port>`` of this fabric are touched, never
    other networks' (unlike ``mn -c``). Returns the names deleted.
    """
    from topologies.splicedlink import middle_name

    mine = {f"{prefix}{sw.name}-eth{p}" for sw in fabric.switches for p in fabric.ports(sw.name)}
    mine |= {middle_name(name) for name in mine}
    mine |= {middle_name(f"{prefix}{h.name}-{n.name}") for h in fabric.hosts for n in h.nics}
    removed = []
    for name in _interfaces():
        if name in mine:
            subprocess.run(["ip", "link", "del", name], capture_output=True)
            removed.append(name)
    return removed


def fabric_addresses(fabric: Fabric) -> dict[str, list[str]]:
    """Host name -> its NIC addresses in rail order."""
    return {h.name: [str(ipaddress.IPv4Address(n.ip)) for n in h.nics] for h in fabric.hosts}
