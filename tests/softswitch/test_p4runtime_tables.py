"""``bmv2.tables.P4RuntimeTables`` against softswitch's real P4Runtime server on loopback.

The same table, counter and multicast calls made on an in-process ``Switch`` and,
through ``P4RuntimeTables``, on the server's device must leave both forwarding the
same packets the same way; refused calls raise softswitch's errors and write nothing.
"""

import pytest
from p4rt_client import PROG

from bmv2.session import Session
from bmv2.tables import P4RuntimeTables
from softswitch import Exact, Lpm, Optional, Range, Switch, SwitchError, Ternary, compile_file
from softswitch.p4info import p4info_from_program
from softswitch.p4runtime.device import Device
from softswitch.p4runtime.pipeline_loader import device_config_from_file, load_program
from softswitch.p4runtime.server import P4RuntimeServer

NHOP_MAC = 0x020000000202


def ipv4_frame(dst: int, src: int = 0x0A000001, proto: int = 17) -> bytes:
    ip = bytes([0x45, 0, 0, 20, 0, 0, 0, 0, 64, proto, 0, 0]) + src.to_bytes(4, "big") + dst.to_bytes(4, "big")
    return bytes.fromhex("020000000001" "020000000099" "0800") + ip


def configure(sw) -> dict[str, int]:
    """The same calls on either target; the handles they return."""
    handles = {
        "route": sw.table_add("ipv4_lpm", [Lpm(0x0A000200, 24)], "set_nhop", [NHOP_MAC, 2]),
        "acl": sw.table_add("acl", [Ternary(0x0B000000, 0xFF000000), Range(6, 17), Optional(None)],
                            "drop", [], priority=10),
    }
    sw.table_add("dmac", {"hdr.ethernet.dst": NHOP_MAC}, "forward", {"port": 2})
    sw.table_set_default("ipv4_lpm", "NoAction")
    sw.mc_group_set(5, [(1, 0), (3, 0)])
    return handles


FRAMES = [(1, ipv4_frame(0x0A000207)),                  # routed by the /24, ttl - 1
          (1, ipv4_frame(0x0A000307)),                  # default: NoAction
          (1, ipv4_frame(0x0A000207, src=0x0B000001)),  # counted by the acl (routed on: set_nhop
          #                                             sets egress_spec after its drop)
          (4, ipv4_frame(0x0A000209, proto=6))]


@pytest.fixture
def served():
    device_config = device_config_from_file(PROG)
    p4info = p4info_from_program(load_program(device_config))
    device = Device(device_id=1, cpu_port=255)
    sent: list[tuple[int, bytes]] = []
    device.transmit = lambda port, data: sent.append((port, data))
    server = P4RuntimeServer(device, "127.0.0.1:0").start()
    session = Session(server.address, 1)
    try:
        session.connect()
        session.set_pipeline(p4info, device_config)
        yield device, sent, P4RuntimeTables(p4info, session)
    finally:
        session.close()
        server.stop(0)


def test_calls_over_p4runtime_forward_as_the_same_calls_in_process(served):
    device, sent, tables = served
    local = Switch(compile_file(str(PROG)), cpu_port=255)
    configure(local)
    handles = configure(tables)
    outputs = []
    for port, frame in FRAMES:
        sent.clear()
        device.process(port, frame)
        want = [(o.port, o.data) for o in local.process_packet(port, frame)]
        assert sent == want, frame.hex()
        outputs.append(list(sent))
    assert [p for p, _ in outputs[0]] == [2] and outputs[0][0][1][:6] == NHOP_MAC.to_bytes(6, "big")
    # the direct counter and the indexed counter were counted by the server's engine
    assert tables.direct_counter_read("acl", handles["acl"])[0] == 1
    assert tables.counter_read("port_rx", 1) == local.counter_read("port_rx", 1)
    tables.table_modify("ipv4_lpm", handles["route"], "drop")
    sent.clear()
    device.process(*FRAMES[0])
    assert sent == []
    tables.table_delete("ipv4_lpm", handles["route"])
    assert tables.table_find("ipv4_lpm", [Lpm(0x0A000200, 24)]) is None


@pytest.mark.parametrize("call, code", [
    (lambda t: t.table_add("no_such_table", [Exact(1)], "drop"), "NOT_FOUND"),
    (lambda t: t.table_add("ipv4_lpm", [Lpm(0x0A000200, 24)], "set_nhop", [1 << 48, 2]), "OUT_OF_RANGE"),
    (lambda t: t.table_add("ipv4_lpm", [Lpm(0x0A000200, 24)], "set_nhop", [1]), "INVALID_ARGUMENT"),
    (lambda t: t.table_add("acl", [Exact(1), Exact(6), Exact(1)], "drop"), "INVALID_ARGUMENT"),
    (lambda t: t.table_add("ipv4_lpm", [Lpm(0x0A000200, 24)], "no_such_action"), "NOT_FOUND"),
])
def test_refused_calls_raise_and_write_nothing(served, call, code):
    device, sent, tables = served
    with pytest.raises(SwitchError) as err:
        call(tables)
    assert err.value.code == code
    sent.clear()
    device.process(*FRAMES[0])  # the table still holds nothing: the default drops
    assert sent == []
