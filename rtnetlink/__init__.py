"""Link state from rtnetlink (netlink(7), rtnetlink(7)), followed in one place.

softswitch (its ports), SyncMesh (its switch's ports) and ReCCL (its NICs)
each follow carrier the same way: ``LinkWatch`` opens a NETLINK_ROUTE socket
subscribed to RTMGRP_LINK (in a named network namespace if asked), dumps
every link on that same socket, and from then on reads one message per
change. They share the parser and the carrier rule (``has_carrier``: IFF_UP
and IFF_LOWER_UP) so that the three agree.

The socket is made here rather than with pyroute2 because a socket in another
namespace must not fork a process (pyroute2 forks a helper; forking a process
that runs gRPC threads is unsafe): a short-lived thread enters the namespace
with setns(2), creates the socket, which stays in that namespace, and ends.
Subscribing before the dump on the same socket means no change can fall
between the two. Requests that change links or read addresses use pyroute2.
"""

from __future__ import annotations

import ctypes
import os
import select
import socket
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

RTMGRP_LINK = 0x1
RTM_NEWLINK, RTM_DELLINK, RTM_GETLINK = 16, 17, 18
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
IFLA_IFNAME = 3
IFF_UP = 0x1
IFF_LOWER_UP = 0x10000
CLONE_NEWNET = 0x40000000
RECV_SIZE = 1 << 16
NLMSGHDR = struct.Struct("=IHHII")  # len, type, flags, seq, pid
IFINFOMSG = struct.Struct("=BxHiII")  # family, type, index, flags, change
RTATTR = struct.Struct("=HH")  # len, type


def has_carrier(flags: int) -> bool:
    """Administratively up and with carrier (IFF_UP and IFF_LOWER_UP)."""
    return bool(flags & IFF_UP) and bool(flags & IFF_LOWER_UP)


class LinkMessage(NamedTuple):
    """One link message; ``kind`` NLMSG_DONE marks the end of a dump."""

    kind: int
    index: int  # type: ignore[assignment]  # rtnetlink's name; shadows tuple.index on purpose
    name: str | None
    flags: int

    @property
    def carrier(self) -> bool:
        """True when the link exists, is up and has carrier."""
        return self.kind == RTM_NEWLINK and has_carrier(self.flags)


def parse_links(data: bytes) -> Iterator[LinkMessage]:
    """Link messages of a netlink datagram; raises OSError for an NLMSG_ERROR reply."""
    off = 0
    while off + NLMSGHDR.size <= len(data):
        length, mtype, _flags, _seq, _pid = NLMSGHDR.unpack_from(data, off)
        if length < NLMSGHDR.size or off + length > len(data):
            break
        if mtype in (RTM_NEWLINK, RTM_DELLINK) and length >= NLMSGHDR.size + IFINFOMSG.size:
            body = off + NLMSGHDR.size
            _fam, _typ, index, flags, _change = IFINFOMSG.unpack_from(data, body)
            name = None
            attr = body + IFINFOMSG.size
            while attr + RTATTR.size <= off + length:
                alen, atype = RTATTR.unpack_from(data, attr)
                if alen < RTATTR.size:
                    break
                if atype == IFLA_IFNAME:
                    name = data[attr + RTATTR.size:attr + alen].split(b"\0", 1)[0].decode()
                attr += (alen + 3) & ~3
            yield LinkMessage(mtype, index, name, flags)
        elif mtype == NLMSG_DONE:
            yield LinkMessage(NLMSG_DONE, 0, None, 0)
        elif mtype == NLMSG_ERROR:
            (err,) = struct.unpack_from("=i", data, off + NLMSGHDR.size)
            if err:
                raise OSError(-err, f"netlink: {os.strerror(-err)}")
        off += (length + 3) & ~3


