"""The shared rtnetlink package: the link-message parser (well-formed, truncated and error
datagrams) and LinkWatch (dump then changes, in a namespace with real veths as root)."""

import errno
import os
import select
import struct
import subprocess
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rtnetlink import (
    NLMSG_DONE,
    NLMSG_ERROR,
    RTM_DELLINK,
    RTM_NEWLINK,
    Link,
    LinkWatch,
    parse_links,
)


def _link(name: str, index: int, flags: int) -> bytes:
    attr_data = name.encode() + b"\0"
    attr = struct.pack("=HH", 4 + len(attr_data), 3) + attr_data
    attr += b"\0" * (-len(attr) % 4)
    body = struct.pack("=BxHiII", 0, 1, index, flags, 0) + attr
    return struct.pack("=IHHII", 16 + len(body), RTM_NEWLINK, 0, 0, 0) + body


def test_several_messages_and_the_end_of_a_dump():
    data = _link("eth0", 2, 0x11043) + _link("eth1", 3, 0x1003) + \
        struct.pack("=IHHII", 20, NLMSG_DONE, 0, 0, 0) + b"\0" * 4
    msgs = list(parse_links(data))
    assert [(m.kind, m.index, m.name, m.carrier) for m in msgs] == [
        (RTM_NEWLINK, 2, "eth0", True), (RTM_NEWLINK, 3, "eth1", False),
        (NLMSG_DONE, 0, None, False)]


def test_an_error_reply_raises_with_its_errno():
    data = struct.pack("=IHHIIi", 20, NLMSG_ERROR, 0, 0, 0, -errno.EPERM)
    with pytest.raises(OSError) as info:
        list(parse_links(data))
    assert info.value.errno == errno.EPERM


def test_a_truncated_message_is_not_read_past_the_datagram():
    data = _link("eth0", 2, 0x11043)
    assert list(parse_links(data[:-3])) == []


@given(st.binary(max_size=200))
def test_garbage_never_raises_anything_but_oserror(data):
    try:
        list(parse_links(data))
    except OSError:
        pass


def test_link_watch_applies_dump_and_changes_in_order():
    with LinkWatch() as watch:  # a NETLINK_ROUTE socket needs no privilege
        assert watch.carrier("lo") is True  # the dump saw the loopback, up with carrier
        assert watch.carrier("no-such-if") is False
        # what the kernel would send next: a new link, its carrier, its removal
        watch.links.pop(9999, None)
        seq = [(RTM_NEWLINK, "tst0", 0x1003), (RTM_NEWLINK, "tst0", 0x1003),
               (RTM_NEWLINK, None, 0x11043), (RTM_DELLINK, "tst0", 0x11043)]
        seen = []
        for kind, name, flags in seq:
            (msg,) = parse_links(_message(kind, name, 9999, flags))
            seen.append(watch._apply(msg))
        assert seen == [Link(9999, "tst0", False), None, Link(9999, "tst0", True),
                        Link(9999, "tst0", False)]
        assert 9999 not in watch.links


def _message(kind: int, name: str | None, index: int, flags: int) -> bytes:
    attr = b""
    if name is not None:
        data = name.encode() + b"\0"
        attr = struct.pack("=HH", 4 + len(data), 3) + data
        attr += b"\0" * (-len(attr) % 4)
    body = struct.pack("=BxHiII", 0, 1, index, flags, 0) + attr
    return struct.pack("=IHHII", 16 + len(body), kind, 0, 0, 0) + body


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@pytest.mark.root
def test_link_watch_in_a_namespace_sees_the_dump_and_each_change():
    ns = f"rtnl{os.getpid() % 100000}"
    _ip("netns", "add", ns)
    try:
        _ip("-n", ns, "link", "add", "rtw0", "type", "veth", "peer", "name", "rtw1")
        _ip("-n", ns, "link", "set", "rtw0", "up")
        with LinkWatch(ns) as watch:
            # rtw1 is down, so rtw0 is up without carrier; the caller's links are not here
            assert watch.by_name() == {"lo": False, "rtw0": False, "rtw1": False}
            _ip("-n", ns, "link", "set", "rtw1", "up")
            changed = _read_until(watch, lambda links: {lk.name for lk in links} >= {"rtw0", "rtw1"})
            assert watch.carrier("rtw0") and watch.carrier("rtw1")
            assert {lk.name: lk.carrier for lk in changed} == {"rtw0": True, "rtw1": True}
            _ip("-n", ns, "link", "del", "rtw0")  # takes its peer along
            _read_until(watch, lambda links: not watch.by_name().keys() & {"rtw0", "rtw1"})
            assert watch.by_name() == {"lo": False}
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


@pytest.mark.root
def test_link_watch_refuses_a_missing_namespace():
    with pytest.raises(FileNotFoundError, match="no-such-ns"):
        LinkWatch("no-such-ns-rtnl")


def _read_until(watch: LinkWatch, done, timeout: float = 10.0) -> list[Link]:
    seen: list[Link] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        select.select([watch], [], [], 0.5)
        seen += watch.read()
        if done(seen):
            return seen
    raise AssertionError(f"no such change within {timeout} s; saw {seen}")
