"""The fabric model: a validated two-tier leaf-spine network as frozen dataclasses.

A fabric is a two-tier leaf-spine network: leaves (ToR switches) carry hosts,
spines connect leaves; links run only between a leaf and a spine and may be
parallel (a bundle). Hosts have several NICs (rails), each on a leaf port.
Capacities are in Mbit/s. ``check_fabric`` enforces the cross-object rules
(unique names, ids, ports and addresses; every pair of leaves shares a spine)
for every fabric however it was built; ``fabricmodel.loader`` reads files and
``fabricmodel.generate`` builds regular fabrics.
"""

from __future__ import annotations

import dataclasses
import enum
import ipaddress
import re
from dataclasses import dataclass, field

MAX_PORT = 511  # BMv2 and the v1model standard metadata use 9-bit ports


class FabricError(ValueError):
    """A fabric description that cannot be used; names the file, key path and line."""

    def __init__(self, message: str, file: str = "<fabric>", path: str = "", line: int | None = None):
        self.file = file
        self.path = path
        self.line = line
        self.message = message
        where = file if line is None else f"{file}:{line}"
        super().__init__(f"{where}: {path}: {message}" if path else f"{where}: {message}")


class Role(enum.StrEnum):
    """The tier a switch sits in."""

    LEAF = "leaf"
    SPINE = "spine"


@dataclass(frozen=True)
class Endpoint:
    """One end of a link: a switch and its data-plane port."""

    switch: str
    port: int


@dataclass(frozen=True)
class Link:
    """A leaf-spine link; ``leaf`` is always the leaf end, ``spine`` the spine end."""

    leaf: Endpoint
    spine: Endpoint
    capacity_mbps: float
    """Line rate in Mbit/s (a reduced link is written with its reduced rate)."""
    up: bool = True
    """False for a link that starts failed (``status: down``)."""

    @property
    def name(self) -> str:
        """Stable name, e.g. ``l1:3-s1:1``."""
        return f"{self.leaf.switch}:{self.leaf.port}-{self.spine.switch}:{self.spine.port}"


@dataclass(frozen=True)
class Switch:
    """A leaf or spine switch."""

    name: str
    role: Role
    id: int
    """Fabric-wide unique id; also the P4Runtime device id."""
    subnet: ipaddress.IPv4Network | None = None
    """Leaves only: the subnet of the hosts' NICs attached to this leaf."""
    p4runtime: str = ""
    """host:port of the switch's P4Runtime server."""
    syncmesh: str = ""
    """host:port of the switch's SyncMesh daemon."""
    metrics: str = ""
    """host:port of the SyncMesh daemon's metrics endpoint."""

    @property
    def is_leaf(self) -> bool:
        """True for a leaf (ToR) switch."""
        return self.role is Role.LEAF


@dataclass(frozen=True)
class Nic:
    """A host NIC (one rail) attached to a leaf port."""

    name: str
    leaf: str
    port: int
    mac: str
    """Lower-case colon-separated MAC address."""
    ip: ipaddress.IPv4Address
    capacity_mbps: float


@dataclass(frozen=True)
class Host:
    """A host (training node) with one NIC per rail."""

    name: str
    nics: tuple[Nic, ...]


@dataclass(frozen=True)
class Control:
    """Where each switch's control services listen by default."""

    address: str = "127.0.0.1"
    p4runtime_base: int = 50000
    """P4Runtime port of a switch = this + switch id."""
    syncmesh_base: int = 52000
    """SyncMesh port of a switch = this + switch id."""
    metrics_base: int = 54000
    """Metrics (HTTP) port of a switch's daemon = this + switch id."""


@dataclass(frozen=True)
class PortInfo:
    """What sits behind one switch port."""

    switch: str
    port: int
    kind: str
    """``"fabric"`` (a leaf-spine link) or ``"host"`` (a host NIC)."""
    peer: str
    """The switch (fabric) or host (host) at the other end."""
    peer_port: int | str
    """The peer's port number (fabric) or NIC name (host)."""
    capacity_mbps: float
    up: bool = True


