"""softswitch as a switch: P4Runtime write rate, forwarding rate and per-packet latency.

1. P4Runtime table writes per second, one update per WriteRequest and 250 per
   request, from one Python client (generated stubs) to a switch process on
   loopback: `softswitch run --no-p4` and, when `simple_switch_grpc` (BMv2) and
   `p4c-bm2-ss` are on PATH, BMv2 with the same program compiled by p4c, measured in
   the same run in alternating rounds; the ratio softswitch / BMv2 is printed, and
   each switch process's CPU time per Write (one entry) and per entry (250 per
   Write), from /proc. `--floor` adds a Python P4Runtime server that does nothing
   (bench/p4runtime_floor_server.py): the most a Python server can reach.
2. Packets per second forwarded between two network namespaces through one
   `softswitch run` process (UDP, 64-byte payloads, sender paced by a window).
3. Per-packet latency: UDP echo round trips through the switch (two traversals),
   against the same exchange over a direct veth pair measured in the same run;
   the switch's share is (median RTT through it - median direct RTT) / 2.
4. Link-state latency: from a netlink request that changes a veth peer's state to
   the switch port's link callback.

Parts 2-4 need root (network namespaces, veths); without it they are skipped.
Run: `.venv/bin/python bench/bench_p4runtime.py [--writes-only] [--baseline CHECKOUT] [--floor]
[--rounds N]`
(`--baseline`: a checkout of another version, e.g. `git worktree add /tmp/base REV`,
measured in the same alternating rounds).
"""

from __future__ import annotations

import gc
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import grpc
from finsy.proto import p4r, p4r_grpc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from softswitch.p4info import p4info_from_program  # noqa: E402
from softswitch.p4runtime.pipeline_loader import (  # noqa: E402
    device_config_from_file,
    load_program,
)
from testsupport import free_port, stop_process  # noqa: E402

PROG = ROOT / "tests" / "softswitch" / "test_p4runtime_prog.p4"
N_ENTRIES = 1000  # the table holds 1024
BATCH = 250
ALWAYS_REPORTED_BATCH = 125  # at most batch.ALWAYS_REPORTED updates: no undo log
BATCH_REPEATS = 8  # a round times 8 x 1000 batched inserts (one pass takes only milliseconds)
ROUNDS = 7


def _u128(v: int) -> p4r.Uint128:
    return p4r.Uint128(high=v >> 64, low=v & ((1 << 64) - 1))


def _lpm_update(p4info, i: int) -> p4r.Update:
    table = next(t for t in p4info.tables if t.preamble.alias == "ipv4_lpm")
    action = next(a for a in p4info.actions if a.preamble.alias == "set_nhop").preamble.id
    return p4r.Update(type=p4r.Update.INSERT, entity=p4r.Entity(table_entry=p4r.TableEntry(
        table_id=table.preamble.id,
        match=[p4r.FieldMatch(field_id=1, lpm=p4r.FieldMatch.LPM(
            value=(0x0B000000 + i).to_bytes(4, "big"), prefix_len=32))],
        action=p4r.TableAction(action=p4r.Action(action_id=action, params=[
            p4r.Action.Param(param_id=1, value=b"\x02\x00\x00\x00\x00\x01"),
            p4r.Action.Param(param_id=2, value=b"\x01")])))))


