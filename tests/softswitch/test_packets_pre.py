"""Packet replication engine through the Switch API: multicast groups and clone sessions.

Programs: stf/multicast.p4 (h = grp rid(16) port inst) and stf/clone.p4
(h = op ing_mark eg_mark inst saved).  The same behaviour is covered with the
simple_switch_CLI commands in multicast.stf / clone.stf; here the API that the
P4Runtime server drives (replica lists, clone truncation) is exercised.
"""

from __future__ import annotations

import pytest
from sst_packets import program, verify_packets


@pytest.fixture(scope="module")
def mc_prog():
    return program("multicast.p4")


@pytest.fixture(scope="module")
def clone_prog():
    return program("clone.p4")


def mc_pkt(grp: int) -> bytes:
    return bytes([grp, 0, 0, 0, 0]) + b"\xca\xfe"


def mc_out(grp: int, rid: int, port: int, inst: int = 5) -> bytes:
    return bytes([grp]) + rid.to_bytes(2, "big") + bytes([port, inst]) + b"\xca\xfe"


def test_group_replicas_and_replacement(mc_prog) -> None:
    from softswitch import Switch

    sw = Switch(mc_prog)
    sw.mc_group_set(1, [(2, 10), (3, 10), (4, 20)])
    verify_packets(sw.process_packet(0, mc_pkt(1)),
                   [(2, mc_out(1, 10, 2)), (3, mc_out(1, 10, 3)), (4, mc_out(1, 20, 4))])
    # two replicas on one port with different rids give two copies there
    sw.mc_group_set(1, [(9, 1), (9, 2)])
    verify_packets(sw.process_packet(0, mc_pkt(1)), [(9, mc_out(1, 1, 9)), (9, mc_out(1, 2, 9))])
    assert dict(sw.mc_groups())[1] == ((9, 1), (9, 2))
    sw.mc_group_delete(1)
    verify_packets(sw.process_packet(0, mc_pkt(1)), [])


def test_bad_group_writes_change_nothing(mc_prog) -> None:
    from softswitch import Switch, SwitchError

    sw = Switch(mc_prog)
    sw.mc_group_set(3, [(2, 1)])
    for bad in ([(512, 1)], [(2, -1)], [(2, 1), (2, 1)]):
        with pytest.raises(SwitchError):
            sw.mc_group_set(3, bad)
    with pytest.raises(SwitchError):
        sw.mc_group_delete(44)
    verify_packets(sw.process_packet(0, mc_pkt(3)), [(2, mc_out(3, 1, 2))])


def clone_pkt(op: int) -> bytes:
    return bytes([op, 0, 0, 0, 0]) + b"\xab"


def test_clone_session_with_several_replicas(clone_prog) -> None:
    """Each replica of the session gets one ingress clone (instance_type 1)."""
    from softswitch import Switch

    sw = Switch(clone_prog)
    sw.clone_session_set(5, [(4, 0), (7, 3)])
    verify_packets(sw.process_packet(0, clone_pkt(1)), [
        (1, bytes([1, 0x11, 0, 0, 0x5A, 0xAB])),
        (4, bytes([1, 0, 0, 1, 0, 0xAB])),
        (7, bytes([1, 0, 0, 1, 0, 0xAB])),
    ])


def test_clone_session_truncation(clone_prog) -> None:
    """A clone session's truncate length cuts the clone, not the original."""
    from softswitch import Switch

    sw = Switch(clone_prog)
    sw.clone_session_set(5, [(4, 0)], truncate=3)
    verify_packets(sw.process_packet(0, clone_pkt(1)), [
        (1, bytes([1, 0x11, 0, 0, 0x5A, 0xAB])),
        (4, bytes([1, 0, 0])),
    ])


def test_deleted_clone_session_makes_no_clone(clone_prog) -> None:
    from softswitch import Switch, SwitchError

    sw = Switch(clone_prog)
    sw.clone_session_set(5, [(4, 0)])
    sw.clone_session_delete(5)
    verify_packets(sw.process_packet(0, clone_pkt(1)), [(1, bytes([1, 0x11, 0, 0, 0x5A, 0xAB]))])
    with pytest.raises(SwitchError):
        sw.clone_session_delete(5)
    assert 5 not in dict(sw.clone_sessions())
