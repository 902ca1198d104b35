"""The P4Runtime server under hostile or careless clients, each on a real server on loopback.

Hostile includes and macro bombs in device configs, idle streams next to a primary's
Write, Writes racing RECONCILE_AND_COMMIT, batches of 1, 400 and 10,000 updates,
made-up roles and a client that never reads its stream. No timing thresholds: the
tests assert what completes and what state results, with generous deadlines.
"""

import logging
import queue
import threading

import grpc
import pytest
from finsy.proto import p4r, p4r_grpc
from p4rt_client import PROG, Client, Stream, error_details, insert, modify, u128

from softswitch.p4info import p4info_from_program
from softswitch.p4runtime.device import Device
from softswitch.p4runtime.pipeline_loader import device_config_from_file, load_program
from softswitch.p4runtime.server import P4RuntimeServer
from softswitch.runner import port_status_packet

A = p4r.SetForwardingPipelineConfigRequest
SC = grpc.StatusCode
DEADLINE = 60  # seconds: generous, the tests assert completion, not speed


@pytest.fixture(scope="module")
def config():
    device_config = device_config_from_file(PROG)
    return p4info_from_program(load_program(device_config)), device_config


def start_server(**limits) -> P4RuntimeServer:
    from softswitch.p4runtime.server import ServerLimits

    return P4RuntimeServer(Device(device_id=1, cpu_port=255), "127.0.0.1:0",
                           limits=ServerLimits(**limits)).start()


@pytest.fixture
def server():
    srv = start_server()
    yield srv
    srv.stop(0)


@pytest.fixture
def primary(server, config):
    c = Client(server.address, election_id=1000)
    assert c.connect().arbitration.status.code == 0
    c.set_pipeline(*config)
    yield c
    c.close()


def wait_for(condition, timeout: float = DEADLINE) -> bool:
    """Poll `condition` until it holds (True) or `timeout` seconds pass (False)."""
    done = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if condition():
            return True
        done.wait(0.01)
    return condition()


def rpc_error(call) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as e:
        call()
    return e.value


def lpm(p4info, i: int, port: int = 1) -> p4r.Entity:
    table = next(t for t in p4info.tables if t.preamble.alias == "ipv4_lpm").preamble.id
    action = next(a for a in p4info.actions if a.preamble.alias == "set_nhop").preamble.id
    return p4r.Entity(table_entry=p4r.TableEntry(
        table_id=table,
        match=[p4r.FieldMatch(field_id=1, lpm=p4r.FieldMatch.LPM(
            value=(0x0A000000 + i).to_bytes(4, "big"), prefix_len=32))],
        action=p4r.TableAction(action=p4r.Action(action_id=action, params=[
            p4r.Action.Param(param_id=1, value=b"\x02\x00\x00\x00\x00\x01"),
            p4r.Action.Param(param_id=2, value=port.to_bytes(2, "big").lstrip(b"\x00") or b"\x00")])))
    )


def lpm_table(client: Client, p4info) -> dict[int, int]:
    """ipv4_lpm as {destination - 10.0.0.0: port}."""
    table = next(t for t in p4info.tables if t.preamble.alias == "ipv4_lpm").preamble.id
    out = {}
    for e in client.read(p4r.Entity(table_entry=p4r.TableEntry(table_id=table))):
        te = e.table_entry
        key = int.from_bytes(te.match[0].lpm.value, "big") - 0x0A000000
        out[key] = int.from_bytes(te.action.action.params[1].value, "big")
    return out


# ---------------------------------------------------------------- device configs


def test_config_including_a_host_program_is_refused_and_not_installed(primary, server, config,
                                                                      tmp_path, monkeypatch):
    (tmp_path / "prog.p4").write_text(PROG.read_text())
    host = tmp_path / "prog.p4"
    monkeypatch.chdir(tmp_path)  # a path relative to the server's working directory too
    for text in (f'#include "{host}"\n', '#include "prog.p4"\n', "#include <prog.p4>\n"):
        err = rpc_error(lambda t=text: primary.set_pipeline(config[0], t.encode(), action=A.VERIFY))
        assert err.code() == SC.INVALID_ARGUMENT
        directive = text.strip()
        assert f"p4_device_config:1:1: error: {directive} is refused" in err.details()
    assert server.device.pipeline.device_config == config[1]  # unchanged


