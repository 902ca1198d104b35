"""Netlink port watching: message parsing, and real veths in a private namespace (root)
feeding real daemons."""

import asyncio
import os
import struct
import subprocess
import sys

import pytest
from sm_net import agree, fabric_certs, loopback_fabric, make_daemon
from syncmesh.portwatch import PortWatcher, mininet_names

from fabricmodel import dump
from rtnetlink import RTM_DELLINK, RTM_NEWLINK, parse_links
from testsupport import async_wait_until, stop_processes


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@pytest.fixture
def netns():
    name = f"smw{os.getpid() % 100000}"
    ip("netns", "add", name)
    try:
        # the switch l1's fabric ports 2 and 3 as veths whose far ends we can pull
        for port in (2, 3):
            ip("-n", name, "link", "add", f"l1-eth{port}", "type", "veth", "peer", "name",
               f"smp{port}")
            ip("-n", name, "link", "set", f"l1-eth{port}", "up")
            ip("-n", name, "link", "set", f"smp{port}", "up")
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)


@pytest.mark.root
def test_watcher_reports_initial_state_and_changes(netns):
    fab = loopback_fabric(2, 2, 1, 1)
    names = mininet_names(fab, "l1")
    assert names == {"l1-eth1": 1, "l1-eth2": 2, "l1-eth3": 3}

    async def scenario():
        gen = PortWatcher(names, netns).changes()
        first = await asyncio.wait_for(anext(gen), 10)
        # l1-eth1 (the host port) does not exist here: down
        assert first == {1: False, 2: True, 3: True}
        ip("-n", netns, "link", "set", "smp3", "down")
        assert await asyncio.wait_for(anext(gen), 10) == {3: False}
        ip("-n", netns, "link", "set", "smp3", "up")
        assert await asyncio.wait_for(anext(gen), 10) == {3: True}
        ip("-n", netns, "link", "del", "l1-eth2")
        assert await asyncio.wait_for(anext(gen), 10) == {2: False}
        await gen.aclose()

    asyncio.run(scenario())


@pytest.mark.root
def test_daemons_learn_a_carrier_loss_seen_by_netlink(netns, tmp_path):
    fab = loopback_fabric(2, 2, 1, 1)
    certs = fabric_certs(fab, tmp_path / "certs")

    async def scenario():
        ds = {n: make_daemon(fab, n, certs) for n in ("l2", "s1", "s2")}
        watcher = PortWatcher(mininet_names(fab, "l1"), netns)
        ds["l1"] = make_daemon(fab, "l1", certs)
        ds["l1"].port_source = watcher.changes
        for d in ds.values():
            await d.start()
        try:
            await async_wait_until(lambda: all(len(d.core.peers.up()) == len(d.core.peer_names)
                                         for d in ds.values()), "sessions up")
            await async_wait_until(lambda: agree(ds.values()), "agreement at start")
            assert ds["s1"].core.link_view()["l1:2-s1:1"] is True
            ip("-n", netns, "link", "set", "smp2", "down")
            await async_wait_until(lambda: agree(ds.values())
                             and not ds["l2"].core.link_view()["l1:2-s1:1"],
                             "everyone learns l1:2 lost carrier")
            assert not ds["l2"].core.programmed["path", 1, 0].live
            ip("-n", netns, "link", "set", "smp2", "up")
            await async_wait_until(lambda: agree(ds.values())
                             and ds["l2"].core.link_view()["l1:2-s1:1"], "recovery")
        finally:
            for d in ds.values():
                await d.stop()

    asyncio.run(asyncio.wait_for(scenario(), 60))


def _link_msg(mtype: int, name: str, flags: int) -> bytes:
    attr_data = name.encode() + b"\0"
    attr = struct.pack("=HH", 4 + len(attr_data), 3) + attr_data
    attr += b"\0" * (-len(attr) % 4)
    body = struct.pack("=BxHiII", 0, 1, 7, flags, 0) + attr
    return struct.pack("=IHHII", 16 + len(body), mtype, 0, 0, 0) + body


@pytest.mark.parametrize("flags, carrier", [(0x11043, True), (0x1003, False), (0x1002, False)])
def test_parse_links_reads_name_and_flags(flags, carrier):
    data = _link_msg(RTM_NEWLINK, "l1-eth2", flags) + _link_msg(RTM_DELLINK, "smp3", 0)
    msgs = list(parse_links(data))
    assert msgs == [(RTM_NEWLINK, 7, "l1-eth2", flags), (RTM_DELLINK, 7, "smp3", 0)]
    assert msgs[0].carrier is carrier and msgs[1].carrier is False


@pytest.mark.root
def test_cli_daemon_watches_ports_in_a_namespace(netns, tmp_path):
    fab = loopback_fabric(2, 2, 1, 1)
    path = tmp_path / "fabric.yaml"
    dump(fab, path)
    log = tmp_path / "l1.log"
    certs = tmp_path / "certs"
    subprocess.run([sys.executable, "-m", "syncmesh.cli", "certs", "--fabric", str(path),
                    "--out", str(certs)], check=True, capture_output=True, timeout=60)

    async def scenario(procs):
        ds = {n: make_daemon(fab, n, certs) for n in ("l2", "s1", "s2")}
        for d in ds.values():
            await d.start()
        try:
            with open(log, "w") as err:
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "syncmesh.cli", "run", str(path), "l1",
                     "--watch-ports", "--netns", netns, "--metrics", "off", "--certs",
                     str(certs), "--state-dir", str(tmp_path / "state")], stderr=err))
            await async_wait_until(lambda: "l1" in ds["s1"].core.peers.up(), "l1 process up",
                             timeout=30)
            ip("-n", netns, "link", "set", "smp3", "down")  # l1-eth3: l1's link to s2
            await async_wait_until(lambda: not ds["l2"].core.link_view()["l1:3-s2:1"],
                             "the process saw the carrier loss and told everyone")
        finally:
            for d in ds.values():
                await d.stop()

    procs: list[subprocess.Popen] = []
    try:
        asyncio.run(asyncio.wait_for(scenario(procs), 60))
    finally:
        stop_processes(procs)
    assert "event=port_down port=3" in log.read_text()
