"""SyncMesh decision logic: events in, actions out, no I/O, an explicit clock.

Every input method takes ``now`` (seconds of the wall clock in the daemon,
of a virtual clock in tests and the simulator) and returns a list of actions
for a thin I/O layer to carry out:

* ``Send(peer, message)``: a SyncMesh message to one peer, on its session;
* ``Disconnect(peer)``: end the peer's session (it went silent), so that
  the next one starts with a Hello and a full resync;
* ``Program(ops)``: switch state that changed (``syncmesh.switchops``);
* ``PortStatusOut(port, up, seq)``: a port-status packet for targets that
  need the controller to inject it (BMv2);
* ``Event(name, fields)``: something worth a log line.

Messages from peers come with the peer's name as the session established
it (its certificate); ``syncmesh.admission`` checks each whole message
before anything changes, and a bad one raises ``Rejected`` with the state
left as it was.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fabricmodel import Fabric, Link, Role
from sglb.config import quantise

from .admission import Admission, Rejected
from .config import CoreConfig
from .linkstate import ZERO, LinkStateTable, PortState, Version
from .messages import Hello, LinkNotice, Message, ProfileUpdate, ResyncChunk
from .paths import downlinks, leaf_paths, path_capacity, path_live, peers_of, uplinks
from .peers import PeerTable
from .profiles import ProfilePublisher, ProfileStore, RateMeter
from .switchops import (
    NOTICE_GROUP,
    HostRoute,
    LeafRoute,
    MulticastGroup,
    PathEntry,
    PortCapacity,
    PortPeer,
    RemoteCongestion,
    SpinePaths,
    SpineRoute,
    SwitchConfig,
    SwitchOp,
)

__all__ = ["Action", "CoreStats", "Disconnect", "Event", "PortStatusOut", "Program",
           "Rejected", "Send", "SyncMeshCore"]


@dataclass(frozen=True)
class Send:
    """Send ``message`` to ``peer``."""

    peer: str
    message: Message


@dataclass(frozen=True)
class Disconnect:
    """End ``peer``'s session."""

    peer: str


@dataclass(frozen=True)
class Program:
    """Write these (changed) entries into the switch."""

    ops: tuple[SwitchOp, ...]


@dataclass(frozen=True)
class PortStatusOut:
    """Inject a port-status packet into the switch (targets that do not do it themselves)."""

    port: int
    up: bool
    seq: int


@dataclass(frozen=True)
class Event:
    """Something that happened, for the logs."""

    name: str
    fields: tuple[tuple[str, Any], ...] = ()

    def get(self, key: str, default: Any = None) -> Any:
        """The value of one field."""
        return dict(self.fields).get(key, default)


Action = Send | Disconnect | Program | PortStatusOut | Event


def _event(name: str, **fields: Any) -> Event:
    return Event(name, tuple(fields.items()))


@dataclass
class CoreStats:
    """Counters the metrics endpoint exports."""

    failovers: int = 0
    """Paths that went from live to dead."""
    notices_accepted: int = 0
    notices_stale: int = 0
    profiles_accepted: int = 0
    profiles_stale: int = 0
    profiles_gap: int = 0
    """Deltas whose base version was not held (ignored until the next whole profile)."""
    resyncs: int = 0
    resync_chunks: int = 0
    stalls: int = 0
    """Ticks that found this daemon had not run for longer than a keepalive interval."""
    convergence: deque[float] = field(default_factory=lambda: deque(maxlen=1024))
    """Seconds from a remote link change being seen to it being accepted here."""


