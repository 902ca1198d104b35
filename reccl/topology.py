"""Who is where: ranks, hosts, NICs, and the channels (paths) between two ranks.

A channel is one path between a pair of ranks. Both ranks (and any relay on
the path) derive the same numbered channel list from the shared topology, so a
channel id in a packet header means the same path everywhere:

* same host: one IPC channel (the intra-host path);
* different hosts: one DIRECT channel per rail (NIC i of one host to NIC i of
  the other), then RELAY channels through a same-host peer of either end
  (IPC to the peer, then the peer's NIC on that rail): the standby paths for a
  rank that lost all its NICs.
"""

from __future__ import annotations

from dataclasses import dataclass

IPC = "ipc"
DIRECT = "direct"
RELAY = "relay"


@dataclass(frozen=True)
class RankInfo:
    """Addresses of one rank, as published at rendezvous."""

    rank: int
    """Global rank."""
    host: str
    """Host name; ranks with the same host share the intra-host path."""
    nics: tuple[tuple[str, int], ...]
    """(IP address, UDP port) of this rank's socket on each NIC, indexed by rail."""
    ipc: str
    """Name of this rank's intra-host (Unix datagram) socket."""


@dataclass(frozen=True)
class Channel:
    """One path between ranks a < b (kind IPC, DIRECT or RELAY)."""

    id: int
    kind: str
    a: int
    b: int
    rail: int = -1
    via: int = -1
    """Relay rank (same host as `a` or as `b`) for RELAY channels."""

    @property
    def tier(self) -> int:
        """0 for primary paths, 1 for relay (standby) paths."""
        return 1 if self.kind == RELAY else 0

    def nics(self, topo: Topology) -> frozenset[tuple[int, int]]:
        """(rank, rail) pairs whose NIC this path uses."""
        if self.kind == IPC:
            return frozenset()
        if self.kind == DIRECT:
            return frozenset({(self.a, self.rail), (self.b, self.rail)})
        far = self.b if topo.same_host(self.via, self.a) else self.a
        return frozenset({(self.via, self.rail), (far, self.rail)})

    def describe(self, topo: Topology) -> str:
        """Human-readable path, e.g. 'rank 0 nic0 10.1.0.1 -> rank 2 nic0 10.1.0.3'."""
        def nic(r: int) -> str:
            return f"rank {r} nic{self.rail} {topo.ranks[r].nics[self.rail][0]}"
        if self.kind == IPC:
            return f"rank {self.a} <-ipc-> rank {self.b}"
        if self.kind == DIRECT:
            return f"{nic(self.a)} <-> {nic(self.b)}"
        if topo.same_host(self.via, self.a):
            return f"rank {self.a} <-ipc-> {nic(self.via)} <-> {nic(self.b)}"
        return f"{nic(self.a)} <-> {nic(self.via)} <-ipc-> rank {self.b}"


class Topology:
    """The rendezvous result: every rank's host and NIC addresses."""

    def __init__(self, ranks: list[RankInfo]) -> None:
        self.ranks = ranks
        for i, r in enumerate(ranks):
            if r.rank != i:
                raise ValueError(f"rank list out of order at index {i}: holds rank {r.rank}")
        self._cache: dict[tuple[int, int], list[Channel]] = {}

    @property
    def world(self) -> int:
        """Number of ranks."""
        return len(self.ranks)

    def same_host(self, x: int, y: int) -> bool:
        """True when ranks x and y run on the same host."""
        return self.ranks[x].host == self.ranks[y].host

    def host_peers(self, r: int) -> list[int]:
        """Other ranks on the same host as r, ascending."""
        return [p.rank for p in self.ranks if p.rank != r and p.host == self.ranks[r].host]

    def channels(self, x: int, y: int) -> list[Channel]:
        """The numbered channels between ranks x and y (same list for (y, x))."""
        a, b = min(x, y), max(x, y)
        got = self._cache.get((a, b))
        if got is None:
            got = self._cache[(a, b)] = _enumerate(self, a, b)
        return got

    def rails(self, r: int) -> int:
        """Number of NICs of rank r."""
        return len(self.ranks[r].nics)


def _enumerate(topo: Topology, a: int, b: int) -> list[Channel]:
    out: list[Channel] = []
    if topo.same_host(a, b):
        return [Channel(0, IPC, a, b)]
    for rail in range(min(topo.rails(a), topo.rails(b))):
        out.append(Channel(len(out), DIRECT, a, b, rail=rail))
    for near, far in ((a, b), (b, a)):
        for via in topo.host_peers(near):
            for rail in range(min(topo.rails(via), topo.rails(far))):
                out.append(Channel(len(out), RELAY, a, b, rail=rail, via=via))
    if len(out) > 255:
        raise ValueError(f"too many channels between ranks {a} and {b}: {len(out)} > 255")
    return out
