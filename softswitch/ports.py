"""Switch ports on Linux interfaces: raw AF_PACKET sockets and netlink link state.

Each port is an AF_PACKET/SOCK_RAW socket bound to one interface. Frames the switch
sends are never read back on the same socket: PACKET_IGNORE_OUTGOING (Linux 4.20+)
is set, and frames of type PACKET_OUTGOING are skipped as well for older kernels.
Link state comes from `rtnetlink.LinkWatch` (shared with SyncMesh and ReCCL): the
initial dump and then the changes on one subscribed socket, read by the same selector
loop as the ports, so a change is seen as soon as the kernel announces it. A port is
up when its interface is administratively up and has carrier (IFF_UP and
IFF_LOWER_UP); each change is counted and reported through `on_link(port, up)`.
"""

from __future__ import annotations

import errno
import logging
import selectors
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from rtnetlink import LinkWatch

log = logging.getLogger("softswitch.ports")

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_STATISTICS = 6
PACKET_IGNORE_OUTGOING = 23
PACKET_OUTGOING = 4
_MAX_FRAME = 65536 + 64


class PortError(Exception):
    """A port cannot be opened (unknown interface, no permission, bad mapping)."""


@dataclass
class PortCounters:
    """Per-port counters."""

    rx_packets: int = 0
    rx_bytes: int = 0
    tx_packets: int = 0
    tx_bytes: int = 0
    tx_drops: int = 0  # send failed (link down, buffer full)
    rx_kernel_drops: int = 0  # dropped by the kernel before we read them
    rx_truncated: int = 0  # rings: larger than an RX block, counted and dropped
    link_changes: int = 0

    def as_dict(self) -> dict[str, int]:
        """The counters as a plain dict."""
        return dict(self.__dict__)


@dataclass
class Port:
    """One data-plane port bound to a Linux interface."""

    number: int
    ifname: str
    ifindex: int = 0
    up: bool = False
    counters: PortCounters = field(default_factory=PortCounters)
    sock: socket.socket | None = None


def parse_port_map(specs: list[str]) -> dict[int, str]:
    """Parse `-i PORT@IFNAME` options (simple_switch syntax) into {port: ifname}."""
    out: dict[int, str] = {}
    for spec in specs:
        num, sep, name = spec.partition("@")
        if not sep or not name or not num.isdigit():
            raise PortError(f"bad interface option {spec!r}: expected PORT@IFNAME, e.g. 1@veth1")
        port = int(num)
        if port in out:
            raise PortError(f"port {port} given twice ({out[port]} and {name})")
        if name in out.values():
            raise PortError(f"interface {name} given twice")
        out[port] = name
    return out


