"""gRPC P4Runtime service (p4.v1.P4Runtime) over a `Device`, on an asyncio gRPC server.

Every RPC is a coroutine on one event loop, so an open StreamChannel holds no thread
and idle or slow clients can never starve the unary calls of the others. Work that
may take long (compiling a config, a Read, a large Write batch) runs in a small thread
pool; a small Write runs on the loop itself when no other batch holds the device.

Per-request checks follow the spec: the device ID must be this device's (NOT_FOUND),
the role must be one of the device's roles (only the default role is served, spec
5.1-5.2: NOT_FOUND for Write/Read/SetForwardingPipelineConfig, UNIMPLEMENTED on the
stream), Write and SetForwardingPipelineConfig need the primary's election ID
(PERMISSION_DENIED), and a Write batch with failures ends with UNKNOWN plus one
p4.v1.Error per update (spec 12.3; batch.py for batches whose report cannot fit).
Streams are limited per peer host and in all (spec 5.3: RESOURCE_EXHAUSTED), and
each has a bounded outgoing queue whose drops are counted (`P4RuntimeService.stats`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator
from concurrent import futures
from dataclasses import dataclass

import grpc
from finsy.proto import gnmi_grpc, p4r, p4r_grpc, rpc_status

from softswitch.p4runtime.arbitration import Arbitration, Notice
from softswitch.p4runtime.batch import error_report
from softswitch.p4runtime.device import Device
from softswitch.p4runtime.errors import P4RuntimeError, code_number
from softswitch.p4runtime.gnmi import GnmiService
from softswitch.p4runtime.streams import Outbox, Stream, message_size, peer_host

log = logging.getLogger("softswitch.p4runtime")

API_VERSION = "1.5.0"
_READ_CHUNK = 4096
_MESSAGE_CAP = 600  # characters of a status message (grpc-message shares the metadata limit)


@dataclass(frozen=True)
class ServerLimits:
    """Bounds of the P4Runtime server (docs/softswitch-p4runtime.md)."""

    rpcs: int = 1024
    """RPCs in progress at once (streams included); gRPC refuses more with RESOURCE_EXHAUSTED."""
    streams: int = 256
    """Open StreamChannels in all; more are refused with RESOURCE_EXHAUSTED (spec 5.3)."""
    streams_per_host: int = 128
    """Open StreamChannels from one peer address."""
    queued_messages: int = 1024
    """PacketIn / DigestList / StreamError messages waiting to be sent on one stream."""
    queued_bytes: int = 8 << 20
    """Bytes of those messages on one stream."""
    workers: int = 4
    """Threads for compiling configs, Reads and large Write batches."""
    inline_updates: int = 256
    """Write batches up to this size run on the event loop when the device is free."""


def _election_id(msg) -> int | None:
    if not msg.HasField("election_id"):
        return None
    return (msg.election_id.high << 64) | msg.election_id.low


def _uint128(value: int) -> p4r.Uint128:
    return p4r.Uint128(high=value >> 64, low=value & ((1 << 64) - 1))


def _cap(text: str) -> str:
    return text if len(text) <= _MESSAGE_CAP else text[:_MESSAGE_CAP - 3] + "..."


class P4RuntimeService(p4r_grpc.P4RuntimeServicer):
    """The P4Runtime service of one device; its methods run on the server's event loop."""

    def __init__(self, device: Device, name: str, loop: asyncio.AbstractEventLoop,
                 pool: futures.Executor, limits: ServerLimits) -> None:
        self.device = device
        self.name = name
        self.limits = limits
        self._loop = loop
        self._pool = pool
        self.arbitration = Arbitration()  # touched on the event loop only
        self._primaries: tuple[Stream, ...] = ()  # snapshot read by the packet threads
        self._primary_id: int | None = None
        self._open_by_host: dict[str, int] = {}
        self._open = 0
        self._stats_lock = threading.Lock()
        self._stats = {"streams_refused": 0, "packet_in_dropped": 0, "digest_dropped": 0,
                       "stream_error_dropped": 0}
        device.on_packet_in = self._deliver_to_primaries
        device.on_digest_list = self._deliver_to_primaries

    def stats(self) -> dict[str, int]:
        """Counters: open streams, refused streams, messages dropped on full stream queues."""
        with self._stats_lock:
            out = dict(self._stats)
        out["streams_open"] = self._open
        return out

    def _count(self, key: str) -> int:
        with self._stats_lock:
            self._stats[key] += 1
            return self._stats[key]

    # ---- checks ----------------------------------------------------------------------

    def _check_device(self, device_id: int) -> None:
        if device_id != self.device.device_id:
            raise P4RuntimeError(
                grpc.StatusCode.NOT_FOUND,
                f"unknown device id {device_id} (this switch is device {self.device.device_id})",
            )

    @staticmethod
    def _check_role(role: str) -> None:
        """Spec 12 / 13 / 14: a role that is not one of the device's is NOT_FOUND."""
        if role:
            raise P4RuntimeError(
                grpc.StatusCode.NOT_FOUND,
                f"role {role!r} is not a role of this device: softswitch serves only the "
                "default role (empty name, full pipeline access)",
            )

    def _check_primary(self, election_id: int | None) -> None:
        if election_id is None:
            raise P4RuntimeError(
                grpc.StatusCode.PERMISSION_DENIED, "request has no election id; only the primary may write"
            )
        if election_id != self._primary_id:  # kept current by _refresh_primaries
            primary = self.arbitration.primary("")
            raise P4RuntimeError(
                grpc.StatusCode.PERMISSION_DENIED,
                f"election id {election_id} is not the primary's"
                + (f" (primary is {primary[1]})" if primary else " (no primary connected)"),
            )

    async def _device_call(self, fn, *args, inline: bool = False):
        """Run device work: on the loop if small and the device is free, else in the pool."""
        if inline and self.device.control.acquire(blocking=False):
            try:
                return fn(*args)
            finally:
                self.device.control.release()
        return await self._loop.run_in_executor(self._pool, fn, *args)

    async def _internal(self, context, rpc: str, exc: Exception) -> None:
        log.error("switch=%s rpc=%s failed_internally", self.name, rpc, exc_info=exc)
        await context.abort(grpc.StatusCode.INTERNAL, _cap(f"internal error: {exc}"))

    # ---- unary RPCs ------------------------------------------------------------------

    async def Capabilities(self, request, context):
        """Capabilities (spec 17)."""
        return p4r.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    async def Write(self, request, context):
        """Write (spec 12); CONTINUE_ON_ERROR is the only atomicity served, as on BMv2."""
        try:
            self._check_device(request.device_id)
            self._check_role(request.role)
            self._check_primary(_election_id(request))
            if request.atomicity != p4r.WriteRequest.CONTINUE_ON_ERROR:
                raise P4RuntimeError(
                    grpc.StatusCode.UNIMPLEMENTED,
                    "only CONTINUE_ON_ERROR atomicity is supported",
                )
            updates = request.updates
            outcome = await self._device_call(self.device.write, updates,
                                              inline=len(updates) <= self.limits.inline_updates)
        except P4RuntimeError as exc:
            await context.abort(exc.code, _cap(exc.message))
        except Exception as exc:  # a server bug: reported, never a crash
            await self._internal(context, "Write", exc)
        if outcome.aborted is not None:
            log.warning("switch=%s rpc=Write updates=%d aborted=%r", self.name, len(updates),
                        outcome.aborted.message[:200])
            await context.abort(outcome.aborted.code, _cap(outcome.aborted.message))
        failures = outcome.failures
        if failures:
            log.info("switch=%s rpc=Write updates=%d failed=%d first_error=%r",
                     self.name, len(updates), len(failures), str(failures[0]))
            await context.abort(
                grpc.StatusCode.UNKNOWN,
                _cap(f"{len(failures)} of {len(updates)} updates failed; first: {failures[0]}"),
                trailing_metadata=(("grpc-status-details-bin", error_report(outcome.results)),),
            )
        return p4r.WriteResponse()

    async def Read(self, request, context) -> AsyncIterator[p4r.ReadResponse]:
        """Read (spec 13) with wildcards."""
        try:
            self._check_device(request.device_id)
            self._check_role(request.role)
            entities = await self._device_call(self.device.read, request.entities)
        except P4RuntimeError as exc:
            await context.abort(exc.code, _cap(exc.message))
        except Exception as exc:
            await self._internal(context, "Read", exc)
        for i in range(0, max(len(entities), 1), _READ_CHUNK):  # stay below message size limits
            yield p4r.ReadResponse(entities=entities[i:i + _READ_CHUNK])

    async def SetForwardingPipelineConfig(self, request, context):
        """SetForwardingPipelineConfig (spec 14): compiled in the pool, outside every lock."""
        try:
            self._check_device(request.device_id)
            self._check_role(request.role)
            self._check_primary(_election_id(request))
            await self._device_call(self.device.set_pipeline, request.action, request.config)
        except P4RuntimeError as exc:
            log.info("switch=%s rpc=SetForwardingPipelineConfig error=%r", self.name, str(exc))
            await context.abort(exc.code, _cap(exc.message))
        except Exception as exc:
            await self._internal(context, "SetForwardingPipelineConfig", exc)
        log.info("switch=%s rpc=SetForwardingPipelineConfig action=%s", self.name,
                 p4r.SetForwardingPipelineConfigRequest.Action.Name(request.action))
        return p4r.SetForwardingPipelineConfigResponse()

    async def GetForwardingPipelineConfig(self, request, context):
        """GetForwardingPipelineConfig (spec 15) for every response type."""
        R = p4r.GetForwardingPipelineConfigRequest
        try:
            self._check_device(request.device_id)
            p = self.device.require_pipeline()
        except P4RuntimeError as exc:
            await context.abort(exc.code, _cap(exc.message))
        cfg = p4r.ForwardingPipelineConfig()
        if p.cookie is not None:
            cfg.cookie.cookie = p.cookie
        rt = request.response_type
        if rt in (R.ALL, R.P4INFO_AND_COOKIE):
            cfg.p4info.CopyFrom(p.p4info)
        if rt in (R.ALL, R.DEVICE_CONFIG_AND_COOKIE):
            cfg.p4_device_config = p.device_config
        return p4r.GetForwardingPipelineConfigResponse(config=cfg)

    # ---- stream ----------------------------------------------------------------------

    async def StreamChannel(self, request_iterator, context):
        """StreamChannel (spec 5 and 16): arbitration, PacketOut/PacketIn, digests."""
        peer = context.peer()
        host = peer_host(peer)
        refusal = self._admit(host)
        if refusal is not None:
            self._count("streams_refused")
            log.warning("switch=%s stream_refused peer=%s reason=%r", self.name, peer, refusal)
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, refusal)
        stream = Stream(peer, host, Outbox(self._loop, self.limits.queued_messages,
                                           self.limits.queued_bytes))
        reader = asyncio.ensure_future(self._read_stream(stream, request_iterator))
        try:
            while True:
                item = await stream.outbox.get()
                if item is None:
                    break
                if isinstance(item, P4RuntimeError):
                    await context.abort(item.code, _cap(item.message))
                await context.write(item)
        finally:
            reader.cancel()
            self._open -= 1
            self._open_by_host[host] -= 1
            if not self._open_by_host[host]:
                del self._open_by_host[host]
            notices = self.arbitration.remove(stream)
            self._refresh_primaries()
            self._deliver_notices(notices)
            log.info("switch=%s stream_closed peer=%s dropped=%s", self.name, peer,
                     stream.outbox.dropped or 0)

    def _admit(self, host: str) -> str | None:
        lim = self.limits
        if self._open >= lim.streams:
            return f"{self._open} streams are open, the limit of this switch (spec 5.3)"
        if self._open_by_host.get(host, 0) >= lim.streams_per_host:
            return f"{lim.streams_per_host} streams are open from {host}, the limit per peer"
        self._open += 1
        self._open_by_host[host] = self._open_by_host.get(host, 0) + 1
        return None

    async def _read_stream(self, stream: Stream, requests) -> None:
        try:
            async for req in requests:
                kind = req.WhichOneof("update")
                try:
                    if kind == "arbitration":
                        self._on_arbitration(stream, req.arbitration)
                    elif kind == "packet":
                        await self._on_packet_out(stream, req.packet)
                    elif kind == "digest_ack":
                        await self._on_digest_ack(stream, req.digest_ack)
                    else:
                        raise P4RuntimeError(
                            grpc.StatusCode.UNIMPLEMENTED, f"stream message {kind} is not supported"
                        )
                except P4RuntimeError as exc:
                    if kind == "arbitration":
                        stream.outbox.close(exc)  # fatal for the stream (spec 5.3)
                        return
                    err = self._stream_error(exc, kind, req)
                    if not stream.outbox.put(err, message_size(err)):
                        self._count("stream_error_dropped")
        except asyncio.CancelledError:
            raise
        except (grpc.RpcError, grpc.aio.AioRpcError):
            pass
        except Exception:  # a broken client must not take the server down
            log.exception("switch=%s stream_reader_failed peer=%s", self.name, stream.peer)
        finally:
            stream.outbox.close()

    @staticmethod
    def _stream_error(exc: P4RuntimeError, kind: str, req) -> p4r.StreamMessageResponse:
        err = p4r.StreamError(canonical_code=code_number(exc.code), message=exc.message)
        if kind == "packet":
            err.packet_out.packet_out.CopyFrom(req.packet)
        elif kind == "digest_ack":
            err.digest_list_ack.digest_list_ack.CopyFrom(req.digest_ack)
        return p4r.StreamMessageResponse(error=err)

    def _on_arbitration(self, stream: Stream, upd: p4r.MasterArbitrationUpdate) -> None:
        """MasterArbitrationUpdate (spec 5.3); only the default role is served (5.1, 5.2)."""
        self._check_device(upd.device_id)
        if upd.role.name:
            raise P4RuntimeError(
                grpc.StatusCode.UNIMPLEMENTED,
                f"role {upd.role.name!r}: softswitch serves only the default role (empty name, "
                "full pipeline access); connect without a role",
            )
        if upd.role.HasField("config"):
            raise P4RuntimeError(
                grpc.StatusCode.INVALID_ARGUMENT,
                "role.config is set, but this switch has no role configuration scheme (spec 5.2); "
                "leave it unset for full pipeline access",
            )
        notices = self.arbitration.update(stream, "", _election_id(upd))
        self._refresh_primaries()
        log.info("switch=%s arbitration peer=%s election_id=%s", self.name, stream.peer,
                 _election_id(upd))
        self._deliver_notices(notices)

    def _refresh_primaries(self) -> None:
        """Snapshots of the primary after an arbitration change: its stream(s) for the
        packet threads, its election id for the Write path (O(1) per request)."""
        self._primaries = tuple(s for s in self.arbitration.streams()
                                if self.arbitration.is_primary_stream(s))
        primary = self.arbitration.primary("")
        self._primary_id = primary[1] if primary is not None else None

    def _deliver_notices(self, notices: list[Notice]) -> None:
        for n in notices:
            upd = p4r.MasterArbitrationUpdate(device_id=self.device.device_id)
            if n.role:
                upd.role.name = n.role
            if n.election_id is not None:
                upd.election_id.CopyFrom(_uint128(n.election_id))
            upd.status.CopyFrom(rpc_status.Status(code=code_number(n.code), message=n.message))
            n.stream.outbox.put_notice(p4r.StreamMessageResponse(arbitration=upd))

    def _deliver_to_primaries(self, msg) -> None:
        """PacketIn / DigestList to the primary (called from packet and timer threads)."""
        field, counter = (("packet", "packet_in_dropped") if isinstance(msg, p4r.PacketIn)
                          else ("digest", "digest_dropped"))
        for s in self._primaries:
            out = p4r.StreamMessageResponse(**{field: msg})
            if not s.outbox.put(out, message_size(out)):
                n = self._count(counter)
                if n == 1 or n % 1000 == 0:
                    log.warning("switch=%s stream_queue_full peer=%s %s=%d (the client does not "
                                "read its stream fast enough)", self.name, s.peer, counter, n)

    async def _on_packet_out(self, stream: Stream, pkt: p4r.PacketOut) -> None:
        if self.arbitration.stream_role(stream) is None:
            raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION, "PacketOut before arbitration")
        if not self.arbitration.is_primary_stream(stream):
            raise P4RuntimeError(grpc.StatusCode.PERMISSION_DENIED, "only the primary may send PacketOut")
        await self._engine_call(self.device.packet_out, pkt)

    async def _on_digest_ack(self, stream: Stream, ack: p4r.DigestListAck) -> None:
        if not self.arbitration.is_primary_stream(stream):
            raise P4RuntimeError(grpc.StatusCode.PERMISSION_DENIED, "only the primary may ack digests")
        await self._engine_call(self.device.digest_ack, ack)

    async def _engine_call(self, fn, *args):
        """Run work that takes the engine lock: on the loop when it is free (the usual case:
        packets hold it for microseconds), in the pool when a Read or a pipeline switch holds it."""
        if self.device.lock.acquire(blocking=False):
            try:
                return fn(*args)
            finally:
                self.device.lock.release()
        return await self._loop.run_in_executor(self._pool, fn, *args)


