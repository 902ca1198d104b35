"""The I/O side of a rank: listening sockets, authenticated links, netlink, one I/O thread.

Everything protocol-related happens in `reccl.transport.Transport`; this layer
opens and accepts the links it asks for (TCP bound to one NIC per rail, a Unix
stream socket between ranks of one host), authenticates every one with the job
secret (`reccl.auth`) before a single frame of it reaches the transport, reads
and writes length-prefixed frames without extra copies, feeds the transport
link events, frames, carrier changes and clock ticks, and blocks callers until
their messages arrive.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import selectors
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator

import numpy as np

from . import auth, wire
from .errors import ReCCLError
from .linkstate import LinkMonitor
from .topology import Topology
from .transport import (
    IPC_LINK,
    Close,
    Connect,
    Deliver,
    Event,
    Link,
    PeerFailed,
    PeerRecovered,
    PeerUnreachable,
    Transmit,
    Transport,
    TransportOptions,
)

log = logging.getLogger("reccl.endpoint")
SOCKET_BUFFER = 4 << 20
HANDSHAKE_TIMEOUT = 5.0
READ_BUDGET = 1 << 20
"""Bytes read from one socket per loop turn before the others get theirs."""


def ipc_address(name: str) -> str:
    """Linux abstract Unix socket address for an intra-host socket name."""
    return "\0" + name


def _tune(s: socket.socket) -> None:
    for force, plain in ((33, socket.SO_RCVBUF), (32, socket.SO_SNDBUF)):  # SO_*BUFFORCE
        try:
            s.setsockopt(socket.SOL_SOCKET, force, SOCKET_BUFFER)
        except OSError:
            try:
                s.setsockopt(socket.SOL_SOCKET, plain, SOCKET_BUFFER)
            except OSError:
                pass
    if s.family == socket.AF_INET:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def open_listener(ip: str, port: int = 0) -> socket.socket:
    """A non-blocking TCP listener on one NIC address."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    _tune(s)
    s.bind((ip, port))
    s.listen(64)
    s.setblocking(False)
    return s


