"""Channel life cycle of the transport: deaths, failover notices, peer failure, rejoin.

A collaborator of `reccl.transport.Transport`, which owns one and holds the
state it works on (``ChannelHost`` names what it uses): what happens when a
channel dies (its chunks move, the peer is told), how notices accumulate
under epochs until acknowledged and how a peer applies them, how a NIC's
carrier change spreads to every path through it, and how a channel that works
again is re-admitted. No I/O and no clock reads happen here.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

from . import wire
from .actions import Action, Event, PeerFailed, PeerRecovered
from .connection import ChannelState, Connection
from .topology import RELAY

if TYPE_CHECKING:  # types only: the transport imports this module
    from .actions import Link
    from .topology import Channel, Topology
    from .transport import TransportOptions

log = logging.getLogger("reccl.transport")


class ChannelHost(Protocol):
    """What the life cycle uses of the transport that owns it: the rank's connections,
    NIC and link state, and the transport's own sending and queueing steps."""

    me: int
    topo: Topology
    opts: TransportOptions
    conns: dict[int, Connection]
    nic_down: set[tuple[int, int]]
    links: dict[Link, bool]

    def hop(self, ch: Channel, toward: int) -> Link: ...

    def usable(self, conn: Connection, cs: ChannelState) -> bool: ...

    def _conn(self, peer: int) -> Connection: ...

    def _pump(self, conn: Connection, now: float, acts: list[Action]) -> None: ...

    def _emit(self, conn: Connection, cs: ChannelState, ptype: int, body: wire.Body,
              now: float, acts: list[Action], control: bool = True,
              epoch: int | None = None, tsecr: int = 0) -> None: ...

    def _any_usable(self, conn: Connection, prefer: ChannelState) -> ChannelState | None: ...

    def _link_lost(self, link: Link, reason: str, now: float, acts: list[Action],
                   close: bool) -> None: ...


