"""Stateful externs through packets and the Switch API (program stf/externs.p4).

Header h = op idx val(32) color flow(32) rnd ts_in(48) ts_eg(48), 24 bytes,
padded with a payload to a 60-byte frame.  Meter colours are those of BMv2:
GREEN 0, YELLOW 1, RED 2 (trTCM, RFC 2698); rates are per second as in
docs/softswitch-api.md and the clock is stopped so the outcome is exact.
"""

from __future__ import annotations

import pytest
from sst_packets import program

FRAME = 60
HDR = 24


def pkt(op: int, idx: int = 0, flow: int = 0) -> bytes:
    head = bytes([op, idx]) + bytes(5) + flow.to_bytes(4, "big") + bytes(13)
    assert len(head) == HDR
    return head + bytes(range(FRAME - HDR))


def fields(data: bytes) -> dict[str, int]:
    return {
        "op": data[0], "idx": data[1], "val": int.from_bytes(data[2:6], "big"),
        "color": data[6], "flow": int.from_bytes(data[7:11], "big"), "rnd": data[11],
        "ts_in": int.from_bytes(data[12:18], "big"), "ts_eg": int.from_bytes(data[18:24], "big"),
    }


@pytest.fixture(scope="module")
def prog():
    return program("externs.p4")


@pytest.fixture
def clock():
    return [5_000]


@pytest.fixture
def sw(prog, clock):
    from softswitch import Switch

    return Switch(prog, clock=lambda: clock[0])


def send(sw, data: bytes, port: int = 0) -> dict[str, int]:
    outs = sw.process_packet(port, data)
    assert [o.port for o in outs] == [1], f"outputs: {[(o.port, bytes(o.data).hex()) for o in outs]}"
    out = bytes(outs[0].data)
    assert out[HDR:] == data[HDR:], "payload must be unchanged"
    return fields(out)


def test_register_read_modify_write_and_control_plane_access(sw) -> None:
    assert [send(sw, pkt(1, idx=3))["val"] for _ in range(3)] == [1, 2, 3]
    assert sw.register_read("reg", 3) == 3
    assert sw.register_read("reg", 2) == 0
    sw.register_write("reg", 3, 0xFFFFFFFF)
    assert send(sw, pkt(1, idx=3))["val"] == 0   # bit<32> wraps
    assert sw.register_read("Ing.reg", 3) == 0   # fully-qualified name works too


def test_register_bad_writes_change_nothing(sw) -> None:
    from softswitch import SwitchError

    sw.register_write("reg", 1, 7)
    for call in (lambda: sw.register_write("reg", 8, 1),
                 lambda: sw.register_write("reg", 1, 1 << 32),
                 lambda: sw.register_write("no_such_register", 0, 1)):
        with pytest.raises(SwitchError):
            call()
    assert sw.register_read("reg", 1) == 7
    with pytest.raises(SwitchError) as info:
        sw.register_read("reg", 8)
    assert info.value.code == "OUT_OF_RANGE"


def test_counter_packets_and_bytes(sw) -> None:
    for _ in range(2):
        send(sw, pkt(2, idx=2))
    send(sw, pkt(2, idx=5))
    assert sw.counter_read("cnt", 2) == (2, 2 * FRAME)
    assert sw.counter_read("cnt", 5) == (1, FRAME)
    assert sw.counter_read("cnt", 0) == (0, 0)


def test_counter_index_out_of_range_is_ignored(sw) -> None:
    """BMv2 logs and skips count() with an index >= size; the packet goes on."""
    send(sw, pkt(7))
    assert all(sw.counter_read("cnt", i) == (0, 0) for i in range(8))


def test_meter_bytes_colours(sw, clock) -> None:
    """bytes meter, CIR 100 B/s CBS 100 B, PIR 200 B/s PBS 200 B, 60-byte packets.

    Tc/Tp start full (100/200): G (40/140), Y (40/80), Y (40/20), R.  One second
    later both buckets are full again: G.
    """
    sw.meter_set("mtr", 1, 100, 100, 200, 200)
    assert [send(sw, pkt(3, idx=1))["color"] for _ in range(4)] == [0, 1, 1, 2]
    clock[0] += 1_000_000
    assert send(sw, pkt(3, idx=1))["color"] == 0
    # meter 0 was never configured: always GREEN
    assert [send(sw, pkt(3, idx=0))["color"] for _ in range(4)] == [0] * 4


