"""The testbed's control plane: one SyncMesh daemon per switch, each programming its switch.

The daemons run in one background thread (one asyncio loop), each with its
own P4Runtime session (``syncmesh.p4runtime_driver``), its own SyncMesh gRPC
server on loopback and the fabric's shared token, exactly as ``syncmesh run``
would run them one per process. Keeping them in the driver's process lets the
testbed read every daemon's view (link states, failovers, convergence) without
scraping.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from syncmesh.config import CoreConfig
from syncmesh.daemon import Daemon, DaemonOptions
from syncmesh.p4runtime_driver import (
    P4RuntimeDriver,
    PipelineFiles,
    compile_pipeline,
    switch_read,
)
from syncmesh.portwatch import PortWatcher
from syncmesh.sglb_mapping import Identity, switch_mac

from fabricmodel import Fabric
from sglb.config import DRE_PERIOD_SHIFT, NOTICE_COPIES, Feedback, dre_period_shift_for


@dataclass(frozen=True)
class ControlOptions:
    """How the daemons run."""

    glb: bool = True
    """Leaves run the GLB engine (True) or hash ECMP (False)."""
    keepalive: float = 0.2
    """Hello period between peers (s)."""
    dead_interval: float = 1.0
    """A silent peer is down after this long (s)."""
    counter_interval: float = 0.25
    """Port counters are read this often (s)."""
    flowlet_gap_us: int = 500
    """Idle time after which a flow may change path (us); the delay-skew rule may hold it longer."""
    feedback: Feedback = Feedback()
    """Leaves' in-band feedback and delay-skew settings (sglb.config.Feedback)."""
    notice_copies: int = NOTICE_COPIES
    """Copies of every failure notice a spine sends to each leaf."""
    dre_period_shift: int | None = None
    """sglb.p4's DRE_PERIOD_SHIFT; None: from the fabric's slowest link
    (sglb.config.dre_period_shift_for)."""
    target: str = field(default_factory=lambda: os.environ.get("TARGET", "softswitch").lower())
    """The switches' target (softswitch or bmv2): which device config the daemons push."""
    inject_port_status: bool = field(
        default_factory=lambda: os.environ.get("TARGET", "softswitch").lower() == "bmv2")
    """Send port-status packets as PacketOut (BMv2; softswitch injects them itself)."""
    netlink_ports: bool = True
    """Also follow the switch interfaces' carrier from netlink (faster than the gNMI path)."""
    intf_prefix: str = ""
    """Node name prefix of the Mininet switches (their interfaces are <prefix><switch>-eth<port>)."""


def route_logs_to_root(prefixes: tuple[str, ...] = ("syncmesh", "finsy", "softswitch")) -> None:
    """Undo Mininet's logger class for our loggers: its per-logger handler prints to the terminal.

    Importing mininet makes every logger created afterwards carry a handler that
    writes to stderr without newlines; the daemons' records belong in the root
    handler (the run's log file) instead.
    """
    for name, lg in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(lg, logging.Logger) and name.startswith(prefixes):
            lg.handlers.clear()
            lg.propagate = True


def dre_period_shift(fabric: Fabric, options: ControlOptions) -> int:
    """The DRE period (log2 us) the fabric's program is compiled with."""
    if options.dre_period_shift is not None:
        return options.dre_period_shift
    return dre_period_shift_for(min(lk.capacity_mbps for lk in fabric.links))


def program_defines(fabric: Fabric, options: ControlOptions) -> dict[str, str]:
    """-D macros of sglb.p4 for this fabric (compile_pipeline's ``defines``)."""
    shift = dre_period_shift(fabric, options)
    return {} if shift == DRE_PERIOD_SHIFT else {"DRE_PERIOD_SHIFT": str(shift)}


