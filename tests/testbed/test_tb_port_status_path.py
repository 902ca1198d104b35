"""A port-status packet reaches the switch while the daemon's table writes are in flight.

On BMv2 the P4 program learns a carrier change only from the daemon's PacketOut
(docs/bmv2.md). The daemon used to send it after the table writes the same
change caused, in one task: a write the switch took long to answer (a loaded
BMv2) held the PacketOut back, and with it the data plane's own failover.

The switch is softswitch's Device + P4RuntimeServer in this process, whose
Write handler the test holds open at will (the real server, its writes held at
the door); the daemon is the real ``Daemon`` with the real ``P4RuntimeDriver``
(``inject_port_status=True``, as on BMv2), fed carrier changes through its
``port_source``. No sleeps decide anything: the test waits for the switch's own
PORT_DOWN / PORT_UP counters while a write is provably held.

The packets a daemon sends while its switch is away are lost, so it sends every
port's last one again whenever a session comes up: a port down before the
switch answered, and a switch restarted with its state forgotten (on
softswitch and, where it is installed, on BMv2's ``simple_switch_grpc``, which
also runs the PacketOut path end to end; skipped without it).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import finsy as fy
import pytest
from syncmesh.daemon import SLOW_WRITE, Daemon, DaemonOptions
from syncmesh.logs import LogfmtFormatter
from syncmesh.p4runtime_driver import P4RuntimeDriver
from syncmesh.service import Insecure
from syncmesh.sglb_mapping import Identity, switch_mac

from fabricmodel import load
from sglb.codes import Event
from softswitch.p4runtime.device import Device
from softswitch.p4runtime.server import P4RuntimeServer
from testsupport import async_wait_until, free_ports
from topologies.failover_path import port_status_delay

REPO = Path(__file__).resolve().parents[2]
UPLINK = 3  # l1's port toward s1 in ls2x2


def loopback(name: str):
    fab = load(REPO / "topologies" / "fabrics" / "ls2x2.yaml")
    ports = iter(free_ports(2 * len(fab.switches)))
    return dataclasses.replace(fab, switches=tuple(
        dataclasses.replace(s, syncmesh=f"127.0.0.1:{next(ports)}",
                            metrics=f"127.0.0.1:{next(ports)}") for s in fab.switches))


class HeldWrites:
    """Holds every Write the switch receives at the door while ``closed``."""

    def __init__(self, device: Device) -> None:
        self.open = threading.Event()
        self.open.set()
        self.waiting = threading.Event()
        """Set once a Write has arrived while closed (it is being held)."""
        self.held = 0
        real = device.write

        def write(updates):
            if not self.open.is_set():
                self.held += 1
                self.waiting.set()
                self.open.wait(60)
            return real(updates)

        device.write = write  # the servicer calls device.write: the real one, later

    def close(self) -> None:
        self.waiting.clear()
        self.open.clear()

    def release(self) -> None:
        self.open.set()


@pytest.fixture
def held_switch():
    device = Device(device_id=1)
    device.transmit = lambda port, data: None
    server = P4RuntimeServer(device, "127.0.0.1:0").start()
    gate = HeldWrites(device)
    try:
        yield server.address, device, gate
    finally:
        gate.release()
        server.stop(0)


class Carrier:
    """The daemon's port source: every port up, then what the test pushes."""

    def __init__(self, ports) -> None:
        self.ports = sorted(ports)
        self.queue: asyncio.Queue[dict[int, bool]] = asyncio.Queue()

    async def changes(self) -> AsyncIterator[dict[int, bool]]:
        yield {p: True for p in self.ports}
        while True:
            yield await self.queue.get()


async def events(driver: P4RuntimeDriver, code: int) -> int:
    """The program's ``SglbIngress.events`` counter for one event code, read over P4Runtime."""
    sw = driver._sw()
    [c] = [c async for c in sw.read(fy.P4CounterEntry("SglbIngress.events", index=code))]
    return c.packet_count


@pytest.fixture
def daemon_log(tmp_path):
    """The daemons' log lines in logfmt, as ``syncmesh run`` writes them, in ``l1.syncmesh.log``."""
    handler = logging.FileHandler(tmp_path / "l1.syncmesh.log")
    handler.setFormatter(LogfmtFormatter())
    logger = logging.getLogger("syncmesh")
    old = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield tmp_path
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
        handler.close()


