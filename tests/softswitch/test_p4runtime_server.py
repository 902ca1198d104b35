"""The P4Runtime server driven over gRPC on loopback by a real client (generated stubs)."""

import queue
import threading

import grpc
import pytest
from finsy.proto import p4d, p4r
from p4rt_client import PROG, Client, delete, error_details, insert, modify

from softswitch.p4info import p4info_from_program
from softswitch.p4runtime.device import Device
from softswitch.p4runtime.pipeline_loader import device_config_from_file, load_program
from softswitch.p4runtime.server import P4RuntimeServer
from softswitch.runner import port_status_packet

A = p4r.SetForwardingPipelineConfigRequest
SC = grpc.StatusCode


@pytest.fixture(scope="module")
def config():
    device_config = device_config_from_file(PROG)
    return p4info_from_program(load_program(device_config)), device_config


class Ids:
    """Name -> ID lookups in a P4Info."""

    def __init__(self, p4info):
        self.p4info = p4info

    def table(self, alias):
        return next(t for t in self.p4info.tables if t.preamble.alias == alias)

    def action(self, alias):
        return next(a for a in self.p4info.actions if a.preamble.alias == alias).preamble.id

    def of(self, kind, alias):
        return next(x for x in getattr(self.p4info, kind) if x.preamble.alias == alias).preamble.id


@pytest.fixture
def server():
    device = Device(device_id=1, cpu_port=255)
    sent: list[tuple[int, bytes]] = []
    device.transmit = lambda port, data: sent.append((port, data))
    srv = P4RuntimeServer(device, "127.0.0.1:0").start()
    srv.sent = sent
    yield srv
    srv.stop(0)


@pytest.fixture
def client(server, config):
    c = Client(server.address)
    reply = c.connect()
    assert reply.arbitration.status.code == 0
    c.set_pipeline(*config)
    c.ids = Ids(config[0])
    yield c
    c.close()


def code_of(call) -> tuple:
    with pytest.raises(grpc.RpcError) as e:
        call()
    return e.value.code(), e.value.details(), e.value


def lpm_entry(ids, dst: bytes, plen: int, port: int, mac=b"\x02\x00\x00\x00\x00\x02") -> p4r.Entity:
    t = ids.table("ipv4_lpm")
    return p4r.Entity(table_entry=p4r.TableEntry(
        table_id=t.preamble.id,
        match=[p4r.FieldMatch(field_id=1, lpm=p4r.FieldMatch.LPM(value=dst, prefix_len=plen))],
        action=p4r.TableAction(action=p4r.Action(action_id=ids.action("set_nhop"), params=[
            p4r.Action.Param(param_id=1, value=mac), p4r.Action.Param(param_id=2, value=bytes([port]))]))))


