"""One `syncmesh run --p4runtime` process programming one `softswitch run --no-p4` process.

The switch's ports are veths whose far ends sit in a private namespace; the
test reads the switch over P4Runtime (plain Read RPCs, no arbitration, so the
daemon stays primary) and compares with what a SyncMesh core of the same
fabric wants. Then it SIGKILLs the daemon, deletes one of its entries behind
its back, adds a multicast group nobody owns, and starts a new daemon: the
pipeline is not pushed again, the foreign group survives, the entry is back.
"""

import asyncio
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import finsy as fy
import grpc
import pytest
from finsy.p4entity import decode_entity
from finsy.proto import p4r, p4r_grpc
from syncmesh.core import SyncMeshCore
from syncmesh.metrics import parse
from syncmesh.p4runtime_driver import KEYLESS_TABLES, compile_pipeline, from_finsy
from syncmesh.sglb_mapping import (
    SGLB_TABLES,
    Identity,
    MulticastWrite,
    TableWrite,
    entities,
    switch_mac,
)

from fabricmodel import load
from sglb.config import flowlet_gap_floor_us
from sglb.settings import SwitchSettings
from testsupport import free_port, stop_process, wait_until

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]
NS = "smp-h"
# switch port: (switch-side veth, far end in NS)
PORTS = {1: ("smp-l1p1", "smp-h1"), 2: ("smp-l1p2", "smp-h2"), 3: ("smp-l1p3", "smp-s1")}
FOREIGN_GROUP = 77


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=check, capture_output=True, text=True, timeout=30)


def teardown_links() -> None:
    sh("ip", "netns", "del", NS, check=False)
    for sw_if, _ in PORTS.values():
        sh("ip", "link", "del", sw_if, check=False)


@pytest.fixture
def links():
    teardown_links()
    try:
        sh("ip", "netns", "add", NS)
        for sw_if, far in PORTS.values():
            sh("ip", "link", "add", sw_if, "type", "veth", "peer", "name", far)
            sh("ip", "link", "set", far, "netns", NS)
            sh("sysctl", "-qw", f"net.ipv6.conf.{sw_if}.disable_ipv6=1", check=False)
            sh("ip", "link", "set", sw_if, "up")
            sh("ip", "netns", "exec", NS, "ip", "link", "set", far, "up")
        yield PORTS
    finally:
        teardown_links()


@pytest.fixture
def switch(links, tmp_path):
    """`softswitch run --no-p4` on the three veths: yields (P4Runtime address, log path)."""
    ready, log_path = tmp_path / "ready", tmp_path / "switch.log"
    cmd = [sys.executable, "-m", "softswitch.runner", "--no-p4", "--device-id", "1",
           "--grpc-addr", "127.0.0.1:0", "--ready-file", str(ready), "--name", "smp-l1"]
    for port, (sw_if, _) in links.items():
        cmd += ["-i", f"{port}@{sw_if}"]
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
    def alive() -> None:
        assert proc.poll() is None, log_path.read_text()

    try:
        wait_until(lambda: ready.exists() and ready.read_text().strip(), "switch to start", 60,
                   0.05, alive)
        yield ready.read_text().strip(), log_path
    finally:
        stop_process(proc, timeout=15)


@pytest.fixture
def fabric_file(tmp_path):
    """l1 (two hosts, one uplink) under the daemon; s1 and l2 exist but no daemon runs for them."""
    addr = {k: f"127.0.0.1:{free_port()}" for k in ("l1p", "l1s", "l1m", "l2p", "l2s", "l2m",
                                                      "s1p", "s1s", "s1m")}
    path = tmp_path / "smp.yaml"
    path.write_text(f"""name: smp
cpu_port: 255
switches:
- {{name: l1, role: leaf, id: 1, subnet: 10.0.1.0/24, p4runtime: '{addr["l1p"]}',
   syncmesh: '{addr["l1s"]}', metrics: '{addr["l1m"]}'}}
- {{name: l2, role: leaf, id: 2, subnet: 10.0.2.0/24, p4runtime: '{addr["l2p"]}',
   syncmesh: '{addr["l2s"]}', metrics: '{addr["l2m"]}'}}
- {{name: s1, role: spine, id: 3, p4runtime: '{addr["s1p"]}', syncmesh: '{addr["s1s"]}',
   metrics: '{addr["s1m"]}'}}
links:
- a: {{switch: l1, port: 3}}
  b: {{switch: s1, port: 1}}
  capacity: 10Mbit
- a: {{switch: l2, port: 2}}
  b: {{switch: s1, port: 2}}
  capacity: 10Mbit
hosts:
- name: h1
  nics:
  - {{name: eth0, leaf: l1, port: 1, mac: '02:00:00:01:00:01', ip: 10.0.1.10, capacity: 10Mbit}}
- name: h2
  nics:
  - {{name: eth0, leaf: l1, port: 2, mac: '02:00:00:01:00:02', ip: 10.0.1.11, capacity: 10Mbit}}
- name: h3
  nics:
  - {{name: eth0, leaf: l2, port: 1, mac: '02:00:00:02:00:01', ip: 10.0.2.10, capacity: 10Mbit}}
""")
    return path


