"""One packet-level run: the fabric in ns-3, sglb.p4 in every switch, SyncMesh in the loop.

``run(fabric, options)`` builds the network, programs every switch through its
SyncMesh core at time 0, starts the workload at ``start_s``, injects the link
events, and returns the results as plain data (the JSON of ``fabric-sim
packet``). Simulated time only: the same options give the same results.
ns-3 and cling keep global state, so run one simulation per process
(``fabric-sim packet`` does; tests run it in a subprocess).
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from syncmesh.config import CoreConfig
from syncmesh.messages import Message
from syncmesh.sglb_mapping import Identity, switch_mac

from fabricmodel import Fabric, FabricError
from sglb.codes import DropReason, Event
from sglb.config import MAX_PATHS, dre_period_shift_for
from sglb.settings import DEFAULT, Feedback, SwitchSettings

from . import network
from .decisions import DecisionLog
from .observe import Observer
from .options import LinkEvent, OptionError, SimOptions
from .switch import SimSwitch, make_pipeline
from .workload import Flow, flows

SGLB_P4 = Path(__file__).resolve().parents[1] / "p4src" / "sglb.p4"
TICK_S = 0.02          # the daemon's tick_interval
SPINE_COUNTERS_S = 0.01  # counter_interval
LEAF_COUNTERS_S = 0.25   # leaf_counter_interval
_EVENTS = {int(e) for e in Event}
_DROPS = {int(d) for d in DropReason}
_TCP_TYPES = {"cubic": "ns3::TcpCubic", "dctcp": "ns3::TcpDctcp", "newreno": "ns3::TcpNewReno"}


def scaled(fabric: Fabric, scale: float) -> Fabric:
    """``fabric`` with every capacity multiplied by ``scale`` (what the switches and
    SyncMesh see: DRE thresholds, weights and profiles follow the real rates)."""
    links = tuple(dataclasses.replace(lk, capacity_mbps=lk.capacity_mbps * scale)
                  for lk in fabric.links)
    hosts = tuple(dataclasses.replace(h, nics=tuple(
        dataclasses.replace(n, capacity_mbps=n.capacity_mbps * scale) for n in h.nics))
        for h in fabric.hosts)
    return dataclasses.replace(fabric, links=links, hosts=hosts)


def resolve_link(fabric: Fabric, text: str) -> str:
    """A link's name from its name or from ``SWITCH:PORT`` of either end."""
    names = {lk.name for lk in fabric.links}
    if text in names:
        return text
    for lk in fabric.links:
        for end in (lk.leaf, lk.spine):
            if text == f"{end.switch}:{end.port}":
                return lk.name
    raise OptionError(f"--fail/--recover: no link {text!r} in fabric {fabric.name!r} "
                      f"(links: {', '.join(sorted(names))})")


_FEEDBACK_FIELDS = {f.name for f in dataclasses.fields(Feedback)}
_IDENTITY_FIELDS = {f.name for f in dataclasses.fields(SwitchSettings)} - {"feedback",
                                                                          "dre_period_shift"}


def identity_for(fabric: Fabric, name: str, opts: SimOptions, dre_shift: int) -> Identity:
    """The switch's set_switch constants: the defaults (``sglb.settings.DEFAULT``) with
    ``opts.settings``."""
    ident: dict[str, Any] = {}
    fb: dict[str, Any] = {}
    for key, value in opts.settings:
        if key in _IDENTITY_FIELDS:
            ident[key] = value
        elif key in _FEEDBACK_FIELDS:
            fb[key] = bool(value) if key == "enabled" else value
        else:
            raise OptionError(f"--set: unknown setting {key!r} (known: "
                              f"{', '.join(sorted(_IDENTITY_FIELDS | _FEEDBACK_FIELDS))})")
    try:
        settings = dataclasses.replace(DEFAULT, feedback=dataclasses.replace(DEFAULT.feedback, **fb),
                                       dre_period_shift=dre_shift, **ident)
        return Identity(switch_mac(fabric.switch(name).id), settings, max_paths=opts.max_paths)
    except ValueError as e:
        raise OptionError(f"--set: {e}") from None


