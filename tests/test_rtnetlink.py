"""The shared rtnetlink link-message parser: well-formed, truncated and error datagrams."""

import errno
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rtnetlink import NLMSG_DONE, NLMSG_ERROR, RTM_NEWLINK, parse_links


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
