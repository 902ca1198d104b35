"""v1model pipeline behaviour: replication, clones, resubmit, recirculate, digests, externs."""

import pytest

from softswitch import Exact, Switch, SwitchError, Ternary, compile_source

PROG = r"""
#include <core.p4>
#include <v1model.p4>
header cmd_t {
    bit<8>  op;       // what ingress should do
    bit<8>  arg;
    bit<32> instance; // written in egress: instance_type
    bit<16> rid;      // written in egress: egress_rid
    bit<8>  passes;   // resubmit / recirculate count seen by ingress
    bit<8>  color;
    bit<48> ts;       // ingress_global_timestamp
}
header extra_t { bit<8> x; }
struct headers_t { cmd_t c; extra_t extra; }
struct metadata_t {
    @field_list(1) bit<8> kept;
    bit<8> lost;
}
struct learn_t { bit<8> op; bit<8> arg; bit<9> port; }

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.c); transition accept; }
}
control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control Ig(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    register<bit<8>>(16) seen;
    counter(8, CounterType.packets_and_bytes) per_op;
    meter(4, MeterType.packets) m;
    direct_counter(CounterType.packets_and_bytes) acl_hits;

    direct_meter<bit<8>>(MeterType.packets) dm;
    action mread() { dm.read(hdr.c.color); }
    table tm {
        key = { hdr.c.arg: exact; }
        actions = { mread; NoAction; }
        meters = dm;
        default_action = NoAction();
    }
    action allow(bit<9> port) { sm.egress_spec = port; }
    action deny() { mark_to_drop(sm); }
    table acl {
        key = { hdr.c.op: ternary; hdr.c.arg: ternary; }
        actions = { allow; deny; NoAction; }
        counters = acl_hits;
        default_action = NoAction();
    }

    apply {
        per_op.count((bit<32>) hdr.c.op);
        bit<8> n;
        seen.read(n, (bit<32>) hdr.c.op);
        seen.write((bit<32>) hdr.c.op, n + 1);
        hdr.c.ts = sm.ingress_global_timestamp;
        sm.egress_spec = 1;
        if (hdr.c.op == 1) {            // multicast
            sm.mcast_grp = (bit<16>) hdr.c.arg;
        } else if (hdr.c.op == 2) {     // ingress clone + forward to 2
            clone(CloneType.I2E, (bit<32>) hdr.c.arg);
            sm.egress_spec = 2;
            hdr.c.arg = 0xAA;           // the clone must not see this
        } else if (hdr.c.op == 3) {     // resubmit until passes == arg
            if (sm.instance_type == 6) {
                meta.kept = meta.kept + 1;
            }
            hdr.c.passes = meta.kept;
            if (meta.kept < hdr.c.arg) {
                meta.lost = 9;
                resubmit_preserving_field_list(1);
            }
        } else if (hdr.c.op == 4) {     // recirculate (in egress) until passes == arg
            if (sm.instance_type == 4) {
                hdr.c.passes = hdr.c.passes + 1;
            }
        } else if (hdr.c.op == 5) {
            digest<learn_t>(1, { hdr.c.op, hdr.c.arg, sm.ingress_port });
        } else if (hdr.c.op == 6) {
            m.execute_meter((bit<32>) 0, hdr.c.color);
        } else if (hdr.c.op == 7) {
            acl.apply();
        } else if (hdr.c.op == 8) {
            assert(hdr.c.arg != 0);
        } else if (hdr.c.op == 9) {     // resubmit forever: must be bounded
            resubmit_preserving_field_list(1);
        } else if (hdr.c.op == 10) {
            truncate(3);
        } else if (hdr.c.op == 11) {
            mark_to_drop(sm);
        } else if (hdr.c.op == 14) {
            meta.kept = 0x5A;
            meta.lost = 0x11;
            clone_preserving_field_list(CloneType.I2E, (bit<32>) hdr.c.arg, 1);
        } else if (hdr.c.op == 15) {
            log_msg("op {} arg {}", { hdr.c.op, hdr.c.arg });
        } else if (hdr.c.op == 16) {
            hash(hdr.c.color, HashAlgorithm.crc32, 8w10, { hdr.c.arg }, 8w5);
        } else if (hdr.c.op == 17) {
            random(hdr.c.color, 8w3, 8w7);
        } else if (hdr.c.op == 19) {
            tm.apply();
        } else if (hdr.c.op == 20) {     // fields of an invalid header are left out
            hash(hdr.c.color, HashAlgorithm.crc32, 8w0, { hdr.c.arg, hdr.extra.x }, 8w251);
        }
    }
}
control Eg(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.c.instance = sm.instance_type;
        hdr.c.rid = sm.egress_rid;
        if (hdr.c.op == 4 && hdr.c.passes < hdr.c.arg) {
            recirculate_preserving_field_list(1);
        }
        if (hdr.c.op == 12) {           // egress clone of the modified packet
            if (sm.instance_type == 0) {
                hdr.c.arg = 0xBB;
                clone(CloneType.E2E, 5);
            }
        }
        if (hdr.c.op == 13) {
            mark_to_drop(sm);
        }
        if (hdr.c.op == 14 && sm.instance_type == 1) {
            hdr.c.passes = meta.kept;
            hdr.c.color = meta.lost;
        }
        if (hdr.c.op == 18) {           // clones itself on every pass: must be bounded
            clone(CloneType.E2E, 6);
        }
    }
}
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.c); } }
V1Switch(P(), NoVerify(), Ig(), Eg(), NoCompute(), D()) main;
"""

