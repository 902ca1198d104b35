"""The ReCCL transport as a state machine: events plus an explicit clock in, actions out.

One `Transport` per rank holds a `Connection` per peer rank. A connection has
one sequence space for its chunks (a message is cut into chunks) and spreads
them over its channels (paths, see `reccl.topology`):

* reliability: sequence numbers, cumulative + selective acks, per-channel
  RTT estimate and retransmission timeout (RFC 6298 style), fast retransmit
  when `dupthresh` chunks sent later on the same channel were acked;
* flow control: the receiver accepts `recv_window` chunks beyond its
  cumulative frontier and advertises it; each channel keeps at most
  `channel_window` chunks in flight;
* failure handling: a channel dies on link state (`set_nic`) or after
  `silence_timeout` without hearing the peer on it while there is work; its
  unacknowledged chunks move to surviving channels at once; the peer is told
  with a NOTICE (new epoch) over the surviving channels and answers with its
  acknowledged frontier; relay channels through a same-host peer are used
  when no primary channel is left; with no channel left for
  `no_path_timeout` the peer fails with an error naming the rank and paths;
* load balancing: channel weights follow measured goodput; dead channels are
  probed and rejoin after a hold-down that doubles on each flap.

The receiver assembles each sequence number exactly once, in order, so a
duplicate is never applied twice. No I/O and no clock reads happen here;
`reccl.endpoint` does the socket work.
"""

from __future__ import annotations

import bisect
import logging
from collections import OrderedDict, deque
from dataclasses import dataclass, field

from . import wire
from .topology import DIRECT, IPC, Channel, Topology

log = logging.getLogger("reccl.transport")


@dataclass(frozen=True)
class TransportOptions:
    """Tunables of the transport (seconds and chunks)."""

    chunk_size: int = 8192
    """Payload bytes per DATA datagram."""
    channel_window: int = 64
    """Chunks in flight on a NIC channel of weight 1 (scaled down by weight)."""
    min_window: int = 8
    """Chunks in flight a NIC channel keeps whatever its weight."""
    ipc_chunk_size: int = 65000
    """Payload bytes per datagram between ranks of one host (intra-host path)."""
    ipc_window: int = 8
    """Datagrams in flight on a path through a Unix socket (IPC and relay channels): a
    Unix datagram queue holds only net.unix.max_dgram_qlen (default 10) datagrams."""
    recv_window: int = 4096
    """Chunks the receiver buffers beyond its cumulative frontier (flow control)."""
    initial_rto: float = 0.1
    """Retransmission timeout before the first RTT sample."""
    min_rto: float = 0.03
    """Lower bound of the retransmission timeout."""
    max_rto: float = 1.0
    """Upper bound of the (backed-off) retransmission timeout."""
    dupthresh: int = 3
    """Chunks acked after a lost one on the same channel before fast retransmit."""
    keepalive: float = 0.05
    """Probe a channel silent for this long while the connection has work."""
    silence_timeout: float = 0.5
    """Declare a channel dead after hearing nothing on it for this long while busy."""
    no_path_timeout: float = 2.0
    """Fail the peer when no channel has been alive for this long while busy."""
    probe_interval: float = 0.05
    """First interval between probes of a dead channel (doubles to max_probe_interval)."""
    max_probe_interval: float = 1.0
    """Longest interval between probes of a dead channel."""
    holddown: float = 0.1
    """Hold-down before a recovered channel rejoins (doubles per flap)."""
    max_holddown: float = 5.0
    """Longest hold-down."""
    stable_time: float = 2.0
    """A channel up this long before dying counts as a fresh failure, not a flap."""
    notice_rto: float = 0.03
    """Resend an unanswered NOTICE after this long."""
    ack_every: int = 16
    """Send an ack at the latest after this many DATA datagrams (else at flush)."""
    goodput_interval: float = 0.05
    """Period of the goodput measurement behind the channel weights."""
    failover: bool = True
    """False = fail-stop mode: the first dead path fails the peer (today's libraries)."""


@dataclass
class Transmit:
    """Send `data` over `hop`: ('nic', rail, (ip, port)) or ('ipc', rank)."""

    hop: tuple
    data: bytes


@dataclass
class Deliver:
    """A whole message arrived from `peer` with `tag`."""

    peer: int
    tag: int
    data: bytes | bytearray


@dataclass
class Event:
    """Something the caller may want to see: channel_down, channel_up, failover, peer_failed."""

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


Action = Transmit | Deliver | Event | PeerFailed


class PeerUnreachable(RuntimeError):
    """Raised by `Transport.send` on a connection that has already failed."""