def test_config_refusal_reveals_nothing_about_host_files(primary, config):
    messages = []
    for path in ("/etc/passwd", "/no/such/file", "/proc/self/environ", "/dev/zero"):
        err = rpc_error(lambda p=path: primary.set_pipeline(
            config[0], f'#include "{p}"\n'.encode(), action=A.VERIFY_AND_COMMIT))
        assert err.code() == SC.INVALID_ARGUMENT
        messages.append(err.details().replace(path, "PATH"))
    assert len(set(messages)) == 1, messages
    assert "root:" not in messages[0]


def test_macro_bomb_is_refused_while_writes_go_on(primary, config):
    bomb = "#define A0 x x\n" + "".join(f"#define A{i} A{i - 1} A{i - 1}\n" for i in range(1, 24))
    bomb += "A23\n"
    verify_done = threading.Event()
    result: list = []

    def verify():
        try:
            primary.set_pipeline(config[0], bomb.encode(), action=A.VERIFY)
        except grpc.RpcError as exc:
            result.append(exc)
        verify_done.set()

    t = threading.Thread(target=verify)
    t.start()
    written_before_verify_ended = 0
    i = 0
    while not verify_done.is_set():
        # never stalled by the compilation (the table holds 1024: then entries are modified)
        primary.write(insert(lpm(config[0], i)) if i < 1000 else modify(lpm(config[0], i % 1000)))
        i += 1
        if not verify_done.is_set():
            written_before_verify_ended += 1
    t.join(DEADLINE)
    (err,) = result
    assert err.code() == SC.INVALID_ARGUMENT
    assert "p4_device_config:25:1: error: macro expansion exceeds the limit" in err.details()
    assert written_before_verify_ended >= 1
    assert len(lpm_table(primary, config[0])) == min(i, 1000)


# ---------------------------------------------------------------- streams


def idle_stream(address: str):
    """A StreamChannel that never sends anything and is never read."""
    channel = grpc.insecure_channel(address)
    requests: queue.Queue = queue.Queue()
    call = p4r_grpc.P4RuntimeStub(channel).StreamChannel(iter(requests.get, None))
    return channel, requests, call


def test_primary_writes_with_fifty_clients_and_idle_streams_connected(server, config):
    backups = [Client(server.address, election_id=i) for i in range(1, 51)]
    idle = [idle_stream(server.address) for _ in range(15)]
    primary = Client(server.address, election_id=1000)
    try:
        replies = [b.connect() for b in backups]  # every one of the 50 is answered
        assert all(not isinstance(r, grpc.RpcError) for r in replies)
        assert primary.connect().arbitration.status.code == 0
        primary.set_pipeline(*config)
        primary.stub.Write(p4r.WriteRequest(device_id=1, election_id=u128(1000),
                                            updates=[insert(lpm(config[0], 1))]), timeout=DEADLINE)
        primary.stub.Capabilities(p4r.CapabilitiesRequest(), timeout=DEADLINE)
        assert lpm_table(primary, config[0]) == {1: 1}
        assert wait_for(lambda: server.service.stats()["streams_open"] == 50 + 15 + 1)
    finally:
        for b in backups:
            b.close()
        for channel, requests, call in idle:
            requests.put(None)
            call.cancel()
            channel.close()
        primary.close()


def test_every_rpc_admitted_has_a_thread(config):
    """With 8 RPCs admitted at once, 7 open streams (each holds its thread) leave one for
    the primary's unary calls: they complete. With 8 streams open a unary call is refused
    by gRPC (RESOURCE_EXHAUSTED), never left waiting for a thread."""
    srv = start_server(rpcs=8)
    idle = [idle_stream(srv.address) for _ in range(6)]
    primary = Client(srv.address, election_id=1000)
    try:
        assert wait_for(lambda: srv.service.stats()["streams_open"] == 6)
        assert primary.connect().arbitration.status.code == 0
        primary.set_pipeline(*config)
        primary.stub.Write(p4r.WriteRequest(device_id=1, election_id=u128(1000),
                                            updates=[insert(lpm(config[0], 1))]), timeout=DEADLINE)
        assert lpm_table(primary, config[0]) == {1: 1}
        idle.append(idle_stream(srv.address))
        assert wait_for(lambda: srv.service.stats()["streams_open"] == 8)
        refused = rpc_error(lambda: primary.stub.Capabilities(p4r.CapabilitiesRequest(),
                                                               timeout=DEADLINE))
        assert refused.code() == SC.RESOURCE_EXHAUSTED
    finally:
        for channel, requests, call in idle:
            requests.put(None)
            call.cancel()
            channel.close()
        primary.close()
        srv.stop(0)


