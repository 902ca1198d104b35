"""Path computation over a two-tier fabric (pure functions of the fabric and link state).

A leaf's candidate paths toward another leaf are its uplinks, in port order:
path ``i`` leaves through uplink ``i`` to that uplink's spine, which then
hashes over its bundle of links to the destination leaf. The same index is
used for every destination, so the path table is (destination, index) -> port.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fabricmodel import Fabric, Link, Role


@dataclass(frozen=True)
class Path:
    """Candidate path ``index`` from a leaf toward ``dst_leaf`` (by name)."""

    dst_leaf: str
    index: int
    uplink: Link
    downlinks: tuple[Link, ...]
    """The spine's links to the destination leaf (empty: the spine cannot reach it)."""
    siblings: tuple[Link, ...] = ()
    """The source leaf's links to the same spine (this uplink included)."""

    @property
    def port(self) -> int:
        """The leaf's egress port for this path."""
        return self.uplink.leaf.port

    @property
    def spine(self) -> str:
        """The spine this path crosses."""
        return self.uplink.spine.switch


def uplinks(fabric: Fabric, leaf: str) -> tuple[Link, ...]:
    """A leaf's uplinks in port order: the path indices."""
    return tuple(sorted((lk for lk in fabric.links if lk.leaf.switch == leaf),
                        key=lambda lk: lk.leaf.port))


def downlinks(fabric: Fabric, spine: str, leaf: str) -> tuple[Link, ...]:
    """A spine's bundle of links to one leaf, in spine port order."""
    return tuple(sorted(fabric.links_between(leaf, spine), key=lambda lk: lk.spine.port))


def leaf_paths(fabric: Fabric, leaf: str) -> dict[str, tuple[Path, ...]]:
    """Every other leaf's candidate paths from ``leaf``."""
    ups = uplinks(fabric, leaf)
    siblings = {sp: tuple(fabric.links_between(leaf, sp)) for sp in {u.spine.switch for u in ups}}
    return {
        dst.name: tuple(Path(dst.name, i, up, downlinks(fabric, up.spine.switch, dst.name),
                             siblings[up.spine.switch])
                        for i, up in enumerate(ups))
        for dst in fabric.leaves if dst.name != leaf
    }


def path_live(path: Path, link_up: Callable[[Link], bool]) -> bool:
    """Usable when the uplink is up and the spine keeps at least one link to the destination."""
    return link_up(path.uplink) and any(link_up(lk) for lk in path.downlinks)


def path_capacity(path: Path, link_up: Callable[[Link], bool]) -> float:
    """Mbit/s the path can carry: its uplink, or its share of the spine's live links onward.

    The spine's live capacity to the destination is shared by the source
    leaf's uplinks to that spine, so a spine that lost one of two parallel
    links to the destination leaves each of those paths half the capacity.
    """
    onward = sum(lk.capacity_mbps for lk in path.downlinks if link_up(lk))
    siblings = sum(1 for lk in path.siblings if link_up(lk)) or 1
    return min(path.uplink.capacity_mbps, onward / siblings)


def peers_of(fabric: Fabric, switch: str) -> tuple[str, ...]:
    """SyncMesh peers: a leaf talks to its spines, a spine to its leaves (fabric order)."""
    me = fabric.switch(switch)
    linked = {lk.spine.switch if me.role is Role.LEAF else lk.leaf.switch
              for lk in fabric.links_of(switch)}
    return tuple(s.name for s in fabric.switches if s.name in linked)
