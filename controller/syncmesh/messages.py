"""SyncMesh messages as plain data (the wire form is in ``syncmesh.wire``)."""

from __future__ import annotations

from dataclasses import dataclass

from .linkstate import PortState
from .profiles import Profile


@dataclass(frozen=True)
class Hello:
    """Session set-up and keepalive."""

    sender: str
    incarnation: int
    seq: int


@dataclass(frozen=True)
class HelloReply:
    """Answer to a Hello: proves the responder alive and names its incarnation."""

    responder: str
    incarnation: int


@dataclass(frozen=True)
class LinkNotice:
    """Link-end state changes, original or relayed."""

    sender: str
    states: tuple[PortState, ...]


@dataclass(frozen=True)
class ProfileUpdate:
    """A spine's new congestion profile."""

    sender: str
    profile: Profile


@dataclass(frozen=True)
class FullState:
    """All that a (re)joining peer needs: link-end records and profiles."""

    sender: str
    incarnation: int
    ports: tuple[PortState, ...]
    profiles: tuple[Profile, ...]


Message = Hello | HelloReply | LinkNotice | ProfileUpdate | FullState
