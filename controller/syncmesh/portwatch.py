"""Port carrier of a switch's Linux interfaces, from rtnetlink (BMv2 and Mininet ports).

A software switch's ports are Linux interfaces; when the target does not
tell the controller about carrier changes, the daemon watches them itself.
Mininet names a switch's interfaces ``<switch>-eth<port>``, which
``mininet_names`` reproduces.

The netlink socket is opened directly (rtnetlink, RTM_GETLINK dump plus the
RTMGRP_LINK multicast group; see netlink(7), rtnetlink(7)). For a named
network namespace it is created by a short-lived thread that enters the
namespace with setns(2): a socket stays in the namespace it was made in, and
no process is forked (forking a process that runs gRPC is unsafe).
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import socket
import struct
import threading
from collections.abc import AsyncIterator, Iterator, Mapping

from topologies.fabric import Fabric

IFF_UP = 0x1
IFF_LOWER_UP = 0x10000
RTMGRP_LINK = 0x1
RTM_NEWLINK, RTM_DELLINK, RTM_GETLINK = 16, 17, 18
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
IFLA_IFNAME = 3
CLONE_NEWNET = 0x40000000
_NLMSGHDR = struct.Struct("=IHHII")  # len, type, flags, seq, pid
_IFINFOMSG = struct.Struct("=BxHiII")  # family, type, index, flags, change
_RTATTR = struct.Struct("=HH")


def mininet_names(fabric: Fabric, switch: str) -> dict[str, int]:
    """Interface name -> port for every used port of ``switch``, Mininet style."""
    return {f"{switch}-eth{port}": port for port in fabric.ports(switch)}


def parse_links(data: bytes) -> Iterator[tuple[int, str | None, int]]:
    """(message type, interface name, flags) of each link message in a netlink datagram."""
    off = 0
    while off + _NLMSGHDR.size <= len(data):
        length, mtype, _flags, _seq, _pid = _NLMSGHDR.unpack_from(data, off)
        if length < _NLMSGHDR.size:
            break
        if mtype in (RTM_NEWLINK, RTM_DELLINK):
            body = off + _NLMSGHDR.size
            _fam, _typ, _index, flags, _change = _IFINFOMSG.unpack_from(data, body)
            name = None
            attr = body + _IFINFOMSG.size
            while attr + _RTATTR.size <= off + length:
                alen, atype = _RTATTR.unpack_from(data, attr)
                if alen < _RTATTR.size:
                    break
                if atype == IFLA_IFNAME:
                    name = data[attr + 4:attr + alen].split(b"\0", 1)[0].decode()
                attr += (alen + 3) & ~3
            yield mtype, name, flags
        elif mtype == NLMSG_DONE:
            yield mtype, None, 0
        elif mtype == NLMSG_ERROR:
            (err,) = struct.unpack_from("=i", data, off + _NLMSGHDR.size)
            if err:
                raise OSError(-err, f"netlink: {os.strerror(-err)}")
        off += (length + 3) & ~3


def _open_socket(netns: str | None) -> socket.socket:
    def make() -> socket.socket:
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
        s.bind((0, RTMGRP_LINK))
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


def _carrier(flags: int) -> bool:
    return bool(flags & IFF_UP) and bool(flags & IFF_LOWER_UP)


class PortWatcher:
    """Yields {port: up} for the watched interfaces: the current state first, then changes."""

    def __init__(self, ports: Mapping[str, int], netns: str | None = None):
        self.ports = dict(ports)
        self.netns = netns

    async def changes(self) -> AsyncIterator[dict[int, bool]]:
        """Carrier changes as they happen; missing interfaces count as down."""
        loop = asyncio.get_running_loop()
        # subscribed before the dump, so that no change falls between the two
        sock = _open_socket(self.netns)
        sock.setblocking(False)
        try:
            request = _NLMSGHDR.pack(_NLMSGHDR.size + _IFINFOMSG.size, RTM_GETLINK,
                                     NLM_F_REQUEST | NLM_F_DUMP, 1, 0) + \
                _IFINFOMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0)
            await loop.sock_sendall(sock, request)
            present: dict[str, bool] = {}
            done = False
            pending: list[tuple[int, str | None, int]] = []
            while not done:
                for mtype, name, flags in parse_links(await loop.sock_recv(sock, 1 << 16)):
                    if mtype == NLMSG_DONE:
                        done = True
                    elif done:
                        pending.append((mtype, name, flags))
                    elif name is not None:
                        present[name] = _carrier(flags)
            state = {port: present.get(name, False) for name, port in self.ports.items()}
            yield dict(state)
            while True:
                batch: dict[int, bool] = {}
                events = pending or list(parse_links(await loop.sock_recv(sock, 1 << 16)))
                pending = []
                for mtype, name, flags in events:
                    port = self.ports.get(name) if name else None
                    if port is None:
                        continue
                    up = mtype == RTM_NEWLINK and _carrier(flags)
                    if state[port] != up:
                        state[port] = up
                        batch[port] = up
                if batch:
                    yield batch
        finally:
            sock.close()
