"""Ports on TPACKET_V3 mmap rings (softswitch/rings.py, rings.c) through real veths.

The switch (`SwitchProcess`, in this process) owns one end of each veth pair; the other
ends live in a network namespace this module makes and removes. Frames go in on one
peer and are read on the peers; what arrives is compared byte for byte with what the
Python engine makes of the same frames in-process (the reference), also with the
sockets of ports.py. Nothing here measures time: waits only wait for frames to arrive.
"""

from __future__ import annotations

import ctypes
import logging
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import ARP, Ether

from testsupport import wait_until

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[2]
ROUTER = ROOT / "bench" / "programs" / "l3_router.p4"
P4RT_PROG = Path(__file__).with_name("test_p4runtime_prog.p4")
TAG = os.getpid() % 100000
NS = f"ssr-{TAG}"
SW_IF = {1: f"sr{TAG}s1", 2: f"sr{TAG}s2"}
PEER_IF = {1: f"sr{TAG}p1", 2: f"sr{TAG}p2"}
SWITCH_MAC, HOST1, HOST2 = "02:00:00:00:00:fe", "02:00:00:00:00:01", "02:00:00:00:00:02"
ETH_P_ALL = 3
CLONE_NEWNET = 0x40000000


def sh(*args: str, check: bool = True) -> None:
    subprocess.run(args, check=check, capture_output=True)