@pytest.fixture(scope="module")
def schema(tmp_path_factory):
    files = compile_pipeline(REPO / "p4src" / "sglb.p4", tmp_path_factory.mktemp("smp-pipeline"))
    return fy.P4Schema(files.p4info, files.device_config)


def read_switch(address: str, schema: fy.P4Schema) -> list:
    """Every SGLB table entry and multicast group the switch holds, as mapping entities."""
    requests = [fy.P4TableEntry(t) for t in sorted(SGLB_TABLES) if t not in KEYLESS_TABLES]
    requests += [fy.P4TableEntry(t, is_default_action=True) for t in KEYLESS_TABLES]
    requests.append(fy.P4MulticastGroupEntry())
    req = p4r.ReadRequest(device_id=1, entities=[r.encode(schema) for r in requests])
    out = []
    with grpc.insecure_channel(address) as channel:
        try:
            for resp in p4r_grpc.P4RuntimeStub(channel).Read(req, timeout=10):
                for msg in resp.entities:
                    e = from_finsy(decode_entity(msg, schema), schema)
                    if e is not None:
                        out.append(e)
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.FAILED_PRECONDITION:
                raise
            return []  # no pipeline yet
    return sorted(out, key=repr)


def live_masks(held: list) -> dict[int, int]:
    """The dst_profile liveness mask per destination leaf among read-back entities."""
    return {dict(e.match)["meta.dst_leaf"]: dict(e.params)["live_mask"] for e in held
            if isinstance(e, TableWrite) and e.table == "dst_profile"}


def wanted(fabric_path: Path, ports_up: dict[int, bool]) -> list:
    """What a SyncMesh core of l1 wants on its switch with these port states."""
    fabric = load(fabric_path)
    core = SyncMeshCore(fabric, "l1", time.time_ns(), port_status_out=True)
    now = time.time()
    core.start(now)
    core.on_port_status(ports_up, now)
    # the daemon fits its settings to the fabric's slowest link (10 Mbit/s): the DRE
    # period it compiles sglb.p4 with, and the flowlet gap raised to 40 full frames
    settings = SwitchSettings().for_slowest_link(min(lk.capacity_mbps for lk in fabric.links))
    assert settings.dre_period_shift == 13
    assert settings.flowlet_gap_us == flowlet_gap_floor_us(10) == 48_448
    return sorted(entities(core.desired(), Identity(switch_mac(1), settings)), key=repr)


def holds(address: str, schema: fy.P4Schema, fabric_path: Path, ports_up: dict[int, bool],
          extra: tuple = ()) -> dict[int, int] | None:
    """The switch's liveness masks if it holds exactly the wanted entries (plus ``extra``)."""
    held = read_switch(address, schema)
    masks = live_masks(held)
    want = sorted([*wanted(fabric_path, ports_up), *extra], key=repr)
    return masks if held == want and masks else None


def wait_for(what: str, check, daemon: subprocess.Popen, log: Path, timeout: float = 90):
    def alive() -> None:
        assert daemon.poll() is None, f"daemon exited while waiting for {what}:\n{log.read_text()}"

    try:
        return wait_until(check, what, timeout, 0.1, alive)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{log.read_text()}") from None


def start_daemon(fabric_path: Path, address: str, log: Path) -> subprocess.Popen:
    # a SIGKILLed daemon leaves its compiled-pipeline directory: keep it in the test's tmp
    env = dict(os.environ, TMPDIR=str(log.parent))
    certs = log.parent / "certs"
    if not certs.exists():
        subprocess.run([sys.executable, "-m", "syncmesh.cli", "certs", "--fabric",
                        str(fabric_path), "--out", str(certs), "--switch", "l1"], check=True,
                       capture_output=True, timeout=60, cwd=REPO)
    cmd = [sys.executable, "-m", "syncmesh.cli", "run", str(fabric_path), "l1",
           "--p4runtime", address, "--switch-budget", "60", "--keepalive", "0.2",
           "--dead-interval", "1", "--certs", str(certs), "--state-dir", str(log.parent)]
    with open(log, "a") as f:
        return subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=REPO)


def metric(fabric_path: Path, name: str, **labels: str) -> float | None:
    url = f"http://{load(fabric_path).switch('l1').metrics}/metrics"
    with urllib.request.urlopen(url, timeout=5) as r:
        page = parse(r.read().decode())
    want = frozenset({("switch", "l1"), *labels.items()})
    return page.get((name, want))


