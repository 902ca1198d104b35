"""Helpers the policies share to write chosen paths into the flow state."""

from __future__ import annotations

import numpy as np

from fabricsim.engine import FlowState, SimulationError

CHUNK = 4096  # flows per candidate batch: bounds the (flows x slots) temporaries


def fail_no_path(st: FlowState, flows: np.ndarray, ok: np.ndarray) -> None:
    """Raise for the first flow without a live path."""
    # A flow from or to a dead NIC has no path whatever the fabric does: it waits (starved)
    # for the host library to move it.
    ok = ok | (st.capacity[st.flow_links[flows, 0]] <= 0) | (st.capacity[st.flow_links[flows, -1]] <= 0)
    if not ok.all():
        i = int(flows[np.flatnonzero(~ok)[0]])
        net = st.net
        raise SimulationError(f"no live path from {net.node_names[st.src[i]]} to "
                              f"{net.node_names[st.dst[i]]}: every candidate crosses a "
                              "failed link")


def by_pair(st: FlowState, ids: np.ndarray):
    """Yield (level, [flow ids of each leaf pair]) in chunks of at most CHUNK pairs."""
    ids = ids[st.level[ids] > 0]
    if not len(ids):
        return
    key = st.src_leaf[ids] * len(st.net.node_names) + st.dst_leaf[ids]
    order = np.lexsort((key, st.level[ids]))
    ids, key = ids[order], key[order]
    cut = np.flatnonzero(np.diff(key)) + 1
    groups = np.split(ids, cut)
    levels = st.level[[g[0] for g in groups]]
    for level in np.unique(levels):
        members = [g for g, lv in zip(groups, levels, strict=True) if lv == level]
        for c in range(0, len(members), CHUNK):
            yield int(level), members[c:c + CHUNK]


def set_fabric_links(st: FlowState, flows: np.ndarray, links: np.ndarray) -> None:
    """Write the fabric part (up then down links) of the flows' paths."""
    h = links.shape[1]
    st.flow_links[flows, 1:1 + h] = links
    st.flow_links[flows, 1 + h:-1] = -1


def weighted_pick(rng: np.random.Generator, eligible: np.ndarray,
                  weight: np.ndarray) -> np.ndarray:
    """Per row, a random eligible flat slot with probability proportional to ``weight``."""
    n = eligible.shape[0]
    flat_e = eligible.reshape(n, -1)
    flat_w = weight.reshape(n, -1)
    # Exponential races: argmin of E/w is slot i with probability w_i / sum(w).
    with np.errstate(divide="ignore"):
        key = np.where(flat_e & (flat_w > 0), rng.exponential(size=flat_e.shape) / flat_w, np.inf)
    return np.argmin(key, axis=1)


def on_dead_paths(st: FlowState) -> np.ndarray:
    """Running fabric flows whose current path crosses a link the routing knows is dead."""
    act = np.flatnonzero(st.active & (st.level > 0))
    if not len(act):
        return act
    fab = st.flow_links[act, 1:-1]
    dead = (fab >= 0) & (st.view[np.maximum(fab, 0)] <= 0)
    nic_ok = (st.capacity[st.flow_links[act, 0]] > 0) & (st.capacity[st.flow_links[act, -1]] > 0)
    return act[dead.any(axis=1) & nic_ok]
