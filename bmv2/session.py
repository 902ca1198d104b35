"""A synchronous P4Runtime session with one switch: primary arbitration, pipeline, Write, Read.

Small on purpose: the packet tests and benchmarks drive BMv2 one request at a
time. The controller (SyncMesh) uses finsy instead. Every refused request is
one ``SwitchError`` carrying the gRPC code (and the per-update P4Runtime errors
of a Write), the same exception softswitch's ``Switch`` raises.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Sequence
from typing import Any

import grpc
from finsy.proto import p4r, p4r_grpc, rpc_status

from softswitch.engine import SwitchError


def u128(value: int) -> Any:
    """A P4Runtime Uint128."""
    return p4r.Uint128(high=value >> 64, low=value & ((1 << 64) - 1))


def _update_errors(exc: grpc.RpcError) -> list[str]:
    """The per-update p4.v1.Error messages of a refused Write (grpc-status-details-bin)."""
    out = []
    for key, value in exc.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            for detail in rpc_status.Status.FromString(value).details:
                err = p4r.Error()
                detail.Unpack(err)
                if err.canonical_code != 0:
                    out.append(f"{_code(err.canonical_code).name}: {err.message}")
    return out


def _code(number: int) -> grpc.StatusCode:
    return next(c for c in grpc.StatusCode if c.value[0] == number)


def refused(exc: grpc.RpcError, what: str) -> SwitchError:
    """A gRPC error as SwitchError (the first per-update error's code where a Write has them)."""
    details = _update_errors(exc)
    code = exc.code().name
    if details:
        code = details[0].split(":", 1)[0]
    text = "; ".join(details) or exc.details() or code
    try:
        return SwitchError(code, f"{what}: {text}")
    except ValueError:  # a code softswitch does not know
        return SwitchError("UNKNOWN", f"{what}: {code}: {text}")


class Session:
    """Primary controller of one device over one channel."""

    def __init__(self, address: str, device_id: int, election_id: int = 1) -> None:
        self.address = address
        self.device_id = device_id
        self.election_id = election_id
        self.channel = grpc.insecure_channel(address)
        self.stub = p4r_grpc.P4RuntimeStub(self.channel)
        self._out: queue.Queue[Any] = queue.Queue()
        self.received: queue.Queue[Any] = queue.Queue()
        self._call: Any = None
        self._pump: threading.Thread | None = None

    def connect(self, timeout: float = 10.0) -> None:
        """Open the stream and become primary."""
        self._call = self.stub.StreamChannel(iter(self._out.get, None))
        self._pump = threading.Thread(target=self._read_stream, daemon=True,
                                      name=f"p4rt-{self.address}")
        self._pump.start()
        upd = p4r.MasterArbitrationUpdate(device_id=self.device_id,
                                          election_id=u128(self.election_id))
        self._out.put(p4r.StreamMessageRequest(arbitration=upd))
        while True:
            msg = self.received.get(timeout=timeout)
            if isinstance(msg, grpc.RpcError):
                raise refused(msg, f"P4Runtime stream to {self.address}")
            if msg.WhichOneof("update") == "arbitration":
                if msg.arbitration.status.code != 0:
                    raise SwitchError("PERMISSION_DENIED",
                                      f"{self.address}: not primary: {msg.arbitration.status.message}")
                return

    def _read_stream(self) -> None:
        try:
            for msg in self._call:
                self.received.put(msg)
        except grpc.RpcError as exc:
            self.received.put(exc)

    def set_pipeline(self, p4info: Any, device_config: bytes, cookie: int = 0) -> None:
        """SetForwardingPipelineConfig(VERIFY_AND_COMMIT)."""
        req = p4r.SetForwardingPipelineConfigRequest(
            device_id=self.device_id, election_id=u128(self.election_id),
            action=p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        req.config.cookie.cookie = cookie
        try:
            self.stub.SetForwardingPipelineConfig(req, timeout=120)
        except grpc.RpcError as exc:
            raise refused(exc, f"{self.address}: pipeline") from None

    def write(self, updates: Sequence[Any], what: str = "write") -> None:
        """One WriteRequest with ``updates``."""
        req = p4r.WriteRequest(device_id=self.device_id, election_id=u128(self.election_id),
                               updates=list(updates))
        try:
            self.stub.Write(req, timeout=60)
        except grpc.RpcError as exc:
            raise refused(exc, what) from None

    def read(self, entities: Iterable[Any], what: str = "read") -> list[Any]:
        """Every entity a ReadRequest returns."""
        req = p4r.ReadRequest(device_id=self.device_id, entities=list(entities))
        try:
            return [e for resp in self.stub.Read(req, timeout=60) for e in resp.entities]
        except grpc.RpcError as exc:
            raise refused(exc, what) from None

    def close(self) -> None:
        """End the stream and the channel."""
        self._out.put(None)
        if self._call is not None:
            self._call.cancel()
        self.channel.close()
