"""The testbed's control plane: one `syncmesh run` process per switch, as deployed.

Each daemon is its own process with its own certificate (made by `syncmesh
certs` into the run folder), its own P4Runtime session to its switch, its
SyncMesh sessions on loopback, its carrier watch on the switch's interfaces
and its metrics endpoint. The testbed reads their state only from outside:
the metrics pages (``scrape``) and plain P4Runtime Reads of the switches
(``SwitchReader``: Read needs no arbitration, so the daemon stays primary).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from syncmesh.metrics import parse

from fabricmodel import Fabric, dump
from sglb.config import DRE_PERIOD_SHIFT
from sglb.settings import TESTBED, SwitchSettings
from switchtarget.pipeline import PipelineFiles, compile_pipeline

REPO = Path(__file__).resolve().parent.parent
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@dataclass(frozen=True)
class ControlOptions:
    """How the daemons run."""

    glb: bool = True
    """Leaves run the GLB engine (True) or hash ECMP (False)."""
    keepalive: float = 0.2
    """Hello period between peers (s)."""
    dead_interval: float = 1.0
    """A silent peer is down after this long (s)."""
    counter_interval: float = 0.01
    """Spines read their port counters this often (s): their profiles follow them."""
    leaf_counter_interval: float = 1.0
    """Leaves read theirs this often (s; only their metrics use them)."""
    profile_threshold: int = 1
    """A spine sends a delta when a level moves by more than this many levels (1: a one-level
    jitter waits for the whole profile of the next period; a software switch's counters read
    every 10 ms jitter, and every delta is a P4Runtime write at each leaf)."""
    settings: SwitchSettings = TESTBED
    """The switches' settings (flowlet gap, tolerance, feedback, notice copies, DRE period;
    sglb.settings): the testbed's own by default. A DRE period of None is fitted to the
    fabric's slowest link."""
    target: str = field(default_factory=lambda: os.environ.get("TARGET", "softswitch").lower())
    """The switches' target (softswitch or bmv2): which device config the daemons push."""
    inject_port_status: bool = field(
        default_factory=lambda: os.environ.get("TARGET", "softswitch").lower() == "bmv2")
    """Send port-status packets as PacketOut (BMv2; softswitch injects them itself)."""
    netlink_ports: bool = True
    """Also follow the switch interfaces' carrier from netlink (faster than the gNMI path)."""
    intf_prefix: str = ""
    """Node name prefix of the Mininet switches (their interfaces are <prefix><switch>-eth<port>)."""
    nice: int = 0
    """Scheduling priority change of the daemon processes (negative: ahead of the software
    switches and the traffic, as a switch's control-plane CPU is not its data plane)."""


class SwitchReader:
    """Plain P4Runtime Reads of one switch, decoded with the SGLB program's schema."""

    def __init__(self, address: str, device_id: int, pipeline: PipelineFiles):
        import finsy as fy

        self.address = address
        self.device_id = device_id
        self.schema = fy.P4Schema(pipeline.p4info, pipeline.device_config)

    def _read(self, requests: list[Any], timeout: float = 10.0) -> list[Any]:
        import grpc
        from finsy.p4entity import decode_entity
        from finsy.proto import p4r, p4r_grpc

        req = p4r.ReadRequest(device_id=self.device_id,
                              entities=[r.encode(self.schema) for r in requests])
        with grpc.insecure_channel(self.address) as channel:
            return [decode_entity(msg, self.schema)
                    for resp in p4r_grpc.P4RuntimeStub(channel).Read(req, timeout=timeout)
                    for msg in resp.entities]

    def entities(self) -> list[Any]:
        """Every SGLB table entry and multicast group, as ``syncmesh.sglb_mapping`` entities."""
        import finsy as fy
        from syncmesh.p4runtime_driver import KEYLESS_TABLES, from_finsy
        from syncmesh.sglb_mapping import SGLB_TABLES

        requests: list[Any] = [fy.P4TableEntry(t) for t in sorted(SGLB_TABLES)
                               if t not in KEYLESS_TABLES]
        requests += [fy.P4TableEntry(t, is_default_action=True) for t in KEYLESS_TABLES]
        requests.append(fy.P4MulticastGroupEntry())
        out = [from_finsy(e, self.schema) for e in self._read(requests)]
        return [e for e in out if e is not None]

    def counter(self, name: str, indices: list[int] | None = None) -> dict[int, tuple[int, int]]:
        """{index: (bytes, packets)} of a counter array (every index, or those given)."""
        import finsy as fy

        reqs = ([fy.P4CounterEntry(name, index=i) for i in indices] if indices is not None
                else [fy.P4CounterEntry(name)])
        return {c.index: (c.byte_count, c.packet_count) for c in self._read(reqs)
                if c.index is not None}


