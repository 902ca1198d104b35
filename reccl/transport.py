"""The ReCCL transport as a state machine: events plus an explicit clock in, actions out.

One `Transport` per rank holds a `Connection` (see `reccl.connection`) per
peer rank. A connection has one sequence space for its chunks and spreads
them over its channels (paths, see `reccl.topology`). A channel's first hop
is a *link*: an authenticated stream (TCP per NIC rail, a Unix socket between
ranks of one host) that the I/O layer opens when told (`Connect`) and reports
(`link_up`, `link_down`). The kernel makes each link reliable and in order;
this layer adds what a multi-path library needs on top:

* chunk acknowledgements and a receiver frontier (cumulative ack + SACK), so a
  sender knows which chunks a dead channel took with it and resends exactly
  those on the survivors; the receiver assembles every sequence number once;
* liveness that tells a dead path from a slow peer: every admitted channel
  carries a keepalive whenever it has sent nothing for `keepalive`, idle or
  not, and the peer answers it. A channel dies on carrier loss (`set_nic`), on
  its link closing, or when it stays silent for `silence_timeout` while the
  same peer is heard regularly on another channel. A peer silent on *every*
  channel is slow, not failed: nothing dies and the caller's own timeout
  decides (see `describe_peer`);
* failover notices that accumulate until acknowledged: every newly dead
  channel and NIC change is added under a new epoch, and the whole set is
  resent until the peer acknowledges that epoch with its frontier;
* re-admission: a dead link is reconnected (lower rank connects, backing off)
  and a dead relay path probed; either rejoins after a hold-down that doubles
  on every flap;
* load balancing: channel windows follow measured goodput.

No I/O and no clock reads happen here; `reccl.endpoint` does the socket work
and `reccl.simnet` drives the same code on a virtual network.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from . import wire
from .actions import (
    IPC_LINK,
    Action,
    Close,
    Connect,
    Deliver,
    Event,
    Link,
    PeerFailed,
    PeerRecovered,
    Transmit,
)
from .connection import ChannelState, Chunk, Connection
from .lifecycle import ChannelLifecycle, epoch_gt
from .topology import DIRECT, IPC, RELAY, Channel, Topology

log = logging.getLogger("reccl.transport")
__all__ = ["IPC_LINK", "Action", "Close", "Connect", "Deliver", "Event", "Link", "PeerFailed",
           "PeerRecovered", "PeerUnreachable", "Transmit", "Transport", "TransportOptions"]



@dataclass(frozen=True)
class TransportOptions:
    """Tunables of the transport (seconds, bytes, chunks)."""

    chunk_size: int = 1 << 20
    """Payload bytes per DATA frame on NIC links (the unit of failover)."""
    ipc_chunk_size: int = 1 << 20
    """Payload bytes per DATA frame between ranks of one host."""
    min_chunk: int = 64 << 10
    """Smallest chunk a message is cut into to spread it over several channels."""
    channel_window: int = 16 << 20
    """Unacknowledged bytes a channel of weight 1 may hold (scaled down by weight)."""
    min_window: int = 512 << 10
    """Unacknowledged bytes a channel may hold whatever its weight (keeps measuring it)."""
    recv_window: int = 256
    """Chunks the receiver buffers beyond its cumulative frontier (flow control)."""
    keepalive: float = 0.1
    """Send a keepalive on a channel that has sent nothing for this long (idle or not)."""
    silence_timeout: float = 1.0
    """A channel silent this long while the peer is heard on another channel is dead."""
    stall_gap: float = 0.5
    """A gap this long between two ticks means this rank itself was stalled: silence
    during it is not held against the channels."""
    no_path_timeout: float = 10.0
    """Report the peer unreachable after this long with every channel dead (not merely
    silent) while busy; recovered when a path comes back."""
    connect_interval: float = 0.05
    """First interval between reconnect attempts or probes of a dead path (doubles)."""
    max_connect_interval: float = 1.0
    """Longest interval between reconnect attempts or probes."""
    holddown: float = 0.1
    """Hold-down before a recovered channel rejoins (doubles per flap)."""
    max_holddown: float = 5.0
    """Longest hold-down."""
    stable_time: float = 2.0
    """A channel up this long before dying counts as a fresh failure, not a flap."""
    notice_rto: float = 0.05
    """Resend an unacknowledged NOTICE after this long."""
    goodput_interval: float = 0.05
    """Period of the goodput measurement behind the channel windows."""
    failover: bool = True
    """False = fail-stop mode: the first dead path fails the peer (today's libraries)."""


class PeerUnreachable(RuntimeError):
    """Raised by `Transport.send` on a connection that is failed."""


def _us(now: float) -> int:
    return int(now * 1e6) & 0xFFFFFFFF


class Transport:
    """All connections of one rank; see the module docstring."""

    def __init__(self, me: int, topo: Topology, opts: TransportOptions | None = None,
                 now: float = 0.0) -> None:
        self.me = me
        self.topo = topo
        self.opts = o = opts or TransportOptions()
        self.nic_down: set[tuple[int, int]] = set()
        self.links: dict[Link, bool] = {}
        self.ever_up: set[Link] = set()
        self.connecting: set[Link] = set()
        self.conns: dict[int, Connection] = {}
        for p in range(topo.world):
            if p == me:
                continue
            chans = topo.channels(me, p)
            if not o.failover:
                chans = [c for c in chans if c.tier == 0]
            size = o.ipc_chunk_size if topo.same_host(me, p) else o.chunk_size
            self.conns[p] = Connection(p, chans, size, now, o.connect_interval)
            for cs in self.conns[p].channels:
                self.links.setdefault(self.hop(cs.ch, p), False)
        self.counters = {"malformed": 0, "misrouted": 0, "relayed": 0, "relay_dropped": 0,
                         "duplicates": 0, "overflow": 0, "resent": 0}
        self._next_goodput = now + o.goodput_interval
        self._last_goodput = now
        self._last_tick: float | None = None
        self.lifecycle = ChannelLifecycle(self)
        """Channel deaths, failover notices, peer failure and rejoin."""

    def start(self, now: float) -> list[Action]:
        """Open the links this rank connects (the I/O layer reports each with `link_up`)."""
        acts: list[Action] = []
        for link in self.links:
            if self.connector(link) and link not in self.connecting:
                self.connecting.add(link)
                acts.append(Connect(link))
        return acts

    def set_nic(self, rail: int, up: bool, now: float) -> list[Action]:
        """Carrier of this rank's NIC `rail` changed (from netlink or a test)."""
        return self.lifecycle.set_nic(rail, up, now)

    def fail_channel(self, peer: int, channel: int, reason: str, now: float) -> list[Action]:
        """Declare a channel dead from outside (tests, operator)."""
        return self.lifecycle.fail_channel(peer, channel, reason, now)

    # ---------------------------------------------------------------- paths

    def hop(self, ch: Channel, toward: int) -> Link:
        """The link this rank uses for channel `ch` in the direction of rank `toward`."""
        if ch.kind == IPC:
            return (toward, IPC_LINK)
        if ch.kind == DIRECT:
            return (toward, ch.rail)
        if ch.via == self.me:  # we relay: the next hop goes to the end rank
            return (toward, IPC_LINK) if self.topo.same_host(self.me, toward) else \
                (toward, ch.rail)
        return (ch.via, IPC_LINK) if self.topo.same_host(ch.via, self.me) else \
            (ch.via, ch.rail)

    def pending_links(self) -> list[Link]:
        """Links never connected yet that could be (no known-down NIC at either end)."""
        return [link for link, up in self.links.items() if not up and link not in self.ever_up
                and not (link[1] != IPC_LINK and ((self.me, link[1]) in self.nic_down or
                                                  link in self.nic_down))]

    def connector(self, link: Link) -> bool:
        """True when this rank opens `link` (the lower rank of the two does)."""
        return self.me < link[0]

    def usable(self, conn: Connection, cs: ChannelState) -> bool:
        """Admitted and its first link is up."""
        return cs.alive and self.links.get(self.hop(cs.ch, conn.peer), False)

    def _nic_blocked(self, cs: ChannelState) -> bool:
        return bool(cs.ch.nics(self.topo) & self.nic_down)

    # ----------------------------------------------------------------- sending

    def send(self, peer: int, tag: int, data: bytes | memoryview, now: float,
             borrow: bool = False) -> list[Action]:
        """Queue a message to `peer`; returns the frames that can go out at once. The data
        is copied (chunks may need resending after the caller reused its buffer) unless
        `borrow`: then the caller keeps the buffer unchanged until `release` (a collective
        only overwrites what its peers have provably received)."""
        conn = self._conn(peer)
        if conn.fatal:
            raise PeerUnreachable(conn.fatal)
        lend = borrow and not isinstance(data, bytes)
        mv = memoryview(data if isinstance(data, bytes) or borrow else bytes(data))
        mv = mv.cast("B") if mv.nbytes else memoryview(b"")
        n = len(mv)
        step = self._chunk_for(conn, n)
        for off in range(0, max(n, 1), step):
            conn.pending.append(Chunk(conn.next_seq, tag, n, off, mv[off:off + step],
                                      borrowed=lend))
            conn.next_seq = (conn.next_seq + 1) & 0xFFFFFFFF
        acts: list[Action] = []
        self._pump(conn, now, acts)
        return acts

    def borrowing(self) -> bool:
        """True while a chunk still refers to a caller's buffer (see `send`)."""
        return any(c.borrowed for conn in self.conns.values()
                   for q in (conn.pending, conn.retx, conn.unacked.values()) for c in q)

    def _chunk_for(self, conn: Connection, n: int) -> int:
        """Chunk size for an n-byte message: the connection's, or smaller so that the
        message spreads over every usable channel of the best tier (in multiples of 4 KiB,
        a multiple of every element size, and not below `min_chunk`)."""
        usable = [cs for cs in conn.channels if self.usable(conn, cs)]
        if not usable:
            return conn.chunk_size
        tier = min(cs.ch.tier for cs in usable)
        k = sum(1 for cs in usable if cs.ch.tier == tier)
        if k < 2 or n >= k * conn.chunk_size:
            return conn.chunk_size
        share = -(-n // k)
        return min(conn.chunk_size, max(self.opts.min_chunk, -(-share // 4096) * 4096))

    def release(self) -> None:
        """The caller is about to reuse borrowed buffers: copy what may still be resent."""
        for conn in self.conns.values():
            for q in (conn.pending, conn.retx, conn.unacked.values()):
                for c in q:
                    if c.borrowed:
                        c.payload, c.borrowed = bytes(c.payload), False

    def watch(self, peer: int, on: bool, now: float) -> None:
        """Tell the transport a receive from `peer` is waiting (makes a lost path count)."""
        self._conn(peer).watched += 1 if on else -1

    def _conn(self, peer: int) -> Connection:
        conn = self.conns.get(peer)
        if conn is None:
            raise ValueError(f"rank {self.me}: no peer rank {peer} (world size {self.topo.world})")
        return conn

    def _window(self, cs: ChannelState) -> int:
        if cs.ch.kind == IPC:
            return 4 * self.opts.ipc_chunk_size
        return max(self.opts.min_window, round(self.opts.channel_window * cs.weight))

    def _pick(self, conn: Connection, size: int) -> ChannelState | None:
        usable = [cs for cs in conn.channels if self.usable(conn, cs)]
        if not usable:
            return None
        tier = min(cs.ch.tier for cs in usable)
        best, best_load = None, 0.0
        for cs in usable:
            if cs.ch.tier != tier:
                continue
            if cs.inflight_bytes >= self._window(cs):
                cs.interval_full = True
                continue
            load = (cs.inflight_bytes + size) / cs.weight
            if best is None or load < best_load:
                best, best_load = cs, load
        return best

    def _pump(self, conn: Connection, now: float, acts: list[Action]) -> None:
        limit = (conn.peer_cum + self.opts.recv_window) & 0xFFFFFFFF
        while True:
            while conn.retx and conn.retx[0].acked:
                conn.retx.popleft()
            if conn.retx:
                chunk, queue = conn.retx[0], conn.retx
            elif conn.pending and 0 < ((limit - conn.pending[0].seq) & 0xFFFFFFFF) < 0x80000000:
                chunk, queue = conn.pending[0], conn.pending
            else:
                return
            cs = self._pick(conn, len(chunk.payload))
            if cs is None:
                return
            queue.popleft()
            self._send_chunk(conn, cs, chunk, now, acts)

    def _send_chunk(self, conn: Connection, cs: ChannelState, chunk: Chunk, now: float,
                    acts: list[Action]) -> None:
        chunk.channel = cs.ch.id
        chunk.sends += 1
        if chunk.sends > 1:
            cs.retransmits += 1
            self.counters["resent"] += 1
        conn.unacked[chunk.seq] = chunk
        cs.inflight[chunk.seq] = chunk
        n = len(chunk.payload)
        cs.inflight_bytes += n
        cs.interval_busy = True
        cs.bytes_sent += n
        body = wire.Data(chunk.seq, chunk.tag, chunk.msg_len, chunk.offset, chunk.payload)
        self._emit(conn, cs, wire.DATA, body, now, acts, control=False)

    def _emit(self, conn: Connection, cs: ChannelState, ptype: int, body: wire.Body,
              now: float, acts: list[Action], control: bool = True, epoch: int | None = None,
              tsecr: int = 0) -> None:
        h = wire.Header(ptype, self.me, conn.peer, cs.ch.id,
                        (conn.epoch if epoch is None else epoch) & 0xFFFF, _us(now), tsecr)
        cs.last_sent = now
        acts.append(Transmit(self.hop(cs.ch, conn.peer), wire.encode_parts(h, body), control))

    def _any_usable(self, conn: Connection, prefer: ChannelState) -> ChannelState | None:
        if self.usable(conn, prefer):
            return prefer
        return next((c for c in conn.channels if self.usable(conn, c)), None)

    # --------------------------------------------------------------- receiving

    def on_frame(self, link: Link, raw: bytes | memoryview, now: float) -> list[Action]:
        """Handle one frame that arrived on `link` (authenticated by the I/O layer)."""
        acts: list[Action] = []
        try:
            h, body = wire.decode(raw)
        except wire.WireError as e:
            self.counters["malformed"] += 1
            log.warning("rank %d: malformed frame on link %s: %s", self.me, link, e)
            self._link_lost(link, f"malformed frame: {e}", now, acts, close=True)
            return acts
        world = self.topo.world
        if h.type in (wire.HELLO, wire.CHALLENGE, wire.AUTH) or h.src >= world or \
                h.dst >= world or h.src == h.dst:
            self.counters["misrouted"] += 1
            return acts
        chans = self.topo.channels(h.src, h.dst)
        if h.channel >= len(chans):
            self.counters["misrouted"] += 1
            return acts
        ch = chans[h.channel]
        if h.dst != self.me:
            self._relay(link, ch, h, raw, acts)
            return acts
        conn = self.conns.get(h.src)
        # Identity from the link: the frame must come from the neighbour on that path.
        if conn is None or ch.id >= len(conn.channels) or self.hop(ch, h.src) != link:
            self.counters["misrouted"] += 1
            return acts
        cs = conn.channels[ch.id]
        self._heard(conn, cs, now)
        if h.type == wire.DATA:
            assert isinstance(body, wire.Data)
            self._on_data(conn, cs, body, now, acts)
        elif h.type == wire.ACK:
            assert isinstance(body, wire.Ack)
            self._on_ack(conn, body, now, acts)
        elif h.type == wire.NOTICE:
            assert isinstance(body, wire.Notice)
            self.lifecycle.on_notice(conn, cs, h, body, now, acts)
        elif h.type == wire.NOTICE_ACK:
            assert isinstance(body, wire.Ack)
            for chid in [c for c, e in conn.notice_dead.items() if not epoch_gt(e, h.epoch)]:
                del conn.notice_dead[chid]
            if conn.notice_nics_epoch is not None and \
                    not epoch_gt(conn.notice_nics_epoch, h.epoch):
                conn.notice_nics_epoch = None
            self._on_ack(conn, body, now, acts)
        elif h.type == wire.PROBE:
            # Answer on the probed path itself (a dead path is probed to see it work again).
            out = cs if self.links.get(self.hop(cs.ch, conn.peer)) else \
                self._any_usable(conn, cs)
            if out is not None:
                self._emit(conn, out, wire.PROBE_ACK, wire.Probe(0), now, acts, tsecr=h.tsval)
        elif h.type == wire.PROBE_ACK:
            rtt = ((_us(now) - h.tsecr) & 0xFFFFFFFF) / 1e6
            if rtt < 60:
                cs.srtt = rtt if cs.srtt is None else 0.875 * cs.srtt + 0.125 * rtt
        return acts

    def _relay(self, link: Link, ch: Channel, h: wire.Header, raw: bytes | memoryview,
               acts: list[Action]) -> None:
        """Forward a frame of another pair's relay channel through this rank."""
        if ch.kind != RELAY or ch.via != self.me or self.hop(ch, h.src) != link:
            self.counters["misrouted"] += 1
            return
        nxt = self.hop(ch, h.dst)
        if not self.links.get(nxt):
            self.counters["relay_dropped"] += 1
            return
        self.counters["relayed"] += 1
        acts.append(Transmit(nxt, [raw], h.type != wire.DATA))

    def _heard(self, conn: Connection, cs: ChannelState, now: float) -> None:
        if now - cs.last_heard > 3 * self.opts.keepalive:
            cs.streak_start = now
        cs.last_heard = now
        conn.last_heard = now
        if not cs.alive and cs.ch.kind == RELAY and cs.rejoin_at is None and \
                not cs.initial and not self._nic_blocked(cs) and now > cs.died_at:
            cs.rejoin_at = now + self.lifecycle.holddown(cs)

    def _on_data(self, conn: Connection, cs: ChannelState, d: wire.Data, now: float,
                 acts: list[Action]) -> None:
        outcome, done = conn.receive(d, self.opts.recv_window)
        if outcome == "duplicate":
            self.counters["duplicates"] += 1
        elif outcome == "overflow":
            self.counters["overflow"] += 1
        elif outcome == "bad":
            self.counters["malformed"] += 1
            log.error("rank %d: chunk %d from rank %d does not continue its message",
                      self.me, d.seq, conn.peer)
        for tag, data in done:
            acts.append(Deliver(conn.peer, tag, data))
        conn.ack_due.add(cs.ch.id)

    def _on_ack(self, conn: Connection, ack: wire.Ack, now: float, acts: list[Action]) -> None:
        for chunk in conn.acked_by(ack, self.opts.recv_window):
            chunk.acked = True
            if chunk.channel < 0:
                continue
            cs = conn.channels[chunk.channel]
            if cs.inflight.pop(chunk.seq, None) is None:
                continue
            n = len(chunk.payload)
            cs.inflight_bytes -= n
            cs.bytes_acked += n
            cs.interval_acked += n
        self._pump(conn, now, acts)

    def flush(self, now: float) -> list[Action]:
        """Acknowledge the data received since the last flush (one ACK per channel)."""
        acts: list[Action] = []
        for conn in self.conns.values():
            if not conn.ack_due:
                continue
            body = conn.ack_body()
            for chid in sorted(conn.ack_due):
                out = self._any_usable(conn, conn.channels[chid])
                if out is not None:
                    self._emit(conn, out, wire.ACK, body, now, acts)
            conn.ack_due.clear()
        return acts

    # ------------------------------------------------------------------- links

    def link_up(self, link: Link, now: float) -> list[Action]:
        """The I/O layer has an authenticated stream on `link`."""
        acts: list[Action] = []
        self.links[link] = True
        self.ever_up.add(link)
        self.connecting.discard(link)
        for conn, cs in self._on_link(link):
            if cs.alive or self._nic_blocked(cs):
                continue
            if cs.initial:
                self.lifecycle.revive(conn, cs, now, acts)
            elif cs.ch.kind != RELAY and cs.rejoin_at is None:
                cs.rejoin_at = now + self.lifecycle.holddown(cs)
        for conn in self.conns.values():
            self._pump(conn, now, acts)
        return acts

    def link_down(self, link: Link, reason: str, now: float) -> list[Action]:
        """The stream on `link` closed or failed."""
        acts: list[Action] = []
        self._link_lost(link, reason, now, acts, close=False)
        return acts

    def connect_failed(self, link: Link, reason: str, now: float) -> list[Action]:
        """A `Connect` did not succeed; the next attempt follows the back-off."""
        self.connecting.discard(link)
        for _, cs in self._on_link(link):
            if not cs.alive and cs.ch.kind != RELAY:
                cs.reason = f"{cs.reason.split('; reconnect')[0]}; reconnect failed: {reason}"
        return []

    def _on_link(self, link: Link) -> list[tuple[Connection, ChannelState]]:
        return [(conn, cs) for conn in self.conns.values() for cs in conn.channels
                if self.hop(cs.ch, conn.peer) == link]

    def _link_lost(self, link: Link, reason: str, now: float, acts: list[Action],
                   close: bool) -> None:
        was_up = self.links.get(link, False)
        self.links[link] = False
        self.connecting.discard(link)
        if close and was_up:
            acts.append(Close(link, reason))
        what = "intra-host link" if link[1] == IPC_LINK else f"nic{link[1]} link"
        for conn, cs in self._on_link(link):
            if cs.alive:
                self.lifecycle.kill(conn, cs, f"{what} to rank {link[0]} lost: {reason}",
                                    now, acts, announce=True)
            cs.rejoin_at = None

    # ------------------------------------------------------------------ timers

    def on_tick(self, now: float) -> list[Action]:
        """Run the timers: keepalives, silence, reconnects, probes, rejoin, notices."""
        acts: list[Action] = []
        o = self.opts
        stalled = self._last_tick is not None and now - self._last_tick > o.stall_gap
        self._last_tick = now
        for conn in self.conns.values():
            if conn.fatal:
                continue
            if stalled:  # we were not looking: what we did not hear is not silence
                for cs in conn.channels:
                    cs.last_heard = max(cs.last_heard, now)
                conn.last_heard = max(conn.last_heard, now)
            for cs in conn.channels:
                if cs.alive:
                    self._tick_alive(conn, cs, now, acts)
                else:
                    self._tick_dead(conn, cs, now, acts)
            if conn.fatal:
                continue
            self.lifecycle.send_notice(conn, now, acts)
            self._check_path(conn, now, acts)
            self._pump(conn, now, acts)
        if now >= self._next_goodput:
            self._update_weights(now)
        return acts

    def _tick_alive(self, conn: Connection, cs: ChannelState, now: float,
                    acts: list[Action]) -> None:
        o = self.opts
        if not self.links.get(self.hop(cs.ch, conn.peer)):
            return
        silent = now - cs.last_heard
        if silent >= o.silence_timeout and o.failover:
            witness = self._witness(conn, cs, now)
            if witness is not None:
                self.lifecycle.kill(conn, cs, f"silent for {silent:.2f} s while rank "
                                    f"{conn.peer} was heard on channel {witness.ch.id}",
                                    now, acts, announce=True)
                return
        if now - cs.last_sent >= o.keepalive:
            self._emit(conn, cs, wire.PROBE, wire.Probe(0), now, acts)

    def _witness(self, conn: Connection, cs: ChannelState, now: float) -> ChannelState | None:
        """Another channel on which the peer has been heard regularly for a while: proof
        that the peer is alive and answering, so `cs`'s silence is the path's fault."""
        o = self.opts
        for d in conn.channels:
            if d is not cs and now - d.last_heard < 3 * o.keepalive and \
                    now - d.streak_start >= o.silence_timeout / 2 and \
                    d.last_heard - cs.last_heard >= o.silence_timeout:
                return d
        return None

    def _tick_dead(self, conn: Connection, cs: ChannelState, now: float,
                   acts: list[Action]) -> None:
        if self._nic_blocked(cs):
            cs.rejoin_at = None
            return
        link = self.hop(cs.ch, conn.peer)
        if not self.links.get(link):
            if cs.ch.kind != RELAY and self.connector(link) and link not in self.connecting \
                    and now >= cs.next_attempt:
                self.connecting.add(link)
                cs.next_attempt = now + cs.attempt_interval
                cs.attempt_interval = min(self.opts.max_connect_interval,
                                          cs.attempt_interval * 2)
                acts.append(Connect(link))
            return
        if cs.rejoin_at is None and cs.ch.kind != RELAY:
            cs.rejoin_at = now + self.lifecycle.holddown(cs)
        if cs.rejoin_at is not None and now >= cs.rejoin_at:
            self.lifecycle.revive(conn, cs, now, acts)
        elif cs.ch.kind == RELAY and cs.rejoin_at is None and now >= cs.next_attempt:
            cs.next_attempt = now + cs.attempt_interval
            cs.attempt_interval = min(self.opts.max_connect_interval, cs.attempt_interval * 2)
            self._emit(conn, cs, wire.PROBE, wire.Probe(1), now, acts)

    def _check_path(self, conn: Connection, now: float, acts: list[Action]) -> None:
        if not conn.waiting() or any(self.usable(conn, cs) for cs in conn.channels):
            conn.no_path_since = None
            return
        if conn.no_path_since is None:
            conn.no_path_since = now
        elif now - conn.no_path_since >= self.opts.no_path_timeout and not conn.failed:
            paths = "; ".join(f"{cs.ch.describe(self.topo)} ({cs.reason or 'link down'})"
                              for cs in conn.channels)
            self.lifecycle.fail_peer(conn, f"rank {self.me}: no path left to rank {conn.peer} "
                                     f"after {now - conn.no_path_since:.2f} s: {paths}", now,
                                     acts)

    def _update_weights(self, now: float) -> None:
        dt = max(1e-6, now - self._last_goodput)
        self._last_goodput = now
        self._next_goodput = now + self.opts.goodput_interval
        for conn in self.conns.values():
            for cs in conn.channels:
                if cs.interval_busy or cs.interval_acked:
                    rate = cs.interval_acked / dt
                    if cs.goodput == 0:
                        cs.goodput = rate
                    elif cs.interval_full or rate > cs.goodput:
                        # a rate measured while the application offered less than the
                        # window says nothing about the rail unless it is higher (BBR's
                        # application-limited samples)
                        cs.goodput = 0.5 * cs.goodput + 0.5 * rate
                cs.interval_acked = 0
                cs.interval_busy = bool(cs.inflight)
                cs.interval_full = False
            top = max((cs.goodput for cs in conn.channels if cs.alive), default=0.0)
            for cs in conn.channels:
                cs.weight = max(0.05, cs.goodput / top) if top > 0 else 1.0

    def next_deadline(self) -> float | None:
        """Earliest time `on_tick` has something to do (None: nothing scheduled)."""
        o = self.opts
        cands: list[float] = []
        for conn in self.conns.values():
            if conn.fatal:
                continue
            if conn.notice_pending():
                cands.append(conn.notice_next)
            for cs in conn.channels:
                if cs.alive:  # the silence check runs with the keepalive ticks
                    cands.append(cs.last_sent + o.keepalive)
                elif not self._nic_blocked(cs):
                    link = self.hop(cs.ch, conn.peer)
                    if not self.links.get(link):
                        if cs.ch.kind != RELAY and self.connector(link) and \
                                link not in self.connecting:
                            cands.append(cs.next_attempt)
                    elif cs.rejoin_at is not None:
                        cands.append(cs.rejoin_at)
                    elif cs.ch.kind == RELAY:
                        cands.append(cs.next_attempt)
                    else:
                        cands.append(0.0)  # the next tick starts its hold-down
            if conn.no_path_since is not None and not conn.failed:
                cands.append(conn.no_path_since + o.no_path_timeout)
            if conn.busy():
                cands.append(self._next_goodput)
        return min(cands, default=None)

    # ---------------------------------------------------------- observability

    def channel_stats(self) -> list[dict]:
        """Per channel: peer, path, alive, bytes, retransmits, failures, goodput, weight."""
        out = []
        for conn in self.conns.values():
            for cs in conn.channels:
                out.append({
                    "peer": conn.peer, "channel": cs.ch.id, "kind": cs.ch.kind,
                    "path": cs.ch.describe(self.topo), "alive": cs.alive, "reason": cs.reason,
                    "bytes_sent": cs.bytes_sent, "bytes_acked": cs.bytes_acked,
                    "retransmits": cs.retransmits, "failures": cs.failures,
                    "goodput": cs.goodput, "weight": cs.weight, "srtt": cs.srtt,
                    "last_heard": cs.last_heard, "epoch": conn.epoch,
                })
        return out

    def describe_peer(self, peer: int, now: float) -> str:
        """What this rank last heard from `peer` on each channel (for timeout errors)."""
        conn = self._conn(peer)
        parts = []
        for cs in conn.channels:
            state = "up" if self.usable(conn, cs) else f"down: {cs.reason or 'link down'}"
            parts.append(f"{cs.ch.describe(self.topo)} ({state}), last heard "
                         f"{now - cs.last_heard:.1f} s ago")
        return "; ".join(parts)

    def idle(self) -> bool:
        """True when every sent chunk has been acknowledged (or its peer failed)."""
        return all(not (c.unacked or c.pending or c.retx) or c.failed or c.fatal
                   for c in self.conns.values())