@pytest.fixture
def wires() -> Iterator[None]:
    """Two veth pairs: switch ends here, peer ends in namespace NS (all removed after)."""
    sh("ip", "netns", "del", NS, check=False)
    for i in (1, 2):
        sh("ip", "link", "del", SW_IF[i], check=False)
    try:
        sh("ip", "netns", "add", NS)
        sh("ip", "netns", "exec", NS, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
        sh("ip", "netns", "exec", NS, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
        for i in (1, 2):
            sh("ip", "link", "add", SW_IF[i], "type", "veth", "peer", "name", PEER_IF[i])
            sh("sysctl", "-qw", f"net.ipv6.conf.{SW_IF[i]}.disable_ipv6=1")
            sh("ip", "link", "set", PEER_IF[i], "netns", NS)
            for dev, pre in ((SW_IF[i], ()), (PEER_IF[i], ("ip", "netns", "exec", NS))):
                sh(*pre, "ip", "link", "set", dev, "mtu", "9000")
                sh(*pre, "ip", "link", "set", dev, "up")
        yield
    finally:
        for i in (1, 2):
            sh("ip", "link", "del", SW_IF[i], check=False)
        sh("ip", "netns", "del", NS, check=False)


def peer_socket(ifname: str) -> socket.socket:
    """A raw socket on an interface of NS (made in a thread that entered NS)."""
    out: dict[str, object] = {}

    def enter() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            with open(f"/run/netns/{NS}") as f:
                if libc.setns(f.fileno(), CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns into {NS}")
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            s.setsockopt(263, 23, 1)  # PACKET_IGNORE_OUTGOING: not what we send ourselves
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
            s.bind((ifname, ETH_P_ALL))
            out["sock"] = s
        except BaseException as exc:
            out["error"] = exc

    t = threading.Thread(target=enter)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]  # type: ignore[misc]
    return out["sock"]  # type: ignore[return-value]


class Peers:
    """The namespace's ends of the wires: send on one, collect what arrives on each."""

    def __init__(self) -> None:
        self.socks = {i: peer_socket(PEER_IF[i]) for i in (1, 2)}
        for s in self.socks.values():
            s.settimeout(0.05)

    def send(self, port: int, frames: list[bytes]) -> None:
        for f in frames:
            self.socks[port].send(f)

    def collect(self, expected: dict[int, int], settle: float = 0.3) -> dict[int, list[bytes]]:
        """Frames per peer until `expected` counts arrived, then whatever else comes within
        `settle` seconds (so that extra frames are seen too); IPv6 noise is left out."""
        got: dict[int, list[bytes]] = {i: [] for i in self.socks}

        def drain() -> None:
            for i, s in self.socks.items():
                while True:
                    try:
                        data = s.recv(65536)
                    except (TimeoutError, BlockingIOError):
                        break
                    if data[12:14] != b"\x86\xdd":
                        got[i].append(data)

        wait_until(lambda: (drain(), all(len(got[i]) >= n for i, n in expected.items()))[1],
                   what=f"frames {expected} on the peers", timeout=20)
        stop = threading.Event()
        stop.wait(settle)
        drain()
        return got

    def close(self) -> None:
        for s in self.socks.values():
            s.close()


def start_switch(program: Path, engine: str, port_io: str, monkeypatch, rings: str = ""):
    from softswitch.runner import RunOptions, SwitchProcess

    monkeypatch.setenv("SOFTSWITCH_ENGINE", engine)
    monkeypatch.setenv("SOFTSWITCH_RINGS", rings)
    sp = SwitchProcess(RunOptions(program=program, interfaces=dict(SW_IF), grpc_addr="127.0.0.1:0",
                                  name="rings-test", port_io=port_io))
    try:
        sp.load(program)
        sp.start()
        wait_until(lambda: all(p.up for p in sp.ports.ports.values()), what="ports up", timeout=10)
    except BaseException:
        sp.stop()
        raise
    return sp


def reference(program: Path, setup) -> object:
    """The Python engine, in-process, with the same entries."""
    from softswitch import Switch, compile_file

    sw = Switch(compile_file(str(program)), engine="python")
    setup(sw)
    return sw


def expected_outputs(ref, frames: list[tuple[int, bytes]]) -> dict[int, list[bytes]]:
    out: dict[int, list[bytes]] = {}
    for port, f in frames:
        for o in ref.process_packet(port, f):
            out.setdefault(o.port, []).append(o.data)
    return out


def router_entries(sw) -> None:
    from softswitch import Lpm

    mac = int(SWITCH_MAC.replace(":", ""), 16)
    for net, port, dmac in ((0x0A000100, 1, HOST1), (0x0A000200, 2, HOST2)):
        sw.table_add("ipv4_lpm", [Lpm(net, 24)], "set_nhop",
                     [int(dmac.replace(":", ""), 16), mac, port])


def add_entries(sp, setup) -> None:
    with sp.device.lock:
        setup(sp.device.pipeline.switch)


def udp(dst: str, size: int = 64, ttl: int = 64, sport: int = 1000) -> bytes:
    return bytes(Ether(src=HOST1, dst=SWITCH_MAC) / IP(src="10.0.1.1", dst=dst, ttl=ttl)
                 / UDP(sport=sport, dport=9000) / (b"x" * size))


def router_frames() -> list[bytes]:
    frames = [udp(f"10.0.2.{1 + i % 50}", size=18 + 37 * i % 1400, sport=1000 + i) for i in range(40)]
    frames += [udp("10.0.1.7", sport=7), udp("10.0.2.9", ttl=1), udp("10.0.3.1")]  # back, expired, no route
    bad = bytearray(udp("10.0.2.3"))
    bad[24] ^= 0xFF  # IPv4 checksum wrong: dropped by verifyChecksum
    frames += [bytes(bad), bytes(Ether(src=HOST1, dst="ff:ff:ff:ff:ff:ff") / ARP(pdst="10.0.1.254"))]
    frames += [udp("10.0.2.4")[:20], udp("10.0.2.5")[:14]]  # IPv4 cut short, Ethernet only
    return frames


def assert_same(got: dict[int, list[bytes]], want: dict[int, list[bytes]]) -> None:
    for port in (1, 2):
        g, w = got.get(port, []), want.get(port, [])
        first = next((i for i, (a, b) in enumerate(zip(g, w, strict=False)) if a != b),
                     min(len(g), len(w)))
        assert g == w, (f"port {port}: {len(g)} frames arrived, {len(w)} expected; first "
                        f"difference at frame {first}")


@pytest.mark.parametrize("engine,port_io,rings", [
    ("native", "rings", ""), ("native", "rings", "version=2"), ("python", "rings", ""),
    ("native", "sockets", "")])
def test_router_frames_as_the_python_engine(wires, monkeypatch, engine, port_io, rings):
    sp = start_switch(ROUTER, engine, port_io, monkeypatch, rings=rings)
    peers = Peers()
    try:
        assert sp.ports.io == port_io
        add_entries(sp, router_entries)
        frames = router_frames()
        want = expected_outputs(reference(ROUTER, router_entries), [(1, f) for f in frames])
        peers.send(1, frames)
        got = peers.collect({p: len(v) for p, v in want.items()})
        assert_same(got, want)
        sp.ports.sync_counters()
        c1, c2 = sp.ports.ports[1].counters, sp.ports.ports[2].counters
        assert c1.rx_packets == len(frames)
        assert c2.tx_packets == len(want[2]) and c1.tx_packets == len(want[1])
        stats = sp.device.pipeline.switch.stats
        assert stats["in"][1] == len(frames)
        assert stats["out"][2] == len(want[2])
        assert stats["dropped"][1] == len(frames) - len(want[1]) - len(want[2])
    finally:
        peers.close()
        sp.stop()


@pytest.mark.parametrize("rings", ["block=4096,blocks=128,frames=64",
                                   "version=2,block=8192,blocks=512,frames=64"])
def test_burst_larger_than_a_block(wires, monkeypatch, rings):
    # V3, 4 KiB blocks: 600 frames of 100-400 bytes fill about 40 of them, more than the
    # engine takes in one call (V2: 600 of 2,048 frames); 64 TX frames are reused many
    # times; the RX ring holds the whole burst: nothing may be lost or reordered
    sp = start_switch(ROUTER, "native", "rings", monkeypatch, rings=rings)
    peers = Peers()
    try:
        add_entries(sp, router_entries)
        frames = [udp(f"10.0.2.{i % 200 + 1}", size=100 + i % 300, sport=i) for i in range(600)]
        want = expected_outputs(reference(ROUTER, router_entries), [(1, f) for f in frames])
        peers.send(1, frames)
        got = peers.collect({2: len(frames)})
        assert_same(got, want)
        rc = sp.ports.ring_counters()
        assert rc[1]["rx_packets"] == 600 and rc[1]["rx_truncated"] == rc[1]["rx_malformed"] == 0
        assert sum(len(f) + 80 for f in frames) > 10 * 4096  # the burst spanned many blocks
    finally:
        peers.close()
        sp.stop()


@pytest.mark.parametrize("version", [3, 2])
def test_truncated_and_oversized_frames(wires, monkeypatch, version):
    # V3: an 8 KiB block holds a frame of about 8,100 bytes: a larger one arrives truncated
    # and is counted, never run; an output larger than a 2 KiB TX frame goes out by send().
    # V2: a 2 KiB RX frame holds about 1,950 bytes: both large frames are truncated
    sp = start_switch(ROUTER, "native", "rings", monkeypatch,
                      rings=f"version={version},block=8192,blocks=32")
    peers = Peers()
    try:
        add_entries(sp, router_entries)
        big, huge = udp("10.0.2.8", size=3000), udp("10.0.2.9", size=8500)
        frames = [udp("10.0.2.1"), big, huge, udp("10.0.2.4")[:20], udp("10.0.2.2")]
        cut = (huge,) if version == 3 else (huge, big)
        want = expected_outputs(reference(ROUTER, router_entries),
                                [(1, f) for f in frames if f not in cut])
        peers.send(1, frames)
        got = peers.collect({2: len(want[2])})
        assert_same(got, want)
        rc = sp.ports.ring_counters()
        assert rc[1]["rx_truncated"] == len(cut) and rc[1]["rx_packets"] == len(frames) - len(cut)
        if version == 3:
            assert len(got[2][1]) == len(big) > 2048  # the oversized one, equal to the reference
            assert rc[2]["tx_oversize"] == 1
    finally:
        peers.close()
        sp.stop()


@pytest.mark.parametrize("rings", ["", "version=2"])
def test_down_port_drops_then_forwards_again(wires, monkeypatch, rings):
    sp = start_switch(ROUTER, "native", "rings", monkeypatch, rings=rings)
    peers = Peers()
    try:
        add_entries(sp, router_entries)
        sh("ip", "link", "set", SW_IF[2], "down")
        wait_until(lambda: not sp.ports.ports[2].up, what="port 2 down", timeout=10)
        peers.send(1, [udp("10.0.2.1", sport=i) for i in range(5)])

        def dropped() -> int:
            sp.ports.sync_counters()
            return sp.ports.ports[2].counters.tx_drops

        wait_until(lambda: dropped() == 5, what="5 tx drops on the down port", timeout=10)
        assert sp.ports.ports[2].counters.tx_packets == 0
        sh("ip", "link", "set", SW_IF[2], "up")
        wait_until(lambda: sp.ports.ports[2].up, what="port 2 up", timeout=10)
        frames = [udp("10.0.2.1", sport=100 + i) for i in range(5)]
        want = expected_outputs(reference(ROUTER, router_entries), [(1, f) for f in frames])
        peers.send(1, frames)
        assert_same(peers.collect({2: 5}), want)
    finally:
        peers.close()
        sp.stop()


def p4rt_entries(sw) -> None:
    from softswitch import Exact, Optional, Range, Ternary

    host1, host2 = int(HOST1.replace(":", ""), 16), int(HOST2.replace(":", ""), 16)
    sw.table_add("smac", [Exact(host1)], "NoAction")
    sw.table_add("dmac", [Exact(host2)], "forward", [2])
    sw.table_add("dmac", [Exact(0xFFFFFFFFFFFF)], "flood", [7])
    sw.mc_group_set(7, [(1, 0), (2, 1)])
    sw.table_add("acl", [Ternary(0x0A090909, 0xFFFFFFFF), Range(0, 255), Optional(None)],
                 "to_cpu", priority=10)


def test_packet_in_multicast_and_digests(wires, monkeypatch):
    sp = start_switch(P4RT_PROG, "native", "rings", monkeypatch)
    peers = Peers()
    pins: list[object] = []
    digests: list[object] = []
    sp.device.on_packet_in = pins.append
    try:
        add_entries(sp, p4rt_entries)
        sp.device.pipeline.switch.on_digest = digests.append
        other = "02:00:00:00:00:09"
        frames = [bytes(Ether(src=HOST1, dst=HOST2, type=0x88B6) / (b"a" * 50)),
                  bytes(Ether(src=HOST1, dst="ff:ff:ff:ff:ff:ff", type=0x88B6) / (b"b" * 50)),
                  bytes(Ether(src=other, dst=HOST2, type=0x88B6) / (b"c" * 50)),
                  bytes(Ether(src=HOST1, dst=SWITCH_MAC) / IP(src="10.9.9.9", dst="10.0.2.1")
                        / UDP(dport=5) / (b"d" * 30))]
        ref = reference(P4RT_PROG, p4rt_entries)
        ref_digests: list[object] = []
        ref.on_digest = ref_digests.append
        want = expected_outputs(ref, [(1, f) for f in frames])
        peers.send(1, frames)
        got = peers.collect({1: len(want[1]), 2: len(want[2])})
        assert_same(got, want)
        wait_until(lambda: len(pins) == len(want[255]), what="packet-ins", timeout=10)
        # the CPU port's frames carry packet_in (ingress_port: 9 bits, 7 of padding)
        assert [bytes(m.payload) for m in pins] == [d[2:] for d in want[255]]
        assert [int.from_bytes(m.metadata[0].value, "big") for m in pins] == [1] * len(pins)
        assert digests == ref_digests and len(digests) == 1
    finally:
        peers.close()
        sp.stop()


def test_fallback_to_sockets_when_rings_cannot_be_made(wires, monkeypatch, caplog):
    # 6,144-byte blocks are no page multiple: the kernel refuses the RX ring
    caplog.set_level(logging.WARNING, logger="softswitch.run")
    sp = start_switch(ROUTER, "native", "auto", monkeypatch, rings="block=6144")
    peers = Peers()
    try:
        assert sp.ports.io == "sockets"
        notices = [r.getMessage() for r in caplog.records if "port_io=sockets" in r.getMessage()]
        assert len(notices) == 1 and "PACKET_RX_RING" in notices[0], notices
        add_entries(sp, router_entries)
        frames = [udp("10.0.2.1", sport=i) for i in range(3)]
        want = expected_outputs(reference(ROUTER, router_entries), [(1, f) for f in frames])
        peers.send(1, frames)
        assert_same(peers.collect({2: 3}), want)
    finally:
        peers.close()
        sp.stop()


def test_ring_options_refuse_bad_text():
    from softswitch.rings import RingError, RingOptions

    assert RingOptions.from_env("block=8192, blocks=4").blocks == 4
    for bad in ("block", "blocks=x", "size=3", "frames=0", "version=1"):
        with pytest.raises(RingError, match="SOFTSWITCH_RINGS"):
            RingOptions.from_env(bad)


def _libasan() -> str | None:
    import shutil

    cc = shutil.which("gcc")
    if cc is None:
        return None
    out = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True,
                         check=False).stdout.strip()
    return out if out and os.path.isabs(out) and os.path.exists(out) else None


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("SOFTSWITCH_NATIVE_SANITIZE") not in (None, "", "0"),
                    reason="already the sanitizer run")
@pytest.mark.skipif(_libasan() is None, reason="gcc's libasan not found")
def test_rings_under_address_and_undefined_behavior_sanitizers():
    """Every other test of this file again with rings.c and the programs built with
    -fsanitize=address,undefined (UB aborts); any report fails the run."""
    import sys

    env = dict(os.environ, SOFTSWITCH_NATIVE_SANITIZE="1", LD_PRELOAD=str(_libasan()),
               ASAN_OPTIONS="detect_leaks=0:abort_on_error=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", __file__,
         "-k", "not sanitizers", "-x"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500, check=False)
    text = run.stdout + run.stderr
    assert run.returncode == 0, text[-4000:]
    assert "AddressSanitizer" not in text and "runtime error" not in text, text[-4000:]
    assert " passed" in text