FIELDS = [("op", 8), ("arg", 8), ("instance", 32), ("rid", 16), ("passes", 8), ("color", 8), ("ts", 48)]


def pkt(op, arg=0, extra=b""):
    return bytes([op, arg]) + bytes(16) + extra


def dec(data):
    v = int.from_bytes(data[:18], "big")
    out, off = {}, 0
    for name, w in FIELDS:
        out[name] = (v >> (144 - off - w)) & ((1 << w) - 1)
        off += w
    return out


@pytest.fixture(scope="module")
def program():
    return compile_source(PROG, "pipe.p4")


@pytest.fixture
def clock():
    class Clock:
        now = 1000

        def __call__(self):
            return self.now

    return Clock()


@pytest.fixture
def sw(program, clock):
    return Switch(program, clock=clock)


def test_unicast_timestamp_register_counter(sw, clock):
    clock.now = 123456
    out = sw.process_packet(3, pkt(0, extra=b"tail"))
    assert [o.port for o in out] == [1]
    d = dec(out[0].data)
    assert d["ts"] == 123456 and d["instance"] == 0
    assert out[0].data.endswith(b"tail")
    sw.process_packet(3, pkt(0))
    assert sw.register_read("seen", 0) == 2
    assert sw.counter_read("per_op", 0) == (2, 2 * 18 + 4)


def test_multicast_replicas_carry_rid(sw):
    sw.mc_group_set(7, [(4, 100), (5, 101), (4, 102)])
    out = sw.process_packet(1, pkt(1, 7))
    assert [(o.port, dec(o.data)["rid"], dec(o.data)["instance"]) for o in out] == [
        (4, 100, 5), (5, 101, 5), (4, 102, 5)]
    assert sw.process_packet(1, pkt(1, 8)) == []  # unknown group: dropped


def test_ingress_clone_is_the_original_packet(sw):
    sw.clone_session_set(3, [(9, 0)])
    out = sw.process_packet(1, pkt(2, 3))
    by_port = {o.port: dec(o.data) for o in out}
    assert set(by_port) == {2, 9}
    assert by_port[2]["arg"] == 0xAA and by_port[2]["instance"] == 0
    assert by_port[9]["arg"] == 3 and by_port[9]["instance"] == 1
    # no session configured: no clone
    assert [o.port for o in sw.process_packet(1, pkt(2, 4))] == [2]


