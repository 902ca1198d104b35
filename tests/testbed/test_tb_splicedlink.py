"""The spliced link of the BMv2 testbed (topologies/splicedlink.py) in a real Mininet network.

Two hosts joined by one ``SplicedTCLink``: traffic crosses the tc-mirred middle,
a cut takes both ends' carrier away while both stay administratively up (what
keeps BMv2 forwarding on its other ports), a restore brings traffic back, a
cut of a link that does not exist names it, and nothing is left behind.
No BMv2 needed: the link is plain Linux.
"""

from __future__ import annotations

import subprocess

import pytest

import topologies.mininet_import  # noqa: F401  (before any other Mininet import)
from topologies.splicedlink import SplicedTCLink, middle_name, set_middles

pytestmark = [pytest.mark.mininet, pytest.mark.timeout(120)]

PREFIX = "tq"


def root_links() -> set[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return {line.split(":", 2)[1].strip().split("@")[0] for line in out.splitlines()}


def state(host, intf: str) -> tuple[bool, bool]:
    """(administratively up, carrier) of ``intf`` in ``host``'s namespace."""
    flags = host.cmd(f"ip -o link show {intf}").split("<", 1)[1].split(">", 1)[0].split(",")
    return "UP" in flags, "LOWER_UP" in flags


def pings(host, address: str) -> bool:
    return " 0% packet loss" in host.cmd(f"ping -c 2 -i 0.2 -W 1 {address}")


@pytest.fixture
def spliced_pair():
    from mininet.net import Mininet

    end1, end2 = f"{PREFIX}a-eth0", f"{PREFIX}b-eth0"
    net = Mininet(topo=None, build=False, controller=None, autoSetMacs=False)
    try:
        a = net.addHost(f"{PREFIX}a", ip="10.9.0.1/24")
        b = net.addHost(f"{PREFIX}b", ip="10.9.0.2/24")
        net.addLink(a, b, intfName1=end1, intfName2=end2, cls=SplicedTCLink, bw=10)
        net.build()
        yield a, b, end1, end2
    finally:
        net.stop()
        for mid in (middle_name(end1), middle_name(end2)):  # also after a failed build
            subprocess.run(["ip", "link", "del", mid], capture_output=True)


def test_a_cut_takes_carrier_from_both_ends_which_stay_admin_up(spliced_pair):
    a, b, end1, end2 = spliced_pair
    mids = {middle_name(end1), middle_name(end2)}
    assert mids <= root_links()  # the middles live in the root namespace
    assert pings(a, "10.9.0.2")

    set_middles(end1, end2, up=False)
    assert state(a, end1) == (True, False) and state(b, end2) == (True, False)
    assert not pings(a, "10.9.0.2")

    set_middles(end1, end2, up=True)
    assert state(a, end1) == (True, True) and state(b, end2) == (True, True)
    assert pings(a, "10.9.0.2")
    # the splice is both directions' tc redirect, nothing else: b reaches a as well
    assert pings(b, "10.9.0.1")


def test_cutting_a_link_that_is_not_there_names_it(spliced_pair):
    _, _, end1, _ = spliced_pair
    with pytest.raises(RuntimeError, match=f"cutting the spliced link {end1}-{PREFIX}x-eth9"):
        set_middles(end1, f"{PREFIX}x-eth9", up=False)


def test_nothing_is_left_after_stop():
    from mininet.net import Mininet

    end1, end2 = f"{PREFIX}c-eth0", f"{PREFIX}d-eth0"
    net = Mininet(topo=None, build=False, controller=None, autoSetMacs=False)
    try:
        a, b = net.addHost(f"{PREFIX}c"), net.addHost(f"{PREFIX}d")
        net.addLink(a, b, intfName1=end1, intfName2=end2, cls=SplicedTCLink)
        net.build()
        set_middles(end1, end2, up=False)
    finally:
        net.stop()
    # deleting one end of a veth deletes its middle: Mininet's stop removes both pairs
    assert not {middle_name(end1), middle_name(end2), end1, end2} & root_links()
