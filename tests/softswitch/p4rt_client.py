"""A small synchronous P4Runtime client over the generated stubs, for the server tests."""

from __future__ import annotations

import queue
import threading
from pathlib import Path

import grpc
from finsy.proto import p4r, p4r_grpc, rpc_status

PROG = Path(__file__).with_name("test_p4runtime_prog.p4")


def u128(value: int) -> p4r.Uint128:
    return p4r.Uint128(high=value >> 64, low=value & ((1 << 64) - 1))


def error_details(exc: grpc.RpcError) -> list[tuple[str, str]]:
    """(code name, message) of every p4.v1.Error in the grpc-status-details-bin trailer."""
    for key, value in exc.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = rpc_status.Status.FromString(value)
            out = []
            for d in status.details:
                e = p4r.Error()
                d.Unpack(e)
                out.append((grpc.StatusCode(_code(e.canonical_code)).name, e.message))
            return out
    return []


def _code(number: int) -> tuple:
    return next(c.value for c in grpc.StatusCode if c.value[0] == number)


class Stream:
    """A StreamChannel with a queue of received messages."""

    def __init__(self, stub, device_id: int) -> None:
        self.device_id = device_id
        self._out: queue.Queue = queue.Queue()
        self.received: queue.Queue = queue.Queue()
        self._call = stub.StreamChannel(iter(self._out.get, None))
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        try:
            for msg in self._call:
                self.received.put(msg)
        except grpc.RpcError as exc:
            self.received.put(exc)

    def send(self, msg: p4r.StreamMessageRequest) -> None:
        self._out.put(msg)

    def arbitrate(self, election_id: int | None, role: str = "", device_id: int | None = None):
        upd = p4r.MasterArbitrationUpdate(device_id=self.device_id if device_id is None else device_id)
        if election_id is not None:
            upd.election_id.CopyFrom(u128(election_id))
        if role:
            upd.role.name = role
        self.send(p4r.StreamMessageRequest(arbitration=upd))
        return self.next()

    def next(self, kind: str | None = None, timeout: float = 5.0):
        """The next message (of `kind`, skipping others); an RpcError is returned, not raised."""
        while True:
            msg = self.received.get(timeout=timeout)
            if isinstance(msg, grpc.RpcError) or kind is None or msg.WhichOneof("update") == kind:
                return msg

    def close(self) -> None:
        self._out.put(None)
        self._call.cancel()


class Client:
    """One controller: a channel, its stream and its election ID."""

    def __init__(self, address: str, device_id: int = 1, election_id: int | None = 1) -> None:
        self.channel = grpc.insecure_channel(address)
        self.stub = p4r_grpc.P4RuntimeStub(self.channel)
        self.device_id = device_id
        self.election_id = election_id
        self.stream: Stream | None = None

    def connect(self, role: str = ""):
        self.stream = Stream(self.stub, self.device_id)
        return self.stream.arbitrate(self.election_id, role)

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()
        self.channel.close()

    def set_pipeline(self, p4info, device_config: bytes, action=None, cookie: int | None = None):
        A = p4r.SetForwardingPipelineConfigRequest
        req = A(device_id=self.device_id, action=A.VERIFY_AND_COMMIT if action is None else action)
        if self.election_id is not None:
            req.election_id.CopyFrom(u128(self.election_id))
        if p4info is not None:
            req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        if cookie is not None:
            req.config.cookie.cookie = cookie
        return self.stub.SetForwardingPipelineConfig(req)

    def get_pipeline(self, response_type=0):
        return self.stub.GetForwardingPipelineConfig(
            p4r.GetForwardingPipelineConfigRequest(device_id=self.device_id, response_type=response_type)
        ).config

    def write(self, *updates: p4r.Update, election_id: int | None = None, role: str = "", **kw):
        req = p4r.WriteRequest(device_id=kw.get("device_id", self.device_id), role=role, updates=updates)
        eid = self.election_id if election_id is None else election_id
        if eid is not None:
            req.election_id.CopyFrom(u128(eid))
        if "atomicity" in kw:
            req.atomicity = kw["atomicity"]
        return self.stub.Write(req)

    def read(self, *entities: p4r.Entity) -> list[p4r.Entity]:
        out = []
        for resp in self.stub.Read(p4r.ReadRequest(device_id=self.device_id, entities=entities)):
            out.extend(resp.entities)
        return out


def insert(entity: p4r.Entity) -> p4r.Update:
    return p4r.Update(type=p4r.Update.INSERT, entity=entity)


def modify(entity: p4r.Entity) -> p4r.Update:
    return p4r.Update(type=p4r.Update.MODIFY, entity=entity)


def delete(entity: p4r.Entity) -> p4r.Update:
    return p4r.Update(type=p4r.Update.DELETE, entity=entity)
