"""A virtual network on a virtual clock that drives several `Transport`s.

Links behave like the kernel streams the real endpoint uses: in order and
reliable while they are open. A cut NIC black-holes its links: frames wait
(as TCP would keep retransmitting them) and move on when the NIC heals, unless
an end closed the link meanwhile, which loses everything still in flight. A
stalled rank (`stall`) processes nothing for a while, like a process holding
the GIL: frames queue for it and its timers do not run. No sockets, no sleeps;
the unit tests use it with hypothesis choosing the faults.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from .topology import RankInfo, Topology
from .transport import (
    IPC_LINK,
    Close,
    Connect,
    Deliver,
    Event,
    PeerFailed,
    PeerRecovered,
    Transmit,
    Transport,
    TransportOptions,
)

CLOSE_MARK = object()


def make_topology(hosts: list[int], rails: int) -> Topology:
    """Ranks spread over hosts (hosts[i] = number of ranks on host i), `rails` NICs each."""
    ranks: list[RankInfo] = []
    for h, n in enumerate(hosts):
        for _ in range(n):
            r = len(ranks)
            nics = tuple((f"10.{rail}.{h}.{r + 1}", 5000 + r) for rail in range(rails))
            ranks.append(RankInfo(r, f"host{h}", nics, f"ipc-{r}"))
    return Topology(ranks)


@dataclass
class SimNet:
    """Transports joined by stream links with configurable faults, on a virtual clock."""

    topo: Topology
    opts: TransportOptions = field(default_factory=TransportOptions)
    latency: float = 0.0001
    seed: int = 0
    rate: float | None = None
    """NIC speed in bytes/s (None: infinite); frames queue behind each other."""
    rail_rate: dict[int, float] = field(default_factory=dict)
    """Per-rail speed overriding `rate` (a slower rail)."""
    connect_timeout: float = 1.0
    """How long a connect over a black-holed path takes to fail."""
    drop_fn: Callable[[int, int, int, bytes], bool] | None = None
    """Tamper rule (src rank, dst rank, rail, frame) -> lose the frame (a broken link)."""

    def __post_init__(self) -> None:
        self.now = 0.0
        self.rng = random.Random(self.seed)
        self.t = [Transport(r, self.topo, self.opts, 0.0) for r in range(self.topo.world)]
        self.down: set[tuple[int, int]] = set()
        self.oneway: set[tuple[int, int, int]] = set()
        """(src, dst, rail) directions that carry nothing (a one-way gray failure)."""
        self.open: dict[tuple[int, int, int], bool] = {}
        """(rank, neighbour, rail) -> this end of the link is open."""
        self.queues: dict[tuple[int, int, int], deque] = {}
        """(src, dst, rail) -> frames [ready_at, data] in flight on that direction."""
        self.busy_until: dict[tuple[int, int], float] = {}
        self.timers: list[tuple[float, int, Callable[[], None]]] = []
        self.stalled: dict[int, float] = {}
        self.inbox: dict[tuple[int, int], list[bytes]] = {}
        self.failed: dict[tuple[int, int], str] = {}
        self.events: list[tuple[int, Event]] = []
        self._n = 0
        for r, t in enumerate(self.t):  # every rank opens the links it connects
            self._run(r, t.start(0.0))

    # ----------------------------------------------------------------- faults

    def send(self, src: int, dst: int, tag: int, data: bytes) -> None:
        """Rank src sends a message."""
        self._run(src, self.t[src].send(dst, tag, data, self.now))

    def cut(self, rank: int, rail: int, notify: bool = True) -> None:
        """Take a NIC's link down; `notify` = the rank sees it (netlink), else only silence."""
        self.down.add((rank, rail))
        if notify:
            self._run(rank, self.t[rank].set_nic(rail, False, self.now))

    def heal(self, rank: int, rail: int, notify: bool = True) -> None:
        """Bring a NIC's link back; frames waiting behind it move on."""
        self.down.discard((rank, rail))
        for (s, d, rl), q in self.queues.items():
            if rl == rail and rank in (s, d):
                for item in q:
                    item[0] = max(item[0], self.now + self.latency)
        if notify:
            self._run(rank, self.t[rank].set_nic(rail, True, self.now))

    def stall(self, rank: int, duration: float) -> None:
        """Rank processes nothing for `duration` (frames queue for it, no timers run)."""
        self.stalled[rank] = self.now + duration

    def blocked(self, a: int, b: int, rail: int) -> bool:
        """True when the path a-b on `rail` is black-holed."""
        return rail != IPC_LINK and ((a, rail) in self.down or (b, rail) in self.down)

    # -------------------------------------------------------------- plumbing

    def _at(self, when: float, fn: Callable[[], None]) -> None:
        self._n += 1
        self.timers.append((when, self._n, fn))
        self.timers.sort(key=lambda x: (x[0], x[1]))

    def _run(self, me: int, acts: list) -> None:
        for a in acts:
            if isinstance(a, Transmit):
                self._transmit(me, a)
            elif isinstance(a, Connect):
                self._connect(me, a.link)
            elif isinstance(a, Close):
                self._close(me, a.link)
            elif isinstance(a, Deliver):
                self.inbox.setdefault((me, a.peer), []).append(bytes(a.data))
            elif isinstance(a, PeerFailed):
                self.failed[(me, a.peer)] = a.error
            elif isinstance(a, PeerRecovered):
                self.failed.pop((me, a.peer), None)
            elif isinstance(a, Event):
                self.events.append((me, a))

    def _transmit(self, me: int, a: Transmit) -> None:
        nbr, rail = a.link
        if not self.open.get((me, nbr, rail)):
            return
        data = b"".join(bytes(p) for p in a.parts)
        if self.drop_fn and self.drop_fn(me, nbr, rail, data):
            return
        start = self.now
        if rail != IPC_LINK:
            rate = self.rail_rate.get(rail, self.rate)
            if rate:
                key = (me, rail)
                start = max(self.now, self.busy_until.get(key, 0.0)) + len(data) / rate
                self.busy_until[key] = start
        self.queues.setdefault((me, nbr, rail), deque()).append([start + self.latency, data])

    def _connect(self, me: int, link: tuple[int, int]) -> None:
        nbr, rail = link
        if self.blocked(me, nbr, rail) or (me, nbr, rail) in self.oneway or \
                (nbr, me, rail) in self.oneway:
            self._at(self.now + self.connect_timeout,
                     lambda: self._run(me, self.t[me].connect_failed(link, "timed out",
                                                                     self.now)))
            return

        def established() -> None:
            if self.blocked(me, nbr, rail):
                self._run(me, self.t[me].connect_failed(link, "timed out", self.now))
                return
            for a, b in ((me, nbr), (nbr, me)):
                self.queues.pop((a, b, rail), None)
            if self.open.get((nbr, me, rail)):  # the accepting side replaces its old stream
                self.open[(nbr, me, rail)] = False
                self._run(nbr, self.t[nbr].link_down((me, rail), "replaced by a new "
                                                     "connection", self.now))
            self.open[(me, nbr, rail)] = self.open[(nbr, me, rail)] = True
            self._run(me, self.t[me].link_up(link, self.now))
            self._run(nbr, self.t[nbr].link_up((me, rail), self.now))
        self._at(self.now + 2 * self.latency, established)

    def _close(self, me: int, link: tuple[int, int]) -> None:
        nbr, rail = link
        self.open[(me, nbr, rail)] = False
        self.queues[(me, nbr, rail)] = deque([[self.now + self.latency, CLOSE_MARK]])
        self.queues.pop((nbr, me, rail), None)

    def _next_frame(self) -> tuple[float, tuple[int, int, int]] | None:
        best = None
        for key, q in self.queues.items():
            if not q:
                continue
            src, dst, rail = key
            if self.blocked(src, dst, rail) or key in self.oneway:
                continue
            at = max(q[0][0], self.stalled.get(dst, 0.0))
            if best is None or at < best[0]:
                best = (at, key)
        return best

    def _deliver(self, key: tuple[int, int, int]) -> None:
        src, dst, rail = key
        _, data = self.queues[key].popleft()
        if data is CLOSE_MARK:
            if self.open.get((dst, src, rail)):
                self.open[(dst, src, rail)] = False
                self._run(dst, self.t[dst].link_down((src, rail), "closed by peer", self.now))
            return
        if not self.open.get((dst, src, rail)):
            return
        self._run(dst, self.t[dst].on_frame((src, rail), data, self.now))
        if not any(q and q[0][0] <= self.now for k, q in self.queues.items() if k[1] == dst):
            self._run(dst, self.t[dst].flush(self.now))

    def step(self, until: float) -> None:
        """Advance the clock to `until`, delivering frames and running timers."""
        while True:
            cands: list[tuple[float, int, object]] = []
            nf = self._next_frame()
            if nf is not None:
                cands.append((nf[0], 0, nf[1]))
            if self.timers:
                cands.append((self.timers[0][0], 1, None))
            for r, t in enumerate(self.t):
                d = t.next_deadline()
                if d is not None:
                    cands.append((max(d, self.stalled.get(r, 0.0), self.now + 1e-6), 2, r))
            cands = [c for c in cands if c[0] <= until]
            if not cands:
                self.now = max(self.now, until)
                return
            at, kind, what = min(cands, key=lambda c: (c[0], c[1]))
            self.now = max(self.now, at)
            if kind == 0:
                assert isinstance(what, tuple)
                self._deliver(what)
            elif kind == 1:
                _, _, fn = self.timers.pop(0)
                fn()
            else:
                assert isinstance(what, int)
                self._run(what, self.t[what].on_tick(self.now))

    def run_until(self, cond: Callable[[], bool], limit: float = 30.0) -> bool:
        """Step in small increments until cond() holds or `limit` virtual seconds pass."""
        end = self.now + limit
        while self.now < end:
            if cond():
                return True
            self.step(min(end, self.now + 0.005))
        return cond()
