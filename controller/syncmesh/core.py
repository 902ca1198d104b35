"""SyncMesh decision logic: events in, actions out, no I/O, an explicit clock.

Every input method takes ``now`` (seconds, from whatever clock the caller
runs: the daemon's wall clock, a test's counter or the simulator's virtual
time) and returns a list of actions for a thin I/O layer to carry out:

* ``Send(peer, message)``: a SyncMesh message to one peer;
* ``Program(ops)``: switch state that changed (``syncmesh.switchops``);
* ``PortStatusOut(port, up, seq)``: a port-status packet for targets that
  need the controller to inject it (BMv2);
* ``Event(name, fields)``: something worth a log line.

A peer's message is validated whole before anything changes; a bad one
raises ``Rejected`` and leaves the state as it was.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fabricmodel import Fabric, Role
from sglb.config import quantise

from .config import CoreConfig
from .linkstate import ZERO, LinkStateTable, PortState, Version
from .messages import FullState, Hello, HelloReply, LinkNotice, Message, ProfileUpdate
from .paths import downlinks, leaf_paths, path_capacity, path_live, peers_of, uplinks
from .peers import PeerTable
from .profiles import Profile, ProfilePublisher, ProfileStore, RateMeter
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


class Rejected(Exception):
    """A peer's message that breaks the protocol; the state was left unchanged."""


@dataclass(frozen=True)
class Send:
    """Send ``message`` to ``peer``."""

    peer: str
    message: Message


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


