"""Event-driven flow-level simulation: rates by max-min fairness, recomputed at events.

Events are flow arrivals, flow completions and the policy's own clock ticks
(SGLB's profile updates and flowlet boundaries). Between events rates are
constant. Completions within ``tolerance`` (relative) of the earliest one are
taken in the same event (the window grows with the age of the running flows),
which bounds the number of re-solves; it only delays the other flows' speed-up
by at most that fraction of their running time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from fabricsim.maxmin import Incidence, max_min_rates
from fabricsim.routing import PathTable
from fabricsim.topology import Network
from fabricsim.workloads import Workload


class SimulationError(RuntimeError):
    """The simulation cannot proceed (no live path, flows that can never finish)."""


@dataclass(eq=False)
class FlowState:
    """Mutable simulation state shared by the engine and the load-balancing policy."""

    net: Network
    paths: PathTable
    wl: Workload
    rng: np.random.Generator
    flow_links: np.ndarray
    """(F, K) links of each flow's current path, -1 padded (access links always set)."""
    src_leaf: np.ndarray
    dst_leaf: np.ndarray
    level: np.ndarray
    """Level of the flow's common ancestor; 0 when both NICs hang off one leaf."""
    rates: np.ndarray
    link_load: np.ndarray
    """Current per-link load in bit/s."""
    link_bits: np.ndarray
    """Bits carried per link since the start."""
    active: np.ndarray
    flow_group: np.ndarray
    group_link: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    group_id: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    group_weight: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def incidence(self, ids: np.ndarray) -> Incidence:
        """Incidence of the given flows as they are routed now."""
        return Incidence(self.net.n_links, self.flow_links[ids], self.flow_group[ids],
                         self.group_link, self.group_id, self.group_weight)


@dataclass(frozen=True, eq=False)
class Result:
    """What one simulation run measured."""

    policy: str
    finish: np.ndarray
    """Completion time of every flow (s)."""
    start: np.ndarray
    coll: np.ndarray
    link_bits: np.ndarray
    makespan: float
    """Time at which the last flow finished (s)."""
    events: int
    solves: int

    def collective_times(self) -> np.ndarray:
        """Completion time of each collective id >= 0 (last finish minus first start), by id."""
        sel = self.coll >= 0
        if not sel.any():
            return np.zeros(0)
        ids, inv = np.unique(self.coll[sel], return_inverse=True)
        last = np.full(len(ids), -np.inf)
        first = np.full(len(ids), np.inf)
        np.maximum.at(last, inv.ravel(), self.finish[sel])
        np.minimum.at(first, inv.ravel(), self.start[sel])
        return last - first

    def utilisation(self, net: Network, links: np.ndarray | None = None) -> np.ndarray:
        """Mean utilisation of each fabric link over the run (bits / (capacity x makespan))."""
        links = net.cable_ids("fabric") if links is None else links
        both = np.concatenate([links, net.reverse_of(links)])
        cap = net.capacity[both]
        live = cap > 0
        return self.link_bits[both][live] / (cap[live] * self.makespan)


class Policy(Protocol):
    """What the engine asks of a load-balancing policy (see ``fabricsim.policies``)."""

    name: str

    def prepare(self, st: FlowState) -> None:
        """Called once before the first flow starts."""

    def place(self, st: FlowState, ids: np.ndarray, now: float) -> None:
        """Route the flows ``ids`` that start at ``now`` (fill ``st.flow_links``)."""

    def next_time(self, now: float) -> float:
        """The policy's next clock tick after ``now`` (inf if none)."""

    def on_time(self, st: FlowState, now: float) -> bool:
        """Handle a clock tick; return True when routes changed."""