def test_streams_per_peer_are_limited():
    srv = start_server(streams_per_host=3)
    clients = [Client(srv.address, election_id=i) for i in range(1, 5)]
    try:
        replies = [c.connect() for c in clients]
        assert all(not isinstance(r, grpc.RpcError) for r in replies[:3])
        assert isinstance(replies[3], grpc.RpcError)
        assert replies[3].code() == SC.RESOURCE_EXHAUSTED
        assert "3 streams are open from 127.0.0.1" in replies[3].details()
        clients[0].close()  # a closed stream frees its place
        again = Client(srv.address, election_id=9)
        clients.append(again)
        for _ in range(100):
            r = again.connect()
            if not isinstance(r, grpc.RpcError):
                break
            again.close()
            again = Client(srv.address, election_id=9)
            clients.append(again)
        assert not isinstance(r, grpc.RpcError)
        assert srv.service.stats()["streams_refused"] >= 1
    finally:
        for c in clients:
            c.close()
        srv.stop(0)


def gnmi_subscription(address: str):
    """A gNMI STREAM subscription to every port's oper-status: its call and first reply."""
    from finsy.proto import gnmi, gnmi_grpc

    channel = grpc.insecure_channel(address)
    path = gnmi.Path(elem=[gnmi.PathElem(name="interfaces"),
                           gnmi.PathElem(name="interface", key={"name": "*"}),
                           gnmi.PathElem(name="state"), gnmi.PathElem(name="oper-status")])
    request = gnmi.SubscribeRequest(subscribe=gnmi.SubscriptionList(
        mode=gnmi.SubscriptionList.STREAM, subscription=[gnmi.Subscription(path=path)]))
    requests: queue.Queue = queue.Queue()
    requests.put(request)
    call = gnmi_grpc.gNMIStub(channel).Subscribe(iter(requests.get, None))
    try:
        first = next(call)
    except grpc.RpcError as exc:
        first = exc
    return channel, requests, call, first


def test_gnmi_subscriptions_are_limited_and_unary_calls_go_on():
    srv = start_server(streams_per_host=2)
    srv.gnmi.set_ports({1: "p1"}, lambda n: True)
    subs = []
    try:
        subs = [gnmi_subscription(srv.address) for _ in range(3)]
        assert [isinstance(first, grpc.RpcError) for *_rest, first in subs] == [False, False, True]
        refused = subs[2][3]
        assert refused.code() == SC.RESOURCE_EXHAUSTED
        assert "2 gNMI subscriptions are open from 127.0.0.1" in refused.details()
        # the open ones still get changes; unary calls are served
        srv.gnmi.port_changed(1, False)
        for _channel, _requests, call, _first in subs[:2]:
            for msg in call:
                if msg.HasField("update") and msg.update.update[0].val.string_val == "DOWN":
                    break
        stub = p4r_grpc.P4RuntimeStub(subs[0][0])
        assert stub.Capabilities(p4r.CapabilitiesRequest(), timeout=DEADLINE).p4runtime_api_version
    finally:
        for channel, requests, call, _first in subs:
            requests.put(None)
            call.cancel()
            channel.close()
        srv.stop(0)


