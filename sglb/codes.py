"""Counter indices and configuration codes of p4src/sglb.p4 (include/constants.p4).

The control plane reads the `drops` and `events` counters by these indices and
writes `switch_config` with these codes; tests/sglb/test_codes.py checks that
they match the P4 source.
"""

from __future__ import annotations

from enum import IntEnum


class Role(IntEnum):
    """switch_config.set_switch(role)."""

    LEAF = 0
    SPINE = 1


class LbMode(IntEnum):
    """switch_config.set_switch(lb_mode)."""

    SGLB = 0
    ECMP = 1


class DropReason(IntEnum):
    """Index of the `drops` counter (DROP_* in constants.p4)."""

    MALFORMED = 1
    TTL_EXPIRED = 2
    NO_ROUTE = 3
    NO_LIVE_PATH = 4
    BAD_NOTICE = 5
    BAD_PORT_STATUS = 6
    BAD_PROBE = 7
    EGRESS_PORT_DOWN = 8
    UNSUPPORTED = 9
    BAD_IPV4 = 10
    UNKNOWN_SPINE = 11
    BAD_PACKET_OUT = 12
    NOTICE_WRONG_PORT = 13
    BAD_TAG = 14
    TAG_WRONG_PORT = 15


class Event(IntEnum):
    """Index of the `events` counter (EV_* in constants.p4)."""

    FAILOVER = 0
    NEW_FLOWLET = 1
    NOTICE_SENT = 2
    NOTICE_RECEIVED = 3
    NOTICE_STALE = 4
    PORT_DOWN = 5
    PORT_UP = 6
    PORT_STATUS_DUP = 7
    PROBE_REPLIED = 8
    ARP_REPLIED = 9
    NOTICE_DUPLICATE = 10
    FEEDBACK_SENT = 11
    FEEDBACK_RECEIVED = 12
    TAG_SKIPPED = 13
    MOVE_HELD = 14
    PROBE_REFLECTED = 15


class Neighbour(IntEnum):
    """What port_neighbour binds a port to (NEIGHBOUR_* in constants.p4)."""

    NONE = 0
    HOST = 1
    SPINE = 2
    LEAF = 3


class Punt(IntEnum):
    """packet_in.reason (PUNT_* in constants.p4)."""

    HOST = 1
    PROBE_REPLY = 2
    NOTICE = 3

