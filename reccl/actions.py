"""The actions a `reccl.transport.Transport` returns, and the link key they use.

The I/O layer (`reccl.endpoint`, or `reccl.simnet` in tests) carries them out:
frames to write, links to open or close, messages to hand to a waiting
receive, events to record, peers that failed or came back.
"""

from __future__ import annotations

from dataclasses import dataclass

from .connection import Message

IPC_LINK = -1
"""`rail` of the intra-host link in a link key (neighbour rank, rail)."""
Link = tuple[int, int]


@dataclass
class Transmit:
    """Write a frame (`parts`, concatenated) on `link`; `control` frames may overtake data
    frames that have not started yet."""

    link: Link
    parts: list
    control: bool = False


@dataclass
class Connect:
    """Open (and authenticate) `link`; answer with `link_up` or `connect_failed`."""

    link: Link


@dataclass
class Close:
    """Close `link` (the transport already treats it as down)."""

    link: Link
    reason: str


@dataclass
class Deliver:
    """A whole message arrived from `peer` with `tag`."""

    peer: int
    tag: int
    data: Message


@dataclass
class Event:
    """Something the caller may want to see: channel_down, channel_up, failover,
    peer_failed, peer_recovered."""

    time: float
    kind: str
    peer: int
    channel: int
    detail: str


@dataclass
class PeerFailed:
    """No usable path to `peer` (or fail-stop mode saw a failure): `error` says which."""

    peer: int
    error: str


@dataclass
class PeerRecovered:
    """A path to `peer` came back after `PeerFailed` (not in fail-stop mode)."""

    peer: int


Action = Transmit | Connect | Close | Deliver | Event | PeerFailed | PeerRecovered