@dataclass(frozen=True)
class Fabric:
    """A validated leaf-spine fabric. Build it with ``load``, ``parse`` or ``leaf_spine``."""

    name: str
    switches: tuple[Switch, ...]
    links: tuple[Link, ...]
    hosts: tuple[Host, ...] = ()
    cpu_port: int = 255
    control: Control = field(default_factory=Control)

    def __post_init__(self) -> None:
        check_fabric(self, "<fabric>", {})

    # -- lookups -------------------------------------------------------------
    def switch(self, name: str) -> Switch:
        """The switch called ``name`` (KeyError if none)."""
        for sw in self.switches:
            if sw.name == name:
                return sw
        raise KeyError(f"no switch {name!r} in fabric {self.name!r}")

    def host(self, name: str) -> Host:
        """The host called ``name`` (KeyError if none)."""
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(f"no host {name!r} in fabric {self.name!r}")

    @property
    def leaves(self) -> tuple[Switch, ...]:
        """Leaf switches in file order."""
        return tuple(s for s in self.switches if s.role is Role.LEAF)

    @property
    def spines(self) -> tuple[Switch, ...]:
        """Spine switches in file order."""
        return tuple(s for s in self.switches if s.role is Role.SPINE)

    def links_of(self, switch: str) -> tuple[Link, ...]:
        """Links with one end on ``switch``."""
        return tuple(lk for lk in self.links if switch in (lk.leaf.switch, lk.spine.switch))

    def links_between(self, leaf: str, spine: str) -> tuple[Link, ...]:
        """The bundle of parallel links between a leaf and a spine, in file order."""
        return tuple(lk for lk in self.links if lk.leaf.switch == leaf and lk.spine.switch == spine)

    def ports(self, switch: str) -> dict[int, PortInfo]:
        """Every used port of ``switch`` with what is behind it."""
        out: dict[int, PortInfo] = {}
        for lk in self.links:
            if lk.leaf.switch == switch:
                out[lk.leaf.port] = PortInfo(switch, lk.leaf.port, "fabric", lk.spine.switch,
                                             lk.spine.port, lk.capacity_mbps, lk.up)
            if lk.spine.switch == switch:
                out[lk.spine.port] = PortInfo(switch, lk.spine.port, "fabric", lk.leaf.switch,
                                              lk.leaf.port, lk.capacity_mbps, lk.up)
        for h in self.hosts:
            for nic in h.nics:
                if nic.leaf == switch:
                    out[nic.port] = PortInfo(switch, nic.port, "host", h.name, nic.name,
                                             nic.capacity_mbps)
        return dict(sorted(out.items()))

    def leaf_of_ip(self, ip: str | ipaddress.IPv4Address) -> Switch | None:
        """The leaf whose subnet holds ``ip``, or None."""
        addr = ipaddress.IPv4Address(ip)
        for leaf in self.leaves:
            if leaf.subnet is not None and addr in leaf.subnet:
                return leaf
        return None

    def nic_interface(self, nic: Nic) -> ipaddress.IPv4Interface:
        """The NIC's address with its leaf's prefix length (e.g. ``10.0.1.10/24``)."""
        subnet = self.switch(nic.leaf).subnet
        assert subnet is not None
        return ipaddress.IPv4Interface(f"{nic.ip}/{subnet.prefixlen}")

    def with_link(self, link: Link, *, capacity_mbps: float | None = None,
                  up: bool | None = None) -> Fabric:
        """A copy with one link's capacity and/or status changed."""
        if link not in self.links:
            raise KeyError(f"link {link.name} not in fabric {self.name!r}")
        new = dataclasses.replace(
            link,
            capacity_mbps=link.capacity_mbps if capacity_mbps is None else float(capacity_mbps),
            up=link.up if up is None else up,
        )
        return dataclasses.replace(self, links=tuple(new if lk == link else lk for lk in self.links))


def with_addresses(sw: Switch, control: Control) -> Switch:
    """``sw`` with every service address it leaves empty derived from ``control``."""
    return dataclasses.replace(
        sw,
        p4runtime=sw.p4runtime or f"{control.address}:{control.p4runtime_base + sw.id}",
        syncmesh=sw.syncmesh or f"{control.address}:{control.syncmesh_base + sw.id}",
        metrics=sw.metrics or f"{control.address}:{control.metrics_base + sw.id}",
    )


