"""gRPC P4Runtime service (p4.v1.P4Runtime) over a `Device`, on gRPC's thread-pool server.

Every RPC gRPC admits gets a thread at once: the pool has as many threads as the server
admits RPCs in progress (`ServerLimits.rpcs`; gRPC refuses more with RESOURCE_EXHAUSTED),
created when needed, daemon threads (`handler_threads`: a handler still running when the
server stops, such as a compile, never keeps the process alive). A StreamChannel holds its thread (and one reader thread) while it
is open, so open streams are bounded per peer host and in all (spec 5.3), and however
many are open, idle or slow, no unary call ever waits for a thread. The thread-pool
server costs less per call than gRPC's asyncio server (measured: bench/bench_p4runtime.py,
docs/softswitch-p4runtime.md), and each Write runs in its own thread, straight through.

Per-request checks follow the spec: the device ID must be this device's (NOT_FOUND),
the role must be one of the device's roles (only the default role is served, spec
5.1-5.2: NOT_FOUND for Write/Read/SetForwardingPipelineConfig, UNIMPLEMENTED on the
stream), Write and SetForwardingPipelineConfig need the primary's election ID
(PERMISSION_DENIED), and a Write batch with failures ends with UNKNOWN plus one
p4.v1.Error per update (spec 12.3; batch.py for batches whose report cannot fit).
Each stream has a bounded outgoing queue whose drops are counted (`P4RuntimeService.stats`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
from finsy.proto import gnmi_grpc, p4r, p4r_grpc, rpc_status

from softswitch.p4runtime.arbitration import Arbitration, Notice
from softswitch.p4runtime.batch import error_report
from softswitch.p4runtime.device import Device
from softswitch.p4runtime.errors import P4RuntimeError, code_number
from softswitch.p4runtime.gnmi import GnmiService
from softswitch.p4runtime.handler_threads import HandlerThreads
from softswitch.p4runtime.streams import Admission, Outbox, Stream, message_size, peer_host

log = logging.getLogger("softswitch.p4runtime")

API_VERSION = "1.5.0"
_READ_CHUNK = 4096
_MESSAGE_CAP = 600  # characters of a status message (grpc-message shares the metadata limit)
_CONTINUE_ON_ERROR = p4r.WriteRequest.CONTINUE_ON_ERROR


@dataclass(frozen=True)
class ServerLimits:
    """Bounds of the P4Runtime server (docs/softswitch-p4runtime.md)."""

    rpcs: int = 1024
    """RPCs in progress at once (streams included); gRPC refuses more with RESOURCE_EXHAUSTED.
    Also the most handler threads the server creates."""
    streams: int = 256
    """Open StreamChannels in all; more are refused with RESOURCE_EXHAUSTED (spec 5.3).
    The same bound applies to gNMI subscriptions."""
    streams_per_host: int = 128
    """Open StreamChannels (and gNMI subscriptions) from one peer address."""
    queued_messages: int = 1024
    """PacketIn / DigestList / StreamError messages waiting to be sent on one stream."""
    queued_bytes: int = 8 << 20
    """Bytes of those messages on one stream."""
    compiles: int = 2
    """Device configs compiled at once; further SetForwardingPipelineConfig calls wait."""


def _election_id(msg) -> int | None:
    if not msg.HasField("election_id"):
        return None
    return (msg.election_id.high << 64) | msg.election_id.low


def _uint128(value: int) -> p4r.Uint128:
    return p4r.Uint128(high=value >> 64, low=value & ((1 << 64) - 1))


def _cap(text: str) -> str:
    return text if len(text) <= _MESSAGE_CAP else text[:_MESSAGE_CAP - 3] + "..."


class P4RuntimeService(p4r_grpc.P4RuntimeServicer):
    """The P4Runtime service of one device; each RPC runs in a thread of the server's pool.

    `context.abort` raises, so it is always called outside the `try` that turns
    P4RuntimeError (and server bugs) into the status to answer with.
    """

    def __init__(self, device: Device, name: str, limits: ServerLimits) -> None:
        self.device = device
        self.name = name
        self.limits = limits
        self._lock = threading.Lock()  # arbitration and the primary snapshots
        self.arbitration = Arbitration()
        self._primaries: tuple[Stream, ...] = ()  # snapshot read by the packet threads
        self._primary_id: int | None = None  # snapshot read by the Write path
        self._admission = Admission(limits.streams, limits.streams_per_host)
        self._compiles = threading.BoundedSemaphore(limits.compiles)
        self._stats_lock = threading.Lock()
        self._stats = {"packet_in_dropped": 0, "digest_dropped": 0, "stream_error_dropped": 0}
        device.on_packet_in = self._deliver_to_primaries
        device.on_digest_list = self._deliver_to_primaries

    def stats(self) -> dict[str, int]:
        """Counters: open streams, refused streams, messages dropped on full stream queues."""
        with self._stats_lock:
            out = dict(self._stats)
        out["streams_open"] = self._admission.open
        out["streams_refused"] = self._admission.refused
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
            with self._lock:
                primary = self.arbitration.primary("")
            raise P4RuntimeError(
                grpc.StatusCode.PERMISSION_DENIED,
                f"election id {election_id} is not the primary's"
                + (f" (primary is {primary[1]})" if primary else " (no primary connected)"),
            )

    def _internal(self, rpc: str, exc: Exception) -> P4RuntimeError:
        log.error("switch=%s rpc=%s failed_internally", self.name, rpc, exc_info=exc)
        return P4RuntimeError(grpc.StatusCode.INTERNAL, f"internal error: {exc}")

    # ---- unary RPCs ------------------------------------------------------------------

    def Capabilities(self, request, context):
        """Capabilities (spec 17)."""
        return p4r.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    def Write(self, request, context):
        """Write (spec 12); CONTINUE_ON_ERROR is the only atomicity served, as on BMv2."""
        error = outcome = None
        updates = request.updates
        try:
            self._check_device(request.device_id)
            self._check_role(request.role)
            self._check_primary(_election_id(request))
            if request.atomicity != _CONTINUE_ON_ERROR:
                raise P4RuntimeError(
                    grpc.StatusCode.UNIMPLEMENTED,
                    "only CONTINUE_ON_ERROR atomicity is supported",
                )
            outcome = self.device.write(updates)
        except P4RuntimeError as exc:
            error = exc
        except Exception as exc:  # a server bug: reported, never a crash
            error = self._internal("Write", exc)
        if error is not None:
            context.abort(error.code, _cap(error.message))
        if outcome.aborted is not None:
            log.warning("switch=%s rpc=Write updates=%d aborted=%r", self.name, len(updates),
                        outcome.aborted.message[:200])
            context.abort(outcome.aborted.code, _cap(outcome.aborted.message))
        failures = outcome.failures
        if failures:
            log.info("switch=%s rpc=Write updates=%d failed=%d first_error=%r",
                     self.name, len(updates), len(failures), str(failures[0]))
            context.set_trailing_metadata(
                (("grpc-status-details-bin", error_report(outcome.results)),))
            context.abort(
                grpc.StatusCode.UNKNOWN,
                _cap(f"{len(failures)} of {len(updates)} updates failed; first: {failures[0]}"),
            )
        return p4r.WriteResponse()

    def Read(self, request, context) -> Iterator[p4r.ReadResponse]:
        """Read (spec 13) with wildcards."""
        error = None
        try:
            self._check_device(request.device_id)
            self._check_role(request.role)
            entities = self.device.read(request.entities)
        except P4RuntimeError as exc:
            error = exc
        except Exception as exc:
            error = self._internal("Read", exc)
        if error is not None:
            context.abort(error.code, _cap(error.message))
        for i in range(0, max(len(entities), 1), _READ_CHUNK):  # stay below message size limits
            yield p4r.ReadResponse(entities=entities[i:i + _READ_CHUNK])

    def SetForwardingPipelineConfig(self, request, context):
        """SetForwardingPipelineConfig (spec 14): compiled outside every device lock, at most
        `limits.compiles` at once."""
        error = None
        try:
            self._check_device(request.device_id)
            self._check_role(request.role)
            self._check_primary(_election_id(request))
            with self._compiles:
                if request.config.p4_device_config:  # compiling takes seconds: say so
                    log.info("switch=%s pipeline_compiling peer=%s bytes=%d", self.name,
                             context.peer(), len(request.config.p4_device_config))
                self.device.set_pipeline(request.action, request.config, context.is_active)
        except P4RuntimeError as exc:
            log.info("switch=%s rpc=SetForwardingPipelineConfig error=%r", self.name, str(exc))
            error = exc
        except Exception as exc:
            error = self._internal("SetForwardingPipelineConfig", exc)
        if error is not None:
            context.abort(error.code, _cap(error.message))
        log.info("switch=%s rpc=SetForwardingPipelineConfig action=%s", self.name,
                 p4r.SetForwardingPipelineConfigRequest.Action.Name(request.action))
        return p4r.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request, context):
        """GetForwardingPipelineConfig (spec 15) for every response type."""
        R = p4r.GetForwardingPipelineConfigRequest
        error = None
        try:
            self._check_device(request.device_id)
            p = self.device.require_pipeline()
        except P4RuntimeError as exc:
            error = exc
        if error is not None:
            context.abort(error.code, _cap(error.message))
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

    def StreamChannel(self, request_iterator, context):
        """StreamChannel (spec 5 and 16): arbitration, PacketOut/PacketIn, digests.

        This thread writes the stream's outbox; a reader thread of its own handles the
        requests, so neither waits for the other.
        """
        peer = context.peer()
        host = peer_host(peer)
        refusal = self._admission.admit(host)
        if refusal is not None:
            log.warning("switch=%s stream_refused peer=%s reason=%r", self.name, peer, refusal)
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, refusal)
        stream = Stream(peer, host, Outbox(self.limits.queued_messages, self.limits.queued_bytes))
        try:
            if not context.add_callback(stream.outbox.close):  # the RPC ends: stop writing
                return
            threading.Thread(target=self._read_stream, args=(stream, request_iterator),
                             daemon=True, name=f"p4rt-stream-{peer}").start()
            while True:
                item = stream.outbox.get()
                if item is None:
                    break
                if isinstance(item, P4RuntimeError):
                    context.abort(item.code, _cap(item.message))
                yield item
        finally:
            self._admission.release(host)
            with self._lock:
                notices = self.arbitration.remove(stream)
                self._refresh_primaries()
                self._deliver_notices(notices)
            log.info("switch=%s stream_closed peer=%s dropped=%s", self.name, peer,
                     stream.outbox.dropped or 0)

    def _read_stream(self, stream: Stream, requests) -> None:
        try:
            for req in requests:
                kind = req.WhichOneof("update")
                try:
                    if kind == "arbitration":
                        self._on_arbitration(stream, req.arbitration)
                    elif kind == "packet":
                        self._on_packet_out(stream, req.packet)
                    elif kind == "digest_ack":
                        self._on_digest_ack(stream, req.digest_ack)
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
        except grpc.RpcError:
            pass  # the client went away or the server is stopping
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
        with self._lock:  # notices are queued in the order of the changes they describe
            notices = self.arbitration.update(stream, "", _election_id(upd))
            self._refresh_primaries()
            self._deliver_notices(notices)
        log.info("switch=%s arbitration peer=%s election_id=%s", self.name, stream.peer,
                 _election_id(upd))

    def _refresh_primaries(self) -> None:
        """Snapshots of the primary after an arbitration change (caller holds `_lock`): its
        stream(s) for the packet threads, its election id for the Write path (O(1) per request)."""
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

    def _is_primary_stream(self, stream: Stream) -> bool:
        return stream in self._primaries

    def _on_packet_out(self, stream: Stream, pkt: p4r.PacketOut) -> None:
        if not self._is_primary_stream(stream):
            with self._lock:
                arbitrated = self.arbitration.stream_role(stream) is not None
            if not arbitrated:
                raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION, "PacketOut before arbitration")
            raise P4RuntimeError(grpc.StatusCode.PERMISSION_DENIED, "only the primary may send PacketOut")
        self.device.packet_out(pkt)

    def _on_digest_ack(self, stream: Stream, ack: p4r.DigestListAck) -> None:
        if not self._is_primary_stream(stream):
            raise P4RuntimeError(grpc.StatusCode.PERMISSION_DENIED, "only the primary may ack digests")
        self.device.digest_ack(ack)


class P4RuntimeServer:
    """A running gRPC server for one device (P4Runtime and port-state gNMI) and its digest timer."""

    def __init__(self, device: Device, address: str = "127.0.0.1:9559", name: str = "softswitch",
                 limits: ServerLimits | None = None) -> None:
        self.device = device
        self.limits = limits or ServerLimits()
        # one thread for every RPC gRPC admits: none ever waits for a thread (threads are
        # created on demand and reused)
        # daemon threads: a handler still running after stop() never holds the process
        self._pool = HandlerThreads(self.limits.rpcs, "p4rt")
        self.service = P4RuntimeService(device, name, self.limits)
        self.gnmi = GnmiService(Admission(self.limits.streams, self.limits.streams_per_host,
                                          "gNMI subscriptions"))
        self._server = grpc.server(self._pool, options=[("grpc.so_reuseport", 0)],  # a busy port fails
                                   maximum_concurrent_rpcs=self.limits.rpcs)
        p4r_grpc.add_P4RuntimeServicer_to_server(self.service, self._server)
        gnmi_grpc.add_gNMIServicer_to_server(self.gnmi, self._server)
        try:
            self.port = self._server.add_insecure_port(address)
        except RuntimeError:
            self.port = 0
        if self.port == 0:
            self._pool.shutdown(wait=False)
            raise OSError(f"cannot listen on {address} (address in use or invalid)")
        host = address.rsplit(":", 1)[0]
        self.address = f"{host}:{self.port}"
        self._stopped = False
        self._stop = threading.Event()
        self._timer = threading.Thread(target=self._digest_timer, daemon=True, name="p4rt-digests")

    def start(self) -> P4RuntimeServer:
        """Start serving."""
        self._server.start()
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
            self._server.stop(grace).wait(grace + 30)
        finally:
            self._pool.shutdown(wait=False, cancel_futures=True)

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
