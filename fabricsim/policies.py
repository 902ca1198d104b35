"""Load-balancing policies, all driving the same engine on the same workload.

* ``Ecmp``: a per-flow hash picks one live path for the flow's lifetime.
* ``Spray``: ideal packet spraying; every flow splits over all live paths in
  proportion to their bottleneck capacity (the upper bound).
* ``Sglb``: congestion-aware per flowlet, as in the SGLB data plane: a path's
  congestion is the worse of the local uplink's utilisation (measured in the
  switch, fresh) and the rest of the path's utilisation (reported by SyncMesh
  every ``update_period``, ``staleness`` late), both normalised by capacity
  and quantised to ``bits``; ties are broken at random in proportion to
  capacity. New flows and flows reaching a flowlet boundary choose.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabricsim.engine import FlowState, SimulationError

CHUNK = 4096  # flows per candidate batch: bounds the (flows x slots) temporaries


def _fail_no_path(st: FlowState, flows: np.ndarray, ok: np.ndarray) -> None:
    if not ok.all():
        i = int(flows[np.flatnonzero(~ok)[0]])
        net = st.net
        raise SimulationError(f"no live path from {net.node_names[st.wl.src[i]]} to "
                              f"{net.node_names[st.wl.dst[i]]}: every candidate crosses a "
                              "failed link")


def _by_pair(st: FlowState, ids: np.ndarray, n_nodes: int):
    """Yield (level, [flow ids of each leaf pair]) in chunks of at most CHUNK pairs."""
    ids = ids[st.level[ids] > 0]
    if not len(ids):
        return
    key = st.src_leaf[ids] * n_nodes + st.dst_leaf[ids]
    order = np.lexsort((key, st.level[ids]))
    ids, key = ids[order], key[order]
    cut = np.flatnonzero(np.diff(key)) + 1
    groups = np.split(ids, cut)
    levels = st.level[[g[0] for g in groups]]
    for level in np.unique(levels):
        members = [g for g, lv in zip(groups, levels, strict=True) if lv == level]
        for c in range(0, len(members), CHUNK):
            yield int(level), members[c:c + CHUNK]


def _set_fabric_links(st: FlowState, flows: np.ndarray, links: np.ndarray) -> None:
    h = links.shape[1]
    st.flow_links[flows, 1:1 + h] = links
    st.flow_links[flows, 1 + h:-1] = -1


def _weighted_pick(rng: np.random.Generator, eligible: np.ndarray,
                   weight: np.ndarray) -> np.ndarray:
    """Per row, a random eligible flat slot with probability proportional to ``weight``."""
    n = eligible.shape[0]
    flat_e = eligible.reshape(n, -1)
    flat_w = weight.reshape(n, -1)
    # Exponential races: argmin of E/w is slot i with probability w_i / sum(w).
    with np.errstate(divide="ignore"):
        key = np.where(flat_e & (flat_w > 0), rng.exponential(size=flat_e.shape) / flat_w, np.inf)
    return np.argmin(key, axis=1)


class Ecmp:
    """Per-flow hashing over live equal-cost paths (uniform, fixed for the flow's life)."""

    name = "ecmp"

    def prepare(self, st: FlowState) -> None:
        """Nothing to precompute."""

    def place(self, st: FlowState, ids: np.ndarray, now: float) -> None:
        """Hash every new flow onto one live path (uniform over the pair's live paths)."""
        n_nodes = len(st.net.node_names)
        for level, pair_flows in _by_pair(st, ids, n_nodes):
            first = np.array([f[0] for f in pair_flows])
            cand = st.paths.candidates(level, st.src_leaf[first], st.dst_leaf[first])
            valid = cand.valid.reshape(len(first), -1)
            _fail_no_path(st, first, valid.any(axis=1))
            cum = np.cumsum(valid, axis=1)
            flows = np.concatenate(pair_flows)
            row = np.repeat(np.arange(len(first)), [len(f) for f in pair_flows])
            for c in range(0, len(flows), CHUNK):
                f, r = flows[c:c + CHUNK], row[c:c + CHUNK]
                k = np.floor(st.rng.random(len(f)) * cum[r, -1]).astype(np.int64)
                slot = np.argmax(cum[r] > k[:, None], axis=1)
                _set_fabric_links(st, f, cand.links(slot, r))

    def next_time(self, now: float) -> float:
        """ECMP has no clock."""
        return np.inf

    def on_time(self, st: FlowState, now: float) -> bool:
        """Never called."""
        return False


class Spray:
    """Ideal packet spraying in proportion to path capacity."""

    name = "spray"

    def prepare(self, st: FlowState) -> None:
        """Build one split matrix per leaf pair the workload uses."""
        net = st.net
        fab = st.level > 0
        key = st.src_leaf * len(net.node_names) + st.dst_leaf
        pairs, inv = np.unique(key[fab], return_inverse=True)
        st.flow_group[np.flatnonzero(fab)] = inv.ravel()
        first = np.zeros(len(pairs), np.int64)
        first[inv.ravel()] = np.flatnonzero(fab)
        links_out, groups_out, weights_out = [], [], []
        lv = st.level[first]
        for level in np.unique(lv):
            members = np.flatnonzero(lv == level)
            for c in range(0, len(members), CHUNK):
                g = members[c:c + CHUNK]
                f = first[g]
                cand = st.paths.candidates(int(level), st.src_leaf[f], st.dst_leaf[f])
                _fail_no_path(st, f, cand.valid.reshape(len(g), -1).any(axis=1))
                w = cand.capacity / cand.capacity.sum(axis=(1, 2, 3), keepdims=True)
                keys, vals = [], []
                # Share of each up path (summed over down paths) and of each down path.
                for links, share in ((cand.up, w.sum(axis=3)), (cand.down, w.sum(axis=2))):
                    gid = np.broadcast_to(g[:, None, None, None], links.shape)
                    s = np.broadcast_to(share[..., None], links.shape)
                    keep = (links >= 0) & (s > 0)
                    keys.append(gid[keep] * net.n_links + links[keep])
                    vals.append(s[keep])
                # Merge duplicates within the chunk (a first hop is shared by many paths);
                # groups never span chunks, so the merged keys stay unique overall.
                k, inv = np.unique(np.concatenate(keys), return_inverse=True)
                links_out.append(k % net.n_links)
                groups_out.append(k // net.n_links)
                weights_out.append(np.bincount(inv.ravel(), weights=np.concatenate(vals),
                                               minlength=len(k)))
        if links_out:
            st.group_link = np.concatenate(links_out)
            st.group_id = np.concatenate(groups_out)
            st.group_weight = np.concatenate(weights_out)

    def place(self, st: FlowState, ids: np.ndarray, now: float) -> None:
        """Sprayed flows need no choice: their split was fixed in ``prepare``."""

    def next_time(self, now: float) -> float:
        """Spraying has no clock."""
        return np.inf

    def on_time(self, st: FlowState, now: float) -> bool:
        """Never called."""
        return False


@dataclass
class Sglb:
    """Congestion-aware flowlet switching with SyncMesh's update period and staleness."""

    update_period: float = 1e-3
    """Seconds between congestion-profile exchanges (SyncMesh's profile period)."""
    staleness: float = 0.0
    """Extra seconds before a measured profile is installed in the switches."""
    bits: int = 3
    """Bits of a quantised congestion value."""
    flowlet_interval: float = 1e-4
    """Seconds between flowlet-boundary checks."""
    flowlet_fraction: float = 0.25
    """Share of active flows that start a new flowlet at each check."""
    name: str = "sglb"

    def __post_init__(self) -> None:
        for label in ("update_period", "flowlet_interval"):
            if not getattr(self, label) > 0:
                raise SimulationError(f"SGLB {label} must be positive")
        if self.staleness < 0:
            raise SimulationError("SGLB staleness must be non-negative")
        if not 1 <= self.bits <= 16:
            raise SimulationError("SGLB bits must be within 1..16")
        if not 0 <= self.flowlet_fraction <= 1:
            raise SimulationError("SGLB flowlet_fraction must be within 0..1")

    def prepare(self, st: FlowState) -> None:
        """Start with an empty (all idle) remote congestion table."""
        self._levels = 2 ** self.bits
        self._remote = np.zeros(st.net.n_links, np.int64)
        self._last_bits = np.zeros(st.net.n_links)
        self._pending: list[tuple[float, np.ndarray]] = []
        self._next_measure = self.update_period
        self._next_flowlet = self.flowlet_interval
        self._placed = np.zeros(st.wl.n_flows, bool)

    def _quantise(self, load: np.ndarray, cap: np.ndarray) -> np.ndarray:
        """Capacity-normalised utilisation quantised to ``bits`` (dead links: top level)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            util = np.where(cap > 0, load / np.where(cap > 0, cap, 1), 1.0)
        return np.clip(np.floor(util * self._levels), 0, self._levels - 1).astype(np.int64)

    def place(self, st: FlowState, ids: np.ndarray, now: float) -> None:
        """New flows start their first flowlet."""
        self._choose(st, ids)
        self._placed[ids] = True

    def _choose(self, st: FlowState, ids: np.ndarray) -> None:
        """Sequential greedy per source leaf, vectorised across leaves (one flow per leaf per round)."""
        ids = ids[st.level[ids] > 0]
        if not len(ids):
            return
        net = st.net
        cap = net.capacity
        local = st.link_load.copy()
        # A flow's demand: its current rate, or for a new flow its NIC's fair share.
        nic_flows = np.bincount(st.flow_links[st.active | np.isin(np.arange(st.wl.n_flows), ids), 0],
                                minlength=net.n_links)
        first_hop = st.flow_links[ids, 1]
        demand = np.where(st.rates[ids] > 0, st.rates[ids],
                          cap[st.flow_links[ids, 0]] / np.maximum(nic_flows[st.flow_links[ids, 0]], 1))
        moving = self._placed[ids] & (first_hop >= 0)
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
                cand = st.paths.candidates(int(level), st.src_leaf[f], st.dst_leaf[f])
                n = len(f)
                _fail_no_path(st, f, cand.valid.reshape(n, -1).any(axis=1))
                up0 = cand.up[..., 0]
                local_q = self._quantise(local[np.maximum(up0, 0)], cap[np.maximum(up0, 0)])
                rest_up = remote_ext[cand.up[..., 1:]].max(axis=-1, initial=0)
                rest_down = remote_ext[cand.down].max(axis=-1)
                cost = np.maximum(np.maximum(local_q, rest_up)[..., :, None], rest_down[..., None, :])
                cost = np.where(cand.valid, cost, np.iinfo(np.int64).max)
                best = cost.reshape(n, -1).min(axis=1)
                tie = cost == best[:, None, None, None]
                slot = _weighted_pick(st.rng, tie & cand.valid, cand.capacity)
                links = cand.links(slot)
                _set_fabric_links(st, f, links)
                np.add.at(local, links[:, 0], dm)

    def next_time(self, now: float) -> float:
        """Next profile measurement, profile installation or flowlet check."""
        t = min(self._next_measure, self._next_flowlet)
        if self._pending:
            t = min(t, self._pending[0][0])
        return t

    def on_time(self, st: FlowState, now: float) -> bool:
        """Measure and install profiles on SyncMesh's clock; move flowlets on theirs."""
        changed = False
        if now >= self._next_measure:
            bits = st.link_bits - self._last_bits
            self._last_bits = st.link_bits.copy()
            q = self._quantise(bits / self.update_period, st.net.capacity)
            self._pending.append((now + self.staleness, q))
            self._next_measure += self.update_period
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


POLICIES = {"ecmp": Ecmp, "sglb": Sglb, "spray": Spray}


def make_policy(name: str, **options) -> Ecmp | Sglb | Spray:
    """A policy by name; ``options`` go to SGLB (update_period, staleness, bits, ...)."""
    if name not in POLICIES:
        raise SimulationError(f"unknown policy {name!r} (choose from {', '.join(POLICIES)})")
    if name != "sglb":
        return POLICIES[name]()
    return Sglb(**options)
