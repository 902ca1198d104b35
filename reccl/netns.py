"""A multi-NIC testbed in network namespaces (root): hosts, rails, link cuts, netem.

Every host is a namespace; each of its `ranks_per_host` ranks (GPUs) owns
one veth per rail; the other ends sit in a fabric namespace, one bridge per
rail (a rail-optimised network). Rank-slot l of host h has address
10.<subnet+i>.<h>.<l+1> on rail i, inside the host namespace only. Cutting a
link takes the host-side veth down, which the ranks see through netlink.
`impair` makes one direction of a NIC lossy and reordering with htb/tbf/u32
(this kernel has no sch_netem); `rate_limit` caps a NIC with tbf; `dropped`
reads what the qdiscs dropped.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field


class TestbedError(RuntimeError):
    """An `ip`/`tc` command failed; the message holds the command and its stderr."""


def sh(*cmd: str, check: bool = True) -> str:
    """Run a command; raise TestbedError with its stderr on failure."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    if check and p.returncode:
        raise TestbedError(f"{' '.join(cmd)}: {p.stderr.strip()}")
    return p.stdout


@dataclass
class Testbed:
    """`hosts` namespaces with `rails` NICs per rank slot; names start with `prefix`."""

    __test__ = False  # not a pytest test class

    prefix: str
    hosts: int
    rails: int
    ranks_per_host: int = 1
    """Rank slots per host; every slot has its own NIC on every rail."""
    subnet: int = 77
    """Second octet of rail 0's subnet (10.<subnet+rail>.0.0/16)."""
    mtu: int = 9000
    created: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if len(self.prefix) > 6:
            raise ValueError(f"prefix {self.prefix!r} longer than 6 characters")

    @property
    def fabric(self) -> str:
        """Namespace holding the rail bridges."""
        return f"{self.prefix}f"

    def ns(self, h: int) -> str:
        """Namespace of host h."""
        return f"{self.prefix}h{h}"

    def ifname(self, h: int, rail: int, slot: int = 0) -> str:
        """Interface of rank slot `slot` of host h on `rail` (inside the host namespace)."""
        return f"{self.prefix}h{h}r{rail}s{slot}"

    def ip(self, h: int, rail: int, slot: int = 0) -> str:
        """Address of rank slot `slot` of host h on `rail`."""
        return f"10.{self.subnet + rail}.{h}.{slot + 1}"

    def nics(self, h: int, slot: int = 0) -> list[str]:
        """NIC addresses of one rank slot, by rail."""
        return [self.ip(h, r, slot) for r in range(self.rails)]

    def create(self) -> Testbed:
        """Build namespaces, bridges and veths (cleans up what it made on failure)."""
        try:
            self._add_ns(self.fabric)
            for r in range(self.rails):
                br = f"{self.prefix}br{r}"
                sh("ip", "-n", self.fabric, "link", "add", br, "type", "bridge")
                sh("ip", "-n", self.fabric, "link", "set", br, "up")
            for h in range(self.hosts):
                ns = self.ns(h)
                self._add_ns(ns)
                sh("ip", "-n", ns, "link", "set", "lo", "up")
                for r in range(self.rails):
                    for slot in range(self.ranks_per_host):
                        dev, peer = self.ifname(h, r, slot), f"{self.prefix}p{h}r{r}s{slot}"
                        sh("ip", "link", "add", dev, "mtu", str(self.mtu), "netns", ns, "type",
                           "veth", "peer", "name", peer, "mtu", str(self.mtu), "netns",
                           self.fabric)
                        sh("ip", "-n", self.fabric, "link", "set", peer, "master",
                           f"{self.prefix}br{r}")
                        sh("ip", "-n", self.fabric, "link", "set", peer, "up")
                        sh("ip", "-n", ns, "addr", "add", f"{self.ip(h, r, slot)}/16", "dev",
                           dev)
                        sh("ip", "-n", ns, "link", "set", dev, "up")
        except Exception:
            self.destroy()
            raise
        return self

    def _add_ns(self, ns: str) -> None:
        sh("ip", "netns", "del", ns, check=False)
        sh("ip", "netns", "add", ns)
        self.created.append(ns)

    def destroy(self) -> None:
        """Delete every namespace this testbed made (veths go with them)."""
        for ns in reversed(self.created):
            sh("ip", "netns", "del", ns, check=False)
        self.created.clear()

    def set_link(self, h: int, rail: int, up: bool, slot: int = 0) -> None:
        """Take a NIC down or up."""
        sh("ip", "-n", self.ns(h), "link", "set", self.ifname(h, rail, slot),
           "up" if up else "down")

    def _tc(self, h: int, *args: str, check: bool = True) -> None:
        sh("ip", "netns", "exec", self.ns(h), "tc", *args, check=check)

    def clear_qdisc(self, h: int, rail: int, slot: int = 0) -> None:
        """Remove any shaping from a NIC."""
        self._tc(h, "qdisc", "del", "dev", self.ifname(h, rail, slot), "root", check=False)

    def rate_limit(self, h: int, rail: int, rate: str, slot: int = 0) -> None:
        """Cap a NIC's egress at `rate` (tc syntax, e.g. '200mbit') with a token bucket."""
        dev = self.ifname(h, rail, slot)
        self.clear_qdisc(h, rail, slot)
        self._tc(h, "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate, "burst", "64kb",
                 "limit", "8mb")

    def impair(self, h: int, rail: int, slot: int = 0) -> str:
        """One-way loss and reordering on a NIC's egress. With sch_netem: 'loss 3% delay
        2ms reorder 25%'. Kernels without it (ours): see `impair_htb`. Returns which."""
        dev = self.ifname(h, rail, slot)
        self.clear_qdisc(h, rail, slot)
        try:
            self._tc(h, "qdisc", "add", "dev", dev, "root", "netem", "loss", "3%", "delay",
                     "2ms", "reorder", "25%", "50%")
            return "netem"
        except TestbedError as e:
            if "unknown" not in str(e).lower():
                raise
        self.impair_htb(h, rail, slot=slot)
        return "htb"

    def impair_htb(self, h: int, rail: int, slow_rate: str = "20mbit", limit: str = "20kb",
                   slot: int = 0) -> None:
        """Loss and reordering without netem: TCP segments that start in one quarter of
        every 64 KiB of sequence space (bits 14-15 of the sequence number zero) go through
        a slow token bucket with a short queue, so they arrive late (reordered) or are
        dropped when it overflows (loss). Any stream longer than 64 KiB has such segments,
        whatever its initial sequence number and segment size. (Matching the low bits
        does not: with a 9000-byte MTU the MSS, 8948, is a multiple of 4, so a stream of
        full segments matches always or never, depending on its initial number.)"""
        dev = self.ifname(h, rail, slot)
        self.clear_qdisc(h, rail, slot)
        self._tc(h, "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "2")
        self._tc(h, "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb",
                 "rate", slow_rate)
        self._tc(h, "class", "add", "dev", dev, "parent", "1:", "classid", "1:2", "htb",
                 "rate", "10gbit")
        self._tc(h, "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", "tbf",
                 "rate", slow_rate, "burst", "16kb", "limit", limit)
        # IPv4 header (20 bytes) + TCP: the sequence number is bytes 24-27, bits 15-8 byte 26.
        self._tc(h, "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1",
                 "u32", "match", "ip", "protocol", "6", "0xff",
                 "match", "u8", "0", "0xc0", "at", "26", "flowid", "1:1")

    def dropped(self, h: int, rail: int, slot: int = 0) -> int:
        """Packets the NIC's qdiscs dropped (tc -s statistics)."""
        text = sh("ip", "netns", "exec", self.ns(h), "tc", "-s", "qdisc", "show", "dev",
                  self.ifname(h, rail, slot))
        return sum(int(part.split()[1].rstrip(",")) for part in text.split("(")
                   if part.startswith("dropped "))

    def delayed(self, h: int, rail: int, slot: int = 0) -> int:
        """Packets `impair_htb` sent through its slow class (late, so reordered, if not lost)."""
        text = sh("ip", "netns", "exec", self.ns(h), "tc", "-s", "class", "show", "dev",
                  self.ifname(h, rail, slot))
        for block in text.split("class htb ")[1:]:
            if block.startswith("1:1 ") and " pkt" in block:
                return int(block.split(" pkt")[0].rsplit(" ", 1)[1])
        return 0

    def __enter__(self) -> Testbed:
        return self.create()

    def __exit__(self, *exc: object) -> None:
        self.destroy()