def test_port_status_reaches_the_switch_while_a_write_is_held(held_switch, sglb_pipeline,
                                                              daemon_log):
    address, device, gate = held_switch
    fab = loopback("l1")
    sw = fab.switch("l1")
    ports = sorted(fab.ports("l1"))
    driver = P4RuntimeDriver("l1", address, 1, Identity(switch_mac(sw.id)), sglb_pipeline, ports,
                             inject_port_status=True)
    carrier = Carrier(ports)
    daemon = Daemon(fab, "l1", DaemonOptions(credentials=Insecure("tb-secret", "l1")),
                    driver=driver, port_source=carrier.changes)

    cut_at: list[float] = []

    async def scenario():
        await daemon.start()
        try:
            await async_wait_until(lambda: daemon.switch_ready, "l1's daemon programmed its switch",
                                   timeout=60)
            writes_before = driver.write_requests
            down_before = await events(driver, Event.PORT_DOWN)
            gate.close()
            # the uplink goes down: the core asks for a port-status packet and for new
            # profiles (a table write, which the switch now holds)
            cut_at.append(time.time())
            await carrier.queue.put({UPLINK: False})
            await async_wait_until(gate.waiting.is_set, "the profile write reached the switch")
            held_at = time.monotonic()
            down = await _counted(driver, Event.PORT_DOWN, down_before)
            assert not gate.open.is_set() and gate.held >= 1  # still held: it went past it
            assert driver.write_requests == writes_before  # the write has not completed
            # held past the daemon's threshold, so the write must be logged as slow
            await asyncio.sleep(max(0.0, SLOW_WRITE - (time.monotonic() - held_at)) + 0.01)
            gate.release()
            await async_wait_until(lambda: driver.write_requests > writes_before,
                                   "the held write completed")
            # and back up, with a write held again: the same path the other way
            up_before = await events(driver, Event.PORT_UP)
            gate.close()
            await carrier.queue.put({UPLINK: True})
            await async_wait_until(gate.waiting.is_set, "the restore's write reached the switch")
            up = await _counted(driver, Event.PORT_UP, up_before)
            assert not gate.open.is_set()
            gate.release()
            return down - down_before, up - up_before
        finally:
            gate.release()
            await daemon.stop()

    assert asyncio.run(asyncio.wait_for(scenario(), 120)) == (1, 1)
    # what the testbed's summary reads (topologies.failover_path): the daemon's own line
    log = (daemon_log / "l1.syncmesh.log").read_text()
    assert port_status_delay(daemon_log, "bmv2", "l1", "l1", UPLINK, False, cut_at[0]) is not None
    assert port_status_delay(daemon_log, "bmv2", "l1", "l1", UPLINK, True, cut_at[0]) is not None
    assert "event=switch_write_slow" in log


async def _counted(driver: P4RuntimeDriver, code: int, before: int,
                   while_: str = "while the switch held the daemon's table write") -> int:
    """Waits until the program counted one more event ``code`` (its port-status packet);
    fails (timeout) if it never comes."""
    got = before
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 20
    while got == before:
        if loop.time() > deadline:
            raise AssertionError(f"no port-status packet reached the program (event {code}) "
                                 f"{while_}")
        await asyncio.sleep(0.02)
        got = await events(driver, code)
    return got