def open_ipc_listener(name: str) -> socket.socket:
    """A non-blocking Unix stream listener for the intra-host links."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(ipc_address(name))
    s.listen(64)
    s.setblocking(False)
    return s


class _Stream:
    """One socket: handshake state, the frame being read, the frames waiting to be written."""

    def __init__(self, sock: socket.socket, role: str, link: Link | None, deadline: float
                 ) -> None:
        self.sock = sock
        self.role = role            # 'client' or 'server'
        self.link = link            # known for clients; set by the handshake for servers
        self.state = "connecting" if role == "client" else "hello"
        self.deadline = deadline
        self.nonce_c = b""
        self.nonce_s = b""
        self.hdr = bytearray(wire.HEADER.size)
        self.hdr_got = 0
        self.frame: np.ndarray | None = None
        self.frame_got = 0
        self.ctrl: deque = deque()
        self.data: deque = deque()
        self.cur: list[memoryview] = []
        self.want_write = False

    def pending(self) -> bool:
        return bool(self.cur or self.ctrl or self.data)


class Endpoint:
    """One rank's transport plus its sockets and I/O thread."""

    def __init__(self, me: int, topo: Topology, session: int, secret: bytes,
                 opts: TransportOptions, listeners: list[socket.socket],
                 ipc_listener: socket.socket, ifnames: list[str | None],
                 on_event: Callable[[Event], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.me = me
        self.topo = topo
        self.session = session
        self.secret = secret
        self.clock = clock
        self.transport = Transport(me, topo, opts, clock())
        self.listeners = listeners
        self.ipc_listener = ipc_listener
        self.ifnames = ifnames
        self.on_event = on_event
        self.events: list[Event] = []
        self.counters = {"auth_failed": 0, "handshake_timeouts": 0, "send_errors": 0,
                         "links_accepted": 0, "links_connected": 0}
        self._lock = threading.Lock()
        """Guards the transport."""
        self._progress = threading.Lock()
        """Held by whoever runs the progress engine (sockets): the I/O thread or a caller."""
        self._drivers = 0
        self._idle = threading.Condition()
        self._mail = threading.Condition()
        self._box: dict[tuple[int, int], deque] = {}
        self._peer_error: dict[int, str] = {}
        self._blackhole: set[int] = set()
        self._outbox: deque = deque()
        self._touched: set[_Stream] = set()
        self._write_failed: list[tuple[_Stream, str]] = []
        self._streams: dict[socket.socket, _Stream] = {}
        self._links: dict[Link, _Stream] = {}
        self._stop = False
        self._sel = selectors.DefaultSelector()
        for rail, s in enumerate(listeners):
            self._sel.register(s, selectors.EVENT_READ, ("listen", rail))
        self._sel.register(ipc_listener, selectors.EVENT_READ, ("listen", IPC_LINK))
        watched = [n for n in ifnames if n]
        self.links: LinkMonitor | None = None
        if watched:
            try:
                self.links = LinkMonitor(watched)
                self._sel.register(self.links, selectors.EVENT_READ, ("netlink", -1))
            except OSError as e:
                log.warning("rank %d: no netlink link monitor (%s); timeouts only", me, e)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._sel.register(self._wake_r, selectors.EVENT_READ, ("wake", -1))
        self._thread = threading.Thread(target=self._loop, name=f"reccl-io-{me}", daemon=True)

    def start(self) -> None:
        """Apply the NICs' current link state, open this rank's links, start the I/O thread."""
        now = self.clock()
        with self._lock:
            acts: list = []
            if self.links:
                for rail, name in enumerate(self.ifnames):
                    if name and not self.links.state.get(name, True):
                        acts += self.transport.set_nic(rail, False, now)
            acts += self.transport.start(now)
            rest = self._apply(acts, now)
        self._write_touched()
        self._execute(rest)
        self._thread.start()

    def wait_connected(self, timeout: float) -> list[str]:
        """Wait until every link is up; returns the links still down after `timeout`."""
        end = time.monotonic() + timeout
        while True:
            with self._lock:
                down = [link for link, up in self.transport.links.items() if not up]
            if not down or time.monotonic() >= end:
                return [self._link_name(link) for link in down]
            time.sleep(0.005)

    def _link_name(self, link: Link) -> str:
        nbr, rail = link
        if rail == IPC_LINK:
            return f"rank {self.me} <-ipc-> rank {nbr}"
        return (f"rank {self.me} nic{rail} {self.topo.ranks[self.me].nics[rail][0]} -> rank "
                f"{nbr} nic{rail} {self.topo.ranks[nbr].nics[rail][0]}:"
                f"{self.topo.ranks[nbr].nics[rail][1]}")

    # ------------------------------------------------------------ user side

    def send(self, peer: int, tag: int, data: bytes | memoryview, borrow: bool = False
             ) -> None:
        """Queue a message; returns at once (delivery is the transport's job). `borrow`:
        see `Transport.send`; call `release` before the buffer changes."""
        with self._lock:
            try:
                acts = self.transport.send(peer, tag, data, self.clock(), borrow)
            except PeerUnreachable as e:
                raise ReCCLError(str(e), rank=self.me, peer=peer) from None
            # The I/O thread writes: frames of one link then leave in transport order.
            was_empty = not self._outbox
            self._outbox.extend(acts)
        if was_empty and acts and not self._drivers:
            self._wake()

    def recv(self, peer: int, tag: int, timeout: float | None = None
             ) -> bytes | bytearray | memoryview:
        """Wait for the message `tag` from `peer`; on timeout the error says what was last
        heard from the peer on every channel."""
        key = (peer, tag)
        start = time.monotonic()
        deadline = None if timeout is None else start + timeout
        with self._mail:
            box = self._box.get(key)
            if box:
                return self._take(key, box)
        with self._lock:
            self.transport.watch(peer, True, self.clock())
        self._drive_begin()
        try:
            while True:
                with self._mail:
                    box = self._box.get(key)
                    if box:
                        return self._take(key, box)
                    if peer in self._peer_error:
                        raise ReCCLError(self._peer_error[peer], rank=self.me, peer=peer)
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    with self._lock:
                        heard = self.transport.describe_peer(peer, self.clock())
                    raise ReCCLError(f"rank {self.me}: timeout after {timeout} s waiting "
                                     f"for message {tag:#x} from rank {peer} (slow or "
                                     f"stopped peer); {heard}", rank=self.me, peer=peer)
                step = 0.05 if left is None else min(left, 0.05)
                if self._progress.acquire(timeout=step):
                    try:
                        if self._stop:
                            raise ReCCLError(f"rank {self.me}: communicator closed while "
                                             f"waiting for rank {peer}", rank=self.me,
                                             peer=peer)
                        self._run_once(step)
                    finally:
                        self._progress.release()
        finally:
            self._drive_end()
            with self._lock:
                self.transport.watch(peer, False, self.clock())

    def _drive_begin(self) -> None:
        with self._idle:
            self._drivers += 1
            first = self._drivers == 1
        if first:
            self._wake()  # the I/O thread leaves its select and lets the caller drive

    def _drive_end(self) -> None:
        with self._idle:
            self._drivers -= 1
            if not self._drivers:
                self._idle.notify_all()

    @contextlib.contextmanager
    def driving(self) -> Iterator[None]:
        """Within this block (a whole collective) the calling thread drives the sockets
        whenever it waits, and the I/O thread stays parked: no thread switch per message."""
        self._drive_begin()
        try:
            yield
        finally:
            with self._lock:
                self.transport.release()
            self._drive_end()

    def _take(self, key: tuple[int, int], box: deque) -> bytes | bytearray | memoryview:
        data = box.popleft()
        if not box:
            del self._box[key]
        return data

    def inspect(self, fn: Callable[[Transport], object]) -> object:
        """Run fn on the transport under its lock (statistics, counters)."""
        with self._lock:
            return fn(self.transport)

    def flush(self, timeout: float) -> bool:
        """Wait until everything sent has been acknowledged; False on timeout."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                if self.transport.idle():
                    return True
            time.sleep(0.002)
        return False

    def set_link(self, rail: int, up: bool, silent: bool = False) -> None:
        """Fault injection without root: black-hole a NIC (nothing read or written on its
        links, no new link on it), and tell the transport unless `silent`."""
        with self._lock:
            if up:
                self._blackhole.discard(rail)
            else:
                self._blackhole.add(rail)
            if not silent:  # the I/O thread carries the actions out, in order
                self._outbox.extend(self.transport.set_nic(rail, up, self.clock()))
        self._wake()

    def close(self) -> None:
        """Stop the I/O thread and close the sockets."""
        self._stop = True
        self._wake()
        with self._idle:
            self._idle.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self._progress.acquire(timeout=5)
        for st in list(self._streams.values()):
            st.sock.close()
        for s in (*self.listeners, self.ipc_listener, self._wake_r, self._wake_w):
            s.close()
        if self.links:
            self.links.close()
        self._sel.close()

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    # --------------------------------------------------------------- I/O side

    def _loop(self) -> None:
        try:
            self._run_loop()
        except Exception as e:  # a bug here must surface as errors, not as a hang
            log.exception("rank %d: I/O thread failed", self.me)
            with self._mail:
                for peer in self.transport.conns:
                    self._peer_error.setdefault(peer, f"rank {self.me}: I/O thread failed: "
                                                      f"{type(e).__name__}: {e}")
                self._mail.notify_all()

    def _run_loop(self) -> None:
        while not self._stop:
            if self._drivers:  # a caller drives the sockets itself: stay out of its way
                with self._idle:
                    self._idle.wait_for(lambda: not self._drivers or self._stop, 0.05)
                continue
            with self._progress:
                self._run_once(0.05)

    def _run_once(self, max_wait: float) -> None:
        """One turn of the progress engine: wait for sockets (at most `max_wait` or the
        next timer), read, hand frames to the transport, run its timers, write. Runs with
        `_progress` held, by the I/O thread or by a caller waiting for a message (which
        saves a thread switch per message). Socket reads and writes happen outside the
        transport lock, which the callers need to queue sends and watch receives."""
        tr = self.transport
        if True:
            with self._lock:
                deadline = tr.next_deadline()
                pending = bool(self._outbox)
            hs = min((s.deadline for s in self._streams.values() if s.state != "up"),
                     default=None)
            now = self.clock()
            wait = 0.0 if pending else \
                min(x for x in (deadline, hs, now + max_wait) if x is not None) - now
            ready = self._sel.select(max(0.0, wait))
            # Carrier changes first: a NIC going down must not wait behind a batch of data.
            ready.sort(key=lambda kv: kv[0].data[0] != "netlink")
            got: list = []
            for key, mask in ready:
                kind, arg = key.data
                if kind == "wake":
                    self._drain_wake()
                elif kind == "stream":
                    st = self._streams.get(key.fileobj)
                    if st is None:
                        continue
                    if mask & selectors.EVENT_WRITE and st.state == "up":
                        self._pump_writes(st)
                    if mask & selectors.EVENT_READ and st.sock in self._streams:
                        self._read(st, got)
            with self._lock:
                now = self.clock()
                acts = list(self._outbox)
                self._outbox.clear()
                with self._mail:
                    failed, self._write_failed = self._write_failed, []
                for st, reason in failed:
                    acts += self._drop(st, reason, now)
                for key, mask in ready:
                    kind, arg = key.data
                    if kind == "netlink":
                        acts += self._link_changes(now)
                    elif kind == "listen":
                        self._accept(key.fileobj, arg, now)
                    elif kind == "stream" and mask & selectors.EVENT_WRITE:
                        st = self._streams.get(key.fileobj)
                        if st is not None and st.state == "connecting":
                            acts += self._connected(st, now)
                for what, st, frame in got:
                    if what == "frame":
                        if self._links.get(st.link) is st:
                            acts += tr.on_frame(st.link, frame, now)
                    elif what == "handshake":
                        if st.sock in self._streams:
                            acts += self._handshake_frame(st, frame, now)
                    elif what == "bad":
                        acts += self._bad_frame(st, frame, now)
                    else:  # closed or failed
                        acts += self._drop(st, frame, now)
                acts += self._expire_handshakes(now)
                acts += tr.flush(now)
                deadline = tr.next_deadline()
                if deadline is not None and deadline <= now:
                    acts += tr.on_tick(now)
                rest = self._apply(acts, now)
            self._write_touched()
            self._execute(rest)

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass

    def _link_changes(self, now: float) -> list:
        acts: list = []
        assert self.links is not None
        for name, up in self.links.read():
            for rail, n in enumerate(self.ifnames):
                if n == name:
                    log.info("rank %d: link %s (nic%d) %s", self.me, name, rail,
                             "up" if up else "down")
                    acts += self.transport.set_nic(rail, up, now)
        return acts

    # ------------------------------------------------------- links, handshake

    def _register(self, st: _Stream) -> None:
        self._streams[st.sock] = st
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if st.want_write else 0)
        self._sel.register(st.sock, events, ("stream", -1))

    def _set_write(self, st: _Stream, on: bool) -> None:
        if st.want_write != on and st.sock in self._streams:
            st.want_write = on
            self._sel.modify(st.sock, selectors.EVENT_READ |
                             (selectors.EVENT_WRITE if on else 0), ("stream", -1))

    def _drop(self, st: _Stream, reason: str, now: float, report: bool = True) -> list:
        """Close a socket; a link that was up is reported down to the transport."""
        if st.sock not in self._streams:
            return []
        del self._streams[st.sock]
        self._sel.unregister(st.sock)
        try:
            st.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        st.sock.close()
        if st.state == "up" and st.link is not None and self._links.get(st.link) is st:
            del self._links[st.link]
            if report:
                return self.transport.link_down(st.link, reason, now)
        elif st.role == "client" and st.link is not None and report:
            return self.transport.connect_failed(st.link, reason, now)
        return []

    def _connect(self, link: Link, now: float) -> list:
        nbr, rail = link
        try:
            if rail == IPC_LINK:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.setblocking(False)
                target: object = ipc_address(self.topo.ranks[nbr].ipc)
            else:
                if rail in self._blackhole:
                    return self.transport.connect_failed(link, "nic black-holed (test)", now)
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                _tune(s)
                s.bind((self.topo.ranks[self.me].nics[rail][0], 0))  # leave through this NIC
                s.setblocking(False)
                target = self.topo.ranks[nbr].nics[rail]
            err = s.connect_ex(target)  # type: ignore[arg-type]
        except OSError as e:
            return self.transport.connect_failed(link, str(e), now)
        if err not in (0, errno.EINPROGRESS, errno.EAGAIN):
            s.close()
            return self.transport.connect_failed(link, errno.errorcode.get(err, str(err)), now)
        st = _Stream(s, "client", link, now + HANDSHAKE_TIMEOUT)
        st.want_write = True
        self._register(st)
        return []

    def _accept(self, listener: socket.socket, rail: int, now: float) -> None:
        for _ in range(16):
            try:
                s, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            if rail != IPC_LINK and rail in self._blackhole:
                s.close()
                continue
            if s.family == socket.AF_INET:
                _tune(s)
            s.setblocking(False)
            st = _Stream(s, "server", None, now + HANDSHAKE_TIMEOUT)
            st.expected_rail = rail  # type: ignore[attr-defined]
            self._register(st)

    def _expire_handshakes(self, now: float) -> list:
        acts: list = []
        for st in [s for s in self._streams.values() if s.state != "up" and now >= s.deadline]:
            self.counters["handshake_timeouts"] += 1
            acts += self._drop(st, "handshake timed out", now)
        return acts

    def _send_raw(self, st: _Stream, frame: bytes) -> None:
        st.ctrl.append([memoryview(frame)])
        self._touched.add(st)

    def _handshake(self, st: _Stream, h: wire.Header, body: wire.Body, now: float) -> list:
        """Advance the link handshake with one frame (see `reccl.auth`)."""
        try:
            if st.role == "server" and st.state == "hello":
                if not isinstance(body, wire.Hello):
                    raise auth.AuthError(f"first frame is {wire.TYPE_NAMES[h.type]}, not HELLO")
                rail = IPC_LINK if h.channel == wire.IPC_RAIL else h.channel
                if body.session != self.session or h.dst != self.me or \
                        not 0 <= h.src < self.topo.world or h.src == self.me or \
                        rail != getattr(st, "expected_rail", rail):
                    raise auth.AuthError(f"HELLO for session {body.session:#x} rank {h.dst} "
                                         f"rail {h.channel} from rank {h.src} does not fit")
                st.link = (h.src, rail)
                st.nonce_c, st.nonce_s = body.nonce, auth.nonce()
                proof = auth.link_proof(self.secret, "server", self.session, h.src, self.me,
                                        h.channel, st.nonce_c, st.nonce_s)
                reply = wire.Header(wire.CHALLENGE, self.me, h.src, h.channel)
                self._send_raw(st, wire.encode(reply, wire.Challenge(st.nonce_s, proof)))
                st.state = "auth"
                return []
            if st.role == "server" and st.state == "auth":
                if not isinstance(body, wire.Auth):
                    raise auth.AuthError(f"expected AUTH, got {wire.TYPE_NAMES[h.type]}")
                assert st.link is not None
                nbr, rail = st.link
                chan = wire.IPC_RAIL if rail == IPC_LINK else rail
                auth.check(auth.link_proof(self.secret, "client", self.session, nbr, self.me,
                                           chan, st.nonce_c, st.nonce_s), body.proof,
                           f"link from rank {nbr}")
                return self._link_ready(st, now)
            if st.role == "client" and st.state == "challenge":
                if not isinstance(body, wire.Challenge):
                    raise auth.AuthError(f"expected CHALLENGE, got {wire.TYPE_NAMES[h.type]}")
                assert st.link is not None
                nbr, rail = st.link
                chan = wire.IPC_RAIL if rail == IPC_LINK else rail
                auth.check(auth.link_proof(self.secret, "server", self.session, self.me, nbr,
                                           chan, st.nonce_c, body.nonce), body.proof,
                           f"link to rank {nbr}")
                proof = auth.link_proof(self.secret, "client", self.session, self.me, nbr, chan,
                                        st.nonce_c, body.nonce)
                self._send_raw(st, wire.encode(wire.Header(wire.AUTH, self.me, nbr, chan),
                                               wire.Auth(proof)))
                return self._link_ready(st, now)
            raise auth.AuthError(f"unexpected {wire.TYPE_NAMES[h.type]} during handshake")
        except auth.AuthError as e:
            self.counters["auth_failed"] += 1
            log.warning("rank %d: rejected a link (%s): %s", self.me, st.role, e)
            return self._drop(st, f"authentication failed: {e}", now)

    def _link_ready(self, st: _Stream, now: float) -> list:
        assert st.link is not None
        acts: list = []
        old = self._links.get(st.link)
        if old is not None and old is not st:
            acts += self._drop(old, "replaced by a new connection", now)
        st.state = "up"
        self._links[st.link] = st
        self.counters["links_connected" if st.role == "client" else "links_accepted"] += 1
        return acts + self.transport.link_up(st.link, now)

    def _connected(self, st: _Stream, now: float) -> list:
        err = st.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            return self._drop(st, errno.errorcode.get(err, str(err)), now)
        assert st.link is not None
        nbr, rail = st.link
        st.nonce_c = auth.nonce()
        chan = wire.IPC_RAIL if rail == IPC_LINK else rail
        st.state = "challenge"
        self._set_write(st, False)
        self._send_raw(st, wire.encode(wire.Header(wire.HELLO, self.me, nbr, chan),
                                       wire.Hello(self.session, st.nonce_c)))
        return []

    # ---------------------------------------------------------------- frames

    def _read(self, st: _Stream, got: list) -> None:
        """Read what the socket has (up to READ_BUDGET) into whole frames, appended to `got`
        as ('frame' | 'handshake', stream, frame), ('bad', stream, error) or
        ('closed', stream, reason); the transport sees them under its lock."""
        if st.state == "connecting":
            return
        if st.link is not None and st.link[1] != IPC_LINK and st.link[1] in self._blackhole:
            return
        budget = READ_BUDGET
        while budget > 0:
            try:
                if st.frame is None:
                    n = st.sock.recv_into(memoryview(st.hdr)[st.hdr_got:])
                else:
                    n = st.sock.recv_into(memoryview(st.frame)[st.frame_got:])
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                got.append(("closed", st, f"read failed: {e}"))
                return
            if n == 0:
                got.append(("closed", st, "closed by peer"))
                return
            budget -= n
            if st.frame is None:
                st.hdr_got += n
                if st.hdr_got < len(st.hdr):
                    continue
                try:
                    h = wire.decode_header(st.hdr)
                except wire.WireError as e:
                    got.append(("bad", st, e))
                    return
                # np.empty: no zero fill; the frame is read straight into it
                st.frame = np.empty(len(st.hdr) + h.length, np.uint8)
                st.frame[:len(st.hdr)] = st.hdr
                st.frame_got = len(st.hdr)
                st.hdr_got = 0
            else:
                st.frame_got += n
            if st.frame_got < len(st.frame):
                continue
            frame, st.frame = st.frame, None
            if st.state == "up":
                got.append(("frame", st, frame))
            else:
                got.append(("handshake", st, frame))
                return  # the handshake decides whether this stream may say more

    def _handshake_frame(self, st: _Stream, frame: np.ndarray, now: float) -> list:
        try:
            h, body = wire.decode(frame)
        except wire.WireError as e:
            return self._bad_frame(st, e, now)
        acts = self._handshake(st, h, body, now)
        if st.sock in self._streams and st.state == "up":
            more: list = []
            self._read(st, more)  # frames that came right behind the handshake
            for what, s2, f in more:
                if what == "frame":
                    acts += self.transport.on_frame(s2.link, f, now)
                elif what == "bad":
                    acts += self._bad_frame(s2, f, now)
                elif what == "closed":
                    acts += self._drop(s2, f, now)
        return acts

    def _bad_frame(self, st: _Stream, e: wire.WireError, now: float) -> list:
        if st.state != "up":
            self.counters["auth_failed"] += 1
            return self._drop(st, f"not a ReCCL handshake: {e}", now)
        self.transport.counters["malformed"] += 1
        return self._drop(st, f"malformed frame: {e}", now)

    def _write_touched(self) -> None:
        touched, self._touched = self._touched, set()
        for st in touched:
            if st.sock in self._streams and not st.want_write:
                self._pump_writes(st)

    def _pump_writes(self, st: _Stream) -> None:
        """Write queued frames (control first) until the socket is full; a failure is
        queued for the transport (`_write_failed`), which hears of it under its lock."""
        while True:
            if not st.cur:
                if st.ctrl:
                    st.cur = [memoryview(p).cast("B") for p in st.ctrl.popleft() if len(p)]
                elif st.data:
                    st.cur = [memoryview(p).cast("B") for p in st.data.popleft() if len(p)]
                else:
                    self._set_write(st, False)
                    return
            try:
                n = st.sock.sendmsg(st.cur)
            except (BlockingIOError, InterruptedError):
                self._set_write(st, True)
                return
            except OSError as e:
                self.counters["send_errors"] += 1
                st.ctrl.clear()
                st.data.clear()
                st.cur = []
                self._set_write(st, False)
                with self._mail:
                    self._write_failed.append((st, f"write failed: {e}"))
                self._wake()
                return
            while n:
                head = st.cur[0]
                if n >= len(head):
                    n -= len(head)
                    st.cur.pop(0)
                else:
                    st.cur[0] = head[n:]
                    n = 0

    # --------------------------------------------------------------- actions

    def _apply(self, acts: list, now: float) -> list:
        """Carry out the socket actions (under the transport lock, in transport order);
        return the ones for the caller's side (deliveries, events, failures)."""
        rest = []
        queue = deque(acts)
        while queue:
            a = queue.popleft()
            if isinstance(a, Transmit):
                st = self._links.get(a.link)
                if st is None or (a.link[1] != IPC_LINK and a.link[1] in self._blackhole):
                    continue
                (st.ctrl if a.control else st.data).append(a.parts)
                self._touched.add(st)
            elif isinstance(a, Connect):
                queue.extend(self._connect(a.link, now))
            elif isinstance(a, Close):
                st = self._links.get(a.link)
                if st is not None:
                    self._drop(st, a.reason, now, report=False)
            else:
                rest.append(a)
        return rest

    def _execute(self, acts: list) -> None:
        delivered = False
        for a in acts:
            if isinstance(a, Deliver):
                with self._mail:
                    self._box.setdefault((a.peer, a.tag), deque()).append(a.data)
                delivered = True
            elif isinstance(a, Event):
                self.events.append(a)
                if self.on_event:
                    try:
                        self.on_event(a)
                    except Exception:  # a caller's callback must not kill the I/O thread
                        log.exception("rank %d: event callback failed", self.me)
            elif isinstance(a, PeerFailed):
                with self._mail:
                    self._peer_error[a.peer] = a.error
                delivered = True
            elif isinstance(a, PeerRecovered):
                with self._mail:
                    self._peer_error.pop(a.peer, None)
        if delivered:
            with self._mail:
                self._mail.notify_all()