def new_state(net: Network, wl: Workload, seed: int, paths: PathTable | None = None) -> FlowState:
    """Initial state: access links known, fabric paths left to the policy."""
    paths = paths or PathTable(net)
    src_leaf = net.leaf_of(wl.src)
    dst_leaf = net.leaf_of(wl.dst)
    level = paths.pair_level(src_leaf, dst_leaf)
    max_level = max(paths.levels) if paths.levels else 1
    k = 2 + 2 * (max_level - 1)
    links = np.full((wl.n_flows, k), -1, np.int64)
    links[:, 0] = net.access_up(wl.src)
    links[:, -1] = net.access_down(wl.dst)
    dead = net.capacity[links[:, 0]] <= 0
    dead |= net.capacity[links[:, -1]] <= 0
    if dead.any():
        i = int(np.flatnonzero(dead)[0])
        raise SimulationError(f"flow {i} starts or ends on a failed NIC link "
                              f"({net.node_names[wl.src[i]]} -> {net.node_names[wl.dst[i]]})")
    return FlowState(net, paths, wl, np.random.default_rng(seed), links, src_leaf, dst_leaf, level,
                     np.zeros(wl.n_flows), np.zeros(net.n_links), np.zeros(net.n_links),
                     np.zeros(wl.n_flows, bool), np.full(wl.n_flows, -1, np.int64))


def simulate(net: Network, wl: Workload, policy: Policy, *, seed: int = 0, tolerance: float = 1e-2,
             paths: PathTable | None = None, max_events: int = 10_000_000) -> Result:
    """Run ``wl`` on ``net`` under ``policy`` until every flow finishes."""
    if not 0 <= tolerance < 1:
        raise SimulationError(f"tolerance must be within [0, 1), got {tolerance}")
    st = new_state(net, wl, seed, paths)
    policy.prepare(st)
    remaining = wl.size * 8.0
    finish = np.full(wl.n_flows, np.nan)
    order = np.argsort(wl.start, kind="stable")
    nxt = 0
    t = 0.0
    events = solves = 0
    dirty = True
    inc = None
    while True:
        if nxt < len(order) and wl.start[order[nxt]] <= t:
            hi = int(np.searchsorted(wl.start[order], t, side="right"))
            new = order[nxt:hi]
            nxt = hi
            policy.place(st, new, t)
            st.active[new] = True
            dirty = True
        act = np.flatnonzero(st.active)
        if dirty:
            st.rates[:] = 0
            if len(act):
                inc = st.incidence(act)
                st.rates[act] = max_min_rates(inc, net.capacity)
                st.link_load = inc.load(st.rates[act])
            else:
                st.link_load = np.zeros(net.n_links)
                inc = None
            solves += 1
            dirty = False
        t_arrival = wl.start[order[nxt]] if nxt < len(order) else np.inf
        t_policy = policy.next_time(t) if len(act) else np.inf
        if not len(act) and nxt >= len(order):
            break
        rate = st.rates[act]
        with np.errstate(divide="ignore"):
            left = np.where(rate > 0, remaining[act] / np.where(rate > 0, rate, 1), np.inf)
        # Batch completions within a window relative to the age of the running flows,
        # which bounds each flow's timing error by ``tolerance`` of its own duration.
        if len(act):
            age = t - wl.start[act].min()
            t_done = t + left.min() + tolerance * max(left.min(), age)
        else:
            t_done = np.inf
        t_next = min(t_arrival, t_policy, t_done)
        if not np.isfinite(t_next):
            i = int(act[np.argmin(rate)])
            raise SimulationError(f"flow {i} ({net.node_names[wl.src[i]]} -> "
                                  f"{net.node_names[wl.dst[i]]}) gets no bandwidth and can never "
                                  "finish")
        dt = t_next - t
        remaining[act] -= rate * dt
        # Rounding can leave a few bits; a flow within 1e-9 of its size is done.
        done = (left <= dt) | (remaining[act] <= 1e-9 * wl.size[act] * 8)
        finish[act[done]] = t + np.minimum(left[done], dt)
        remaining[act[done]] = 0
        if inc is not None:
            st.link_bits += inc.load(rate * np.minimum(left, dt))
        if done.any():
            st.active[act[done]] = False
            dirty = True
        t = t_next
        if t == t_policy and st.active.any():
            dirty |= policy.on_time(st, t)
        events += 1
        if events > max_events:
            raise SimulationError(f"more than {max_events} events; raise tolerance")
    return Result(policy.name, finish, wl.start.copy(), wl.coll.copy(), st.link_bits,
                  float(np.nanmax(finish)), events, solves)
