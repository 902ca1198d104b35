"""Hop-by-hop ECMP: every switch hashes the flow onto one of its own next hops.

End-to-end ECMP (a uniform choice among the pair's paths) is what an ideal
hash gives. Real switches choose per hop, from the same packet fields: when
every switch uses the same hash function with the same seed, the choice at
the second tier repeats the first one (*polarisation*: in a fat-tree the
aggregation switch reached by hash value h sends all of it to the same core,
so most cores idle), which is why vendors let operators seed each switch
differently. ``HopTable.walk`` takes the next hop at every switch from the
flow's hash, modulo the number of next hops that still reach the
destination, with one seed for all switches or one per switch.
"""

from __future__ import annotations

import numpy as np

from fabricsim.topology import LEVEL_LEAF, Network

MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def mix64(x: np.ndarray) -> np.ndarray:
    """A 64-bit finaliser (the splitmix64 output function): spreads every input bit."""
    x = x.astype(np.uint64)
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return x


class HopTable:
    """Per-node next hops of a layered Clos, for hashing flows hop by hop."""

    def __init__(self, net: Network, salts: np.ndarray | None = None):
        self.net = net
        lvl = net.node_level.astype(np.int64)
        n = len(lvl)
        src, dst = net.link_src, net.link_dst
        is_up = (lvl[dst] == lvl[src] + 1) & (lvl[src] >= LEVEL_LEAF)
        is_down = (lvl[dst] == lvl[src] - 1) & (lvl[dst] >= LEVEL_LEAF)
        self.up = _padded(src[is_up], np.flatnonzero(is_up), n)
        self.down = _padded(src[is_down], np.flatnonzero(is_down), n)
        self.leaves = np.flatnonzero(lvl == LEVEL_LEAF)
        self.leaf_index = np.full(n, -1, np.int64)
        self.leaf_index[self.leaves] = np.arange(len(self.leaves))
        self.salts = salts

    def _down_reach(self, capacity: np.ndarray) -> np.ndarray:
        """(nodes, leaves): the node reaches the leaf going only down over live links."""
        lvl = self.net.node_level.astype(np.int64)
        reach = np.zeros((len(lvl), len(self.leaves)), bool)
        reach[self.leaves, np.arange(len(self.leaves))] = True
        for level in range(LEVEL_LEAF + 1, int(lvl.max()) + 1):
            for node in np.flatnonzero(lvl == level):
                links = self.down[node][self.down[node] >= 0]
                links = links[capacity[links] > 0]
                if len(links):
                    reach[node] = reach[self.net.link_dst[links]].any(axis=0)
        return reach

    def _up_ok(self, top: int, reach: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        """(nodes, leaves): from the node, some live up path reaches a level-``top`` switch
        that reaches the leaf going down."""
        lvl = self.net.node_level.astype(np.int64)
        ok = np.zeros_like(reach)
        ok[lvl == top] = reach[lvl == top]
        for level in range(top - 1, LEVEL_LEAF - 1, -1):
            for node in np.flatnonzero(lvl == level):
                links = self.up[node][self.up[node] >= 0]
                links = links[capacity[links] > 0]
                if len(links):
                    ok[node] = ok[self.net.link_dst[links]].any(axis=0)
        return ok

    def _pick(self, cand: np.ndarray, valid: np.ndarray, h: np.ndarray,
              node: np.ndarray) -> np.ndarray:
        """The hashed choice among each row's valid candidate links (-1 where none)."""
        count = valid.sum(axis=1)
        key = h if self.salts is None else mix64(h ^ self.salts[node])
        k = (key % np.maximum(count, 1).astype(np.uint64)).astype(np.int64)
        cum = np.cumsum(valid, axis=1)
        col = np.argmax(cum > k[:, None], axis=1)
        out = cand[np.arange(len(cand)), col]
        return np.where(count > 0, out, -1)

    def walk(self, src_leaf: np.ndarray, dst_leaf: np.ndarray, top: int, h: np.ndarray,
             capacity: np.ndarray) -> np.ndarray:
        """(n, 2(top-1)) links of each flow's hop-by-hop path; -1 rows where a switch had
        no next hop that reaches the destination."""
        reach = self._down_reach(capacity)
        ok = self._up_ok(top, reach, capacity)
        d = self.leaf_index[dst_leaf]
        n = len(src_leaf)
        hops = top - 1
        out = np.full((n, 2 * hops), -1, np.int64)
        node = src_leaf.astype(np.int64).copy()
        alive = np.ones(n, bool)
        for step in range(hops):
            cand = self.up[node]
            c = np.maximum(cand, 0)
            valid = (cand >= 0) & (capacity[c] > 0) & ok[self.net.link_dst[c], d[:, None]]
            link = self._pick(cand, valid, h, node)
            alive &= link >= 0
            out[:, step] = link
            node = np.where(link >= 0, self.net.link_dst[np.maximum(link, 0)], node)
        for step in range(hops):
            cand = self.down[node]
            c = np.maximum(cand, 0)
            valid = (cand >= 0) & (capacity[c] > 0) & reach[self.net.link_dst[c], d[:, None]]
            link = self._pick(cand, valid, h, node)
            alive &= link >= 0
            out[:, hops + step] = link
            node = np.where(link >= 0, self.net.link_dst[np.maximum(link, 0)], node)
        out[~alive] = -1
        return out


def _padded(owner: np.ndarray, links: np.ndarray, n_nodes: int) -> np.ndarray:
    """(nodes, max degree) link ids grouped by owner node in link order, -1 padded."""
    order = np.lexsort((links, owner))
    owner, links = owner[order], links[order]
    counts = np.bincount(owner, minlength=n_nodes)
    width = max(int(counts.max()) if len(counts) else 0, 1)
    out = np.full((n_nodes, width), -1, np.int64)
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    col = np.arange(len(links)) - start[owner]
    out[owner, col] = links
    return out
