"""The cross-check's small fabrics in ns-3 (packet level, TCP), for ``bench/bench_fabricsim_ns3.py``.

Builds a 2-leaf x 2-spine fabric of point-to-point links in ns-3 (the ``ns3``
package on PyPI, its cppyy bindings), runs one TCP bulk transfer per flow and
returns when each sink received its last byte. Two routing modes:

* ``pinned``: every flow follows the spine it is given (what an ECMP hash chose
  in fabricsim), by addressing the destination through a per-spine alias
  address and static host routes; ACKs return over spine ``host index mod 2``.
* ``spray``: ns-3's global routing with ``RandomEcmpRouting``: every packet
  picks one of the equal-cost next hops at random (oblivious spraying).

ns-3.44's defaults stay (checked in the bindings): TCP Cubic with PRR
recovery, SACK and timestamps, initial window 10 segments, minimum RTO 1 s;
an FqCoDel root queue disc over a 100-packet drop-tail device queue. Segments
are 1448 bytes (1502 on the wire with TCP, IPv4 and PPP headers); socket
buffers 4 MiB. Run one scenario per process: ns-3 and cling keep global state
(nodes, the C++ helpers) between runs. The bindings look for ns-3's libraries
below the working directory too: run from the repository, not from a
directory holding another ns-3 installation.
"""

from __future__ import annotations

from dataclasses import dataclass

_CALLBACKS = r"""
#include <map>
namespace fsim {
std::map<uint32_t, double> done;
std::map<uint32_t, uint64_t> got;
std::map<uint32_t, uint64_t> want;
void OnRx(uint32_t id, ns3::Ptr<const ns3::Packet> p, const ns3::Address &a) {
  got[id] += p->GetSize();
  if (got[id] >= want[id] && done.find(id) == done.end())
    done[id] = ns3::Simulator::Now().GetSeconds();
}
void Hook(ns3::Ptr<ns3::Application> app, uint32_t id, uint64_t bytes) {
  want[id] = bytes;
  app->TraceConnectWithoutContext("Rx", ns3::MakeBoundCallback(&OnRx, id));
}
double Done(uint32_t id) { return done.count(id) ? done[id] : -1.0; }
}
"""


@dataclass(frozen=True)
class Ns3Flow:
    """One TCP transfer: host indices (0, 1 on leaf0; 2, 3 on leaf1), bytes, start, spine."""

    src: int
    dst: int
    size: int
    start: float = 0.0
    spine: int = 0
    """Pinned mode only: the spine the data goes through."""


@dataclass(frozen=True)
class Ns3Fabric:
    """2 leaves x 2 spines, two single-NIC hosts per leaf, every link ``gbps`` except the
    ``slow`` cables (leaf, spine) at ``slow_gbps``."""

    gbps: float = 10.0
    slow: tuple[tuple[int, int], ...] = ()
    slow_gbps: float = 5.0
    delay_us: float = 1.0


