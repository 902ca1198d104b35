"""Load-balancing policies, all driving the same engine on the same workload.

* ``Ecmp``: a per-flow hash picks one live path for the flow's lifetime,
  either uniformly among the pair's paths (``end-to-end``, an ideal hash) or
  hop by hop at every switch (``per-hop``, with one hash seed for all
  switches, which polarises, or one per switch; ``fabricsim.hashing``).
* ``Spray``: packet spraying; every flow splits over all live paths in
  proportion to their bottleneck capacity (the upper bound) or equally
  (oblivious per-packet spraying, what a random per-packet ECMP does).
* ``Sglb`` (``fabricsim.sglb_model``): the SGLB that is built.

Every policy routes on ``st.view``, the link state as the routing knows it:
a failure shows there only after the policy's detection delay
(``fabricsim.failures``); ``on_view`` then moves the flows whose path died.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fabricsim.engine import FlowState, SimulationError
from fabricsim.hashing import HopTable
from fabricsim.placement import (
    CHUNK,
    by_pair,
    fail_no_path,
    on_dead_paths,
    set_fabric_links,
)
from fabricsim.sglb_model import Sglb

HASHING = ("end-to-end", "per-hop")
HASH_SEEDS = ("same", "per-switch")


@dataclass
class Ecmp:
    """Per-flow hashing over live paths, fixed for the flow's life (rehashed if its path dies)."""

    hashing: str = "end-to-end"
    """``end-to-end``: uniform over the pair's live paths; ``per-hop``: each switch hashes."""
    hash_seeds: str = "same"
    """Per-hop only: ``same`` seed at every switch (polarises) or ``per-switch``."""
    name: str = "ecmp"
    _hash: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64), repr=False)
    _hops: HopTable | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.hashing not in HASHING:
            raise SimulationError(f"ECMP hashing must be one of {', '.join(HASHING)}, "
                                  f"got {self.hashing!r}")
        if self.hash_seeds not in HASH_SEEDS:
            raise SimulationError(f"ECMP hash_seeds must be one of {', '.join(HASH_SEEDS)}, "
                                  f"got {self.hash_seeds!r}")

    def prepare(self, st: FlowState) -> None:
        """Per-hop hashing needs every switch's next hops (and its seed)."""
        self._hash = np.zeros(0, np.uint64)
        self._hops = None
        if self.hashing == "per-hop":
            salts = None
            if self.hash_seeds == "per-switch":
                salts = st.rng.integers(0, 2**63, size=len(st.net.node_names), dtype=np.uint64)
            self._hops = HopTable(st.net, salts)

    def _hashes(self, st: FlowState, ids: np.ndarray) -> np.ndarray:
        missing = st.n_flows - len(self._hash)
        if missing > 0:
            self._hash = np.concatenate(
                [self._hash, st.rng.integers(0, 2**63, size=missing, dtype=np.uint64)])
        return self._hash[ids]

    def place(self, st: FlowState, ids: np.ndarray, now: float) -> None:
        """Hash the flows onto one live path each (as the routing knows the links)."""
        h_all = self._hashes(st, np.arange(st.n_flows))
        if self._hops is not None:
            self._place_per_hop(st, ids, h_all)
            return
        for level, pair_flows in by_pair(st, ids):
            first = np.array([f[0] for f in pair_flows])
            cand = st.paths.candidates(level, st.src_leaf[first], st.dst_leaf[first], st.view)
            valid = cand.valid.reshape(len(first), -1)
            fail_no_path(st, first, valid.any(axis=1))
            cum = np.cumsum(valid, axis=1)
            flows = np.concatenate(pair_flows)
            row = np.repeat(np.arange(len(first)), [len(f) for f in pair_flows])
            for c in range(0, len(flows), CHUNK):
                f, r = flows[c:c + CHUNK], row[c:c + CHUNK]
                k = (h_all[f] % cum[r, -1].astype(np.uint64)).astype(np.int64)
                slot = np.argmax(cum[r] > k[:, None], axis=1)
                set_fabric_links(st, f, cand.links(slot, r))

    def _place_per_hop(self, st: FlowState, ids: np.ndarray, h_all: np.ndarray) -> None:
        ids = ids[st.level[ids] > 0]
        for level in np.unique(st.level[ids]):
            sel = ids[st.level[ids] == level]
            for c in range(0, len(sel), CHUNK):
                f = sel[c:c + CHUNK]
                links = self._hops.walk(st.src_leaf[f], st.dst_leaf[f], int(level), h_all[f],
                                        st.view)
                fail_no_path(st, f, links[:, 0] >= 0)
                set_fabric_links(st, f, links)

    def next_time(self, now: float) -> float:
        """ECMP has no clock."""
        return np.inf

    def on_time(self, st: FlowState, now: float) -> bool:
        """Never called."""
        return False

    def on_view(self, st: FlowState, now: float, links: np.ndarray) -> bool:
        """Rehash the flows whose path died (resilient hashing: the others stay)."""
        moved = on_dead_paths(st)
        if len(moved):
            self.place(st, moved, now)
        return bool(len(moved))


SPRAY_WEIGHTING = ("capacity", "equal")