class SyncMeshCore:
    """The SyncMesh state machine of one switch."""

    def __init__(self, fabric: Fabric, me: str, incarnation: int,
                 config: CoreConfig | None = None, *, port_status_out: bool = False):
        try:
            self.switch = fabric.switch(me)
        except KeyError:
            raise ValueError(f"switch {me!r} is not in fabric {fabric.name!r} "
                             f"(switches: {', '.join(s.name for s in fabric.switches)})") from None
        if incarnation <= 0:
            raise ValueError("incarnation must be positive")
        self.fabric = fabric
        self.me = me
        self.incarnation = incarnation
        self.config = cfg = config or CoreConfig()
        self.port_status_out = port_status_out
        self.is_leaf = self.switch.role is Role.LEAF
        self.peer_names = peers_of(fabric, me)
        self.peers = PeerTable(self.peer_names, cfg.keepalive_interval, cfg.dead_interval)
        self.links = LinkStateTable(fabric)
        self.admission = Admission(fabric, me, cfg, self.links, self.peers)
        self.store = ProfileStore(cfg.max_level, cfg.profile_stale_after, cfg.profile_age_step)
        self.publisher = None if self.is_leaf else ProfilePublisher(
            me, incarnation, cfg.level_bits, cfg.profile_threshold, cfg.profile_period)
        self.meter = RateMeter(cfg.rate_decay)
        self.ports = fabric.ports(me)
        self.rate_mbps: dict[int, float] = {}
        self.utilisation: dict[int, float] = {}
        self.local_port_up: dict[int, bool] = {}
        self.seq = 0
        self._port_status_sent: dict[int, PortStatusOut] = {}
        """Per port, the last port-status packet asked for (``port_status_again`` repeats it)."""
        self.stats = CoreStats()
        self.programmed: dict[tuple, SwitchOp] = {}
        self.view: dict[str, bool] = {lk.name: lk.up for lk in fabric.links}
        """Every link's state as this daemon believes it."""
        self.view_changed_at: dict[str, float] = {}
        """When (this daemon's clock) its belief about a link last changed."""
        self._now = 0.0
        self._last_tick: float | None = None
        self._paths = leaf_paths(fabric, me) if self.is_leaf else {}
        self._leaf_ids = {s.name: s.id for s in fabric.leaves}
        self._bundles = () if self.is_leaf else tuple(
            (leaf.id, downlinks(fabric, me, leaf.name)) for leaf in fabric.leaves)
        self._static_ops = self._static()

    # -- local inputs --------------------------------------------------------

    def start(self, now: float) -> list[Action]:
        """Initial switch state and timers."""
        self._now = now
        return self._reprogram() + self.tick(now)

    def on_port_status(self, changes: Mapping[int, bool], now: float) -> list[Action]:
        """Ports of this switch went down (False) or up (True), as seen by the switch."""
        self._now = now
        actions: list[Action] = []
        states = []
        for port, up in sorted(changes.items()):
            info = self.ports.get(port)
            if info is None:
                actions.append(_event("unknown_port", port=port, up=up))
                continue
            self.local_port_up[port] = up
            if info.kind == "host":
                actions.append(_event("host_port_up" if up else "host_port_down", port=port,
                                      host=info.peer))
                if self.port_status_out:  # the program tracks host ports' liveness too
                    self.seq += 1
                    actions.append(self._port_status(port, up))
                continue
            rec = self.links.get(self.me, port)
            if rec.up == up and rec.epoch.incarnation == self.incarnation:
                continue  # nothing new
            self.seq += 1
            st = PortState(self.me, port, up, Version(self.incarnation, self.seq), now)
            self.links.merge(st)
            states.append(st)
            actions.append(_event("port_up" if up else "port_down", port=port,
                                  link=self.links.link_of(self.me, port).name, seq=self.seq))
            if self.port_status_out:
                actions.append(self._port_status(port, up))
        if states:
            self._note_view((self.links.link_of(self.me, st.port) for st in states), now)
            notice = LinkNotice(tuple(states))
            actions += [Send(p, notice) for p in self.peers.up()]
            actions += self._reprogram()
        return actions

    def _port_status(self, port: int, up: bool) -> PortStatusOut:
        out = PortStatusOut(port, up, self.seq)
        self._port_status_sent[port] = out
        return out

    def port_status_again(self, now: float) -> list[Action]:
        """The last port-status packet of every port again, unchanged (same sequence number):
        the switch (re)connected, and one sent while it was away is lost, or it restarted and
        forgot them all. The program counts a repeat as a duplicate and changes nothing."""
        self._now = now
        if not self.port_status_out:
            return []
        return [out for _, out in sorted(self._port_status_sent.items())]

    def on_counters(self, tx_bytes: Mapping[int, int], now: float) -> list[Action]:
        """Cumulative transmitted bytes per port, read from the switch."""
        self._now = now
        for port, rate in self.meter.update(tx_bytes, now).items():
            info = self.ports.get(port)
            if info is None:
                continue
            self.rate_mbps[port] = rate
            self.utilisation[port] = rate / info.capacity_mbps
        if self.publisher is None:
            return []
        levels = dict(self.publisher.current or {})
        for leaf in self.fabric.leaves:
            live = [lk for lk in downlinks(self.fabric, self.me, leaf.name)
                    if self.links.link_up(lk)]
            if not live:
                levels[leaf.id] = self.config.max_level
            elif all(lk.spine.port in self.rate_mbps for lk in live):
                load = sum(self.rate_mbps[lk.spine.port] for lk in live)
                cap = sum(lk.capacity_mbps for lk in live)
                levels[leaf.id] = quantise(load / cap, self.config.level_bits)
        if levels:
            self.publisher.observe(levels, now)
        return self._publish(now)

    def tick(self, now: float) -> list[Action]:
        """Timers: keepalives, peer timeouts, the profile period, profile ageing."""
        self._now = now
        actions: list[Action] = []
        if self._last_tick is not None and now - self._last_tick > self.config.keepalive_interval:
            # this daemon did not run: the peers' messages wait unread, not their fault
            self.stats.stalls += 1
            self.peers.forgive(now - self._last_tick, now)
            actions.append(_event("stalled", seconds=round(now - self._last_tick, 3)))
        self._last_tick = now
        actions += [Send(name, Hello(self.incarnation, seq))
                    for name, seq in self.peers.hellos_due(now)]
        for name in self.peers.expire(now):
            actions += [_event("peer_down", peer=name, why="silent"), Disconnect(name)]
        if self.store.ageing(now):
            actions += self._reprogram()
        return actions + self._publish(now)

    def on_session_open(self, peer: str, now: float) -> list[Action]:
        """A session with ``peer`` opened: it starts with our Hello."""
        self.admission.check_peer(peer)
        self._now = now
        return [Send(peer, Hello(self.incarnation, self.peers.next_hello(peer, now)))]

    def on_peer_lost(self, peer: str, now: float) -> list[Action]:
        """``peer``'s session ended (closed, failed, or a message to it could not be sent)."""
        self._now = now
        if self.peers.lost(peer):
            return [_event("peer_down", peer=peer, why="session ended")]
        return []

    # -- peer inputs (``peer``: the session's authenticated switch) --------------

    def on_message(self, peer: str, msg: Message, now: float) -> list[Action]:
        """Any message from ``peer``."""
        if isinstance(msg, Hello):
            return self.on_hello(peer, msg, now)
        if isinstance(msg, LinkNotice):
            return self.on_notice(peer, msg, now)
        if isinstance(msg, ProfileUpdate):
            return self.on_profile(peer, msg, now)
        return self.on_resync(peer, msg, now)

    def on_hello(self, peer: str, msg: Hello, now: float) -> list[Action]:
        """A peer's Hello: a (re)joining peer gets our full state."""
        self.admission.check_hello(peer, msg, now)
        self._now = now
        if not self.peers.hello(peer, msg.incarnation, now):
            return []
        self.stats.resyncs += 1
        return [_event("peer_up", peer=peer, incarnation=msg.incarnation),
                *self._resync_for(peer)]

    def on_notice(self, peer: str, msg: LinkNotice, now: float) -> list[Action]:
        """Link-end states from a peer."""
        session = self.admission.session(peer)
        if not msg.states:
            raise Rejected("notice.states: empty notice")
        self.admission.check_states(peer, session, msg.states, now, "notice.states")
        self._now = now
        self.peers.touch(peer, now)
        return self._merge_ports(peer, msg.states, now)

    def on_profile(self, peer: str, msg: ProfileUpdate, now: float) -> list[Action]:
        """A spine's congestion profile, whole or a delta."""
        session = self.admission.session(peer)
        self.admission.check_profile(peer, session, msg.profile, msg.delta, "profile")
        self._now = now
        self.peers.touch(peer, now)
        if msg.delta:
            applied = self.store.apply_delta(msg.profile, now)
            if applied is None:
                self.stats.profiles_gap += 1
                return [_event("profile_gap", origin=peer, version=tuple(msg.profile.version))]
        else:
            applied = self.store.merge(msg.profile, now)
        if not applied:
            self.stats.profiles_stale += 1
            return []
        self.stats.profiles_accepted += 1
        return self._reprogram()

    def on_resync(self, peer: str, msg: ResyncChunk, now: float) -> list[Action]:
        """One chunk of a (re)joining peer's full state."""
        session = self.admission.session(peer)
        self.admission.check_states(peer, session, msg.ports, now, "resync.ports")
        if msg.profile is not None:
            self.admission.check_profile(peer, session, msg.profile, False, "resync.profile")
        self._now = now
        self.peers.touch(peer, now)
        self.stats.resync_chunks += 1
        actions = self._merge_ports(peer, msg.ports, now) if msg.ports else []
        if msg.profile is not None and self.store.merge(msg.profile, now):
            self.stats.profiles_accepted += 1
            actions += self._reprogram()
        if msg.last:
            actions.append(_event("resynced", peer=peer))
        return actions

    # -- views ---------------------------------------------------------------

    def link_view(self) -> dict[str, bool]:
        """Every link's state as this switch believes it, by link name."""
        return dict(self.view)

    def remote_level(self, spine: str, dst_leaf: int) -> int:
        """The remote congestion level to use for ``spine``'s path toward ``dst_leaf``."""
        return self.store.level(spine, dst_leaf, self._now)

    def desired(self) -> dict[tuple, SwitchOp]:
        """The complete switch state this daemon wants now, by key."""
        ops: list[SwitchOp] = list(self._static_ops)
        link_up = self.links.link_up
        if self.is_leaf:
            for dst, paths in self._paths.items():
                did = self._leaf_ids[dst]
                for p in paths:
                    live = path_live(p, link_up)
                    cap = path_capacity(p, link_up) if live else 0.0
                    ops.append(PathEntry(did, p.index, p.port, live, cap))
                    ops.append(RemoteCongestion(did, p.index, self.remote_level(p.spine, did)))
        else:
            first_live: list[int] = []
            for leaf_id, bundle in self._bundles:
                live_ports = tuple(lk.spine.port for lk in bundle if link_up(lk))
                ops.append(SpineRoute(leaf_id, live_ports))
                first_live += live_ports[:1]
            # notices go to every leaf this spine still reaches, once each
            ops.append(MulticastGroup(NOTICE_GROUP, tuple(first_live)))
        return {op.key: op for op in ops}

    def _static(self) -> tuple[SwitchOp, ...]:
        """The part of the switch state that depends on the fabric alone."""
        fab = self.fabric
        ops: list[SwitchOp] = []
        fabric_ports = sorted(p for p, info in self.ports.items() if info.kind == "fabric")
        for leaf in fab.leaves:
            if leaf.name != self.me:
                ops.append(LeafRoute(str(leaf.subnet), leaf.id))
        ops += [PortCapacity(p, self.ports[p].capacity_mbps) for p in fabric_ports]
        ops.append(SwitchConfig(self.switch.role.value, self.switch.id, self.config.glb,
                                0 if self.is_leaf else NOTICE_GROUP))
        if self.is_leaf:
            ups = uplinks(fab, self.me)
            for slot, spine in enumerate(fab.spines):
                idx = tuple(i for i, lk in enumerate(ups) if lk.spine.switch == spine.name)
                if idx:
                    ops.append(SpinePaths(spine.id, slot, idx))
            for host in fab.hosts:
                for nic in host.nics:
                    if nic.leaf == self.me:
                        ops.append(HostRoute(str(nic.ip), nic.port, nic.mac))
        else:
            for _, bundle in self._bundles:
                ports = [lk.spine.port for lk in bundle]
                ops += [PortPeer(lk.spine.port, self._leaf_ids[lk.leaf.switch],
                                 tuple(q for q in ports if q != lk.spine.port)) for lk in bundle]
        return tuple(ops)

    # -- internals -----------------------------------------------------------

    def _resync_for(self, peer: str) -> list[Action]:
        """Our full state for ``peer``, in chunks: what we may speak for and it does not own."""
        may = self.admission.may_speak
        ports = [st for st in self.links.states()
                 if st.epoch > ZERO and st.switch != peer and may(self.me, st.switch, st.port)]
        latest = self.publisher.latest() if self.publisher else None
        size = self.config.resync_chunk
        chunks = [tuple(ports[i:i + size]) for i in range(0, len(ports), size)] or [()]
        return [Send(peer, ResyncChunk(c, latest if i == 0 else None, i == len(chunks) - 1))
                for i, c in enumerate(chunks)]

    def _merge_ports(self, sender: str, states: Iterable[PortState], now: float) -> list[Action]:
        accepted = []
        for st in states:
            if self.links.merge(st):
                accepted.append(st)
                if st.detected_at > 0:
                    self.stats.convergence.append(max(0.0, now - st.detected_at))
            else:
                self.stats.notices_stale += 1
        if not accepted:
            return []
        self.stats.notices_accepted += len(accepted)
        self._note_view((self.links.link_of(st.switch, st.port) for st in accepted), now)
        actions: list[Action] = [
            _event("link_state", origin=st.switch, port=st.port, up=st.up, epoch=tuple(st.epoch),
                   via=sender) for st in accepted]
        # relay what we may speak for (our links' ends) to the other peers, never to the owner:
        # a leaf's news reaches every leaf in two hops (through each spine it is linked to), a
        # spine's news every other spine (through each leaf on a link of both)
        mine = [st for st in accepted if self.admission.may_speak(self.me, st.switch, st.port)]
        for p in self.peers.up():
            relay = tuple(st for st in mine if st.switch != p)
            if p != sender and relay:
                actions.append(Send(p, LinkNotice(relay)))
        return actions + self._reprogram()

    def _note_view(self, links: Iterable[Link], now: float) -> None:
        for lk in links:
            up = self.links.link_up(lk)
            if self.view[lk.name] != up:
                self.view[lk.name] = up
                self.view_changed_at[lk.name] = now

    def _publish(self, now: float) -> list[Action]:
        if self.publisher is None:
            return []
        pub = self.publisher.due(now)
        if pub is None:
            return []
        update = ProfileUpdate(pub.profile, pub.delta)
        return [Send(p, update) for p in self.peers.up()]

    def _reprogram(self) -> list[Action]:
        new = self.desired()
        changed = tuple(op for key, op in new.items() if self.programmed.get(key) != op)
        actions: list[Action] = []
        for op in changed:
            old = self.programmed.get(op.key)
            if isinstance(op, PathEntry) and isinstance(old, PathEntry) and old.live != op.live:
                if not op.live:
                    self.stats.failovers += 1
                actions.append(_event("path_up" if op.live else "path_down",
                                      dst_leaf=op.dst_leaf, index=op.index, port=op.port))
        self.programmed = new
        return ([Program(changed)] if changed else []) + actions