def test_digest_reaches_the_control_plane(sw) -> None:
    from softswitch import Digest

    send(sw, pkt(4, flow=0xDEADBEEF), port=3)
    digests = sw.poll_digests()
    assert len(digests) == 1
    d = digests[0]
    assert isinstance(d, Digest)
    assert d.name.endswith("learn_t")
    assert list(d.fields) == [("flow", 32, 0xDEADBEEF), ("port", 9, 3)]
    assert sw.poll_digests() == []
    send(sw, pkt(1))
    assert sw.poll_digests() == [], "no digest unless digest() ran"


def test_digest_callback(sw) -> None:
    seen = []
    sw.on_digest = seen.append
    send(sw, pkt(4, flow=7), port=2)
    assert [list(d.fields) for d in seen] == [[("flow", 32, 7), ("port", 9, 2)]]


def test_random_stays_in_range(sw) -> None:
    values = [send(sw, pkt(5))["rnd"] for _ in range(200)]
    assert min(values) >= 10 and max(values) <= 20, values
    assert len(set(values)) >= 5, f"random() looks constant: {sorted(set(values))}"


def test_truncate_limits_the_output_length(sw) -> None:
    full = sw.process_packet(0, pkt(0))
    cut = sw.process_packet(0, pkt(6))
    assert len(cut) == 1 and cut[0].port == 1
    assert bytes(cut[0].data) == bytes([6]) + bytes(full[0].data)[1:10]


def test_timestamps_come_from_the_clock(sw, clock) -> None:
    clock[0] = 123_456_789
    f = send(sw, pkt(0))
    assert f["ts_in"] == 123_456_789
    assert f["ts_eg"] == 123_456_789


def test_digest_of_a_dropped_packet_is_still_sent(sw) -> None:
    """After-ingress order: the digest (learning) comes before the drop check."""
    assert sw.process_packet(5, pkt(8, flow=0x0102)) == []
    assert [list(d.fields) for d in sw.poll_digests()] == [[("flow", 32, 0x0102), ("port", 9, 5)]]


def test_register_read_out_of_range_leaves_the_destination(sw) -> None:
    """BMv2 register_read logs and does not write dst when the index is too big."""
    sw.register_write("reg", 0, 1234)
    sw.register_write("reg", 7, 99)
    assert send(sw, pkt(9, idx=100))["val"] == 1234
    f = send(sw, pkt(9, idx=7))
    assert (f["flow"], f["val"]) == (1234, 99)   # in range: the stored value


def test_meter_index_out_of_range_leaves_the_colour(sw) -> None:
    """BMv2 execute_meter logs and does not write the colour for a bad index."""
    sw.meter_set("mtr", 0, 1, 1, 1, 1)   # 60-byte packets > 1-byte bursts: RED
    f = send(sw, pkt(10, idx=100))
    assert (f["rnd"], f["color"]) == (2, 2)
    f = send(sw, pkt(10, idx=3))         # meter 3 not configured: GREEN
    assert (f["rnd"], f["color"]) == (2, 0)


def test_two_digest_calls_give_one_digest(sw) -> None:
    """simple_switch keeps one learn id per pass (lf_field_list): the last digest() wins."""
    send(sw, pkt(11, flow=0x10), port=4)
    assert [list(d.fields) for d in sw.poll_digests()] == [[("flow", 32, 0x11), ("port", 9, 4)]]


def test_bad_meter_rates_are_refused(sw) -> None:
    """BMv2 Meter::set_rate refuses a committed rate above the peak rate."""
    from softswitch import SwitchError

    sw.meter_set("mtr", 2, 100, 100, 200, 200)
    for bad in ((300, 100, 200, 200), (-1, 100, 200, 200), (100, 100, 200, -5)):
        with pytest.raises(SwitchError):
            sw.meter_set("mtr", 2, *bad)
    with pytest.raises(SwitchError):
        sw.meter_set("mtr", 4, 100, 100, 200, 200)   # index out of range
    # the first configuration still holds: G Y Y R as in test_meter_bytes_colours
    assert [send(sw, pkt(3, idx=2))["color"] for _ in range(4)] == [0, 1, 1, 2]
