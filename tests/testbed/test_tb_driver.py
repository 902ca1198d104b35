"""The SyncMesh P4Runtime driver against the software target's real P4Runtime server (loopback gRPC).

The switch is `softswitch`'s Device + P4RuntimeServer in this process (no Linux
ports needed), the client is the driver as the daemon uses it.
"""

import asyncio
import time
from pathlib import Path

import finsy as fy
import pytest
from syncmesh.core import SyncMeshCore
from syncmesh.p4runtime_driver import DriverError, P4RuntimeDriver
from syncmesh.sglb_mapping import Identity, Plan, TableWrite, entities, switch_mac

from fabricmodel import load
from sglb.codes import Event
from softswitch.p4runtime.device import Device
from softswitch.p4runtime.server import P4RuntimeServer

REPO = Path(__file__).resolve().parents[2]
FABRIC = load(REPO / "topologies" / "fabrics" / "ls2x2.yaml")


@pytest.fixture
def switch():
    """(address, device, server) of a fresh in-process P4Runtime switch, device id 1."""
    device = Device(device_id=1)
    sent: list = []
    device.transmit = lambda port, data: sent.append((port, data))
    server = P4RuntimeServer(device, "127.0.0.1:0").start()
    yield server.address, device, server
    server.stop(0)


def desired(name: str):
    core = SyncMeshCore(FABRIC, name, time.time_ns())
    core.start(time.time())
    return core


def make_driver(address, pipeline, name="l1", **kw) -> P4RuntimeDriver:
    sw = FABRIC.switch(name)
    return P4RuntimeDriver(name, address, 1, Identity(switch_mac(sw.id)), pipeline,
                           sorted(FABRIC.ports(name)), **kw)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_reconcile_pushes_pipeline_writes_everything_and_rereads_equal(switch, sglb_pipeline):
    address, device, _ = switch
    core = desired("l1")

    async def scenario():
        d = make_driver(address, sglb_pipeline)
        async with d.session():
            await d.reconcile(core.desired())
            want = entities(core.desired(), d.book.identity, d.book.writebacks)
            got = await d.read_entities()
        return d.writes, want, got

    writes, want, got = run(scenario())
    assert device.pipeline is not None
    assert writes == len(want) > 5
    assert sorted(got, key=repr) == sorted(want, key=repr)


def test_second_session_keeps_pipeline_and_entries_and_writes_nothing(switch, sglb_pipeline):
    address, device, _ = switch
    core = desired("l1")

    async def scenario():
        first = make_driver(address, sglb_pipeline)
        async with first.session():
            await first.reconcile(core.desired())
        pipeline_before = device.pipeline
        second = make_driver(address, sglb_pipeline)
        async with second.session():
            await second.reconcile(core.desired())
        return pipeline_before, second.writes

    pipeline_before, writes = run(scenario())
    assert device.pipeline is pipeline_before  # not pushed again (same cookie)
    assert writes == 0


def test_reconcile_repairs_only_drift(switch, sglb_pipeline):
    address, _, _ = switch
    core = desired("l1")

    async def scenario():
        d = make_driver(address, sglb_pipeline)
        async with d.session():
            await d.reconcile(core.desired())
            # someone else deletes a route and adds a stray one behind the daemon's back
            sw = d._sw()
            route = next(e for e in await d.read_entities()
                         if isinstance(e, TableWrite) and e.table == "ipv4_route")
            await sw.delete([fy.P4TableEntry("ipv4_route", match=fy.Match(dict(route.match)))])
            await sw.insert([fy.P4TableEntry("ipv4_route",
                                             match=fy.Match({"hdr.ipv4.dstAddr": (0x0B000000, 8)}),
                                             action=fy.Action("no_route"))])
            before = d.writes
            await d.reconcile(core.desired())
            after = await d.read_entities()
        return route, d.writes - before, after

    route, writes, after = run(scenario())
    assert writes == 2  # re-insert the missing route, delete the stray one
    assert route in after
    assert not any(isinstance(e, TableWrite) and e.match == (("hdr.ipv4.dstAddr", (0x0B000000, 8)),)
                   for e in after)


