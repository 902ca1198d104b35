"""A P4Runtime server that does nothing, for bench/bench_p4runtime.py's `--floor`.

It runs on the same kind of gRPC server as softswitch (grpcio's thread-pool server,
one thread per admitted RPC): it answers arbitration, accepts any pipeline and
acknowledges every Write without looking at it. Its write rate is the most any
Python P4Runtime server on this grpcio can reach with the benchmark's client.

Run: `python bench/p4runtime_floor_server.py HOST:PORT` (stops on SIGTERM).
"""

from __future__ import annotations

import signal
import sys
from concurrent import futures

import grpc
from finsy.proto import p4r, p4r_grpc


class NothingServicer(p4r_grpc.P4RuntimeServicer):
    def Capabilities(self, request, context):
        return p4r.CapabilitiesResponse()

    def SetForwardingPipelineConfig(self, request, context):
        return p4r.SetForwardingPipelineConfigResponse()

    def Write(self, request, context):
        return p4r.WriteResponse()

    def GetForwardingPipelineConfig(self, request, context):
        return p4r.GetForwardingPipelineConfigResponse()

    def Read(self, request, context):
        yield from ()  # no entities

    def StreamChannel(self, request_iterator, context):
        for msg in request_iterator:
            if msg.HasField("arbitration"):  # every client is primary
                yield p4r.StreamMessageResponse(arbitration=msg.arbitration)


def main() -> int:
    rpcs = 1024  # as softswitch's ServerLimits.rpcs
    server = grpc.server(futures.ThreadPoolExecutor(rpcs), maximum_concurrent_rpcs=rpcs)
    p4r_grpc.add_P4RuntimeServicer_to_server(NothingServicer(), server)
    server.add_insecure_port(sys.argv[1])
    server.start()
    signal.signal(signal.SIGTERM, lambda *_: server.stop(0))
    server.wait_for_termination()
    return 0


if __name__ == "__main__":
    sys.exit(main())