@dataclass
class Spray:
    """Packet spraying over every live path, in proportion to capacity or equally."""

    weighting: str = "capacity"
    """``capacity``: each path's share follows its bottleneck capacity (the upper bound);
    ``equal``: every live path the same share (oblivious per-packet spraying)."""
    name: str = "spray"

    def __post_init__(self) -> None:
        if self.weighting not in SPRAY_WEIGHTING:
            raise SimulationError(f"spray weighting must be one of {', '.join(SPRAY_WEIGHTING)}, "
                                  f"got {self.weighting!r}")

    def prepare(self, st: FlowState) -> None:
        """No leaf pair has a split yet; ``place`` builds them as flows start."""
        self._pairs: dict[int, int] = {}
        self._first: list[int] = []
        st.group_link = np.zeros(0, np.int64)
        st.group_id = np.zeros(0, np.int64)
        st.group_weight = np.zeros(0)

    def place(self, st: FlowState, ids: np.ndarray, now: float) -> None:
        """Give each fabric flow its leaf pair's split; build the splits of new pairs."""
        ids = ids[st.level[ids] > 0]
        if not len(ids):
            return
        key = st.src_leaf[ids] * len(st.net.node_names) + st.dst_leaf[ids]
        uniq, first_pos, inv = np.unique(key, return_index=True, return_inverse=True)
        known = np.array([self._pairs.get(int(k), -1) for k in uniq], np.int64)
        new = np.flatnonzero(known < 0)
        if len(new):
            gids = np.arange(len(self._first), len(self._first) + len(new))
            for g, u in zip(gids, new, strict=True):
                self._pairs[int(uniq[u])] = int(g)
            self._first.extend(int(ids[first_pos[u]]) for u in new)
            known[new] = gids
            self._append(st, gids)
        st.flow_group[ids] = known[inv.ravel()]

    def _append(self, st: FlowState, gids: np.ndarray) -> None:
        links, groups, weights = self._splits(st, gids)
        st.group_link = np.concatenate([st.group_link, links])
        st.group_id = np.concatenate([st.group_id, groups])
        st.group_weight = np.concatenate([st.group_weight, weights])

    def _splits(self, st: FlowState, gids: np.ndarray):
        """Link shares of the given groups' splits, on the links as the routing knows them."""
        net = st.net
        first = np.asarray(self._first, np.int64)[gids]
        links_out, groups_out, weights_out = [], [], []
        lv = st.level[first]
        for level in np.unique(lv):
            members = np.flatnonzero(lv == level)
            for c in range(0, len(members), CHUNK):
                g = gids[members[c:c + CHUNK]]
                f = first[members[c:c + CHUNK]]
                cand = st.paths.candidates(int(level), st.src_leaf[f], st.dst_leaf[f], st.view)
                fail_no_path(st, f, cand.valid.reshape(len(g), -1).any(axis=1))
                w = cand.capacity if self.weighting == "capacity" else cand.valid.astype(float)
                total = w.sum(axis=(1, 2, 3), keepdims=True)
                w = w / np.where(total > 0, total, 1.0)   # no live path: no share anywhere
                keys, vals = [], []
                # Share of each up path (summed over down paths) and of each down path.
                for lk, share in ((cand.up, w.sum(axis=3)), (cand.down, w.sum(axis=2))):
                    gid = np.broadcast_to(g[:, None, None, None], lk.shape)
                    s = np.broadcast_to(share[..., None], lk.shape)
                    keep = (lk >= 0) & (s > 0)
                    keys.append(gid[keep] * net.n_links + lk[keep])
                    vals.append(s[keep])
                # Merge duplicates within the chunk (a first hop is shared by many paths);
                # groups never span chunks, so the merged keys stay unique overall.
                k, inv = np.unique(np.concatenate(keys), return_inverse=True)
                links_out.append(k % net.n_links)
                groups_out.append(k // net.n_links)
                weights_out.append(np.bincount(inv.ravel(), weights=np.concatenate(vals),
                                               minlength=len(k)))
        if not links_out:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        return np.concatenate(links_out), np.concatenate(groups_out), np.concatenate(weights_out)

    def next_time(self, now: float) -> float:
        """Spraying has no clock."""
        return np.inf

    def on_time(self, st: FlowState, now: float) -> bool:
        """Never called."""
        return False

    def on_view(self, st: FlowState, now: float, links: np.ndarray) -> bool:
        """Re-split every pair over the paths the routing now knows to be live."""
        if not self._first:
            return False
        st.group_link, st.group_id, st.group_weight = self._splits(
            st, np.arange(len(self._first)))
        return True


POLICIES = {"ecmp": Ecmp, "sglb": Sglb, "spray": Spray}


def make_policy(name: str, **options) -> Ecmp | Sglb | Spray:
    """A policy by name; ``options`` go to its dataclass (e.g. SGLB's timers, ECMP's hashing)."""
    if name not in POLICIES:
        raise SimulationError(f"unknown policy {name!r} (choose from {', '.join(POLICIES)})")
    try:
        return POLICIES[name](**options)
    except TypeError as e:
        raise SimulationError(f"{name}: {e}") from None
