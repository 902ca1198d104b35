"""Failures during a run: links, NICs and switches fail at given times; each policy reacts late.

A failure takes effect at once (the link carries nothing). The routing learns
of it only after the reacting side's detection and failover delay, from
``fabricsim.measured`` (each named in the run's notes):

* a **fabric link** (switch to switch): the leaf that owns the uplink moves
  its flows after ``local_failover`` (its port goes down in the data plane;
  SGLB and the ECMP baseline alike). A link further along the path is learnt
  from the spine's in-band failure notice after ``remote_failover`` under
  SGLB and spraying, and from the control plane (SyncMesh agreement) after
  ``ecmp_routing_delay`` under ECMP, which then rehashes the flows whose path
  died. Until then flows on a dead path get nothing.
* a **NIC** (its last-hop cable): nothing in the fabric can route around it;
  the host library reacts. ``host="reccl"``: after ``reccl_detection`` the
  rest of every flow from or to that NIC is spread equally over the host's
  live NICs (ReCCL's channel failover; flows that start later go there at
  once). ``host="fail-stop"``: after ``failstop_detection`` every collective
  with a flow on that NIC aborts and starts again from the beginning
  ``restart`` later, on a replaced host (its NIC works again).
* a **switch**: all of its cables. A leaf takes the NICs on it with it (host
  side); a spine only fabric links.
"""

from __future__ import annotations

import heapq
import itertools
import re
from dataclasses import dataclass

import numpy as np

from fabricsim.engine import ACTIVE, DONE, PENDING, REPLACED, FlowState, Policy, SimulationError
from fabricsim.measured import figure, value
from fabricsim.topology import LEVEL_LEAF, LEVEL_NIC, Network, TopologyError

KINDS = ("link", "nic", "switch")
HOST_MODES = ("reccl", "fail-stop")
_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


class FailureError(ValueError):
    """A failure that cannot be applied to the network (unknown target, bad time)."""