def test_apply_merges_changed_ops_and_counters_read(switch, sglb_pipeline):
    address, device, _ = switch
    core = desired("l1")

    async def scenario():
        d = make_driver(address, sglb_pipeline)
        async with d.session():
            await d.reconcile(core.desired())
            # l1's uplink 3 dies: the core re-plans, the driver writes only what changed
            actions = core.on_port_status({3: False}, time.time())
            ops = [op for a in actions if type(a).__name__ == "Program" for op in a.ops]
            before = d.writes
            await d.apply(ops)
            profile = next(e for e in await d.read_entities()
                           if isinstance(e, TableWrite) and e.table == "dst_profile")
            tx = await d.read_tx_bytes()
        return ops, d.writes - before, profile, tx

    ops, writes, profile, tx = run(scenario())
    assert ops
    assert 1 <= writes <= len(ops) + 1
    params = dict(profile.params)
    assert params["live_mask"] & 0b01 == 0  # path 0 (port 3) no longer live
    assert params["ep0"] == 0  # no notice punted: no epoch written back
    assert tx == {1: 0, 2: 0, 3: 0, 4: 0}


def test_port_events_follow_gnmi_and_end_when_the_switch_goes(switch, sglb_pipeline):
    address, _, server = switch
    state = {1: True, 2: True, 3: True, 4: True}
    server.gnmi.set_ports({n: f"tb-p{n}" for n in state}, lambda n: state[n])

    async def scenario():
        d = make_driver(address, sglb_pipeline)
        async with d.session():
            events = d.port_events()
            first = await anext(events)
            state[3] = False
            server.gnmi.port_changed(3, False)
            change = await asyncio.wait_for(anext(events), 10)
            server.stop(0)
            with pytest.raises(DriverError, match="lost"):
                await asyncio.wait_for(anext(events), 20)
        return first, change

    first, change = run(scenario())
    assert first == {1: True, 2: True, 3: True, 4: True}
    assert change == {3: False}


def test_port_status_packet_out_reaches_the_pipeline(switch, sglb_pipeline):
    address, device, _ = switch
    core = desired("l1")

    async def scenario():
        d = make_driver(address, sglb_pipeline, inject_port_status=True)
        async with d.session():
            await d.reconcile(core.desired())
            await d.send_port_status(3, False, 1)
            sw = d._sw()
            for _ in range(200):
                [c] = [c async for c in sw.read(fy.P4CounterEntry("SglbIngress.events",
                                                                  index=Event.PORT_DOWN))]
                if c.packet_count:
                    break
                await asyncio.sleep(0.02)
        return c.packet_count

    assert run(scenario()) == 1


def test_no_injection_on_targets_that_inject_themselves(switch, sglb_pipeline):
    address, device, _ = switch

    async def scenario():
        d = make_driver(address, sglb_pipeline)
        async with d.session():
            await d.reconcile(desired("l1").desired())
            await d.send_port_status(3, False, 1)
            await asyncio.sleep(0.2)
            sw = d._sw()
            [c] = [c async for c in sw.read(fy.P4CounterEntry("SglbIngress.events",
                                                              index=Event.PORT_DOWN))]
        return c.packet_count

    assert run(scenario()) == 0


def test_connect_errors_name_the_switch(sglb_pipeline):
    d = make_driver("127.0.0.1:1", sglb_pipeline)

    async def scenario():
        with pytest.raises(DriverError, match="l1: cannot connect to 127.0.0.1:1") as info:
            async with d.session():
                pass
        assert info.value.is_unreachable and not info.value.is_not_primary
        with pytest.raises(DriverError, match="l1: not connected") as info:
            await d.read_tx_bytes()
        assert info.value.is_disconnected

    run(scenario())


def test_a_second_controller_is_told_it_is_not_primary(switch, sglb_pipeline):
    address, _, _ = switch

    async def scenario():
        first = make_driver(address, sglb_pipeline, election_id=20)
        second = make_driver(address, sglb_pipeline, election_id=10)
        async with first.session():
            with pytest.raises(DriverError, match="another controller is primary") as info:
                async with second.session():
                    pass
            assert first.connected and not second.connected
        return info.value

    err = run(scenario())
    assert err.is_not_primary and not err.is_unreachable