def run(fabric: Ns3Fabric, flows: list[Ns3Flow], mode: str, stop: float = 10.0) -> list[float]:
    """Completion time (s since the flow's start) of every flow; -1 if it did not finish."""
    import cppyy
    from ns import ns  # imported here: the bindings compile on import (seconds)

    if mode not in ("pinned", "spray"):
        raise ValueError(f"mode must be pinned or spray, got {mode!r}")
    cppyy.cppdef(_CALLBACKS)
    ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(1448))
    ns.Config.SetDefault("ns3::TcpSocket::SndBufSize", ns.UintegerValue(1 << 22))
    ns.Config.SetDefault("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(1 << 22))
    ns.Config.SetDefault("ns3::Ipv4GlobalRouting::RandomEcmpRouting",
                         ns.BooleanValue(mode == "spray"))
    hosts, leaves, spines = ns.NodeContainer(), ns.NodeContainer(), ns.NodeContainer()
    hosts.Create(4)
    leaves.Create(2)
    spines.Create(2)
    stack = ns.InternetStackHelper()
    for c in (hosts, leaves, spines):
        stack.Install(c)
    addr = ns.Ipv4AddressHelper()

    def link(a, b, gbps: float, subnet: str):
        p2p = ns.PointToPointHelper()
        p2p.SetDeviceAttribute("DataRate", ns.StringValue(f"{gbps:g}Gbps"))
        p2p.SetChannelAttribute("Delay", ns.StringValue(f"{fabric.delay_us:g}us"))
        devs = p2p.Install(a, b)
        addr.SetBase(ns.Ipv4Address(subnet), ns.Ipv4Mask("255.255.255.0"))
        return addr.Assign(devs)

    host_if, up_if = {}, {}
    for i in range(4):
        host_if[i] = link(hosts.Get(i), leaves.Get(i // 2), fabric.gbps, f"10.1.{i}.0")
    for lf in range(2):
        for k in range(2):
            gbps = fabric.slow_gbps if (lf, k) in fabric.slow else fabric.gbps
            up_if[lf, k] = link(leaves.Get(lf), spines.Get(k), gbps, f"10.2.{lf * 2 + k}.0")

    def alias(i: int, k: int) -> str:
        return f"10.{10 + k}.{i}.1"

    if mode == "spray":
        ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()
        target = {(f.dst, f.spine): host_if[f.dst].GetAddress(0) for f in flows}
    else:
        _static_routes(ns, hosts, leaves, spines, host_if, up_if, alias)
        target = {(f.dst, f.spine): ns.Ipv4Address(alias(f.dst, f.spine)) for f in flows}
    for n, f in enumerate(flows):
        port = 5000 + n
        sink = ns.PacketSinkHelper("ns3::TcpSocketFactory",
                                   ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo())
        apps = sink.Install(hosts.Get(f.dst))
        apps.Start(ns.Seconds(0.0))
        cppyy.gbl.fsim.Hook(apps.Get(0), n, int(f.size))
        bulk = ns.BulkSendHelper("ns3::TcpSocketFactory",
                                 ns.InetSocketAddress(target[f.dst, f.spine], port).ConvertTo())
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(int(f.size)))
        sapps = bulk.Install(hosts.Get(f.src))
        sapps.Start(ns.Seconds(f.start))
    ns.Simulator.Stop(ns.Seconds(stop))
    ns.Simulator.Run()
    out = []
    for n, f in enumerate(flows):
        t = float(cppyy.gbl.fsim.Done(n))
        out.append(t - f.start if t >= 0 else -1.0)
    ns.Simulator.Destroy()
    return out


def _static_routes(ns, hosts, leaves, spines, host_if, up_if, alias) -> None:
    """Host routes that pin data to the flow's spine (via the alias) and ACKs to i mod 2."""
    helper = ns.Ipv4StaticRoutingHelper()

    def table(node):
        return helper.GetStaticRouting(node.GetObject[ns.Ipv4]())

    def ifindex(node, address):
        return node.GetObject[ns.Ipv4]().GetInterfaceForAddress(address)

    for i in range(4):
        h = hosts.Get(i)
        ipv4 = h.GetObject[ns.Ipv4]()
        hif = ifindex(h, host_if[i].GetAddress(0))
        for k in range(2):
            ipv4.AddAddress(hif, ns.Ipv4InterfaceAddress(ns.Ipv4Address(alias(i, k)),
                                                         ns.Ipv4Mask("255.255.255.255")))
        table(h).SetDefaultRoute(host_if[i].GetAddress(1), hif)
    for lf in range(2):
        leaf = leaves.Get(lf)
        rt = table(leaf)
        for i in range(4):
            names = [host_if[i].GetAddress(0)] + [ns.Ipv4Address(alias(i, k)) for k in range(2)]
            if i // 2 == lf:
                out = ifindex(leaf, host_if[i].GetAddress(1))
                for a in names:
                    rt.AddHostRouteTo(a, host_if[i].GetAddress(0), out)
                continue
            for k, a in zip((i % 2, 0, 1), names, strict=True):
                out = ifindex(leaf, up_if[lf, k].GetAddress(0))
                rt.AddHostRouteTo(a, up_if[lf, k].GetAddress(1), out)
    for k in range(2):
        spine = spines.Get(k)
        rt = table(spine)
        for i in range(4):
            lf = i // 2
            out = ifindex(spine, up_if[lf, k].GetAddress(1))
            for a in [host_if[i].GetAddress(0)] + [ns.Ipv4Address(alias(i, kk)) for kk in range(2)]:
                rt.AddHostRouteTo(a, up_if[lf, k].GetAddress(0), out)
