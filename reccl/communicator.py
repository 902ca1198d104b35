"""The Communicator: rendezvous, then collectives on NumPy arrays and CPU torch tensors."""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from . import auth, rendezvous
from . import collectives as algo
from .connection import Message, contiguous
from .endpoint import Endpoint, open_ipc_listener, open_listener
from .errors import ReCCLError
from .linkstate import interface_of
from .ops import check_op, choose_algorithm
from .rendezvous import KeyValueStore, RendezvousError
from .store import StoreClient, StoreError, StoreServer
from .topology import Topology
from .transport import Event, Transport, TransportOptions

log = logging.getLogger("reccl")
USER_TAG_LIMIT = 1 << 62


@dataclass(frozen=True)
class CommOptions:
    """How a communicator behaves."""

    transport: TransportOptions = field(default_factory=TransportOptions)
    """Transport tunables (chunk size, windows, timeouts)."""
    fail_stop: bool = False
    """Behave like today's libraries: abort on the first path failure (no failover)."""
    timeout: float | None = 600.0
    """Longest wait for one message inside an operation (None: no limit). A peer that is
    silent on every channel is slow, not failed: this watchdog, like NCCL's, decides."""
    store_timeout: float = 60.0
    """Longest wait for the other ranks at rendezvous."""
    connect_timeout: float = 30.0
    """Longest wait for the links to the other ranks after rendezvous."""
    watch_links: bool = True
    """Follow the NICs' link state through netlink."""
    port: int = 0
    """UDP port to bind on every NIC (0: any free port)."""


class _Tensor:
    """Adapter: a NumPy view of the caller's array or CPU tensor, and the way back."""

    def __init__(self, x: Any, what: str) -> None:
        self.torch = None
        self.bf16 = False
        if isinstance(x, np.ndarray):
            self.arr = np.ascontiguousarray(x)
        elif type(x).__module__.startswith("torch"):
            import torch

            if x.device.type != "cpu":
                raise ReCCLError(f"{what}: tensor on {x.device}; ReCCL handles CPU tensors")
            self.torch = x
            t = x.detach().contiguous()
            if t.dtype == torch.bfloat16:  # no NumPy bfloat16: move bits, refuse arithmetic
                self.arr = t.view(torch.int16).numpy()
                self.bf16 = True
            else:
                self.arr = t.numpy()
        else:
            raise ReCCLError(f"{what}: expected a numpy.ndarray or torch.Tensor, got "
                             f"{type(x).__name__}")
        self.what = what

    @property
    def flat(self) -> np.ndarray:
        return self.arr.reshape(-1)

    def own_memory(self) -> np.ndarray | None:
        """The flat view of a torch tensor's own memory (in-place results go straight
        there), or None (NumPy inputs are left untouched; copies are made)."""
        if self.torch is None or self.bf16:
            return None
        if self.arr.ctypes.data != self.torch.data_ptr() or not self.torch.is_contiguous():
            return None
        return self.flat

    def check_arith(self, op: str) -> None:
        if self.bf16:
            raise ReCCLError(f"{self.what}: reductions on bfloat16 are not supported; "
                             f"convert to float32")
        try:
            check_op(op, self.arr.dtype)
        except ValueError as e:
            raise ReCCLError(f"{self.what}: {e}") from None

    def wrap(self, result: np.ndarray, shape: tuple, inplace: bool = False) -> Any:
        """Give the result back in the caller's type (torch: in place when shapes match)."""
        out = result.reshape(shape)
        if self.torch is None:
            return out
        import torch

        t = torch.from_numpy(np.ascontiguousarray(out))
        if self.bf16:
            t = t.view(torch.bfloat16)
        if inplace and tuple(self.torch.shape) == tuple(out.shape):
            if out.ctypes.data != self.torch.data_ptr():
                self.torch.copy_(t)
            return self.torch
        return t


