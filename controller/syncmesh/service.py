"""gRPC plumbing of the SyncMesh service: credentials, peer identity, the session stream.

One bidirectional stream (``Session``) per pair of peers carries raw
``Envelope`` bytes both ways, so that bytes that do not even parse are still
seen, counted and logged by the daemon. Who is at the other end is decided
when the stream opens, before a single message is read:

* mutual TLS (the default): the client's certificate, signed by the fabric
  CA, names its switch (``peer_name``); the client checks the server's
  certificate against the switch it dialled (the TLS target name);
* ``--insecure``: plaintext, the shared token and a claimed switch name in
  the metadata; membership is checked, identity is only claimed.

gRPC refuses a message longer than the fabric's limit from its length prefix,
without reading it (``grpc.max_receive_message_length``).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

import grpc

from .certs import TlsFiles

SERVICE = "syncmesh.v2.SyncMesh"
METHOD = f"/{SERVICE}/Session"
TOKEN_KEY = "x-syncmesh-token"
SWITCH_KEY = "x-syncmesh-switch"


@dataclass(frozen=True)
class Insecure:
    """Plaintext, with a shared token and the claimed switch name in the metadata."""

    token: str
    """The fabric's shared secret."""
    switch: str
    """This daemon's switch, sent as claimed identity."""


Credentials = TlsFiles | Insecure


def _options(max_message: int, keepalive_ms: int) -> list[tuple[str, int]]:
    return [("grpc.max_receive_message_length", max_message),
            ("grpc.max_send_message_length", max_message),
            # the transport's own liveness (HTTP/2 pings, gRPC's threads): a dead
            # connection is noticed even while this process's event loop is busy
            ("grpc.keepalive_time_ms", keepalive_ms),
            ("grpc.keepalive_timeout_ms", 2 * keepalive_ms),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.max_pings_without_data", 0),
            ("grpc.http2.min_ping_interval_without_data_ms", keepalive_ms // 2)]


def make_server(handler: grpc.StreamStreamMultiCallable, address: str, creds: Credentials,
                max_message: int, keepalive_ms: int = 1000) -> grpc.aio.Server:
    """A gRPC server whose Session streams go to ``handler(request_iterator, context)``."""
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0),
                                      *_options(max_message, keepalive_ms)])
    method = grpc.stream_stream_rpc_method_handler(handler)  # no (de)serialisers: raw bytes
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE, {"Session": method}),))
    try:
        if isinstance(creds, Insecure):
            bound = server.add_insecure_port(address)
        else:
            ca, cert, key = creds.read()
            bound = server.add_secure_port(address, grpc.ssl_server_credentials(
                [(key, cert)], root_certificates=ca, require_client_auth=True))
    except RuntimeError:  # grpc reports a failed bind this way
        bound = 0
    if bound == 0:
        raise OSError(f"cannot listen on {address} (address in use or not local?)")
    return server


class Refused(Exception):
    """A stream whose opener is not a fabric member (``code`` is the gRPC status to answer)."""

    def __init__(self, detail: str, code: grpc.StatusCode):
        super().__init__(detail)
        self.code = code


def peer_name(context: grpc.aio.ServicerContext, creds: Credentials) -> str:
    """Who opened this stream: the switch its certificate names (or, insecure, claims)."""
    if isinstance(creds, Insecure):
        metadata = dict(context.invocation_metadata() or ())
        given = metadata.get(TOKEN_KEY, "")
        given_b = given.encode() if isinstance(given, str) else given
        if not hmac.compare_digest(given_b, creds.token.encode()):
            raise Refused("missing or wrong token", grpc.StatusCode.UNAUTHENTICATED)
        name = metadata.get(SWITCH_KEY, "")
        if not name:
            raise Refused(f"no {SWITCH_KEY} in the metadata", grpc.StatusCode.UNAUTHENTICATED)
        return str(name)
    auth = context.auth_context() or {}
    names = auth.get("peer_dns") or auth.get("x509_subject_alternative_name") or []
    if len(names) != 1:
        raise Refused(f"the client certificate must name exactly one switch, it names "
                      f"{len(names)}", grpc.StatusCode.UNAUTHENTICATED)
    return names[0].decode(errors="replace")


class PeerChannel:
    """The client side: a channel to one peer daemon that opens Session streams."""

    def __init__(self, address: str, peer: str, creds: Credentials, max_message: int,
                 keepalive_ms: int = 1000):
        self.address = address
        self.peer = peer
        # reconnect quickly after a peer restarts (gRPC's default backoff grows to 2 minutes)
        options = [("grpc.initial_reconnect_backoff_ms", 100),
                   ("grpc.min_reconnect_backoff_ms", 100),
                   ("grpc.max_reconnect_backoff_ms", 1000),
                   *_options(max_message, keepalive_ms)]
        if isinstance(creds, Insecure):
            self._channel = grpc.aio.insecure_channel(address, options=options)
            self._metadata: tuple[tuple[str, str], ...] = (
                (TOKEN_KEY, creds.token), (SWITCH_KEY, creds.switch))
        else:
            ca, cert, key = creds.read()
            tls = grpc.ssl_channel_credentials(root_certificates=ca, private_key=key,
                                               certificate_chain=cert)
            # the server must prove it is the switch we mean to reach
            self._channel = grpc.aio.secure_channel(
                address, tls, options=[*options, ("grpc.ssl_target_name_override", peer)])
            self._metadata = ()
        self._open = self._channel.stream_stream(METHOD)

    def session(self, wait: bool = True) -> grpc.aio.StreamStreamCall:
        """Open a Session stream (``wait``: until the peer can be reached)."""
        return self._open(metadata=self._metadata, wait_for_ready=wait)

    async def close(self) -> None:
        """Close the channel."""
        await self._channel.close()