def ipv4_frame(dst: bytes, src=b"\x0a\x00\x00\x01", proto=17) -> bytes:
    eth = b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00"
    ip = bytes([0x45, 0, 0, 28, 0, 1, 0, 0, 64, proto, 0, 0]) + src + dst
    total = sum(int.from_bytes(ip[i:i + 2], "big") for i in range(0, 20, 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    ip = ip[:10] + (0xFFFF - total).to_bytes(2, "big") + ip[12:]
    return eth + ip + b"\x00\x35\x00\x35\x00\x08\x00\x00"


# ---- capabilities, arbitration, pipeline -----------------------------------------------------


def test_capabilities(server):
    c = Client(server.address)
    try:
        assert c.stub.Capabilities(p4r.CapabilitiesRequest()).p4runtime_api_version.startswith("1.")
    finally:
        c.close()


def test_arbitration_primary_backup_and_promotion(server, config):
    a, b = Client(server.address, election_id=10), Client(server.address, election_id=5)
    try:
        assert a.connect().arbitration.status.code == 0
        rb = b.connect().arbitration
        assert (rb.status.code, rb.election_id.low) == (SC.ALREADY_EXISTS.value[0], 10)
        code, msg, _ = code_of(lambda: b.set_pipeline(*config))
        assert code == SC.PERMISSION_DENIED and "not the primary" in msg
        a.set_pipeline(*config)
        code, _, _ = code_of(lambda: b.write(lpm_entry_update(config)))
        assert code == SC.PERMISSION_DENIED
        a.close()  # primary goes away: the backup is promoted and told so
        promoted = b.stream.next("arbitration").arbitration
        assert (promoted.status.code, promoted.election_id.low) == (0, 5)
        b.write(lpm_entry_update(config))
    finally:
        b.close()


def lpm_entry_update(config):
    return insert(lpm_entry(Ids(config[0]), b"\x0a\x00\x00\x02", 32, 2))


def test_duplicate_election_id_and_wrong_device_end_the_stream(server):
    a, b = Client(server.address, election_id=3), Client(server.address, election_id=3)
    try:
        a.connect()
        err = b.connect()
        assert isinstance(err, grpc.RpcError) and err.code() == SC.INVALID_ARGUMENT
        c = Client(server.address, device_id=9)
        err = c.connect()
        assert isinstance(err, grpc.RpcError) and err.code() == SC.NOT_FOUND
        assert "unknown device id 9" in err.details()
        c.close()
    finally:
        a.close()
        b.close()


def test_no_pipeline_is_failed_precondition(server):
    c = Client(server.address)
    try:
        c.connect()
        for call in (lambda: c.read(p4r.Entity(table_entry=p4r.TableEntry())),
                     lambda: c.get_pipeline(),
                     lambda: c.write()):
            code, msg, _ = code_of(call)
            assert code == SC.FAILED_PRECONDITION and "no forwarding pipeline" in msg
    finally:
        c.close()


def test_pipeline_actions_and_cookie(server, config):
    p4info, dc = config
    c = Client(server.address)
    try:
        c.connect()
        c.set_pipeline(p4info, dc, action=A.VERIFY)
        assert code_of(lambda: c.get_pipeline())[0] == SC.FAILED_PRECONDITION  # VERIFY changes nothing
        code, msg, _ = code_of(lambda: c.set_pipeline(None, b"", action=A.COMMIT))
        assert code == SC.FAILED_PRECONDITION and "VERIFY_AND_SAVE" in msg
        c.set_pipeline(p4info, dc, action=A.VERIFY_AND_SAVE, cookie=77)
        assert code_of(lambda: c.get_pipeline())[0] == SC.FAILED_PRECONDITION
        c.set_pipeline(None, b"", action=A.COMMIT)
        R = p4r.GetForwardingPipelineConfigRequest
        got = c.get_pipeline(R.ALL)
        assert got.cookie.cookie == 77 and got.p4info == p4info and got.p4_device_config == dc
        got = c.get_pipeline(R.COOKIE_ONLY)
        assert got.cookie.cookie == 77 and not got.p4_device_config and not got.p4info.tables
        got = c.get_pipeline(R.P4INFO_AND_COOKIE)
        assert got.p4info == p4info and not got.p4_device_config
        got = c.get_pipeline(R.DEVICE_CONFIG_AND_COOKIE)
        assert got.p4_device_config == dc and not got.p4info.tables
    finally:
        c.close()


def test_bad_device_configs_are_refused_and_keep_the_pipeline(client, config):
    p4info, dc = config
    client.write(insert(lpm_entry(client.ids, b"\x0a\x00\x00\x02", 32, 2)))
    code, msg, _ = code_of(lambda: client.set_pipeline(p4info, b"control x {"))
    assert code == SC.INVALID_ARGUMENT and "does not compile" in msg and "p4_device_config" in msg
    code, msg, _ = code_of(lambda: client.set_pipeline(p4info, b"\xff\xfe"))
    assert code == SC.INVALID_ARGUMENT and "not P4 source" in msg
    wrong = type(p4info)()
    wrong.CopyFrom(p4info)
    wrong.tables[0].preamble.id += 1
    code, msg, _ = code_of(lambda: client.set_pipeline(wrong, dc))
    assert code == SC.INVALID_ARGUMENT and wrong.tables[0].preamble.name in msg
    wrong.CopyFrom(p4info)
    wrong.actions[-1].params.add(id=9, name="extra", bitwidth=8)
    code, msg, _ = code_of(lambda: client.set_pipeline(wrong, dc))
    assert code == SC.INVALID_ARGUMENT and "(9, 'extra', 8)" in msg
    assert len(client.read(p4r.Entity(table_entry=p4r.TableEntry(table_id=p4info.tables[0].preamble.id)))) == 1


def test_legacy_wrapped_device_config_is_accepted(server, config):
    p4info, dc = config
    wrapped = b"\x08\x00" + b"\x1a" + _varint(len(dc)) + dc
    c = Client(server.address)
    try:
        c.connect()
        c.set_pipeline(p4info, wrapped)
        assert c.get_pipeline().p4_device_config == wrapped
    finally:
        c.close()


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def test_reconcile_and_commit_keeps_entries(client, config):
    client.write(insert(lpm_entry(client.ids, b"\x0a\x00\x00\x02", 32, 2)))
    client.set_pipeline(*config, action=A.RECONCILE_AND_COMMIT)
    tid = client.ids.table("ipv4_lpm").preamble.id
    assert len(client.read(p4r.Entity(table_entry=p4r.TableEntry(table_id=tid)))) == 1
    client.set_pipeline(*config)  # VERIFY_AND_COMMIT starts from a clean state
    assert client.read(p4r.Entity(table_entry=p4r.TableEntry(table_id=tid))) == []


# ---- table entries ---------------------------------------------------------------------------


def test_table_entry_round_trip_modify_delete(client):
    ids = client.ids
    e = lpm_entry(ids, b"\x0a\x00\x00\x00", 24, 2)
    client.write(insert(e))
    [got] = client.read(p4r.Entity(table_entry=p4r.TableEntry(table_id=e.table_entry.table_id)))
    assert got == e  # read-write symmetry: canonical bytestrings, same message
    by_key = p4r.TableEntry(table_id=e.table_entry.table_id, match=e.table_entry.match)
    assert client.read(p4r.Entity(table_entry=by_key)) == [e]
    other = lpm_entry(ids, b"\x0a\x00\x01\x00", 24, 2).table_entry
    assert client.read(p4r.Entity(table_entry=p4r.TableEntry(table_id=other.table_id, match=other.match))) == []
    e2 = lpm_entry(ids, b"\x0a\x00\x00\x00", 24, 3)
    client.write(modify(e2))
    everything = client.read(p4r.Entity(table_entry=p4r.TableEntry()))  # all tables
    [got] = [x for x in everything if x.table_entry.table_id == e.table_entry.table_id]
    assert len(everything) == 2  # and the const entry of port_map
    assert got.table_entry.action.action.params[1].value == b"\x03"
    client.write(delete(e2))
    assert client.read(p4r.Entity(table_entry=p4r.TableEntry(table_id=e.table_entry.table_id))) == []


def acl_entry(ids, priority=10, src=b"\x0a\x00\x00\x00", mask=b"\xff\x00\x00\x00", lo=b"\x06", hi=b"\x11"):
    t = ids.table("acl")
    return p4r.Entity(table_entry=p4r.TableEntry(
        table_id=t.preamble.id, priority=priority,
        match=[p4r.FieldMatch(field_id=1, ternary=p4r.FieldMatch.Ternary(value=src, mask=mask)),
               p4r.FieldMatch(field_id=2, range=p4r.FieldMatch.Range(low=lo, high=hi)),
               p4r.FieldMatch(field_id=3, optional=p4r.FieldMatch.Optional(value=b"\x01"))],
        action=p4r.TableAction(action=p4r.Action(action_id=ids.action("to_cpu")))))


def test_ternary_range_optional_with_priority_and_direct_counter(client, server):
    ids = client.ids
    e = acl_entry(ids)
    e.table_entry.counter_data.packet_count = 5
    e.table_entry.counter_data.byte_count = 500
    client.write(insert(e))
    server.device.process(1, ipv4_frame(b"\x0a\x00\x00\x02"))
    q = p4r.Entity(table_entry=p4r.TableEntry(table_id=e.table_entry.table_id,
                                              counter_data=p4r.CounterData()))
    [got] = client.read(q)
    assert got.table_entry.priority == 10 and list(got.table_entry.match) == list(e.table_entry.match)
    assert got.table_entry.counter_data.packet_count == 6
    [dc] = client.read(p4r.Entity(direct_counter_entry=p4r.DirectCounterEntry(
        table_entry=p4r.TableEntry(table_id=e.table_entry.table_id))))
    assert dc.direct_counter_entry.data.packet_count == 6
    client.write(modify(p4r.Entity(direct_counter_entry=p4r.DirectCounterEntry(
        table_entry=got.table_entry, data=p4r.CounterData(packet_count=0, byte_count=0)))))
    [got] = client.read(q)
    assert got.table_entry.counter_data.packet_count == 0
    # same match, other priority: a different entry
    client.write(insert(acl_entry(ids, priority=20)))
    assert len(client.read(p4r.Entity(table_entry=p4r.TableEntry(table_id=e.table_entry.table_id)))) == 2


def test_default_entries(client):
    ids = client.ids
    lpm = ids.table("ipv4_lpm").preamble.id
    default = p4r.TableEntry(table_id=lpm, is_default_action=True,
                             action=p4r.TableAction(action=p4r.Action(action_id=ids.action("NoAction"))))
    client.write(modify(p4r.Entity(table_entry=default)))
    [got] = client.read(p4r.Entity(table_entry=p4r.TableEntry(table_id=lpm, is_default_action=True)))
    assert got.table_entry.action.action.action_id == ids.action("NoAction")
    code, msg, exc = code_of(lambda: client.write(insert(p4r.Entity(table_entry=default))))
    assert error_details(exc)[0][0] == "INVALID_ARGUMENT"
    dmac = p4r.TableEntry(table_id=ids.table("dmac").preamble.id, is_default_action=True,
                          action=p4r.TableAction(action=p4r.Action(action_id=ids.action("drop"))))
    _, _, exc = code_of(lambda: client.write(modify(p4r.Entity(table_entry=dmac))))
    assert error_details(exc)[0] == ("PERMISSION_DENIED", f"{ids.table('dmac').preamble.name}: the default action is const")


def test_const_table_entries_are_read_and_protected(client):
    ids = client.ids
    t = ids.table("port_map")
    assert t.is_const_table and t.has_initial_entries
    [got] = client.read(p4r.Entity(table_entry=p4r.TableEntry(table_id=t.preamble.id)))
    assert got.table_entry.match[0].exact.value == b"\x07"
    _, _, exc = code_of(lambda: client.write(delete(got)))
    assert error_details(exc)[0][0] == "PERMISSION_DENIED"


def test_continue_on_error_reports_one_error_per_update(client):
    ids = client.ids
    a = lpm_entry(ids, b"\x0a\x00\x00\x01", 32, 1)
    b = lpm_entry(ids, b"\x0a\x00\x00\x02", 32, 2)
    client.write(insert(a))
    code, msg, exc = code_of(lambda: client.write(insert(b), insert(a), delete(lpm_entry(ids, b"\x0b\x00\x00\x00", 8, 1))))
    assert code == SC.UNKNOWN and "2 of 3 updates failed" in msg
    details = error_details(exc)
    assert [d[0] for d in details] == ["OK", "ALREADY_EXISTS", "NOT_FOUND"]
    assert "already exists" in details[1][1]
    tid = a.table_entry.table_id
    assert len(client.read(p4r.Entity(table_entry=p4r.TableEntry(table_id=tid)))) == 2


def _one_error(client, update) -> tuple[str, str]:
    with pytest.raises(grpc.RpcError) as e:
        client.write(update)
    assert e.value.code() == SC.UNKNOWN
    [detail] = error_details(e.value)
    return detail


@pytest.mark.parametrize(
    ("mutate", "code", "text"),
    [
        (lambda e, ids: setattr(e.table_entry, "table_id", 12345), "NOT_FOUND", "unknown table id 12345"),
        (lambda e, ids: setattr(e.table_entry.action.action, "action_id", 999), "NOT_FOUND", "unknown action id 999"),
        (lambda e, ids: setattr(e.table_entry.action.action, "action_id", ids.action("to_cpu")),
         "INVALID_ARGUMENT", "is not an action of this table"),
        (lambda e, ids: setattr(e.table_entry.match[0].lpm, "value", b"\x0a\x00\x00\x00\x01"),
         "INVALID_ARGUMENT", "too long for 32 bits"),
        (lambda e, ids: setattr(e.table_entry.match[0].lpm, "value", b""), "INVALID_ARGUMENT", "empty bytestring"),
        (lambda e, ids: setattr(e.table_entry.match[0].lpm, "prefix_len", 8), "INVALID_ARGUMENT", "beyond the /8 prefix"),
        (lambda e, ids: setattr(e.table_entry.match[0].lpm, "prefix_len", 33), "INVALID_ARGUMENT", "prefix length 33"),
        (lambda e, ids: setattr(e.table_entry.action.action.params[1], "value", b"\x02\x00"),
         "INVALID_ARGUMENT", "does not fit in 9 bits"),
        (lambda e, ids: e.table_entry.action.action.params.pop(), "INVALID_ARGUMENT", "missing params ['port']"),
        (lambda e, ids: setattr(e.table_entry.action.action.params[1], "param_id", 1), "INVALID_ARGUMENT", "given twice"),
        (lambda e, ids: setattr(e.table_entry, "priority", 5), "INVALID_ARGUMENT", "priority must be 0"),
        (lambda e, ids: setattr(e.table_entry.match[0], "field_id", 4), "INVALID_ARGUMENT", "unknown match field id 4"),
        (lambda e, ids: e.table_entry.match[0].exact.SetInParent(), "INVALID_ARGUMENT", "expected a lpm match"),
    ],
)
def test_invalid_table_entries(client, mutate, code, text):
    e = lpm_entry(client.ids, b"\x0a\x00\x00\x01", 32, 1)
    mutate(e, client.ids)
    got_code, msg = _one_error(client, insert(e))
    assert (got_code, text in msg) == (code, True), msg
    assert client.read(p4r.Entity(table_entry=p4r.TableEntry())) == [
        x for x in client.read(p4r.Entity(table_entry=p4r.TableEntry())) if x.table_entry.table_id ==
        client.ids.table("port_map").preamble.id
    ]  # nothing was added


@pytest.mark.parametrize(
    ("kw", "text"),
    [
        ({"priority": 0}, "need a priority"),
        ({"mask": b"\x00"}, "all-zero mask"),
        ({"src": b"\x0a\x00\x00\x01"}, "outside the mask"),
        ({"lo": b"\x12"}, "is above high"),
        ({"lo": b"\x00", "hi": b"\xff"}, "full range"),
    ],
)
def test_invalid_acl_entries(client, kw, text):
    code, msg = _one_error(client, insert(acl_entry(client.ids, **kw)))
    assert code == "INVALID_ARGUMENT" and text in msg, msg


def test_wrong_atomicity_and_missing_election_id(client):
    e = lpm_entry(client.ids, b"\x0a\x00\x00\x01", 32, 1)
    code, msg, _ = code_of(lambda: client.write(insert(e), atomicity=p4r.WriteRequest.ROLLBACK_ON_ERROR))
    assert code == SC.UNIMPLEMENTED
    code, msg, _ = code_of(lambda: client.write(insert(e), election_id=2))
    assert code == SC.PERMISSION_DENIED and "is not the primary" in msg
    code, msg, _ = code_of(lambda: client.write(insert(e), role="other"))
    assert code == SC.NOT_FOUND and "'other' is not a role of this device" in msg
    code, msg, _ = code_of(lambda: client.write(insert(e), device_id=4))
    assert code == SC.NOT_FOUND


# ---- action profiles, counters, meters, registers, PRE ---------------------------------------


def test_action_profile_members_groups_and_indirect_entries(client, server):
    ids = client.ids
    prof = ids.of("action_profiles", "ecmp_selector")
    nhop = ids.action("set_nhop")

    def member(mid, port):
        return p4r.Entity(action_profile_member=p4r.ActionProfileMember(
            action_profile_id=prof, member_id=mid, action=p4r.Action(action_id=nhop, params=[
                p4r.Action.Param(param_id=1, value=b"\x02"), p4r.Action.Param(param_id=2, value=bytes([port]))])))

    group = p4r.Entity(action_profile_group=p4r.ActionProfileGroup(
        action_profile_id=prof, group_id=1, members=[p4r.ActionProfileGroup.Member(member_id=1, weight=1),
                                                     p4r.ActionProfileGroup.Member(member_id=2, weight=1)]))
    client.write(insert(member(1, 3)), insert(member(2, 4)), insert(group))
    t = ids.table("ecmp").preamble.id
    entry = p4r.Entity(table_entry=p4r.TableEntry(
        table_id=t, match=[p4r.FieldMatch(field_id=1, exact=p4r.FieldMatch.Exact(value=b"\x0a\x00\x00\x09"))],
        action=p4r.TableAction(action_profile_group_id=1)))
    client.write(insert(entry))
    server.device.process(1, ipv4_frame(b"\x0a\x00\x00\x09"))
    assert server.sent and server.sent[-1][0] in (3, 4)
    assert len(client.read(p4r.Entity(action_profile_member=p4r.ActionProfileMember()))) == 2
    [g] = client.read(p4r.Entity(action_profile_group=p4r.ActionProfileGroup(action_profile_id=prof)))
    assert g == group
    assert _one_error(client, delete(member(1, 3)))[0] == "FAILED_PRECONDITION"
    assert _one_error(client, insert(member(1, 3)))[0] == "ALREADY_EXISTS"
    bad = p4r.Entity(table_entry=p4r.TableEntry(table_id=t, match=entry.table_entry.match,
                                                action=p4r.TableAction(action_profile_group_id=7)))
    assert _one_error(client, modify(bad))[0] == "NOT_FOUND"


def test_indirect_counters_meters_registers(client, server):
    ids = client.ids
    rx = ids.of("counters", "port_rx")
    server.device.process(3, ipv4_frame(b"\x0a\x00\x00\x09"))
    [c] = client.read(p4r.Entity(counter_entry=p4r.CounterEntry(counter_id=rx, index=p4r.Index(index=3))))
    assert c.counter_entry.data.packet_count == 1 and c.counter_entry.data.byte_count == 42
    assert len(client.read(p4r.Entity(counter_entry=p4r.CounterEntry(counter_id=rx)))) == 64
    client.write(modify(p4r.Entity(counter_entry=p4r.CounterEntry(
        counter_id=rx, index=p4r.Index(index=3), data=p4r.CounterData(packet_count=9)))))
    [c] = client.read(p4r.Entity(counter_entry=p4r.CounterEntry(counter_id=rx, index=p4r.Index(index=3))))
    assert c.counter_entry.data.packet_count == 9
    assert _one_error(client, insert(c))[0] == "INVALID_ARGUMENT"
    oob = p4r.Entity(counter_entry=p4r.CounterEntry(counter_id=rx, index=p4r.Index(index=64)))
    assert _one_error(client, modify(oob)) == ("OUT_OF_RANGE", "TestIngress.port_rx: index 64 out of range 0..63")

    m = ids.of("meters", "port_meter")
    cfg = p4r.MeterConfig(cir=100, cburst=10, pir=200, pburst=20)
    client.write(modify(p4r.Entity(meter_entry=p4r.MeterEntry(meter_id=m, index=p4r.Index(index=2), config=cfg))))
    [got] = client.read(p4r.Entity(meter_entry=p4r.MeterEntry(meter_id=m, index=p4r.Index(index=2))))
    assert got.meter_entry.config == cfg

    r = ids.of("registers", "last_seq")
    client.write(modify(p4r.Entity(register_entry=p4r.RegisterEntry(
        register_id=r, index=p4r.Index(index=1), data=p4d.P4Data(bitstring=b"\x01\x02")))))
    [got] = client.read(p4r.Entity(register_entry=p4r.RegisterEntry(register_id=r, index=p4r.Index(index=1))))
    assert got.register_entry.data.bitstring == b"\x01\x02"
    too_wide = p4r.Entity(register_entry=p4r.RegisterEntry(
        register_id=r, index=p4r.Index(index=1), data=p4d.P4Data(bitstring=b"\x01\x00\x00\x00\x00")))
    assert _one_error(client, modify(too_wide))[0] == "INVALID_ARGUMENT"


def test_multicast_groups_and_clone_sessions(client, server):
    ids = client.ids
    grp = p4r.Entity(packet_replication_engine_entry=p4r.PacketReplicationEngineEntry(
        multicast_group_entry=p4r.MulticastGroupEntry(multicast_group_id=5, replicas=[
            p4r.Replica(egress_port=1, instance=0), p4r.Replica(egress_port=2, instance=0)])))
    client.write(insert(grp))
    dmac = ids.table("dmac").preamble.id
    client.write(insert(p4r.Entity(table_entry=p4r.TableEntry(
        table_id=dmac, match=[p4r.FieldMatch(field_id=1, exact=p4r.FieldMatch.Exact(value=b"\xff" * 6))],
        action=p4r.TableAction(action=p4r.Action(action_id=ids.action("flood"), params=[
            p4r.Action.Param(param_id=1, value=b"\x05")]))))))
    frame = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x07" + b"\x08\x06" + b"\x00" * 28
    server.device.process(3, frame)
    assert sorted(p for p, _ in server.sent) == [1, 2]
    [got] = client.read(p4r.Entity(packet_replication_engine_entry=p4r.PacketReplicationEngineEntry()))
    assert got == grp
    assert _one_error(client, insert(grp))[0] == "ALREADY_EXISTS"
    dup = p4r.Entity(packet_replication_engine_entry=p4r.PacketReplicationEngineEntry(
        multicast_group_entry=p4r.MulticastGroupEntry(multicast_group_id=6, replicas=[
            p4r.Replica(egress_port=1), p4r.Replica(egress_port=1)])))
    assert _one_error(client, insert(dup))[0] == "INVALID_ARGUMENT"
    session = p4r.Entity(packet_replication_engine_entry=p4r.PacketReplicationEngineEntry(
        clone_session_entry=p4r.CloneSessionEntry(session_id=9, replicas=[p4r.Replica(egress_port=255)],
                                                  packet_length_bytes=64)))
    client.write(insert(session))
    client.write(delete(grp))
    [got] = client.read(p4r.Entity(packet_replication_engine_entry=p4r.PacketReplicationEngineEntry()))
    assert got == session
    assert _one_error(client, delete(grp))[0] == "NOT_FOUND"


# ---- packet I/O, digests, port status --------------------------------------------------------


def test_packet_out_and_packet_in(client, server):
    # PacketOut: metadata egress_port=2 -> the frame leaves on port 2 without the header
    payload = b"\x02" * 12 + b"\x88\x99" + b"x" * 46
    client.stream.send(p4r.StreamMessageRequest(packet=p4r.PacketOut(
        payload=payload, metadata=[p4r.PacketMetadata(metadata_id=1, value=b"\x02")])))
    for _ in range(200):
        if server.sent:
            break
        threading.Event().wait(0.01)
    assert server.sent == [(2, payload)]
    # acl to_cpu -> PacketIn with ingress_port metadata
    client.write(insert(acl_entry(client.ids)))
    frame = ipv4_frame(b"\x0a\x00\x00\x09")
    server.device.process(1, frame)
    msg = client.stream.next("packet").packet
    assert msg.payload == frame
    assert [(m.metadata_id, m.value) for m in msg.metadata] == [(1, b"\x01"), (2, b"\x00")]
    # a bad PacketOut gets a stream error, the stream stays up
    client.stream.send(p4r.StreamMessageRequest(packet=p4r.PacketOut(
        payload=payload, metadata=[p4r.PacketMetadata(metadata_id=9, value=b"\x02")])))
    err = client.stream.next("error").error
    assert err.canonical_code == SC.INVALID_ARGUMENT.value[0] and "metadata id 9" in err.message
    assert err.packet_out.packet_out.payload == payload


def test_backup_packet_out_is_refused(server, config):
    a, b = Client(server.address, election_id=2), Client(server.address, election_id=1)
    try:
        a.connect()
        a.set_pipeline(*config)
        b.connect()
        b.stream.send(p4r.StreamMessageRequest(packet=p4r.PacketOut(payload=b"\x00" * 60)))
        err = b.stream.next("error").error
        assert err.canonical_code == SC.PERMISSION_DENIED.value[0]
    finally:
        a.close()
        b.close()


def test_digest_list_and_ack(client, server):
    ids = client.ids
    did = ids.of("digests", "learn_t")
    entry = p4r.Entity(digest_entry=p4r.DigestEntry(digest_id=did, config=p4r.DigestEntry.Config(
        max_timeout_ns=0, max_list_size=1, ack_timeout_ns=10**9)))
    client.write(insert(entry))
    assert client.read(p4r.Entity(digest_entry=p4r.DigestEntry())) == [entry]
    frame = b"\x02\x00\x00\x00\x00\x09" + b"\x02\x00\x00\x00\x00\x07" + b"\x88\x99" + b"\x00" * 46
    server.device.process(4, frame)
    server.device.process(4, frame)  # same data while unacknowledged: suppressed
    msg = client.stream.next("digest").digest
    assert msg.digest_id == did and len(msg.data) == 1
    fields = [m.bitstring for m in msg.data[0].struct.members]
    assert fields == [b"\x02\x00\x00\x00\x00\x07", b"\x04"]
    with pytest.raises(queue.Empty):  # the duplicate was suppressed
        client.stream.next("digest", timeout=0.2)
    client.stream.send(p4r.StreamMessageRequest(digest_ack=p4r.DigestListAck(digest_id=did, list_id=msg.list_id)))
    again = None
    for _ in range(50):  # the ack travels on the stream: retry until it has been handled
        server.device.process(4, frame)  # acknowledged: reported again
        try:
            again = client.stream.next("digest", timeout=0.1).digest
            break
        except queue.Empty:
            pass
    assert again is not None and again.list_id != msg.list_id
    assert _one_error(client, insert(entry))[0] == "ALREADY_EXISTS"


def test_port_status_packet_reaches_program_and_controller(client, server):
    p = server.device.pipeline
    widths = [m.bitwidth for m in p.schema.controller_headers["packet_out"].metadata]
    server.device.process(255, port_status_packet(widths, 2, False, 7))
    msg = client.stream.next("packet").packet
    assert msg.payload[12:14] == b"\x88\xb5" and msg.payload[14:22] == bytes([1, 1, 0, 2, 0, 0, 0, 7])
    ev = client.ids.of("counters", "port_events")
    [c] = client.read(p4r.Entity(counter_entry=p4r.CounterEntry(counter_id=ev, index=p4r.Index(index=2))))
    assert c.counter_entry.data.packet_count == 1


def test_many_failures_fit_in_the_trailer(client):
    # 120 failing updates: every one keeps its code and the trailer stays under gRPC's
    # default 8 KiB soft metadata limit (above it clients may refuse the reply)
    ids = client.ids
    bad = [insert(lpm_entry(ids, (0x0B000000 + i).to_bytes(4, "big"), 32, 1)) for i in range(120)]
    for u in bad:
        u.entity.table_entry.action.action.action_id = 999
    code, _, exc = code_of(lambda: client.write(*bad))
    details = error_details(exc)
    assert code == SC.UNKNOWN and len(details) == 120
    assert {d[0] for d in details} == {"NOT_FOUND"} and "unknown action id 999" in details[0][1]


def test_direct_meter_config_round_trip(client):
    e = acl_entry(client.ids)
    cfg = p4r.MeterConfig(cir=1000, cburst=100, pir=2000, pburst=200)
    e.table_entry.meter_config.CopyFrom(cfg)
    client.write(insert(e))
    tid = e.table_entry.table_id
    [got] = client.read(p4r.Entity(table_entry=p4r.TableEntry(table_id=tid)))
    assert got.table_entry.meter_config == cfg
    cfg2 = p4r.MeterConfig(cir=10, cburst=1, pir=20, pburst=2)
    plain = p4r.TableEntry()
    plain.CopyFrom(got.table_entry)
    plain.ClearField("meter_config")
    client.write(modify(p4r.Entity(direct_meter_entry=p4r.DirectMeterEntry(table_entry=plain, config=cfg2))))
    [dm] = client.read(p4r.Entity(direct_meter_entry=p4r.DirectMeterEntry(
        table_entry=p4r.TableEntry(table_id=tid))))
    assert dm.direct_meter_entry.config == cfg2
    lpm = client.ids.table("ipv4_lpm").preamble.id
    code, msg = _one_error(client, modify(p4r.Entity(direct_meter_entry=p4r.DirectMeterEntry(
        table_entry=p4r.TableEntry(table_id=lpm, match=lpm_entry(client.ids, b"\x0a\x00\x00\x01", 32, 1)
                                   .table_entry.match), config=cfg2))))
    assert code == "NOT_FOUND"  # no such entry (and the table has no direct meter)


def test_raw_program_source_is_a_device_config(server, config):
    c = Client(server.address)
    try:
        c.connect()
        c.set_pipeline(config[0], PROG.read_bytes())  # includes only core.p4 / v1model.p4
        assert c.get_pipeline().p4_device_config == PROG.read_bytes()
    finally:
        c.close()


def test_softswitch_run_serves_and_stops_on_sigterm(tmp_path):
    """`softswitch run --no-p4` without ports: serves P4Runtime, refuses a busy address, exits 0."""
    import signal
    import subprocess
    import sys
    import time

    root = PROG.resolve().parents[2]
    ready = tmp_path / "ready"
    cmd = [sys.executable, "-m", "softswitch.cli", "run", "--no-p4", "--grpc-addr", "127.0.0.1:0",
           "--ready-file", str(ready), "--device-id", "3", "--name", "ssp-run"]
    proc = subprocess.Popen(cmd, cwd=root, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        address = ready.read_text().strip()
        c = Client(address, device_id=3)
        try:
            assert c.stub.Capabilities(p4r.CapabilitiesRequest()).p4runtime_api_version
            c.connect()
            assert code_of(lambda: c.get_pipeline())[0] == SC.FAILED_PRECONDITION  # --no-p4
        finally:
            c.close()
        busy = subprocess.run([*cmd[:6], address, "--device-id", "4"], cwd=root, capture_output=True,
                              text=True, timeout=60)
        assert busy.returncode == 1 and "cannot listen on" in busy.stderr and "Traceback" not in busy.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "switch=ssp-run serving" in err and "switch=ssp-run stopping" in err


def test_refused_meter_config_leaves_no_entry(client):
    e = acl_entry(client.ids)
    e.table_entry.meter_config.CopyFrom(p4r.MeterConfig(cir=100, cburst=1, pir=10, pburst=1))
    code, msg = _one_error(client, insert(e))
    assert code == "INVALID_ARGUMENT" and "cir 100 exceeds pir 10" in msg
    tid = e.table_entry.table_id
    assert client.read(p4r.Entity(table_entry=p4r.TableEntry(table_id=tid))) == []
    e.table_entry.ClearField("meter_config")
    client.write(insert(e))  # the same entry without the bad config is accepted
    bad = p4r.TableEntry()
    bad.CopyFrom(e.table_entry)
    bad.action.action.action_id = client.ids.action("drop")
    bad.meter_config.CopyFrom(p4r.MeterConfig(cir=100, cburst=1, pir=10, pburst=1))
    assert _one_error(client, modify(p4r.Entity(table_entry=bad)))[0] == "INVALID_ARGUMENT"
    [got] = client.read(p4r.Entity(table_entry=p4r.TableEntry(table_id=tid)))
    assert got.table_entry.action.action.action_id == client.ids.action("to_cpu")  # unchanged


def test_softswitch_run_reports_program_errors_against_the_file(tmp_path):
    import subprocess
    import sys

    bad = tmp_path / "bad.p4"
    bad.write_text("#include <core.p4>\ncontrol x(\n")
    r = subprocess.run([sys.executable, "-m", "softswitch.cli", "run", str(bad), "--grpc-addr", "127.0.0.1:0"],
                       capture_output=True, text=True, cwd=PROG.resolve().parents[2], timeout=120)
    assert r.returncode == 1 and f"{bad}:2:" in r.stderr and "Traceback" not in r.stderr
