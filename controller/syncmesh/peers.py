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

    def heard_from(self, name: str, incarnation: int, now: float) -> bool:
        """A message carrying the peer's incarnation arrived; True if it (re)joined.

        (Re)joined means: first contact, back after being declared down, or a
        new incarnation (the daemon restarted). Each calls for a full resync.
        """
        peer = self.peers[name]
        joined = peer.status is not PeerStatus.UP or incarnation != peer.incarnation
        if joined and incarnation < peer.incarnation:
            # a late message from before the peer restarted: alive, but no news
            joined = peer.status is not PeerStatus.UP
            incarnation = peer.incarnation
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

    def mark_unreachable(self, name: str) -> bool:
        """A send to the peer failed: down until it answers again; True if it was up."""
        peer = self.peers[name]
        if peer.status is PeerStatus.UP:
            peer.status = PeerStatus.DOWN
            return True
        return False

    def hellos_due(self, now: float) -> list[tuple[str, int]]:
        """Peers to send a Hello to now, with the sequence number to use."""
        due = []
        for peer in self.peers.values():
            if now - peer.last_hello_sent >= self.keepalive_interval:
                peer.last_hello_sent = now
                peer.hello_seq += 1
                due.append((peer.name, peer.hello_seq))
        return due

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
