"""Link state of the local NICs from rtnetlink (RTM_NEWLINK with IFF_LOWER_UP).

``LinkMonitor`` follows carrier with ``rtnetlink.LinkWatch``, the socket and
the rule (IFF_UP and IFF_LOWER_UP) that softswitch and SyncMesh use too: one
message per link change goes into the endpoint's selector, so a NIC going
down is seen within microseconds instead of after a timeout. The requests
that read addresses and set links go through pyroute2.
"""

from __future__ import annotations

import socket
import time

from rtnetlink import LinkWatch


def interface_of(ip: str) -> str | None:
    """Name of the local interface holding IPv4 address `ip`; other 127/8 addresses
    belong to lo; None if not found."""
    from pyroute2 import IPRoute
    from pyroute2.netlink.exceptions import NetlinkError

    try:
        with IPRoute() as ipr:
            for msg in ipr.get_addr(family=socket.AF_INET):
                if ip in (msg.get_attr("IFA_LOCAL"), msg.get_attr("IFA_ADDRESS")):
                    return socket.if_indextoname(msg["index"])
    except NetlinkError as e:
        raise OSError(e.code, f"netlink: reading addresses: {e}") from None
    return "lo" if ip.startswith("127.") else None


def set_link(ifname: str, up: bool) -> float:
    """Set an interface administratively up or down through rtnetlink (needs root);
    returns the monotonic time at which the request went to the kernel."""
    from pyroute2 import IPRoute
    from pyroute2.netlink.exceptions import NetlinkError

    index = socket.if_nametoindex(ifname)
    try:
        with IPRoute() as ipr:
            t = time.monotonic()
            ipr.link("set", index=index, state="up" if up else "down")
    except NetlinkError as e:
        raise OSError(e.code, f"netlink: setting {ifname} {'up' if up else 'down'}: {e}") from None
    return t


def link_is_up(ifname: str) -> bool:
    """Carrier of an interface (up and IFF_LOWER_UP); a missing interface is down."""
    with LinkWatch() as watch:
        return watch.carrier(ifname)


class LinkMonitor:
    """Watches named interfaces; `read()` returns [(ifname, up)] for changes."""

    def __init__(self, ifnames: list[str]) -> None:
        self.ifnames = set(ifnames)
        self._watch = LinkWatch()
        self.sock = self._watch.sock
        self.state = {n: self._watch.carrier(n) for n in ifnames}

    def fileno(self) -> int:
        """For the selector."""
        return self._watch.fileno()

    def read(self) -> list[tuple[str, bool]]:
        """Drain pending netlink messages; return changed (ifname, up) pairs."""
        changes = []
        for link in self._watch.read():
            name, up = link.name, link.carrier
            if name in self.ifnames and self.state.get(name) != up:
                self.state[name] = up
                changes.append((name, up))
        return changes

    def close(self) -> None:
        """Close the netlink socket."""
        self._watch.close()
