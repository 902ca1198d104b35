"""The SGLB that is built, as a simulator policy.

A leaf picks, for each new flowlet, the least congested live path; a path's
cost is the worse of two levels (``p4src/sglb.p4``, docs/sglb.md):

* **local**: the leaf's own uplink, from the egress rate estimator (DRE) the
  data plane keeps per port: bytes halved every period T (64 us), read as
  ``bytes >> shift`` with the shift ``sglb.config.dre_shift`` gives the
  link's capacity, capped at 7. At a constant rate R the estimate swings
  between R·T and 2·R·T, so a saturated link reads 4 to 7 (6 on average,
  times the power-of-two rounding of the shift); the simulator draws that
  phase at random for each reading.
* **remote**: the rest of the path. ``remote="syncmesh"`` is what is built:
  spines poll their port counters every ``counter_interval`` (rate over the
  interval, normalised by live capacity, ``quantise``d to 3 bits; a dead link
  reads the top level) and send a profile when ``profile_period`` has passed
  or a level moved by more than ``profile_threshold``; it reaches the leaves
  ``delivery`` later. Before any profile arrives, remote levels are 0. The
  counters' phase is random per run. ``remote="inband"`` models the data
  plane's own feedback (issue 11): every ``feedback_period`` (a round trip)
  the leaf learns each later hop's DRE level, one period old.

Both measure what a switch can: bytes *sent* (``measure="carried"``), so an
oversubscribed link reads like a full one. ``measure="offered"`` reads the
load the flows on a link would send if the fabric did not hold them back
(their NIC-bound rates), which a queue- or arrival-based estimator could
report; levels still cap at the top.

Paths whose cost is within ``tie_tolerance`` of the best tie and are chosen
in proportion to their 4-bit capacity weights (``sglb.config``). New flows
choose at once; every ``flowlet_interval`` a random ``flowlet_fraction`` of
running flows start a new flowlet and choose again; a flow whose path is
known dead (``st.view``) moves at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fabricsim.engine import FlowState, SimulationError
from fabricsim.maxmin import Incidence, max_min_rates
from fabricsim.measured import value
from fabricsim.placement import fail_no_path, on_dead_paths, set_fabric_links, weighted_pick
from sglb.config import DRE_PERIOD_US, FULL_LOAD_LEVEL, QBITS, WMAX, dre_shift

REMOTE = ("syncmesh", "inband")
MEASURE = ("carried", "offered")


def dre_scale(capacity_bps: np.ndarray) -> np.ndarray:
    """Per link, the factor by which the power-of-two DRE shift over- or under-reads (1 = exact).

    The shift puts a saturated link's mean estimate at FULL_LOAD_LEVEL only to
    within a factor of sqrt(2); this is that factor (0 for a link without capacity).
    """
    out = np.zeros(len(capacity_bps))
    for c in np.unique(capacity_bps[capacity_bps > 0]):
        mean_bytes = 1.5 * c / 8 / 1e6 * DRE_PERIOD_US
        out[capacity_bps == c] = mean_bytes / FULL_LOAD_LEVEL / 2 ** dre_shift(float(c) / 1e6)
    return out


@dataclass
class Sglb:
    """Congestion-aware flowlet switching with the measurement and timers SGLB has."""

    remote: str = "syncmesh"
    """Where the remote levels come from: ``syncmesh`` (as built) or ``inband``."""
    profile_period: float = value("syncmesh_profile_period")
    """SyncMesh: a spine sends its profile at least this often (s)."""
    counter_interval: float = value("syncmesh_counter_interval")
    """SyncMesh: port counters are polled this often; utilisation is the rate over it (s)."""
    profile_threshold: int = int(value("syncmesh_profile_threshold"))
    """SyncMesh: a profile goes out early when a level moved by more than this."""
    delivery: float = value("syncmesh_agreement")
    """SyncMesh: from a spine's send to the leaves' switches holding the profile (s)."""
    feedback_period: float = value("inband_feedback_period")
    """In-band: refresh period and age of the remote levels (s)."""
    measure: str = "carried"
    """``carried``: bytes sent, as the DRE and counters count; ``offered``: NIC-bound demand."""
    bits: int = QBITS
    """Bits of a congestion level."""
    tie_tolerance: int = int(value("tie_tolerance"))
    """Paths within this many levels of the best one tie."""
    flowlet_interval: float = value("flowlet_interval")
    """Seconds between flowlet-boundary checks."""
    flowlet_fraction: float = value("flowlet_fraction")
    """Share of running flows that start a new flowlet at each check."""
    name: str = "sglb"

    def __post_init__(self) -> None:
        if self.remote not in REMOTE:
            raise SimulationError(f"SGLB remote must be one of {', '.join(REMOTE)}, "
                                  f"got {self.remote!r}")
        if self.measure not in MEASURE:
            raise SimulationError(f"SGLB measure must be one of {', '.join(MEASURE)}, "
                                  f"got {self.measure!r}")
        for label in ("profile_period", "counter_interval", "feedback_period",
                      "flowlet_interval"):
            v = getattr(self, label)
            if isinstance(v, bool) or not isinstance(v, int | float) or not v > 0:
                raise SimulationError(f"SGLB {label} must be a positive number, got {v!r}")
        if not self.delivery >= 0:
            raise SimulationError(f"SGLB delivery must be non-negative, got {self.delivery!r}")
        if not 0 <= self.profile_threshold < 2 ** 16:
            raise SimulationError("SGLB profile_threshold must be a non-negative level count")
        if not 1 <= self.bits <= 16:
            raise SimulationError("SGLB bits must be within 1..16")
        if not 0 <= self.tie_tolerance < 2 ** self.bits:
            raise SimulationError(f"SGLB tie_tolerance must be within 0..{2 ** self.bits - 1}")
        if not 0 <= self.flowlet_fraction <= 1:
            raise SimulationError("SGLB flowlet_fraction must be within 0..1")

    def describe(self) -> str:
        """The timers in force, for reports."""
        if self.remote == "inband":
            return f"in-band feedback every {self.feedback_period * 1e6:g} us"
        return (f"SyncMesh profiles every {self.profile_period:g} s (counters every "
                f"{self.counter_interval:g} s, delivered {self.delivery * 1e3:g} ms later)")

    # -- state ---------------------------------------------------------------------------
    def prepare(self, st: FlowState) -> None:
        """No profile yet (remote levels 0); the counters start at a random phase."""
        n = st.net.n_links
        self._levels = 2 ** self.bits
        self._remote = np.zeros(n, np.int64)
        # The DRE shift is configured for each link's capacity as the fabric file gives it.
        self._kappa = dre_scale(st.net.capacity)
        self._pending: list[tuple[float, np.ndarray]] = []
        self._last_bits = np.zeros(n)
        self._sent: np.ndarray | None = None
        self._last_send = -math.inf
        if self.remote == "syncmesh":
            self._tick = self.counter_interval
            self._next_poll = float(st.rng.random()) * self.counter_interval
        else:
            self._tick = self.feedback_period
            self._next_poll = self.feedback_period
        self._last_poll = 0.0
        self._next_flowlet = self.flowlet_interval

    def _load(self, st: FlowState) -> np.ndarray:
        """Per-link load as the switches measure it (bit/s)."""
        if self.measure == "carried":
            return st.link_load
        act = np.flatnonzero(st.active)
        if not len(act):
            return np.zeros(st.net.n_links)
        ends = st.flow_links[act][:, [0, -1]]
        demand = max_min_rates(Incidence(st.net.n_links, ends), st.capacity)
        return st.incidence(act).load(demand)

    def _dre_level(self, st: FlowState, load: np.ndarray, links: np.ndarray) -> np.ndarray:
        """DRE reading of ``links`` carrying ``load``: random phase of the halving sawtooth."""
        cap = st.net.capacity[links]
        util = np.where(cap > 0, load / np.where(cap > 0, cap, 1), 0.0)
        phase = 1.0 + st.rng.random(util.shape)
        raw = FULL_LOAD_LEVEL / 1.5 * self._kappa[links] * util * phase * (self._levels / 8)
        return np.minimum(np.floor(raw), self._levels - 1).astype(np.int64)

    def _quantise(self, util: np.ndarray) -> np.ndarray:
        """SyncMesh's ``quantise``: min(top, floor(utilisation x 2^bits))."""
        return np.minimum(np.floor(np.maximum(util, 0) * self._levels),
                          self._levels - 1).astype(np.int64)

    # -- choice ---------------------------------------------------------------------------
    def place(self, st: FlowState, ids: np.ndarray, now: float) -> None:
        """New flows start their first flowlet."""
        self._choose(st, ids)

    def _choose(self, st: FlowState, ids: np.ndarray) -> None:
        """Sequential greedy per source leaf, vectorised across leaves (one flow per leaf per round)."""
        ids = ids[st.level[ids] > 0]
        if not len(ids):
            return
        net = st.net
        local = self._load(st).copy()
        # A port that died but is not yet known down still takes the leaf's packets: its
        # estimator counts them (they are lost on the wire), so it reads busy, not idle.
        undetected = (st.capacity <= 0) & (st.view > 0)
        local[undetected] = st.view[undetected]
        # A flow's demand: its current rate, or for a new flow its NIC's fair share.
        nic = st.flow_links[:, 0]
        users = st.active.copy()
        users[ids] = True
        nic_flows = np.bincount(nic[users], minlength=net.n_links)
        first_hop = st.flow_links[ids, 1]
        demand = np.where(st.rates[ids] > 0, st.rates[ids],
                          st.capacity[nic[ids]] / np.maximum(nic_flows[nic[ids]], 1))
        moving = first_hop >= 0
        np.subtract.at(local, first_hop[moving], demand[moving])
        order = st.rng.permutation(len(ids))
        ids, demand = ids[order], demand[order]
        leaf = st.src_leaf[ids]
        srt = np.argsort(leaf, kind="stable")
        ids, demand, leaf = ids[srt], demand[srt], leaf[srt]
        start = np.searchsorted(leaf, leaf, side="left")
        rank = np.arange(len(ids)) - start
        remote_ext = np.append(self._remote, 0)
        for r in range(int(rank.max()) + 1):
            sel = rank == r
            flows, d = ids[sel], demand[sel]
            lv = st.level[flows]
            for level in np.unique(lv):
                m = lv == level
                f, dm = flows[m], d[m]
                cand = st.paths.candidates(int(level), st.src_leaf[f], st.dst_leaf[f], st.view)
                n = len(f)
                fail_no_path(st, f, cand.valid.reshape(n, -1).any(axis=1))
                up0 = np.maximum(cand.up[..., 0], 0)
                local_q = self._dre_level(st, local[up0], up0)
                rest_up = remote_ext[cand.up[..., 1:]].max(axis=-1, initial=0)
                rest_down = remote_ext[cand.down].max(axis=-1)
                cost = np.maximum(np.maximum(local_q, rest_up)[..., :, None],
                                  rest_down[..., None, :])
                cost = np.where(cand.valid, cost, np.iinfo(np.int64).max)
                best = cost.reshape(n, -1).min(axis=1)
                tie = cand.valid & (cost <= best[:, None, None, None] + self.tie_tolerance)
                slot = weighted_pick(st.rng, tie, _weights(cand.capacity))
                links = cand.links(slot)
                set_fabric_links(st, f, links)
                np.add.at(local, links[:, 0], dm)

    # -- clocks -------------------------------------------------------------------------
    def next_time(self, now: float) -> float:
        """Next measurement, profile installation or flowlet check."""
        t = min(self._next_poll, self._next_flowlet)
        if self._pending:
            t = min(t, self._pending[0][0])
        return t

    def on_time(self, st: FlowState, now: float) -> bool:
        """Measure on the counters' (or feedback's) clock; move flowlets on theirs."""
        changed = False
        if now >= self._next_poll:
            self._measure(st, now)
            self._next_poll += self._tick
        while self._pending and self._pending[0][0] <= now:
            self._remote = self._pending.pop(0)[1]
        if now >= self._next_flowlet:
            self._next_flowlet += self.flowlet_interval
            act = np.flatnonzero(st.active & (st.level > 0))
            if len(act) and self.flowlet_fraction > 0:
                moving = act[st.rng.random(len(act)) < self.flowlet_fraction]
                if len(moving):
                    self._choose(st, moving)
                    changed = True
        return changed

    def _measure(self, st: FlowState, now: float) -> None:
        if self.remote == "inband":
            links = np.arange(st.net.n_links)
            q = self._dre_level(st, self._load(st), links)
            q[st.capacity <= 0] = self._levels - 1
            self._pending.append((now + self.feedback_period, q))
            return
        span = now - self._last_poll
        self._last_poll = now
        if self.measure == "carried":
            bits = st.link_bits - self._last_bits
            self._last_bits = st.link_bits.copy()
            rate = bits / span if span > 0 else np.zeros_like(bits)
        else:
            rate = self._load(st)
        cap = st.capacity
        q = self._quantise(np.where(cap > 0, rate / np.where(cap > 0, cap, 1), 1.0))
        q[cap <= 0] = self._levels - 1
        moved = self._sent is None or int(np.abs(q - self._sent).max()) > self.profile_threshold
        if now - self._last_send >= self.profile_period or moved:
            self._sent = q
            self._last_send = now
            self._pending.append((now + self.delivery, q))
            self._pending.sort(key=lambda item: item[0])

    def on_view(self, st: FlowState, now: float, links: np.ndarray) -> bool:
        """A packet whose path died moves at once (the data plane's failover)."""
        moved = on_dead_paths(st)
        if len(moved):
            self._choose(st, moved)
        return bool(len(moved))


def _weights(capacity: np.ndarray) -> np.ndarray:
    """4-bit capacity weights per pair (``sglb.config.capacity_weights``, vectorised)."""
    n = capacity.shape[0]
    top = capacity.reshape(n, -1).max(axis=1)
    top = np.where(top > 0, top, 1.0)[:, None, None, None]
    return np.where(capacity > 0, np.maximum(1, np.round(capacity / top * WMAX)), 0)