def test_a_refused_write_keeps_finsys_predicates(switch, sglb_pipeline):
    address, _, _ = switch

    async def scenario():
        d = make_driver(address, sglb_pipeline)
        async with d.session():
            await d.reconcile(desired("l1").desired())
            stray = TableWrite("ipv4_route", (("hdr.ipv4.dstAddr", (0x0B000000, 8)),),
                               "no_route", ())
            with pytest.raises(DriverError, match="l1: write refused") as info:
                await d._write_plan(Plan(delete=(stray,)))  # not on the switch
        return info.value

    err = run(scenario())
    assert isinstance(err.cause, fy.P4ClientError)
    assert err.is_not_found_only and not err.is_pipeline_missing and not err.is_disconnected


def test_punted_notice_epoch_is_written_back_once_the_view_includes_it(switch, sglb_pipeline):
    """The leaf's data plane applies s1's FAIL notice about l2 and punts it; the
    driver reads the PacketIn; the profile written while the core has not heard
    of the failure keeps no epoch (the notice rules), the one written after
    carries writeback(5) on the path through s1."""
    from scapy.layers.l2 import Ether
    from syncmesh.linkstate import PortState, Version
    from syncmesh.messages import Hello, LinkNotice

    from sglb.config import writeback
    from sglb.headers import SglbNotice

    address, device, _ = switch
    core = desired("l1")
    s1 = FABRIC.switch("s1").id
    notice = bytes(Ether(src="02:00:00:00:00:03", dst="ff:ff:ff:ff:ff:ff")
                   / SglbNotice(kind=1, spine_id=s1, leaf_id=2, epoch=5))

    async def profile(d) -> dict:
        return next(dict(e.params) for e in await d.read_entities()
                    if isinstance(e, TableWrite) and e.table == "dst_profile")

    async def scenario():
        d = make_driver(address, sglb_pipeline)
        async with d.session():
            await d.reconcile(core.desired())
            device.process(3, notice)                      # l1's uplink to s1
            for _ in range(200):
                if d.book.seen:
                    break
                await asyncio.sleep(0.02)
            await d.apply([op for a in core.on_port_status({4: True}, time.time())
                           if type(a).__name__ == "Program" for op in a.ops])
            before = await profile(d)
            core.on_hello("s1", Hello(9, 1), 0.0)
            actions = core.on_notice("s1", LinkNotice((PortState("s1", 2, False, Version(9, 1),
                                                                 1.0),)), 1.0)
            await d.apply([op for a in actions if type(a).__name__ == "Program" for op in a.ops])
            return dict(d.book.seen), before, await profile(d)

    seen, before, after = run(scenario())
    assert list(seen) == [(s1, 2)] and seen[s1, 2].epoch == 5 and seen[s1, 2].fail
    assert before["ep0"] == 0 and before["live_mask"] & 1 == 1
    assert after["live_mask"] & 1 == 0 and after["ep0"] == writeback(5) and after["ep1"] == 0


def test_a_refused_pipeline_is_a_driver_error_not_a_cancellation(switch, sglb_pipeline, tmp_path):
    # finsy pushes the pipeline in a task of its own; when the push fails it cancels its run
    # task, which reached the caller as CancelledError: the daemon took it for its own
    # cancellation and stopped retrying, its switch never programmed (testbed, under load)
    from syncmesh.p4runtime_driver import PipelineFiles

    address, device, _ = switch
    bad = tmp_path / "bad.p4"
    bad.write_text("this is not P4\n")
    d = make_driver(address, PipelineFiles(sglb_pipeline.p4info, bad))

    async def scenario():
        with pytest.raises(DriverError, match="l1: .*pipeline") as info:
            async with d.session():
                pass
        assert info.value.is_unreachable and not d.connected
        # the same driver object connects once the switch takes a pipeline
        good = make_driver(address, sglb_pipeline)
        async with good.session():
            assert good.connected

    run(scenario())
    assert device.pipeline is not None
