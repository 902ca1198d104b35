"""Ports on Linux interfaces: AF_PACKET I/O without loop-back, and netlink link state."""

import socket
import subprocess
import threading
import time

import pytest

from softswitch.ports import PortError, PortSet, parse_port_map
from testsupport import wait_until

ETH_TEST = b"\x88\xb5"


def frame(tag: bytes) -> bytes:
    return b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + ETH_TEST + tag.ljust(46, b"\0")


def sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True)


def test_parse_port_map():
    assert parse_port_map(["1@veth1", "2@veth2"]) == {1: "veth1", 2: "veth2"}
    for bad, msg in (("veth1", "PORT@IFNAME"), ("x@veth1", "PORT@IFNAME"), ("1@", "PORT@IFNAME")):
        with pytest.raises(PortError, match=msg):
            parse_port_map([bad])
    with pytest.raises(PortError, match="port 1 given twice"):
        parse_port_map(["1@a", "1@b"])


@pytest.fixture
def veth():
    """A veth pair ssp-a0 (switch side) / ssp-a1 (test side), removed afterwards."""
    subprocess.run(["ip", "link", "del", "ssp-a0"], capture_output=True)
    sh("ip", "link", "add", "ssp-a0", "type", "veth", "peer", "name", "ssp-a1")
    try:
        for n in ("ssp-a0", "ssp-a1"):
            subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{n}.disable_ipv6=1"], capture_output=True)
            sh("ip", "link", "set", n, "up")
        yield "ssp-a0", "ssp-a1"
    finally:
        subprocess.run(["ip", "link", "del", "ssp-a0"], capture_output=True)


@pytest.mark.root
def test_open_unknown_interface_is_a_port_error():
    ps = PortSet({1: "ssp-nosuch0"}, lambda p, d: None)
    with pytest.raises(PortError, match="no interface 'ssp-nosuch0'"):
        ps.open()


@pytest.mark.root
def test_rx_tx_without_loopback_and_link_events(veth):
    sw_if, peer_if = veth
    got: list[tuple[int, bytes]] = []
    links: list[tuple[int, bool]] = []
    lock = threading.Lock()

    def on_packet(port, data):
        if data[12:14] == ETH_TEST:
            with lock:
                got.append((port, data))

    ps = PortSet({1: sw_if}, on_packet, lambda p, up: links.append((p, up)))
    ps.open()
    peer = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88B5))
    peer.bind((peer_if, 0x88B5))
    peer.settimeout(2)
    try:
        ps.start()
        wait_until(lambda: ps.ports[1].up, timeout=5)
        peer.send(frame(b"in-1"))
        wait_until(lambda: len(got) == 1, timeout=5)
        assert got[0][0] == 1 and got[0][1].startswith(frame(b"in-1")[:20])
        ps.send(1, frame(b"out-1"))
        assert peer.recv(2048)[14:19] == b"out-1"
        time.sleep(0.05)
        assert [d[14:19] for _, d in got] == [b"in-1\0"]  # our own frame was not read back
        c = ps.ports[1].counters
        assert (c.rx_packets >= 1, c.tx_packets, c.tx_bytes) == (True, 1, 60)

        sh("ip", "link", "set", peer_if, "down")
        wait_until(lambda: (1, False) in links, timeout=5)
        assert not ps.ports[1].up
        sh("ip", "link", "set", peer_if, "up")
        wait_until(lambda: links[-1:] == [(1, True)], timeout=5)
        assert ps.ports[1].counters.link_changes == 2
    finally:
        peer.close()
        ps.close()