class PortSet:
    """The ports of a switch: packet receive loop, transmit, link watcher."""

    io = "sockets"

    def __init__(
        self,
        mapping: dict[int, str],
        on_packet: Callable[[int, bytes], None],
        on_link: Callable[[int, bool], None] = lambda port, up: None,
    ) -> None:
        self.ports = {n: Port(n, name) for n, name in sorted(mapping.items())}
        self.on_packet = on_packet
        self.on_link = on_link
        self._by_fd: dict[int, Port] = {}
        self._by_ifindex: dict[int, Port] = {}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._wake_r, self._wake_w = socket.socketpair()
        self._links: LinkWatch | None = None

    # ---- lifecycle -------------------------------------------------------------------

    def open(self) -> None:
        """Open every port socket and read the initial link state; PortError on failure."""
        try:
            for port in self.ports.values():
                try:
                    port.ifindex = socket.if_nametoindex(port.ifname)
                except OSError as exc:
                    raise PortError(f"port {port.number}: no interface {port.ifname!r}") from exc
                s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
                try:
                    s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
                except OSError:
                    pass  # old kernel: outgoing frames are filtered by pkttype below
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
                s.bind((port.ifname, ETH_P_ALL))
                s.setblocking(False)
                port.sock = s
                self._by_fd[s.fileno()] = port
                self._by_ifindex[port.ifindex] = port
            self._links = LinkWatch()  # subscribed, then dumped: no change is missed
            for link in self._links.links.values():
                known = self._by_ifindex.get(link.index)
                if known is not None:
                    known.up = link.carrier
        except PermissionError as exc:
            self.close()
            raise PortError(f"raw sockets need root (CAP_NET_RAW): {exc}") from exc
        except BaseException:
            self.close()
            raise

    def start(self) -> None:
        """Start the receive and link-watch threads."""
        t = threading.Thread(target=self._rx_loop, name="ports-rx", daemon=True)
        t.start()
        self._threads.append(t)

    def close(self) -> None:
        """Stop the threads and close every socket."""
        self._stop.set()
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        for t in self._threads:
            t.join(timeout=2)
        self._threads.clear()
        if self._links is not None:
            self._links.close()
            self._links = None
        for port in self.ports.values():
            if port.sock is not None:
                port.sock.close()
                port.sock = None
        self._by_fd.clear()

    # ---- data path -------------------------------------------------------------------

    def send(self, number: int, data: bytes) -> None:
        """Transmit a frame on a port; failures are counted as tx drops."""
        port = self.ports.get(number)
        if port is None or port.sock is None:
            return
        try:
            port.sock.send(data)
            port.counters.tx_packets += 1
            port.counters.tx_bytes += len(data)
        except OSError as exc:
            port.counters.tx_drops += 1
            if exc.errno not in (errno.ENETDOWN, errno.ENXIO, errno.EAGAIN, errno.ENOBUFS):
                log.warning("port=%d ifname=%s tx_error=%s", number, port.ifname, exc)

    def _rx_loop(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self._wake_r, selectors.EVENT_READ)
        if self._links is not None:
            sel.register(self._links.fileno(), selectors.EVENT_READ, "netlink")
        for port in self.ports.values():
            if port.sock is not None:
                sel.register(port.sock, selectors.EVENT_READ, port)
        try:
            while not self._stop.is_set():
                for key, _ in sel.select():
                    port = key.data
                    if port is None:
                        return
                    if port == "netlink":
                        self._read_netlink()
                    else:
                        self._drain(port)
        finally:
            sel.close()

    def _drain(self, port: Port) -> None:
        sock = port.sock
        if sock is None:
            return
        for _ in range(64):  # bounded so that one busy port does not starve the others
            try:
                data, addr = sock.recvfrom(_MAX_FRAME)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # interface down or gone: the link watcher reports it
                if exc.errno not in (errno.ENETDOWN, errno.ENXIO, errno.ENODEV):
                    log.warning("port=%d ifname=%s rx_error=%s", port.number, port.ifname, exc)
                return
            if addr[2] == PACKET_OUTGOING:
                continue
            port.counters.rx_packets += 1
            port.counters.rx_bytes += len(data)
            try:
                self.on_packet(port.number, data)
            except Exception:
                log.exception("port=%d packet_handler_failed", port.number)

    # ---- link state ------------------------------------------------------------------

    def _read_netlink(self) -> None:
        if self._links is None:
            return
        for link in self._links.read():
            self.link_event(link.index, link.carrier)

    def link_event(self, ifindex: int, up: bool) -> None:
        """Apply a link's carrier; report and count a change of a port's state."""
        port = self._by_ifindex.get(ifindex)
        if port is None:
            return
        if up == port.up:
            return
        port.up = up
        port.counters.link_changes += 1
        log.info("port=%d ifname=%s link=%s", port.number, port.ifname, "up" if up else "down")
        try:
            self.on_link(port.number, up)
        except Exception:
            log.exception("port=%d link_handler_failed", port.number)

    def sync_counters(self) -> None:
        """Bring each Port's counters up to date (sockets count in Python: nothing to do)."""

    def kernel_drops(self) -> dict[int, int]:
        """Refresh and return rx drops the kernel counted per port (PACKET_STATISTICS)."""
        for port in self.ports.values():
            if port.sock is not None:
                raw = port.sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)
                _, drops = struct.unpack("II", raw)
                port.counters.rx_kernel_drops += drops  # the kernel resets on read
        return {n: p.counters.rx_kernel_drops for n, p in self.ports.items()}