def _wait_serving(address: str, proc: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    channel = grpc.insecure_channel(address)
    stub = p4r_grpc.P4RuntimeStub(channel)
    end = time.monotonic() + timeout
    try:
        while time.monotonic() < end:
            if proc.poll() is not None:
                raise RuntimeError(f"switch exited: {log.read_text()[-2000:]}")
            try:
                stub.Capabilities(p4r.CapabilitiesRequest(), timeout=1)
                return
            except grpc.RpcError:
                time.sleep(0.1)
        raise RuntimeError(f"switch does not answer on {address}")
    finally:
        channel.close()


class Target:
    """A switch process serving P4Runtime, and what to program it with."""

    def __init__(self, name: str, cmd: list[str], address: str, p4info, device_config: bytes,
                 tmp: Path, cwd: Path = ROOT) -> None:
        self.name, self.address = name, address
        self.p4info, self.device_config = p4info, device_config
        self.log = tmp / f"{name}.log"
        self.proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL,
                                     stderr=open(self.log, "w"))
        _wait_serving(address, self.proc, self.log)

    def cpu_seconds(self) -> float:
        """CPU time (user + system) the switch process has used so far."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        stop_process(self.proc, timeout=15)


def softswitch_target(tmp: Path, checkout: Path = ROOT, name: str = "softswitch") -> Target:
    """`softswitch run` of this checkout, or of another one (to compare versions)."""
    blob = device_config_from_file(PROG)
    address = f"127.0.0.1:{free_port()}"
    cmd = [sys.executable, "-m", "softswitch.runner", "--no-p4", "--device-id", "1",
           "--grpc-addr", address, "--log-level", "warning"]
    return Target(name, cmd, address, p4info_from_program(load_program(blob)), blob, tmp, cwd=checkout)


def bmv2_target(tmp: Path) -> Target | str:
    """BMv2 simple_switch_grpc running the program compiled by p4c, or why it cannot run."""
    from google.protobuf import text_format

    missing = [t for t in ("simple_switch_grpc", "p4c-bm2-ss") if shutil.which(t) is None]
    if missing:
        return f"{' and '.join(missing)} not on PATH"
    out = subprocess.run(["p4c-bm2-ss", "--p4runtime-files", str(tmp / "prog.p4info.txtpb"),
                          "-o", str(tmp / "prog.json"), str(PROG)], capture_output=True, text=True)
    if out.returncode != 0:
        return f"p4c-bm2-ss failed: {out.stderr.strip()[-500:]}"
    from finsy.proto import p4i

    p4info = text_format.Parse((tmp / "prog.p4info.txtpb").read_text(), p4i.P4Info())
    port = free_port()
    cmd = ["simple_switch_grpc", "--no-p4", "--device-id", "1", "--thrift-port", str(free_port()),
           "--", "--grpc-server-addr", f"127.0.0.1:{port}", "--cpu-port", "255"]
    return Target("bmv2", cmd, f"127.0.0.1:{port}", p4info, (tmp / "prog.json").read_bytes(), tmp)


def floor_target(tmp: Path, like: Target) -> Target:
    """A Python P4Runtime server on the same gRPC server as softswitch that does nothing."""
    address = f"127.0.0.1:{free_port()}"
    cmd = [sys.executable, str(ROOT / "bench" / "p4runtime_floor_server.py"), address]
    return Target("floor", cmd, address, like.p4info, like.device_config, tmp)


class WriteClient:
    """The one client both targets are measured with: primary, pipeline set."""

    def __init__(self, target: Target) -> None:
        import queue

        self.target = target
        self.cpu = [0.0, 0.0]  # the switch's CPU seconds in timed one-entry and batched Writes
        self.channel = grpc.insecure_channel(target.address)
        self.stub = p4r_grpc.P4RuntimeStub(self.channel)
        self._out: queue.Queue = queue.Queue()
        self.stream = self.stub.StreamChannel(iter(self._out.get, None))
        self._out.put(p4r.StreamMessageRequest(arbitration=p4r.MasterArbitrationUpdate(
            device_id=1, election_id=_u128(1))))
        next(self.stream)
        A = p4r.SetForwardingPipelineConfigRequest
        self.stub.SetForwardingPipelineConfig(A(
            device_id=1, election_id=_u128(1), action=A.VERIFY_AND_COMMIT,
            config=p4r.ForwardingPipelineConfig(p4info=target.p4info,
                                                p4_device_config=target.device_config)))
        self.inserts = [_lpm_update(target.p4info, i) for i in range(N_ENTRIES)]
        self.deletes = [p4r.Update(type=p4r.Update.DELETE, entity=u.entity) for u in self.inserts]

    def write(self, updates) -> None:
        self.stub.Write(p4r.WriteRequest(device_id=1, election_id=_u128(1), updates=updates))

    def round(self) -> tuple[float, float, float]:
        """(entries/s inserted one per Write, BATCH per Write, deleted N_ENTRIES per Write);
        the table ends empty. The deletes after the one-per-Write pass are not timed."""
        cpu = self.target.cpu_seconds
        c0, t0 = cpu(), time.perf_counter()
        for u in self.inserts:
            self.write([u])
        single = N_ENTRIES / (time.perf_counter() - t0)
        self.cpu[0] += cpu() - c0
        self.write(self.deletes)
        batches = [self.inserts[i:i + BATCH] for i in range(0, N_ENTRIES, BATCH)]
        elapsed = deleting = 0.0
        for _ in range(BATCH_REPEATS):
            c0, t0 = cpu(), time.perf_counter()
            for batch in batches:
                self.write(batch)
            elapsed += time.perf_counter() - t0
            self.cpu[1] += cpu() - c0
            t0 = time.perf_counter()
            self.write(self.deletes)  # above 151 updates: with the undo log
            deleting += time.perf_counter() - t0
        n = BATCH_REPEATS * N_ENTRIES
        return single, n / elapsed, n / deleting

    def close(self) -> None:
        self._out.put(None)
        self.stream.cancel()
        self.channel.close()


def _paired(mine: Sequence[tuple[float, ...]], theirs: Sequence[tuple[float, ...]], i: int) -> str:
    """Median and range of the per-round ratios (rounds alternate targets, so a round's
    ratio compares two measurements taken under nearly the same machine load)."""
    ratios = sorted(a[i] / b[i] for a, b in zip(mine, theirs, strict=True))
    return f"{statistics.median(ratios):.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f})"


def bench_writes(baseline: Path | None = None, rounds: int = ROUNDS, floor: bool = False) -> None:
    """Writes/s of softswitch, BMv2 when installed, and if asked another checkout's softswitch
    and a Python P4Runtime server that does nothing."""
    tmp = Path(tempfile.mkdtemp(prefix="sspw-"))
    targets: list[Target] = []
    clients: dict[str, WriteClient] = {}
    try:
        targets.append(softswitch_target(tmp))
        if baseline is not None:
            targets.append(softswitch_target(tmp, baseline, "baseline"))
        if floor:
            targets.append(floor_target(tmp, targets[0]))
        try:
            bmv2 = bmv2_target(tmp)
        except (RuntimeError, OSError) as exc:
            bmv2 = f"it did not start: {exc}"
        if isinstance(bmv2, str):
            note = f"BMv2 column skipped: {bmv2}"
        else:
            targets.append(bmv2)
            note = "BMv2: simple_switch_grpc, program compiled by p4c-bm2-ss"
        for t in list(targets):
            try:
                clients[t.name] = WriteClient(t)
                clients[t.name].round()  # warm-up
                clients[t.name].cpu = [0.0, 0.0]
            except grpc.RpcError as exc:
                if t.name != "bmv2":
                    raise
                note = f"BMv2 column skipped: {exc.code().name} {exc.details()}"
                clients.pop(t.name, None)
                targets.remove(t)
                t.stop()
        rates: dict[str, list[tuple[float, float, float]]] = {t.name: [] for t in targets}
        for _ in range(rounds):  # alternate, so that both see the same machine load
            for t in targets:
                rates[t.name].append(clients[t.name].round())
    finally:
        for c in clients.values():
            c.close()
        for t in targets:
            t.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    modes = range(3)
    med = {name: [statistics.median(r[i] for r in rs) for i in modes]
           for name, rs in rates.items()}
    print(f"P4Runtime table writes per second (ipv4_lpm: {N_ENTRIES} inserts one per Write, "
          f"{BATCH_REPEATS} x {N_ENTRIES} inserts {BATCH} per Write and {BATCH_REPEATS} x "
          f"{N_ENTRIES} deletes in one Write per round; medians of {rounds} rounds; "
          "one Python client, switch in its own process)")
    print(f"{'':24s}{'softswitch':>12s}{'BMv2':>12s}  {'ratio per round: median (range)':s}")
    ss = med["softswitch"]
    bm = med.get("bmv2")
    labels = ("one entry per Write", f"{BATCH} entries per Write", f"{N_ENTRIES} deletes per Write")
    for i, label in enumerate(labels):
        if bm:
            print(f"{label:24s}{ss[i]:>12,.0f}{bm[i]:>12,.0f}  "
                  f"{_paired(rates['softswitch'], rates['bmv2'], i)}")
        else:
            print(f"{label:24s}{ss[i]:>12,.0f}{'-':>12s}  -")
    print(note)
    if "baseline" in med:
        print(f"baseline ({baseline}): " + ", ".join(f"{v:,.0f}" for v in med["baseline"])
              + " writes/s; this checkout / baseline per round: "
              + ", ".join(_paired(rates["softswitch"], rates["baseline"], i) for i in modes))
    if "floor" in med:
        vs = ("; floor / BMv2 per round: "
              + ", ".join(_paired(rates["floor"], rates["bmv2"], i) for i in modes)) if bm else ""
        print("floor (a Python P4Runtime server that does nothing): "
              + ", ".join(f"{v:,.0f}" for v in med["floor"]) + f" writes/s{vs}")
    print("switch process CPU (all rounds; clock ticks of 10 ms): " + "; ".join(
        f"{name} {c.cpu[0] / (rounds * N_ENTRIES) * 1e6:.0f} us per one-entry Write, "
        f"{c.cpu[1] / (rounds * BATCH_REPEATS * N_ENTRIES) * 1e6:.1f} us per entry at {BATCH}"
        for name, c in clients.items()))


def bench_in_process(passes: int = 15) -> None:
    """The Write path without gRPC: a Device applying the benchmark's updates (best pass)."""
    from softswitch.p4runtime.device import Device

    blob = device_config_from_file(PROG)
    program = load_program(blob)
    p4info = p4info_from_program(program)
    device = Device(device_id=1, load_program=lambda _config: program)
    device.set_pipeline(p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
                        p4r.ForwardingPipelineConfig(p4info=p4info, p4_device_config=blob))
    gc.collect()
    gc.freeze()  # as `softswitch run` does after a pipeline change
    U = p4r.Update
    inserts = [_lpm_update(p4info, i) for i in range(N_ENTRIES)]
    deletes = [U(type=U.DELETE, entity=u.entity) for u in inserts]
    modifies = [U(type=U.MODIFY, entity=u.entity) for u in inserts]
    small = ALWAYS_REPORTED_BATCH

    def fill() -> None:
        for i in range(0, N_ENTRIES, BATCH):
            device.write(inserts[i:i + BATCH])

    def empty() -> None:
        device.write(deletes)

    cases = [  # (what, setup, timed batches)
        ("insert, one per Write", empty, [[u] for u in inserts]),
        (f"insert, {BATCH} per Write", empty,
         [inserts[i:i + BATCH] for i in range(0, N_ENTRIES, BATCH)]),
        (f"delete, {small} per Write", fill,
         [deletes[i:i + small] for i in range(0, N_ENTRIES, small)]),
        (f"delete, {N_ENTRIES} per Write (undo log)", fill, [deletes]),
        (f"modify, {N_ENTRIES} per Write (undo log)", fill, [modifies]),
    ]
    print("in process (a Device without gRPC; best of "
          f"{passes} passes of {N_ENTRIES} updates): " + "; ".join(
              f"{what} {_best_pass(device, setup, batches, passes):.1f} us"
              for what, setup, batches in cases))
    empty()
    gc.unfreeze()


