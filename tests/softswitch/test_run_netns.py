"""Two hosts in network namespaces connected through one `softswitch run` process.

A finsy client installs the forwarding entries over P4Runtime; ping and UDP pass;
taking a host's link down reaches the P4 program as a port-status packet (counted
in the program's `port_events` counter and punted to the controller) and reaches
the controller over gNMI as PORT_DOWN.
"""

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path

import finsy as fy
import pytest
from p4rt_client import PROG

from softswitch.p4info import p4info_from_program, p4info_text
from softswitch.p4runtime.pipeline_loader import device_config_from_file, load_program
from testsupport import stop_process

pytestmark = pytest.mark.root

HOSTS = {
    # name: (namespace, host-side veth, switch-side veth, switch port, IP, MAC)
    "h1": ("ssp-h1", "ssp-h1e", "ssp-s1p1", 1, "10.77.0.1", "02:00:00:77:00:01"),
    "h2": ("ssp-h2", "ssp-h2e", "ssp-s1p2", 2, "10.77.0.2", "02:00:00:77:00:02"),
}


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=check, capture_output=True, text=True)


def in_ns(ns: str, *args: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "netns", "exec", ns, *args], check=check, capture_output=True,
                          text=True, timeout=timeout)


def teardown() -> None:
    for ns, _, sw_if, *_ in HOSTS.values():
        sh("ip", "netns", "del", ns, check=False)
        sh("ip", "link", "del", sw_if, check=False)


@pytest.fixture
def hosts():
    teardown()
    try:
        for ns, h_if, sw_if, _, ip, mac in HOSTS.values():
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "add", sw_if, "type", "veth", "peer", "name", h_if)
            sh("ip", "link", "set", h_if, "netns", ns)
            sh("sysctl", "-qw", f"net.ipv6.conf.{sw_if}.disable_ipv6=1", check=False)
            sh("ip", "link", "set", sw_if, "up")
            in_ns(ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", check=False)
            in_ns(ns, "ip", "link", "set", h_if, "address", mac)
            in_ns(ns, "ip", "addr", "add", f"{ip}/24", "dev", h_if)
            in_ns(ns, "ip", "link", "set", h_if, "up")
            in_ns(ns, "ip", "link", "set", "lo", "up")
            # the switch forwards frames as handed over: checksums must be complete
            in_ns(ns, "ethtool", "-K", h_if, "tx", "off", check=False)
        for name, (ns, h_if, *_rest) in HOSTS.items():
            for other, (_, _, _, _, ip, mac) in HOSTS.items():
                if other != name:
                    in_ns(ns, "ip", "neigh", "replace", ip, "lladdr", mac, "dev", h_if)
        yield HOSTS
    finally:
        teardown()


@pytest.fixture(params=["python", "native"])
def switch(hosts, tmp_path, request):
    """`softswitch run` on the two switch-side veths, with each engine (native: the ports on
    mmap rings); yields (address, p4info path, blob path, proc)."""
    blob = device_config_from_file(PROG)
    p4info = tmp_path / "prog.p4info.txtpb"
    p4info.write_text(p4info_text(p4info_from_program(load_program(blob))))
    (tmp_path / "prog.p4cfg").write_bytes(blob)
    ready = tmp_path / "ready"
    log = open(tmp_path / "switch.log", "w")
    cmd = [sys.executable, "-m", "softswitch.runner", str(PROG), "--device-id", "1",
           "--grpc-addr", "127.0.0.1:0", "--ready-file", str(ready), "--name", "ssp-s1",
           "--engine", request.param]
    for _, _, sw_if, port, *_ in hosts.values():
        cmd += ["-i", f"{port}@{sw_if}"]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                            cwd=Path(__file__).resolve().parents[2])
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert proc.poll() is None, (tmp_path / "switch.log").read_text()
            assert time.monotonic() < deadline, "switch did not start"
            time.sleep(0.05)
        yield ready.read_text().strip(), p4info, tmp_path / "prog.p4cfg", proc
    finally:
        stop_process(proc)
        log.close()
        proc.log_text = (tmp_path / "switch.log").read_text()


