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
import threading
from collections.abc import AsyncIterator, Mapping

from fabricmodel import Fabric
from rtnetlink import (
    IFINFOMSG,
    NLM_F_DUMP,
    NLM_F_REQUEST,
    NLMSG_DONE,
    NLMSGHDR,
    RTM_GETLINK,
    RTMGRP_LINK,
    LinkMessage,
    parse_links,
)

CLONE_NEWNET = 0x40000000


def mininet_names(fabric: Fabric, switch: str) -> dict[str, int]:
    """Interface name -> port for every used port of ``switch``, Mininet style."""
    return {f"{switch}-eth{port}": port for port in fabric.ports(switch)}


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
            request = NLMSGHDR.pack(NLMSGHDR.size + IFINFOMSG.size, RTM_GETLINK,
                                    NLM_F_REQUEST | NLM_F_DUMP, 1, 0) + \
                IFINFOMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0)
            await loop.sock_sendall(sock, request)
            present: dict[str, bool] = {}
            done = False
            pending: list[LinkMessage] = []
            while not done:
                for msg in parse_links(await loop.sock_recv(sock, 1 << 16)):
                    if msg.kind == NLMSG_DONE:
                        done = True
                    elif done:
                        pending.append(msg)
                    elif msg.name is not None:
                        present[msg.name] = msg.carrier
            state = {port: present.get(name, False) for name, port in self.ports.items()}
            yield dict(state)
            while True:
                batch: dict[int, bool] = {}
                events = pending or list(parse_links(await loop.sock_recv(sock, 1 << 16)))
                pending = []
                for msg in events:
                    port = self.ports.get(msg.name) if msg.name else None
                    if port is None:
                        continue
                    up = msg.carrier
                    if state[port] != up:
                        state[port] = up
                        batch[port] = up
                if batch:
                    yield batch
        finally:
            sock.close()