def send_to_uplink() -> subprocess.Popen:
    """h1 sends UDP to h3 (behind l2) for a while: l1 forwards it out of its uplink."""
    mac = switch_mac(1).to_bytes(6, "big").hex(":")
    code = ("from scapy.all import Ether, IP, UDP, sendp\n"
            f"p = Ether(src='02:00:00:01:00:01', dst='{mac}') / IP(src='10.0.1.10', "
            "dst='10.0.2.10') / UDP(sport=4000, dport=5000) / (b'x' * 1000)\n"
            f"sendp(p, iface='{PORTS[1][1]}', count=3000, inter=0.01, verbose=False)\n")
    return subprocess.Popen(["ip", "netns", "exec", NS, sys.executable, "-c", code],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def pipeline_pushes(switch_log: Path) -> int:
    return switch_log.read_text().count("rpc=SetForwardingPipelineConfig")


async def tamper(address: str, route: TableWrite) -> None:
    """As another primary, while no daemon runs: delete ``route``, add a group nobody owns."""
    opts = fy.SwitchOptions(device_id=1, initial_election_id=20)  # no pipeline: keep the switch's
    async with fy.Switch("smp-tamper", address, opts) as sw:
        assert sw.is_primary
        await sw.delete([fy.P4TableEntry(route.table, match=fy.Match(dict(route.match)))])
        await sw.insert([fy.P4MulticastGroupEntry(FOREIGN_GROUP, replicas=[1])])


def test_daemon_process_programs_follows_ports_and_survives_sigkill(switch, fabric_file,
                                                                      schema, tmp_path):
    address, switch_log = switch
    log = tmp_path / "daemon.log"
    up = {1: True, 2: True, 3: True}
    uplink_down = {1: True, 2: True, 3: False}
    assert wanted(fabric_file, up) != wanted(fabric_file, uplink_down)

    daemon = start_daemon(fabric_file, address, log)
    try:
        first = wait_for("the switch to hold the core's entries",
                         lambda: holds(address, schema, fabric_file, up), daemon, log)
        assert pipeline_pushes(switch_log) == 1

        # the daemon follows the switch's ports: the uplink's far end goes down, then up
        sh("ip", "netns", "exec", NS, "ip", "link", "set", PORTS[3][1], "down")
        down = wait_for("the uplink-down entries",
                        lambda: holds(address, schema, fabric_file, uplink_down), daemon, log)
        assert down[2] != first[2]  # the usable paths changed: a new liveness mask
        assert metric(fabric_file, "syncmesh_port_carrier", port="3") == 0
        sh("ip", "netns", "exec", NS, "ip", "link", "set", PORTS[3][1], "up")
        before_kill = wait_for("the uplink-up entries",
                               lambda: holds(address, schema, fabric_file, up), daemon, log)
        # the counters are read: traffic from h1 to l2's host leaves by the uplink, port 3
        sender = send_to_uplink()
        try:
            wait_for("a transmit rate on port 3",
                     lambda: (metric(fabric_file, "syncmesh_port_rate_mbps", port="3") or 0) > 0,
                     daemon, log, timeout=60)
        finally:
            stop_process(sender, signal.SIGKILL)

        assert stop_process(daemon, signal.SIGKILL) == -signal.SIGKILL
        held = read_switch(address, schema)
        route = next(e for e in held if isinstance(e, TableWrite) and e.table == "ipv4_route")
        asyncio.run(asyncio.wait_for(tamper(address, route), 60))
        tampered = read_switch(address, schema)
        assert route not in tampered
        foreign = MulticastWrite(FOREIGN_GROUP, (1,))
        assert foreign in tampered

        daemon = start_daemon(fabric_file, address, log)
        after = wait_for("the deleted entry to come back",
                         lambda: holds(address, schema, fabric_file, up, (foreign,)), daemon, log)
        assert route in read_switch(address, schema)
        assert after == before_kill  # adopted, not rewritten from scratch
        assert pipeline_pushes(switch_log) == 1  # not pushed again: the entries were kept
        assert stop_process(daemon) == 0
        text = log.read_text()
        assert text.count("event=switch_connected") == 2
        # the restarted daemon adopted the switch on its first session; the first one
        # pushed the pipeline, whose compile may outlast finsy's fixed 10 s deadline on a
        # loaded machine (then it reconnects and finds the pipeline's cookie: one push)
        restarted = text[text.rindex("event=started"):]
        assert "switch_lost" not in restarted and "switch_write_failed" not in text
        assert "Traceback" not in text
    finally:
        stop_process(daemon, signal.SIGKILL)