def scrape(address: str, timeout: float = 2.0) -> Samples:
    """The samples of a daemon's metrics page."""
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=timeout) as r:
        return parse(r.read().decode())


def value(samples: Samples, name: str, **labels: str) -> float | None:
    """One sample of a scraped page (the ``switch`` label is matched by any value)."""
    want = set(labels.items())
    for (n, lab), v in samples.items():
        if n == name and want <= set(lab) and len(lab) == len(want) + 1:
            return v
    return None


def dre_period_shift(fabric: Fabric, options: ControlOptions) -> int:
    """The DRE period (log2 us) the fabric's program is compiled with."""
    slowest = min(lk.capacity_mbps for lk in fabric.links)
    return options.settings.for_slowest_link(slowest).period_shift


def program_defines(fabric: Fabric, options: ControlOptions) -> dict[str, str]:
    """-D macros of sglb.p4 for this fabric (compile_pipeline's ``defines``)."""
    shift = dre_period_shift(fabric, options)
    return {} if shift == DRE_PERIOD_SHIFT else {"DRE_PERIOD_SHIFT": str(shift)}


class FabricControl:
    """One SyncMesh daemon process per switch of a fabric, and what the testbed reads of them."""

    def __init__(self, fabric: Fabric, program: Path, options: ControlOptions | None = None,
                 pipeline: PipelineFiles | None = None, work_dir: Path | None = None) -> None:
        self.fabric = fabric
        self.program = program
        self.options = options or ControlOptions()
        if work_dir is None:  # a fresh directory per run, also for runs in the same second
            (REPO / "out").mkdir(exist_ok=True)
            work_dir = Path(tempfile.mkdtemp(prefix=time.strftime("control-%Y%m%d-%H%M%S-"),
                                             dir=REPO / "out"))
        self.work_dir = Path(work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.pipeline = pipeline or compile_pipeline(program, self.work_dir / "pipeline",
                                                     program_defines(fabric, self.options),
                                                     self.options.target)
        self.fabric_file = self.work_dir / "fabric.yaml"
        self.cert_dir = self.work_dir / "certs"
        self.state_dir = self.work_dir / "state"
        self.log_dir = self.work_dir / "logs"
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.readers = {sw.name: SwitchReader(sw.p4runtime, sw.id, self.pipeline)
                        for sw in fabric.switches}

    # -- processes -------------------------------------------------------------

    def start(self) -> None:
        """Write the fabric file and the certificates, start one daemon per switch."""
        dump(self.fabric, self.fabric_file)
        done = subprocess.run([sys.executable, "-m", "syncmesh.cli", "certs", "--fabric",
                               str(self.fabric_file), "--out", str(self.cert_dir)],
                              capture_output=True, text=True, timeout=120, cwd=REPO)
        if done.returncode != 0:
            raise RuntimeError(f"syncmesh certs failed: {done.stderr.strip()}")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for sw in self.fabric.switches:
            self.procs[sw.name] = self._spawn(sw.name)

    def _command(self, name: str) -> list[str]:
        o = self.options
        cmd = [sys.executable, "-m", "syncmesh.cli", "run", str(self.fabric_file), name,
               "--certs", str(self.cert_dir), "--state-dir", str(self.state_dir),
               "--p4runtime", "--pipeline", str(self.program), "--switch-budget", "0",
               "--keepalive", str(o.keepalive), "--dead-interval", str(o.dead_interval),
               "--counter-interval", str(o.counter_interval),
               "--leaf-counter-interval", str(o.leaf_counter_interval),
               "--profile-threshold", str(o.profile_threshold),
               "--flowlet-gap-us", str(o.settings.flowlet_gap_us),
               "--tie-tolerance", str(o.settings.tie_tolerance),
               "--mode", "glb" if o.glb else "ecmp",
               "--dre-period-shift", str(dre_period_shift(self.fabric, o)),
               "--notice-copies", str(o.settings.notice_copies)]
        fb = o.settings.feedback
        if not fb.enabled:
            cmd.append("--no-feedback")
        cmd += ["--tag-frame-max", str(fb.tag_frame_max), "--feedback-fresh-us", str(fb.fresh_us),
                "--feedback-stale-us", str(fb.stale_us), "--unknown-level", str(fb.unknown_level),
                "--gap-margin-us", str(fb.gap_margin_us),
                "--gap-unknown-us", str(fb.gap_unknown_us)]
        if o.inject_port_status:
            cmd.append("--inject-port-status")
        if o.target != "softswitch":
            cmd += ["--target", o.target]
        if o.netlink_ports:
            cmd += ["--watch-ports", "--intf-prefix", o.intf_prefix]
        return cmd

    def _spawn(self, name: str) -> subprocess.Popen[bytes]:
        # the compiled pipeline of a killed daemon stays in its TMPDIR: keep that in the run
        tmp = self.work_dir / "tmp"
        tmp.mkdir(exist_ok=True)
        with open(self.log_dir / f"{name}.syncmesh.log", "ab") as log:
            nice = self.options.nice
            return subprocess.Popen(self._command(name), stdout=subprocess.DEVNULL, stderr=log,
                                    cwd=REPO, env={**os.environ, "TMPDIR": str(tmp)},
                                    start_new_session=True,
                                    preexec_fn=(lambda: os.nice(nice)) if nice else None)

    def stop_daemon(self, name: str) -> None:
        """Kill one daemon (SIGKILL); its switch keeps forwarding with what it holds."""
        proc = self.procs[name]
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)

    def restart_daemon(self, name: str) -> None:
        """Start a fresh daemon process (newer incarnation, new P4Runtime session)."""
        self.stop_daemon(name)
        self.procs[name] = self._spawn(name)

    def stop(self) -> None:
        """Stop every daemon (SIGTERM, then SIGKILL); the switches keep their entries."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def alive(self) -> None:
        """Raise if a daemon process exited (its log's last lines say why)."""
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                tail = (self.log_dir / f"{name}.syncmesh.log").read_text().splitlines()[-5:]
                raise RuntimeError(f"daemon {name} exited with {proc.returncode}: "
                                   + " | ".join(tail))

    # -- reading the daemons -----------------------------------------------------

    def metrics(self, name: str) -> Samples:
        """The daemon's metrics page (empty while it cannot be reached)."""
        try:
            return scrape(self.fabric.switch(name).metrics)
        except (OSError, urllib.error.URLError):
            return {}

    def all_metrics(self) -> dict[str, Samples]:
        """Every daemon's metrics page."""
        return {sw.name: self.metrics(sw.name) for sw in self.fabric.switches}

    def ready(self, name: str) -> bool:
        """True when the daemon runs, its switch session is up and reconciled."""
        return value(self.metrics(name), "syncmesh_switch_ready") == 1

    def wait_programmed(self, timeout: float = 180.0) -> None:
        """Block until every daemon has programmed its switch (raises TimeoutError)."""
        deadline = time.monotonic() + timeout
        missing = [sw.name for sw in self.fabric.switches]
        while time.monotonic() < deadline:
            self.alive()
            missing = [n for n in missing if not self.ready(n)]
            if not missing:
                return
            time.sleep(0.2)
        last = {n: self._last_log_line(n) for n in missing}
        raise TimeoutError(f"switches not programmed after {timeout:.0f}s: "
                           + "; ".join(f"{n} (last log line: {line})" for n, line in last.items()))

    def _last_log_line(self, name: str) -> str:
        try:
            lines = (self.log_dir / f"{name}.syncmesh.log").read_text().splitlines()
        except OSError:
            return "no log"
        return lines[-1] if lines else "empty log"

    def link_views(self) -> dict[str, dict[str, bool]]:
        """Every daemon's view of every link: {switch: {link: up}}."""
        out = {}
        for name, page in self.all_metrics().items():
            out[name] = {dict(lab)["link"]: v == 1 for (n, lab), v in page.items()
                         if n == "syncmesh_link_up"}
        return out

    def agree(self, link: str, up: bool) -> bool:
        """True when every daemon believes ``link`` is ``up``."""
        return all(v.get(link) == up for v in self.link_views().values())

    def agreed_at(self, link: str, up: bool) -> float | None:
        """When the last daemon came to believe ``link`` is ``up`` (its own clock), if all do."""
        times = []
        for page in self.all_metrics().values():
            if value(page, "syncmesh_link_up", link=link) != int(up):
                return None
            at = value(page, "syncmesh_link_changed_seconds", link=link)
            if at is None:
                return None
            times.append(at)
        return max(times)

    def total(self, name: str) -> float:
        """A counter summed over every daemon."""
        return sum(v for page in self.all_metrics().values() for (n, _), v in page.items()
                   if n == name)

    def failovers(self) -> int:
        """Paths that went from live to dead, summed over the leaves' daemons."""
        return int(self.total("syncmesh_failovers_total"))

    def data_plane_events(self) -> dict[str, dict[str, int]]:
        """Per switch, the non-zero ``SglbIngress.events`` counters (FAILOVER, NOTICE_SENT, ...)."""
        from sglb.codes import Event

        out = {}
        for name, reader in self.readers.items():
            try:
                counts = reader.counter("SglbIngress.events", [int(e) for e in Event])
            except Exception:  # noqa: BLE001 - a switch that is gone has no events to show
                continue
            out[name] = {Event(i).name: pkts for i, (_, pkts) in counts.items() if pkts}
        return out
