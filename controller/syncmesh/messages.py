"""SyncMesh messages as plain data (the wire form is in ``syncmesh.wire``).

No message names its sender: the receiver knows who is speaking from the
session (the peer's certificate), never from a field the sender fills in.
"""

from __future__ import annotations

from dataclasses import dataclass

from .linkstate import PortState
from .profiles import Profile


@dataclass(frozen=True)
class Hello:
    """Opens a session (the first message each way) and keeps it alive."""

    incarnation: int
    seq: int


@dataclass(frozen=True)
class LinkNotice:
    """Link-end states, the sender's own or relayed from its links' other ends."""

    states: tuple[PortState, ...]


@dataclass(frozen=True)
class ProfileUpdate:
    """The sending spine's congestion profile, whole or only the entries that changed."""

    profile: Profile
    delta: bool = False
    """True: ``profile.levels`` holds only what changed since version seq - 1."""


@dataclass(frozen=True)
class ResyncChunk:
    """Part of the full state sent to a (re)joining peer."""

    ports: tuple[PortState, ...]
    profile: Profile | None = None
    """The sender's own full profile (spines, in the first chunk)."""
    last: bool = True
    """The last chunk of this resync."""


Message = Hello | LinkNotice | ProfileUpdate | ResyncChunk
