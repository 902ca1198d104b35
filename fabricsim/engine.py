"""Event-driven flow-level simulation: rates by max-min fairness, recomputed at events.

Events are flow arrivals, flow completions, the policy's own clock ticks
(SGLB's profile updates and flowlet boundaries) and, when a run has them,
failures and the reactions to them (``fabricsim.failures``). Between events
rates are constant.

**Error bound.** Completions close together may be taken in one event (one
re-solve) instead of one each. The engine keeps, per flow, a first-order
estimate of how far its completion time is off (``drift``): a flow whose rate
moves from r to r' ``w`` seconds late is off by ``w (r' - r) / r'`` (the bits
it missed or gained, at its new rate); the same holds when the change is
late because the flow whose completion caused it was itself off, so the
finishing flows pass their drift on. A window is taken only while every
running flow's |drift| stays within ``tolerance`` x its running time so far
(room is left for the first finisher's own drift); a window that would still
overspend is undone and the step taken exactly. No window may push a running
flow's drift past ``tolerance`` x the shortest possible running time (bytes
at NIC rate) of a flow still to come, which will feel it. So every flow's
completion time stays within ``tolerance`` of its own running time: a
hypothesis test compares against ``tolerance=0`` on random workloads (flows
of four orders of magnitude, old and young flows mixed);
``tolerance=0`` takes every completion at its own time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from fabricsim.maxmin import Incidence, max_min_rates
from fabricsim.routing import PathTable
from fabricsim.topology import Network
from fabricsim.workloads import Workload

PENDING, ACTIVE, DONE, REPLACED = 0, 1, 2, 3
"""Flow status: not started, running, finished, handed over to other flows (failover, restart)."""


class SimulationError(RuntimeError):
    """The simulation cannot proceed (no live path, flows that can never finish)."""


# Per-flow arrays of ``FlowState`` that grow together when flows are added.
_PER_FLOW = ("src", "dst", "size", "start", "coll", "root", "flow_links", "src_leaf", "dst_leaf",
             "level", "rates", "flow_group", "remaining", "finish", "drift", "status")


@dataclass(eq=False)
class FlowState:
    """Mutable simulation state shared by the engine, the policy and the failure plan."""

    net: Network
    paths: PathTable
    wl: Workload
    rng: np.random.Generator
    capacity: np.ndarray
    """True capacity of every link now (failures applied as they happen)."""
    view: np.ndarray
    """Capacity as the routing knows it: a failure shows here once it is detected."""
    src: np.ndarray
    dst: np.ndarray
    size: np.ndarray
    """Bytes of each flow."""
    start: np.ndarray
    coll: np.ndarray
    root: np.ndarray
    """The original flow each flow carries data of (itself for the workload's flows)."""
    flow_links: np.ndarray
    """(F, K) links of each flow's current path, -1 padded (access links always set)."""
    src_leaf: np.ndarray
    dst_leaf: np.ndarray
    level: np.ndarray
    """Level of the flow's common ancestor; 0 when both NICs hang off one leaf."""
    rates: np.ndarray
    flow_group: np.ndarray
    remaining: np.ndarray
    """Bits left to send."""
    finish: np.ndarray
    drift: np.ndarray
    """First-order estimate of each flow's completion-time error (s, late > 0); module doc."""
    status: np.ndarray
    link_load: np.ndarray
    """Current per-link load in bit/s."""
    link_bits: np.ndarray
    """Bits carried per link since the start."""
    group_link: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    group_id: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    group_weight: np.ndarray = field(default_factory=lambda: np.zeros(0))
    arrivals: list[np.ndarray] = field(default_factory=list)
    """Flows added during the run that start later (restarts), besides the workload's."""

    @property
    def n_flows(self) -> int:
        """Number of flows, including those added during the run."""
        return len(self.src)

    @property
    def active(self) -> np.ndarray:
        """Mask of running flows."""
        return self.status == ACTIVE

    def incidence(self, ids: np.ndarray) -> Incidence:
        """Incidence of the given flows as they are routed now."""
        return Incidence(self.net.n_links, self.flow_links[ids], self.flow_group[ids],
                         self.group_link, self.group_id, self.group_weight)

    def add_flows(self, src: np.ndarray, dst: np.ndarray, size: np.ndarray, start: float,
                  coll: np.ndarray, root: np.ndarray) -> np.ndarray:
        """Append flows (pending) that carry data of ``root``; returns their ids."""
        n = len(src)
        first = self.n_flows
        fresh = _flow_arrays(self.net, self.paths, np.asarray(src, np.int64),
                             np.asarray(dst, np.int64), self.flow_links.shape[1])
        fresh.update(size=np.asarray(size, float), start=np.full(n, float(start)),
                     coll=np.asarray(coll, np.int64), root=np.asarray(root, np.int64),
                     remaining=np.asarray(size, float) * 8.0)
        for name in _PER_FLOW:
            setattr(self, name, np.concatenate([getattr(self, name), fresh[name]]))
        return np.arange(first, first + n)


def _flow_arrays(net: Network, paths: PathTable, src: np.ndarray, dst: np.ndarray,
                 k: int) -> dict[str, np.ndarray]:
    """Per-flow arrays of new flows between NIC nodes ``src`` and ``dst``."""
    n = len(src)
    links = np.full((n, k), -1, np.int64)
    links[:, 0] = net.access_up(src)
    links[:, -1] = net.access_down(dst)
    src_leaf = net.leaf_of(src)
    dst_leaf = net.leaf_of(dst)
    return {"src": src, "dst": dst, "flow_links": links, "src_leaf": src_leaf,
            "dst_leaf": dst_leaf, "level": paths.pair_level(src_leaf, dst_leaf) if n else
            np.zeros(0, np.int64), "rates": np.zeros(n), "flow_group": np.full(n, -1, np.int64),
            "finish": np.full(n, np.nan), "drift": np.zeros(n),
            "status": np.full(n, PENDING, np.int8)}


@dataclass(frozen=True, eq=False)
class Result:
    """What one simulation run measured."""

    policy: str
    finish: np.ndarray
    """Completion time of every flow of the workload (s): when its last byte arrived."""
    start: np.ndarray
    coll: np.ndarray
    link_bits: np.ndarray
    makespan: float
    """Time at which the last flow finished (s)."""
    events: int
    solves: int
    timeline: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    """(events, 2): time and total goodput (bit/s, each flow counted once) from then on."""
    notes: tuple[dict, ...] = ()
    """What happened during the run (failures, detections, failovers), with their delays."""

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

    def on_view(self, st: FlowState, now: float, links: np.ndarray) -> bool:
        """``st.view`` changed on ``links``: move running flows off paths now known dead."""


class Disruptions(Protocol):
    """What the engine asks of a failure plan (see ``fabricsim.failures``)."""

    def next_time(self) -> float:
        """Time of the plan's next action (inf if none)."""

    def on_time(self, st: FlowState, policy: Policy, now: float) -> bool:
        """Apply what is due at ``now``; return True when rates must be recomputed."""

    def admit(self, st: FlowState, ids: np.ndarray, now: float) -> np.ndarray:
        """Flows about to start: return those to place (others may be replaced)."""

    def notes(self) -> tuple[dict, ...]:
        """What happened, for the report."""


def new_state(net: Network, wl: Workload, seed: int, paths: PathTable | None = None) -> FlowState:
    """Initial state: access links known, fabric paths left to the policy."""
    paths = paths or PathTable(net)
    max_level = max(paths.levels) if paths.levels else 1
    k = 2 + 2 * (max_level - 1)
    arrays = _flow_arrays(net, paths, wl.src, wl.dst, k)
    links = arrays["flow_links"]
    dead = net.capacity[links[:, 0]] <= 0
    dead |= net.capacity[links[:, -1]] <= 0
    if dead.any():
        i = int(np.flatnonzero(dead)[0])
        raise SimulationError(f"flow {i} starts or ends on a failed NIC link "
                              f"({net.node_names[wl.src[i]]} -> {net.node_names[wl.dst[i]]})")
    return FlowState(net, paths, wl, np.random.default_rng(seed), net.capacity.copy(),
                     net.capacity.copy(), size=wl.size.astype(float), start=wl.start.astype(float),
                     coll=wl.coll.astype(np.int64), root=np.arange(wl.n_flows),
                     remaining=wl.size * 8.0, link_load=np.zeros(net.n_links),
                     link_bits=np.zeros(net.n_links), **arrays)


def _shortest_times(st: FlowState, ids: np.ndarray) -> np.ndarray:
    """Shortest possible running time of each flow: its bytes at its NICs' rate."""
    nominal = st.net.nominal
    nic = np.minimum(nominal[st.flow_links[ids, 0]], nominal[st.flow_links[ids, -1]])
    return st.size[ids] * 8.0 / nic


class _Arrivals:
    """Flows still to start, in start order, with the shortest running time of those to come."""

    def __init__(self, st: FlowState, ids: np.ndarray):
        order = ids[np.argsort(st.start[ids], kind="stable")]
        self.ids = order
        self.times = st.start[order]
        self.pos = 0
        short = _shortest_times(st, order) if len(order) else np.zeros(0)
        self.future_min = np.minimum.accumulate(short[::-1])[::-1] if len(order) else short

    def merge(self, st: FlowState, ids: np.ndarray) -> None:
        """Add flows that start later."""
        rest = np.concatenate([self.ids[self.pos:], ids])
        self.__init__(st, rest)  # type: ignore[misc]

    def next_time(self) -> float:
        return float(self.times[self.pos]) if self.pos < len(self.ids) else np.inf

    def shortest_to_come(self) -> float:
        return float(self.future_min[self.pos]) if self.pos < len(self.ids) else np.inf

    def due(self, now: float) -> np.ndarray:
        hi = int(np.searchsorted(self.times, now, side="right"))
        out = self.ids[self.pos:hi]
        self.pos = max(self.pos, hi)
        return out


def simulate(net: Network, wl: Workload, policy: Policy, *, seed: int = 0, tolerance: float = 1e-2,
             paths: PathTable | None = None, max_events: int = 10_000_000,
             disruptions: Disruptions | None = None) -> Result:
    """Run ``wl`` on ``net`` under ``policy`` until every flow finishes."""
    if not 0 <= tolerance < 1:
        raise SimulationError(f"tolerance must be within [0, 1), got {tolerance}")
    st = new_state(net, wl, seed, paths)
    policy.prepare(st)
    arrivals = _Arrivals(st, np.arange(wl.n_flows))
    t = 0.0
    events = solves = 0
    dirty = True
    inc = None
    cached: tuple[np.ndarray, np.ndarray] | None = None   # rates solved while checking a window
    timeline: list[tuple[float, float]] = []
    while True:
        if disruptions is not None and disruptions.next_time() <= t:
            if disruptions.on_time(st, policy, t):
                dirty, cached = True, None
        if st.arrivals:
            arrivals.merge(st, np.concatenate(st.arrivals))
            st.arrivals.clear()
        new = arrivals.due(t)
        new = new[st.status[new] == PENDING]   # an aborted collective's flows wait for its restart
        if len(new):
            if disruptions is not None:
                new = disruptions.admit(st, new, t)
            policy.place(st, new, t)
            st.status[new] = ACTIVE
            dirty, cached = True, None
        act = np.flatnonzero(st.active)
        if dirty:
            st.rates[:] = 0
            if len(act):
                inc = st.incidence(act)
                if cached is not None and np.array_equal(cached[0], act):
                    st.rates[act] = cached[1]
                else:
                    st.rates[act] = max_min_rates(inc, st.capacity)
                    solves += 1
                st.link_load = inc.load(st.rates[act])
            else:
                st.link_load = np.zeros(net.n_links)
                inc = None
            dirty, cached = False, None
            timeline.append((t, float(st.rates[act].sum())))
        t_arrival = arrivals.next_time()
        t_policy = policy.next_time(t) if len(act) else np.inf
        t_disrupt = disruptions.next_time() if disruptions is not None else np.inf
        if not len(act) and not np.isfinite(min(t_arrival, t_disrupt)):
            break
        rate = st.rates[act]
        with np.errstate(divide="ignore"):
            left = np.where(rate > 0, st.remaining[act] / np.where(rate > 0, rate, 1), np.inf)
        t_first = t + left.min() if len(act) else np.inf
        t_done = t_first
        if len(act) and tolerance > 0 and np.isfinite(t_first):
            drift = np.abs(st.drift[act])
            # The first finisher's own error reaches the others whatever the window (at most
            # one for one when their rates rise): leave room for it.
            ahead = float(drift[left <= left.min() * (1 + 1e-9)].max())
            w = float((tolerance * (t_first - st.start[act]) - drift).min()) - ahead
            to_come = arrivals.shortest_to_come()
            if np.isfinite(to_come):
                # A flow still to come will feel the running flows' errors when they finish.
                w = min(w, tolerance * to_come - float(drift.max()))
            t_done = t_first + max(w, 0.0)
        t_next = min(t_arrival, t_policy, t_done, t_disrupt)
        if not np.isfinite(t_next):
            i = int(act[np.argmin(rate)])
            raise SimulationError(f"flow {i} ({net.node_names[st.src[i]]} -> "
                                  f"{net.node_names[st.dst[i]]}) gets no bandwidth and can never "
                                  "finish")
        saved = (st.remaining[act].copy(), st.link_bits.copy())
        while True:
            done = _advance(st, act, rate, left, t_next - t, inc, t)
            if not done.any():
                break
            window = max(t_next - t_first, 0.0)
            keep = ~done
            ids = act[keep]
            after = max_min_rates(inc.subset(keep), st.capacity) if keep.any() else np.zeros(0)
            solves += 1
            # The survivors see their new rates ``window`` late, and the finishing flows'
            # own error moves the change (hence their new rates) by as much again.
            gone = st.drift[act[done]]
            carried = float(gone[np.argmax(np.abs(gone))])
            err = _drift(rate[keep], after, window + carried)
            exact = st.drift[ids] + _drift(rate[keep], after, carried)
            limit = np.maximum(tolerance * (t_next - st.start[ids]), np.abs(exact))
            if window > 0 and not np.all(np.abs(st.drift[ids] + err) <= limit):
                # The window would overspend some flow's error budget: take the step exactly.
                st.remaining[act], st.link_bits = saved[0].copy(), saved[1].copy()
                st.finish[act] = np.nan
                t_next = t_first
                continue
            st.drift[ids] += np.where(np.isfinite(err), err, 0.0)
            cached = (ids, after)
            break
        if done.any():
            st.status[act[done]] = DONE
            dirty = True
        t = t_next
        if t == t_policy and st.active.any():
            if policy.on_time(st, t):
                dirty, cached = True, None
        events += 1
        if events > max_events:
            raise SimulationError(f"more than {max_events} events; raise tolerance")
    finish = _root_finish(st, wl.n_flows)
    notes = disruptions.notes() if disruptions is not None else ()
    return Result(policy.name, finish, wl.start.copy(), wl.coll.copy(), st.link_bits,
                  float(np.nanmax(finish)), events, solves, np.asarray(timeline), notes)


def _advance(st: FlowState, act: np.ndarray, rate: np.ndarray, left: np.ndarray, dt: float,
             inc: Incidence | None, t: float) -> np.ndarray:
    """Move the running flows ``dt`` forward at constant rates; return the mask of finished ones."""
    st.remaining[act] -= rate * dt
    # Rounding can leave a few bits; a flow within 1e-9 of its size is done.
    done = (left <= dt) | (st.remaining[act] <= 1e-9 * st.size[act] * 8)
    st.finish[act[done]] = t + np.minimum(left[done], dt)
    st.remaining[act[done]] = 0
    if inc is not None:
        st.link_bits += inc.load(rate * np.minimum(left, dt))
    return done


def _drift(before: np.ndarray, after: np.ndarray, delay: float) -> np.ndarray:
    """First-order completion-time error of flows whose rate moved from ``before`` to ``after``
    ``delay`` seconds late: the bits missed (or gained) at the new rate; late is positive."""
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(after > 0, (after - before) / np.where(after > 0, after, 1),
                       np.where(before > 0, -np.inf, 0.0))
    return delay * rel


def _root_finish(st: FlowState, n: int) -> np.ndarray:
    """Finish of each workload flow: the last finish of the flows carrying its data."""
    finish = np.full(n, -np.inf)
    done = st.status == DONE
    np.maximum.at(finish, st.root[done], st.finish[done])
    finish[np.isneginf(finish)] = np.nan
    return finish