@dataclass(eq=False)
class Chunk:
    """A piece of a message awaiting acknowledgement."""

    seq: int
    tag: int
    msg_len: int
    offset: int
    payload: bytes | memoryview
    channel: int = -1
    idx: int = 0
    sent_at: float = 0.0
    sends: int = 0
    acked: bool = False


@dataclass(eq=False)
class ChannelState:
    """Per-connection state of one channel."""

    ch: Channel
    alive: bool = True
    reason: str = ""
    srtt: float | None = None
    rttvar: float = 0.0
    rto: float = 0.1
    inflight: OrderedDict = field(default_factory=OrderedDict)
    send_idx: int = 0
    hi_acked_idx: int = -1
    timer: float | None = None
    last_heard: float = 0.0
    next_keepalive: float = 0.0
    alive_since: float = 0.0
    died_at: float = 0.0
    flaps: int = 0
    rejoin_at: float | None = None
    next_probe: float = 0.0
    probe_interval: float = 0.05
    bytes_sent: int = 0
    bytes_acked: int = 0
    retransmits: int = 0
    failures: int = 0
    goodput: float = 0.0
    weight: float = 1.0
    interval_acked: int = 0
    interval_busy: bool = False
    last_rx_tsval: int | None = None
    rto_fires: int = 0
    """Consecutive retransmission timeouts without progress."""
    suspect: bool = False
    """Its retransmission timer fired: carries no new chunks until the peer is heard on it."""


class Connection:
    """Both directions of the exchange with one peer rank."""

    def __init__(self, peer: int, channels: list[Channel], opts: TransportOptions,
                 now: float) -> None:
        self.peer = peer
        self.chunk_size = (opts.ipc_chunk_size if channels and all(c.kind == IPC for c in channels)
                           else opts.chunk_size)
        self.channels = [ChannelState(c, rto=opts.initial_rto, last_heard=now, alive_since=now,
                                      probe_interval=opts.probe_interval) for c in channels]
        self.epoch = 0
        """Our notice counter: bumped on every NOTICE we send."""
        self.peer_epoch = 0
        """Highest notice counter of the peer applied here (older notices are stale)."""
        # sender side
        self.next_seq = 0
        self.unacked: dict[int, Chunk] = {}
        self.pending: deque[Chunk] = deque()
        self.retx: deque[Chunk] = deque()
        self.peer_cum = 0
        self.peer_window = opts.recv_window
        self.notice: wire.Notice | None = None
        self.notice_next = 0.0
        # receiver side
        self.rcv_next = 0
        self.ooo: dict[int, wire.Data] = {}
        self.asm: tuple[int, int, bytearray, int] | None = None
        self.ack_due: dict[int, tuple[int, int]] = {}
        self.recent: list[int] = []
        """Sequence numbers received since the last ack (their SACK blocks go first)."""
        self.rx_since_ack = 0
        self.duplicates = 0
        # liveness
        self.watched = 0
        self.active = False
        self.no_path_since: float | None = None
        self.failed: str | None = None

    def busy(self) -> bool:
        """True while this connection has data or notices outstanding or a receive waiting."""
        return bool(self.unacked or self.pending or self.watched or self.notice)


def _us(now: float) -> int:
    return int(now * 1e6) & 0xFFFFFFFF


