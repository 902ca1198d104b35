"""Long-lived streams (P4Runtime StreamChannel, gNMI Subscribe): admission and the
outgoing queue of each one.

`Admission` bounds the streams open at once, in all and per peer host, so that the
threads they hold stay bounded (spec 5.3: RESOURCE_EXHAUSTED beyond the limit).

`Outbox` is one stream's outgoing side: PacketIn, DigestList and StreamError messages
are queued from any thread up to `max_messages` and `max_bytes`; beyond that they are
dropped and counted, so a client that never reads costs a bounded amount of memory
(gRPC's flow control then stalls only its own writer). Arbitration notices are never
dropped: they describe the current state, so a pending one is replaced by the newer
one. A fatal error ends the stream.
"""

from __future__ import annotations

import threading
from collections import deque

from finsy.proto import p4r

from softswitch.p4runtime.errors import P4RuntimeError

_CLOSED = object()


class Admission:
    """Counts open streams per peer host and in all; refuses those above the limits."""

    def __init__(self, total: int, per_host: int, what: str = "streams") -> None:
        self.total = total
        self.per_host = per_host
        self.what = what
        self._lock = threading.Lock()
        self._by_host: dict[str, int] = {}
        self.open = 0
        self.refused = 0

    def admit(self, host: str) -> str | None:
        """Count a new stream from `host`; the reason it is refused, or None."""
        with self._lock:
            if self.open >= self.total:
                self.refused += 1
                return f"{self.open} {self.what} are open, the limit of this switch (spec 5.3)"
            if self._by_host.get(host, 0) >= self.per_host:
                self.refused += 1
                return f"{self.per_host} {self.what} are open from {host}, the limit per peer"
            self.open += 1
            self._by_host[host] = self._by_host.get(host, 0) + 1
            return None

    def release(self, host: str) -> None:
        """Forget an admitted stream that ended."""
        with self._lock:
            self.open -= 1
            left = self._by_host[host] - 1
            if left:
                self._by_host[host] = left
            else:
                del self._by_host[host]


class Outbox:
    """Messages waiting to be written to one stream (thread-safe producers, one consumer)."""

    def __init__(self, max_messages: int, max_bytes: int) -> None:
        self._max_messages = max_messages
        self._max_bytes = max_bytes
        self._ready = threading.Condition(threading.Lock())
        self._queue: deque[tuple[p4r.StreamMessageResponse, int]] = deque()
        self._bytes = 0
        self._notice: p4r.StreamMessageResponse | None = None
        self._end: object | P4RuntimeError | None = None  # _CLOSED or a fatal error
        self.dropped: dict[str, int] = {}

    def put(self, msg: p4r.StreamMessageResponse, size: int) -> bool:
        """Queue a message of about `size` bytes; False (and counted) when the queue is full."""
        with self._ready:
            if self._end is not None:
                return False
            if len(self._queue) >= self._max_messages or self._bytes + size > self._max_bytes:
                kind = msg.WhichOneof("update") or "unknown"
                self.dropped[kind] = self.dropped.get(kind, 0) + 1
                return False
            self._queue.append((msg, size))
            self._bytes += size
            self._ready.notify()
        return True

    def put_notice(self, msg: p4r.StreamMessageResponse) -> None:
        """Queue an arbitration notice, replacing one not yet sent."""
        with self._ready:
            if self._end is None:
                self._notice = msg
                self._ready.notify()

    def close(self, error: P4RuntimeError | None = None) -> None:
        """End the stream after the queued messages (or at once with a fatal `error`)."""
        with self._ready:
            if self._end is None:
                self._end = error if error is not None else _CLOSED
                self._ready.notify()

    def get(self) -> p4r.StreamMessageResponse | P4RuntimeError | None:
        """The next message to write (waits for one); a P4RuntimeError to end the stream
        with; None at the end."""
        with self._ready:
            while True:
                if isinstance(self._end, P4RuntimeError):
                    return self._end
                if self._notice is not None:
                    msg, self._notice = self._notice, None
                    return msg
                if self._queue:
                    msg, size = self._queue.popleft()
                    self._bytes -= size
                    return msg
                if self._end is not None:
                    return None
                self._ready.wait()

    def dropped_total(self) -> int:
        """Messages dropped because the queue was full."""
        with self._ready:
            return sum(self.dropped.values())


def message_size(msg: p4r.StreamMessageResponse) -> int:
    """A cheap estimate of a queued message's memory, for the byte bound."""
    kind = msg.WhichOneof("update")
    if kind == "packet":
        return 64 + len(msg.packet.payload) + 16 * len(msg.packet.metadata)
    return 64 + msg.ByteSize()


class Stream:
    """One StreamChannel: its peer and outbox; the identity arbitration tracks."""

    __slots__ = ("peer", "host", "outbox")

    def __init__(self, peer: str, host: str, outbox: Outbox) -> None:
        self.peer = peer
        self.host = host
        self.outbox = outbox

    def __repr__(self) -> str:
        return f"<Stream {self.peer}>"


def peer_host(peer: str) -> str:
    """The address part of a gRPC peer string ('ipv4:127.0.0.1:5000' -> '127.0.0.1')."""
    kind, _, rest = peer.partition(":")
    if kind in ("ipv4", "ipv6"):
        return rest.rsplit(":", 1)[0].strip("[]")
    return peer  # unix sockets and others: the whole peer string