Action = Send | Program | PortStatusOut | Event


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
    resyncs: int = 0
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
        self.config = config or CoreConfig()
        self.port_status_out = port_status_out
        self.is_leaf = self.switch.role is Role.LEAF
        self.peer_names = peers_of(fabric, me)
        self.peers = PeerTable(self.peer_names, self.config.keepalive_interval,
                               self.config.dead_interval)
        self.links = LinkStateTable(fabric)
        self.store = ProfileStore()
        self.publisher = None if self.is_leaf else ProfilePublisher(
            me, incarnation, self.config.level_bits, self.config.profile_threshold,
            self.config.profile_period)
        self.meter = RateMeter()
        self.ports = fabric.ports(me)
        self.rate_mbps: dict[int, float] = {}
        self.utilisation: dict[int, float] = {}
        self.local_port_up: dict[int, bool] = {}
        self.seq = 0
        self.stats = CoreStats()
        self.programmed: dict[tuple, SwitchOp] = {}
        self._paths = leaf_paths(fabric, me) if self.is_leaf else {}
        self._leaf_ids = {s.name: s.id for s in fabric.leaves}
        self._spines = {s.name for s in fabric.spines}

    # -- local inputs --------------------------------------------------------

    def start(self, now: float) -> list[Action]:
        """Initial switch state and the first Hellos."""
        return self._reprogram() + self.tick(now)

    def on_port_status(self, changes: Mapping[int, bool], now: float) -> list[Action]:
        """Ports of this switch went down (False) or up (True), as seen by the switch."""
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
                    actions.append(PortStatusOut(port, up, self.seq))
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
                actions.append(PortStatusOut(port, up, self.seq))
        if states:
            notice = LinkNotice(self.me, tuple(states))
            actions += [Send(p, notice) for p in self.peer_names]
            actions += self._reprogram()
        return actions

    def on_counters(self, tx_bytes: Mapping[int, int], now: float) -> list[Action]:
        """Cumulative transmitted bytes per port, read from the switch."""
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
            self.publisher.observe(levels)
        return self._publish(now)

    def tick(self, now: float) -> list[Action]:
        """Timers: keepalives, peer timeouts, the profile period."""
        actions: list[Action] = [Send(name, Hello(self.me, self.incarnation, seq))
                                 for name, seq in self.peers.hellos_due(now)]
        dropped = False
        for name in self.peers.expire(now):
            actions.append(_event("peer_down", peer=name))
            # a silent spine's profile is stale: fall back to local congestion only
            dropped |= self.store.drop(name)
        if dropped:
            actions += self._reprogram()
        return actions + self._publish(now)

    def on_send_failed(self, peer: str, now: float) -> list[Action]:
        """A message to ``peer`` was lost: treat the session as down so the next contact resyncs."""
        del now
        if self.peers.mark_unreachable(peer):
            return [_event("peer_unreachable", peer=peer)]
        return []

    # -- peer inputs ---------------------------------------------------------

    def on_hello(self, msg: Hello, now: float) -> tuple[HelloReply, list[Action]]:
        """A peer's Hello: answer it; a (re)joined peer also gets our full state."""
        self._check_peer(msg.sender, "sender")
        self._check_incarnation(msg.incarnation, "incarnation")
        return HelloReply(self.me, self.incarnation), self._heard(msg.sender, msg.incarnation, now)

    def on_hello_reply(self, peer: str, msg: HelloReply, now: float) -> list[Action]:
        """The answer to our Hello to ``peer``."""
        if msg.responder != peer:
            raise Rejected(f"responder: expected {peer!r}, got {msg.responder!r}")
        self._check_incarnation(msg.incarnation, "incarnation")
        return self._heard(peer, msg.incarnation, now)

    def on_notice(self, msg: LinkNotice, now: float) -> tuple[bool, list[Action]]:
        """Link-end states from a peer; returns whether anything changed."""
        self._check_peer(msg.sender, "sender")
        if not msg.states:
            raise Rejected("states: empty notice")
        self._check_states(msg.states, "states")
        self.peers.touch(msg.sender, now)
        actions = self._merge_ports(msg.sender, msg.states, now)
        return bool(actions), actions

    def on_profile(self, msg: ProfileUpdate, now: float) -> tuple[bool, list[Action]]:
        """A spine's congestion profile; returns whether it was news."""
        self._check_peer(msg.sender, "sender")
        self._check_profile(msg.sender, msg.profile, "profile")
        self.peers.touch(msg.sender, now)
        return self._merge_profile(msg.profile)

    def on_resync(self, msg: FullState, now: float) -> tuple[FullState, list[Action]]:
        """A (re)joining peer's full state: merge it and answer with ours."""
        self._check_full_state(msg)
        actions = self._heard(msg.sender, msg.incarnation, now, send_state=False)
        return self.full_state(), actions + self._merge_full_state(msg, now)

    def on_resync_reply(self, peer: str, msg: FullState, now: float) -> list[Action]:
        """The full state a peer answered our resync with."""
        if msg.sender != peer:
            raise Rejected(f"sender: expected {peer!r}, got {msg.sender!r}")
        self._check_full_state(msg)
        return (self._heard(peer, msg.incarnation, now, send_state=False)
                + self._merge_full_state(msg, now))

    # -- views ---------------------------------------------------------------

    def full_state(self) -> FullState:
        """What we send a (re)joining peer: every known link-end record and our profile."""
        ports = tuple(st for st in self.links.states() if st.epoch > ZERO)
        latest = self.publisher.latest() if self.publisher else None
        return FullState(self.me, self.incarnation, ports, (latest,) if latest else ())

    def link_view(self) -> dict[str, bool]:
        """Every link's state as this switch believes it, by link name."""
        return {lk.name: self.links.link_up(lk) for lk in self.fabric.links}

    def remote_level(self, spine: str, dst_leaf: int) -> int:
        """The remote congestion level reported by ``spine`` toward ``dst_leaf`` (0: none)."""
        prof = self.store.get(spine)
        return prof.as_dict().get(dst_leaf, 0) if prof else 0

    def desired(self) -> dict[tuple, SwitchOp]:
        """The complete switch state this daemon wants now, by key."""
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
            for dst, paths in self._paths.items():
                did = self._leaf_ids[dst]
                for p in paths:
                    live = path_live(p, self.links.link_up)
                    cap = path_capacity(fab, p, self.links.link_up) if live else 0.0
                    ops.append(PathEntry(did, p.index, p.port, live, cap))
                    ops.append(RemoteCongestion(did, p.index, self.remote_level(p.spine, did)))
        else:
            first_live: list[int] = []
            for leaf in fab.leaves:
                live_ports = tuple(lk.spine.port for lk in downlinks(fab, self.me, leaf.name)
                                   if self.links.link_up(lk))
                ops.append(SpineRoute(leaf.id, live_ports))
                first_live += live_ports[:1]
                bundle = [lk.spine.port for lk in downlinks(fab, self.me, leaf.name)]
                ops += [PortPeer(p, leaf.id, tuple(q for q in bundle if q != p)) for p in bundle]
            # notices go to every leaf this spine still reaches, once each
            ops.append(MulticastGroup(NOTICE_GROUP, tuple(first_live)))
        return {op.key: op for op in ops}

    # -- internals -----------------------------------------------------------

    def _heard(self, peer: str, incarnation: int, now: float,
               send_state: bool = True) -> list[Action]:
        if not self.peers.heard_from(peer, incarnation, now):
            return []
        self.stats.resyncs += 1
        actions: list[Action] = [_event("peer_up", peer=peer, incarnation=incarnation)]
        if send_state:
            actions.append(Send(peer, self.full_state()))
        return actions

    def _merge_ports(self, sender: str, states: Iterable[PortState], now: float) -> list[Action]:
        accepted = []
        for st in states:
            if self.links.merge(st):
                accepted.append(st)
                if st.switch != self.me and st.detected_at > 0:
                    self.stats.convergence.append(max(0.0, now - st.detected_at))
            else:
                self.stats.notices_stale += 1
        if not accepted:
            return []
        self.stats.notices_accepted += len(accepted)
        actions: list[Action] = [
            _event("link_state", origin=st.switch, port=st.port, up=st.up, epoch=tuple(st.epoch),
                   via=sender) for st in accepted]
        if not self.is_leaf:
            # spines relay news to the leaves, so a leaf's notice reaches every leaf in 2 hops
            origins = {st.switch for st in accepted}
            notice = LinkNotice(self.me, tuple(accepted))
            actions += [Send(p, notice) for p in self.peer_names
                        if p != sender and p not in origins]
        return actions + self._reprogram()

    def _merge_profile(self, profile: Profile) -> tuple[bool, list[Action]]:
        if not self.store.merge(profile):
            self.stats.profiles_stale += 1
            return False, []
        self.stats.profiles_accepted += 1
        return True, self._reprogram()

    def _merge_full_state(self, msg: FullState, now: float) -> list[Action]:
        actions = self._merge_ports(msg.sender, msg.ports, now)
        for prof in msg.profiles:
            actions += self._merge_profile(prof)[1]
        return actions

    def _publish(self, now: float) -> list[Action]:
        if self.publisher is None:
            return []
        prof = self.publisher.due(now)
        if prof is None:
            return []
        update = ProfileUpdate(self.me, prof)
        return [Send(p, update) for p in self.peer_names]

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

    # -- validation (raises Rejected before anything changes) ---------------

    def _check_peer(self, name: str, where: str) -> None:
        if name not in self.peers.peers:
            if any(s.name == name for s in self.fabric.switches):
                raise Rejected(f"{where}: {name!r} is not a peer of {self.me!r}")
            raise Rejected(f"{where}: unknown switch {name!r}")

    @staticmethod
    def _check_incarnation(incarnation: int, where: str) -> None:
        if incarnation <= 0:
            raise Rejected(f"{where}: must be positive, got {incarnation}")

    def _check_states(self, states: Iterable[PortState], where: str) -> None:
        for i, st in enumerate(states):
            if not self.links.knows(st.switch, st.port):
                raise Rejected(f"{where}[{i}]: {st.switch}:{st.port} is not a fabric link end")
            self._check_incarnation(st.epoch.incarnation, f"{where}[{i}].epoch.incarnation")
            if not math.isfinite(st.detected_at) or st.detected_at < 0:
                raise Rejected(f"{where}[{i}].detected_at: bad time {st.detected_at}")

    def _check_profile(self, sender: str, prof: Profile, where: str) -> None:
        if prof.origin != sender:
            raise Rejected(f"{where}.origin: {prof.origin!r} is not the sender {sender!r}")
        if prof.origin not in self._spines:
            raise Rejected(f"{where}.origin: only spines publish profiles, {prof.origin!r} "
                           "is a leaf")
        self._check_incarnation(prof.version.incarnation, f"{where}.version.incarnation")
        if prof.bits != self.config.level_bits:
            raise Rejected(f"{where}.bits: {prof.bits} differs from this daemon's "
                           f"{self.config.level_bits}")
        leaf_ids = set(self._leaf_ids.values())
        seen = set()
        for i, (dst, level) in enumerate(prof.levels):
            if dst not in leaf_ids:
                raise Rejected(f"{where}.entries[{i}].dst_leaf: no leaf with id {dst}")
            if dst in seen:
                raise Rejected(f"{where}.entries[{i}].dst_leaf: leaf {dst} listed twice")
            seen.add(dst)
            if not 0 <= level <= self.config.max_level:
                raise Rejected(f"{where}.entries[{i}].level: {level} out of range "
                               f"0..{self.config.max_level}")

    def _check_full_state(self, msg: FullState) -> None:
        self._check_peer(msg.sender, "sender")
        self._check_incarnation(msg.incarnation, "incarnation")
        self._check_states(msg.ports, "ports")
        for i, prof in enumerate(msg.profiles):
            self._check_profile(msg.sender, prof, f"profiles[{i}]")
