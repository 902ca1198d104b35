"""Candidate up-down paths between leaves of a layered Clos.

A path from leaf ``s`` to leaf ``d`` climbs to a common ancestor ``t`` at the
lowest level where one exists and comes back down. A *slot* is one choice
``(r, i, j)``: the r-th ancestor of ``s`` at that level, the i-th up path to it
and the j-th down path from it (parallel links make several). Slots are kept
structured rather than listed per pair so that a 16k-GPU fabric's candidate
sets never need materialising: policies look up links only for what they use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabricsim.topology import LEVEL_LEAF, Network, TopologyError


@dataclass(frozen=True, eq=False)
class LevelTable:
    """Up paths from every leaf to its ancestors at one level."""

    level: int
    tops: np.ndarray
    """Node ids of the level's switches."""
    reach: np.ndarray
    """(leaves, R) index into ``tops`` of each leaf's r-th ancestor, -1 padded."""
    rank: np.ndarray
    """(leaves, len(tops)) r of that ancestor for the leaf, -1 if unreachable."""
    up: np.ndarray
    """(leaves, R, M, level-1) link ids of the up paths, -1 padded."""


@dataclass(frozen=True, eq=False)
class Candidates:
    """Slots of a batch of leaf pairs at one level: shape (n, R, M, M) after broadcasting."""

    up: np.ndarray
    """(n, R, M, h) up links."""
    down: np.ndarray
    """(n, R, M, h) down links (from the ancestor to the destination leaf)."""
    valid: np.ndarray
    """(n, R, M, M) slot exists and every link on it is alive."""
    capacity: np.ndarray
    """(n, R, M, M) bottleneck capacity of the slot (0 when not valid)."""

    def links(self, slot: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """(n, 2h) link ids of the chosen flat slot of each pair (or of pair ``rows[k]``)."""
        n, r, m, _ = self.valid.shape
        ri, rem = np.divmod(slot, m * m)
        i, j = np.divmod(rem, m)
        rows = np.arange(n) if rows is None else rows
        return np.concatenate([self.up[rows, ri, i], self.down[rows, ri, j]], axis=1)


class PathTable:
    """Up-down candidate paths of a network, by leaf pair."""

    def __init__(self, net: Network):
        self.net = net
        lvl = net.node_level
        self.leaves = np.flatnonzero(lvl == LEVEL_LEAF)
        self.leaf_index = np.full(len(lvl), -1, np.int64)
        self.leaf_index[self.leaves] = np.arange(len(self.leaves))
        self.levels: dict[int, LevelTable] = {}
        # Walk up level by level: paths to level L extend paths to level L-1.
        paths = {int(s): {int(s): [()]} for s in self.leaves}
        top_level = int(lvl.max())
        up_links_of: dict[int, list[int]] = {}
        for lk in np.flatnonzero(lvl[net.link_dst] == lvl[net.link_src] + 1):
            up_links_of.setdefault(int(net.link_src[lk]), []).append(int(lk))
        for level in range(LEVEL_LEAF + 1, top_level + 1):
            nxt: dict[int, dict[int, list[tuple[int, ...]]]] = {}
            for s, anc in paths.items():
                out: dict[int, list[tuple[int, ...]]] = {}
                for node, plist in anc.items():
                    for lk in up_links_of.get(node, ()):
                        out.setdefault(int(net.link_dst[lk]), []).extend(p + (lk,) for p in plist)
                nxt[s] = out
            paths = nxt
            self.levels[level] = self._table(level, paths)

    def _table(self, level: int, paths: dict[int, dict[int, list[tuple[int, ...]]]]) -> LevelTable:
        tops = np.flatnonzero(self.net.node_level == level)
        top_index = {int(t): i for i, t in enumerate(tops)}
        n = len(self.leaves)
        r_max = max((len(a) for a in paths.values()), default=0)
        m_max = max((len(p) for a in paths.values() for p in a.values()), default=0)
        reach = np.full((n, max(r_max, 1)), -1, np.int64)
        rank = np.full((n, len(tops)), -1, np.int64)
        up = np.full((n, max(r_max, 1), max(m_max, 1), level - 1), -1, np.int64)
        for li, s in enumerate(self.leaves):
            for r, (t, plist) in enumerate(sorted(paths[int(s)].items())):
                reach[li, r] = top_index[t]
                rank[li, top_index[t]] = r
                up[li, r, :len(plist)] = np.asarray(plist, np.int64)
        return LevelTable(level, tops, reach, rank, up)

    def pair_level(self, src_leaf: np.ndarray, dst_leaf: np.ndarray) -> np.ndarray:
        """Lowest level with a common ancestor for each (leaf, leaf) pair (0 when equal)."""
        n = len(self.leaves)
        key = self.leaf_index[src_leaf] * n + self.leaf_index[dst_leaf]
        uniq, inv = np.unique(key, return_inverse=True)
        return self._level_of_pairs(uniq // n, uniq % n)[inv.ravel()]

    def _level_of_pairs(self, s: np.ndarray, d: np.ndarray) -> np.ndarray:
        """``pair_level`` for leaf indices (not node ids)."""
        out = np.zeros(len(s), np.int64)
        todo = s != d
        for level, tab in sorted(self.levels.items()):
            if not todo.any():
                break
            idx = np.flatnonzero(todo)
            common = np.zeros(len(idx), bool)
            # Chunks bound the (pairs x ancestors) temporary.
            for c in range(0, len(idx), 65536):
                part = idx[c:c + 65536]
                tops_s = tab.reach[s[part]]
                ok = tops_s >= 0
                common[c:c + 65536] = np.any(
                    ok & (tab.rank[d[part][:, None], np.where(ok, tops_s, 0)] >= 0), axis=1)
            out[idx[common]] = level
            todo[idx[common]] = False
        if todo.any():
            k = int(np.flatnonzero(todo)[0])
            names = self.net.node_names
            raise TopologyError(f"no up-down path from {names[self.leaves[s[k]]]} to "
                                f"{names[self.leaves[d[k]]]}")
        return out

    def candidates(self, level: int, src_leaf: np.ndarray, dst_leaf: np.ndarray,
                   capacity: np.ndarray | None = None) -> Candidates:
        """Every slot between the given leaf pairs, all of which meet at ``level``.

        ``capacity`` is the link capacity as the caller knows it (default: the
        network's); a slot over a link at 0 is not valid.
        """
        tab = self.levels[level]
        net = self.net
        s = self.leaf_index[src_leaf]
        d = self.leaf_index[dst_leaf]
        tops = tab.reach[s]                                    # (n, R)
        rd = np.where(tops >= 0, tab.rank[d[:, None], np.maximum(tops, 0)], -1)
        up = tab.up[s]                                         # (n, R, M, h)
        dup = tab.up[d[:, None], np.maximum(rd, 0)]            # (n, R, M, h) d's up paths
        down = np.where(dup >= 0, net.reverse_of(np.maximum(dup, 0)), -1)[..., ::-1]
        down = np.where((rd >= 0)[..., None, None], down, -1)
        cap_ext = np.append(net.capacity if capacity is None else capacity, 0.0)
        up_cap = np.where(up[..., 0] >= 0, cap_ext[up].min(axis=-1), 0.0)        # (n, R, M)
        down_cap = np.where(down[..., 0] >= 0, cap_ext[down].min(axis=-1), 0.0)  # (n, R, M)
        capacity = np.minimum(up_cap[..., :, None], down_cap[..., None, :])
        return Candidates(up, np.ascontiguousarray(down), capacity > 0, capacity)
