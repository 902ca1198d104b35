"""softswitch, BMv2 and a tuned BMv2 side by side: packets/s, P4Runtime writes/s, testbed failover.

Targets: ``softswitch run``; BMv2's ``simple_switch_grpc`` as installed (p4lang's
default build, logging macros compiled in); and, when given (``--tuned PATH`` or
``$BMV2_TUNED``), a ``simple_switch_grpc`` built with ``--disable-logging-macros
--disable-elogger`` and -O3, the fastest BMv2 a user can build. Each switch is
started without a program; the program is pushed over P4Runtime (softswitch:
its source; BMv2: p4c-bm2-ss's JSON) and its entries written over P4Runtime.

1. Packets per second (needs root): ``bench/programs/l3_router.p4`` between two
   network namespaces. The load generator (``--generator``: trafgen from netsniff-ng,
   which sends from an mmap TX ring, where installed; else tcpreplay, one send per
   frame) replays 64-byte UDP frames at top speed into the switch's port 1 for
   ``--seconds``; the rate is what the kernel counts arriving at the sink's
   interface behind port 2 over the last part of the run (the first second is
   warm-up); the generator's own count shows whether it offered more than the
   switch forwards (if not, the generator was the limit; if so, the figure is the
   switch's own ceiling). softswitch runs in four variants: the Python engine on
   sockets, the native engine on sockets, on TPACKET_V3 rings and on TPACKET_V2
   rings (``--port-io``, ``$SOFTSWITCH_RINGS``); the load average is printed
   before and after. ``leaf`` does the same with ``p4src/sglb.p4`` as a leaf in
   SGLB mode with feedback (bench_softswitch_native's entries, written over
   P4Runtime): frames enter the host port and leave on four uplinks, each to the
   sink namespace; softswitch only (BMv2 would need sglb.p4 through p4c).
   ``latency`` pings the sink from the generator through each variant (every
   round trip crosses the switch twice): median, p99 and worst.
2. P4Runtime writes per second (no root): 1,000 LPM entries inserted into the same
   program, one update per WriteRequest and then 250 per request, over loopback.
3. Testbed failover (needs root, Mininet): the ``make run`` scenario on ls4x2 with
   the l1-s1 link cut and restored ``--cuts`` times (bench_testbed_failover.py's
   settings), per target: local and remote outage and SyncMesh agreement.

Ratios are against softswitch (the Python engine on sockets) measured in the same run. Targets whose tools are
missing are skipped with the reason. Needs p4c-bm2-ss and simple_switch_grpc for
the BMv2 columns (docs/bmv2.md); run under the network lock (brief):
``flock /tmp/sglb-net.lock .venv/bin/python bench/bench_targets.py [--only pps,leaf,latency,writes,failover]``
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bmv2 import tools  # noqa: E402
from bmv2.process import Bmv2Options, Bmv2Process, free_ports, p4runtime_ready  # noqa: E402
from bmv2.session import Session  # noqa: E402

PROG = ROOT / "bench" / "programs" / "l3_router.p4"
SGLB = ROOT / "p4src" / "sglb.p4"
LEAF_HOST_PORT, LEAF_UPLINKS = 10, (1, 2, 3, 4)  # as bench_softswitch_native's leaf binds them
N_ENTRIES = 1000
BATCH = 250
NS_GEN, NS_SINK = "bt-gen", "bt-sink"
SW_IN, GEN_IF, SW_OUT, SINK_IF = "btsw1", "btgen1", "btsw2", "btsink1"
SWITCH_MAC, SINK_MAC, GEN_MAC = "02:00:00:00:00:fe", "02:00:00:00:02:02", "02:00:00:00:01:01"


@dataclass(frozen=True)
class Target:
    """One switch implementation to measure."""

    name: str
    kind: str
    """softswitch or bmv2 (which device config it takes)."""
    executable: Path | None = None
    """simple_switch_grpc binary (BMv2 only)."""
    engine: str = "python"
    """softswitch only: --engine."""
    port_io: str = "sockets"
    """softswitch only: --port-io (sockets: one recvfrom/send per packet in Python; rings:
    TPACKET_V3 mmap rings forwarded in C by the native engine)."""
    rings: str = ""
    """softswitch only: $SOFTSWITCH_RINGS (ring geometry; version=2: TPACKET_V2 RX frames)."""


SOFTSWITCH = Target("softswitch", "softswitch")
SOFTSWITCH_VARIANTS = [SOFTSWITCH,
                       Target("ss native", "softswitch", engine="native", port_io="sockets"),
                       Target("ss native+rings", "softswitch", engine="native", port_io="rings"),
                       Target("ss native+rings2", "softswitch", engine="native", port_io="rings",
                              rings="version=2")]
"""packets/s and latency run every variant (python engine on sockets, native engine on
sockets, native engine on TPACKET_V3 rings and on TPACKET_V2 rings); writes and failover
the first."""


def targets(tuned: str | None) -> tuple[list[Target], list[str]]:
    """The targets that can run here (softswitch: python engine), and why the others cannot."""
    out = [SOFTSWITCH]
    notes = []
    missing = tools.missing_names(tools.P4C, tools.SWITCH)
    if missing:
        notes.append(f"BMv2 columns skipped: {', '.join(missing)} not installed (docs/bmv2.md)")
        return out, notes
    out.append(Target("BMv2", "bmv2", tools.find(tools.SWITCH)))
    tuned_path = Path(tuned) if tuned else tools.find(tools.TUNED, use_path=False)
    if tuned_path is None or not tuned_path.is_file():
        notes.append("tuned BMv2 column skipped: give --tuned PATH or BMV2_TUNED "
                     "(simple_switch_grpc built --disable-logging-macros --disable-elogger -O3)")
    else:
        out.append(Target("BMv2 tuned", "bmv2", tuned_path))
    return out, notes


def pipeline(kind: str, work: Path, prog: Path = PROG):
    """(P4Info message, device config bytes) of a benchmark program for a target."""
    from finsy.proto import p4i
    from google.protobuf import text_format

    from switchtarget.pipeline import compile_pipeline

    files = compile_pipeline(prog, work / f"{kind}-{prog.stem}", target=kind)
    return (text_format.Parse(files.p4info.read_text(), p4i.P4Info()),
            files.device_config.read_bytes())


@contextlib.contextmanager
def switch(target: Target, work: Path, interfaces: tuple[tuple[int, str], ...] = (),
           prog: Path = PROG) -> Iterator[tuple[Session, object]]:
    """A running switch of ``target`` with the program pushed: a primary session, the P4Info."""
    grpc_port, thrift_port = free_ports(2)
    address = f"127.0.0.1:{grpc_port}"
    log = work / f"{target.name.replace(' ', '-')}.log"
    proc: subprocess.Popen | Bmv2Process
    if target.kind == "bmv2":
        proc = Bmv2Process(Bmv2Options(address, thrift_port, device_id=1, cpu_port=255,
                                       interfaces=interfaces, log_level="error",
                                       executable=target.executable), log).start(60)
    else:
        cmd = [sys.executable, "-m", "softswitch.runner", "--no-p4", "--device-id", "1",
               "--grpc-addr", address, "--cpu-port", "255", "--log-level", "warning",
               "--engine", target.engine, "--port-io", target.port_io]
        for port, intf in interfaces:
            cmd += ["-i", f"{port}@{intf}"]
        env = {**os.environ, "SOFTSWITCH_RINGS": target.rings}
        with open(log, "wb") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
        deadline = time.monotonic() + 60
        while not p4runtime_ready(address):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"softswitch did not start: {log.read_text()[-1500:]}")
            time.sleep(0.1)
    session = Session(address, 1)
    try:
        session.connect()
        p4info, config = pipeline(target.kind, work, prog)
        session.set_pipeline(p4info, config)
        yield session, p4info
    finally:
        session.close()
        if isinstance(proc, Bmv2Process):
            proc.stop()
        else:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def lpm_update(p4info, i: int, port: int = 2, dmac: int = 0x020000000202,
               net: tuple[int, int] | None = None):
    """INSERT of ipv4_lpm 11.x.y.z/32 (or 10.0.2.0/24 for i < 0, or `net`) -> set_nhop."""
    from finsy.proto import p4r

    table = next(t for t in p4info.tables if t.preamble.alias == "ipv4_lpm")
    action = next(a for a in p4info.actions if a.preamble.alias == "set_nhop")
    prefix, plen = net or ((0x0A000200, 24) if i < 0 else (0x0B000000 + i, 32))
    params = {"dmac": dmac.to_bytes(6, "big"), "smac": (0x0200000000FE).to_bytes(6, "big"),
              "port": port.to_bytes(2, "big")}
    return p4r.Update(type=p4r.Update.INSERT, entity=p4r.Entity(table_entry=p4r.TableEntry(
        table_id=table.preamble.id,
        match=[p4r.FieldMatch(field_id=1, lpm=p4r.FieldMatch.LPM(
            value=prefix.to_bytes(4, "big"), prefix_len=plen))],
        action=p4r.TableAction(action=p4r.Action(action_id=action.preamble.id, params=[
            p4r.Action.Param(param_id=p.id, value=params[p.name]) for p in action.params])))))


# ------------------------------------------------------------------ writes


def writes_per_second(target: Target, work: Path) -> tuple[float, float]:
    """(single-update writes/s, batched updates/s) into a fresh switch."""
    with switch(target, work) as (s, p4info):
        updates = [lpm_update(p4info, i) for i in range(2 * N_ENTRIES)]
        t = time.perf_counter()
        for u in updates[:N_ENTRIES]:
            s.write([u])
        single = N_ENTRIES / (time.perf_counter() - t)
        t = time.perf_counter()
        for k in range(N_ENTRIES, 2 * N_ENTRIES, BATCH):
            s.write(updates[k:k + BATCH])
        batched = N_ENTRIES / (time.perf_counter() - t)
    return single, batched


# ------------------------------------------------------------------ packets per second


def sh(*cmd: str, check: bool = True) -> str:
    return subprocess.run(cmd, check=check, capture_output=True, text=True).stdout


def ns_counter(ns: str | None, intf: str, name: str) -> int:
    path = f"/sys/class/net/{intf}/statistics/{name}"
    out = sh("ip", "netns", "exec", ns, "cat", path) if ns else Path(path).read_text()
    return int(out)


def sinks(outs: int) -> list[tuple[str, str]]:
    """(switch side, sink side) of the ``outs`` links toward the sink namespace."""
    return [(SW_OUT, SINK_IF)] + [(f"btsw{2 + k}", f"btsink{1 + k}") for k in range(1, outs)]


@contextlib.contextmanager
def wires(addressed: bool = False, outs: int = 1) -> Iterator[None]:
    """gen ns -- veth -- switch port 1 ; switch port 2 -- veth -- sink ns (removed after);
    `outs` > 1: more links into the sink ns (``sinks``); `addressed`: the hosts get 10.0.1.1
    and 10.0.2.1 with the switch as their router."""
    made: list[str] = []
    try:
        for ns in (NS_GEN, NS_SINK):
            sh("ip", "netns", "add", ns)
            made.append(ns)
        links = [(SW_IN, GEN_IF, NS_GEN)] + [(a, b, NS_SINK) for a, b in sinks(outs)]
        for sw_if, far_if, ns in links:
            sh("ip", "link", "add", sw_if, "type", "veth", "peer", "name", far_if)
            sh("ip", "link", "set", far_if, "netns", ns)
            for cmd in (["sysctl", "-q", f"net.ipv6.conf.{sw_if}.disable_ipv6=1"],
                        ["ip", "link", "set", sw_if, "up"]):
                sh(*cmd)
            sh("ip", "netns", "exec", ns, "sysctl", "-q", f"net.ipv6.conf.{far_if}.disable_ipv6=1")
            sh("ip", "netns", "exec", ns, "ip", "link", "set", far_if, "up")
            for intf in (sw_if,):
                sh("ethtool", "-K", intf, "tx", "off", "rx", "off", "gso", "off", "gro", "off",
                   check=False)
        sh("ip", "netns", "exec", NS_SINK, "ip", "link", "set", SINK_IF, "address", SINK_MAC)
        sh("ip", "netns", "exec", NS_GEN, "ip", "link", "set", GEN_IF, "address", GEN_MAC)
        if addressed:
            for ns, intf, mine, other in ((NS_GEN, GEN_IF, "10.0.1", "10.0.2"),
                                          (NS_SINK, SINK_IF, "10.0.2", "10.0.1")):
                ex = ("ip", "netns", "exec", ns)
                sh(*ex, "ip", "addr", "add", f"{mine}.1/24", "dev", intf)
                sh(*ex, "ip", "neigh", "add", f"{mine}.254", "lladdr", SWITCH_MAC, "dev", intf)
                sh(*ex, "ip", "route", "add", f"{other}.0/24", "via", f"{mine}.254")
        yield
    finally:
        for intf in [SW_IN] + [a for a, _ in sinks(outs)]:
            sh("ip", "link", "del", intf, check=False)
        for ns in made:
            sh("ip", "netns", "del", ns, check=False)


def frames_pcap(path: Path, n: int = 256) -> None:
    """``n`` 64-byte-payload UDP frames toward 10.0.2.0/24 (different flows), as a pcap and
    as trafgen's configuration beside it (``.cfg``: trafgen sends a pcap only once)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap

    frames = [Ether(src="02:00:00:00:01:01", dst=SWITCH_MAC)
              / IP(src="10.0.1.1", dst=f"10.0.2.{1 + i % 200}", ttl=64)
              / UDP(sport=1024 + i, dport=9000) / (b"p" * 64) for i in range(n)]
    wrpcap(str(path), frames)
    path.with_suffix(".cfg").write_text("".join(
        "{ " + ", ".join(f"0x{b:02x}" for b in bytes(f)) + " }\n" for f in frames))