class Transport:
    """All connections of one rank; see the module docstring."""

    def __init__(self, me: int, topo: Topology, session: int,
                 opts: TransportOptions | None = None, now: float = 0.0) -> None:
        self.me = me
        self.topo = topo
        self.session = session
        self.opts = opts or TransportOptions()
        self.nic_down: set[tuple[int, int]] = set()
        self.conns: dict[int, Connection] = {}
        for p in range(topo.world):
            if p == me:
                continue
            chans = topo.channels(me, p)
            if not self.opts.failover:
                chans = [c for c in chans if c.tier == 0]
            self.conns[p] = Connection(p, chans, self.opts, now)
        self.counters = {"foreign": 0, "malformed": 0, "misrouted": 0, "relayed": 0,
                         "duplicates": 0, "overflow": 0, "rto": 0, "fast_retransmits": 0,
                         "reordered": 0}
        self._next_goodput = now + self.opts.goodput_interval
        self._last_goodput = now

    # ----------------------------------------------------------------- sending

    def send(self, peer: int, tag: int, data: bytes | memoryview, now: float) -> list[Action]:
        """Queue a message to `peer`; returns the datagrams that can go out at once."""
        conn = self._conn(peer)
        if conn.failed:
            raise PeerUnreachable(conn.failed)
        # Copy: callers reuse their buffers while chunks may still need retransmission.
        mv = memoryview(data if isinstance(data, bytes) else bytes(data))
        n = len(mv)
        step = conn.chunk_size
        for off in range(0, max(n, 1), step):
            conn.pending.append(Chunk(conn.next_seq, tag, n, off, mv[off:off + step]))
            conn.next_seq = (conn.next_seq + 1) & 0xFFFFFFFF
        acts: list[Action] = []
        self._activate(conn, now)
        self._pump(conn, now, acts)
        return acts

    def watch(self, peer: int, on: bool, now: float) -> None:
        """Tell the transport a receive from `peer` is waiting (keeps its paths checked)."""
        conn = self._conn(peer)
        conn.watched += 1 if on else -1
        if on:
            self._activate(conn, now)

    def _conn(self, peer: int) -> Connection:
        conn = self.conns.get(peer)
        if conn is None:
            raise ValueError(f"rank {self.me}: no peer rank {peer} (world size {self.topo.world})")
        return conn

    def _activate(self, conn: Connection, now: float) -> None:
        # An idle connection may not have heard its peer for long: restart the silence clock.
        if not conn.active:
            conn.active = True
            for cs in conn.channels:
                if cs.alive:
                    cs.last_heard = max(cs.last_heard, now)
                    cs.next_keepalive = now + self.opts.keepalive

    def _pick(self, conn: Connection) -> ChannelState | None:
        alive = [cs for cs in conn.channels if cs.alive]
        if not alive:
            return None
        tier = min(cs.ch.tier for cs in alive)
        alive = [cs for cs in alive if cs.ch.tier == tier]
        trusted = [cs for cs in alive if not cs.suspect]
        best, best_load = None, 0.0
        for cs in trusted or alive:
            if len(cs.inflight) >= self._window(cs):
                continue
            load = (len(cs.inflight) + 1) / cs.weight
            if best is None or load < best_load:
                best, best_load = cs, load
        return best

    def _window(self, cs: ChannelState) -> int:
        """Chunks a channel may have in flight: its share of channel_window by weight, so a
        slower path carries proportionally less (at least min_window, to keep measuring)."""
        if cs.ch.kind != DIRECT:
            return self.opts.ipc_window
        return max(self.opts.min_window, round(self.opts.channel_window * cs.weight))

    def _pump(self, conn: Connection, now: float, acts: list[Action]) -> None:
        while True:
            while conn.retx and conn.retx[0].acked:
                conn.retx.popleft()
            if conn.retx:
                chunk = conn.retx[0]
            elif conn.pending and _seq_lt(conn.pending[0].seq,
                                          (conn.peer_cum + conn.peer_window) & 0xFFFFFFFF):
                chunk = conn.pending[0]
            else:
                return
            cs = self._pick(conn)
            if cs is None:
                return
            (conn.retx if conn.retx else conn.pending).popleft()
            self._send_chunk(conn, cs, chunk, now, acts)

    def _send_chunk(self, conn: Connection, cs: ChannelState, chunk: Chunk, now: float,
                    acts: list[Action]) -> None:
        chunk.channel = cs.ch.id
        chunk.idx = cs.send_idx
        cs.send_idx += 1
        chunk.sent_at = now
        chunk.sends += 1
        if chunk.sends > 1:
            cs.retransmits += 1
        conn.unacked[chunk.seq] = chunk
        cs.inflight[chunk.seq] = chunk
        cs.interval_busy = True
        if cs.timer is None:
            cs.timer = now + cs.rto
        cs.bytes_sent += len(chunk.payload)
        h = self._header(conn, cs.ch.id, wire.DATA, now)
        body = wire.Data(chunk.seq, chunk.tag, chunk.msg_len, chunk.offset, chunk.payload)
        acts.append(Transmit(self._hop(cs.ch, conn.peer), wire.encode(h, body)))

    def _header(self, conn: Connection, channel: int, ptype: int, now: float,
                tsecr: int = 0) -> wire.Header:
        return wire.Header(ptype, self.session, self.me, conn.peer, channel, conn.epoch & 0xFFFF,
                           _us(now), tsecr)

    def _hop(self, ch: Channel, other: int) -> tuple:
        """First hop from this rank on channel `ch` towards rank `other`."""
        if ch.kind == IPC:
            return ("ipc", other)
        if ch.kind == DIRECT:
            return ("nic", ch.rail, self.topo.ranks[other].nics[ch.rail])
        if self.topo.same_host(ch.via, self.me):
            return ("ipc", ch.via)
        return ("nic", ch.rail, self.topo.ranks[ch.via].nics[ch.rail])

    def _requeue(self, conn: Connection, cs: ChannelState, chunk: Chunk) -> None:
        cs.inflight.pop(chunk.seq, None)
        chunk.channel = -1
        conn.retx.append(chunk)

    # --------------------------------------------------------------- receiving

    def on_datagram(self, raw: bytes | memoryview, now: float) -> list[Action]:
        """Handle one received datagram (any socket); malformed/foreign ones are counted."""
        acts: list[Action] = []
        try:
            h, body = wire.decode(raw)
        except wire.WireError as e:
            self.counters["foreign" if e.foreign else "malformed"] += 1
            log.debug("rank %d: dropped datagram: %s", self.me, e)
            return acts
        if h.session != self.session:
            self.counters["foreign"] += 1
            return acts
        if h.src >= self.topo.world or h.dst >= self.topo.world or h.src == h.dst:
            self.counters["malformed"] += 1
            return acts
        if h.dst != self.me:
            self._relay(h, raw, acts)
            return acts
        conn = self.conns[h.src]
        chans = conn.channels
        if h.channel >= len(chans) or chans[h.channel].ch.id != h.channel:
            self.counters["malformed"] += 1
            return acts
        if conn.failed:
            return acts
        cs = chans[h.channel]
        if cs.alive:
            cs.last_heard = now
            cs.suspect = False
        if h.type == wire.DATA:
            self._on_data(conn, cs, h, body, now, acts)
        elif h.type == wire.ACK:
            self._on_ack(conn, cs, h, body, now, acts)
        elif h.type == wire.NOTICE:
            self._on_notice(conn, cs, h, body, now, acts)
        elif h.type == wire.NOTICE_ACK:
            if conn.notice is not None and h.epoch == (conn.epoch & 0xFFFF):
                conn.notice = None
            self._on_ack(conn, cs, h, body, now, acts)
        elif h.type == wire.PROBE:
            reply = self._header(conn, cs.ch.id, wire.PROBE_ACK, now, tsecr=h.tsval)
            acts.append(Transmit(self._hop(cs.ch, conn.peer), wire.encode(reply, body)))
        elif h.type == wire.PROBE_ACK:
            self._rtt_sample(cs, h.tsecr, now)
            if not cs.alive and cs.rejoin_at is None and not self._nic_blocked(cs):
                cs.rejoin_at = max(now, cs.died_at + self._holddown(cs))
        return acts

    def _relay(self, h: wire.Header, raw: bytes | memoryview, acts: list[Action]) -> None:
        chans = self.topo.channels(h.src, h.dst)
        ch = chans[h.channel] if h.channel < len(chans) else None
        if ch is None or ch.via != self.me:
            self.counters["misrouted"] += 1
            return
        if self.topo.same_host(self.me, h.dst):
            hop: tuple = ("ipc", h.dst)
        elif (self.me, ch.rail) in self.nic_down:
            self.counters["misrouted"] += 1
            return
        else:
            hop = ("nic", ch.rail, self.topo.ranks[h.dst].nics[ch.rail])
        self.counters["relayed"] += 1
        acts.append(Transmit(hop, bytes(raw)))

    def _on_data(self, conn: Connection, cs: ChannelState, h: wire.Header, d: wire.Data,
                 now: float, acts: list[Action]) -> None:
        seq = d.seq
        if cs.last_rx_tsval is not None and \
                0 < (cs.last_rx_tsval - h.tsval) & 0xFFFFFFFF < 0x80000000:
            self.counters["reordered"] += 1  # sent earlier, arrived later on one channel
        else:
            cs.last_rx_tsval = h.tsval
        delta = (seq - conn.rcv_next) & 0xFFFFFFFF
        if delta >= 0x80000000 or seq in conn.ooo:
            conn.duplicates += 1
            self.counters["duplicates"] += 1
        elif delta >= self.opts.recv_window:
            self.counters["overflow"] += 1
            return
        else:
            d.payload = bytes(d.payload)
            conn.ooo[seq] = d
            while conn.rcv_next in conn.ooo:
                self._assemble(conn, conn.ooo.pop(conn.rcv_next), acts)
                conn.rcv_next = (conn.rcv_next + 1) & 0xFFFFFFFF
        conn.ack_due[cs.ch.id] = (h.tsval, seq)
        conn.recent.append(seq)
        conn.rx_since_ack += 1
        if conn.rx_since_ack >= self.opts.ack_every:
            self._send_acks(conn, now, acts)

    def _assemble(self, conn: Connection, d: wire.Data, acts: list[Action]) -> None:
        if conn.asm is None:
            if d.offset != 0:
                self.counters["malformed"] += 1
                return
            if len(d.payload) == d.msg_len:
                acts.append(Deliver(conn.peer, d.tag, d.payload))
                return
            conn.asm = (d.tag, d.msg_len, bytearray(d.msg_len), 0)
        tag, msg_len, buf, filled = conn.asm
        if d.tag != tag or d.msg_len != msg_len or d.offset != filled:
            self.counters["malformed"] += 1
            return
        end = filled + len(d.payload)
        buf[filled:end] = d.payload
        if end == msg_len:
            conn.asm = None
            acts.append(Deliver(conn.peer, tag, buf))
        else:
            conn.asm = (tag, msg_len, buf, end)

    def _frontier(self, conn: Connection, trigger: int) -> wire.Ack:
        """Cumulative frontier plus SACK blocks: first the blocks holding chunks received
        since the last ack, newest first (RFC 2018 section 4), then the lowest others."""
        blocks: list[tuple[int, int]] = []
        if conn.ooo:
            base = conn.rcv_next
            offs = sorted((s - base) & 0xFFFFFFFF for s in conn.ooo)
            start = prev = offs[0]
            for o in offs[1:]:
                if o != prev + 1:
                    blocks.append((start, prev + 1))
                    start = o
                prev = o
            blocks.append((start, prev + 1))
            starts = [b[0] for b in blocks]
            first: list[int] = []
            for seq in reversed(conn.recent + [trigger]):
                i = bisect.bisect_right(starts, (seq - base) & 0xFFFFFFFF) - 1
                if i >= 0 and blocks[i][1] > (seq - base) & 0xFFFFFFFF and i not in first:
                    first.append(i)
            chosen = set(first)
            order = first + [i for i in range(len(blocks)) if i not in chosen]
            blocks = [((base + blocks[i][0]) & 0xFFFFFFFF, (base + blocks[i][1]) & 0xFFFFFFFF)
                      for i in order[:wire.MAX_SACK]]
        return wire.Ack(conn.rcv_next, trigger, self.opts.recv_window, blocks)

    def _send_acks(self, conn: Connection, now: float, acts: list[Action]) -> None:
        for chid, (tsval, trigger) in conn.ack_due.items():
            cs = conn.channels[chid]
            if not cs.alive:
                cs = self._pick_any(conn) or cs
            h = self._header(conn, cs.ch.id, wire.ACK, now, tsecr=tsval if cs.ch.id == chid else 0)
            acts.append(Transmit(self._hop(cs.ch, conn.peer),
                                 wire.encode(h, self._frontier(conn, trigger))))
        conn.ack_due.clear()
        conn.recent.clear()
        conn.rx_since_ack = 0

    def _pick_any(self, conn: Connection) -> ChannelState | None:
        alive = [cs for cs in conn.channels if cs.alive]
        return min(alive, key=lambda cs: (cs.ch.tier, len(cs.inflight))) if alive else None

    def flush(self, now: float) -> list[Action]:
        """Send the acks owed after a batch of received datagrams."""
        acts: list[Action] = []
        for conn in self.conns.values():
            if conn.ack_due:
                self._send_acks(conn, now, acts)
        return acts

    def _rtt_sample(self, cs: ChannelState, tsecr: int, now: float) -> None:
        if not tsecr:
            return
        rtt = ((_us(now) - tsecr) & 0xFFFFFFFF) / 1e6
        if rtt > 10.0:
            return
        if cs.srtt is None:
            cs.srtt, cs.rttvar = rtt, rtt / 2
        else:  # RFC 6298 section 2.3
            cs.rttvar = 0.75 * cs.rttvar + 0.25 * abs(cs.srtt - rtt)
            cs.srtt = 0.875 * cs.srtt + 0.125 * rtt
        cs.rto = min(self.opts.max_rto, max(self.opts.min_rto, cs.srtt + 4 * cs.rttvar))

    def _on_ack(self, conn: Connection, cs: ChannelState, h: wire.Header, a: wire.Ack,
                now: float, acts: list[Action]) -> None:
        self._rtt_sample(cs, h.tsecr, now)
        touched: set[ChannelState] = set()
        if _seq_lt(conn.peer_cum, a.cum) and _seq_le(a.cum, conn.next_seq):
            s = conn.peer_cum
            while s != a.cum:
                chunk = conn.unacked.pop(s, None)
                if chunk is not None:
                    self._acked(conn, chunk, now, touched)
                s = (s + 1) & 0xFFFFFFFF
            conn.peer_cum = a.cum
        conn.peer_window = a.window
        for start, end in a.sacks:
            if not (_seq_lt(conn.peer_cum, end) and _seq_le(end, conn.next_seq)):
                continue
            s = start if _seq_lt(conn.peer_cum, start) else conn.peer_cum
            while s != end:
                chunk = conn.unacked.pop(s, None)
                if chunk is not None:
                    self._acked(conn, chunk, now, touched)
                s = (s + 1) & 0xFFFFFFFF
        for tc in touched:
            # Fast retransmit: dupthresh later sends on this channel were acked.
            while tc.inflight:
                first = next(iter(tc.inflight.values()))
                if first.idx + self.opts.dupthresh > tc.hi_acked_idx:
                    break
                self.counters["fast_retransmits"] += 1
                self._requeue(conn, tc, first)
            tc.timer = now + tc.rto if tc.inflight else None
        self._pump(conn, now, acts)

    def _acked(self, conn: Connection, chunk: Chunk, now: float,
               touched: set[ChannelState]) -> None:
        chunk.acked = True
        if chunk.channel < 0:
            return
        cs = conn.channels[chunk.channel]
        if cs.inflight.pop(chunk.seq, None) is None:
            return
        n = len(chunk.payload)
        cs.bytes_acked += n
        cs.interval_acked += n
        if chunk.sends == 1:  # a retransmitted chunk's ack may be for its first copy
            cs.hi_acked_idx = max(cs.hi_acked_idx, chunk.idx)
        cs.rto_fires = 0
        if cs.srtt is not None:
            cs.rto = min(self.opts.max_rto, max(self.opts.min_rto, cs.srtt + 4 * cs.rttvar))
        touched.add(cs)

    # ---------------------------------------------------------------- failures

    def set_nic(self, rail: int, up: bool, now: float) -> list[Action]:
        """Link state of this rank's NIC `rail` changed (from netlink or a test)."""
        acts: list[Action] = []
        key = (self.me, rail)
        if (key not in self.nic_down) == up:
            return acts
        if up:
            self.nic_down.discard(key)
        else:
            self.nic_down.add(key)
        for conn in self.conns.values():
            if conn.failed:
                continue
            changed, killed = False, []
            for cs in conn.channels:
                if key in cs.ch.nics(self.topo):
                    changed = True
                    if not up and cs.alive:
                        killed.append(cs.ch.id)
                        self._kill(conn, cs, f"link down on rank {self.me} nic{rail}", now, acts)
                    else:
                        cs.next_probe = now
            # Same-host peers may relay through this NIC: they hear about it too.
            if (changed or self.topo.same_host(self.me, conn.peer)) and not conn.failed:
                self._announce(conn, now, acts, killed)
        return acts

    def fail_channel(self, peer: int, channel: int, reason: str, now: float) -> list[Action]:
        """Declare a channel dead from outside (tests, operator)."""
        acts: list[Action] = []
        conn = self._conn(peer)
        self._kill(conn, conn.channels[channel], reason, now, acts)
        if not conn.failed:
            self._announce(conn, now, acts, [channel])
        return acts

    def _holddown(self, cs: ChannelState) -> float:
        return min(self.opts.max_holddown, self.opts.holddown * 2 ** max(0, cs.flaps - 1))

    def _nic_blocked(self, cs: ChannelState) -> bool:
        return bool(cs.ch.nics(self.topo) & self.nic_down)

    def _kill(self, conn: Connection, cs: ChannelState, reason: str, now: float,
              acts: list[Action]) -> None:
        if not cs.alive:
            return
        cs.alive = False
        cs.reason = reason
        cs.failures += 1
        cs.flaps = cs.flaps + 1 if now - cs.alive_since < self.opts.stable_time else 1
        cs.died_at = now
        cs.rejoin_at = None
        cs.probe_interval = self.opts.probe_interval
        cs.next_probe = now + cs.probe_interval
        cs.timer = None
        moved = list(cs.inflight.values())
        for chunk in moved:
            self._requeue(conn, cs, chunk)
        path = cs.ch.describe(self.topo)
        acts.append(Event(now, "channel_down", conn.peer, cs.ch.id,
                          f"{path}: {reason}; {len(moved)} chunks moved"))
        log.info("rank %d: channel %d to rank %d down (%s): %s", self.me, cs.ch.id, conn.peer,
                 path, reason)
        if not self.opts.failover:
            self._fail_peer(conn, f"rank {self.me}: fail-stop: path {path} to rank "
                                  f"{conn.peer} failed: {reason}", now, acts)
            return
        self._pump(conn, now, acts)

    def _announce(self, conn: Connection, now: float, acts: list[Action],
                  dead: list[int]) -> None:
        """Tell the peer (new epoch) our NIC states and the channels that just died here;
        only those: a channel dead here earlier may already have rejoined over there."""
        mine = [(self.me, r, (self.me, r) not in self.nic_down)
                for r in range(self.topo.rails(self.me))]
        conn.epoch = (conn.epoch + 1) & 0xFFFF
        conn.notice = wire.Notice(mine, dead)
        conn.notice_next = now
        self._activate(conn, now)
        self._send_notice(conn, now, acts)
        acts.append(Event(now, "failover", conn.peer, -1,
                          f"epoch {conn.epoch}: dead channels {dead}"))

    def _send_notice(self, conn: Connection, now: float, acts: list[Action]) -> None:
        if conn.notice is None or now < conn.notice_next:
            return
        conn.notice_next = now + self.opts.notice_rto
        for cs in conn.channels:
            if cs.alive:
                h = self._header(conn, cs.ch.id, wire.NOTICE, now)
                acts.append(Transmit(self._hop(cs.ch, conn.peer), wire.encode(h, conn.notice)))

    def _on_notice(self, conn: Connection, cs: ChannelState, h: wire.Header, n: wire.Notice,
                   now: float, acts: list[Action]) -> None:
        if _epoch_gt(h.epoch, conn.peer_epoch):
            conn.peer_epoch = h.epoch
            for rank, rail, up in n.nics:
                if rank != conn.peer:
                    continue
                self._peer_nic(rank, rail, up, now, acts)
            for chid in n.channels:
                if chid < len(conn.channels):
                    self._kill(conn, conn.channels[chid], "peer notice", now, acts)
        reply = self._header(conn, cs.ch.id, wire.NOTICE_ACK, now, tsecr=h.tsval)
        reply.epoch = h.epoch
        out = cs if cs.alive else (self._pick_any(conn) or cs)
        reply.channel = out.ch.id
        acts.append(Transmit(self._hop(out.ch, conn.peer),
                             wire.encode(reply, self._frontier(conn, conn.rcv_next))))

    def _peer_nic(self, rank: int, rail: int, up: bool, now: float, acts: list[Action]) -> None:
        key = (rank, rail)
        if up:
            if key in self.nic_down:
                self.nic_down.discard(key)
                for conn in self.conns.values():
                    for c in conn.channels:
                        if key in c.ch.nics(self.topo) and not c.alive:
                            c.next_probe = now
            return
        if key in self.nic_down:
            return
        self.nic_down.add(key)
        for conn in self.conns.values():
            if conn.failed:
                continue
            for c in conn.channels:
                if key in c.ch.nics(self.topo):
                    self._kill(conn, c, f"link down on rank {rank} nic{rail}", now, acts)

    def _fail_peer(self, conn: Connection, error: str, now: float, acts: list[Action]) -> None:
        if conn.failed:
            return
        conn.failed = error
        conn.pending.clear()
        conn.retx.clear()
        conn.unacked.clear()
        for cs in conn.channels:
            cs.inflight.clear()
            cs.timer = None
        acts.append(Event(now, "peer_failed", conn.peer, -1, error))
        acts.append(PeerFailed(conn.peer, error))
        log.error("%s", error)

    # ------------------------------------------------------------------ timers

    def on_tick(self, now: float) -> list[Action]:
        """Run the timers: retransmission, keepalive/silence, probes, rejoin, goodput."""
        acts: list[Action] = []
        o = self.opts
        for conn in self.conns.values():
            if conn.failed:
                continue
            busy = conn.busy()
            if not busy:
                conn.active = False
            for cs in conn.channels:
                if cs.alive:
                    self._tick_alive(conn, cs, busy, now, acts)
                else:
                    self._tick_dead(conn, cs, now, acts)
            if conn.failed:
                continue
            self._send_notice(conn, now, acts)
            if not busy or any(cs.alive for cs in conn.channels):
                conn.no_path_since = None
            elif busy:
                if conn.no_path_since is None:
                    conn.no_path_since = now
                elif now - conn.no_path_since >= o.no_path_timeout:
                    paths = "; ".join(f"{cs.ch.describe(self.topo)} ({cs.reason})"
                                      for cs in conn.channels)
                    self._fail_peer(conn, f"rank {self.me}: no path left to rank {conn.peer} "
                                          f"after {now - conn.no_path_since:.2f} s: {paths}",
                                    now, acts)
                    continue
            self._pump(conn, now, acts)
        if now >= self._next_goodput:
            self._update_weights(now)
        return acts

    def _tick_alive(self, conn: Connection, cs: ChannelState, busy: bool, now: float,
                    acts: list[Action]) -> None:
        o = self.opts
        if cs.timer is not None and now >= cs.timer and cs.inflight:
            self.counters["rto"] += 1
            cs.rto_fires += 1
            if cs.rto_fires == 1:  # maybe a delay spike: resend the oldest only
                self._requeue(conn, cs, next(iter(cs.inflight.values())))
            else:
                # Still no progress: the channel is probably dead. Move everything it holds
                # to the others now instead of waiting for the silence timeout.
                for chunk in list(cs.inflight.values()):
                    self._requeue(conn, cs, chunk)
                cs.suspect = True
            cs.rto = min(o.max_rto, cs.rto * 2)  # RFC 6298 section 5.5 back-off
            cs.timer = now + cs.rto if cs.inflight else None
        elif not cs.inflight:
            cs.timer = None
        if not busy:
            return
        if now - cs.last_heard >= o.silence_timeout:
            self._kill(conn, cs, f"timeout: nothing heard for {now - cs.last_heard:.3f} s", now,
                       acts)
            if not conn.failed:
                self._announce(conn, now, acts, [cs.ch.id])
            return
        if now - cs.last_heard >= o.keepalive and now >= cs.next_keepalive:
            cs.next_keepalive = now + o.keepalive
            h = self._header(conn, cs.ch.id, wire.PROBE, now)
            acts.append(Transmit(self._hop(cs.ch, conn.peer), wire.encode(h, wire.Probe(0))))

    def _tick_dead(self, conn: Connection, cs: ChannelState, now: float,
                   acts: list[Action]) -> None:
        if self._nic_blocked(cs):
            cs.rejoin_at = None
            return
        if cs.rejoin_at is not None and now >= cs.rejoin_at:
            cs.alive = True
            cs.reason = ""
            cs.alive_since = cs.last_heard = now
            cs.next_keepalive = now + self.opts.keepalive
            cs.rejoin_at = None
            cs.srtt, cs.rto, cs.timer = None, self.opts.initial_rto, None
            cs.send_idx, cs.hi_acked_idx = 0, -1
            acts.append(Event(now, "channel_up", conn.peer, cs.ch.id,
                              f"{cs.ch.describe(self.topo)} rejoined after "
                              f"{self._holddown(cs):.3f} s hold-down (flaps {cs.flaps})"))
            log.info("rank %d: channel %d to rank %d rejoined", self.me, cs.ch.id, conn.peer)
            return
        if now >= cs.next_probe:
            cs.next_probe = now + cs.probe_interval
            cs.probe_interval = min(self.opts.max_probe_interval, cs.probe_interval * 2)
            h = self._header(conn, cs.ch.id, wire.PROBE, now)
            acts.append(Transmit(self._hop(cs.ch, conn.peer), wire.encode(h, wire.Probe(1))))

    def _update_weights(self, now: float) -> None:
        dt = max(1e-6, now - self._last_goodput)
        self._last_goodput = now
        self._next_goodput = now + self.opts.goodput_interval
        for conn in self.conns.values():
            for cs in conn.channels:
                if cs.interval_busy or cs.interval_acked:
                    rate = cs.interval_acked / dt
                    cs.goodput = rate if cs.goodput == 0 else 0.5 * cs.goodput + 0.5 * rate
                cs.interval_acked = 0
                cs.interval_busy = bool(cs.inflight)
            top = max((cs.goodput for cs in conn.channels if cs.alive), default=0.0)
            for cs in conn.channels:
                cs.weight = max(0.05, cs.goodput / top) if top > 0 else 1.0

    def next_deadline(self) -> float | None:
        """Earliest time `on_tick` has something to do (None: nothing scheduled)."""
        best: float | None = None
        o = self.opts
        for conn in self.conns.values():
            if conn.failed:
                continue
            cands = []
            if conn.notice is not None:
                cands.append(conn.notice_next)
            busy = conn.busy()
            for cs in conn.channels:
                if cs.alive:
                    if cs.timer is not None:
                        cands.append(cs.timer)
                    if busy:
                        cands.append(max(cs.next_keepalive, cs.last_heard + o.keepalive))
                elif not self._nic_blocked(cs):
                    cands.append(cs.rejoin_at if cs.rejoin_at is not None else cs.next_probe)
            if conn.no_path_since is not None:
                cands.append(conn.no_path_since + o.no_path_timeout)
            if busy:
                cands.append(self._next_goodput)
            for c in cands:
                if best is None or c < best:
                    best = c
        return best

    # ---------------------------------------------------------- observability

    def channel_stats(self) -> list[dict]:
        """Per channel: peer, path, alive, bytes, retransmits, failures, goodput, weight, srtt."""
        out = []
        for conn in self.conns.values():
            for cs in conn.channels:
                out.append({
                    "peer": conn.peer, "channel": cs.ch.id, "kind": cs.ch.kind,
                    "path": cs.ch.describe(self.topo), "alive": cs.alive, "reason": cs.reason,
                    "bytes_sent": cs.bytes_sent, "bytes_acked": cs.bytes_acked,
                    "retransmits": cs.retransmits, "failures": cs.failures,
                    "goodput": cs.goodput, "weight": cs.weight, "srtt": cs.srtt,
                    "epoch": conn.epoch,
                })
        return out

    def idle(self) -> bool:
        """True when every sent chunk has been acknowledged (or its peer failed)."""
        return all(not (c.unacked or c.pending) or c.failed for c in self.conns.values())


def _seq_lt(a: int, b: int) -> bool:
    return a != b and ((b - a) & 0xFFFFFFFF) < 0x80000000


def _seq_le(a: int, b: int) -> bool:
    return a == b or _seq_lt(a, b)


def _epoch_gt(a: int, b: int) -> bool:
    return a != b and ((a - b) & 0xFFFF) < 0x8000
