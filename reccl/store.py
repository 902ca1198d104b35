"""Rendezvous store: a small key-value server over TCP or a Unix socket.

Like torch.distributed's TCPStore: one process serves, every rank connects,
`set` publishes a value, `get` blocks until the key exists (or times out),
`add` is an atomic counter. The protocol is one JSON object per line. With a
job secret, the server first sends a nonce and serves nothing until the client
answers with its proof (`reccl.auth.store_proof`); a client without the secret
is refused, counted (`StoreServer.rejected`) and disconnected.
Addresses are "HOST:PORT" or "unix:PATH" (a Unix socket path also crosses
network namespaces, which the namespace launcher relies on).
"""

from __future__ import annotations

import base64
import json
import os
import socket
import socketserver
import threading
import time
from typing import Any

from . import auth


class StoreError(RuntimeError):
    """A store request failed: timeout, bad address, server gone."""


def parse_address(addr: str) -> tuple[int, Any]:
    """'HOST:PORT' -> (AF_INET, (host, port)); 'unix:PATH' -> (AF_UNIX, path)."""
    if addr.startswith("unix:"):
        path = addr[5:]
        if not path:
            raise StoreError(f"store address {addr!r}: empty socket path")
        return socket.AF_UNIX, path
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        raise StoreError(f"store address {addr!r}: expected HOST:PORT or unix:PATH")
    return socket.AF_INET, (host or "127.0.0.1", int(port))


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        srv: StoreServer = self.server.store  # type: ignore[attr-defined]
        if srv.secret is not None and not self._authenticate(srv):
            return
        for line in self.rfile:
            try:
                req = json.loads(line)
                reply = srv.serve(req)
            except (ValueError, KeyError, TypeError) as e:
                reply = {"error": f"bad request: {e}"}
            self.wfile.write(json.dumps(reply).encode() + b"\n")
            self.wfile.flush()

    def _authenticate(self, srv: StoreServer) -> bool:
        assert srv.secret is not None
        nonce = auth.nonce()
        self.request.settimeout(10.0)
        try:
            self.wfile.write(json.dumps({"nonce": nonce.hex()}).encode() + b"\n")
            self.wfile.flush()
            line = self.rfile.readline(4096)
            req = json.loads(line)
            auth.check(auth.store_proof(srv.secret, nonce), bytes.fromhex(req["proof"]),
                       "store client")
        except (OSError, ValueError, KeyError, TypeError) as e:
            with srv._cond:
                srv.rejected += 1
            try:
                self.wfile.write(json.dumps({"error": f"authentication failed: {e}"}).encode()
                                 + b"\n")
                self.wfile.flush()
            except OSError:
                pass
            return False
        self.request.settimeout(None)
        return True


