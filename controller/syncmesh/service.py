"""gRPC plumbing of the SyncMesh service: authentication, raw-bytes handlers, peer channels.

Handlers receive the raw request bytes so that a message that does not even
parse is still seen, logged and counted by the daemon (rather than failing
inside gRPC's deserialiser). The proto is ``proto/syncmesh.proto``.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import grpc

SERVICE = "syncmesh.v1.SyncMesh"
METHODS = ("SayHello", "Notify", "UpdateProfile", "Resync")
TOKEN_KEY = "x-syncmesh-token"
MAX_MESSAGE = 64 << 20
"""A full state of a 1,024-leaf fabric is a few MB: above gRPC's 4 MB default."""
TLS_SERVER_NAME = "syncmesh"
"""Name peers' certificates must carry (subject alt name DNS:syncmesh) under mutual TLS."""


@dataclass(frozen=True)
class TlsFiles:
    """PEM files for mutual TLS: the fabric's CA, this daemon's certificate and key."""

    ca: Path
    cert: Path
    key: Path

    def read(self) -> tuple[bytes, bytes, bytes]:
        """The three files' contents (ca, cert, key)."""
        return self.ca.read_bytes(), self.cert.read_bytes(), self.key.read_bytes()


def token_ok(context: grpc.aio.ServicerContext, token: str) -> bool:
    """True if the call's metadata carries the shared secret (constant-time compare)."""
    for key, value in context.invocation_metadata() or ():
        if key == TOKEN_KEY:
            given = value.encode() if isinstance(value, str) else value
            return hmac.compare_digest(given, token.encode())
    return False


RawHandler = Callable[[str, bytes, grpc.aio.ServicerContext], Awaitable[bytes]]


def make_server(handler: RawHandler, address: str, tls: TlsFiles | None = None) -> grpc.aio.Server:
    """A gRPC server whose every SyncMesh method goes to ``handler(method, bytes, context)``."""

    def bind(method: str):
        async def call(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            return await handler(method, request, context)
        return grpc.unary_unary_rpc_method_handler(call)  # no (de)serialisers: raw bytes

    server = grpc.aio.server(options=[("grpc.so_reuseport", 0),
                                      ("grpc.max_receive_message_length", MAX_MESSAGE),
                                      ("grpc.max_send_message_length", MAX_MESSAGE)])
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE, {m: bind(m) for m in METHODS}),))
    try:
        if tls is None:
            bound = server.add_insecure_port(address)
        else:
            ca, cert, key = tls.read()
            creds = grpc.ssl_server_credentials([(key, cert)], root_certificates=ca,
                                                require_client_auth=True)
            bound = server.add_secure_port(address, creds)
    except RuntimeError:  # grpc reports a failed bind this way
        bound = 0
    if bound == 0:
        raise OSError(f"cannot listen on {address} (address in use or not local?)")
    return server


class PeerChannel:
    """A client channel to one peer daemon, sending raw message bytes."""

    def __init__(self, address: str, token: str, tls: TlsFiles | None = None,
                 timeout: float = 2.0):
        self.address = address
        self.timeout = timeout
        self._metadata = ((TOKEN_KEY, token),)
        # reconnect quickly after a peer restarts (gRPC's default backoff grows to 2 minutes)
        options = [("grpc.initial_reconnect_backoff_ms", 100),
                   ("grpc.min_reconnect_backoff_ms", 100),
                   ("grpc.max_reconnect_backoff_ms", 1000),
                   ("grpc.max_receive_message_length", MAX_MESSAGE),
                   ("grpc.max_send_message_length", MAX_MESSAGE)]
        if tls is None:
            self._channel = grpc.aio.insecure_channel(address, options=options)
        else:
            ca, cert, key = tls.read()
            creds = grpc.ssl_channel_credentials(root_certificates=ca, private_key=key,
                                                 certificate_chain=cert)
            self._channel = grpc.aio.secure_channel(
                address, creds,
                options=options + [("grpc.ssl_target_name_override", TLS_SERVER_NAME)])
        self._calls = {m: self._channel.unary_unary(f"/{SERVICE}/{m}") for m in METHODS}

    async def call(self, method: str, payload: bytes) -> bytes:
        """One unary call; raises grpc.aio.AioRpcError on failure."""
        # wait_for_ready: ride out a reconnect instead of failing at once
        return await self._calls[method](payload, metadata=self._metadata, timeout=self.timeout,
                                         wait_for_ready=True)

    async def close(self) -> None:
        """Close the channel."""
        await self._channel.close()
