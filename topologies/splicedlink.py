"""A Mininet link that can be cut without taking either end's interface down (BMv2's links).

BMv2 1.15.5 reads its ports with blocking libpcap in one thread: while one of its
interfaces is administratively down, that read does not return and the switch
forwards on none of its ports. Its Thrift ``port_remove`` is no way out under
traffic: it holds the port manager's write lock while it waits for that same
thread (seen here as a CLI that never answered). So a link to a BMv2 is built
spliced: each end is a veth whose peer (a *middle* interface in the root
namespace) is joined to the other middle by tc mirred redirects,

    end1 == mid1 ~~tc~~ mid2 == end2

and a cut takes the two middles down: both ends lose carrier, as with a pulled
cable, and stay administratively up. The shaping (``ShapedLink``) stays on the ends.
"""

from __future__ import annotations

import subprocess
import zlib

from mininet.util import makeIntfPair

from topologies.shapedintf import ShapedLink


def middle_name(end: str) -> str:
    """The root-namespace peer of link end ``end`` (at most 15 characters)."""
    return f"sp{zlib.crc32(end.encode()):08x}"


def _batch(tool: str, commands: list[str], what: str, force: bool = False) -> None:
    """Run ``commands`` in one ``ip -batch`` / ``tc -batch`` process (one fork instead of one
    per command: a cut then takes both middles down together, not a process start apart)."""
    done = subprocess.run([tool, *(["-force"] if force else []), "-batch", "-"],
                          input="".join(f"{c}\n" for c in commands), capture_output=True,
                          text=True)
    if done.returncode != 0 and not force:
        raise RuntimeError(f"{what}: {tool}: {done.stderr.strip() or f'exit {done.returncode}'}")


def set_middles(end1: str, end2: str, up: bool) -> None:
    """Cut (``up=False``) or restore the spliced link between ``end1`` and ``end2``."""
    state = "up" if up else "down"
    _batch("ip", [f"link set {middle_name(end)} {state}" for end in (end2, end1)],
           f"{'restoring' if up else 'cutting'} the spliced link {end1}-{end2}")


class SplicedTCLink(ShapedLink):
    """``TCLink`` whose two ends are joined through a tc-spliced middle pair (module doc)."""

    @classmethod
    def makeIntfPair(cls, intfname1, intfname2, addr1=None, addr2=None,  # noqa: N802 (Mininet's name)
                     node1=None, node2=None, deleteIntfs=True):
        mid1, mid2 = middle_name(intfname1), middle_name(intfname2)
        what = f"splicing {intfname1}-{intfname2}"
        # middles a crashed run left behind (most often there are none: errors ignored)
        _batch("ip", [f"link del {mid}" for mid in (mid1, mid2)], what, force=True)
        makeIntfPair(intfname1, mid1, node1=node1, deleteIntfs=deleteIntfs)
        makeIntfPair(mid2, intfname2, node2=node2, deleteIntfs=deleteIntfs)
        for node, name, addr in ((node1, intfname1, addr1), (node2, intfname2, addr2)):
            if addr is not None:
                (node.cmd if node else _shell)(f"ip link set {name} address {addr}")
        subprocess.run(["sysctl", "-qw", *(f"net.ipv6.conf.{mid}.disable_ipv6=1"
                                           for mid in (mid1, mid2))], capture_output=True)
        _batch("ip", [f"link set {mid} up" for mid in (mid1, mid2)], what)
        tc = []
        for src, dst in ((mid1, mid2), (mid2, mid1)):
            tc += [f"qdisc add dev {src} ingress",
                   f"filter add dev {src} parent ffff: protocol all u32 match u32 0 0 "
                   f"action mirred egress redirect dev {dst}"]
        _batch("tc", tc, what)


def _shell(command: str) -> str:
    return subprocess.run(command, shell=True, capture_output=True, text=True).stdout