class _Timers:
    """Python callbacks at simulated times, ordered by (time, sequence): ns-3 holds one
    event per pending callback."""

    def __init__(self, psim: Any):
        self.psim = psim
        self.pending: dict[int, Callable[[int], list[tuple[int, bytes]] | None]] = {}
        self.seq = 0

    def at(self, t_ns: int, fn: Callable[[int], list[tuple[int, bytes]] | None]) -> None:
        self.seq += 1
        self.pending[self.seq] = fn
        self.psim.At(int(t_ns), self.seq)

    def fire(self, token: int, now_ns: int) -> list[tuple[int, bytes]] | None:
        return self.pending.pop(token)(now_ns)


def run(fabric_in: Fabric, opts: SimOptions, progress: Callable[[float], None] | None = None
        ) -> dict[str, Any]:
    """Simulate ``opts`` on ``fabric_in``; the results as JSON-ready data."""
    from .shim import load

    fabric = scaled(fabric_in, opts.link_scale)
    events = tuple(dataclasses.replace(ev, link=resolve_link(fabric, ev.link)) for ev in opts.events)
    flow_list = flows(fabric, opts)
    dre_shift = dre_period_shift_for(min(lk.capacity_mbps for lk in fabric.links))
    identities = {s.name: identity_for(fabric, s.name, opts, dre_shift) for s in fabric.switches}
    wall0 = time.monotonic()
    ns, psim = load()

    # ---- ns-3's hosts: TCP as Linux sets it up, checksums on (sglb.p4 checks them)
    ns.GlobalValue.Bind("ChecksumEnabled", ns.BooleanValue(True))
    ns.RngSeedManager.SetSeed(1 + opts.seed)
    ns.RngSeedManager.SetRun(1 + opts.seed)
    cfg = ns.Config.SetDefault
    cfg("ns3::TcpL4Protocol::SocketType", ns.TypeIdValue(ns.TypeId.LookupByName(_TCP_TYPES[opts.tcp])))
    cfg("ns3::TcpSocket::SegmentSize", ns.UintegerValue(1448))
    cfg("ns3::TcpSocket::SndBufSize", ns.UintegerValue(1 << 22))
    cfg("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(1 << 22))
    cfg("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.MilliSeconds(opts.min_rto_ms)))
    cfg("ns3::TcpSocket::DelAckTimeout", ns.TimeValue(ns.MicroSeconds(opts.delack_ms * 1e3)))
    if opts.tcp == "dctcp" or opts.ecn:
        cfg("ns3::TcpSocketBase::UseEcn", ns.StringValue("On"))

    # ---- switches: one compile of sglb.p4, one engine and SyncMesh core per switch
    from softswitch.p4runtime.pipeline_loader import device_config_from_file

    defines: dict[str, str | None] = {"DRE_PERIOD_SHIFT": str(dre_shift), **dict(opts.defines)}
    if opts.max_paths != MAX_PATHS:
        defines["MAX_PATHS"] = str(opts.max_paths)
    pipeline = make_pipeline(device_config_from_file(SGLB_P4, defines=defines))
    core_config = CoreConfig(glb=opts.lb == "sglb")
    timers = _Timers(psim)
    msg_ns = int(opts.message_ms * 1e6)
    switches: dict[str, SimSwitch] = {}

    def send(src: str, dst: str, message: Message, now: float) -> None:
        def deliver(now_ns: int) -> None:
            sw = switches[dst]
            sw.execute(sw.core.on_message(src, message, now_ns / 1e9), now_ns / 1e9)
        timers.at(int(now * 1e9) + msg_ns, deliver)

    for s in fabric.switches:
        switches[s.name] = SimSwitch(fabric, s.name, pipeline,
                                     identities[s.name], core_config, send, opts.engine)
    net = network.build(fabric, opts, {n: switch_mac(fabric.switch(n).id).to_bytes(6, "big")
                                       for n in switches})
    for dev, sp in net.ports.items():
        switches[sp.switch].dev_of_port[sp.port] = dev

    # ---- the per-frame path
    ndev = max(net.ports) + 1
    dev_switch: list[SimSwitch] = [switches[net.ports[d].switch] for d in range(ndev)]
    dev_port = [net.ports[d].port for d in range(ndev)]
    host_dev = [net.ports[d].link not in net.links for d in range(ndev)]
    observer = Observer({f.port: f.id for f in flow_list}, opts.sample_us)
    down_links: set[str] = {lk.name for lk in fabric.links if not lk.up}
    for ev in sorted(events, key=lambda e: e.at_s):
        if not ev.down:
            down_links.discard(ev.link)
            continue
        down_links.add(ev.link)
        lk = net.links[ev.link]
        dead = frozenset(
            (s.name, leaf.name) for s in fabric.spines for leaf in fabric.leaves
            if all(x.name in down_links for x in fabric.links_between(leaf.name, s.name)))
        observer.watch(ev.link, int(ev.at_s * 1e9),
                       (net.dev_of[lk.leaf.switch, lk.leaf.port],
                        net.dev_of[lk.spine.switch, lk.spine.port]), dead)
    watched = observer.watched
    hops = [0]

    link_of_dev = [net.ports[d].link for d in range(ndev)]
    # a leaf's uplink device -> (leaf, spine); destination address -> its leaf
    uplink_of_dev: dict[int, tuple[str, str]] = {
        net.dev_of[lk.leaf.switch, lk.leaf.port]: (lk.leaf.switch, lk.spine.switch)
        for lk in fabric.links}
    leaf_of_ip = {n.ip.packed: n.leaf for h in fabric.hosts for n in h.nics}
    first_cut_ns = min((c.at_ns for c in observer.cuts), default=None)
    log = None
    if opts.decisions:
        log = DecisionLog({n: sw for n, sw in switches.items() if sw.core.is_leaf}, dre_shift,
                          {f.port: f.id for f in flow_list},
                          dict(leaf_of_ip),
                          {s.name: s.id for s in fabric.switches})

    def on_frame(dev: int, data: bytes, now_ns: int) -> list[tuple[int, bytes]]:
        hops[0] += 1
        flow = observer.from_host(data, now_ns) if host_dev[dev] else None
        if log is not None and host_dev[dev]:
            sw = dev_switch[dev]
            view = log.before(sw.name, data, now_ns // 1000)
            outs = sw.receive(dev_port[dev], data, now_ns)
            log.after(sw.name, data, view, [dev_port[d] for d, _ in outs if not host_dev[d]])
        else:
            outs = dev_switch[dev].receive(dev_port[dev], data, now_ns)
        for d, frame in outs:
            if host_dev[d]:
                observer.to_host(frame, now_ns)
            else:
                if flow is not None:
                    observer.uplink(flow, link_of_dev[d])
                if d in watched:
                    observer.on_link(d, frame, now_ns)
                elif (first_cut_ns is not None and now_ns >= first_cut_ns
                      and d in uplink_of_dev):
                    observer.to_spine(uplink_of_dev[d], frame, now_ns, leaf_of_ip)
        return outs

    psim.SetCallbacks(on_frame, timers.fire)

    # ---- the control plane: programmed at 0, sessions up, timers and counters
    for sw in switches.values():
        sw.execute(sw.core.start(0.0), 0.0)
        sw.write_plan()
    for sw in switches.values():
        for peer in sorted(sw.core.peer_names):
            sw.execute(sw.core.on_session_open(peer, 0.0), 0.0)
    stop_ns = int(opts.stop_s * 1e9)

    def periodic(sw: SimSwitch, period_s: float, what: str) -> None:
        period = int(period_s * 1e9)

        def fire(now_ns: int) -> None:
            now = now_ns / 1e9
            if what == "tick":
                sw.execute(sw.core.tick(now), now)
            else:
                sw.execute(sw.core.on_counters(sw.tx_bytes(), now), now)
            if now_ns + period < stop_ns:
                timers.at(now_ns + period, fire)
        timers.at(period, fire)

    for sw in switches.values():
        periodic(sw, TICK_S, "tick")
        periodic(sw, LEAF_COUNTERS_S if sw.core.is_leaf else SPINE_COUNTERS_S, "counters")

    # links down from the start: the port-status packet and the daemon's port event at 0
    for lk in fabric.links:
        if not lk.up:
            _link_event(net, switches, timers, lk.name, 0, False, 0, 0)
    for ev in events:
        at = int(ev.at_s * 1e9)
        _link_event(net, switches, timers, ev.link, at, not ev.down, int(opts.detect_us * 1e3),
                    int(opts.port_event_ms * 1e6))

    # ---- hosts' applications
    rng = random.Random(opts.seed)
    starts = {}
    for f in flow_list:
        dst, src = net.host_nodes[f.dst], net.host_nodes[f.src]
        sink = ns.PacketSinkHelper("ns3::TcpSocketFactory",
                                   ns.InetSocketAddress(ns.Ipv4Address.GetAny(), f.port).ConvertTo())
        sapps = sink.Install(dst)
        sapps.Start(ns.Seconds(0.0))
        bulk = ns.BulkSendHelper("ns3::TcpSocketFactory",
                                 ns.InetSocketAddress(ns.Ipv4Address(f.dst_ip), f.port).ConvertTo())
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(f.nbytes))
        bulk.SetAttribute("Local", ns.AddressValue(
            ns.InetSocketAddress(ns.Ipv4Address(f.src_ip), 0).ConvertTo()))
        apps = bulk.Install(src)
        start = opts.start_s + rng.uniform(0, 1e-6)  # the testbed's common start, ties broken
        starts[f.id] = start
        apps.Start(ns.Seconds(start))
        psim.HookFlow(sapps.Get(0), apps.Get(0), f.id, f.nbytes, start)

    # ---- samples of every fabric link's bytes (the plot) and progress
    link_devs = sorted((name, net.dev_of[lk.leaf.switch, lk.leaf.port],
                        net.dev_of[lk.spine.switch, lk.spine.port]) for name, lk in net.links.items())
    samples: list[tuple[float, list[int], list[int]]] = []
    sample_ns = int(opts.sample_us * 1e3)

    def sample(now_ns: int) -> None:
        # bytes that crossed each link: received by its spine end (up), its leaf end (down)
        samples.append((now_ns / 1e9, [int(psim.RxBytes(b)) for _, _, b in link_devs],
                        [int(psim.RxBytes(a)) for _, a, _ in link_devs]))
        if progress is not None:
            progress(now_ns / 1e9)
        if not psim.AllDone() and now_ns + sample_ns < stop_ns:
            timers.at(now_ns + sample_ns, sample)
    timers.at(0, sample)

    psim.StopWhenDone(10e-6)
    ns.Simulator.Stop(ns.Seconds(opts.stop_s))
    setup = time.monotonic() - wall0
    ns.Simulator.Run()
    if psim.Error():
        err = psim.TakeError()
        ns.Simulator.Destroy()
        raise err
    end_s = ns.Simulator.Now().GetSeconds()
    wall = time.monotonic() - wall0
    result = _results(fabric_in, opts, flow_list, starts, psim, observer, net, switches,
                      link_devs, samples, end_s)
    if log is not None:
        result["decisions"] = log.records
    ns.Simulator.Destroy()
    result["_wall"] = {"setup_s": setup, "run_s": wall - setup, "packet_hops": hops[0],
                       "hops_per_s": hops[0] / (wall - setup) if wall > setup else 0.0}
    return result


def _link_event(net: network.Network, switches: dict[str, SimSwitch], timers: _Timers,
                link: str, at_ns: int, up: bool, detect_ns: int, daemon_ns: int) -> None:
    """A cut (or repair) at ``at_ns``: the link drops (passes) frames from then on, each
    end's program gets its port-status packet ``detect_ns`` later, its daemon the port
    event ``daemon_ns`` later."""
    from .shim import load

    _, psim = load()
    a, b = net.cut_models[link]
    psim.ScheduleCut(at_ns, a, b, not up)
    lk = net.links[link]
    for end in (lk.leaf, lk.spine):
        sw = switches[end.switch]
        port = end.port

        def dataplane(now_ns: int, sw: SimSwitch = sw, port: int = port) -> list[tuple[int, bytes]]:
            return sw.port_changed(port, up, now_ns)

        def daemon(now_ns: int, sw: SimSwitch = sw, port: int = port) -> None:
            sw.execute(sw.core.on_port_status({port: up}, now_ns / 1e9), now_ns / 1e9)

        timers.at(at_ns + detect_ns, dataplane)
        timers.at(at_ns + daemon_ns, daemon)


def _results(fabric: Fabric, opts: SimOptions, flow_list: list[Flow], starts: dict[int, float],
             psim: Any, observer: Observer, net: network.Network, switches: dict[str, SimSwitch],
             link_devs: list[tuple[str, int, int]], samples: list[tuple[float, list[int], list[int]]],
             end_s: float) -> dict[str, Any]:
    per_flow: list[dict[str, Any]] = []
    done_ns: dict[int, int] = {}
    for f in flow_list:
        done = float(psim.Done(f.id))
        done_ns[f.id] = int(done * 1e9) if done >= 0 else -1
        per_flow.append({
            "id": f.id, "src": f.src, "dst": f.dst, "rail": f.rail, "bytes": f.nbytes,
            "start_s": round(starts[f.id], 9),
            "fct_s": round(done - starts[f.id], 9) if done >= 0 else None,
            "received": int(psim.Got(f.id)),
            "retransmits": int(psim.Retx(f.id)), "timeouts": int(psim.Timeouts(f.id)),
            "reorderings": observer.reorderings.get(f.id, 0),
            "segments": observer.segments.get(f.id, 0),
            "uplinks": dict(sorted(observer.uplinks.get(f.id, {}).items())),
        })
    finished = [p for p in per_flow if p["fct_s"] is not None]
    completion = (max(float(psim.Done(f.id)) for f in flow_list) - opts.start_s
                  if len(finished) == len(per_flow) else None)
    segments = sum(p["segments"] for p in per_flow)
    reorder = sum(p["reorderings"] for p in per_flow)
    links = {}
    for name, a, b in link_devs:
        links[name] = {"gbps": round(net.link_gbps[name], 6),
                       "bytes_up": int(psim.RxBytes(b)), "bytes_down": int(psim.RxBytes(a)),
                       "drops": int(psim.QueueDrops(a) + psim.QueueDrops(b) + psim.Drops(a)
                                    + psim.Drops(b)),
                       "ecn_marks": int(psim.Marks(a) + psim.Marks(b))}
    return {
        "fabric": fabric.name,
        "options": _options_json(opts),
        "completion_s": round(completion, 9) if completion is not None else None,
        "finished": len(finished), "flows_total": len(per_flow),
        "end_s": round(end_s, 9),
        "retransmits": sum(p["retransmits"] for p in per_flow),
        "timeouts": sum(p["timeouts"] for p in per_flow),
        "reorderings": reorder, "segments": segments,
        "reordering_fraction": round(reorder / segments, 6) if segments else 0.0,
        "links": links,
        "host_port_drops": {sp.link: int(psim.QueueDrops(d) + psim.Drops(d))
                            for d, sp in sorted(net.ports.items())
                            if sp.link not in net.links and psim.QueueDrops(d) + psim.Drops(d)},
        "failures": observer.recovery(done_ns),
        "switch_writes": {n: sw.writes for n, sw in sorted(switches.items())},
        "dataplane_events": {n: {Event(i).name.lower(): c for i, (c, _) in sorted(
            sw.counter("SglbIngress.events").items()) if c and i in _EVENTS}
            for n, sw in sorted(switches.items())},
        "dataplane_drops": {n: _drops(sw) for n, sw in sorted(switches.items())},
        "control_events": {n: dict(sorted(sw.events.items())) for n, sw in sorted(switches.items())},
        "flows": per_flow,
        "samples": {"links": [n for n, _, _ in link_devs],
                    "t_s": [round(t, 9) for t, _, _ in samples],
                    "bytes_up": [u for _, u, _ in samples], "bytes_down": [d for _, _, d in samples]},
    }


def _drops(sw: SimSwitch) -> dict[str, int]:
    """Packets the program dropped, by reason (ingress and egress counters added)."""
    out: dict[str, int] = {}
    for name in ("SglbIngress.drops", "SglbEgress.egress_drops"):
        for i, (packets, _) in sw.counter(name).items():
            if packets and i in _DROPS:
                key = DropReason(i).name.lower()
                out[key] = out.get(key, 0) + packets
    return dict(sorted(out.items()))


def _options_json(opts: SimOptions) -> dict[str, Any]:
    d = dataclasses.asdict(opts)
    d["events"] = [{"link": e.link, "at_s": e.at_s, "down": e.down} for e in opts.events]
    d["settings"] = dict(opts.settings)
    d["defines"] = dict(opts.defines)
    return d


__all__ = ["FabricError", "LinkEvent", "OptionError", "SimOptions", "run", "scaled"]