def check_fabric(fab: Fabric, file: str, lines: dict[str, int],
                  sides: dict[int, tuple[str, str]] | None = None) -> None:
    """Cross-object consistency: unique names/ids/ports/addresses, leaf-spine reachability."""

    sides = sides or {}

    def err(path: str, message: str) -> FabricError:
        return FabricError(message, file, path, lines.get(path))

    if not fab.switches:
        raise err("switches", "a fabric needs at least one switch")
    names: dict[str, str] = {}
    ids: dict[int, str] = {}
    for i, sw in enumerate(fab.switches):
        p = f"switches[{i}]"
        if sw.name in names:
            raise err(f"{p}.name", f"name {sw.name!r} already used by {names[sw.name]}")
        names[sw.name] = p
        if not 1 <= sw.id <= 0xFFFF:
            raise err(f"{p}.id", f"id {sw.id} out of range 1..65535")
        if sw.id in ids:
            raise err(f"{p}.id", f"id {sw.id} already used by {ids[sw.id]}")
        ids[sw.id] = p
        if sw.role is Role.LEAF and sw.subnet is None:
            raise err(p, f"leaf {sw.name!r} needs a 'subnet' for its hosts")
        if sw.role is Role.SPINE and sw.subnet is not None:
            raise err(f"{p}.subnet", f"spine {sw.name!r} cannot have a subnet")
        for key in ("p4runtime", "syncmesh", "metrics"):
            addr = getattr(sw, key)
            if addr and (not re.match(r"^[^\s:]+:\d{1,5}$", addr)
                         or not 0 < int(addr.rsplit(":", 1)[1]) < 65536):
                raise err(f"{p}.{key}", f"expected host:port with a TCP port, got {addr!r}"
                          + ("" if f"{p}.{key}" in lines else " (derived from 'control')"))
    subnets = [(f"switches[{i}].subnet", s.name, s.subnet)
               for i, s in enumerate(fab.switches) if s.subnet is not None]
    for i, (pa, name_a, net_a) in enumerate(subnets):
        for pb, name_b, net_b in subnets[:i]:
            if net_a.overlaps(net_b):
                raise err(pa, f"subnet {net_a} of {name_a!r} overlaps {net_b} of "
                              f"{name_b!r} ({pb})")

    used: dict[tuple[str, int], str] = {}

    def claim(switch: str, port: int, path: str) -> None:
        if (switch, port) in used:
            raise err(path, f"port {port} of {switch!r} already used by {used[switch, port]}")
        used[switch, port] = path.rsplit(".", 1)[0]

    for i, lk in enumerate(fab.links):
        p = f"links[{i}]"
        for end in (lk.leaf, lk.spine):
            if end.switch not in names:
                raise err(p, f"unknown switch {end.switch!r}")
        if fab.switch(lk.leaf.switch).role is not Role.LEAF or \
                fab.switch(lk.spine.switch).role is not Role.SPINE:
            raise err(p, "links must join a leaf and a spine")
        if not lk.capacity_mbps > 0:
            raise err(f"{p}.capacity", "capacity must be positive")
        leaf_key, spine_key = sides.get(i, ("leaf", "spine"))
        claim(lk.leaf.switch, lk.leaf.port, f"{p}.{leaf_key}.port")
        claim(lk.spine.switch, lk.spine.port, f"{p}.{spine_key}.port")

    host_names: dict[str, str] = {}
    macs: dict[str, str] = {}
    ips: dict[ipaddress.IPv4Address, str] = {}
    for i, h in enumerate(fab.hosts):
        p = f"hosts[{i}]"
        if h.name in names or h.name in host_names:
            raise err(f"{p}.name", f"name {h.name!r} already used by "
                                   f"{names.get(h.name) or host_names[h.name]}")
        host_names[h.name] = p
        nic_names: set[str] = set()
        for j, nic in enumerate(h.nics):
            q = f"{p}.nics[{j}]"
            if nic.name in nic_names:
                raise err(f"{q}.name", f"NIC name {nic.name!r} used twice on host {h.name!r}")
            nic_names.add(nic.name)
            if nic.leaf not in names:
                raise err(f"{q}.leaf", f"unknown switch {nic.leaf!r}")
            leaf = fab.switch(nic.leaf)
            if leaf.role is not Role.LEAF:
                raise err(f"{q}.leaf", f"hosts attach to leaves; {nic.leaf!r} is a spine")
            claim(nic.leaf, nic.port, f"{q}.port")
            mac_bytes = bytes.fromhex(nic.mac.replace(":", ""))
            if mac_bytes[0] & 1:
                raise err(f"{q}.mac", f"{nic.mac} is a multicast address")
            if nic.mac in macs:
                raise err(f"{q}.mac", f"MAC {nic.mac} already used by {macs[nic.mac]}")
            macs[nic.mac] = q
            if nic.ip in ips:
                raise err(f"{q}.ip", f"IP {nic.ip} already used by {ips[nic.ip]}")
            ips[nic.ip] = q
            assert leaf.subnet is not None
            if nic.ip not in leaf.subnet:
                raise err(f"{q}.ip", f"{nic.ip} is not in {nic.leaf}'s subnet {leaf.subnet}")
            if leaf.subnet.prefixlen < 31 and nic.ip in (leaf.subnet.network_address,
                                                         leaf.subnet.broadcast_address):
                raise err(f"{q}.ip", f"{nic.ip} is the network or broadcast address of "
                                     f"{leaf.subnet}")
            if not nic.capacity_mbps > 0:
                raise err(f"{q}.capacity", "capacity must be positive")

    # Every leaf must reach every other leaf through some spine (two-tier: one spine hop).
    spines_of: dict[str, set[str]] = {s.name: set() for s in fab.leaves}
    for lk in fab.links:
        spines_of[lk.leaf.switch].add(lk.spine.switch)
    for i, sw in enumerate(fab.switches):
        if sw.role is Role.SPINE and not any(lk.spine.switch == sw.name for lk in fab.links):
            raise err(f"switches[{i}]", f"spine {sw.name!r} has no links")
    leaves = fab.leaves
    if len(leaves) > 1 or fab.spines:
        for i, sw in enumerate(fab.switches):
            if sw.role is Role.LEAF and not spines_of[sw.name]:
                raise err(f"switches[{i}]", f"leaf {sw.name!r} has no uplinks")
    for i, a in enumerate(leaves):
        for b in leaves[:i]:
            if not spines_of[a.name] & spines_of[b.name]:
                raise err("links", f"leaves {b.name!r} and {a.name!r} share no spine, so "
                                   "they cannot reach each other")