def test_a_port_down_before_the_switch_answers_reaches_it_once_it_does(sglb_pipeline):
    # The daemon's netlink watch reports a port down before the switch's P4Runtime server
    # is up (a link cut at start-up, or a switch that restarted): that PacketOut is lost
    # with no session, so the daemon sends every port's last one again once connected.
    fab = loopback("l1")
    sw = fab.switch("l1")
    ports = sorted(fab.ports("l1"))
    [port] = free_ports(1)
    address = f"127.0.0.1:{port}"
    driver = P4RuntimeDriver("l1", address, 1, Identity(switch_mac(sw.id)), sglb_pipeline, ports,
                             inject_port_status=True)
    carrier = Carrier(ports)
    daemon = Daemon(fab, "l1", DaemonOptions(credentials=Insecure("tb-secret", "l1")),
                    driver=driver, port_source=carrier.changes)
    device = Device(device_id=1)
    device.transmit = lambda port, data: None
    server = None

    deferred: list[dict] = []

    class Deferred(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if getattr(record, "event", None) == "port_status_deferred":
                deferred.append(dict(getattr(record, "fields", {})))

    handler = Deferred()
    logger = logging.getLogger("syncmesh")
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)

    async def scenario():
        nonlocal server
        await daemon.start()
        try:
            await carrier.queue.put({UPLINK: False})
            await async_wait_until(
                lambda: any(d["port"] == UPLINK and d["up"] is False for d in deferred),
                "the daemon tried to send the port's PacketOut and found no switch")
            assert not daemon.switch_ready
            server = P4RuntimeServer(device, address).start()
            await async_wait_until(lambda: daemon.switch_ready, "the switch programmed",
                                   timeout=60)
            return await _counted(driver, Event.PORT_DOWN, 0, "after the switch came up")
        finally:
            await daemon.stop()

    try:
        assert asyncio.run(asyncio.wait_for(scenario(), 120)) == 1
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        if server is not None:
            server.stop(0)


class Softswitch:
    """softswitch's P4RuntimeServer in this process; a restart is a fresh Device (no program,
    every port alive) on the same address."""

    def __init__(self, address: str, tmp: Path) -> None:
        self.address = address
        self.server: P4RuntimeServer | None = None

    def start(self) -> None:
        device = Device(device_id=1)
        device.transmit = lambda port, data: None
        self.server = P4RuntimeServer(device, self.address).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop(0)
            self.server = None


class Bmv2:
    """A simple_switch_grpc without data-plane ports; a restart is a new process."""

    def __init__(self, address: str, tmp: Path) -> None:
        from bmv2.process import Bmv2Options, Bmv2Process

        [thrift] = free_ports(1)
        self.process = Bmv2Process(Bmv2Options(grpc_address=address, thrift_port=thrift),
                                   tmp / "bmv2.log")

    def start(self) -> None:
        self.process.start()

    def stop(self) -> None:
        self.process.stop()


@pytest.mark.parametrize("target", [
    "softswitch", pytest.param("bmv2", marks=pytest.mark.bmv2)])
def test_a_restarted_switch_gets_every_ports_state_again(target, tmp_path):
    # The switch restarts (BMv2 keeps port liveness only in its program's registers, which
    # start at "up"): after the daemon reconnects and pushes the pipeline again, the
    # program must hold the port down as before. On BMv2 this is also the PacketOut path
    # end to end: the daemon's packet is what its program counts.
    from switchtarget.pipeline import compile_pipeline

    pipeline = compile_pipeline(REPO / "p4src" / "sglb.p4", tmp_path / "pipeline", target=target)
    fab = loopback("l1")
    sw = fab.switch("l1")
    ports = sorted(fab.ports("l1"))
    [port] = free_ports(1)
    address = f"127.0.0.1:{port}"
    switch = (Bmv2 if target == "bmv2" else Softswitch)(address, tmp_path)
    driver = P4RuntimeDriver("l1", address, 1, Identity(switch_mac(sw.id)), pipeline, ports,
                             inject_port_status=True)
    carrier = Carrier(ports)
    daemon = Daemon(fab, "l1", DaemonOptions(credentials=Insecure("tb-secret", "l1")),
                    driver=driver, port_source=carrier.changes)

    async def scenario():
        await daemon.start()
        try:
            await async_wait_until(lambda: daemon.switch_ready, "l1's switch programmed",
                                   timeout=60)
            await carrier.queue.put({UPLINK: False})
            first = await _counted(driver, Event.PORT_DOWN, 0, "on the first switch")
            await asyncio.get_running_loop().run_in_executor(None, switch.stop)
            await async_wait_until(lambda: not daemon.switch_ready, "the daemon saw it go")
            await asyncio.get_running_loop().run_in_executor(None, switch.start)
            await async_wait_until(lambda: daemon.switch_ready, "the restarted switch programmed",
                                   timeout=60)
            again = await _counted(driver, Event.PORT_DOWN, 0, "on the restarted switch")
            return first, again
        finally:
            await daemon.stop()

    switch.start()
    try:
        assert asyncio.run(asyncio.wait_for(scenario(), 180)) == (1, 1)
    finally:
        switch.stop()
