"""The I/O side of a rank: sockets, the netlink link monitor and one I/O thread.

Everything protocol-related happens in `reccl.transport.Transport`; this layer
feeds it datagrams, link changes and clock ticks, executes the actions it
returns (send a datagram, hand a message to a waiting receive, record an
event), and blocks callers until their messages arrive.
"""

from __future__ import annotations

import errno
import logging
import selectors
import socket
import threading
import time
from collections import deque
from collections.abc import Callable

from .errors import ReCCLError
from .linkstate import LinkMonitor
from .topology import Topology
from .transport import (
    Deliver,
    Event,
    PeerFailed,
    PeerUnreachable,
    Transmit,
    Transport,
    TransportOptions,
)

log = logging.getLogger("reccl.endpoint")
MAX_DATAGRAM = 65535
SOCKET_BUFFER = 8 << 20


def ipc_address(name: str) -> str:
    """Linux abstract Unix socket address for an intra-host socket name."""
    return "\0" + name


def open_udp(ip: str, port: int = 0) -> socket.socket:
    """A non-blocking UDP socket bound to one NIC address, with large buffers."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    _grow_buffers(s)
    s.bind((ip, port))
    s.setblocking(False)
    return s


def open_ipc(name: str) -> socket.socket:
    """A non-blocking Unix datagram socket for the intra-host path."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    _grow_buffers(s)
    s.bind(ipc_address(name))
    s.setblocking(False)
    return s


def _grow_buffers(s: socket.socket) -> None:
    for force, plain in ((33, socket.SO_RCVBUF), (32, socket.SO_SNDBUF)):  # SO_*BUFFORCE
        try:
            s.setsockopt(socket.SOL_SOCKET, force, SOCKET_BUFFER)
        except OSError:
            s.setsockopt(socket.SOL_SOCKET, plain, SOCKET_BUFFER)