def test_client_that_never_reads_its_stream_costs_bounded_memory(server, config, caplog):
    channel = grpc.insecure_channel(server.address)
    stub = p4r_grpc.P4RuntimeStub(channel)
    requests: queue.Queue = queue.Queue()
    call = stub.StreamChannel(iter(requests.get, None))
    requests.put(p4r.StreamMessageRequest(arbitration=p4r.MasterArbitrationUpdate(
        device_id=1, election_id=u128(1))))
    assert next(call).arbitration.status.code == 0  # then it never reads again
    stub.SetForwardingPipelineConfig(A(device_id=1, election_id=u128(1), action=A.VERIFY_AND_COMMIT,
                                       config=p4r.ForwardingPipelineConfig(
                                           p4info=config[0], p4_device_config=config[1])))
    widths = [m.bitwidth for m in server.device.pipeline.schema.controller_headers["packet_out"].metadata]
    limits = server.limits
    sent = 0
    try:
        with caplog.at_level(logging.WARNING, logger="softswitch.p4runtime"):
            # 8 KiB PacketIns until well past the queue's bound and any transport window
            while server.service.stats()["packet_in_dropped"] < 100 and sent < 20 * limits.queued_messages:
                server.device.process(255, port_status_packet(widths, 2, True, sent) + bytes(8192))
                sent += 1
        stats = server.service.stats()
        assert stats["packet_in_dropped"] >= 100
        assert any("stream_queue_full" in r.getMessage() for r in caplog.records)
        # the same client's unary calls still work
        stub.Write(p4r.WriteRequest(device_id=1, election_id=u128(1), updates=[insert(lpm(config[0], 3))]),
                   timeout=DEADLINE)
        # it reads at last: what was queued arrives, what was dropped does not
        received = 0
        for msg in call:
            if msg.WhichOneof("update") == "packet":
                received += 1
            if received + stats["packet_in_dropped"] >= sent or received > sent:
                break
        assert received == sent - stats["packet_in_dropped"]
    finally:
        requests.put(None)
        call.cancel()
        channel.close()


# ---------------------------------------------------------------- pipeline changes


def test_writes_racing_reconcile_and_commit_are_never_lost(primary, config):
    acknowledged: list[int] = []
    stop = threading.Event()
    errors: list = []

    def writer():
        i = 0
        while not stop.is_set() and i < 1000:
            try:
                primary.write(insert(lpm(config[0], i)))
                acknowledged.append(i)
            except grpc.RpcError as exc:
                errors.append(exc)
            i += 1

    t = threading.Thread(target=writer)
    t.start()
    try:
        assert wait_for(lambda: len(acknowledged) >= 20 or not t.is_alive())
        for _ in range(3):
            primary.set_pipeline(*config, action=A.RECONCILE_AND_COMMIT)
        mark = len(acknowledged)
        assert wait_for(lambda: len(acknowledged) >= mark + 20 or not t.is_alive())
    finally:
        stop.set()
        t.join(DEADLINE)
    assert not errors
    assert sorted(lpm_table(primary, config[0])) == sorted(acknowledged)


def test_a_pipeline_whose_client_gave_up_while_it_compiled_changes_nothing(config, caplog):
    """A first native compile can outlast the client's deadline (finsy's is 10 s); the
    client retries, commits and writes. The abandoned request, done compiling later, must
    not commit after that write: in the testbed it did, and wiped every switch's entries."""
    from softswitch.p4runtime import pipeline_loader

    release, compiling = threading.Event(), threading.Event()
    calls: list[int] = []

    def make_switch(program):  # the first compile lasts until the test releases it
        calls.append(1)
        if len(calls) == 1:
            compiling.set()
            release.wait(DEADLINE)
        return pipeline_loader.make_switch(program, 255)

    srv = P4RuntimeServer(Device(device_id=1, cpu_port=255, make_switch=make_switch),
                          "127.0.0.1:0").start()
    c = Client(srv.address, election_id=1000)
    try:
        assert c.connect().arbitration.status.code == 0
        p4info, device_config = config
        req = A(device_id=1, action=A.VERIFY_AND_COMMIT, election_id=u128(1000))
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        slow = c.stub.SetForwardingPipelineConfig.future(req, timeout=1.0)
        assert compiling.wait(DEADLINE)
        with pytest.raises(grpc.RpcError) as gave_up:
            slow.result()
        assert gave_up.value.code() == SC.DEADLINE_EXCEEDED
        c.set_pipeline(*config)  # the retry
        c.write(insert(lpm(p4info, 7, port=3)))
        with caplog.at_level(logging.INFO, logger="softswitch"):
            release.set()
            assert wait_for(lambda: "while the pipeline compiled" in caplog.text), caplog.text
        assert lpm_table(c, p4info) == {7: 3}
    finally:
        release.set()
        c.close()
        srv.stop(0)


# ---------------------------------------------------------------- batches


def test_batch_of_one_failing_update(primary, config):
    primary.write(insert(lpm(config[0], 1)))
    err = rpc_error(lambda: primary.write(insert(lpm(config[0], 1))))
    assert err.code() == SC.UNKNOWN
    [(code, message)] = error_details(err)
    assert code == "ALREADY_EXISTS" and message.endswith("ipv4_lpm: entry already exists")