class Communicator:
    """A rank's handle on the group: collectives, send/recv, events and statistics."""

    def __init__(self, rank: int, world_size: int, store: str | KeyValueStore, *,
                 host: str | None = None, nics: list[str] | None = None,
                 options: CommOptions | None = None, group: str = "reccl",
                 serve_store: bool = False, secret: str | bytes | None = None,
                 on_event: Callable[[Event], None] | None = None) -> None:
        if not 0 <= rank < world_size:
            raise ReCCLError(f"rank {rank} outside world size {world_size}")
        self.rank, self.size = rank, world_size
        self.options = options or CommOptions()
        self.host = host or socket.gethostname()
        nics = list(nics or ["127.0.0.1"])
        try:
            key = auth.secret_from_env(secret)
        except auth.AuthError as e:
            raise ReCCLError(f"rank {rank}: {e}", rank=rank) from None
        self._server: StoreServer | None = None
        self._own_store: StoreClient | None = None
        try:
            if isinstance(store, str):
                if serve_store:
                    self._server = StoreServer(store, secret=key)
                self._own_store = StoreClient(self._server.address if self._server else store,
                                              self.options.store_timeout, secret=key)
                kv: KeyValueStore = self._own_store
            else:
                kv = store
            self._setup(kv, group, nics, key, on_event)
        except (StoreError, OSError, ReCCLError, RendezvousError) as e:
            self._release_store()
            if isinstance(e, ReCCLError):
                raise
            raise ReCCLError(f"rank {rank}: rendezvous failed: {e}", rank=rank) from None
        self._coll = 0
        self._closed = False
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls, options: CommOptions | None = None, **kw: Any) -> Communicator:
        """Build from RECCL_RANK, RECCL_WORLD_SIZE, RECCL_STORE, RECCL_HOST, RECCL_NICS and
        RECCL_SECRET (as reccl-run sets them)."""
        env = os.environ
        try:
            rank, world = int(env["RECCL_RANK"]), int(env["RECCL_WORLD_SIZE"])
            store = env["RECCL_STORE"]
        except KeyError as e:
            raise ReCCLError(f"environment variable {e.args[0]} is not set (use reccl-run)"
                             ) from None
        nics = [n for n in env.get("RECCL_NICS", "").split(",") if n] or None
        if "RECCL_PORT" in env and options is None:
            options = CommOptions(port=int(env["RECCL_PORT"]))
        return cls(rank, world, store, host=env.get("RECCL_HOST"), nics=nics,
                   options=options, group=env.get("RECCL_GROUP", "reccl"), **kw)

    def _setup(self, kv: KeyValueStore, group: str, nics: list[str], secret: bytes,
               on_event: Callable | None) -> None:
        r, o = self.rank, self.options
        session = rendezvous.claim(kv, group, r, self.size, o.store_timeout)
        listeners = []
        try:
            for rail, ip in enumerate(nics):
                try:
                    listeners.append(open_listener(ip, o.port))
                except OSError as e:
                    raise ReCCLError(f"rank {r}: cannot use nic{rail} address {ip!r} "
                                     f"(port {o.port}): {e}", rank=r) from None
            ipc_name = f"reccl-{session:08x}-{r}"
            try:
                ipc = open_ipc_listener(ipc_name)
            except OSError as e:
                raise ReCCLError(f"rank {r}: intra-host socket {ipc_name!r} is taken ({e}); "
                                 f"is rank {r} of this job running twice?", rank=r) from None
        except ReCCLError:
            for s in listeners:
                s.close()
            raise
        me = rendezvous.Me(r, self.size, self.host, [(str(s.getsockname()[0]),
                                                      int(s.getsockname()[1]))
                                                     for s in listeners], ipc_name)
        infos = rendezvous.exchange(kv, group, me, o.store_timeout)
        self.topology = Topology(infos)
        # The same on every rank (from the shared topology): ring slices of one chunk per
        # NIC of the rank with the fewest.
        self.slice_bytes = o.transport.chunk_size * max(1, min(len(i.nics) for i in infos))
        ifnames: list[str | None] = ([interface_of(ip) for ip in nics] if o.watch_links
                                     else [None] * len(nics))
        topts = o.transport
        if o.fail_stop and topts.failover:
            topts = replace(topts, failover=False)
        self.endpoint = Endpoint(r, self.topology, session, secret, topts, listeners, ipc,
                                 ifnames, on_event)
        self.endpoint.start()
        missing = self.endpoint.wait_connected(o.connect_timeout)
        if missing:
            reachable = {p for p in range(self.size) if p != r and self._reachable(p)}
            cut_off = [p for p in range(self.size) if p != r and p not in reachable]
            if cut_off:
                self.endpoint.close()
                raise ReCCLError(f"rank {r}: cannot connect to rank"
                                 f"{'s' if len(cut_off) > 1 else ''} "
                                 f"{', '.join(map(str, cut_off))} within {o.connect_timeout} s; "
                                 f"links down: {'; '.join(missing)}", rank=r)
            log.warning("rank %d: starting with links down (retrying): %s", r,
                        "; ".join(missing))
        log.info("rank %d/%d on %s: nics %s (%s)", r, self.size, self.host, nics, ifnames)

    def _reachable(self, peer: int) -> bool:
        def check(t: Transport) -> bool:
            return any(t.usable(t.conns[peer], cs) for cs in t.conns[peer].channels)
        return bool(self.endpoint.inspect(check))

    def _release_store(self) -> None:
        if self._own_store:
            self._own_store.close()
            self._own_store = None
        if self._server:
            self._server.close()
            self._server = None

    # ------------------------------------------------------------- plumbing

    def _tagger(self) -> Callable[[int], int]:
        with self._lock:
            if self._closed:
                raise ReCCLError(f"rank {self.rank}: communicator is closed", rank=self.rank)
            self._coll += 1
            c = self._coll & ((1 << 34) - 1)
        return lambda step: USER_TAG_LIMIT | (c << 28) | step

    def send_bytes(self, peer: int, tag: int, data: bytes | memoryview) -> None:
        """Point-to-point send of raw bytes (used by the algorithms, inside `_run`, which
        releases the borrowed buffers when the collective ends)."""
        self.endpoint.send(peer, tag, data, borrow=True)

    def recv_bytes(self, peer: int, tag: int) -> Message:
        """Point-to-point receive of raw bytes (used by the algorithms)."""
        return self.endpoint.recv(peer, tag, self.options.timeout)

    def _p2p(self) -> algo.P2P:
        return _P2P(self)

    def _run(self, what: str, fn: Callable[[], Any]) -> Any:
        try:
            with self.endpoint.operation():
                return fn()
        except ReCCLError as e:
            raise ReCCLError(f"{what}: {e}", rank=e.rank, peer=e.peer) from None
        except ValueError as e:
            raise ReCCLError(f"rank {self.rank}: {what}: {e}", rank=self.rank) from None

    # ---------------------------------------------------------- collectives

    def all_reduce(self, x: Any, op: str = "sum", algorithm: str = "auto", out: Any = None
                   ) -> Any:
        """Reduce across ranks and give every rank the result (torch tensors: in place;
        `out`: a NumPy array of the same shape and dtype to write it to, e.g. `x` itself).
        algorithm: 'ring', 'tree', or 'auto' (tree for small messages, see ops)."""
        t = _Tensor(x, "all_reduce")
        t.check_arith(op)
        try:
            algorithm = choose_algorithm(t.arr.nbytes, self.size, algorithm)
        except ValueError as e:
            raise ReCCLError(f"all_reduce: {e}", rank=self.rank) from None
        dest = self._out(out, t, "all_reduce")
        tag = self._tagger()
        if algorithm == "tree":
            res = self._run("all_reduce", lambda: algo.tree_all_reduce(self._p2p(), tag,
                                                                       t.flat, op))
            if dest is not None:
                dest[...] = res
                res = dest
        else:
            own = dest if dest is not None else t.own_memory()
            res = self._run("all_reduce", lambda: algo.all_reduce(self._p2p(), tag, t.flat, op,
                                                                  out=own))
        return out if out is not None else t.wrap(res, t.arr.shape, inplace=True)

    def _out(self, out: Any, t: _Tensor, what: str) -> np.ndarray | None:
        """The flat NumPy view of an `out` argument, checked against the input."""
        if out is None:
            return None
        if not isinstance(out, np.ndarray) or not out.flags.c_contiguous or \
                out.shape != t.arr.shape or out.dtype != t.arr.dtype:
            raise ReCCLError(f"{what}: out must be a C-contiguous numpy.ndarray of shape "
                             f"{t.arr.shape} and dtype {t.arr.dtype}", rank=self.rank)
        return out.reshape(-1)

    def reduce_scatter(self, x: Any, op: str = "sum") -> Any:
        """Reduce across ranks; rank r gets rows [r*n/p, (r+1)*n/p) of the result."""
        t = _Tensor(x, "reduce_scatter")
        t.check_arith(op)
        shape = t.arr.shape
        if not shape or shape[0] % self.size:
            raise ReCCLError(f"reduce_scatter: first dimension of shape {shape} must be a "
                             f"multiple of the world size {self.size}", rank=self.rank)
        tag = self._tagger()
        res = self._run("reduce_scatter",
                        lambda: algo.reduce_scatter(self._p2p(), tag, t.flat, op))
        return t.wrap(res, (shape[0] // self.size, *shape[1:]))

    def reduce(self, x: Any, op: str = "sum", root: int = 0, out: Any = None) -> Any:
        """Reduce to `root` (torch: in place there; NumPy: into `out` if given); other ranks
        get None."""
        t = _Tensor(x, "reduce")
        t.check_arith(op)
        self._check_root(root, "reduce")
        dest = self._out(out, t, "reduce")
        tag = self._tagger()
        res = self._run("reduce", lambda: algo.reduce(self._p2p(), tag, t.flat, op, root))
        if res is None:
            return None
        if dest is not None:
            dest[...] = res
            return out
        return t.wrap(res, t.arr.shape, inplace=True)

    def all_gather(self, x: Any) -> Any:
        """Every rank's array stacked along a new first axis (shape (world, *x.shape))."""
        t = _Tensor(x, "all_gather")
        tag = self._tagger()
        res = self._run("all_gather", lambda: algo.all_gather(self._p2p(), tag, t.flat))
        return t.wrap(res, (self.size, *t.arr.shape))

    def broadcast(self, x: Any, root: int = 0, out: Any = None) -> Any:
        """Root's array on every rank (same shape and dtype everywhere; torch: in place;
        NumPy: into `out` if given)."""
        t = _Tensor(x, "broadcast")
        self._check_root(root, "broadcast")
        dest = self._out(out, t, "broadcast")
        tag = self._tagger()
        res = self._run("broadcast", lambda: algo.broadcast(self._p2p(), tag, t.flat, root))
        if dest is not None:
            dest[...] = res
            return out
        return t.wrap(res, t.arr.shape, inplace=True)

    def all_to_all(self, x: Any, send_splits: list[int] | None = None,
                   return_splits: bool = False) -> Any:
        """Rows send_splits[j] of x go to rank j (equal split by default); returns the rows
        received, in rank order (and their counts with return_splits)."""
        t = _Tensor(x, "all_to_all")
        rows = t.arr if t.arr.ndim else t.arr.reshape(1)
        n, p = rows.shape[0], self.size
        if send_splits is None:
            if n % p:
                raise ReCCLError(f"all_to_all: {n} rows do not split equally over {p} ranks; "
                                 f"pass send_splits", rank=self.rank)
            send_splits = [n // p] * p
        splits = [int(s) for s in send_splits]
        if len(splits) != p or any(s < 0 for s in splits) or sum(splits) != n:
            raise ReCCLError(f"all_to_all: send_splits {splits} must be {p} non-negative "
                             f"counts summing to {n}", rank=self.rank)
        tag = self._tagger()
        res, got = self._run("all_to_all",
                             lambda: algo.all_to_all(self._p2p(), tag, rows, splits))
        out = t.wrap(res, res.shape)
        return (out, got) if return_splits else out

    def barrier(self) -> None:
        """Return when every rank has entered the barrier."""
        tag = self._tagger()
        self._run("barrier", lambda: algo.barrier(self._p2p(), tag))

    def send_array(self, x: Any, dst: int, tag: int = 0) -> None:
        """Send an array or tensor to rank `dst` (dtype and shape travel with it)."""
        self._check_user(dst, tag, "send")
        t = _Tensor(x, "send")
        meta = json.dumps({"dtype": t.arr.dtype.str, "shape": list(t.arr.shape),
                           "bf16": t.bf16}).encode()
        self.endpoint.send(dst, tag, len(meta).to_bytes(4, "big") + meta + t.arr.tobytes())

    def recv_array(self, src: int, tag: int = 0, out: Any = None) -> Any:
        """Receive what `send_array` sent; into `out` (same size) when given."""
        self._check_user(src, tag, "recv")
        buf = contiguous(self._run("recv", lambda: self.endpoint.recv(src, tag,
                                                                      self.options.timeout)))
        n = int.from_bytes(buf[:4], "big")
        meta = json.loads(bytes(buf[4:4 + n]))
        arr = np.frombuffer(buf, dtype=np.dtype(meta["dtype"]), offset=4 + n)
        arr = arr.reshape(meta["shape"])
        if out is not None:
            t = _Tensor(out, "recv")
            if t.arr.size != arr.size:
                raise ReCCLError(f"recv: message from rank {src} has {arr.size} elements, "
                                 f"`out` has {t.arr.size}", rank=self.rank, peer=src)
            return t.wrap(arr.astype(t.arr.dtype, copy=False), t.arr.shape, inplace=True)
        if meta.get("bf16"):
            import torch

            return torch.from_numpy(arr.copy()).view(torch.bfloat16)
        return arr.copy()

    def _check_root(self, root: int, what: str) -> None:
        if not 0 <= root < self.size:
            raise ReCCLError(f"{what}: root {root} outside world size {self.size}",
                             rank=self.rank)

    def _check_user(self, peer: int, tag: int, what: str) -> None:
        if not 0 <= peer < self.size or peer == self.rank:
            raise ReCCLError(f"{what}: peer {peer} is not another rank of {self.size}",
                             rank=self.rank)
        if not 0 <= tag < USER_TAG_LIMIT:
            raise ReCCLError(f"{what}: tag {tag} outside [0, 2**62)", rank=self.rank)

    # -------------------------------------------------------- observability

    def stats(self) -> list[dict]:
        """Per-channel statistics: bytes, retransmissions, failures, goodput, weight."""
        return self.endpoint.inspect(lambda t: t.channel_stats())  # type: ignore[return-value]

    def counters(self) -> dict[str, int]:
        """Frames and links refused or relayed: auth_failed (links without the job secret),
        handshake_timeouts, malformed, misrouted, relayed, relay_dropped, duplicates,
        overflow, resent, send_errors, links_accepted, links_connected."""
        out: dict[str, int] = self.endpoint.inspect(lambda t: dict(t.counters))  # type: ignore
        out.update(self.endpoint.counters)
        return out

    def events(self) -> list[Event]:
        """Channel failures, failovers, rejoins and peer failures seen so far, timestamped."""
        return list(self.endpoint.events)

    def set_link(self, rail: int, up: bool, silent: bool = False) -> None:
        """Fault injection without root: cut (or restore) this rank's NIC `rail`."""
        self.endpoint.set_link(rail, up, silent)

    def close(self, timeout: float = 10.0) -> None:
        """Wait for outstanding data to be acknowledged, then release the sockets."""
        with self._lock:
            if self._closed:
                return
        try:
            self.barrier()
        except ReCCLError as e:
            log.warning("rank %d: closing without final barrier: %s", self.rank, e)
        with self._lock:
            self._closed = True
        self.endpoint.flush(timeout)
        threading.Event().wait(0.05)  # linger: let the last acknowledgements leave
        self.endpoint.close()
        self._release_store()

    def abort(self) -> None:
        """Release everything at once, without waiting for peers."""
        with self._lock:
            self._closed = True
        self.endpoint.close()
        self._release_store()

    def __enter__(self) -> Communicator:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
        else:
            self.abort()


class _P2P:
    def __init__(self, comm: Communicator) -> None:
        self.rank, self.size = comm.rank, comm.size
        self.slice_bytes = comm.slice_bytes
        self.send = comm.send_bytes
        self.recv = comm.recv_bytes