GENERATORS = ("trafgen", "tcpreplay")
"""trafgen (netsniff-ng: a TX_RING of the frames, sent in batches) offers more packets per
CPU-second than tcpreplay (one send per frame), which leaves more of the two cores to the switch."""


def generator_command(generator: str, pcap: Path) -> list[str]:
    """The load generator replaying ``pcap`` into the switch's port 1 at top speed, forever."""
    run = ["ip", "netns", "exec", NS_GEN]
    if generator == "trafgen":  # one process (-P 1), the host's socket memory left alone
        return run + ["trafgen", "--no-sock-mem", "-P", "1", "-o", GEN_IF,
                      "-i", str(pcap.with_suffix(".cfg"))]
    return run + ["tcpreplay", "-q", "--topspeed", "--loop=0", "-i", GEN_IF, str(pcap)]


def stop_group(proc: subprocess.Popen) -> None:
    """SIGINT to the process group ``proc`` leads, SIGKILL if it is still there 10 s later."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def configure_leaf(session: Session, p4info) -> None:
    """sglb.p4 as leaf 0 in SGLB mode with feedback, host on port 10, four uplinks: the
    entries of bench_softswitch_native's leaf, written over P4Runtime."""
    from bench_softswitch_native import setup_sglb_leaf

    from bmv2.tables import P4RuntimeTables

    setup_sglb_leaf(P4RuntimeTables(p4info, session), [(0x0A000200, 24)])


