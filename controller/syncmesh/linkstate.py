"""Link state as versioned records, one per link end, each owned by the switch it sits on.

A link is up when both of its ends are up. Every record carries an epoch
``Version(incarnation, seq)`` chosen by its owner: ``seq`` grows with every
change the owner sees, and ``incarnation`` (the owner's start time) grows
across restarts. Records merge by keeping the larger epoch, so merging is
commutative, associative and idempotent: old news never overrides new,
whatever order notices arrive in or however often they are repeated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from fabricmodel import Fabric, Link


class Version(NamedTuple):
    """Total order of news from one origin: incarnation first, then sequence."""

    incarnation: int
    seq: int


ZERO = Version(0, 0)


@dataclass(frozen=True)
class PortState:
    """State of one link end as announced by its owner."""

    switch: str
    port: int
    up: bool
    epoch: Version
    detected_at: float = 0.0
    """Owner's clock (s) when it saw the change; 0 for the fabric file's initial state."""


class LinkStateTable:
    """Last-writer-wins records for every link end of a fabric."""

    def __init__(self, fabric: Fabric):
        self.fabric = fabric
        self._records: dict[tuple[str, int], PortState] = {}
        self._link_of: dict[tuple[str, int], Link] = {}
        for lk in fabric.links:
            for end in (lk.leaf, lk.spine):
                self._records[end.switch, end.port] = PortState(end.switch, end.port, lk.up, ZERO)
                self._link_of[end.switch, end.port] = lk

    def knows(self, switch: str, port: int) -> bool:
        """True if (switch, port) is an end of a fabric link."""
        return (switch, port) in self._records

    def get(self, switch: str, port: int) -> PortState:
        """The current record of one link end."""
        return self._records[switch, port]

    def link_of(self, switch: str, port: int) -> Link:
        """The link that (switch, port) belongs to."""
        return self._link_of[switch, port]

    def merge(self, state: PortState) -> bool:
        """Keep ``state`` if its epoch is newer than the stored one; True if it was kept."""
        key = (state.switch, state.port)
        if self._records[key].epoch >= state.epoch:
            return False
        self._records[key] = state
        return True

    def link_up(self, link: Link) -> bool:
        """A link is usable when both of its ends are up."""
        return (self._records[link.leaf.switch, link.leaf.port].up
                and self._records[link.spine.switch, link.spine.port].up)

    def states(self) -> list[PortState]:
        """All records, in fabric order (what a full resync carries)."""
        return list(self._records.values())

    def snapshot(self) -> dict[tuple[str, int], PortState]:
        """A copy of every record keyed by (switch, port)."""
        return dict(self._records)
