"""Max-min fair rates by progressive filling on a sparse flow x link incidence.

Progressive filling raises every unfrozen flow's rate by the same step until
some link fills, freezes the flows crossing it and repeats (Bertsekas &
Gallager, *Data Networks*, 2nd ed., section 6.5.2). We freeze, in each
round, every link whose fair share (spare capacity over unfrozen demand) is
no larger than the fair share of any link it shares a flow with: such a link
would fill before any of its flows froze elsewhere, so the result is the
same allocation while the number of rounds drops from the number of distinct
rates to the depth of the bottleneck chain. A flow may load a link with a
weight (a sprayed flow puts a fraction of its rate on each path).
"""

from __future__ import annotations

import numpy as np

SATURATED = 1e-9
"""Relative slack under which two fair shares count as equal."""


class Incidence:
    """Which links each flow loads, and by how much per unit of its rate.

    ``flow_links`` is (F, K) with -1 padding. Flows may also share rows of a
    *group* matrix in coordinate form (``group_link``, ``group_id``,
    ``group_weight``) with ``flow_group`` naming each flow's group (-1 for
    none): sprayed flows between the same two leaves share one group, which
    keeps the matrix small.
    """

    def __init__(self, n_links: int, flow_links: np.ndarray, flow_group: np.ndarray | None = None,
                 group_link: np.ndarray | None = None, group_id: np.ndarray | None = None,
                 group_weight: np.ndarray | None = None):
        self.n_links = n_links
        self.n_flows = flow_links.shape[0]
        # Keep only columns that some flow uses; pad -1 maps to a dummy link.
        cols = [c for c in range(flow_links.shape[1]) if np.any(flow_links[:, c] >= 0)]
        self._cols = [np.where(flow_links[:, c] >= 0, flow_links[:, c], n_links).astype(np.int64)
                      for c in cols]
        self._group = None
        if flow_group is not None and group_link is not None and np.any(flow_group >= 0):
            # A group may have no link (a pair without a live path): size by both sides.
            n_groups = max(int(group_id.max()) + 1 if len(group_id) else 0,
                           int(flow_group.max()) + 1)
            fg = np.where(flow_group >= 0, flow_group, n_groups).astype(np.int64)
            self._group = (fg, n_groups, group_link.astype(np.int64), group_id.astype(np.int64),
                           group_weight.astype(float))

    def subset(self, keep: np.ndarray) -> Incidence:
        """The incidence of the flows selected by the boolean mask ``keep``."""
        sub = object.__new__(Incidence)
        sub.n_links = self.n_links
        sub._cols = [c[keep] for c in self._cols]
        sub.n_flows = int(np.count_nonzero(keep))
        sub._group = None
        if self._group is not None:
            fg, ng, gl, gi, gw = self._group
            sub._group = (fg[keep], ng, gl, gi, gw)
        return sub

    def load(self, x: np.ndarray) -> np.ndarray:
        """Per-link load of flow rates ``x`` (A @ x)."""
        out = np.zeros(self.n_links + 1)
        for col in self._cols:
            out += np.bincount(col, weights=x, minlength=self.n_links + 1)
        out = out[:self.n_links]
        if self._group is not None:
            fg, ng, gl, gi, gw = self._group
            per_group = np.bincount(fg, weights=x, minlength=ng + 1)[:ng]
            out = out + np.bincount(gl, weights=gw * per_group[gi], minlength=self.n_links)
        return out

    def flow_min(self, link_value: np.ndarray) -> np.ndarray:
        """Per flow, the minimum of ``link_value`` over the links it loads (inf if none)."""
        ext = np.append(link_value, np.inf)
        out = np.full(self.n_flows, np.inf)
        for col in self._cols:
            np.minimum(out, ext[col], out=out)
        if self._group is not None:
            fg, ng, gl, gi, gw = self._group
            g_min = np.full(ng + 1, np.inf)
            np.minimum.at(g_min, gi, np.where(gw > 0, link_value[gl], np.inf))
            np.minimum(out, g_min[fg], out=out)
        return out

    def link_min(self, flow_value: np.ndarray) -> np.ndarray:
        """Per link, the minimum of ``flow_value`` over the flows that load it (inf if none)."""
        out = np.full(self.n_links + 1, np.inf)
        for col in self._cols:
            np.minimum.at(out, col, flow_value)
        out = out[:self.n_links]
        if self._group is not None:
            fg, ng, gl, gi, gw = self._group
            g_min = np.full(ng + 1, np.inf)
            np.minimum.at(g_min, fg, flow_value)
            np.minimum.at(out, gl, np.where(gw > 0, g_min[gi], np.inf))
        return out

    def touches(self, link_mask: np.ndarray) -> np.ndarray:
        """Flows that load any link in ``link_mask``."""
        return self.flow_min(np.where(link_mask, 0.0, 1.0)) == 0.0


def max_min_rates(inc: Incidence, capacity: np.ndarray) -> np.ndarray:
    """Max-min fair rate of every flow in ``inc`` over links of ``capacity`` (bit/s)."""
    x = np.zeros(inc.n_flows)
    spare = capacity.astype(float).copy()
    # Flows over a failed link can get nothing; they stay at zero.
    starved = inc.touches(capacity <= 0)
    free_idx = np.flatnonzero(~starved)
    sub = inc.subset(~starved) if starved.any() else inc
    # Work on the unfrozen flows only: most freeze in the first rounds.
    while len(free_idx):
        demand = sub.load(np.ones(sub.n_flows))
        used = demand > 0
        share = np.full(inc.n_links, np.inf)
        share[used] = np.maximum(spare[used], 0.0) / demand[used]
        flow_share = sub.flow_min(share)
        neighbour = sub.link_min(flow_share)
        bottleneck = used & (share <= neighbour * (1 + SATURATED))
        if not bottleneck.any():
            break
        # Each freezing flow takes the share of its bottleneck link (the smallest of its links).
        frozen = sub.touches(bottleneck)
        x[free_idx[frozen]] = flow_share[frozen]
        spare -= sub.load(np.where(frozen, flow_share, 0.0))
        free_idx = free_idx[~frozen]
        sub = sub.subset(~frozen)
    return x
