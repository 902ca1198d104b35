"""BMv2's data-plane gRPC service (``simple_switch_grpc --dp-grpc-server-addr``).

The service is ``p4.bm.DataplaneInterface`` (BMv2's
``services/p4/bm/dataplane_interface.proto``): ``PacketStream`` is a
bidirectional stream of ``{id = 1, device_id = 2, port = 3, packet = 4}``
messages (uint64, uint64, uint32, bytes) in both directions. The message
classes are built here from that description, so no generated code or
.proto file of BMv2 is needed.

``inject`` gives a deterministic "every output of this packet" without a
timeout: when the client half-closes a stream, BMv2 blocks until no packet is
left in the switch (``block_until_no_more_packets``: every PHV released,
which happens after transmission) and only then ends the stream, so the
responses read until the end are exactly what the packet caused (copies,
clones, recirculations included). One stream may be open at a time.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_SERVICE = "/p4.bm.DataplaneInterface/PacketStream"


@functools.cache
def _packet_class() -> Any:
    """The message class of PacketStreamRequest/Response (both have the same fields)."""
    f = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="sglb/bmv2_dataplane.proto",
                                               package="sglb.bmv2", syntax="proto3")
    msg = proto.message_type.add(name="PacketStreamMessage")
    for name, number, kind in (("id", 1, f.TYPE_UINT64), ("device_id", 2, f.TYPE_UINT64),
                               ("port", 3, f.TYPE_UINT32), ("packet", 4, f.TYPE_BYTES)):
        msg.field.add(name=name, number=number, type=kind, label=f.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(
        "sglb.bmv2.PacketStreamMessage"))


@dataclass(frozen=True)
class Output:
    """A packet leaving the switch on ``port`` (the shape of softswitch's Output)."""

    port: int
    data: bytes


class DataplaneError(RuntimeError):
    """The data-plane service refused or dropped the stream."""


class Dataplane:
    """Client of one BMv2's data-plane service."""

    def __init__(self, address: str, device_id: int) -> None:
        self.address = address
        self.device_id = device_id
        self._channel = grpc.insecure_channel(address)
        cls = _packet_class()
        self._stream = self._channel.stream_stream(
            _SERVICE, request_serializer=cls.SerializeToString,
            response_deserializer=cls.FromString)
        self._next_id = 1

    def inject(self, port: int, data: bytes, timeout: float = 30.0) -> list[Output]:
        """Send ``data`` in on ``port``; every packet it caused, in the order BMv2 sent them."""
        cls = _packet_class()
        pid = self._next_id
        self._next_id += 1
        request = cls(id=pid, device_id=self.device_id, port=port, packet=bytes(data))
        try:
            replies = list(self._stream(iter([request]), timeout=timeout))
        except grpc.RpcError as e:
            raise DataplaneError(f"BMv2 data plane at {self.address}: {e.code().name}: "
                                 f"{e.details()}") from None
        # an id other than ours would be a packet left over from an earlier stream
        return [Output(r.port, r.packet) for r in replies if r.id in (pid, 0)]

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Block until the service accepts a stream (it answers UNAVAILABLE while starting)."""
        import time

        deadline = time.monotonic() + timeout
        while True:
            try:
                list(self._stream(iter([]), timeout=5.0))
                return
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                    raise DataplaneError(f"BMv2 data plane at {self.address}: "
                                         f"{e.code().name}: {e.details()}") from None
                time.sleep(0.05)

    def close(self) -> None:
        """Close the channel."""
        self._channel.close()