class ChannelLifecycle:
    """Failure handling of one transport (see the module docstring)."""

    def __init__(self, host: ChannelHost) -> None:
        self.host = host

    def set_nic(self, rail: int, up: bool, now: float) -> list[Action]:
        """Carrier of this rank's NIC `rail` changed (from netlink or a test)."""
        acts: list[Action] = []
        key = (self.host.me, rail)
        if (key not in self.host.nic_down) == up:
            return acts
        if up:
            self.host.nic_down.discard(key)
        else:
            self.host.nic_down.add(key)
        for conn in self.host.conns.values():
            changed = False
            for cs in conn.channels:
                if key not in cs.ch.nics(self.host.topo):
                    continue
                changed = True
                if not up and cs.alive:
                    self.kill(conn, cs, f"link down on rank {self.host.me} nic{rail}", now, acts,
                               announce=False)
                    self.announce_dead(conn, cs)
                elif up:
                    cs.next_attempt = now
            # Same-host peers may relay through this NIC: they hear about it too.
            if changed or self.host.topo.same_host(self.host.me, conn.peer):
                conn.epoch = (conn.epoch + 1) & 0xFFFF
                conn.notice_nics_epoch = conn.epoch
                self.start_notice(conn, now, acts)
        return acts

    def fail_channel(self, peer: int, channel: int, reason: str, now: float) -> list[Action]:
        """Declare a channel dead from outside (tests, operator)."""
        acts: list[Action] = []
        conn = self.host._conn(peer)
        self.kill(conn, conn.channels[channel], reason, now, acts, announce=True)
        return acts

    def holddown(self, cs: ChannelState) -> float:
        return min(self.host.opts.max_holddown, self.host.opts.holddown * 2 ** max(0, cs.flaps - 1))

    def kill(self, conn: Connection, cs: ChannelState, reason: str, now: float,
              acts: list[Action], announce: bool) -> None:
        if not cs.alive:
            return
        cs.alive = False
        cs.reason = reason
        cs.failures += 1
        cs.flaps = cs.flaps + 1 if now - cs.alive_since < self.host.opts.stable_time else 1
        cs.died_at = now
        cs.rejoin_at = None
        cs.attempt_interval = self.host.opts.connect_interval
        cs.next_attempt = now + cs.attempt_interval
        moved = list(cs.inflight.values())
        for chunk in moved:
            chunk.channel = -1
            conn.retx.append(chunk)
        cs.inflight.clear()
        cs.inflight_bytes = 0
        path = cs.ch.describe(self.host.topo)
        acts.append(Event(now, "channel_down", conn.peer, cs.ch.id,
                          f"{path}: {reason}; {len(moved)} chunks moved"))
        log.info("rank %d: channel %d to rank %d down (%s): %s", self.host.me, cs.ch.id, conn.peer,
                 path, reason)
        if cs.ch.kind != RELAY:  # both ends reconnect the link to start clean
            link = self.host.hop(cs.ch, conn.peer)
            if self.host.links.get(link):
                self.host._link_lost(link, reason, now, acts, close=True)
        if not self.host.opts.failover:
            self.fail_peer(conn, f"rank {self.host.me}: fail-stop: path {path} to rank "
                                  f"{conn.peer} failed: {reason}", now, acts, fatal=True)
            return
        if announce:
            self.announce_dead(conn, cs)
            self.start_notice(conn, now, acts)
        self.host._pump(conn, now, acts)

    def announce_dead(self, conn: Connection, cs: ChannelState) -> None:
        conn.epoch = (conn.epoch + 1) & 0xFFFF
        conn.notice_dead[cs.ch.id] = conn.epoch

    def start_notice(self, conn: Connection, now: float, acts: list[Action]) -> None:
        dead = sorted(conn.notice_dead)
        acts.append(Event(now, "failover", conn.peer, -1,
                          f"epoch {conn.epoch}: dead channels {dead}"))
        conn.notice_next = now
        self.send_notice(conn, now, acts)

    def send_notice(self, conn: Connection, now: float, acts: list[Action]) -> None:
        if not conn.notice_pending() or now < conn.notice_next:
            return
        conn.notice_next = now + self.host.opts.notice_rto
        mine = [(self.host.me, r, (self.host.me, r) not in self.host.nic_down)
                for r in range(self.host.topo.rails(self.host.me))]
        body = wire.Notice(mine, sorted(conn.notice_dead))
        for cs in conn.channels:
            if self.host.usable(conn, cs):
                self.host._emit(conn, cs, wire.NOTICE, body, now, acts)

    def on_notice(self, conn: Connection, cs: ChannelState, h: wire.Header, n: wire.Notice,
                   now: float, acts: list[Action]) -> None:
        if epoch_gt(h.epoch, conn.peer_epoch):
            conn.peer_epoch = h.epoch
            for rank, rail, up in n.nics:
                if rank == conn.peer and rail < self.host.topo.rails(rank):
                    self.peer_nic(rank, rail, up, now, acts)
            for chid in n.channels:
                if chid < len(conn.channels):
                    self.kill(conn, conn.channels[chid], f"rank {conn.peer} found it dead",
                               now, acts, announce=False)
        out = self.host._any_usable(conn, cs)
        if out is not None:
            self.host._emit(conn, out, wire.NOTICE_ACK, conn.ack_body(), now, acts, epoch=h.epoch)

    def peer_nic(self, rank: int, rail: int, up: bool, now: float, acts: list[Action]) -> None:
        key = (rank, rail)
        if up:
            if key in self.host.nic_down:
                self.host.nic_down.discard(key)
                for conn in self.host.conns.values():
                    for c in conn.channels:
                        if key in c.ch.nics(self.host.topo) and not c.alive:
                            c.next_attempt = now
            return
        if key in self.host.nic_down:
            return
        self.host.nic_down.add(key)
        for conn in self.host.conns.values():
            for c in conn.channels:
                if key in c.ch.nics(self.host.topo):
                    self.kill(conn, c, f"link down on rank {rank} nic{rail}", now, acts,
                               announce=conn.peer != rank)

    def fail_peer(self, conn: Connection, error: str, now: float, acts: list[Action],
                   fatal: bool = False) -> None:
        if fatal:
            if conn.fatal:
                return
            conn.fatal = error
        elif conn.failed:
            return
        conn.failed = error
        acts.append(Event(now, "peer_failed", conn.peer, -1, error))
        acts.append(PeerFailed(conn.peer, error))
        log.error("%s", error)

    def revive(self, conn: Connection, cs: ChannelState, now: float,
                acts: list[Action]) -> None:
        first = cs.initial
        cs.alive, cs.initial, cs.reason = True, False, ""
        cs.alive_since = cs.last_heard = cs.streak_start = now
        cs.rejoin_at = None
        cs.srtt = None
        conn.notice_dead.pop(cs.ch.id, None)
        if not first:
            acts.append(Event(now, "channel_up", conn.peer, cs.ch.id,
                              f"{cs.ch.describe(self.host.topo)} rejoined after "
                              f"{self.holddown(cs):.3f} s hold-down (flaps {cs.flaps})"))
            log.info("rank %d: channel %d to rank %d rejoined", self.host.me, cs.ch.id, conn.peer)
        if conn.failed and not conn.fatal:
            conn.failed = None
            path = cs.ch.describe(self.host.topo)
            acts.append(Event(now, "peer_recovered", conn.peer, cs.ch.id,
                              f"rank {conn.peer} reachable again over {path}"))
            acts.append(PeerRecovered(conn.peer))
        self.host._pump(conn, now, acts)


def epoch_gt(a: int, b: int) -> bool:
    """a is a later epoch than b (16-bit, wrapping)."""
    return a != b and ((a - b) & 0xFFFF) < 0x8000
