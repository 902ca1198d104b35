"""`make run`: the SGLB fabric in Mininet with traffic, a fabric link cut and a host link cut.

Builds the fabric of a description file (default ``topologies/fabrics/ls4x2.yaml``)
with one ``softswitch run`` process per switch (``TARGET=bmv2``: one BMv2
``simple_switch_grpc`` per switch, sglb.p4 compiled by p4c), makes every switch's key and
certificate (``syncmesh certs``), starts one ``syncmesh run`` process per switch
(each programs its switch over P4Runtime: pipeline, routes, paths, profiles,
notice groups; they talk mutual TLS), runs the multi-rail UDP load generator
(topologies/udpload.py) between host pairs in different pods so every packet
crosses a spine, and ReCCL collectives (all-to-all, all-reduce, one rank per
host, every result checked) between all hosts, cuts a leaf-spine link and later a host's last-hop link,
restores both, prints progress once a second, and ends with a summary. Figures
(JSON) and a throughput plot (PNG) go to ``out/testbed-<time>/``.

Link rates: the fabric's capacities (10 Mbit/s in the examples) times
``--link-scale`` are enforced by HTB on every link. On softswitch's native engine
`make run` runs them at 10x (100 Mbit/s) with 4 flows of 10 Mbit/s in 1,400-byte
datagrams (about 900 packets/s each); on the Python engine and on BMv2 at the
examples' rates with 2.5 Mbit/s per flow of 1,200-byte datagrams (about 250
packets/s). Either way the CPU is not the limit: the switches forward far more,
and the hosts' Python senders and receivers keep their send times (at 25 Mbit/s
per flow they did not: docs/testbed.md, "Link rates versus the CPU").

Ctrl-C (or SIGTERM) stops traffic, daemons and switches and removes every
interface this run created (only those).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fabricmodel import Fabric, FabricError, load
from topologies import analysis, failover_path
from topologies.alltoall import scale_fabric

REPO = Path(__file__).resolve().parent.parent
DEFAULT_FABRIC = REPO / "topologies" / "fabrics" / "ls4x2.yaml"
PROGRAM = REPO / "p4src" / "sglb.p4"
UDP_PORT = 9000
TARGET_NAMES = {"softswitch": "softswitch", "bmv2": "BMv2 simple_switch_grpc"}


@dataclass(frozen=True)
class Load:
    """The rates of a run: links, and the UDP load generator's flows."""

    link_scale: float
    """Every link and NIC rate is the fabric's capacity times this."""
    rate_mbps: float
    """Offered load per flow."""
    size: int
    """UDP payload bytes per datagram."""


# What two shared cores carry without the CPU setting the figures (docs/testbed.md): on the
# native engine 10x the examples' link rates, with a load in full-size frames that the hosts'
# Python senders and receivers keep up with (at 25 Mbit/s per flow the baseline's one-way
# delay went from 0.4 to 7-12 ms and a port's carrier reached its program 20-27 ms late);
# the Python engine and BMv2's default build forward a few tens of thousands of packets/s
# and stay at 1x.
NATIVE_LOAD = Load(link_scale=10.0, rate_mbps=10.0, size=1372)
BASE_LOAD = Load(link_scale=1.0, rate_mbps=2.5, size=1200)


def default_load(targets: list[str]) -> Load:
    """`make run`'s rates for these targets: one load that all of them carry, so that a
    side-by-side comparison compares like with like."""
    return NATIVE_LOAD if all(switch_engine(t) == "native" for t in targets) else BASE_LOAD


