"""Peer sessions: hello/keepalive bookkeeping and liveness timeouts."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass


class PeerStatus(enum.StrEnum):
    """Where a peer session stands."""

    UNKNOWN = "unknown"
    UP = "up"
    DOWN = "down"


@dataclass
class Peer:
    """What we know about one peer daemon."""

    name: str
    status: PeerStatus = PeerStatus.UNKNOWN
    incarnation: int = 0
    """The newest incarnation this peer opened a session with (0: never heard)."""
    last_heard: float = -math.inf
    last_hello_sent: float = -math.inf
    hello_seq: int = 0
    joins: int = 0


class PeerTable:
    """Liveness of every peer, driven by the caller's clock."""

    def __init__(self, names: tuple[str, ...], keepalive_interval: float, dead_interval: float):
        self.peers = {n: Peer(n) for n in names}
        self.keepalive_interval = keepalive_interval
        self.dead_interval = dead_interval

    def hello(self, name: str, incarnation: int, now: float) -> bool:
        """A Hello from the peer (its incarnation not older than the one known); True if it
        (re)joined: first contact, back after being down, or a new incarnation (a restart).
        Each calls for a full resync."""
        peer = self.peers[name]
        joined = peer.status is not PeerStatus.UP or incarnation != peer.incarnation
        peer.incarnation = incarnation
        peer.last_heard = max(peer.last_heard, now)
        if joined:
            peer.status = PeerStatus.UP
            peer.joins += 1
        return joined

    def touch(self, name: str, now: float) -> None:
        """Any other valid message from an up peer also proves it alive."""
        peer = self.peers[name]
        if peer.status is PeerStatus.UP:
            peer.last_heard = max(peer.last_heard, now)

    def session_incarnation(self, name: str) -> int | None:
        """The incarnation of the peer's open session, None when it is not up."""
        peer = self.peers[name]
        return peer.incarnation if peer.status is PeerStatus.UP else None

    def lost(self, name: str) -> bool:
        """The session ended (stream closed or failed): down; True if it was up."""
        peer = self.peers[name]
        if peer.status is PeerStatus.UP:
            peer.status = PeerStatus.DOWN
            return True
        return False

    def forgive(self, stall: float, now: float) -> None:
        """This daemon did not run for ``stall`` seconds: what the peers sent meanwhile is
        still unread, so that time does not count against them."""
        for peer in self.peers.values():
            if peer.status is PeerStatus.UP:
                peer.last_heard = min(now, peer.last_heard + stall)

    def hellos_due(self, now: float) -> list[tuple[str, int]]:
        """Up peers to send a keepalive Hello to now, with the sequence number to use."""
        due = []
        for peer in self.peers.values():
            if peer.status is PeerStatus.UP and now - peer.last_hello_sent >= self.keepalive_interval:
                due.append((peer.name, self.next_hello(peer.name, now)))
        return due

    def next_hello(self, name: str, now: float) -> int:
        """Record a Hello sent to the peer now (also the one opening a session); its seq."""
        peer = self.peers[name]
        peer.last_hello_sent = now
        peer.hello_seq += 1
        return peer.hello_seq

    def expire(self, now: float) -> list[str]:
        """Declare down the up peers not heard from within the dead interval."""
        gone = []
        for peer in self.peers.values():
            if peer.status is PeerStatus.UP and now - peer.last_heard > self.dead_interval:
                peer.status = PeerStatus.DOWN
                gone.append(peer.name)
        return gone

    def up(self) -> list[str]:
        """Names of the peers currently up."""
        return [p.name for p in self.peers.values() if p.status is PeerStatus.UP]
