"""Per-peer state of the transport: chunks in flight, the receiver frontier, channels.

`Connection` holds both directions of the exchange with one peer rank: the
sender's sequence space (pending, unacknowledged and to-be-resent chunks) and
the receiver's frontier (the next expected sequence number, chunks that came
ahead of it over another channel, the message being assembled). A sequence
number is assembled exactly once, in order, whatever channel or how many times
it arrived, so a chunk resent after a failover is never applied twice.
`reccl.transport` decides what to send where and when; nothing here does I/O.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field

from . import wire
from .topology import Channel


class Pieces(list):
    """A message delivered as its chunks' payloads in order (no reassembly copy): what a
    message spread over several channels arrives as. `bytes()` joins them."""

    @property
    def nbytes(self) -> int:
        return sum(len(p) for p in self)

    def __bytes__(self) -> bytes:
        return b"".join(bytes(p) for p in self)


Message = bytes | bytearray | memoryview | Pieces
"""What a receive returns: one buffer, or the pieces of a message spread over channels."""


def contiguous(msg: Message) -> bytes | bytearray | memoryview:
    """A message as one buffer (joins `Pieces`, a copy; anything else as it is)."""
    return bytes(msg) if isinstance(msg, Pieces) else msg


def pieces(msg: Message) -> list[tuple[int, memoryview]]:
    """(byte offset, buffer) of each part of a message, in order."""
    if not isinstance(msg, Pieces):
        return [(0, memoryview(msg))]
    out, off = [], 0
    for p in msg:
        out.append((off, memoryview(p)))
        off += len(p)
    return out


@dataclass(eq=False)
class Chunk:
    """A piece of a message awaiting acknowledgement."""

    seq: int
    tag: int
    msg_len: int
    offset: int
    payload: bytes | memoryview
    channel: int = -1
    sends: int = 0
    acked: bool = False
    borrowed: bool = False
    """The payload is a view of the caller's buffer (see `Transport.send`)."""


@dataclass(eq=False)
class ChannelState:
    """Per-connection state of one channel (path)."""

    ch: Channel
    alive: bool = False
    """Admitted: carries new chunks (when its first link is up)."""
    reason: str = "not connected yet"
    initial: bool = True
    """Never admitted yet: the first connection admits it without a hold-down or event."""
    inflight: OrderedDict = field(default_factory=OrderedDict)
    inflight_bytes: int = 0
    last_heard: float = 0.0
    streak_start: float = 0.0
    """Start of the current run of regular hearing on this channel (a witness of liveness)."""
    last_sent: float = 0.0
    alive_since: float = 0.0
    died_at: float = 0.0
    flaps: int = 0
    rejoin_at: float | None = None
    next_attempt: float = 0.0
    """Next reconnect attempt (links) or probe (relay paths) while dead."""
    attempt_interval: float = 0.05
    srtt: float | None = None
    bytes_sent: int = 0
    bytes_acked: int = 0
    retransmits: int = 0
    failures: int = 0
    goodput: float = 0.0
    weight: float = 1.0
    interval_acked: int = 0
    interval_busy: bool = False
    interval_full: bool = False
    """Data waited for this channel's window during the interval: its rate is what it carries."""


