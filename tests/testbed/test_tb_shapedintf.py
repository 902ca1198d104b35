"""The testbed's shaped links (topologies/shapedintf.py) in a real Mininet network.

At the native engine's 100 Mbit/s, Mininet's own ``TCLink`` makes tc warn that the HTB
quantum is big, printed as ``*** Error`` per interface; a ``ShapedLink`` is shaped to the
same rate with the quantum named, and tc says nothing.
"""

from __future__ import annotations

import subprocess

import pytest

# isort: off
import topologies.mininet_import  # noqa: F401  (must come before any other mininet import)
from mininet.link import TCLink
# isort: on

from topologies.shapedintf import QUANTUM, ShapedLink

pytestmark = [pytest.mark.mininet, pytest.mark.timeout(120)]

PREFIX = "tw"


def build_pair(link_cls: type, caplog) -> tuple[str, list[str]]:
    """Two hosts joined by one link of `link_cls` at 100 Mbit/s: (what Mininet logged while it
    shaped the link, `tc class show` of both ends)."""
    from mininet.net import Mininet

    net = Mininet(topo=None, build=False, controller=None, autoSetMacs=False)
    try:
        a = net.addHost(f"{PREFIX}a", ip="10.9.1.1/24")
        b = net.addHost(f"{PREFIX}b", ip="10.9.1.2/24")
        caplog.clear()
        net.addLink(a, b, intfName1=f"{PREFIX}a-eth0", intfName2=f"{PREFIX}b-eth0", cls=link_cls,
                    bw=100)
        err = caplog.text
        net.build()
        classes = [h.cmd(f"tc -d class show dev {h.name}-eth0") for h in (a, b)]
        return err, classes
    finally:
        net.stop()
        for end in ("a", "b"):  # also after a failed build
            subprocess.run(["ip", "link", "del", f"{PREFIX}{end}-eth0"], capture_output=True)


def test_mininets_own_link_warns_at_100_mbits(caplog):
    err, _ = build_pair(TCLink, caplog)
    assert "quantum" in err and "*** Error" in err  # the noise ShapedLink removes


def test_a_shaped_link_is_shaped_to_its_rate_and_tc_says_nothing(caplog):
    err, classes = build_pair(ShapedLink, caplog)
    assert "Error" not in err and "quantum" not in err, err
    for shown in classes:
        assert "rate 100Mbit" in shown and f"quantum {QUANTUM}" in shown, shown
