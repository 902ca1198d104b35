"""Regular fabrics generated from a few numbers (``leaf_spine``)."""

from __future__ import annotations

import ipaddress

from .loader import parse_capacity
from .model import (
    MAX_PORT,
    Control,
    Endpoint,
    Fabric,
    FabricError,
    Host,
    Link,
    Nic,
    Role,
    Switch,
    with_addresses,
)


def leaf_spine(leaves: int, spines: int, hosts_per_leaf: int, nics_per_host: int = 1, *,
               links_per_pair: int = 1, link_capacity: str = "100Mbit",
               nic_capacity: str = "100Mbit", name: str | None = None,
               cpu_port: int = 255, control: Control | None = None) -> Fabric:
    """A symmetric leaf-spine fabric with rail-optimised multi-NIC hosts.

    Leaves are grouped in pods of ``nics_per_host`` consecutive leaves; a host
    in a pod has NIC k (rail k) on the pod's k-th leaf, so every leaf carries
    ``hosts_per_leaf`` NICs. Leaf ports 1..hosts_per_leaf face hosts, the
    following ports are uplinks (``links_per_pair`` parallel links per spine).
    Leaves get ids 1..L, spines L+1..L+S; leaf i has subnet 10.<i//256>.<i%256>.0/24.
    """
    for label, v, lo in (("leaves", leaves, 1), ("spines", spines, 1),
                         ("hosts_per_leaf", hosts_per_leaf, 0), ("nics_per_host", nics_per_host, 1),
                         ("links_per_pair", links_per_pair, 1)):
        if not isinstance(v, int) or v < lo:
            raise FabricError(f"{label} must be an integer >= {lo}, got {v!r}", "leaf_spine")
    if leaves % nics_per_host:
        raise FabricError(f"leaves ({leaves}) must be a multiple of nics_per_host "
                          f"({nics_per_host}) for rail-optimised hosts", "leaf_spine")
    if hosts_per_leaf + spines * links_per_pair > MAX_PORT - 1 or leaves * links_per_pair > MAX_PORT - 1:
        raise FabricError("too many ports per switch for this fabric", "leaf_spine")
    link_mbps = parse_capacity(link_capacity, "leaf_spine", "link_capacity")
    nic_mbps = parse_capacity(nic_capacity, "leaf_spine", "nic_capacity")
    control = control or Control()

    leaf_sw = [Switch(f"l{i}", Role.LEAF, i,
                      ipaddress.IPv4Network(f"10.{i // 256}.{i % 256}.0/24"))
               for i in range(1, leaves + 1)]
    spine_sw = [Switch(f"s{j}", Role.SPINE, leaves + j) for j in range(1, spines + 1)]
    links = []
    for li, leaf in enumerate(leaf_sw):
        for sj, spine in enumerate(spine_sw):
            for m in range(links_per_pair):
                links.append(Link(
                    Endpoint(leaf.name, hosts_per_leaf + 1 + sj * links_per_pair + m),
                    Endpoint(spine.name, 1 + li * links_per_pair + m),
                    link_mbps))
    hosts = []
    pods = leaves // nics_per_host
    for pod in range(pods):
        for j in range(hosts_per_leaf):
            hnum = pod * hosts_per_leaf + j + 1
            nics = []
            for k in range(nics_per_host):
                leaf = leaf_sw[pod * nics_per_host + k]
                assert leaf.subnet is not None  # every generated leaf has one
                nics.append(Nic(
                    f"eth{k}", leaf.name, j + 1,
                    f"02:00:{leaf.id >> 8:02x}:{leaf.id & 0xFF:02x}:00:{j + 1:02x}",
                    ipaddress.IPv4Address(int(leaf.subnet.network_address) + 10 + j),
                    nic_mbps))
            hosts.append(Host(f"h{hnum}", tuple(nics)))
    return Fabric(
        name=name or f"ls{leaves}x{spines}",
        switches=tuple(with_addresses(s, control) for s in leaf_sw + spine_sw),
        links=tuple(links), hosts=tuple(hosts), cpu_port=cpu_port, control=control)
