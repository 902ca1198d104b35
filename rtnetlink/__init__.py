"""rtnetlink link messages (netlink(7), rtnetlink(7)), parsed in one place.

softswitch (its ports), SyncMesh (its switch's ports) and ReCCL (its NICs)
each follow carrier by subscribing a NETLINK_ROUTE socket to RTMGRP_LINK;
they share this parser and the carrier rule so that the three agree.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import NamedTuple

RTMGRP_LINK = 0x1
RTM_NEWLINK, RTM_DELLINK, RTM_GETLINK = 16, 17, 18
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
IFLA_IFNAME = 3
IFF_UP = 0x1
IFF_LOWER_UP = 0x10000
NLMSGHDR = struct.Struct("=IHHII")  # len, type, flags, seq, pid
IFINFOMSG = struct.Struct("=BxHiII")  # family, type, index, flags, change
RTATTR = struct.Struct("=HH")  # len, type


def has_carrier(flags: int) -> bool:
    """Administratively up and with carrier (IFF_UP and IFF_LOWER_UP)."""
    return bool(flags & IFF_UP) and bool(flags & IFF_LOWER_UP)


class LinkMessage(NamedTuple):
    """One link message; ``kind`` NLMSG_DONE marks the end of a dump."""

    kind: int
    index: int
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
