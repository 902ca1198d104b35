"""What the decision logic wants a switch to hold, as plain data.

The core describes its switch's desired state as a set of these operations,
each with a ``key``; a change of state is the set of operations whose value
changed under the same key. ``syncmesh.driver`` maps them to P4Runtime
entities of ``p4src/sglb.p4``.
"""

from __future__ import annotations

from dataclasses import dataclass

OpKey = tuple[str | int, ...]
"""What an op sets on the switch; ops with equal keys replace each other."""


@dataclass(frozen=True)
class SwitchConfig:
    """Role, id and load-balancing mode: GLB path selection (True) or hash ECMP (False)."""

    role: str
    switch_id: int
    glb: bool
    notice_group: int

    @property
    def key(self) -> tuple:
        """The switch entry this op sets; equal keys replace each other."""
        return ("config",)


@dataclass(frozen=True)
class SpinePaths:
    """Leaf: the path indices that cross spine ``spine_id`` (slot: its order among the spines;
    sglb.p4 keys notice state by path now and does not use it)."""

    spine_id: int
    slot: int
    paths: tuple[int, ...]

    @property
    def key(self) -> tuple:
        """The switch entry this op sets; equal keys replace each other."""
        return ("spine_paths", self.spine_id)


@dataclass(frozen=True)
class PortPeer:
    """Spine: the leaf behind a downlink and the other ports of the same bundle."""

    port: int
    leaf_id: int
    siblings: tuple[int, ...]

    @property
    def key(self) -> tuple:
        """The switch entry this op sets; equal keys replace each other."""
        return ("port_peer", self.port)


@dataclass(frozen=True)
class HostRoute:
    """Leaf: a directly attached host NIC."""

    ip: str
    port: int
    mac: str

    @property
    def key(self) -> tuple:
        """The switch entry this op sets; equal keys replace each other."""
        return ("host", self.ip)


@dataclass(frozen=True)
class LeafRoute:
    """Leaf and spine: a leaf's subnet belongs to that leaf (by id)."""

    subnet: str
    dst_leaf: int

    @property
    def key(self) -> tuple:
        """The switch entry this op sets; equal keys replace each other."""
        return ("leaf_route", self.subnet)


@dataclass(frozen=True)
class PathEntry:
    """Leaf: candidate path ``index`` toward ``dst_leaf`` leaves by ``port``; ``live`` or not."""

    dst_leaf: int
    index: int
    port: int
    live: bool
    capacity_mbps: float = 0.0
    """What this path can carry to ``dst_leaf`` (0 when dead): the capacity weight."""

    @property
    def key(self) -> tuple:
        """The switch entry this op sets; equal keys replace each other."""
        return ("path", self.dst_leaf, self.index)


@dataclass(frozen=True)
class RemoteCongestion:
    """Leaf: the remote (spine to destination) congestion level of one path."""

    dst_leaf: int
    index: int
    level: int

    @property
    def key(self) -> tuple:
        """The switch entry this op sets; equal keys replace each other."""
        return ("congestion", self.dst_leaf, self.index)


@dataclass(frozen=True)
class PortCapacity:
    """Leaf and spine: line rate of a fabric port, for normalising utilisation."""

    port: int
    mbps: float

    @property
    def key(self) -> tuple:
        """The switch entry this op sets; equal keys replace each other."""
        return ("capacity", self.port)


@dataclass(frozen=True)
class SpineRoute:
    """Spine: the live ports of its bundle toward ``dst_leaf`` (empty: unreachable)."""

    dst_leaf: int
    ports: tuple[int, ...]

    @property
    def key(self) -> tuple:
        """The switch entry this op sets; equal keys replace each other."""
        return ("spine_route", self.dst_leaf)


@dataclass(frozen=True)
class MulticastGroup:
    """Spine: replication group for in-band failure notices, one live port per leaf."""

    group_id: int
    ports: tuple[int, ...]

    @property
    def key(self) -> tuple:
        """The switch entry this op sets; equal keys replace each other."""
        return ("mcast", self.group_id)


SwitchOp = (SwitchConfig | SpinePaths | PortPeer | HostRoute | LeafRoute | PathEntry | RemoteCongestion | PortCapacity
            | SpineRoute | MulticastGroup)

NOTICE_GROUP = 1
"""Multicast group id of the in-band failure notices on spines."""