def udp_exchange(src_ns: str, dst_ns: str, dst_ip: str) -> str:
    """Send one UDP datagram from src_ns to dst_ip:9999 and return what dst_ns received."""
    recv = subprocess.Popen(
        ["ip", "netns", "exec", dst_ns, sys.executable, "-c",
         "import socket,sys; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM);"
         f"s.bind(('{dst_ip}', 9999)); s.settimeout(10); print('ready', flush=True);"
         "print(s.recv(100).decode(), flush=True)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert recv.stdout.readline().strip() == "ready"
        in_ns(src_ns, sys.executable, "-c",
              "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM);"
              f"s.sendto(b'hello-ssp', ('{dst_ip}', 9999))")
        out, _ = recv.communicate(timeout=15)
        return out.strip()
    finally:
        if recv.poll() is None:
            recv.kill()
            recv.wait()


def test_forwarding_and_link_down_through_softswitch_run(hosts, switch):
    address, p4info, blob, proc = switch
    h1, h2 = hosts["h1"], hosts["h2"]

    # without entries the default action drops
    assert in_ns(h1[0], "ping", "-c", "1", "-W", "1", h2[4], check=False).returncode != 0

    async def program_and_watch():
        opts = fy.SwitchOptions(p4info=p4info, p4blob=blob, device_id=1)
        async with fy.Switch("ssp-s1", address, opts) as sw:
            await sw.insert([
                fy.P4TableEntry("ipv4_lpm", match=fy.Match({"hdr.ipv4.dst": f"{ip}/32"}),
                                action=fy.Action("set_nhop", dmac=mac, port=port))
                for _, _, _, port, ip, mac in hosts.values()
            ])
            loop = asyncio.get_running_loop()
            ping = await loop.run_in_executor(
                None, lambda: in_ns(h1[0], "ping", "-c", "3", "-i", "0.2", "-W", "2", h2[4], check=False))
            assert ping.returncode == 0, ping.stdout + ping.stderr
            assert await loop.run_in_executor(None, udp_exchange, h1[0], h2[0], h2[4]) == "hello-ssp"

            assert {p.name: p.up for p in sw.ports} == {"ssp-s1p1": True, "ssp-s1p2": True}
            # per-port counters over gNMI: 3 pings + 1 UDP datagram came in on port 1 ...
            counters = {}
            for leaf in ("in-pkts", "out-pkts"):
                for u in await sw.gnmi_client.get(
                        fy.GNMIPath(f"interfaces/interface[name=*]/state/counters/{leaf}")):
                    counters[(u.path["name"], leaf)] = u.value
            assert counters[("ssp-s1p1", "in-pkts")] >= 4 and counters[("ssp-s1p2", "out-pkts")] >= 4
            # ... and the replies left on port 1
            assert counters[("ssp-s1p1", "out-pkts")] >= 3
            packets = sw.read_packets(eth_types={0x88B5})
            first_packet = asyncio.ensure_future(anext(packets))  # the queue opens on first use
            await asyncio.sleep(0.05)
            await loop.run_in_executor(None, lambda: in_ns(h2[0], "ip", "link", "set", h2[1], "down"))
            end = loop.time() + 10
            while sw.ports["ssp-s1p2"].up:  # gNMI oper-status, as finsy tracks it
                assert loop.time() < end, "port-down not seen over gNMI"
                await asyncio.sleep(0.01)
            pkt = await asyncio.wait_for(first_packet, 10)
            assert pkt.payload[14:18] == bytes([1, 1, 0, 2])  # version 1, PORT_DOWN, port 2
            counts = {c.index: c.data.packet_count
                      async for c in sw.read(fy.P4CounterEntry("port_events"))
                      if c.data.packet_count}
            assert counts == {2: 1}

    asyncio.run(asyncio.wait_for(program_and_watch(), 120))

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 0
    log = (Path(proc.args[proc.args.index("--ready-file") + 1]).parent / "switch.log").read_text()
    assert "port_status port=2 up=False" in log
    assert "port=2 ifname=ssp-s1p2" in log and "link_changes=1" in log
    assert "stopping" in log
    engine = proc.args[proc.args.index("--engine") + 1]
    assert f"port_io={'rings' if engine == 'native' else 'sockets'}" in log
