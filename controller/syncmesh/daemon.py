"""The SyncMesh daemon: the I/O around ``SyncMeshCore`` (gRPC peers, switch, metrics, logs)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass

import grpc

from fabricmodel import Fabric

from . import wire
from .config import CoreConfig
from .core import Action, Event, PortStatusOut, Program, Rejected, Send, SyncMeshCore
from .driver import SwitchDriver
from .logs import SwitchLog
from .messages import FullState, Hello, LinkNotice, ProfileUpdate
from .metrics import MetricsServer, TransportStats, render
from .service import PeerChannel, TlsFiles, make_server, token_ok

_DECODERS = {
    "SayHello": wire.decode_hello,
    "Notify": wire.decode_notice,
    "UpdateProfile": wire.decode_profile_update,
    "Resync": wire.decode_full_state,
}
_METHOD_OF = {Hello: "SayHello", LinkNotice: "Notify", ProfileUpdate: "UpdateProfile",
              FullState: "Resync"}
_KIND = {"SayHello": "hello", "Notify": "notice", "UpdateProfile": "profile", "Resync": "resync"}
_WARN_EVENTS = {"peer_down", "path_down", "port_down", "unknown_port", "host_port_down"}


@dataclass(frozen=True)
class DaemonOptions:
    """How one daemon runs (the decision logic's own tunables are in ``CoreConfig``)."""

    token: str
    """Shared secret every peer presents in the call metadata."""
    listen: str | None = None
    """host:port to serve SyncMesh on; default: the switch's address in the fabric file."""
    metrics: str | None = None
    """host:port of the metrics endpoint (port 0: any free port); None: no endpoint."""
    tls: TlsFiles | None = None
    """Mutual TLS between peers (on top of the token) when set."""
    tick_interval: float = 0.05
    """How often the core's timers run."""
    counter_interval: float = 0.5
    """How often port counters are read from the switch."""
    send_queue: int = 1024
    """Messages queued per peer before new ones are dropped (a resync repairs the loss)."""
    rpc_timeout: float = 2.0
    switch_budget: float | None = None
    """Give up (``Daemon.failed``) when the switch stays unreachable this long (s); None: never."""


class Daemon:
    """One switch's SyncMesh daemon on an asyncio loop."""

    def __init__(self, fabric: Fabric, switch: str, options: DaemonOptions,
                 config: CoreConfig | None = None, driver: SwitchDriver | None = None,
                 clock: Callable[[], float] = time.time, incarnation: int | None = None,
                 port_source: Callable[[], AsyncIterator[dict[int, bool]]] | None = None):
        if not options.token:
            raise ValueError("a shared token is required")
        self.fabric = fabric
        self.options = options
        self.clock = clock
        self.driver = driver
        self.port_source = port_source
        """Where port carrier changes come from when not from the driver (e.g. netlink)."""
        self.core = SyncMeshCore(fabric, switch, incarnation or time.time_ns(), config,
                                 port_status_out=driver is not None)
        self.name = switch
        self.log = SwitchLog(switch)
        self.transport = TransportStats()
        self.listen = options.listen or fabric.switch(switch).syncmesh
        self._server: grpc.aio.Server | None = None
        self._metrics: MetricsServer | None = None
        self._channels: dict[str, PeerChannel] = {}
        self._queues: dict[str, asyncio.Queue] = {}
        self._unreachable: set[str] = set()
        self._tasks: list[asyncio.Task] = []
        self._switch_ops: asyncio.Queue = asyncio.Queue()
        self.metrics_port: int | None = None
        self.failed = asyncio.Event()
        """Set when the daemon cannot go on (``failure`` says why): the switch stayed away."""
        self.failure: str | None = None

    # -- lifecycle -----------------------------------------------------------

    async def start(self) -> None:
        """Serve, connect to peers and the switch, run the timers."""
        self._server = make_server(self._rpc, self.listen, self.options.tls)
        await self._server.start()
        if self.options.metrics:
            host, _, port = self.options.metrics.rpartition(":")
            self._metrics = MetricsServer(host, int(port), self.metrics_page)
            try:
                self.metrics_port = await self._metrics.start()
            except OSError as e:
                await self._server.stop(grace=None)
                raise OSError(f"cannot serve metrics on {self.options.metrics}: "
                              f"{e.strerror or e}") from None
        for peer in self.core.peer_names:
            self._channels[peer] = PeerChannel(self.fabric.switch(peer).syncmesh,
                                               self.options.token, self.options.tls,
                                               self.options.rpc_timeout)
            self._queues[peer] = asyncio.Queue(self.options.send_queue)
            self._spawn(self._sender(peer), f"send-{peer}")
        self.log.event("started", incarnation=self.core.incarnation, listen=self.listen,
                       metrics=self.metrics_port, peers=",".join(self.core.peer_names),
                       switch_driver=type(self.driver).__name__ if self.driver else "none")
        self._spawn(self._switch_writer(), "switch-writer")
        if self.driver is not None:
            self._spawn(self._switch_session(), "switch-session")
        if self.port_source is not None:
            self._spawn(self._watch_ports(), "port-watch")
        self.execute(self.core.start(self.clock()))
        self._spawn(self._ticker(), "ticker")

    async def stop(self) -> None:
        """Stop timers, server, channels and the switch session; the switch keeps its entries."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        if self._server is not None:
            await self._server.stop(grace=0.2)
        if self._metrics is not None:
            await self._metrics.stop()
        for ch in self._channels.values():
            await ch.close()
        self.log.event("stopped")

    def _spawn(self, coro, name: str) -> None:
        self._tasks.append(asyncio.get_running_loop().create_task(coro, name=f"{self.name}:{name}"))

    # -- local inputs (from the switch driver, or injected when there is none) --

    def port_status(self, changes: Mapping[int, bool]) -> None:
        """This switch's ports changed carrier state."""
        self.execute(self.core.on_port_status(changes, self.clock()))

    def counters(self, tx_bytes: Mapping[int, int]) -> None:
        """Cumulative transmitted bytes per port of this switch."""
        self.execute(self.core.on_counters(tx_bytes, self.clock()))

    def metrics_page(self) -> str:
        """The Prometheus text page."""
        return render(self.core, self.transport)

    # -- actions -------------------------------------------------------------

    def execute(self, actions: list[Action]) -> None:
        """Carry out the core's actions without blocking the caller."""
        for a in actions:
            if isinstance(a, Send):
                q = self._queues.get(a.peer)
                if q is None:
                    continue
                try:
                    q.put_nowait(a.message)
                except asyncio.QueueFull:
                    self.transport.dropped += 1
            elif isinstance(a, Program | PortStatusOut):
                self._switch_ops.put_nowait(a)
            elif isinstance(a, Event):
                level = logging.WARNING if a.name in _WARN_EVENTS else logging.INFO
                self.log.event(a.name, level, **dict(a.fields))

    async def _sender(self, peer: str) -> None:
        queue = self._queues[peer]
        channel = self._channels[peer]
        while True:
            msg = await queue.get()
            method = _METHOD_OF[type(msg)]
            payload = wire.encode(msg)
            try:
                reply = await channel.call(method, payload)
            except grpc.aio.AioRpcError as e:
                self.transport.send_errors[peer] += 1
                if peer not in self._unreachable or e.code() in (
                        grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.INVALID_ARGUMENT):
                    self.log.event("send_failed", logging.WARNING, peer=peer, method=method,
                                   code=e.code().name, detail=e.details())
                self._unreachable.add(peer)
                # the session is treated as down: what is queued would be stale, and the
                # full resync at the next contact carries everything anyway
                while not queue.empty():
                    queue.get_nowait()
                    self.transport.dropped += 1
                self.execute(self.core.on_send_failed(peer, self.clock()))
                continue
            if peer in self._unreachable:
                self._unreachable.discard(peer)
                self.log.event("peer_reachable", peer=peer)
            kind = _KIND[method]
            self.transport.sent[kind] += 1
            self.transport.sent_bytes[kind] += len(payload)
            self.transport.received_bytes[f"{kind}_reply"] += len(reply)
            try:
                if method == "SayHello":
                    r = wire.decode_hello_reply(reply)
                    self.execute(self.core.on_hello_reply(peer, r, self.clock()))
                elif method == "Resync":
                    r2 = wire.decode_full_state(reply)
                    self.execute(self.core.on_resync_reply(peer, r2, self.clock()))
            except (wire.Malformed, Rejected) as e:
                self.transport.rejected["invalid"] += 1
                self.log.event("reply_rejected", logging.WARNING, peer=peer, method=method,
                               reason=str(e))

    async def _switch_writer(self) -> None:
        while True:
            item = await self._switch_ops.get()
            if self.driver is None:
                continue  # no switch attached: the desired state is only kept in the core
            try:
                if isinstance(item, Program):
                    await self.driver.apply(item.ops)
                else:
                    await self.driver.send_port_status(item.port, item.up, item.seq)
            except Exception as e:  # the driver's own supervisor reconnects and reconciles
                self.log.event("switch_write_failed", logging.WARNING, error=repr(e))

    async def _switch_session(self) -> None:
        """Connect, reconcile, then follow counters and port events; back off on failure."""
        assert self.driver is not None
        delay = 0.5
        budget = self.options.switch_budget
        outage_since: float | None = time.monotonic()
        while True:
            try:
                async with self.driver.session():
                    await self.driver.reconcile(self.core.desired())
                    self.log.event("switch_connected")
                    delay = 0.5
                    outage_since = None
                    poll = asyncio.get_running_loop().create_task(self._poll_counters())
                    try:
                        async for changes in self.driver.port_events():
                            self.port_status(changes)
                    finally:
                        poll.cancel()
            except asyncio.CancelledError:
                raise
            except Exception as e:
                if outage_since is None:
                    outage_since = time.monotonic()
                if budget is not None and time.monotonic() - outage_since >= budget:
                    self.failure = (f"switch unreachable for {budget:g} s, giving up "
                                    f"(last error: {e})")
                    self.log.event("switch_gave_up", logging.ERROR, error=repr(e))
                    self.failed.set()
                    return
                self.log.event("switch_lost", logging.WARNING, error=repr(e), retry_in=delay)
            pause = delay
            if outage_since is not None and budget is not None:
                # the last attempt falls on the end of the budget, not a back-off step after it
                pause = min(delay, max(0.0, budget - (time.monotonic() - outage_since)))
            await asyncio.sleep(pause)
            delay = min(delay * 2, 10.0)

    async def _watch_ports(self) -> None:
        """Follow an external port-state source; restart it with back-off if it fails."""
        assert self.port_source is not None
        delay = 0.5
        while True:
            try:
                async for changes in self.port_source():
                    self.port_status(changes)
                    delay = 0.5
            except asyncio.CancelledError:
                raise
            except Exception as e:
                self.log.event("port_watch_failed", logging.WARNING, error=repr(e),
                               retry_in=delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 10.0)

    async def _poll_counters(self) -> None:
        assert self.driver is not None
        while True:
            self.counters(await self.driver.read_tx_bytes())
            await asyncio.sleep(self.options.counter_interval)

    async def _ticker(self) -> None:
        while True:
            await asyncio.sleep(self.options.tick_interval)
            self.execute(self.core.tick(self.clock()))

    # -- incoming RPCs ---------------------------------------------------------

    async def _rpc(self, method: str, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        kind = _KIND[method]
        if not token_ok(context, self.options.token):
            self.transport.rejected["unauthenticated"] += 1
            self.log.event("rejected", logging.WARNING, reason="unauthenticated", method=method,
                           client=context.peer())
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong token")
        try:
            msg = _DECODERS[method](request)
        except wire.Malformed as e:
            self.transport.rejected["malformed"] += 1
            self.log.event("rejected", logging.WARNING, reason="malformed", method=method,
                           client=context.peer(), detail=str(e))
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"malformed: {e}")
        now = self.clock()
        try:
            if isinstance(msg, Hello):
                reply, actions = self.core.on_hello(msg, now)
                out = wire.encode(reply)
            elif isinstance(msg, LinkNotice):
                changed, actions = self.core.on_notice(msg, now)
                out = wire.encode_ack(changed)
            elif isinstance(msg, ProfileUpdate):
                changed, actions = self.core.on_profile(msg, now)
                out = wire.encode_ack(changed)
            else:
                assert isinstance(msg, FullState)  # the one decoder left: Resync
                state, actions = self.core.on_resync(msg, now)
                out = wire.encode(state)
        except Rejected as e:
            self.transport.rejected["invalid"] += 1
            self.log.event("rejected", logging.WARNING, reason="invalid", method=method,
                           client=context.peer(), detail=str(e))
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        self.transport.received[kind] += 1
        self.transport.received_bytes[kind] += len(request)
        self.transport.sent_bytes[f"{kind}_reply"] += len(out)
        self.execute(actions)
        return out