@dataclass(frozen=True)
class FailureSpec:
    """One failure: at ``time`` seconds, a ``link`` (a-b or a-b:k), ``nic`` (host/nic) or
    ``switch`` (its name) fails."""

    time: float
    kind: str
    target: str

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise FailureError(f"failure kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if isinstance(self.time, bool) or not isinstance(self.time, int | float) \
                or not np.isfinite(self.time) or self.time < 0:
            raise FailureError(f"failure time must be a number >= 0, got {self.time!r}")


def parse_time(text: str) -> float:
    """Seconds from ``1.5ms``, ``200us``, ``2s`` or ``0.002``."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(us|ms|s)?\s*", text)
    if not m:
        raise FailureError(f"not a time: {text!r} (e.g. 1.5ms, 200us, 0.002)")
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]


def parse_failure(text: str) -> FailureSpec:
    """``TIME:KIND:TARGET``, e.g. ``1ms:link:leaf0-spine1``, ``2ms:nic:h0/nic3``,
    ``0.5ms:switch:spine2``."""
    parts = text.split(":", 2)
    if len(parts) != 3:
        raise FailureError(f"failure {text!r}: write it as TIME:KIND:TARGET "
                           "(e.g. 1ms:link:leaf0-spine1, 2ms:nic:h0/nic3, 1ms:switch:spine2)")
    return FailureSpec(parse_time(parts[0]), parts[1], parts[2])


def cable_links(net: Network, spec: str) -> np.ndarray:
    """Both directed links of the cable ``a-b`` or ``a-b:k`` (k-th parallel cable)."""
    name, _, k = str(spec).partition(":")
    a, sep, b = name.partition("-")
    if not sep:
        raise FailureError(f"cable {spec!r}: write it as a-b or a-b:k")
    if k and not k.isdigit():
        raise FailureError(f"cable {spec!r}: the parallel index after ':' must be a number")
    try:
        ids = net.links_between(a, b)
    except TopologyError as e:
        raise FailureError(str(e)) from None
    idx = int(k) if k else 0
    if idx >= len(ids):
        raise FailureError(f"cable {spec!r}: only {len(ids)} parallel cable(s) between {a} and {b}")
    link = ids[idx:idx + 1]
    return np.concatenate([link, net.reverse_of(link)])


def target_links(net: Network, spec: FailureSpec) -> np.ndarray:
    """Directed links (both directions) that ``spec`` takes down."""
    if spec.kind == "link":
        return cable_links(net, spec.target)
    try:
        node = net.node(spec.target)
    except TopologyError as e:
        raise FailureError(str(e)) from None
    level = int(net.node_level[node])
    if spec.kind == "nic":
        if level != LEVEL_NIC:
            raise FailureError(f"nic {spec.target!r} is not a NIC endpoint (write host/nic)")
    elif level == LEVEL_NIC:
        raise FailureError(f"switch {spec.target!r} is a NIC; use kind nic")
    return np.flatnonzero((net.link_src == node) | (net.link_dst == node))


@dataclass(frozen=True)
class Recovery:
    """Detection and failover delays (s) and what the host library does; defaults measured."""

    local_failover: float = value("local_failover")
    remote_failover: float = value("remote_failover")
    ecmp_routing_delay: float = value("ecmp_routing_delay")
    host: str = "reccl"
    """``reccl`` (channel failover) or ``fail-stop`` (abort, restart from the beginning)."""
    reccl_detection: float = value("reccl_detect_link_down")
    failstop_detection: float = value("failstop_detect")
    restart: float = value("restart")
    """Fail-stop only: from the abort to the collective starting again."""

    def __post_init__(self) -> None:
        if self.host not in HOST_MODES:
            raise FailureError(f"host mode must be one of {', '.join(HOST_MODES)}, "
                               f"got {self.host!r}")
        for name in ("local_failover", "remote_failover", "ecmp_routing_delay",
                     "reccl_detection", "failstop_detection", "restart"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not v >= 0:
                raise FailureError(f"{name} must be a number >= 0, got {v!r}")

    def fabric(self, policy: str, first_hop: bool) -> tuple[float, str]:
        """Delay and its name for a fabric link, as the first hop of its flows or further on."""
        if first_hop:
            return self.local_failover, "local_failover"
        if policy == "ecmp":
            return self.ecmp_routing_delay, "ecmp_routing_delay"
        return self.remote_failover, "remote_failover"

    def host_side(self) -> tuple[float, str]:
        """Delay and its name for a NIC or last-hop failure."""
        if self.host == "reccl":
            return self.reccl_detection, "reccl_detect_link_down"
        return self.failstop_detection, "failstop_detect"


def _named(delay: float, name: str) -> str:
    f = figure(name)
    src = f"{f.kind}: {f.source}" if delay == f.value else "set for this run"
    shown = f"{delay * 1e3:g} ms" if delay < 1 else f"{delay:g} s"
    return f"{shown} ({name}; {src})"


class FailurePlan:
    """The failures of one run and the reactions they cause (the engine's ``Disruptions``)."""

    def __init__(self, net: Network, specs: list[FailureSpec], policy: str,
                 recovery: Recovery | None = None):
        self.net = net
        self.policy = policy
        self.rec = recovery or Recovery()
        self._queue: list[tuple[float, int, str, object]] = []
        self._seq = itertools.count()
        self._notes: list[dict] = []
        access = net.node_level[net.link_src] == LEVEL_NIC
        access |= net.node_level[net.link_dst] == LEVEL_NIC
        self._access = access
        self._dead_nics: set[int] = set()
        for spec in sorted(specs, key=lambda s: s.time):
            links = target_links(net, spec)
            self._push(spec.time, "fail", (spec, links))

    def _push(self, t: float, what: str, payload: object) -> None:
        heapq.heappush(self._queue, (t, next(self._seq), what, payload))

    def next_time(self) -> float:
        """Time of the next failure or reaction."""
        return self._queue[0][0] if self._queue else np.inf

    def notes(self) -> tuple[dict, ...]:
        """Failures, detections and failovers with their times and named delays."""
        return tuple(self._notes)

    def _note(self, t: float, event: str, **kw) -> None:
        self._notes.append({"time": t, "event": event, **kw})

    # -- actions ---------------------------------------------------------------------------
    def on_time(self, st: FlowState, policy: Policy, now: float) -> bool:
        """Apply every action due at ``now``."""
        changed = False
        while self._queue and self._queue[0][0] <= now:
            _, _, what, payload = heapq.heappop(self._queue)
            if what == "fail":
                changed |= self._fail(st, now, *payload)
            elif what == "view":
                links, alive, name = payload
                st.view[links] = st.capacity[links] if alive else 0.0
                before = st.flow_links.copy()
                changed |= bool(policy.on_view(st, now, links))
                moved = int(np.any(st.flow_links != before, axis=1).sum())
                self._note(now, f"{self.policy} reroutes", after=name, flows_moved=moved)
            elif what == "host":
                changed |= self._host(st, now, payload)
            elif what == "restart":
                changed |= self._restart(st, policy, now, payload)
        return changed

    def _fail(self, st: FlowState, now: float, spec: FailureSpec, links: np.ndarray) -> bool:
        st.capacity[links] = 0.0
        net = self.net
        access = links[self._access[links]]
        fabric = links[~self._access[links]]
        reactions = []
        if len(fabric):
            first = net.node_level[net.link_src[fabric]] == LEVEL_LEAF
            for is_first in (True, False):
                part = fabric[first == is_first]
                if len(part):
                    delay, name = self.rec.fabric(self.policy, is_first)
                    self._push(now + delay, "view", (part, False, name))
                    what = "its own uplink" if is_first else "a link further on"
                    reactions.append(f"{self.policy} moves flows off {what} after "
                                     f"{_named(delay, name)}")
        if len(access):
            nics = np.unique(np.where(net.node_level[net.link_src[access]] == LEVEL_NIC,
                                      net.link_src[access], net.link_dst[access]))
            delay, name = self.rec.host_side()
            self._push(now + delay, "host", nics)
            if self.rec.host == "reccl":
                reactions.append(f"{len(nics)} NIC(s) down: reccl fails over to the hosts' "
                                 f"other NICs after {_named(delay, name)}")
            else:
                reactions.append(f"{len(nics)} NIC(s) down: fail-stop aborts the collective "
                                 f"after {_named(delay, name)} and restarts it "
                                 f"{_named(self.rec.restart, 'restart')} later")
        self._note(now, f"{spec.kind} {spec.target} down", reactions=reactions)
        return True

    def _host(self, st: FlowState, now: float, nics: np.ndarray) -> bool:
        net = self.net
        self._dead_nics.update(int(n) for n in nics)
        dead_links = np.concatenate([net.access_up(nics), net.access_down(nics)])
        st.view[dead_links] = 0.0
        hit = self._touching(st, np.flatnonzero(st.active))
        if self.rec.host == "reccl":
            parts = self._spread(st, hit, now)
            self._note(now, "reccl failover", flows=len(hit), parts=len(parts))
            return bool(len(hit))
        colls = self._abort(st, hit, now)
        self._note(now, "fail-stop abort", collectives=len(colls),
                   restart_at=now + self.rec.restart)
        return bool(len(hit))

    def _touching(self, st: FlowState, ids: np.ndarray) -> np.ndarray:
        """Flows among ``ids`` whose source or destination NIC is known dead."""
        if not self._dead_nics or not len(ids):
            return ids[:0]
        dead = np.fromiter(self._dead_nics, np.int64)
        return ids[np.isin(st.src[ids], dead) | np.isin(st.dst[ids], dead)]

    def _live_nics(self, host_row: np.ndarray) -> np.ndarray:
        live = host_row[[int(n) not in self._dead_nics for n in host_row]]
        return live

    def _spread(self, st: FlowState, ids: np.ndarray, now: float) -> np.ndarray:
        """ReCCL: the rest of each flow moves, in equal parts, to its hosts' live NICs."""
        if not len(ids):
            return ids
        net = self.net
        host_of = np.full(len(net.node_names), -1)
        host_of[net.nic_node.ravel()] = np.repeat(np.arange(net.n_hosts), net.n_rails)
        src, dst, size, coll, root = [], [], [], [], []
        for i in ids:
            s_opts = [st.src[i]] if int(st.src[i]) not in self._dead_nics else \
                self._live_nics(net.nic_node[host_of[st.src[i]]])
            d_opts = [st.dst[i]] if int(st.dst[i]) not in self._dead_nics else \
                self._live_nics(net.nic_node[host_of[st.dst[i]]])
            if not len(s_opts) or not len(d_opts):
                h = host_of[st.src[i]] if not len(s_opts) else host_of[st.dst[i]]
                raise SimulationError(f"host {net.host_names[h]} has no live NIC left: "
                                      "ReCCL cannot fail over")
            pairs = [(a, b) for a in s_opts for b in d_opts]
            bytes_left = st.remaining[i] / 8.0 if st.status[i] == ACTIVE else st.size[i]
            for a, b in pairs:
                src.append(a)
                dst.append(b)
                size.append(bytes_left / len(pairs))
                coll.append(st.coll[i])
                root.append(st.root[i])
        st.status[ids] = REPLACED
        st.rates[ids] = 0.0
        new = st.add_flows(np.array(src), np.array(dst), np.array(size), now, np.array(coll),
                           np.array(root))
        st.arrivals.append(new)
        return new

    def _abort(self, st: FlowState, hit: np.ndarray, now: float) -> set[int]:
        """Fail-stop: every collective with a flow on a dead NIC stops and restarts later."""
        colls = {int(c) for c in st.coll[hit] if c >= 0}
        lone = hit[st.coll[hit] < 0]
        mask = np.isin(st.coll, list(colls)) & (st.status != REPLACED) if colls else \
            np.zeros(st.n_flows, bool)
        mask[lone] = True
        victims = np.flatnonzero(mask & ((st.status == ACTIVE) | (st.status == DONE)
                                         | (st.status == PENDING)))
        roots = np.unique(st.root[victims])
        st.status[victims] = REPLACED
        st.rates[victims] = 0.0
        t_restart = now + self.rec.restart
        nics = np.fromiter(self._dead_nics, np.int64)
        self._push(t_restart, "restart", (roots, nics))
        return colls | ({-1} if len(lone) else set())

    def _restart(self, st: FlowState, policy: Policy, now: float, payload) -> bool:
        roots, nics = payload
        net = self.net
        # The scheduler restarts on a replaced host: its NIC links work again.
        links = np.concatenate([net.access_up(nics), net.access_down(nics)])
        st.capacity[links] = net.capacity[links]
        st.view[links] = net.capacity[links]
        self._dead_nics.difference_update(int(n) for n in nics)
        wl = st.wl
        new = st.add_flows(wl.src[roots], wl.dst[roots], wl.size[roots], now, wl.coll[roots],
                           roots)
        st.arrivals.append(new)
        self._note(now, "fail-stop restart", flows=len(roots))
        return True

    def admit(self, st: FlowState, ids: np.ndarray, now: float) -> np.ndarray:
        """Flows starting now: ReCCL sends those of a known-dead NIC over the live ones at once."""
        if self.rec.host != "reccl":
            return ids
        hit = self._touching(st, ids)
        if not len(hit):
            return ids
        parts = self._spread(st, hit, now)
        st.arrivals.pop()            # the parts start now, with the others
        return np.concatenate([np.setdiff1d(ids, hit), parts])
