"""gRPC P4Runtime service (p4.v1.P4Runtime) over a `Device`.

Per-request checks follow the spec: the device ID must be this device's (NOT_FOUND
otherwise), Write and SetForwardingPipelineConfig need the primary's election ID for
the request's role (PERMISSION_DENIED otherwise), and a Write batch with failures
ends with UNKNOWN plus one p4.v1.Error per update in `grpc-status-details-bin`.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from concurrent import futures

import grpc
from finsy.proto import gnmi_grpc, p4r, p4r_grpc, rpc_status

from softswitch.p4runtime.arbitration import Arbitration, Notice
from softswitch.p4runtime.device import Device
from softswitch.p4runtime.errors import P4RuntimeError, code_number, write_error_details
from softswitch.p4runtime.gnmi import GnmiService

log = logging.getLogger("softswitch.p4runtime")

API_VERSION = "1.5.0"
_END = object()
_READ_CHUNK = 4096


def _election_id(msg) -> int | None:
    if not msg.HasField("election_id"):
        return None
    return (msg.election_id.high << 64) | msg.election_id.low


def _uint128(value: int) -> p4r.Uint128:
    return p4r.Uint128(high=value >> 64, low=value & ((1 << 64) - 1))


class _Stream:
    """One StreamChannel: an outgoing queue and its identity for arbitration."""

    def __init__(self, peer: str) -> None:
        self.peer = peer
        self.out: queue.Queue = queue.Queue()

    def send(self, msg) -> None:
        self.out.put(msg)


class P4RuntimeService(p4r_grpc.P4RuntimeServicer):
    """The P4Runtime service of one device."""

    def __init__(self, device: Device, name: str = "softswitch") -> None:
        self.device = device
        self.name = name
        self.arbitration = Arbitration()
        self._lock = threading.Lock()
        device.on_packet_in = self._deliver_to_primaries
        device.on_digest_list = self._deliver_to_primaries

    # ---- helpers ---------------------------------------------------------------------

    def _check_device(self, device_id: int) -> None:
        if device_id != self.device.device_id:
            raise P4RuntimeError(
                grpc.StatusCode.NOT_FOUND,
                f"unknown device id {device_id} (this switch is device {self.device.device_id})",
            )

    def _check_primary(self, role: str, election_id: int | None) -> None:
        with self._lock:
            if election_id is None:
                raise P4RuntimeError(
                    grpc.StatusCode.PERMISSION_DENIED, "request has no election id; only the primary may write"
                )
            if not self.arbitration.is_primary(role, election_id):
                primary = self.arbitration.primary(role)
                raise P4RuntimeError(
                    grpc.StatusCode.PERMISSION_DENIED,
                    f"election id {election_id} is not the primary of role {role or 'default'!r}"
                    + (f" (primary is {primary[1]})" if primary else " (no primary connected)"),
                )

    def _deliver_to_primaries(self, msg) -> None:
        field = "packet" if isinstance(msg, p4r.PacketIn) else "digest"
        with self._lock:
            targets = [s for s in self.arbitration.streams() if self.arbitration.is_primary_stream(s)]
        for s in targets:
            s.send(p4r.StreamMessageResponse(**{field: msg}))

    def _deliver_notices(self, notices: list[Notice]) -> None:
        for n in notices:
            upd = p4r.MasterArbitrationUpdate(device_id=self.device.device_id)
            if n.role:
                upd.role.name = n.role
            if n.election_id is not None:
                upd.election_id.CopyFrom(_uint128(n.election_id))
            upd.status.CopyFrom(rpc_status.Status(code=code_number(n.code), message=n.message))
            n.stream.send(p4r.StreamMessageResponse(arbitration=upd))

    @staticmethod
    def _abort(context: grpc.ServicerContext, exc: P4RuntimeError):
        context.abort(exc.code, exc.message)

    # ---- unary RPCs ------------------------------------------------------------------

    def Capabilities(self, request, context):
        """Capabilities (spec 17)."""
        return p4r.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    def Write(self, request, context):
        """Write (spec 12); CONTINUE_ON_ERROR is the only atomicity served, as on BMv2."""
        try:
            self._check_device(request.device_id)
            self._check_primary(request.role, _election_id(request))
            if request.atomicity != p4r.WriteRequest.CONTINUE_ON_ERROR:
                raise P4RuntimeError(
                    grpc.StatusCode.UNIMPLEMENTED,
                    "only CONTINUE_ON_ERROR atomicity is supported",
                )
            self.device.require_pipeline()
        except P4RuntimeError as exc:
            self._abort(context, exc)
        results: list[P4RuntimeError | None] = []
        for update in request.updates:
            try:
                self.device.apply(update)
                results.append(None)
            except P4RuntimeError as exc:
                results.append(exc)
            except Exception as exc:  # a server bug: reported for this update, not fatal
                log.exception("switch=%s rpc=Write update_failed_internally", self.name)
                results.append(P4RuntimeError(grpc.StatusCode.INTERNAL, f"internal error: {exc}"))
        failures = [r for r in results if r is not None]
        if failures:
            log.info("switch=%s rpc=Write updates=%d failed=%d first_error=%r",
                     self.name, len(results), len(failures), str(failures[0]))
            context.set_trailing_metadata(
                (("grpc-status-details-bin", write_error_details(results)),)
            )
            context.abort(
                grpc.StatusCode.UNKNOWN,
                f"{len(failures)} of {len(results)} updates failed; first: {failures[0]}",
            )
        return p4r.WriteResponse()

    def Read(self, request, context) -> Iterator[p4r.ReadResponse]:
        """Read (spec 11) with wildcards."""
        try:
            self._check_device(request.device_id)
            entities = self.device.read(request.entities)
        except P4RuntimeError as exc:
            self._abort(context, exc)
        except Exception as exc:
            log.exception("switch=%s rpc=Read failed_internally", self.name)
            context.abort(grpc.StatusCode.INTERNAL, f"internal error: {exc}")
        for i in range(0, max(len(entities), 1), _READ_CHUNK):  # stay below message size limits
            yield p4r.ReadResponse(entities=entities[i:i + _READ_CHUNK])

    def SetForwardingPipelineConfig(self, request, context):
        """SetForwardingPipelineConfig (spec 15.1)."""
        try:
            self._check_device(request.device_id)
            self._check_primary(request.role, _election_id(request))
            self.device.set_pipeline(request.action, request.config)
        except P4RuntimeError as exc:
            log.info("switch=%s rpc=SetForwardingPipelineConfig error=%r", self.name, str(exc))
            self._abort(context, exc)
        log.info("switch=%s rpc=SetForwardingPipelineConfig action=%s", self.name,
                 p4r.SetForwardingPipelineConfigRequest.Action.Name(request.action))
        return p4r.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request, context):
        """GetForwardingPipelineConfig (spec 15.2) for every response type."""
        R = p4r.GetForwardingPipelineConfigRequest
        try:
            self._check_device(request.device_id)
            p = self.device.require_pipeline()
        except P4RuntimeError as exc:
            self._abort(context, exc)
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
        """StreamChannel (spec 5 and 16): arbitration, PacketOut/PacketIn, digests."""
        stream = _Stream(context.peer())
        context.add_callback(lambda: stream.out.put(_END))
        reader = threading.Thread(
            target=self._read_stream, args=(stream, request_iterator), daemon=True,
            name=f"p4rt-stream-{stream.peer}",
        )
        reader.start()
        try:
            while True:
                item = stream.out.get()
                if item is _END:
                    break
                if isinstance(item, P4RuntimeError):
                    self._abort(context, item)
                yield item
        finally:
            with self._lock:
                notices = self.arbitration.remove(stream)
            self._deliver_notices(notices)
            log.info("switch=%s stream_closed peer=%s", self.name, stream.peer)

    def _read_stream(self, stream: _Stream, requests) -> None:
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
                        stream.send(exc)  # fatal for the stream
                        return
                    stream.send(self._stream_error(exc, kind, req))
        except grpc.RpcError:
            pass
        except Exception:  # a broken client must not take the server down
            log.exception("switch=%s stream_reader_failed peer=%s", self.name, stream.peer)
        finally:
            stream.out.put(_END)

    @staticmethod
    def _stream_error(exc: P4RuntimeError, kind: str, req) -> p4r.StreamMessageResponse:
        err = p4r.StreamError(canonical_code=code_number(exc.code), message=exc.message)
        if kind == "packet":
            err.packet_out.packet_out.CopyFrom(req.packet)
        elif kind == "digest_ack":
            err.digest_list_ack.digest_list_ack.CopyFrom(req.digest_ack)
        return p4r.StreamMessageResponse(error=err)

    def _on_arbitration(self, stream: _Stream, upd: p4r.MasterArbitrationUpdate) -> None:
        self._check_device(upd.device_id)
        if upd.role.HasField("config"):
            raise P4RuntimeError(grpc.StatusCode.UNIMPLEMENTED, "role configs are not supported")
        with self._lock:
            notices = self.arbitration.update(stream, upd.role.name, _election_id(upd))
        log.info("switch=%s arbitration peer=%s role=%r election_id=%s", self.name,
                 stream.peer, upd.role.name, _election_id(upd))
        self._deliver_notices(notices)

    def _on_packet_out(self, stream: _Stream, pkt: p4r.PacketOut) -> None:
        with self._lock:
            role = self.arbitration.stream_role(stream)
            primary = self.arbitration.is_primary_stream(stream)
        if role is None:
            raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION, "PacketOut before arbitration")
        if not primary:
            raise P4RuntimeError(grpc.StatusCode.PERMISSION_DENIED, "only the primary may send PacketOut")
        self.device.packet_out(pkt)

    def _on_digest_ack(self, stream: _Stream, ack: p4r.DigestListAck) -> None:
        with self._lock:
            primary = self.arbitration.is_primary_stream(stream)
        if not primary:
            raise P4RuntimeError(grpc.StatusCode.PERMISSION_DENIED, "only the primary may ack digests")
        self.device.digest_ack(ack)


class P4RuntimeServer:
    """A running gRPC server for one device (P4Runtime and port-state gNMI) and its digest timer."""

    def __init__(self, device: Device, address: str = "127.0.0.1:9559", name: str = "softswitch",
                 workers: int = 16) -> None:
        self.device = device
        self.service = P4RuntimeService(device, name)
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="p4rt"),
            options=[("grpc.so_reuseport", 0)],  # a second switch on a busy port must fail
        )
        p4r_grpc.add_P4RuntimeServicer_to_server(self.service, self._server)
        self.gnmi = GnmiService()
        gnmi_grpc.add_gNMIServicer_to_server(self.gnmi, self._server)
        try:
            self.port = self._server.add_insecure_port(address)
        except RuntimeError:
            self.port = 0
        if self.port == 0:
            raise OSError(f"cannot listen on {address} (address in use or invalid)")
        host = address.rsplit(":", 1)[0]
        self.address = f"{host}:{self.port}"
        self._stop = threading.Event()
        self._timer = threading.Thread(target=self._digest_timer, daemon=True, name="p4rt-digests")

    def start(self) -> P4RuntimeServer:
        """Start serving."""
        self._server.start()
        self._timer.start()
        return self

    def stop(self, grace: float = 1.0) -> None:
        """Stop serving and close every stream."""
        self._stop.set()
        self._server.stop(grace).wait()

    def _digest_timer(self) -> None:
        while not self._stop.wait(0.002):
            try:
                self.device.flush_digests()
            except Exception:
                log.exception("digest flush failed")