def packets_per_second(target: Target, work: Path, seconds: float, generator: str = "tcpreplay",
                       leaf: bool = False) -> dict[str, float]:
    """Forwarded and offered packets/s of one target (root only): the L3 router from port 1 to
    port 2, or (`leaf`) sglb.p4's leaf from its host port to four uplinks."""
    pcap = work / "frames.pcap"
    if not pcap.exists():
        frames_pcap(pcap)
    outs = len(LEAF_UPLINKS) if leaf else 1
    if leaf:
        uplinks = tuple(zip(LEAF_UPLINKS, (a for a, _ in sinks(outs)), strict=True))
        ports = ((LEAF_HOST_PORT, SW_IN),) + uplinks
    else:
        ports = ((1, SW_IN), (2, SW_OUT))

    def delivered() -> int:
        return sum(ns_counter(NS_SINK, b, "rx_packets") for _, b in sinks(outs))

    with wires(outs=outs), switch(target, work, ports, SGLB if leaf else PROG) as (s, p4info):
        if leaf:
            configure_leaf(s, p4info)
        else:
            s.write([lpm_update(p4info, -1, dmac=int(SINK_MAC.replace(":", ""), 16))])
        # its own process group: trafgen's worker is a child that ends only on SIGINT
        gen = subprocess.Popen(generator_command(generator, pcap), start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(1.0)  # warm-up
            c0 = (ns_counter(NS_GEN, GEN_IF, "tx_packets"), delivered())
            t0 = time.monotonic()
            time.sleep(seconds)
            c1 = (ns_counter(NS_GEN, GEN_IF, "tx_packets"), delivered())
            dt = time.monotonic() - t0
        finally:
            stop_group(gen)
    check_port_io(target, work)
    return {"offered": (c1[0] - c0[0]) / dt, "forwarded": (c1[1] - c0[1]) / dt}


def round_trips(target: Target, work: Path, count: int) -> list[float]:
    """ping RTTs (ms) from the generator's namespace to the sink's through the switch: each
    crosses the switch twice (root only)."""
    import re

    mac = lambda m: int(m.replace(":", ""), 16)  # noqa: E731
    with wires(addressed=True), switch(target, work, ((1, SW_IN), (2, SW_OUT))) as (s, p4info):
        s.write([lpm_update(p4info, -1, dmac=mac(SINK_MAC)),
                 lpm_update(p4info, 0, port=1, dmac=mac(GEN_MAC), net=(0x0A000100, 24))])
        out = sh("ip", "netns", "exec", NS_GEN, "ping", "-q", "-c", "3", "-W", "2", "10.0.2.1",
                 check=False)  # warm-up (the first packet of a flow costs more)
        out = sh("ip", "netns", "exec", NS_GEN, "ping", "-n", "-c", str(count), "-i", "0.005",
                 "-W", "1", "10.0.2.1", check=False)
    check_port_io(target, work)
    return [float(m) for m in re.findall(r"time=([0-9.]+) ms", out)]


def check_port_io(target: Target, work: Path) -> None:
    """A softswitch asked for rings that fell back to sockets would measure the wrong thing."""
    log = work / f"{target.name.replace(' ', '-')}.log"
    if target.port_io == "rings" and log.exists() and "port_io=sockets" in log.read_text():
        raise RuntimeError(f"{target.name}: the rings fell back to sockets: {log.read_text()[-600:]}")


# ------------------------------------------------------------------ failover


def failover(target: Target, cuts: int, phase: float, rate_mbps: float = 1.0,
             size: int = 172) -> dict[str, list[float]]:
    """Local/remote outage and agreement per cut in the Mininet testbed (root only)."""
    from topologies.demo import Scenario, run

    saved = os.environ.get(tools.SWITCH.env)
    if target.executable is not None:
        os.environ[tools.SWITCH.env] = str(target.executable)
    try:
        with tempfile.TemporaryDirectory(prefix="bt-failover-") as out:
            s = run(Scenario(phase_s=phase, rate_mbps=rate_mbps, size=size, prefix="bt",
                             out_dir=Path(out), quiet=True, fabric_cuts=cuts, nic_cut=False,
                             reccl=False, target=target.kind))
    finally:
        if saved is None:
            os.environ.pop(tools.SWITCH.env, None)
        else:
            os.environ[tools.SWITCH.env] = saved
    return {"local": [f["local_outage_s"] for f in s["faults"]],
            "remote": [f["remote_outage_s"] for f in s["faults"]],
            "agree": [f["syncmesh_convergence_s"] for f in s["faults"]],
            "lost": [f["lost"] for f in s["faults"]],
            "baseline_lost": [next(iter(s["phases"].values()))["lost"]]}


def ms(values: Sequence[float | None]) -> str:
    v = [x * 1000 for x in values if x is not None]
    return f"{statistics.median(v):6.1f} / {max(v):6.1f}" if v else "n/a"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", default="pps,leaf,latency,writes,failover",
                   help="comma-separated parts: pps, leaf, latency, writes, failover")
    p.add_argument("--generator", choices=("auto",) + GENERATORS, default="auto",
                   help="pps and leaf load generator (auto: trafgen where installed, else tcpreplay)")
    p.add_argument("--tuned", help="the tuned simple_switch_grpc (default: $BMV2_TUNED)")
    p.add_argument("--seconds", type=float, default=5.0, help="measurement window of pps")
    p.add_argument("--rounds", type=int, default=3, help="repetitions of pps and writes")
    p.add_argument("--pings", type=int, default=400, help="latency: pings per variant")
    p.add_argument("--cuts", type=int, default=5)
    p.add_argument("--phase", type=float, default=2.0)
    p.add_argument("--rate", type=float, default=1.0, help="failover: Mbit/s per flow")
    p.add_argument("--size", type=int, default=172,
                   help="failover: UDP payload bytes (172: 200-byte datagrams)")
    args = p.parse_args()
    parts = set(args.only.split(","))
    tgts, notes = targets(args.tuned)
    root = os.geteuid() == 0
    names = [t.name for t in tgts]
    print(f"targets: {', '.join(names)}")
    for n in notes:
        print(f"  {n}")
    with tempfile.TemporaryDirectory(prefix="bench-targets-") as tmp:
        work = Path(tmp)
        if "writes" in parts:
            got: dict[str, list[tuple[float, float]]] = {t.name: [] for t in tgts}
            for _ in range(args.rounds):  # alternate targets: drifts in machine load hit all
                for t in tgts:
                    got[t.name].append(writes_per_second(t, work))
            print(f"\nP4Runtime writes/s ({N_ENTRIES} LPM inserts, median of {args.rounds}; "
                  "ratio to softswitch)")
            base1 = statistics.median(x[0] for x in got["softswitch"])
            base2 = statistics.median(x[1] for x in got["softswitch"])
            for t in tgts:
                one = statistics.median(x[0] for x in got[t.name])
                many = statistics.median(x[1] for x in got[t.name])
                print(f"  {t.name:<12} 1/request {one:8.0f} ({one / base1:4.2f}x)   "
                      f"{BATCH}/request {many:8.0f} ({many / base2:4.2f}x)")
        generator = args.generator
        if generator == "auto":
            generator = next((g for g in GENERATORS if shutil.which(g)), "tcpreplay")
        for part, leaf in (("pps", False), ("leaf", True)):
            if part not in parts:
                continue
            if not root:
                print(f"\n{part}: skipped (needs root: network namespaces)")
                continue
            if shutil.which(generator) is None:
                print(f"\n{part}: skipped ({generator} not installed: make deps)")
                continue
            # the leaf: BMv2's columns need sglb.p4 through p4c, measured by `pps` on the router
            pps_tgts = SOFTSWITCH_VARIANTS + ([] if leaf else tgts[1:])
            rates: dict[str, list[dict[str, float]]] = {t.name: [] for t in pps_tgts}
            load0 = os.getloadavg()
            for _ in range(args.rounds):
                for t in pps_tgts:
                    rates[t.name].append(packets_per_second(t, work, args.seconds, generator, leaf))
            load1 = os.getloadavg()
            base = statistics.median(r["forwarded"] for r in rates["softswitch"]) or float("nan")
            what = (f"{SGLB.name} as a leaf in SGLB mode, host port to {len(LEAF_UPLINKS)} uplinks"
                    if leaf else PROG.name)
            print(f"\npackets/s forwarded, {what}, 64-byte UDP payloads, {generator} "
                  f"at top speed, kernel counters over {args.seconds:g} s (median of "
                  f"{args.rounds}; ratio to softswitch, python engine on sockets)")
            print(f"  load average (1, 5, 15 min) before {load0[0]:.2f} {load0[1]:.2f} "
                  f"{load0[2]:.2f}, after {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f} "
                  f"on {os.cpu_count()} CPUs")
            for t in pps_tgts:
                fwd = statistics.median(r["forwarded"] for r in rates[t.name])
                off = statistics.median(r["offered"] for r in rates[t.name])
                print(f"  {t.name:<16} {fwd:9.0f} pkt/s ({fwd / base:5.2f}x)   "
                      f"generator offered {off:9.0f} pkt/s")
        if "latency" in parts:
            if not root:
                print("\nlatency: skipped (needs root: network namespaces)")
            else:
                load0 = os.getloadavg()
                rtts = {t.name: round_trips(t, work, args.pings) for t in SOFTSWITCH_VARIANTS}
                load1 = os.getloadavg()
                print(f"\nping round trips through the switch ({PROG.name}; each crosses it twice; "
                      f"{args.pings} pings 5 ms apart, one at a time): median / p99 / max ms")
                print(f"  load average (1 min) before {load0[0]:.2f}, after {load1[0]:.2f}")
                for name, v in rtts.items():
                    if len(v) < 2:
                        print(f"  {name:<16} no replies")
                        continue
                    v = sorted(v)
                    p99 = v[min(len(v) - 1, round(0.99 * (len(v) - 1)))]
                    print(f"  {name:<16} {statistics.median(v):6.3f} / {p99:6.3f} / {v[-1]:6.3f}"
                          f"   ({len(v)} of {args.pings} replied)")
        if "failover" in parts:
            if not root:
                print("\ntestbed failover: skipped (needs root: Mininet)")
            else:
                res = {t.name: failover(t, args.cuts, args.phase, args.rate, args.size)
                       for t in tgts}
                print(f"\ntestbed failover, ls4x2, l1-s1 cut {args.cuts} times under "
                      f"{args.rate:g} Mbit/s flows of {args.size + 28}-byte datagrams "
                      f"(~{args.rate * 1e6 / 8 / (args.size + 28):.0f} packets/s each): "
                      "median / worst ms")
                print(f"  {'':<12} {'local':>15} {'remote':>15} {'agreement':>15}  "
                      "lost before the first cut; per cut")
                for t in tgts:
                    r = res[t.name]
                    print(f"  {t.name:<12} {ms(r['local']):>15} {ms(r['remote']):>15} "
                          f"{ms(r['agree']):>15}  {r['baseline_lost'][0]}; {r['lost']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