@dataclass(frozen=True)
class Scenario:
    """A testbed run; the defaults are BASE_LOAD's rates (tests and benchmarks choose theirs,
    `make run` takes default_load's)."""

    fabric: Path = DEFAULT_FABRIC
    """Fabric description file."""
    phase_s: float = 6.0
    """Length of each phase (baseline, then after every cut and restore)."""
    rate_mbps: float = BASE_LOAD.rate_mbps
    """Offered load per flow."""
    size: int = BASE_LOAD.size
    """UDP payload bytes per datagram."""
    prefix: str = ""
    """Node name prefix (keeps parallel networks apart)."""
    out_dir: Path = REPO / "out"
    """Where the run folder is created."""
    glb: bool = True
    """SGLB (True) or the ECMP baseline (False) on the leaves."""
    quiet: bool = False
    """No progress lines."""
    fabric_cuts: int = 1
    """How many times the leaf-spine link is cut and restored (the benchmark repeats it)."""
    nic_cut: bool = True
    """Then cut and restore a host's last-hop link."""
    reccl: bool = True
    """Also run ReCCL collectives (all-to-all, all-reduce) between all hosts, one rank each."""
    reccl_elements: int = 32768
    """float32 elements per collective (128 KiB)."""
    reccl_interval: float = 0.5
    """Least seconds between two collectives of a rank (keeps the links below saturation)."""
    link_scale: float = BASE_LOAD.link_scale
    """Every link and NIC rate is the fabric's capacity times this (the offered load is
    rate_mbps's)."""
    target: str = field(default_factory=lambda: os.environ.get("TARGET", "softswitch").lower())
    """The switches: softswitch (default) or bmv2 (simple_switch_grpc, sglb.p4 compiled by p4c)."""

    @property
    def phases(self) -> int:
        """Number of phases: a baseline, then one after every cut and every restore."""
        return 1 + 2 * self.fabric_cuts + (2 if self.nic_cut else 0)


@dataclass
class Flow:
    """One load-generator flow between two hosts."""

    id: int
    src: str
    dst: str
    src_ips: list[str]
    src_ifaces: list[str]
    dst_ips: list[str]
    src_leaves: list[str]
    dst_leaves: list[str]


@dataclass
class RunState:
    """What happened during the run, for the summary."""

    marks: list[tuple[float, str]] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    """Per mark: cut, restore, nic-cut or nic-restore."""
    convergence: dict[int, float] = field(default_factory=dict)
    """Per mark index: seconds until every daemon agreed on the link's new state."""
    progress: dict[str, dict] = field(default_factory=dict)
    reccl: dict[str, list[dict]] = field(default_factory=dict)
    """Per host: the ReCCL rank's JSON lines (one per collective, then totals or an error)."""

    def reccl_wrong(self) -> int:
        """Collectives whose result differed, plus ranks that reported an error."""
        return sum(1 for lines in self.reccl.values() for x in lines
                   if ("op" in x and not x["correct"]) or "error" in x)


def _wait_ranks_ready(state: RunState, world: int, timeout: float) -> None:
    """Until every ReCCL rank has connected; a rank's error or the timeout stops the run."""
    deadline = time.time() + timeout
    while True:
        lines = [list(v) for v in state.reccl.values()]
        errors = [x["error"] for v in lines for x in v if "error" in x]
        if errors:
            raise RuntimeError(f"a ReCCL rank failed to connect: {errors[0]}")
        ready = sum(1 for v in lines if any(x.get("ready") for x in v))
        if ready == world:
            return
        if time.time() > deadline:
            raise RuntimeError(f"{world - ready} of {world} ReCCL ranks not connected after "
                               f"{timeout:.0f} s")
        time.sleep(0.05)


def pick_flows(fabric: Fabric) -> list[Flow]:
    """Pairs of hosts that share no leaf (so traffic crosses spines), in both directions."""
    hosts = list(fabric.hosts)
    flows: list[Flow] = []
    used: set[tuple[str, str]] = set()
    for a in hosts:
        for b in hosts:
            if a.name == b.name or (a.name, b.name) in used:
                continue
            if {n.leaf for n in a.nics} & {n.leaf for n in b.nics}:
                continue
            if len(a.nics) != len(b.nics) or any({a.name, b.name} & set(p) for p in used):
                continue
            for s, d in ((a, b), (b, a)):
                used.add((s.name, d.name))
                flows.append(Flow(len(flows), s.name, d.name, [str(n.ip) for n in s.nics], [],
                                  [str(n.ip) for n in d.nics], [n.leaf for n in s.nics],
                                  [n.leaf for n in d.nics]))
            break
    if not flows:
        raise FabricError(f"fabric {fabric.name}: no two hosts with disjoint leaves and the same "
                         "number of NICs: nothing would cross a spine")
    return flows