class Endpoint:
    """One rank's transport plus its sockets and I/O thread."""

    def __init__(self, me: int, topo: Topology, session: int, opts: TransportOptions,
                 nic_socks: list[socket.socket], ipc_sock: socket.socket,
                 ifnames: list[str | None], on_event: Callable[[Event], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.me = me
        self.topo = topo
        self.clock = clock
        self.transport = Transport(me, topo, session, opts, clock())
        self.nic_socks = nic_socks
        self.ipc_sock = ipc_sock
        self.ifnames = ifnames
        self.on_event = on_event
        self.events: list[Event] = []
        self.send_errors = 0
        self._lock = threading.Lock()
        self._mail = threading.Condition()
        self._box: dict[tuple[int, int], deque] = {}
        self._peer_error: dict[int, str] = {}
        self._blackhole: set[int] = set()
        self._outbox: deque = deque()
        self._stop = False
        self._sel = selectors.DefaultSelector()
        for rail, s in enumerate(nic_socks):
            self._sel.register(s, selectors.EVENT_READ, ("nic", rail))
        self._sel.register(ipc_sock, selectors.EVENT_READ, ("ipc", -1))
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
        self._sel.register(self._wake_r, selectors.EVENT_READ, ("wake", -1))
        self._thread = threading.Thread(target=self._loop, name=f"reccl-io-{me}", daemon=True)

    def start(self) -> None:
        """Start the I/O thread; apply the NICs' current link state."""
        if self.links:
            now = self.clock()
            with self._lock:
                acts = []
                for rail, name in enumerate(self.ifnames):
                    if name and not self.links.state.get(name, True):
                        acts += self.transport.set_nic(rail, False, now)
                acts = self._transmit_all(acts)
            self._execute(acts)
        self._thread.start()

    # ------------------------------------------------------------ user side

    def send(self, peer: int, tag: int, data: bytes | memoryview) -> None:
        """Queue a message; returns at once (delivery is the transport's job)."""
        self._check_peer(peer)
        with self._lock:
            try:
                acts = self.transport.send(peer, tag, data, self.clock())
            except PeerUnreachable as e:
                raise ReCCLError(str(e), rank=self.me, peer=peer) from None
            # The I/O thread sends: datagrams of one channel then leave from one thread
            # (and mostly one CPU), which keeps veth/RPS from reordering them.
            was_empty = not self._outbox
            self._outbox.extend(acts)
        if was_empty and acts:
            self._wake()

    def recv(self, peer: int, tag: int, timeout: float | None = None) -> bytes | bytearray:
        """Wait for the message `tag` from `peer`."""
        key = (peer, tag)
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._mail:
            box = self._box.get(key)
            if box:
                return self._take(key, box)
        with self._lock:
            self.transport.watch(peer, True, self.clock())
        self._wake()
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
                        raise ReCCLError(f"rank {self.me}: timeout after {timeout} s waiting "
                                         f"for message {tag:#x} from rank {peer}",
                                         rank=self.me, peer=peer)
                    self._mail.wait(left if left is not None else 1.0)
        finally:
            with self._lock:
                self.transport.watch(peer, False, self.clock())

    def _take(self, key: tuple[int, int], box: deque) -> bytes | bytearray:
        data = box.popleft()
        if not box:
            del self._box[key]
        return data

    def _check_peer(self, peer: int) -> None:
        with self._mail:
            err = self._peer_error.get(peer)
        if err:
            raise ReCCLError(err, rank=self.me, peer=peer)

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
        """Fault injection for tests without root: black-hole a NIC (and tell the transport
        unless `silent`, which leaves detection to the timeouts)."""
        if up:
            self._blackhole.discard(rail)
        else:
            self._blackhole.add(rail)
        if not silent:
            with self._lock:
                acts = self._transmit_all(self.transport.set_nic(rail, up, self.clock()))
            self._execute(acts)
        self._wake()

    def close(self) -> None:
        """Stop the I/O thread and close the sockets."""
        self._stop = True
        self._wake()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        for s in (*self.nic_socks, self.ipc_sock, self._wake_r, self._wake_w):
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
        tr = self.transport
        while not self._stop:
            with self._lock:
                deadline = tr.next_deadline()
            now = self.clock()
            timeout = 0.01 if deadline is None else min(0.01, max(0.0, deadline - now))
            ready = self._sel.select(timeout)
            acts: list = []
            # Link events first: a NIC going down must not wait behind a batch of data.
            ready.sort(key=lambda kv: kv[0].data[0] != "netlink")
            with self._lock:
                if self._outbox:
                    acts = self._transmit_all(list(self._outbox))
                    self._outbox.clear()
                now = self.clock()
                for key, _ in ready:
                    kind, rail = key.data
                    if kind == "wake":
                        self._drain_wake()
                    elif kind == "netlink":
                        acts += self._link_changes(now)
                    else:
                        acts += self._read(key.fileobj, rail, now)
                acts += tr.flush(now)
                deadline = tr.next_deadline()
                if deadline is not None and deadline <= now:
                    acts += tr.on_tick(now)
                acts = self._transmit_all(acts)
            self._execute(acts)

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

    def _read(self, sock: socket.socket, rail: int, now: float) -> list:
        acts: list = []
        for _ in range(64):
            try:
                data = sock.recv(MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break
            if rail in self._blackhole:
                continue
            acts += self.transport.on_datagram(data, now)
        return acts

    def _transmit_all(self, acts: list) -> list:
        """Send the datagrams now, under the transport lock, so that they leave in the order
        the transport numbered them (fast retransmit relies on it); return the rest."""
        rest = []
        for a in acts:
            if isinstance(a, Transmit):
                self._transmit(a)
            else:
                rest.append(a)
        return rest

    def _execute(self, acts: list) -> None:
        delivered = False
        for a in acts:
            if isinstance(a, Transmit):
                self._transmit(a)
            elif isinstance(a, Deliver):
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
                    self._peer_error.setdefault(a.peer, a.error)
                delivered = True
        if delivered:
            with self._mail:
                self._mail.notify_all()

    def _transmit(self, a: Transmit) -> None:
        try:
            if a.hop[0] == "ipc":
                self.ipc_sock.sendto(a.data, ipc_address(self.topo.ranks[a.hop[1]].ipc))
            else:
                rail = a.hop[1]
                if rail in self._blackhole:
                    return
                self.nic_socks[rail].sendto(a.data, a.hop[2])
        except BlockingIOError:
            self.send_errors += 1  # socket buffer full: the transport retransmits
        except OSError as e:
            self.send_errors += 1
            if e.errno not in (errno.ENETDOWN, errno.ENETUNREACH, errno.EHOSTUNREACH,
                               errno.ECONNREFUSED, errno.ENOENT, errno.EPERM):
                log.debug("rank %d: send on %s failed: %s", self.me, a.hop, e)
