"""Link state of the local NICs from rtnetlink (RTM_NEWLINK with IFF_LOWER_UP).

A raw NETLINK_ROUTE socket subscribed to RTMGRP_LINK gives one message per
link change (rtnetlink(7)); the socket goes into the endpoint's selector so a
NIC going down is seen within microseconds instead of after a timeout.
"""

from __future__ import annotations

import os
import socket
import struct
import time

from rtnetlink import (
    IFF_UP,
    IFINFOMSG,
    NLM_F_DUMP,
    NLM_F_REQUEST,
    NLMSG_DONE,
    NLMSG_ERROR,
    NLMSGHDR,
    RTATTR,
    RTMGRP_LINK,
    parse_links,
)

RTM_NEWADDR = 20
RTM_GETADDR = 22
RTM_SETLINK = 19
NLM_F_ACK = 0x4
IFADDRMSG = struct.Struct("=BBBBI")        # family, prefixlen, flags, scope, index
IFA_ADDRESS, IFA_LOCAL = 1, 2


def _request(msg_type: int, flags: int, body: bytes) -> list[tuple[int, bytes]]:
    """Send one rtnetlink request; return (type, payload) of the answers until done."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as s:
        s.bind((0, 0))
        s.send(NLMSGHDR.pack(NLMSGHDR.size + len(body), msg_type, flags, 1, 0) + body)
        out: list[tuple[int, bytes]] = []
        while True:
            buf = s.recv(65536)
            off = 0
            while off + NLMSGHDR.size <= len(buf):
                length, mtype, _, _, _ = NLMSGHDR.unpack_from(buf, off)
                if length < NLMSGHDR.size:
                    return out
                payload = buf[off + NLMSGHDR.size:off + length]
                if mtype == NLMSG_DONE:
                    return out
                if mtype == NLMSG_ERROR:
                    err = -struct.unpack_from("=i", payload)[0]
                    if err:
                        raise OSError(err, os.strerror(err))
                    return out
                out.append((mtype, payload))
                off += (length + 3) & ~3
            if not flags & NLM_F_DUMP:
                return out


def interface_of(ip: str) -> str | None:
    """Name of the local interface holding IPv4 address `ip` (RTM_GETADDR dump);
    other 127/8 addresses belong to lo; None if not found."""
    want = socket.inet_aton(ip)
    for mtype, payload in _request(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP,
                                   IFADDRMSG.pack(socket.AF_INET, 0, 0, 0, 0)):
        if mtype != RTM_NEWADDR:
            continue
        index = IFADDRMSG.unpack_from(payload)[4]
        a = IFADDRMSG.size
        while a + RTATTR.size <= len(payload):
            alen, atype = RTATTR.unpack_from(payload, a)
            if alen < RTATTR.size:
                break
            if atype in (IFA_ADDRESS, IFA_LOCAL) and payload[a + 4:a + alen] == want:
                return socket.if_indextoname(index)
            a += (alen + 3) & ~3
    return "lo" if ip.startswith("127.") else None


def set_link(ifname: str, up: bool) -> float:
    """Set an interface administratively up or down through rtnetlink (needs root);
    returns the monotonic time at which the request went to the kernel."""
    index = socket.if_nametoindex(ifname)
    body = IFINFOMSG.pack(socket.AF_UNSPEC, 0, index, IFF_UP if up else 0, IFF_UP)
    t = time.monotonic()
    _request(RTM_SETLINK, NLM_F_REQUEST | NLM_F_ACK, body)
    return t


def link_is_up(ifname: str) -> bool:
    """Carrier state of an interface from sysfs (operstate up or unknown = up)."""
    try:
        with open(f"/sys/class/net/{ifname}/operstate") as f:
            state = f.read().strip()
        with open(f"/sys/class/net/{ifname}/flags") as f:
            flags = int(f.read().strip(), 16)
    except OSError:
        return False
    return bool(flags & IFF_UP) and state in ("up", "unknown")


class LinkMonitor:
    """Watches named interfaces; `read()` returns [(ifname, up)] for changes."""

    def __init__(self, ifnames: list[str]) -> None:
        self.ifnames = set(ifnames)
        self.state = {n: link_is_up(n) for n in ifnames}
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
        self.sock.bind((0, RTMGRP_LINK))  # pid 0: the kernel picks a unique port id
        self.sock.setblocking(False)

    def fileno(self) -> int:
        """For the selector."""
        return self.sock.fileno()

    def read(self) -> list[tuple[str, bool]]:
        """Drain pending netlink messages; return changed (ifname, up) pairs."""
        changes = []
        while True:
            try:
                buf = self.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                break
            for msg in parse_links(buf):
                name, up = msg.name, msg.carrier
                if name in self.ifnames and self.state.get(name) != up:
                    self.state[name] = up
                    changes.append((name, up))
        return changes

    def close(self) -> None:
        """Close the netlink socket."""
        self.sock.close()