class Connection:
    """Both directions of the exchange with one peer rank."""

    def __init__(self, peer: int, channels: list[Channel], chunk_size: int, now: float,
                 attempt_interval: float) -> None:
        self.peer = peer
        self.chunk_size = chunk_size
        self.channels = [ChannelState(c, last_heard=now, streak_start=now,
                                      attempt_interval=attempt_interval) for c in channels]
        self.last_heard = now
        # failover notices (accumulated until acknowledged)
        self.epoch = 0
        """Our notice counter: bumped whenever the notice's content grows."""
        self.peer_epoch = 0
        """Highest notice counter of the peer applied here (older notices are stale)."""
        self.notice_dead: dict[int, int] = {}
        """Channel id -> epoch at which we announced it dead (until the peer acks that epoch)."""
        self.notice_nics_epoch: int | None = None
        """Epoch of our last NIC-state change the peer has not acknowledged yet."""
        self.notice_next = 0.0
        # sender side
        self.next_seq = 0
        self.unacked: dict[int, Chunk] = {}
        self.pending: deque[Chunk] = deque()
        self.retx: deque[Chunk] = deque()
        self.peer_cum = 0
        # receiver side
        self.rcv_next = 0
        self.ooo: dict[int, wire.Data] = {}
        self.asm: tuple[int, int, Pieces, int] | None = None
        self.ack_due: set[int] = set()
        # liveness
        self.watched = 0
        self.no_path_since: float | None = None
        self.failed: str | None = None
        """Why the peer is unreachable now (cleared when a path comes back)."""
        self.fatal: str | None = None
        """Fail-stop mode: the first failure, never cleared."""

    def notice_pending(self) -> bool:
        """True while the peer has not acknowledged everything we announced."""
        return bool(self.notice_dead) or self.notice_nics_epoch is not None

    def waiting(self) -> bool:
        """True while our data is outstanding or a receive is waiting on this peer."""
        return bool(self.unacked or self.pending or self.retx or self.watched)

    def busy(self) -> bool:
        """True while data or notices are outstanding or a receive is waiting."""
        return bool(self.unacked or self.pending or self.retx or self.watched
                    or self.notice_pending())

    # ------------------------------------------------------------- receiving

    def receive(self, d: wire.Data, window: int) -> tuple[str, list[tuple[int, Message]]]:
        """Take one DATA chunk; returns (outcome, [(tag, message)] now complete), outcome
        'new', 'duplicate', 'overflow' or 'bad' (inconsistent with the message it extends)."""
        off = (d.seq - self.rcv_next) & 0xFFFFFFFF
        if off >= 0x80000000 or d.seq in self.ooo:
            return "duplicate", []
        if off >= window:
            return "overflow", []
        self.ooo[d.seq] = d
        done: list[tuple[int, Message]] = []
        while self.rcv_next in self.ooo:
            chunk = self.ooo.pop(self.rcv_next)
            self.rcv_next = (self.rcv_next + 1) & 0xFFFFFFFF
            if not self._assemble(chunk, done):
                return "bad", done
        return "new", done

    def _assemble(self, d: wire.Data, done: list) -> bool:
        n = len(d.payload)
        if self.asm is None:
            if d.offset != 0:
                return False
            if n == d.msg_len:  # whole message in one chunk: hand over without a copy
                done.append((d.tag, d.payload))
                return True
            self.asm = (d.tag, d.msg_len, Pieces([d.payload]), n)
            return True
        tag, msg_len, parts, got = self.asm
        if d.tag != tag or d.msg_len != msg_len or d.offset != got or got + n > msg_len:
            self.asm = None
            return False
        parts.append(d.payload)  # chunks come in sequence order: the parts are in order
        got += n
        if got == msg_len:
            self.asm = None
            done.append((tag, parts))
        else:
            self.asm = (tag, msg_len, parts, got)
        return True

    def ack_body(self) -> wire.Ack:
        """The receiver's frontier: cumulative ack and SACK blocks of chunks ahead of it."""
        sacks: list[tuple[int, int]] = []
        for s in sorted(self.ooo, key=lambda x: (x - self.rcv_next) & 0xFFFFFFFF):
            if sacks and sacks[-1][1] == s:
                sacks[-1] = (sacks[-1][0], (s + 1) & 0xFFFFFFFF)
            else:
                sacks.append((s, (s + 1) & 0xFFFFFFFF))
        return wire.Ack(self.rcv_next, sacks[:wire.MAX_SACK])

    # --------------------------------------------------------------- sending

    def acked_by(self, ack: wire.Ack, window: int) -> list[Chunk]:
        """Chunks newly acknowledged by `ack` (bounded by the window; stale acks do nothing)."""
        out: list[Chunk] = []
        adv = (ack.cum - self.peer_cum) & 0xFFFFFFFF
        if 0 < adv <= window + 1:
            for i in range(adv):
                c = self.unacked.pop((self.peer_cum + i) & 0xFFFFFFFF, None)
                if c is not None:
                    out.append(c)
            self.peer_cum = ack.cum
        for s, e in ack.sacks:
            n = (e - s) & 0xFFFFFFFF
            if n > window or ((s - self.peer_cum) & 0xFFFFFFFF) > window:
                continue
            for i in range(n):
                c = self.unacked.pop((s + i) & 0xFFFFFFFF, None)
                if c is not None:
                    out.append(c)
        return out
