"""The job secret and the challenge-response proofs built from it (no I/O here).

Every job has a secret (`RECCL_SECRET`, made by `reccl-run` or by rank 0).
Nothing in a job trusts a peer that has not proved it knows the secret:

* the rendezvous store sends a fresh nonce to every client, which must answer
  HMAC-SHA256(key, "store" | nonce) before any request is served;
* every link (TCP per NIC, Unix socket between ranks of one host) starts with
  HELLO (session, client nonce) -> CHALLENGE (server nonce, server proof) ->
  AUTH (client proof), the proofs binding the session, both ranks, the rail
  and both nonces. A recorded handshake cannot be replayed (the server's nonce
  is new every time) and a proof for one link does not open another.

Keys are derived from the secret per purpose, so a store proof is no link proof.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import struct

ENV = "RECCL_SECRET"
NONCE_BYTES = 16


class AuthError(ValueError):
    """A proof did not verify, or no secret is available."""


def new_secret() -> str:
    """A fresh job secret (hex text, safe to put in an environment variable)."""
    return secrets.token_hex(32)


def secret_from_env(explicit: str | bytes | None = None) -> bytes:
    """The job secret: `explicit` if given, else $RECCL_SECRET; raises AuthError if neither."""
    value = explicit if explicit is not None else os.environ.get(ENV)
    if not value:
        raise AuthError(f"no job secret: set {ENV} (reccl-run does) or pass secret=")
    return value.encode() if isinstance(value, str) else bytes(value)


def _key(secret: bytes, purpose: bytes) -> bytes:
    return hmac.new(secret, b"reccl/" + purpose, hashlib.sha256).digest()


def nonce() -> bytes:
    """A fresh random nonce."""
    return secrets.token_bytes(NONCE_BYTES)


def store_proof(secret: bytes, server_nonce: bytes) -> bytes:
    """What a store client sends back for the server's nonce."""
    return hmac.new(_key(secret, b"store"), server_nonce, hashlib.sha256).digest()


def _link_msg(role: bytes, session: int, client: int, server: int, rail: int,
              client_nonce: bytes, server_nonce: bytes) -> bytes:
    return role + struct.pack("!IHHB", session, client, server, rail) + client_nonce + \
        server_nonce


def link_proof(secret: bytes, role: str, session: int, client: int, server: int, rail: int,
               client_nonce: bytes, server_nonce: bytes) -> bytes:
    """Proof of the secret for one link handshake; role 'server' or 'client'."""
    msg = _link_msg(role.encode(), session, client, server, rail, client_nonce, server_nonce)
    return hmac.new(_key(secret, b"link"), msg, hashlib.sha256).digest()


def check(expected: bytes, got: bytes, what: str) -> None:
    """Constant-time comparison; raises AuthError naming what failed."""
    if not hmac.compare_digest(expected, got):
        raise AuthError(f"{what}: proof does not match the job secret")
