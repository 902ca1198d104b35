"""The I/O side of a rank: listening sockets, authenticated links, netlink, threads.

Everything protocol-related happens in `reccl.transport.Transport`; this layer
opens and accepts the links it asks for (TCP bound to one NIC per rail, a Unix
stream socket between ranks of one host), authenticates every one with the job
secret (`reccl.auth`) before a single frame of it reaches the transport, reads
and writes length-prefixed frames without extra copies, feeds the transport
link events, frames, carrier changes and clock ticks, and blocks callers until
their messages arrive.

Threads: every link has a writer and a reader thread doing blocking socket
calls (the GIL is released for the whole copy, and both directions of a link
and all links run at once: measured 1.5-2x a single select loop on loopback,
see docs/reccl.md); one service thread accepts, runs the handshakes' timers,
watches netlink and runs the transport's timers. The transport itself is
guarded by one lock; frames are queued for the writers under that lock, so
each link carries them in the order the transport made them.
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import cast

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
RELEASE_WAIT = 0.005
"""Longest wait for outstanding acknowledgements when a collective ends (see `operation`)."""
MAX_HANDSHAKES = 64
"""Unauthenticated connections in progress at once; more are refused (and counted)."""


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
    """One authenticated socket of a link: its writer queue and its two threads."""

    def __init__(self, sock: socket.socket, link: Link, role: str) -> None:
        self.sock = sock
        self.link = link
        self.role = role
        self.ctrl: deque = deque()
        self.data: deque = deque()
        self.cv = threading.Condition()
        self.closed = False

    def put(self, parts: list, control: bool) -> None:
        with self.cv:
            (self.ctrl if control else self.data).append(parts)
            self.cv.notify()


class Endpoint:
    """One rank's transport plus its sockets and threads."""

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
                         "links_accepted": 0, "links_connected": 0, "refused": 0}
        self._lock = threading.Lock()
        """Guards the transport and the link table."""
        self._mail = threading.Condition()
        self._box: dict[tuple[int, int], deque] = {}
        self._peer_error: dict[int, str] = {}
        self._blackhole: set[int] = set()
        self._links: dict[Link, _Stream] = {}
        self._handshakes = 0
        self._stop = False
        self._acked = threading.Condition(self._lock)
        """Notified when acknowledgements arrive (see `operation`)."""
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
        self._threads: list[threading.Thread] = []
        self._service = threading.Thread(target=self._guard, args=(self._serve,),
                                         name=f"reccl-svc-{me}", daemon=True)

    def start(self) -> None:
        """Apply the NICs' current link state, open this rank's links, start the threads."""
        now = self.clock()
        with self._lock:
            acts: list = []
            if self.links:
                for rail, name in enumerate(self.ifnames):
                    if name and not self.links.state.get(name, True):
                        acts += self.transport.set_nic(rail, False, now)
            acts += self.transport.start(now)
            rest = self._apply(acts)
        self._execute(rest)
        self._service.start()

    def wait_connected(self, timeout: float) -> list[str]:
        """Wait until every link that can connect has connected once; returns the links
        still missing after `timeout`."""
        end = time.monotonic() + timeout
        while True:
            with self._lock:
                down = self.transport.pending_links()
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
        see `Transport.send`; `operation` releases borrowed buffers when it ends."""
        with self._lock:
            try:
                acts = self.transport.send(peer, tag, data, self.clock(), borrow)
            except PeerUnreachable as e:
                raise ReCCLError(str(e), rank=self.me, peer=peer) from None
            rest = self._apply(acts)
        self._execute(rest)

    def recv(self, peer: int, tag: int, timeout: float | None = None
             ) -> bytes | bytearray | memoryview:
        """Wait for the message `tag` from `peer`; on timeout the error says what was last
        heard from the peer on every channel."""
        key = (peer, tag)
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._mail:
            box = self._box.get(key)
            if box:
                return self._take(key, box)
        with self._lock:
            self.transport.watch(peer, True, self.clock())
        try:
            with self._mail:
                while True:
                    box = self._box.get(key)
                    if box:
                        return self._take(key, box)
                    if peer in self._peer_error:
                        raise ReCCLError(self._peer_error[peer], rank=self.me, peer=peer)
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        break
                    self._mail.wait(left if left is not None else 1.0)
            with self._lock:
                heard = self.transport.describe_peer(peer, self.clock())
            raise ReCCLError(f"rank {self.me}: timeout after {timeout} s waiting for message "
                             f"{tag:#x} from rank {peer} (slow or stopped peer); {heard}",
                             rank=self.me, peer=peer)
        finally:
            with self._lock:
                self.transport.watch(peer, False, self.clock())

    def _take(self, key: tuple[int, int], box: deque) -> bytes | bytearray | memoryview:
        data = box.popleft()
        if not box:
            del self._box[key]
        return data

    @contextlib.contextmanager
    def operation(self) -> Iterator[None]:
        """Around a collective: afterwards, buffers it lent to the transport are copied
        where a chunk may still need resending, so the caller may change them. The last
        acknowledgements are usually a fraction of a millisecond away: waiting up to
        RELEASE_WAIT for them is cheaper than copying the last slices."""
        try:
            yield
        finally:
            end = time.monotonic() + RELEASE_WAIT
            with self._acked:
                while self.transport.borrowing() and time.monotonic() < end:
                    self._acked.wait(max(0.0, end - time.monotonic()))
                self.transport.release()

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
        """Fault injection without root: black-hole a NIC (frames on its links vanish both
        ways, no new link on it), and tell the transport unless `silent`."""
        with self._lock:
            if up:
                self._blackhole.discard(rail)
            else:
                self._blackhole.add(rail)
            rest = self._apply(self.transport.set_nic(rail, up, self.clock())) \
                if not silent else []
        self._execute(rest)

    def close(self) -> None:
        """Stop the threads and close the sockets."""
        with self._lock:
            self._stop = True
            streams = list(self._links.values())
            self._links.clear()
        self._wake()
        for st in streams:
            self._shut(st)
        end = time.monotonic() + 5.0  # one deadline for all: connects may be hanging
        for t in [self._service, *self._threads]:
            if t.is_alive() and t is not threading.current_thread():
                t.join(timeout=max(0.0, end - time.monotonic()))
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

    # --------------------------------------------------------- service thread

    def _guard(self, fn: Callable, *args: object) -> None:
        try:
            fn(*args)
        except Exception as e:  # a bug here must surface as errors, not as a hang
            if self._stop:
                return
            log.exception("rank %d: I/O thread failed", self.me)
            with self._mail:
                for peer in self.transport.conns:
                    self._peer_error.setdefault(peer, f"rank {self.me}: I/O thread failed: "
                                                      f"{type(e).__name__}: {e}")
                self._mail.notify_all()

    def _serve(self) -> None:
        """Accept connections, follow netlink, run the transport's timers."""
        tr = self.transport
        while not self._stop:
            with self._lock:
                deadline = tr.next_deadline()
            now = self.clock()
            wait = 0.05 if deadline is None else min(0.05, max(0.0, deadline - now))
            ready = self._sel.select(wait)
            ready.sort(key=lambda kv: kv[0].data[0] != "netlink")  # carrier first
            if self._stop:
                return
            acts: list = []
            for key, _ in ready:
                kind, arg = key.data
                if kind == "wake":
                    try:
                        while self._wake_r.recv(4096):
                            pass
                    except (BlockingIOError, InterruptedError):
                        pass
                elif kind == "listen":
                    self._accept(cast(socket.socket, key.fileobj), arg)
                elif kind == "netlink":
                    with self._lock:
                        acts += self._link_changes(self.clock())
            with self._lock:
                now = self.clock()
                deadline = tr.next_deadline()
                if deadline is not None and deadline <= now:
                    acts += tr.on_tick(now)
                rest = self._apply(acts)
            self._execute(rest)

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

    def _spawn(self, fn: Callable, *args: object, name: str) -> None:
        t = threading.Thread(target=self._guard, args=(fn, *args), name=name, daemon=True)
        self._threads = [x for x in self._threads if x.is_alive()]
        self._threads.append(t)
        t.start()

    # --------------------------------------------------------------- handshake

    def _accept(self, listener: socket.socket, rail: int) -> None:
        for _ in range(16):
            try:
                s, _ = listener.accept()
            except OSError:
                return
            if (rail != IPC_LINK and rail in self._blackhole) or \
                    self._handshakes >= MAX_HANDSHAKES:
                self.counters["refused"] += 1
                s.close()
                continue
            with self._lock:
                self._handshakes += 1
            self._spawn(self._server_handshake, s, rail, name=f"reccl-hs-{self.me}")

    def _connect(self, link: Link) -> None:
        """Thread: open `link`, authenticate it, then run it."""
        nbr, rail = link
        try:
            if rail == IPC_LINK:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                target: object = ipc_address(self.topo.ranks[nbr].ipc)
            else:
                if rail in self._blackhole:
                    raise OSError("nic black-holed (test)")
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                _tune(s)
                s.bind((self.topo.ranks[self.me].nics[rail][0], 0))  # leave through this NIC
                target = self.topo.ranks[nbr].nics[rail]
            s.settimeout(HANDSHAKE_TIMEOUT)
            try:
                s.connect(target)  # type: ignore[arg-type]
                chan = wire.IPC_RAIL if rail == IPC_LINK else rail
                nonce_c = auth.nonce()
                s.sendall(wire.encode(wire.Header(wire.HELLO, self.me, nbr, chan),
                                      wire.Hello(self.session, nonce_c)))
                h, body = _read_frame(s)
                if not isinstance(body, wire.Challenge):
                    raise auth.AuthError(f"expected CHALLENGE, got {wire.TYPE_NAMES[h.type]}")
                auth.check(auth.link_proof(self.secret, "server", self.session, self.me, nbr,
                                           chan, nonce_c, body.nonce), body.proof,
                           f"link to rank {nbr}")
                proof = auth.link_proof(self.secret, "client", self.session, self.me, nbr, chan,
                                        nonce_c, body.nonce)
                s.sendall(wire.encode(wire.Header(wire.AUTH, self.me, nbr, chan),
                                      wire.Auth(proof)))
            except BaseException:
                s.close()
                raise
        except (OSError, wire.WireError, auth.AuthError) as e:
            if isinstance(e, auth.AuthError | wire.WireError):
                self.counters["auth_failed"] += 1
            elif isinstance(e, TimeoutError):
                self.counters["handshake_timeouts"] += 1
            with self._lock:
                rest = self._apply(self.transport.connect_failed(link, str(e) or
                                                                 type(e).__name__,
                                                                 self.clock()))
            self._execute(rest)
            return
        self._run_link(s, link, "client")

    def _server_handshake(self, s: socket.socket, rail: int) -> None:
        """Thread: authenticate an accepted connection, then run it."""
        try:
            s.settimeout(HANDSHAKE_TIMEOUT)
            h, body = _read_frame(s)
            if not isinstance(body, wire.Hello):
                raise auth.AuthError(f"first frame is {wire.TYPE_NAMES[h.type]}, not HELLO")
            chan_rail = IPC_LINK if h.channel == wire.IPC_RAIL else h.channel
            if body.session != self.session or h.dst != self.me or \
                    not 0 <= h.src < self.topo.world or h.src == self.me or chan_rail != rail:
                raise auth.AuthError(f"HELLO for session {body.session:#x} rank {h.dst} rail "
                                     f"{h.channel} from rank {h.src} does not fit")
            nonce_s = auth.nonce()
            proof = auth.link_proof(self.secret, "server", self.session, h.src, self.me,
                                    h.channel, body.nonce, nonce_s)
            s.sendall(wire.encode(wire.Header(wire.CHALLENGE, self.me, h.src, h.channel),
                                  wire.Challenge(nonce_s, proof)))
            h2, body2 = _read_frame(s)
            if not isinstance(body2, wire.Auth):
                raise auth.AuthError(f"expected AUTH, got {wire.TYPE_NAMES[h2.type]}")
            auth.check(auth.link_proof(self.secret, "client", self.session, h.src, self.me,
                                       h.channel, body.nonce, nonce_s), body2.proof,
                       f"link from rank {h.src}")
        except (OSError, wire.WireError, auth.AuthError) as e:
            if isinstance(e, TimeoutError):
                self.counters["handshake_timeouts"] += 1
            else:
                self.counters["auth_failed"] += 1
            log.warning("rank %d: rejected a connection: %s", self.me, e)
            s.close()
            return
        finally:
            with self._lock:
                self._handshakes -= 1
        self._run_link(s, (h.src, chan_rail), "server")

    # ------------------------------------------------------------------ links

    def _run_link(self, s: socket.socket, link: Link, role: str) -> None:
        """Thread: install an authenticated socket as `link`, start its writer, read."""
        s.settimeout(None)
        st = _Stream(s, link, role)
        with self._lock:
            if self._stop:
                s.close()
                return
            acts: list = []
            old = self._links.get(link)
            if old is not None:
                acts += self._unlink(old, "replaced by a new connection")
            self._links[link] = st
            self.counters["links_connected" if role == "client" else "links_accepted"] += 1
            acts += self.transport.link_up(link, self.clock())
            rest = self._apply(acts)
        self._execute(rest)
        self._spawn(self._writer, st, name=f"reccl-tx-{self.me}-{link[0]}.{link[1]}")
        self._reader(st)

    def _unlink(self, st: _Stream, reason: str, report: bool = True) -> list:
        """Under the lock: forget a stream and close it; the transport hears of it."""
        if self._links.get(st.link) is not st:
            return []
        del self._links[st.link]
        self._shut(st)
        return self.transport.link_down(st.link, reason, self.clock()) if report else []

    def _shut(self, st: _Stream) -> None:
        with st.cv:
            st.closed = True
            st.ctrl.clear()
            st.data.clear()
            st.cv.notify_all()
        try:
            st.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        try:
            st.sock.shutdown(socket.SHUT_RDWR)  # wakes the reader blocked in recv
        except OSError:
            pass

    def _lost(self, st: _Stream, reason: str) -> None:
        with self._lock:
            rest = self._apply(self._unlink(st, reason))
        self._execute(rest)

    def _reader(self, st: _Stream) -> None:
        hdr = bytearray(wire.HEADER.size)
        hv = memoryview(hdr)
        sock, tr = st.sock, self.transport
        try:
            while not st.closed:
                if not _recv_exact(sock, hv):
                    return self._lost(st, "closed by peer")
                try:
                    h = wire.decode_header(memoryview(hdr))
                except wire.WireError as e:
                    tr.counters["malformed"] += 1
                    return self._lost(st, f"malformed frame: {e}")
                # np.empty: no zero fill; the body is read straight into the frame
                frame = np.empty(len(hdr) + h.length, np.uint8)
                frame[:len(hdr)] = hdr
                if not _recv_exact(sock, frame.data[len(hdr):]):
                    return self._lost(st, "closed by peer")
                if st.link[1] != IPC_LINK and st.link[1] in self._blackhole:
                    continue
                with self._lock:
                    if self._links.get(st.link) is not st:
                        return None
                    now = self.clock()
                    acts = tr.on_frame(st.link, cast(memoryview, frame), now)  # a uint8 array
                    acts += tr.flush(now)
                    rest = self._apply(acts)
                    if h.type == wire.ACK:
                        self._acked.notify_all()
                self._execute(rest)
        except OSError as e:
            if not st.closed:
                self._lost(st, f"read failed: {e}")
        finally:
            sock.close() if st.closed else None
        return None

    def _writer(self, st: _Stream) -> None:
        sock = st.sock
        while True:
            with st.cv:
                while not (st.ctrl or st.data or st.closed):
                    st.cv.wait()
                if st.closed:
                    return
                parts = (st.ctrl or st.data).popleft()
            if st.link[1] != IPC_LINK and st.link[1] in self._blackhole:
                continue
            try:
                _send_all(sock, parts)
            except OSError as e:
                if not st.closed:
                    self.counters["send_errors"] += 1
                    self._lost(st, f"write failed: {e}")
                return

    # --------------------------------------------------------------- actions

    def _apply(self, acts: list) -> list:
        """Under the lock: carry out the socket actions in transport order (frames are
        queued for the writers, so each link keeps that order); return the rest."""
        rest = []
        queue = deque(acts)
        while queue:
            a = queue.popleft()
            if isinstance(a, Transmit):
                st = self._links.get(a.link)
                if st is not None:
                    st.put(a.parts, a.control)
            elif isinstance(a, Connect):
                if not self._stop:
                    self._spawn(self._connect, a.link, name=f"reccl-conn-{self.me}")
            elif isinstance(a, Close):
                st = self._links.get(a.link)
                if st is not None:
                    queue.extend(self._unlink(st, a.reason, report=False))
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