class P4RuntimeServer:
    """A running gRPC server for one device (P4Runtime and port-state gNMI) and its digest timer.

    The server's event loop runs in its own thread; `start` and `stop` are called from
    ordinary (synchronous) code.
    """

    def __init__(self, device: Device, address: str = "127.0.0.1:9559", name: str = "softswitch",
                 workers: int | None = None, limits: ServerLimits | None = None) -> None:
        self.device = device
        self.limits = limits or ServerLimits()
        if workers is not None:
            self.limits = ServerLimits(**{**self.limits.__dict__, "workers": workers})
        self._pool = futures.ThreadPoolExecutor(self.limits.workers, thread_name_prefix="p4rt")
        self._loop = asyncio.new_event_loop()
        self._loop_thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                             name=f"p4rt-loop-{name}")
        self._loop_thread.start()
        self.service = P4RuntimeService(device, name, self._loop, self._pool, self.limits)
        self.gnmi = GnmiService()
        self._server: grpc.aio.Server | None = None
        self._stopped = False
        try:
            self.port = self._call(self._bind(address))
        except RuntimeError:
            self.port = 0
        if self.port == 0:
            self._shutdown_loop()
            raise OSError(f"cannot listen on {address} (address in use or invalid)")
        host = address.rsplit(":", 1)[0]
        self.address = f"{host}:{self.port}"
        self._stop = threading.Event()
        self._timer = threading.Thread(target=self._digest_timer, daemon=True, name="p4rt-digests")

    def _call(self, coro, timeout: float | None = 30):
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    async def _bind(self, address: str) -> int:
        self._server = grpc.aio.server(options=[("grpc.so_reuseport", 0)],  # a busy port fails
                                       maximum_concurrent_rpcs=self.limits.rpcs)
        p4r_grpc.add_P4RuntimeServicer_to_server(self.service, self._server)
        gnmi_grpc.add_gNMIServicer_to_server(self.gnmi, self._server)
        return self._server.add_insecure_port(address)

    def start(self) -> P4RuntimeServer:
        """Start serving."""
        self._call(self._server.start())
        self._timer.start()
        return self

    def stop(self, grace: float = 1.0) -> None:
        """Stop serving and close every stream."""
        if self._stopped:
            return
        self._stopped = True
        self._stop.set()
        self.device.digests_pending.set()
        try:
            self._call(self._server.stop(grace), timeout=grace + 30)
        finally:
            self._shutdown_loop()
            self._pool.shutdown(wait=False, cancel_futures=True)

    def _shutdown_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._loop_thread.join(10)

    def _digest_timer(self) -> None:
        """Send digest lists when their max_timeout passes; sleeps while none is pending."""
        device = self.device
        timeout = 1.0
        while not self._stop.is_set():
            device.digests_pending.wait(timeout)
            device.digests_pending.clear()
            try:
                deadline = device.flush_digests()
            except Exception:
                log.exception("digest flush failed")
                deadline = None
            if deadline is None:
                timeout = 1.0
            else:
                timeout = min(1.0, max(0.0005, (deadline - device.clock_ns()) / 1e9))