class FabricControl:
    """All SyncMesh daemons of a fabric, on a loop in a background thread."""

    def __init__(self, fabric: Fabric, program: Path, options: ControlOptions | None = None,
                 pipeline: PipelineFiles | None = None, work_dir: Path | None = None) -> None:
        self.fabric = fabric
        self.options = options or ControlOptions()
        self.pipeline = pipeline or compile_pipeline(program, work_dir,
                                                     program_defines(fabric, self.options),
                                                     self.options.target)
        self.token = secrets.token_hex(16)
        self.daemons: dict[str, Daemon] = {}
        self.drivers: dict[str, P4RuntimeDriver] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="syncmesh",
                                        daemon=True)

    def _call(self, coro, timeout: float = 60.0):
        fut: Future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return fut.result(timeout)

    def start(self) -> None:
        """Start every daemon; each connects to its switch, pushes the pipeline and programs it."""
        self._thread.start()
        for sw in self.fabric.switches:
            self.daemons[sw.name] = self._make(sw.name)

        route_logs_to_root()

        async def start_all() -> None:
            for d in self.daemons.values():
                await d.start()

        self._call(start_all())

    def _make(self, name: str) -> Daemon:
        sw = self.fabric.switch(name)
        config = CoreConfig(keepalive_interval=self.options.keepalive,
                            dead_interval=self.options.dead_interval, glb=self.options.glb)
        driver = P4RuntimeDriver(name, sw.p4runtime, sw.id,
                                 Identity(switch_mac(sw.id), self.options.flowlet_gap_us,
                                          feedback=self.options.feedback,
                                          notice_copies=self.options.notice_copies,
                                          dre_period_shift=dre_period_shift(self.fabric,
                                                                            self.options)),
                                 self.pipeline, sorted(self.fabric.ports(name)),
                                 inject_port_status=self.options.inject_port_status)
        self.drivers[name] = driver
        opts = DaemonOptions(token=self.token, metrics=None,
                             counter_interval=self.options.counter_interval)
        source = None
        if self.options.netlink_ports:
            names = {f"{self.options.intf_prefix}{name}-eth{port}": port
                     for port in self.fabric.ports(name)}
            source = PortWatcher(names).changes
        return Daemon(self.fabric, name, opts, config, driver=driver, port_source=source)

    def stop_daemon(self, name: str) -> None:
        """Stop one daemon (as if killed); its switch keeps forwarding with what it holds."""
        self._call(self.daemons[name].stop())

    def restart_daemon(self, name: str) -> Daemon:
        """Start a fresh daemon (new incarnation, new P4Runtime session) for ``name``."""
        daemon = self._make(name)
        self.daemons[name] = daemon
        route_logs_to_root()
        self._call(daemon.start())
        return daemon

    def wait_programmed(self, timeout: float = 120.0) -> None:
        """Block until every switch holds its desired entries (raises TimeoutError)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(d.connected and d.book.held and d.writes for d in self.drivers.values()):
                return
            time.sleep(0.2)
        missing = [n for n, d in self.drivers.items() if not (d.connected and d.book.held)]
        raise TimeoutError(f"switches not programmed after {timeout:.0f}s: {', '.join(missing)}")

    def link_views(self) -> dict[str, dict[str, bool]]:
        """Every daemon's view of every link: {switch: {link: up}}."""
        return {n: d.core.link_view() for n, d in self.daemons.items()}

    def agree(self, link: str, up: bool) -> bool:
        """True when every daemon believes ``link`` is ``up``."""
        return all(v.get(link) == up for v in self.link_views().values())

    def failovers(self) -> int:
        """Paths that went from live to dead, summed over the leaves' daemons."""
        return sum(d.core.stats.failovers for d in self.daemons.values())

    def convergence_samples(self) -> list[float]:
        """Every daemon's remote-change acceptance delays (s)."""
        out: list[float] = []
        for d in self.daemons.values():
            out += list(d.core.stats.convergence)
        return out

    def data_plane_events(self) -> dict[str, dict[str, int]]:
        """Per switch, the non-zero ``SglbIngress.events`` counters (FAILOVER, NOTICE_SENT, ...)."""
        import finsy as fy

        from sglb.codes import Event

        async def read(name: str) -> dict[str, int]:
            sw = self.drivers[name]._sw()
            req = [fy.P4CounterEntry("SglbIngress.events", index=int(e)) for e in Event]
            return {Event(c.index).name: c.packet_count async for c in switch_read(sw, req)
                    if c.packet_count and c.index is not None}

        out = {}
        for name, driver in self.drivers.items():
            if driver.connected:
                out[name] = self._call(read(name), timeout=10)
        return out

    def stop(self) -> None:
        """Stop every daemon (the switches keep their entries) and the loop."""
        if not self._thread.is_alive():
            return

        async def stop_all() -> None:
            for d in self.daemons.values():
                try:
                    await d.stop()
                except Exception:  # noqa: BLE001 - stop the others anyway
                    pass

        try:
            self._call(stop_all(), timeout=30)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
