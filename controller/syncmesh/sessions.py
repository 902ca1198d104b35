"""One peer session: a Session stream with an ordered send queue, read and written concurrently.

The same class runs both ends: the dialling side wraps its call, the
answering side its servicer context (both offer ``read()`` and ``write()``).
Each received message is handed to ``on_bytes`` and the loop is yielded to
before the next one is read, so a long resync is taken a chunk at a time
while timers and other sessions keep running. Sending never blocks the
caller: a message is queued, or, when the queue is full, the session is
closed (``overflowed``) so that the next one starts with a full resync
instead of silently missing what was dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

import grpc

from . import wire
from .messages import Message
from .tasks import cancel_and_wait, wait_at_most

WRITE_GRACE = 1.0
"""Seconds a closing session waits for the write in progress to finish."""


class Stream(Protocol):
    """What both a gRPC call and a servicer context offer for a stream."""

    async def read(self) -> Any: ...

    async def write(self, message: Any) -> None: ...


class PeerSession:
    """The messages exchanged with one peer over one stream."""

    def __init__(self, peer: str, stream: Stream, on_bytes: Callable[[PeerSession, bytes], None],
                 on_sent: Callable[[Message, int], None], queue_size: int):
        self.peer = peer
        self.stream = stream
        self._on_bytes = on_bytes
        self._on_sent = on_sent
        self._queue: asyncio.Queue[Message] = asyncio.Queue(queue_size)
        self._closed = asyncio.Event()
        self._writing: asyncio.Future[None] | None = None
        self.overflowed = False
        self.received = 0
        self.why: str = ""
        """Why the session ended."""

    def send(self, msg: Message) -> bool:
        """Queue ``msg``; False (and the session closes) when the queue is full."""
        if self._closed.is_set():
            return False
        try:
            self._queue.put_nowait(msg)
        except asyncio.QueueFull:
            self.overflowed = True
            self.close("send queue full")
            return False
        return True

    def close(self, why: str) -> None:
        """End the session (idempotent)."""
        if not self._closed.is_set():
            self.why = why
            self._closed.set()

    @property
    def closed(self) -> bool:
        """True once the session has ended or is ending."""
        return self._closed.is_set()

    async def run(self) -> None:
        """Read and write until the stream ends, either side fails, or ``close`` is called."""
        tasks = [asyncio.ensure_future(self._reader()), asyncio.ensure_future(self._writer()),
                 asyncio.ensure_future(self._closed.wait())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            # no wait here may swallow a cancellation of the caller (``tasks`` module): the
            # daemon stops by cancelling the task this runs in
            try:
                if self._writing is not None and not tasks[1].done():
                    # a gRPC write cancelled half-way can leave the call unable to end with
                    # a status: let the one in progress finish, WRITE_GRACE at most
                    await wait_at_most(self._writing, WRITE_GRACE)
                await cancel_and_wait(tasks)
            finally:
                for t in tasks:  # also when a cancellation cut the waits short
                    t.cancel()
                for t in tasks[:2]:  # why the stream ended, if a side failed
                    if t.done() and not t.cancelled() and t.exception() is not None:
                        self.close(_describe(t.exception()))
                self.close("stream ended")

    async def _reader(self) -> None:
        while True:
            data = await self.stream.read()
            if data is grpc.aio.EOF or data is None:
                self.close("peer closed the stream")
                return
            self.received += 1
            self._on_bytes(self, data)
            if self._closed.is_set():
                return
            await asyncio.sleep(0)  # let timers and the other sessions run between messages

    async def _writer(self) -> None:
        while not self._closed.is_set():
            msg = await self._queue.get()
            if self._closed.is_set():
                return
            data = wire.encode(msg)
            self._writing = asyncio.ensure_future(self.stream.write(data))
            try:
                await asyncio.shield(self._writing)
            finally:
                self._writing = None
            self._on_sent(msg, len(data))


def _describe(e: BaseException | None) -> str:
    if isinstance(e, grpc.aio.AioRpcError):
        return f"{e.code().name}: {e.details()}"
    return repr(e)