def test_egress_clone_sees_egress_changes(sw):
    sw.clone_session_set(5, [(8, 0)], truncate=2)
    out = sw.process_packet(1, pkt(12, 1))
    assert [o.port for o in out] == [1, 8]
    assert dec(out[0].data)["arg"] == 0xBB
    assert out[1].data == bytes([12, 0xBB])  # truncated to 2 bytes by the session


def test_resubmit_preserves_field_list_only(sw):
    out = sw.process_packet(1, pkt(3, 3))
    assert len(out) == 1
    d = dec(out[0].data)
    assert d["passes"] == 3 and d["instance"] == 0  # BMv2 sets NORMAL before unicast egress


def test_recirculate(sw):
    out = sw.process_packet(1, pkt(4, 2))
    assert len(out) == 1
    d = dec(out[0].data)
    assert d["passes"] == 2 and d["instance"] == 0


def test_endless_resubmit_is_bounded(sw):
    assert sw.process_packet(1, pkt(9)) == []
    assert sw.stats["dropped"][1] == 1


def test_digest_poll_and_callback(sw):
    sw.process_packet(6, pkt(5, 0x42))
    digests = sw.poll_digests()
    assert [(d.name, d.fields) for d in digests] == [("learn_t", (("op", 8, 5), ("arg", 8, 0x42), ("port", 9, 6)))]
    assert sw.poll_digests() == []
    got = []
    sw.on_digest = got.append
    sw.process_packet(2, pkt(5, 1))
    assert got and got[0].fields[2] == ("port", 9, 2)


def test_meter_colours_packets(sw, clock):
    sw.meter_set("m", 0, cir=1, cburst=1, pir=2, pburst=2)
    colours = [dec(sw.process_packet(1, pkt(6))[0].data)["color"] for _ in range(3)]
    assert colours == [0, 1, 2]
    clock.now += 1_000_000
    assert dec(sw.process_packet(1, pkt(6))[0].data)["color"] == 0
    assert sw.meter_get("m", 0) == (1, 1, 2, 2)


def test_ternary_acl_priority_and_direct_counter(sw):
    low = sw.table_add("acl", [Ternary(7, 0xFF), Ternary(0, 0)], "allow", [2], priority=1)
    high = sw.table_add("acl", [Ternary(7, 0xFF), Ternary(0x10, 0xF0)], "deny", [], priority=5)
    assert [o.port for o in sw.process_packet(1, pkt(7, 0x01))] == [2]
    assert sw.process_packet(1, pkt(7, 0x11)) == []
    assert sw.direct_counter_read("acl", low) == (1, 18)
    assert sw.direct_counter_read("acl", high) == (1, 18)
    sw.table_modify("acl", high, "allow", [3])
    assert [o.port for o in sw.process_packet(1, pkt(7, 0x11))] == [3]
    sw.table_delete("acl", high)
    assert [o.port for o in sw.process_packet(1, pkt(7, 0x11))] == [2]


def test_assert_failure_drops_only_that_packet(sw):
    assert sw.process_packet(1, pkt(8, 0)) == []
    assert [o.port for o in sw.process_packet(1, pkt(8, 1))] == [1]


def test_truncate_and_drops(sw):
    assert sw.process_packet(1, pkt(10, 5, b"payload")) == [(1, bytes([10, 5, 0]))]
    assert sw.process_packet(1, pkt(11)) == []
    assert sw.process_packet(1, pkt(13)) == []  # mark_to_drop in egress


def test_control_plane_errors_leave_state_unchanged(sw):
    with pytest.raises(SwitchError) as exc:
        sw.table_add("acl", [Exact(1)], "allow", [2], priority=1)
    assert exc.value.code == "INVALID_ARGUMENT"
    with pytest.raises(SwitchError) as exc:
        sw.table_add("nosuch", [Exact(1)], "allow", [2])
    assert exc.value.code == "NOT_FOUND"
    with pytest.raises(SwitchError) as exc:
        sw.register_write("seen", 16, 1)
    assert exc.value.code == "OUT_OF_RANGE"
    with pytest.raises(SwitchError):
        sw.register_write("seen", 0, 256)
    with pytest.raises(SwitchError):
        sw.counter_read("per_op", 8)
    for malformed in (lambda: sw.table_add("acl", None, "allow", [1]),
                      lambda: sw.table_add("acl", [1, 2], "allow", None, priority=1),
                      lambda: sw.mc_group_set(1, None)):
        with pytest.raises(SwitchError) as exc:
            malformed()
        assert exc.value.code == "INVALID_ARGUMENT"
    assert sw.table_entries("acl") == [] and sw.mc_groups() == {}
    assert sw.register_read("seen", 0) == 0


