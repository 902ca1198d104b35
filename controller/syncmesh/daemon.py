"""The SyncMesh daemon: the I/O around ``SyncMeshCore`` (peer sessions, switch, metrics, logs)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from fabricmodel import Fabric, Role

from . import wire
from .admission import Rejected
from .config import CoreConfig
from .core import Action, Disconnect, Event, PortStatusOut, Program, Send, SyncMeshCore
from .driver import SwitchDriver
from .incarnation import IncarnationFile, from_clock
from .logs import SwitchLog
from .messages import Hello, LinkNotice, Message, ProfileUpdate, ResyncChunk
from .metrics import MetricsServer, SwitchSnapshot, TransportStats, render
from .service import Credentials, Insecure, PeerChannel, Refused, make_server, peer_name
from .sessions import PeerSession
from .switchops import RemoteCongestion, SwitchOp
from .tasks import cancel_and_wait

_KIND = {Hello: "hello", LinkNotice: "notice", ProfileUpdate: "profile", ResyncChunk: "resync"}
STOP_GRACE = 1.5
"""Seconds ``Daemon.stop`` waits for its tasks to end once cancelled."""
SLOW_WRITE = 0.25
"""A switch write that takes longer than this (s) gets a log line (``switch_write_slow``)."""
_WARN_EVENTS = {"peer_down", "path_down", "port_down", "unknown_port", "host_port_down",
                "stalled", "profile_gap"}


@dataclass(frozen=True)
class DaemonOptions:
    """How one daemon runs (the decision logic's own tunables are in ``CoreConfig``)."""

    credentials: Credentials
    """Mutual TLS files (``certs.TlsFiles``), or ``service.Insecure`` (plaintext, token)."""
    listen: str | None = None
    """host:port to serve SyncMesh on; default: the switch's address in the fabric file."""
    metrics: str | None = None
    """host:port of the metrics endpoint (port 0: any free port); None: no endpoint."""
    state_file: Path | None = None
    """Where the last incarnation is kept (a restart is always newer); None: the clock alone."""
    tick_interval: float = 0.02
    """How often the core's timers run."""
    counter_interval: float = 0.01
    """How often a spine reads its port counters (its profile follows them)."""
    leaf_counter_interval: float = 0.25
    """How often a leaf reads its port counters (only its metrics use them)."""
    send_queue: int = 1024
    """Messages queued per peer; a full queue ends the session (the next one resyncs)."""
    switch_budget: float | None = None
    """Give up (``Daemon.failed``) when the switch stays unreachable this long (s); None: never."""


class Daemon:
    """One switch's SyncMesh daemon on an asyncio loop."""

    def __init__(self, fabric: Fabric, switch: str, options: DaemonOptions,
                 config: CoreConfig | None = None, driver: SwitchDriver | None = None,
                 clock: Callable[[], float] = time.time, incarnation: int | None = None,
                 port_source: Callable[[], AsyncIterator[dict[int, bool]]] | None = None):
        if isinstance(options.credentials, Insecure) and not options.credentials.token:
            raise ValueError("an insecure daemon needs the shared token")
        self.fabric = fabric
        self.options = options
        self.clock = clock
        self.driver = driver
        self.port_source = port_source
        """Where port carrier changes come from when not from the driver (e.g. netlink)."""
        if incarnation is None:
            incarnation = (IncarnationFile(options.state_file).next(clock())
                           if options.state_file else from_clock(clock()))
        self.core = SyncMeshCore(fabric, switch, incarnation, config,
                                 port_status_out=driver is not None)
        self.name = switch
        self.log = SwitchLog(switch)
        self.transport = TransportStats()
        self.listen = options.listen or fabric.switch(switch).syncmesh
        self.limits = wire.limits_for(fabric)
        self.max_message = wire.max_message_bytes(fabric)
        self._keepalive_ms = max(200, int(self.core.config.keepalive_interval * 1000))
        self._server: grpc.aio.Server | None = None
        self._metrics: MetricsServer | None = None
        self._channels: dict[str, PeerChannel] = {}
        self._sessions: dict[str, PeerSession] = {}
        self._tasks: list[asyncio.Task[Any]] = []
        self._switch_ops: asyncio.Queue[Program] = asyncio.Queue()
        # port-status packets have their own queue and task: the data plane's failover waits
        # for them, so they never queue behind table writes the same change caused
        self._port_status: asyncio.Queue[tuple[PortStatusOut, float]] = asyncio.Queue()
        self._logged_rejections: set[str] = set()
        self.remote_written: dict[tuple[int, int], tuple[int, float]] = {}
        """(dst leaf, path) -> (level, when the switch write holding it completed)."""
        self.congested_since: dict[tuple[int, int], float] = {}
        """(dst leaf, path) written with a level in the top two, since when."""
        self.switch_writes = 0
        self.switch_ready = False
        """True once the switch session is up and reconciled with the desired state."""
        self.metrics_port: int | None = None
        self.failed = asyncio.Event()
        """Set when the daemon cannot go on (``failure`` says why): the switch stayed away."""
        self.failure: str | None = None

    # -- lifecycle -----------------------------------------------------------

    async def start(self) -> None:
        """Serve, dial the peers this switch dials, connect to the switch, run the timers."""
        creds = self.options.credentials
        if isinstance(creds, Insecure):
            self.log.event("insecure", logging.WARNING,
                           detail="plaintext SyncMesh: the token travels in clear and peers' "
                                  "names are claimed, not proven")
        self._server = make_server(self._serve, self.listen, creds, self.max_message,
                                   self._keepalive_ms)
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
        self.log.event("started", incarnation=self.core.incarnation, listen=self.listen,
                       metrics=self.metrics_port, peers=",".join(self.core.peer_names),
                       tls=not isinstance(creds, Insecure), max_message=self.max_message,
                       switch_driver=type(self.driver).__name__ if self.driver else "none")
        self._spawn(self._switch_writer(), "switch-writer")
        self._spawn(self._port_status_sender(), "port-status")
        if self.driver is not None:
            self._spawn(self._switch_session(), "switch-session")
        if self.port_source is not None:
            self._spawn(self._watch_ports(), "port-watch")
        self.execute(self.core.start(self.clock()))
        self._spawn(self._ticker(), "ticker")
        for peer in self.core.peer_names:
            if self._dials(peer):
                self._channels[peer] = PeerChannel(self.fabric.switch(peer).syncmesh, peer, creds,
                                                   self.max_message, self._keepalive_ms)
                self._spawn(self._dial(peer), f"dial-{peer}")

    async def stop(self) -> None:
        """Stop timers, sessions, server and the switch session; the switch keeps its entries."""
        for session in list(self._sessions.values()):
            session.close("daemon stopping")
        # every task's own clean-up is bounded (a session's write: WRITE_GRACE); one still
        # running after STOP_GRACE is a bug, named in the log rather than waited for
        stuck = await cancel_and_wait(self._tasks, STOP_GRACE)
        if stuck:
            self.log.event("stop_incomplete", logging.ERROR,
                           tasks=",".join(sorted(t.get_name() for t in stuck
                                                 if isinstance(t, asyncio.Task))))
        self._tasks.clear()
        if self._server is not None:
            await self._server.stop(grace=0.2)
        if self._metrics is not None:
            await self._metrics.stop()
        for ch in self._channels.values():
            await ch.close()
        self.log.event("stopped")

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        self._tasks.append(asyncio.get_running_loop().create_task(coro, name=f"{self.name}:{name}"))

    def _dials(self, peer: str) -> bool:
        """One stream per pair: the leaf opens it to the spine."""
        return self.core.is_leaf and self.fabric.switch(peer).role is Role.SPINE

    # -- local inputs (from the switch driver, or injected when there is none) --

    def port_status(self, changes: Mapping[int, bool]) -> None:
        """This switch's ports changed carrier state."""
        self.execute(self.core.on_port_status(changes, self.clock()))

    def counters(self, tx_bytes: Mapping[int, int]) -> None:
        """Cumulative transmitted bytes per port of this switch."""
        self.execute(self.core.on_counters(tx_bytes, self.clock()))

    def metrics_page(self) -> str:
        """The Prometheus text page."""
        return render(self.core, self.transport, SwitchSnapshot(
            self.switch_ready, self.switch_writes, dict(self.remote_written),
            dict(self.congested_since)))

    # -- actions -------------------------------------------------------------

    def execute(self, actions: list[Action]) -> None:
        """Carry out the core's actions without blocking the caller."""
        for a in actions:
            if isinstance(a, Send):
                session = self._sessions.get(a.peer)
                if session is not None and not session.closed and not session.send(a.message):
                    self.transport.dropped += 1
                    self.log.event("send_queue_full", logging.WARNING, peer=a.peer)
            elif isinstance(a, Disconnect):
                session = self._sessions.get(a.peer)
                if session is not None:
                    session.close("peer silent")
            elif isinstance(a, PortStatusOut):
                self._port_status.put_nowait((a, time.monotonic()))
            elif isinstance(a, Program):
                self._switch_ops.put_nowait(a)
            elif isinstance(a, Event):
                level = logging.WARNING if a.name in _WARN_EVENTS else logging.INFO
                self.log.event(a.name, level, **dict(a.fields))

    # -- peer sessions ---------------------------------------------------------

    async def _dial(self, peer: str) -> None:
        """Keep a session open to ``peer``; back off while it cannot be reached."""
        channel = self._channels[peer]
        delay = 0.1
        while True:
            call = channel.session()
            opened = time.monotonic()
            session = PeerSession(peer, call, self._on_bytes, self._on_sent,
                                  self.options.send_queue)
            try:
                # the session counts from when the peer answers (its Hello comes first), so
                # a stream still waiting for an unreachable peer never displaces a live one
                await call.wait_for_connection()
                await self._run_session(session)
            except grpc.aio.AioRpcError as e:
                session.close(f"{e.code().name}: {e.details()}")
            finally:
                call.cancel()
            if session.received:
                delay = 0.1
            if time.monotonic() - opened < delay:
                await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def _serve(self, request_iterator: Any, context: grpc.aio.ServicerContext) -> None:
        """A peer opened a Session stream to us: who it is decides everything, before any read."""
        try:
            peer = peer_name(context, self.options.credentials)
        except Refused as e:
            self._reject(f"client {context.peer()}", "unauthenticated", str(e))
            await context.abort(e.code, str(e))
        if peer not in self.core.peers.peers:
            detail = f"{peer!r} is not a SyncMesh peer of {self.name!r}"
            self._reject(peer, "not_a_peer", detail)
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, detail)
        session = PeerSession(peer, context, self._on_bytes, self._on_sent,
                              self.options.send_queue)
        await self._run_session(session)
        if session.why.startswith("first message"):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, session.why)

    async def _run_session(self, session: PeerSession) -> None:
        peer = session.peer
        old = self._sessions.get(peer)
        if old is not None:  # a new stream replaces the old one: what was in flight is lost
            old.close("replaced by a new session")
            self.execute(self.core.on_peer_lost(peer, self.clock()))
        self._sessions[peer] = session
        self.transport.sessions[peer] += 1
        try:
            self.execute(self.core.on_session_open(peer, self.clock()))
            await session.run()
        finally:
            if self._sessions.get(peer) is session:
                del self._sessions[peer]
                self.execute(self.core.on_peer_lost(peer, self.clock()))
            self.log.event("session_closed", peer=peer, why=session.why)

    def _on_bytes(self, session: PeerSession, data: bytes) -> None:
        peer = session.peer
        try:
            msg = wire.decode(data, peer, self.limits)
        except wire.Malformed as e:
            self._reject(peer, "malformed", str(e))
            return
        if session.received == 1 and not isinstance(msg, Hello):
            self._reject(peer, "no_session", f"first message is a {_KIND[type(msg)]}, "
                                             "not a Hello")
            session.close("first message was not a Hello")
            return
        kind = _KIND[type(msg)]
        try:
            actions = self.core.on_message(peer, msg, self.clock())
        except Rejected as e:
            self._reject(peer, e.reason, str(e), kind)
            return
        self.transport.received[kind] += 1
        self.transport.received_bytes[kind] += len(data)
        self.execute(actions)

    def _on_sent(self, msg: Message, size: int) -> None:
        kind = _KIND[type(msg)]
        self.transport.sent[kind] += 1
        self.transport.sent_bytes[kind] += size

    def _reject(self, who: str, reason: str, detail: str, kind: str = "") -> None:
        """Count a refused stream or message; log the first one of each peer."""
        self.transport.rejected[reason] += 1
        self.transport.rejected_by_peer[who, reason] += 1
        level = logging.DEBUG if who in self._logged_rejections else logging.WARNING
        self._logged_rejections.add(who)
        self.log.event("rejected", level, peer=who, reason=reason, message=kind or None,
                       detail=detail, note="first from this peer; later ones are counted in "
                                           "syncmesh_rejected_total" if level > 10 else None)

    # -- the switch ------------------------------------------------------------

    async def _switch_writer(self) -> None:
        while True:
            items = [await self._switch_ops.get()]
            while not self._switch_ops.empty():  # what piled up goes in one write
                items.append(self._switch_ops.get_nowait())
            ops: dict[tuple, SwitchOp] = {}
            for item in items:
                ops.update((op.key, op) for op in item.ops)
            if not ops:
                continue
            if self.driver is not None:
                began = time.monotonic()
                try:
                    await self.driver.apply(list(ops.values()))
                except Exception as e:  # the driver's own supervisor reconnects and reconciles
                    self.log.event("switch_write_failed", logging.WARNING, error=repr(e))
                    continue
                took = time.monotonic() - began
                self.switch_writes += 1
                if took > SLOW_WRITE:
                    self.log.event("switch_write_slow", logging.WARNING, seconds=round(took, 4),
                                   ops=len(ops), batched=len(items))
            now = self.clock()
            high = self.core.config.max_level - 1
            for op in ops.values():
                if isinstance(op, RemoteCongestion):
                    key = (op.dst_leaf, op.index)
                    self.remote_written[key] = (op.level, now)
                    if op.level < high:
                        self.congested_since.pop(key, None)
                    else:
                        self.congested_since.setdefault(key, now)

    async def _port_status_sender(self) -> None:
        """Port-status packets as soon as they are asked for, in order, each logged with how
        long it waited and how long the switch took to take it (where a failover's time goes)."""
        while True:
            out, queued = await self._port_status.get()
            if self.driver is None:
                continue
            began = time.monotonic()
            try:
                sent = await self.driver.send_port_status(out.port, out.up, out.seq)
            except Exception as e:  # the next session sends every port's last again
                away = bool(getattr(e, "is_disconnected", False))  # e.g. still starting
                self.log.event("port_status_deferred" if away else "port_status_failed",
                               logging.INFO if away else logging.WARNING, port=out.port,
                               up=out.up, seq=out.seq, error=repr(e))
                continue
            if not sent:
                continue  # the switch injects its own
            done = time.monotonic()
            self.log.event("port_status_sent", port=out.port, up=out.up, seq=out.seq,
                           waited_ms=round((began - queued) * 1000, 2),
                           send_ms=round((done - began) * 1000, 2))

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
                    self.switch_ready = True
                    self.log.event("switch_connected")
                    # what was sent while the switch was away is lost (on BMv2 the program's
                    # port liveness comes from these packets only): each port's last, again
                    self.execute(self.core.port_status_again(self.clock()))
                    delay = 0.5
                    outage_since = None
                    poll = asyncio.get_running_loop().create_task(self._poll_counters())
                    try:
                        async for changes in self.driver.port_events():
                            self.port_status(changes)
                    finally:
                        self.switch_ready = False
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
        """Read counters on a fixed period (a slow read delays the next, never piles up)."""
        assert self.driver is not None
        period = (self.options.leaf_counter_interval if self.core.is_leaf
                  else self.options.counter_interval)
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while True:
            self.counters(await self.driver.read_tx_bytes())
            next_at = max(next_at + period, loop.time())
            await asyncio.sleep(next_at - loop.time())

    async def _ticker(self) -> None:
        while True:
            await asyncio.sleep(self.options.tick_interval)
            self.execute(self.core.tick(self.clock()))
