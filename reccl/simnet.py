"""A virtual network on a virtual clock that drives several `Transport`s.

Used by the unit tests (with hypothesis choosing loss, duplication, reordering
and link cuts) and usable by a simulator: no sockets, no sleeps.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from .topology import RankInfo, Topology
from .transport import Deliver, Event, PeerFailed, Transmit, Transport, TransportOptions


def make_topology(hosts: list[int], rails: int) -> Topology:
    """Ranks spread over hosts (hosts[i] = number of ranks on host i), `rails` NICs each."""
    ranks = []
    for h, n in enumerate(hosts):
        for _ in range(n):
            r = len(ranks)
            nics = tuple((f"10.{rail}.{h}.{r + 1}", 5000 + r) for rail in range(rails))
            ranks.append(RankInfo(r, f"host{h}", nics, f"ipc-{r}"))
    return Topology(ranks)


@dataclass
class SimNet:
    """Transports joined by links with configurable faults, on a virtual clock."""

    topo: Topology
    opts: TransportOptions = field(default_factory=TransportOptions)
    latency: float = 0.0001
    seed: int = 0
    loss: float = 0.0
    dup: float = 0.0
    jitter: float = 0.0
    drop_fn: Callable[[int, int, tuple, bytes], bool] | None = None
    """Extra drop rule (src rank, dst rank, hop, data) -> drop?"""
    rate: float | None = None
    """NIC speed in bytes/s (None: infinite); datagrams queue behind each other."""
    rail_rate: dict[int, float] = field(default_factory=dict)
    """Per-rail speed overriding `rate` (a slower rail)."""

    def __post_init__(self) -> None:
        self.now = 0.0
        self.rng = random.Random(self.seed)
        self.t = [Transport(r, self.topo, 7, self.opts, 0.0) for r in range(self.topo.world)]
        self.addr = {nic: (r.rank, rail) for r in self.topo.ranks
                     for rail, nic in enumerate(r.nics)}
        self.down: set[tuple[int, int]] = set()
        self.queue: list[tuple[float, int, int, bytes, list]] = []
        self.busy_until: dict[tuple[int, int], float] = {}
        self.inbox: dict[tuple[int, int], list[bytes]] = {}
        self.failed: dict[tuple[int, int], str] = {}
        self.events: list[tuple[int, Event]] = []
        self._n = 0
        self._last_tick = -1.0

    def send(self, src: int, dst: int, tag: int, data: bytes) -> None:
        """Rank src sends a message."""
        self._run(src, self.t[src].send(dst, tag, data, self.now))

    def cut(self, rank: int, rail: int, notify: bool = True) -> None:
        """Take a NIC's link down; `notify` = the rank sees it (netlink), else only silence."""
        self.down.add((rank, rail))
        if notify:
            self._run(rank, self.t[rank].set_nic(rail, False, self.now))

    def heal(self, rank: int, rail: int, notify: bool = True) -> None:
        """Bring a NIC's link back."""
        self.down.discard((rank, rail))
        if notify:
            self._run(rank, self.t[rank].set_nic(rail, True, self.now))

    def _run(self, me: int, acts: list) -> None:
        for a in acts:
            if isinstance(a, Transmit):
                self._transmit(me, a)
            elif isinstance(a, Deliver):
                self.inbox.setdefault((me, a.peer), []).append(bytes(a.data))
            elif isinstance(a, PeerFailed):
                self.failed[(me, a.peer)] = a.error
            elif isinstance(a, Event):
                self.events.append((me, a))

    def _transmit(self, me: int, a: Transmit) -> None:
        if a.hop[0] == "ipc":
            dst, rails = a.hop[1], []
        else:
            dst, rail = self.addr[a.hop[2]]
            rails = [(me, a.hop[1]), (dst, rail)]
        if any(r in self.down for r in rails):
            return
        if self.drop_fn and self.drop_fn(me, dst, a.hop, a.data):
            return
        if a.hop[0] == "nic" and self.rng.random() < self.loss:
            return
        copies = 2 if a.hop[0] == "nic" and self.rng.random() < self.dup else 1
        start = self.now
        if a.hop[0] == "nic":
            rate = self.rail_rate.get(a.hop[1], self.rate)
            if rate:
                key = (me, a.hop[1])
                start = max(self.now, self.busy_until.get(key, 0.0)) + len(a.data) / rate
                self.busy_until[key] = start
        for _ in range(copies):
            at = start + self.latency + self.rng.random() * self.jitter
            self._n += 1
            heapq.heappush(self.queue, (at, self._n, dst, a.data, rails))

    def step(self, until: float) -> None:
        """Advance the clock to `until`, delivering datagrams and running timers."""
        while True:
            nxt = self.queue[0][0] if self.queue else None
            tick = min((d for t in self.t if (d := t.next_deadline()) is not None), default=None)
            if tick is not None:
                tick = max(tick, self._last_tick + 1e-5)
            cands = [x for x in (nxt, tick) if x is not None and x <= until]
            if not cands:
                self.now = max(self.now, until)
                return
            at = min(cands)
            self.now = max(self.now, at)
            if nxt is not None and nxt <= at:
                _, _, dst, data, rails = heapq.heappop(self.queue)
                if not any(r in self.down for r in rails):  # in flight on a cut link: lost
                    self._run(dst, self.t[dst].on_datagram(data, self.now))
                if not self.queue or self.queue[0][0] > self.now:
                    for r, t in enumerate(self.t):
                        self._run(r, t.flush(self.now))
            else:
                self._last_tick = self.now
                for r, t in enumerate(self.t):
                    self._run(r, t.on_tick(self.now))

    def run_until(self, cond: Callable[[], bool], limit: float = 30.0) -> bool:
        """Step in small increments until cond() holds or `limit` virtual seconds pass."""
        end = self.now + limit
        while self.now < end:
            if cond():
                return True
            self.step(min(end, self.now + 0.005))
        return cond()