class _TCP(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class _Unix(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True


class StoreServer:
    """The store's server side; `address` is what clients connect to."""

    def __init__(self, addr: str = "127.0.0.1:0", secret: bytes | None = None) -> None:
        family, target = parse_address(addr)
        self.secret = secret
        self.rejected = 0
        """Connections refused for lack of the job secret."""
        self._data: dict[str, bytes | int] = {}
        self._cond = threading.Condition()
        if family == socket.AF_UNIX:
            if os.path.exists(str(target)):
                os.unlink(str(target))
            self._srv: socketserver.BaseServer = _Unix(str(target), _Handler)
            self.address = f"unix:{target}"
        else:
            tcp = _TCP(target, _Handler)
            host, port = tcp.server_address[:2]
            self.address = f"{host!s}:{port}"
            self._srv = tcp
        setattr(self._srv, "store", self)  # noqa: B010 (read back by the request handler)
        self._thread = threading.Thread(target=self._srv.serve_forever, name="reccl-store",
                                        daemon=True)
        self._thread.start()

    def serve(self, req: dict) -> dict:
        """Answer one request (set / get / add / check)."""
        op, key = req["op"], str(req["key"])
        with self._cond:
            if op == "set":
                self._data[key] = base64.b64decode(req["value"])
                self._cond.notify_all()
                return {"ok": True}
            if op == "add":
                cur = self._data.get(key, 0)
                if not isinstance(cur, int):
                    return {"error": f"key {key!r} holds bytes, not a counter"}
                self._data[key] = cur + int(req["amount"])
                self._cond.notify_all()
                return {"value": self._data[key]}
            if op == "get":
                deadline = time.monotonic() + float(req.get("timeout", 60))
                while key not in self._data:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return {"error": f"timeout waiting for key {key!r}"}
                    self._cond.wait(left)
                v = self._data[key]
                if isinstance(v, int):
                    v = str(v).encode()
                return {"value": base64.b64encode(v).decode()}
            if op == "check":
                return {"value": key in self._data}
        return {"error": f"unknown op {op!r}"}

    def close(self) -> None:
        """Stop serving."""
        self._srv.shutdown()
        self._srv.server_close()
        if self.address.startswith("unix:"):
            try:
                os.unlink(self.address[5:])
            except FileNotFoundError:
                pass


class StoreClient:
    """A rank's connection to the store."""

    def __init__(self, addr: str, timeout: float = 60.0, secret: bytes | None = None) -> None:
        family, target = parse_address(addr)
        self.addr = addr
        self.timeout = timeout
        deadline = time.monotonic() + timeout
        while True:  # the server may not be up yet
            try:
                self._sock = socket.socket(family, socket.SOCK_STREAM)
                self._sock.connect(target)
                break
            except OSError as e:
                self._sock.close()
                if time.monotonic() > deadline:
                    raise StoreError(f"cannot reach store at {addr}: {e}") from None
                time.sleep(0.05)
        self._file = self._sock.makefile("rwb")
        self._lock = threading.Lock()
        if secret is not None:
            self._authenticate(secret)

    def _authenticate(self, secret: bytes) -> None:
        try:
            self._sock.settimeout(self.timeout)
            hello = json.loads(self._file.readline(4096) or b"{}")
            if "nonce" not in hello:
                raise StoreError(f"store {self.addr} did not ask for the job secret "
                                 f"({hello.get('error', 'no challenge')})")
            proof = auth.store_proof(secret, bytes.fromhex(hello["nonce"]))
            self._file.write(json.dumps({"proof": proof.hex()}).encode() + b"\n")
            self._file.flush()
            self._sock.settimeout(None)
        except (OSError, ValueError) as e:
            self.close()
            raise StoreError(f"store {self.addr}: handshake failed: {e}") from None

    def _call(self, req: dict) -> dict:
        with self._lock:
            try:
                self._file.write(json.dumps(req).encode() + b"\n")
                self._file.flush()
                line = self._file.readline()
            except OSError as e:
                raise StoreError(f"store {self.addr}: {e}") from None
        if not line:
            raise StoreError(f"store {self.addr} closed the connection (wrong job secret?)")
        reply = json.loads(line)
        if "nonce" in reply:
            raise StoreError(f"store {self.addr} requires the job secret (authentication "
                             f"failed: set RECCL_SECRET)")
        if "error" in reply:
            raise StoreError(f"store {self.addr}: {reply['error']}")
        return reply

    def set(self, key: str, value: bytes) -> None:
        """Publish `value` under `key`."""
        self._call({"op": "set", "key": key, "value": base64.b64encode(value).decode()})

    def get(self, key: str, timeout: float | None = None) -> bytes:
        """Wait for `key` and return its value."""
        t = self.timeout if timeout is None else timeout
        return base64.b64decode(self._call({"op": "get", "key": key, "timeout": t})["value"])

    def check(self, key: str) -> bool:
        """True when `key` exists (does not wait)."""
        return bool(self._call({"op": "check", "key": key})["value"])

    def add(self, key: str, amount: int = 1) -> int:
        """Atomically add to a counter and return its new value."""
        return int(self._call({"op": "add", "key": key, "amount": amount})["value"])

    def close(self) -> None:
        """Close the connection."""
        self._file.close()
        self._sock.close()