def test_batch_of_400_is_applied_whole_or_not_at_all(primary, config):
    updates = [insert(lpm(config[0], i)) for i in range(400)]
    bad = updates[:399] + [insert(lpm(config[0], 0))]  # the last one repeats the first
    err = rpc_error(lambda: primary.write(*bad))
    assert err.code() == SC.ABORTED
    assert "nothing applied: update 399 failed (ALREADY_EXISTS" in err.details()
    assert error_details(err) == []
    assert lpm_table(primary, config[0]) == {}
    primary.write(*updates)
    assert len(lpm_table(primary, config[0])) == 400


def test_batch_of_150_failures_is_reported_update_by_update(primary, config):
    primary.write(*[insert(lpm(config[0], i)) for i in range(150)])
    err = rpc_error(lambda: primary.write(*[insert(lpm(config[0], i)) for i in range(150)]))
    details = error_details(err)
    assert err.code() == SC.UNKNOWN and len(details) == 150
    assert {code for code, _ in details} == {"ALREADY_EXISTS"}


def test_batch_of_10000_updates(primary, config):
    p4info = config[0]
    primary.write(*[insert(lpm(p4info, i, port=1)) for i in range(500)])
    # 10,000 modifications: entry i % 500 gets port 2, 3, ... 21 in turn
    mods = [modify(lpm(p4info, i % 500, port=2 + i // 500)) for i in range(10_000)]
    bad = mods[:9_999] + [insert(lpm(p4info, 7))]  # already exists
    err = rpc_error(lambda: primary.stub.Write(p4r.WriteRequest(
        device_id=1, election_id=u128(1000), updates=bad), timeout=DEADLINE))
    assert err.code() == SC.ABORTED and "update 9999 failed" in err.details()
    assert lpm_table(primary, p4info) == {i: 1 for i in range(500)}  # every change undone
    primary.stub.Write(p4r.WriteRequest(device_id=1, election_id=u128(1000), updates=mods),
                       timeout=DEADLINE)
    assert lpm_table(primary, p4info) == {i: 21 for i in range(500)}


def test_oversized_batch_of_deletes_is_restored_with_its_data(primary, config, server):
    p4info = config[0]
    primary.write(*[insert(lpm(p4info, i, port=i % 200 + 1)) for i in range(300)])
    deletes = [p4r.Update(type=p4r.Update.DELETE, entity=lpm(p4info, i)) for i in range(300)]
    err = rpc_error(lambda: primary.write(*deletes, p4r.Update(type=p4r.Update.DELETE,
                                                                 entity=lpm(p4info, 5))))
    assert err.code() == SC.ABORTED
    assert lpm_table(primary, p4info) == {i: i % 200 + 1 for i in range(300)}


# ---------------------------------------------------------------- roles


def test_made_up_roles_are_refused_and_the_default_primary_keeps_its_state(primary, server, config):
    primary.write(insert(lpm(config[0], 1)))
    other = Client(server.address, election_id=5000)
    try:
        reply = other.connect(role="x")
        assert isinstance(reply, grpc.RpcError) and reply.code() == SC.UNIMPLEMENTED
        assert "serves only the default role" in reply.details()
        err = rpc_error(lambda: other.write(insert(lpm(config[0], 2)), role="x"))
        assert err.code() == SC.NOT_FOUND and "'x' is not a role of this device" in err.details()
        req = A(device_id=1, role="x", election_id=u128(5000), action=A.VERIFY_AND_COMMIT,
                config=p4r.ForwardingPipelineConfig(p4info=config[0], p4_device_config=config[1]))
        err = rpc_error(lambda: other.stub.SetForwardingPipelineConfig(req))
        assert err.code() == SC.NOT_FOUND
    finally:
        other.close()
    configured = Client(server.address, election_id=6000)
    try:
        upd = p4r.MasterArbitrationUpdate(device_id=1, election_id=u128(6000))
        upd.role.config.Pack(p4r.Uint128(low=1))  # any role config: no scheme agreed
        configured.stream = Stream(configured.stub, 1)
        configured.stream.send(p4r.StreamMessageRequest(arbitration=upd))
        reply = configured.stream.next()
        assert isinstance(reply, grpc.RpcError) and reply.code() == SC.INVALID_ARGUMENT
    finally:
        configured.close()
    assert lpm_table(primary, config[0]) == {1: 1}
    primary.write(insert(lpm(config[0], 3)))  # still the primary