def _recv_exact(sock: socket.socket, buf: memoryview) -> bool:
    """Fill `buf` from the socket; False on a clean end of stream."""
    got, n = 0, len(buf)
    while got < n:
        k = sock.recv_into(buf[got:])
        if k == 0:
            return False
        got += k
    return True


def _send_all(sock: socket.socket, parts: list) -> None:
    bufs = [memoryview(p).cast("B") for p in parts if len(p)]
    while bufs:
        n = sock.sendmsg(bufs)
        while n:
            if n >= len(bufs[0]):
                n -= len(bufs.pop(0))
            else:
                bufs[0] = bufs[0][n:]
                n = 0


def _read_frame(sock: socket.socket) -> tuple[wire.Header, wire.Body]:
    """Read one whole handshake frame (bounded: handshake frames are tiny)."""
    hdr = bytearray(wire.HEADER.size)
    if not _recv_exact(sock, memoryview(hdr)[:2]):
        raise OSError("closed during the handshake")
    if hdr[:2] != wire.MAGIC:  # not ReCCL at all: no need to wait for a whole header
        raise wire.WireError("bad magic at byte 0 (not a ReCCL frame)", foreign=True)
    if not _recv_exact(sock, memoryview(hdr)[2:]):
        raise OSError("closed during the handshake")
    h = wire.decode_header(memoryview(hdr))
    if h.length > 256:
        raise wire.WireError(f"handshake frame of {h.length} bytes")
    body = bytearray(h.length)
    if not _recv_exact(sock, memoryview(body)):
        raise OSError("closed during the handshake")
    return wire.decode(bytes(hdr) + bytes(body))