def _best_pass(device, setup, batches, passes: int) -> float:
    best = float("inf")
    for _ in range(passes):
        setup()
        t0 = time.perf_counter()
        for batch in batches:
            outcome = device.write(batch)
            assert outcome.aborted is None and not outcome.failures, outcome.failures[:1]
        best = min(best, time.perf_counter() - t0)
    return best / N_ENTRIES * 1e6


# ---- namespaces -------------------------------------------------------------------------------

NS = {"h1": ("sspb-h1", "sspb-h1e", "sspb-s1", 1, "10.78.0.1", "02:00:00:78:00:01"),
      "h2": ("sspb-h2", "sspb-h2e", "sspb-s2", 2, "10.78.0.2", "02:00:00:78:00:02")}
DIRECT = ("sspb-d1", "sspb-d2", "10.79.0.1", "10.79.0.2")


def sh(*args: str, check: bool = True) -> None:
    subprocess.run(args, check=check, capture_output=True)


def cleanup() -> None:
    for ns, _, sw_if, *_ in NS.values():
        sh("ip", "netns", "del", ns, check=False)
        sh("ip", "link", "del", sw_if, check=False)
    for ns in DIRECT[:2]:
        sh("ip", "netns", "del", ns, check=False)


def setup() -> None:
    for ns, h_if, sw_if, _, ip, mac in NS.values():
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", sw_if, "type", "veth", "peer", "name", h_if)
        sh("ip", "link", "set", h_if, "netns", ns)
        sh("sysctl", "-qw", f"net.ipv6.conf.{sw_if}.disable_ipv6=1", check=False)
        sh("ip", "link", "set", sw_if, "up")
        for cmd in (["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"],
                    ["ip", "link", "set", h_if, "address", mac],
                    ["ip", "addr", "add", f"{ip}/24", "dev", h_if],
                    ["ip", "link", "set", h_if, "up"], ["ethtool", "-K", h_if, "tx", "off"]):
            sh("ip", "netns", "exec", ns, *cmd, check=False)
    for name, (ns, h_if, *_r) in NS.items():
        for other, (_, _, _, _, ip, mac) in NS.items():
            if other != name:
                sh("ip", "netns", "exec", ns, "ip", "neigh", "replace", ip, "lladdr", mac, "dev", h_if)
    a, b, ip_a, ip_b = DIRECT
    sh("ip", "netns", "add", a)
    sh("ip", "netns", "add", b)
    sh("ip", "link", "add", "sspb-da", "netns", a, "type", "veth", "peer", "name", "sspb-db", "netns", b)
    for ns, dev, ip in ((a, "sspb-da", ip_a), (b, "sspb-db", ip_b)):
        sh("ip", "netns", "exec", ns, "ip", "addr", "add", f"{ip}/24", "dev", dev)
        sh("ip", "netns", "exec", ns, "ip", "link", "set", dev, "up")