class RankLines(threading.Thread):
    """Collects a ReCCL rank's JSON lines."""

    def __init__(self, name: str, proc: subprocess.Popen, state: RunState) -> None:
        super().__init__(daemon=True, name=f"reccl-{name}")
        self.proc, self.lines = proc, state.reccl.setdefault(name, [])

    def run(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.lines.append(json.loads(line))
            except ValueError:  # ReCCL's own log lines (stderr): kept, but an error is JSON
                self.lines.append({"log": line.strip()[:300]})


class Progress(threading.Thread):
    """Reads the receivers' JSON progress lines."""

    def __init__(self, name: str, proc: subprocess.Popen, state: RunState) -> None:
        super().__init__(daemon=True, name=f"progress-{name}")
        self.proc, self.state, self.host = proc, state, name

    def run(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.state.progress[self.host] = json.loads(line)
            except ValueError:
                continue


def _wait_receivers_ready(state: RunState, receivers: list[subprocess.Popen],
                          timeout: float) -> None:
    """Until every load receiver has bound its sockets (its first progress line)."""
    deadline = time.time() + timeout
    while len(state.progress) < len(receivers):
        dead = [p.args for p in receivers if p.poll() is not None]
        if dead:
            raise RuntimeError(f"a load receiver exited before it was ready: {dead[0]}")
        if time.time() > deadline:
            raise RuntimeError(f"{len(receivers) - len(state.progress)} of {len(receivers)} load "
                               f"receivers not ready after {timeout:.0f} s")
        time.sleep(0.05)


def _watch_convergence(control, link: str, up: bool, since: float, key: int, state: RunState,
                       timeout: float = 10.0) -> threading.Thread:
    """Once every daemon agrees, the time from the cut until the last of them changed its view
    (each daemon stamps the change with its own clock; one machine, one clock)."""
    def run() -> None:
        while time.time() < since + timeout:
            at = control.agreed_at(link, up)
            if at is not None:
                state.convergence[key] = at - since
                return
            time.sleep(0.05)
    t = threading.Thread(target=run, daemon=True, name=f"converge-{key}")
    t.start()
    return t


def log_to_file(path: Path) -> None:
    """The driver's own log lines (logfmt) go to ``path``, not the terminal (each daemon
    process writes its own, ``logs/<switch>.syncmesh.log``)."""
    import logging

    from syncmesh.logs import LogfmtFormatter

    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path)
    handler.setFormatter(LogfmtFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)


def run(sc: Scenario) -> dict:
    """Run the scenario; returns the summary (also written as JSON)."""
    from topologies.control import ControlOptions, FabricControl
    from topologies.mininet_fabric import FabricNet, NetOptions

    fabric = load(sc.fabric)
    if sc.link_scale != 1.0:
        fabric = scale_fabric(fabric, sc.link_scale)
    run_dir = sc.out_dir / time.strftime("testbed-%Y%m%d-%H%M%S")
    run_dir.mkdir(parents=True, exist_ok=True)
    say = (lambda *a: None) if sc.quiet else (lambda *a: print(*a, flush=True))
    flows = pick_flows(fabric)
    fnet = FabricNet(fabric, NetOptions(prefix=sc.prefix, log_dir=run_dir / "logs",
                                        target=sc.target))
    control = None
    procs: list[subprocess.Popen] = []
    state = RunState()
    t_begin = time.time()
    load_begin = os.getloadavg()[0]
    log_to_file(run_dir / "syncmesh.log")
    try:
        say(f"[testbed] fabric {fabric.name}: {len(fabric.leaves)} leaves, {len(fabric.spines)} "
            f"spines, {len(fabric.hosts)} hosts, links {sorted({lk.capacity_mbps for lk in fabric.links})} "
            "Mbit/s (HTB)")
        fnet.start()
        say(f"[testbed] {len(fabric.switches)} {TARGET_NAMES[sc.target]}{_engine_note(sc)} processes up "
            f"({time.time() - t_begin:.1f} s)")
        control = FabricControl(fnet.fabric, PROGRAM,
                                ControlOptions(glb=sc.glb, intf_prefix=sc.prefix, target=sc.target,
                                               inject_port_status=sc.target == "bmv2"),
                                work_dir=run_dir)
        control.start()
        control.wait_programmed()
        say(f"[testbed] {len(fabric.switches)} SyncMesh daemon processes up (mutual TLS, "
            f"certificates in {control.cert_dir}), switches programmed over P4Runtime "
            f"({time.time() - t_begin:.1f} s); leaves in {'SGLB' if sc.glb else 'ECMP'} mode")
        for f in flows:
            f.src_ifaces = [fnet.nic_intf(f.src, n) for n in fabric.host(f.src).nics]
            h = fnet.host(f.src)
            for s_ip, d_ip in zip(f.src_ips, f.dst_ips, strict=True):
                h.cmd(f"ping -c1 -W2 -I {s_ip} {d_ip} >/dev/null")  # resolve ARP first

        duration = sc.phases * sc.phase_s
        py = sys.executable
        ranks: list[subprocess.Popen] = []
        if sc.reccl:
            # The ranks connect first and start with everything else: set-up under load takes
            # seconds, which would otherwise eat the baseline phase.
            # The job secret reaches the ranks through the environment they inherit.
            os.environ.setdefault("RECCL_SECRET", secrets.token_hex(16))
            store = f"{fabric.hosts[0].nics[0].ip}:29500"
            for rank, host in enumerate(fabric.hosts):
                p = fnet.host(host.name).popen(
                    [py, "-m", "topologies.reccl_job", "--rank", str(rank), "--world",
                     str(len(fabric.hosts)), "--store", store, "--host", host.name,
                     "--nics", ",".join(str(n.ip) for n in host.nics),
                     "--elements", str(sc.reccl_elements), "--interval", str(sc.reccl_interval),
                     "--duration", str(duration), "--start-on-stdin"],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    text=True)
                procs.append(p)
                ranks.append(p)
                RankLines(host.name, p, state).start()
            _wait_ranks_ready(state, len(fabric.hosts), timeout=120.0)
            say(f"[testbed] ReCCL: {len(fabric.hosts)} ranks connected (one per host, every "
                f"NIC), all-to-all and all-reduce of {sc.reccl_elements * 4 // 1024} KiB, results "
                "checked bit for bit")
        receivers = []
        for host in sorted({f.dst for f in flows}):
            nics = fabric.host(host).nics
            p = fnet.host(host).popen(
                [py, "-m", "topologies.udpload", "recv", "--listen", ",".join(str(n.ip) for n in nics),
                 "--ifaces", ",".join(fnet.nic_intf(host, n) for n in nics),
                 "--port", str(UDP_PORT), "--end-on-stdin",
                 "--out", str(run_dir / f"recv-{host}.npz")],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            procs.append(p)
            receivers.append(p)
            Progress(host, p, state).start()
        _wait_receivers_ready(state, receivers, timeout=60.0)
        start = time.time() + 1.5
        for p in receivers:  # they listen until the senders stop, then drain the switches' queues
            assert p.stdin is not None
            p.stdin.write(f"{start + duration}\n")
            p.stdin.close()
        for f in flows:
            procs.append(fnet.host(f.src).popen(
                [py, "-m", "topologies.udpload", "send", "--flow", str(f.id),
                 "--src", ",".join(f.src_ips), "--ifaces", ",".join(f.src_ifaces),
                 "--dst", ",".join(f.dst_ips), "--port", str(UDP_PORT),
                 "--rate-mbps", str(sc.rate_mbps), "--size", str(sc.size),
                 "--duration", str(duration), "--start-at", str(start),
                 "--out", str(run_dir / f"send-{f.id}.npz")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for p in ranks:
            assert p.stdin is not None
            p.stdin.write(f"{start}\n")
            p.stdin.close()
        say(f"[testbed] traffic: {len(flows)} UDP flows x {sc.rate_mbps} Mbit/s over every rail "
            f"({', '.join(f'{f.src}->{f.dst}' for f in flows)}), {sc.phase_s:.0f} s per phase")

        # the faults: first host's rail-0 leaf and its first spine; that host's rail-0 NIC
        h0 = fabric.host(flows[0].src)
        nic0 = h0.nics[0]
        fab_link = fnet.fabric.links_of(nic0.leaf)[0]
        cut_leaf = nic0.leaf
        kinds = ["cut", "restore"] * sc.fabric_cuts + (["nic-cut", "nic-restore"] if sc.nic_cut else [])
        target = {"cut": fab_link.name, "restore": fab_link.name, "nic-cut": f"{h0.name}-{nic0.name}",
                  "nic-restore": f"{h0.name}-{nic0.name}"}
        timeline = [(start + (i + 1) * sc.phase_s, k, f"{k.removeprefix('nic-')} {target[k]}")
                    for i, k in enumerate(kinds)]
        failovers_before = control.failovers()
        next_line = start
        pending = list(timeline)
        last_bytes: dict[str, int] = {}
        while time.time() < start + duration + 0.5:
            now = time.time()
            if pending and now >= pending[0][0]:
                _, what, label = pending.pop(0)
                t = time.time()
                if what in ("cut", "restore"):
                    fnet.set_link(fab_link, up=(what == "restore"))
                    _watch_convergence(control, fab_link.name, what == "restore", t,
                                       len(state.marks), state)
                else:
                    fnet.set_nic(h0.name, nic0.name, up=(what == "nic-restore"))
                state.marks.append((t, label))
                state.kinds.append(what)
                say(f"[testbed] t={t - start:5.1f}s  >>> {label}")
                continue
            if now >= next_line:
                next_line += 1.0
                total = 0.0
                for host, rec in state.progress.items():
                    total += (rec["bytes"] - last_bytes.get(host, rec["bytes"])) * 8 / 1e6
                    last_bytes[host] = rec["bytes"]
                if now > start:
                    ops = [x for lines in state.reccl.values() for x in list(lines) if "op" in x]
                    coll = (f"  collectives {len(ops)} ({sum(not x['correct'] for x in ops)} wrong)"
                            if sc.reccl else "")
                    say(f"[testbed] t={now - start:5.1f}s  UDP delivered {total:6.2f} Mbit/s "
                        f"(offered {sc.rate_mbps * len(flows):.1f})  SyncMesh failovers "
                        f"{control.failovers() - failovers_before}{coll}")
            time.sleep(0.01)
        for p in procs:  # receivers drain what the switches still queue (udpload.DRAIN_MAX)
            try:
                p.wait(timeout=duration + 30)
            except subprocess.TimeoutExpired:
                p.terminate()
        summary = summarise(sc, fnet, control, flows, state, start, duration, run_dir, cut_leaf,
                            h0.name, failovers_before)
        summary["wall_seconds"] = round(time.time() - t_begin, 1)
        summary["load_average"] = [round(load_begin, 2), round(os.getloadavg()[0], 2)]
        (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        say(render_summary(summary))
        return summary
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        if control is not None:
            control.stop()
        fnet.stop()


def summarise(sc: Scenario, fnet, control, flows: list[Flow], state: RunState, start: float,
              duration: float, run_dir: Path, cut_leaf: str, cut_host: str,
              failovers_before: int) -> dict:
    """Figures of the run from the logs."""
    size = sc.size + 28  # IP + UDP headers: what the links carry
    logs = [analysis.load_flow(f.id, f.src, f.dst, run_dir / f"send-{f.id}.npz",
                               run_dir / f"recv-{f.dst}.npz", size) for f in flows]
    m = [t for t, _ in state.marks] + [start + duration]
    end = start + duration
    phases = [("baseline", start, m[0])]
    phases += [(f"{i + 1}: {label}", m[i], m[i + 1]) for i, (_, label) in enumerate(state.marks)]
    faults, figs, extra = [], [], []
    for i, kind in enumerate(state.kinds):
        if kind == "cut":  # a leaf's uplink carries the rails that start or end at the leaf
            fault = analysis.Fault(
                state.marks[i][1], "leaf-spine", m[i], m[i + 1],
                tuple(f.id for f in flows if cut_leaf in f.src_leaves),
                tuple(f.id for f in flows if cut_leaf in f.dst_leaves),
                {f.id: tuple(r for r, leaves in enumerate(zip(f.src_leaves, f.dst_leaves,
                                                              strict=True))
                             if cut_leaf in leaves) for f in flows})
        elif kind == "nic-cut":
            # rail 0: the cut NIC is the host's first, and rail i joins the hosts' NICs i
            touched = [f for f in flows if cut_host in (f.src, f.dst)]
            fault = analysis.Fault(state.marks[i][1], "host-nic", m[i], m[i + 1],
                                   tuple(f.id for f in touched if f.src == cut_host),
                                   tuple(f.id for f in touched if f.dst == cut_host),
                                   {f.id: (0,) for f in touched})
        else:
            continue
        faults.append(fault)
        figs.append(analysis.fault_figures(logs, fault))
        if kind == "cut":
            figs[-1].syncmesh_convergence_s = state.convergence.get(i)
        extra.append({"port_status_s": _port_status_delays(sc, fnet, run_dir, kind, cut_leaf,
                                                           cut_host, m[i]),
                      "reccl_silences": failover_path.reccl_silences(state.reccl, m[i],
                                                                     m[i + 1])})
    for host, lines in state.reccl.items():  # every rank's report, for a closer look
        (run_dir / f"reccl-{host}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    times, rates = analysis.throughput(logs, start, end)
    analysis.plot(run_dir / "throughput.png", times, rates, state.marks, phases, start,
                  f"{fnet.fabric.name}: delivered throughput ({'SGLB' if sc.glb else 'ECMP'}, "
                  f"{TARGET_NAMES[sc.target]})")
    sent = sum(len(lg.sent_seq) for lg in logs)
    delivered = sum(int(lg.delivered.sum()) for lg in logs)
    dupes = sum(len(lg.recv_seq) - len(set(lg.recv_seq.tolist())) for lg in logs)
    return {
        "fabric": fnet.fabric.name,
        "mode": "sglb" if sc.glb else "ecmp",
        "target": sc.target,
        "engine": switch_engine(sc.target),
        "link_scale": sc.link_scale,
        "workload": "multi-rail UDP load generator (topologies/udpload.py)"
                    + (" + ReCCL all-to-all / all-reduce (topologies/reccl_job.py)" if sc.reccl
                       else ""),
        "flows": [{"id": f.id, "src": f.src, "dst": f.dst} for f in flows],
        "rate_mbps_per_flow": sc.rate_mbps,
        "datagram_bytes": size,
        "start": start,
        "events": [{"t": t, "label": label, "kind": k}
                   for (t, label), k in zip(state.marks, state.kinds, strict=True)],
        "phases": analysis.phase_rates(logs, phases),
        "faults": [asdict(f) | {"kind": fault.kind} | more
                   for f, fault, more in zip(figs, faults, extra, strict=True)],
        "syncmesh": {"restore_convergence_s": [state.convergence.get(i) for i, k in
                                               enumerate(state.kinds) if k == "restore"],
                     "failovers": control.failovers() - failovers_before,
                     "rejected": control.total("syncmesh_rejected_total"),
                     "process_per_switch": True},
        "data_plane_events": control.data_plane_events(),
        "reccl": reccl_figures(state, phases) if sc.reccl else None,
        "packets": {"sent": sent, "delivered": delivered, "lost": sent - delivered,
                    "duplicates": dupes},
        "correct": bool(dupes == 0 and (not sc.reccl or (
            not state.reccl_wrong() and len(state.reccl) == len(fnet.fabric.hosts))) and all(
            set(lg.recv_seq.tolist()) <= set(lg.sent_seq.tolist()) for lg in logs)),
        "plot": str(run_dir / "throughput.png"),
        "run_dir": str(run_dir),
    }


def _port_status_delays(sc: Scenario, fnet, run_dir: Path, kind: str, cut_leaf: str,
                        cut_host: str, at: float) -> dict[str, float | None]:
    """Per switch at the cut: seconds until its program got the port-status packet
    (softswitch: the switch's own log; BMv2: the daemon's PacketOut, topologies.failover_path)."""
    fabric = fnet.fabric
    if kind == "cut":
        link = fabric.links_of(cut_leaf)[0]
        ends = [(link.leaf.switch, link.leaf.port), (link.spine.switch, link.spine.port)]
    else:
        nic = fabric.host(cut_host).nics[0]
        ends = [(nic.leaf, nic.port)]
    return {f"{sw}:{port}": failover_path.port_status_delay(
        run_dir / "logs", sc.target, fnet.node_name(sw), sw, port, False, at)
        for sw, port in ends}


def reccl_figures(state: RunState, phases: list[tuple[str, float, float]]) -> dict:
    """Per phase: collectives finished, rank goodput and slowest collective; totals and errors."""
    ops = [x | {"host": h} for h, lines in state.reccl.items() for x in lines if "op" in x]
    out: dict = {"phases": {}}
    for name, a, b in phases:
        mine = [x for x in ops if a <= x["t"] < b]
        secs = sorted(x["seconds"] for x in mine)
        out["phases"][name] = {
            "collectives": len(mine),
            "rank_goodput_mbps": round(sum(x["bytes"] for x in mine) * 8 / 1e6 / max(b - a, 1e-9)
                                       / max(len(state.reccl), 1), 3),
            "median_s": round(secs[len(secs) // 2], 4) if secs else None,
            "slowest_s": round(secs[-1], 4) if secs else None}
    done = [x for lines in state.reccl.values() for x in lines if x.get("done")]
    out["collectives"] = len(ops)
    out["wrong"] = sum(not x["correct"] for x in ops)
    out["ranks_finished"] = len(done)
    out["errors"] = [x["error"] for lines in state.reccl.values() for x in lines if "error" in x]
    out["log_lines"] = [x["log"] for lines in state.reccl.values() for x in lines if "log" in x][:20]
    out["events"] = sorted({e for x in done for e in x.get("events", [])})[:20]
    return out


def _ms(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 1000:.1f} ms"


def switch_engine(target: str) -> str | None:
    """softswitch's packet engine in the switch processes (they inherit this environment), or
    None for BMv2."""
    if target != "softswitch":
        return None
    from softswitch.engine.switch import engine_default

    return engine_default()


def _engine_note(sc: Scenario) -> str:
    engine = switch_engine(sc.target)
    return f" ({engine} engine)" if engine else ""


def render_summary(s: dict) -> str:
    """The summary as text for the terminal."""
    lines = ["", f"== testbed summary: {s['fabric']} ({s['mode']}, on "
                 f"{TARGET_NAMES.get(s.get('target', 'softswitch'), '?')}), {s['workload']}"]
    lines.append(f"{'phase':<28}{'offered':>10}{'delivered':>11}{'lost':>8}"
                 f"{'one-way delay, median / p99':>30}")
    for name, p in s["phases"].items():
        delay = (f"{p['delay_ms_median']:.1f} / {p['delay_ms_p99']:.1f} ms"
                 if p.get("delay_ms_median") is not None else "n/a")
        lines.append(f"{name:<28}{p['offered_mbps']:>8.2f} M{p['delivered_mbps']:>9.2f} M"
                     f"{p['lost']:>8}{delay:>30}")
    for f in s["faults"]:
        conv = f" / SyncMesh agreement {_ms(f['syncmesh_convergence_s'])}" if f["kind"] == "leaf-spine" else ""
        lines.append(f"{f['name']}: lost {f['lost']} packets; failover local "
                     f"{_ms(f['local_outage_s'])}, remote {_ms(f['remote_outage_s'])}{conv}")
        bursts = f.get("loss_bursts")
        if bursts:
            lines.append("  losses on the cut's rails (by send time after the cut): " + ", ".join(
                f"{a * 1000:.0f}-{b * 1000:.0f} ms ({n})" for a, b, n in bursts[:6])
                + (f" and {len(bursts) - 6} more bursts" if len(bursts) > 6 else ""))
        seen = f.get("port_status_s") or {}
        if seen:
            how = "the daemon's PacketOut" if s.get("target") == "bmv2" else "injected by the switch"
            lines.append("  port-status reached the program: " + ", ".join(
                f"{end} {_ms(x)}" for end, x in seen.items()) + f" after the cut ({how})")
        for x in f.get("reccl_silences") or ():
            lines.append(f"  ReCCL: {x['host']}'s channel {x['channel']} to rank {x['peer']} "
                         f"declared dead {x['after_s'] * 1000:.0f} ms after the cut: {x['detail']}")
    ev = s["data_plane_events"]
    shown = ("FAILOVER", "NOTICE_SENT", "NOTICE_RECEIVED", "PORT_DOWN", "PORT_UP")
    lines.append("data plane events: " + "; ".join(
        f"{sw} " + " ".join(f"{k}={v}" for k, v in ev[sw].items() if k in shown)
        for sw in sorted(ev) if any(k in shown for k in ev[sw])))
    rc = s.get("reccl")
    if rc:
        lines.append(f"ReCCL: {rc['collectives']} collectives over {rc['ranks_finished']} ranks, "
                     f"{rc['wrong']} wrong, errors: {rc['errors'] or 'none'}")
        for name, p in rc["phases"].items():
            lines.append(f"  {name:<26}{p['collectives']:>5} done, {p['rank_goodput_mbps']:6.2f} "
                         f"Mbit/s per rank, median {p['median_s']} s, slowest {p['slowest_s']} s")
    pk = s["packets"]
    lines.append(f"packets: sent {pk['sent']}, delivered {pk['delivered']}, lost {pk['lost']}, "
                 f"duplicates {pk['duplicates']}; every delivered packet correct: {s['correct']}")
    restores = ", ".join(_ms(x) for x in s["syncmesh"]["restore_convergence_s"])
    lines.append(f"SyncMesh: {s['syncmesh']['failovers']} path failovers, restore agreed in "
                 f"{restores}")
    lines.append(f"plot: {s['plot']}\nfigures: {s['run_dir']}/summary.json")
    return "\n".join(lines)


def check_bmv2() -> bool:
    """TARGET=bmv2: the tools are there and p4c takes sglb.p4 (cached for the run); else say why."""
    from bmv2 import tools
    from bmv2.compiler import P4cError, compile_program

    try:
        tools.require(tools.P4C, tools.SWITCH, purpose="TARGET=bmv2 make run")
        compile_program(PROGRAM)
    except (tools.MissingToolError, P4cError) as e:
        print(f"topologies.demo: error: {e}", file=sys.stderr)
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    """Command line of `make run`."""
    p = argparse.ArgumentParser(prog="python -m topologies.demo", description=__doc__.split("\n")[0])
    p.add_argument("--fabric", type=Path, default=DEFAULT_FABRIC)
    p.add_argument("--phase", type=float, default=Scenario.phase_s, help="seconds per phase")
    p.add_argument("--rate", type=float, help=f"Mbit/s per flow (default {NATIVE_LOAD.rate_mbps} on "
                   f"softswitch's native engine, else {BASE_LOAD.rate_mbps})")
    p.add_argument("--size", type=int, help=f"UDP payload bytes (default {NATIVE_LOAD.size} on the "
                   f"native engine, else {BASE_LOAD.size})")
    p.add_argument("--link-scale", type=float,
                   help="link and NIC rates = the fabric's capacities x this (default "
                        f"{NATIVE_LOAD.link_scale:g} on the native engine, else {BASE_LOAD.link_scale:g})")
    p.add_argument("--ecmp", action="store_true", help="leaves in ECMP mode (the baseline)")
    p.add_argument("--no-reccl", action="store_true", help="UDP load generator only")
    p.add_argument("--prefix", default="", help="node name prefix")
    p.add_argument("--out", type=Path, default=Scenario.out_dir)
    p.add_argument("--compare", type=Path, nargs="+", metavar="SUMMARY",
                   help="print saved runs' summary.json side by side and exit (no root)")
    args = p.parse_args(argv)
    if args.compare:
        from topologies.compare import SummaryError, load_summary, render

        try:
            print(render([load_summary(path) for path in args.compare]))
        except SummaryError as e:
            print(f"topologies.demo: error: {e}", file=sys.stderr)
            return 2
        return 0
    if args.phase < 1 or (args.rate is not None and not args.rate > 0) or \
            (args.size is not None and not 20 <= args.size <= 1400) or \
            (args.link_scale is not None and not 0 < args.link_scale <= 1000):
        p.error("need --phase >= 1, --rate > 0, 20 <= --size <= 1400, 0 < --link-scale <= 1000")
    from topologies.mininet_fabric import FabricNetError, check_names

    try:
        fabric = load(args.fabric)
        pick_flows(fabric)
        check_names(fabric, args.prefix)
    except (FabricError, FabricNetError, OSError) as e:
        print(f"topologies.demo: error: {e}", file=sys.stderr)
        return 2
    targets = parse_targets(os.environ.get("TARGET", "softswitch"))
    if targets is None:
        print(f"topologies.demo: error: TARGET={os.environ.get('TARGET')}: choose softswitch, "
              "bmv2, or both comma-separated (softswitch,bmv2: run each, then compare)",
              file=sys.stderr)
        return 2
    if "bmv2" in targets and not check_bmv2():
        return 2
    from softswitch.engine.errors import SwitchError

    try:
        chosen = default_load(targets)
    except SwitchError as e:  # a $SOFTSWITCH_ENGINE that names no engine
        print(f"topologies.demo: error: {e}", file=sys.stderr)
        return 2
    rate = chosen.rate_mbps if args.rate is None else args.rate
    size = chosen.size if args.size is None else args.size
    link_scale = chosen.link_scale if args.link_scale is None else args.link_scale
    if os.geteuid() != 0:
        print("topologies.demo: error: Mininet needs root", file=sys.stderr)
        return 2

    def on_term(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    # a process started in the background by a shell without job control inherits SIGINT
    # ignored, and Python then keeps ignoring it: Ctrl-C / SIGINT must always clean up
    signal.signal(signal.SIGINT, signal.default_int_handler)
    summaries = []
    try:
        for target in targets:
            summaries.append(run(Scenario(args.fabric, args.phase, rate, size,
                                          args.prefix, args.out, not args.ecmp,
                                          reccl=not args.no_reccl, link_scale=link_scale,
                                          target=target)))
    except KeyboardInterrupt:
        print("\n[testbed] interrupted: cleaned up", file=sys.stderr)
        return 130
    if len(summaries) > 1:
        from topologies.compare import render

        print("\n" + render(summaries))
    return 0


def parse_targets(value: str) -> list[str] | None:
    """TARGET's value as a list of targets in order (each once); None if any is unknown."""
    names = [x.strip().lower() for x in value.split(",")]
    if not names or any(x not in TARGET_NAMES for x in names) or len(set(names)) != len(names):
        return None
    return names


if __name__ == "__main__":
    sys.exit(main())
