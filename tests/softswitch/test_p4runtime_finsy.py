"""finsy (asyncio P4Runtime client) drives the softswitch P4Runtime server unchanged.

The same scenario runs against any P4Runtime target: set P4RT_TARGET=host:port (and
P4RT_DEVICE_ID) to point it at a running switch, e.g. BMv2's simple_switch_grpc
started with the program compiled by p4c.
"""

import asyncio
import os

import finsy as fy
import pytest
from p4rt_client import PROG

from softswitch.p4info import p4info_from_program, p4info_text
from softswitch.p4runtime.device import Device
from softswitch.p4runtime.pipeline_loader import device_config_from_file, load_program
from softswitch.p4runtime.server import P4RuntimeServer
from softswitch.runner import port_status_packet
from testsupport import async_wait_until


@pytest.fixture(scope="module")
def artefacts(tmp_path_factory):
    d = tmp_path_factory.mktemp("ssp-finsy")
    blob = device_config_from_file(PROG)
    p4info = p4info_from_program(load_program(blob))
    (d / "prog.p4info.txtpb").write_text(p4info_text(p4info))
    (d / "prog.p4cfg").write_bytes(blob)
    return d / "prog.p4info.txtpb", d / "prog.p4cfg"


@pytest.fixture
def target():
    """(address, device, sent frames, server); an in-process server unless P4RT_TARGET is set."""
    external = os.environ.get("P4RT_TARGET")
    if external:
        yield external, None, None, None
        return
    device = Device(device_id=1)
    sent: list[tuple[int, bytes]] = []
    device.transmit = lambda port, data: sent.append((port, data))
    server = P4RuntimeServer(device, "127.0.0.1:0").start()
    yield server.address, device, sent, server
    server.stop(0)


def options(artefacts) -> fy.SwitchOptions:
    p4info, blob = artefacts
    return fy.SwitchOptions(p4info=p4info, p4blob=blob,
                            device_id=int(os.environ.get("P4RT_DEVICE_ID", "1")))


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_finsy_tables_errors_and_reads(artefacts, target):
    address = target[0]

    async def scenario():
        async with fy.Switch("ssp1", address, options(artefacts)) as sw:
            assert sw.is_primary
            entry = fy.P4TableEntry(
                "ipv4_lpm",
                match=fy.Match({"hdr.ipv4.dst": "10.0.1.0/24"}),
                action=fy.Action("set_nhop", dmac="02:00:00:00:00:02", port=2),
            )
            await sw.insert([entry])
            got = [e async for e in sw.read(fy.P4TableEntry("ipv4_lpm"))]
            assert [g.encode(sw.p4info) for g in got] == [entry.encode(sw.p4info)]
            assert got[0].match["dst"] == (0x0A000100, 24)
            with pytest.raises(fy.P4ClientError) as e:
                await sw.insert([entry, fy.P4TableEntry(
                    "ipv4_lpm", match=fy.Match({"hdr.ipv4.dst": "10.0.2.0/24"}),
                    action=fy.Action("set_nhop", dmac="02:00:00:00:00:03", port=3))])
            assert e.value.code == fy.GRPCStatusCode.UNKNOWN
            details = e.value.details
            assert details[0].canonical_code == fy.GRPCStatusCode.ALREADY_EXISTS
            assert 1 not in details  # the second update was applied
            assert len([e async for e in sw.read(fy.P4TableEntry("ipv4_lpm"))]) == 2
            await sw.delete([entry])
            with pytest.raises(fy.P4ClientError) as e:
                await sw.delete([entry])
            assert e.value.is_not_found_only
            await sw.insert([fy.P4MulticastGroupEntry(1, replicas=[1, 2])])
            groups = [g async for g in sw.read(fy.P4MulticastGroupEntry())]
            assert [g.multicast_group_id for g in groups] == [1]

    run(scenario())


def test_finsy_packet_io_and_digests(artefacts, target):
    address, device, sent, _ = target
    if device is None:
        pytest.skip("needs the in-process server to inject packets")

    async def scenario():
        async with fy.Switch("ssp1", address, options(artefacts)) as sw:
            payload = b"\x02" * 12 + b"\x88\x99" + b"p" * 46
            await sw.write([fy.P4PacketOut(payload, egress_port=3, _pad=0)])
            for _ in range(200):
                if sent:
                    break
                await asyncio.sleep(0.01)
            assert sent == [(3, payload)]

            await sw.insert([fy.P4DigestEntry("learn_t", max_list_size=1)])
            packets = sw.read_packets(eth_types={0x88B5})
            digests = sw.read_digests("learn_t")
            first_packet = asyncio.ensure_future(anext(packets))  # the queues open on first use
            first_digest = asyncio.ensure_future(anext(digests))
            await asyncio.sleep(0.05)
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, device.process, 255, port_status_packet([9, 7], 4, True, 1))
            pkt = await first_packet
            assert pkt.payload[14:18] == bytes([1, 2, 0, 4])
            assert pkt["ingress_port"] == 255
            frame = b"\x02\x00\x00\x00\x00\x09" + b"\x02\x00\x00\x00\x00\x07" + b"\x88\x99" + b"\x00" * 46
            await loop.run_in_executor(None, device.process, 5, frame)
            dl = await first_digest
            [learned] = list(dl)
            assert learned["src"] == 0x020000000007 and learned["port"] == 5
            await sw.write([dl.ack()])

    run(scenario())


def test_finsy_sees_port_state_over_gnmi(artefacts, target):
    address, device, _, server = target
    if server is None:
        pytest.skip("port state is injected into the in-process server")
    state = {1: True, 2: True}
    server.gnmi.set_ports({1: "ssp-p1", 2: "ssp-p2"}, lambda n: state[n])

    async def scenario():
        async with fy.Switch("ssp1", address, options(artefacts)) as sw:
            assert sorted((p.id, p.name, p.up) for p in sw.ports) == [(1, "ssp-p1", True), (2, "ssp-p2", True)]
            state[2] = False
            server.gnmi.port_changed(2, False)
            # finsy 0.30 updates sw.ports from the subscription (its PORT_DOWN event is not wired)
            await async_wait_until(lambda: not sw.ports["ssp-p2"].up)
            assert sw.ports["ssp-p1"].up

    run(scenario())