ECHO = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 9000))
print("ready", flush=True)
while True:
    data, addr = s.recvfrom(2048)
    if data == b"stop":
        break
    s.sendto(data, addr)
"""

PINGER = """
import socket, sys, time, statistics
dst, n = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
rtts = []
for i in range(n):
    t = time.perf_counter_ns()
    s.sendto(i.to_bytes(4, "big") + bytes(60), (dst, 9000))
    while True:
        data = s.recv(2048)
        if data[:4] == i.to_bytes(4, "big"):
            break
    rtts.append(time.perf_counter_ns() - t)
s.sendto(b"stop", (dst, 9000))
print(" ".join(map(str, rtts)))
"""

BLASTER = """
import socket, sys, time
dst, seconds, window = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.5)
payload = bytes(64)
sent = got = 0
end = time.monotonic() + seconds
inflight = 0
while time.monotonic() < end:
    while inflight < window:
        s.sendto(payload, (dst, 9000)); sent += 1; inflight += 1
    try:
        s.recv(2048); got += 1; inflight -= 1
    except socket.timeout:
        inflight = 0
print(sent, got)
"""


def in_ns(ns: str, code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", code, *args],
                            stdout=subprocess.PIPE, text=True)


def rtts(ns_src: str, ns_dst: str, dst_ip: str, n: int) -> list[int]:
    echo = in_ns(ns_dst, ECHO, dst_ip)
    assert echo.stdout is not None and echo.stdout.readline().strip() == "ready"
    out = in_ns(ns_src, PINGER, dst_ip, str(n)).communicate(timeout=120)[0]
    echo.wait(10)
    return [int(x) for x in out.split()]


def bench_namespaces() -> None:
    import asyncio

    import finsy as fy

    from softswitch.p4info import p4info_text

    cleanup()
    tmp = Path(tempfile.mkdtemp(prefix="sspb-"))
    proc = None
    try:
        setup()
        blob = device_config_from_file(PROG)
        (tmp / "p.txtpb").write_text(p4info_text(p4info_from_program(load_program(blob))))
        (tmp / "p.cfg").write_bytes(blob)
        cmd = [sys.executable, "-m", "softswitch.runner", str(PROG), "--grpc-addr", "127.0.0.1:0",
               "--device-id", "1", "--ready-file", str(tmp / "ready"), "--log-level", "warning"]
        for _, _, sw_if, port, *_ in NS.values():
            cmd += ["-i", f"{port}@{sw_if}"]
        proc = subprocess.Popen(cmd, cwd=ROOT, stderr=open(tmp / "log", "w"))
        while not (tmp / "ready").exists():
            if proc.poll() is not None:
                raise RuntimeError((tmp / "log").read_text())
            time.sleep(0.05)
        address = (tmp / "ready").read_text().strip()

        async def program():
            opts = fy.SwitchOptions(p4info=tmp / "p.txtpb", p4blob=tmp / "p.cfg", device_id=1)
            async with fy.Switch("sspb", address, opts) as sw:
                await sw.insert([fy.P4TableEntry("ipv4_lpm", match=fy.Match({"hdr.ipv4.dst": f"{ip}/32"}),
                                                 action=fy.Action("set_nhop", dmac=mac, port=port))
                                 for _, _, _, port, ip, mac in NS.values()])

        asyncio.run(program())
        h1, h2 = NS["h1"], NS["h2"]
        through = rtts(h1[0], h2[0], h2[4], 1000)
        direct = rtts(DIRECT[0], DIRECT[1], DIRECT[3], 1000)
        med_s, med_d = statistics.median(through), statistics.median(direct)
        p99_s = statistics.quantiles(through, n=100)[98]
        p99_d = statistics.quantiles(direct, n=100)[98]
        print(f"udp_rtt_through_switch_us median {med_s / 1e3:.1f} p99 {p99_s / 1e3:.1f}  (2 traversals)")
        print(f"udp_rtt_direct_veth_us median {med_d / 1e3:.1f} p99 {p99_d / 1e3:.1f}  (baseline)")
        print(f"switch_latency_per_packet_us median {(med_s - med_d) / 2e3:.1f} "
              f"p99 {(p99_s - p99_d) / 2e3:.1f}  ((through - direct) / 2)")

        echo = in_ns(h2[0], ECHO, h2[4])
        assert echo.stdout is not None and echo.stdout.readline().strip() == "ready"
        seconds = 5.0
        sent, got = map(int, in_ns(h1[0], BLASTER, h2[4], str(seconds), "32").communicate(timeout=60)[0].split())
        subprocess.run(["ip", "netns", "exec", h1[0], sys.executable, "-c",
                        "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)"
                        f".sendto(b'stop', ('{h2[4]}', 9000))"], check=False)
        echo.wait(10)
        # every echoed datagram crossed the switch twice
        print(f"forwarded_packets_per_s {2 * got / seconds:.0f}  (UDP 64 B payload, window 32, "
              f"{sent} sent, {got} echoed in {seconds:.0f} s)")
    finally:
        if proc is not None:
            stop_process(proc, timeout=15)
        cleanup()


def bench_link_events(flaps: int = 40) -> None:
    """Time from a peer's carrier change (netlink request) to the switch port's link callback."""
    import threading

    from pyroute2 import IPRoute

    from softswitch.ports import PortSet

    sh("ip", "link", "del", "sspb-l0", check=False)
    sh("ip", "link", "add", "sspb-l0", "type", "veth", "peer", "name", "sspb-l1")
    seen = threading.Event()
    stamps: list[int] = []

    def on_port(port: int, up: bool) -> None:
        stamps.append(time.perf_counter_ns())
        seen.set()

    ports = PortSet({1: "sspb-l0"}, lambda p, d: None, on_port)
    try:
        sh("ip", "link", "set", "sspb-l0", "up")
        sh("ip", "link", "set", "sspb-l1", "up")
        time.sleep(0.2)
        ports.open()
        ports.start()
        delays = []
        with IPRoute() as ipr:
            peer = ipr.link_lookup(ifname="sspb-l1")[0]
            for i in range(flaps):
                seen.clear()
                t0 = time.perf_counter_ns()
                ipr.link("set", index=peer, state="down" if i % 2 == 0 else "up")
                if seen.wait(2):
                    delays.append(stamps[-1] - t0)
                time.sleep(0.02)
        delays.sort()
        print(f"link_event_latency_us median {statistics.median(delays) / 1e3:.0f} "
              f"p99 {delays[int(0.99 * (len(delays) - 1))] / 1e3:.0f}  ({len(delays)} of {flaps} "
              "carrier changes seen; netlink request to port callback)")
    finally:
        ports.close()
        sh("ip", "link", "del", "sspb-l0", check=False)


def main() -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writes-only", action="store_true", help="only the P4Runtime write rates")
    ap.add_argument("--baseline", type=Path, metavar="CHECKOUT",
                    help="also measure the softswitch of another checkout in the same rounds")
    ap.add_argument("--floor", action="store_true",
                    help="also measure a Python P4Runtime server that does nothing")
    ap.add_argument("--rounds", type=int, default=ROUNDS, help=f"write rounds (default {ROUNDS})")
    args = ap.parse_args()
    bench_writes(args.baseline, args.rounds, args.floor)
    bench_in_process()
    if args.writes_only:
        return 0
    if os.geteuid() != 0:
        print("namespace benchmarks skipped: need root")
        return 0
    bench_link_events()
    bench_namespaces()
    return 0


if __name__ == "__main__":
    sys.exit(main())