def test_clone_preserves_only_the_field_list(sw):
    sw.clone_session_set(4, [(7, 0)])
    out = {o.port: dec(o.data) for o in sw.process_packet(1, pkt(14, 4))}
    assert out[7]["passes"] == 0x5A and out[7]["color"] == 0  # kept survives, lost is reset
    assert out[1]["passes"] == 0


def test_log_msg_goes_to_logging(sw, caplog):
    with caplog.at_level("INFO", logger="softswitch.engine"):
        sw.process_packet(1, pkt(15, 9))
    assert "op 15 arg 9" in caplog.text


def test_hash_base_plus_modulo_and_random_range(sw):
    import zlib

    for arg in range(20):
        got = dec(sw.process_packet(1, pkt(16, arg))[0].data)["color"]
        assert got == 10 + zlib.crc32(bytes([arg])) % 5
    values = {dec(sw.process_packet(1, pkt(17))[0].data)["color"] for _ in range(200)}
    assert values <= set(range(3, 8)) and len(values) > 1


def test_many_replicas_and_clone_storm(sw):
    sw.mc_group_set(9, [(p, p) for p in range(200)])
    out = sw.process_packet(1, pkt(1, 9))
    assert [o.port for o in out] == list(range(200))
    sw.clone_session_set(6, [(2, 0)])
    out = sw.process_packet(1, pkt(18))
    assert 0 < len(out) < 5000  # bounded, and the switch still answers
    assert [o.port for o in sw.process_packet(1, pkt(0))] == [1]


def test_direct_meter_colours_per_entry(sw):
    h = sw.table_add("tm", [Exact(3)], "mread")
    assert dec(sw.process_packet(1, pkt(19, 3))[0].data)["color"] == 0  # unconfigured: green
    sw.direct_meter_set("tm", h, 1, 1, 1, 1)
    colours = [dec(sw.process_packet(1, pkt(19, 3))[0].data)["color"] for _ in range(2)]
    assert colours == [0, 2]
    assert sw.direct_meter_get("tm", h) == (1, 1, 1, 1)
    with pytest.raises(SwitchError):
        sw.direct_counter_read("tm", h)  # tm has a meter, not a counter


def test_bad_ingress_port_is_refused(sw):
    for port in (-1, 512, "1"):
        with pytest.raises(SwitchError):
            sw.process_packet(port, pkt(0))


def test_hash_input_skips_fields_of_invalid_headers(sw):
    import zlib

    for arg in (0, 7, 200):
        got = dec(sw.process_packet(1, pkt(20, arg))[0].data)["color"]
        assert got == zlib.crc32(bytes([arg])) % 251


def test_every_control_plane_method_refuses_arguments_of_the_wrong_type(sw):
    """docs/softswitch-api.md: each method succeeds or raises SwitchError, never TypeError."""
    import inspect

    not_control = {"process_packet", "poll_digests", "table", "profile"}
    methods = [n for n, f in inspect.getmembers(Switch, inspect.isfunction)
               if not n.startswith("_") and n not in not_control]
    assert len(methods) >= 38
    for name in methods:
        params = [p for p in inspect.signature(getattr(Switch, name)).parameters.values()
                  if p.name != "self" and p.default is inspect.Parameter.empty]
        if not params:
            continue  # nothing a caller could get wrong
        with pytest.raises(SwitchError) as exc:
            getattr(sw, name)(*[object() for _ in params])
        assert exc.value.code in ("INVALID_ARGUMENT", "NOT_FOUND"), name
    assert sw.table_entries("acl") == [] and sw.mc_groups() == {}