def open_link_socket(netns: str | None = None) -> socket.socket:
    """A NETLINK_ROUTE socket subscribed to RTMGRP_LINK, in namespace ``netns``
    (a name under /run/netns, as ``ip netns`` makes) or in the caller's."""

    def make() -> socket.socket:
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
        try:
            s.bind((0, RTMGRP_LINK))  # port id 0: the kernel picks a unique one
        except BaseException:
            s.close()
            raise
        return s

    if netns is None:
        return make()
    result: list[socket.socket | BaseException] = []

    def in_namespace() -> None:
        # setns(2) moves only this thread; it ends right after, the socket stays
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            with open(f"/run/netns/{netns}") as target:
                if libc.setns(target.fileno(), CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns into {netns!r}: {os.strerror(err)}")
            result.append(make())
        except BaseException as e:  # handed to the caller's thread
            result.append(e)

    t = threading.Thread(target=in_namespace, name=f"netns-{netns}")
    t.start()
    t.join()
    if isinstance(result[0], BaseException):
        raise result[0]
    return result[0]


@dataclass(frozen=True)
class Link:
    """The last known state of one link."""

    index: int
    name: str | None
    carrier: bool


class LinkWatch:
    """Every link's carrier, from one subscribed socket: the dump, then the changes.

    ``read()`` drains what the kernel sent (without blocking) and returns the
    links whose carrier changed; ``fileno()`` goes into a selector or an
    event loop. A link that disappears (RTM_DELLINK) has no carrier.
    """

    def __init__(self, netns: str | None = None, timeout: float = 5.0) -> None:
        self.sock = open_link_socket(netns)
        self.links: dict[int, Link] = {}
        try:
            self._dump(timeout)
        except BaseException:
            self.sock.close()
            raise
        self.sock.setblocking(False)

    def _dump(self, timeout: float) -> None:
        request = NLMSGHDR.pack(NLMSGHDR.size + IFINFOMSG.size, RTM_GETLINK,
                                NLM_F_REQUEST | NLM_F_DUMP, 1, 0) + \
            IFINFOMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0)
        self.sock.sendall(request)
        done = False
        while not done:
            ready, _, _ = select.select([self.sock], [], [], timeout)
            if not ready:
                raise TimeoutError(f"netlink: no end of the link dump within {timeout} s")
            for msg in parse_links(self.sock.recv(RECV_SIZE)):
                if msg.kind == NLMSG_DONE:
                    done = True
                else:  # dump entries and changes come in order: apply them as they come
                    self._apply(msg)

    def _apply(self, msg: LinkMessage) -> Link | None:
        """Record a message; the link's new state if its carrier (or its name) changed."""
        if msg.kind not in (RTM_NEWLINK, RTM_DELLINK):
            return None
        old = self.links.get(msg.index)
        name = msg.name if msg.name is not None else (old.name if old else None)
        new = Link(msg.index, name, msg.carrier)
        if msg.kind == RTM_DELLINK:
            self.links.pop(msg.index, None)
        else:
            self.links[msg.index] = new
        return new if old is None or old.carrier != new.carrier or old.name != new.name \
            else None

    def fileno(self) -> int:
        """The netlink socket, for a selector or an event loop."""
        return self.sock.fileno()

    def read(self) -> list[Link]:
        """Drain pending messages; the links that appeared, vanished or changed carrier."""
        changed: list[Link] = []
        while True:
            try:
                buf = self.sock.recv(RECV_SIZE)
            except (BlockingIOError, InterruptedError):
                return changed
            for msg in parse_links(buf):
                link = self._apply(msg)
                if link is not None:
                    changed.append(link)

    def carrier(self, name: str) -> bool:
        """Carrier of the link called ``name``; a missing link has none."""
        return any(lk.carrier for lk in self.links.values() if lk.name == name)

    def by_name(self) -> dict[str, bool]:
        """{interface name: carrier} of every known link."""
        return {lk.name: lk.carrier for lk in self.links.values() if lk.name is not None}

    def close(self) -> None:
        """Close the socket."""
        self.sock.close()

    def __enter__(self) -> LinkWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
