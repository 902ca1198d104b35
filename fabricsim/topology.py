"""Fabric graphs for the simulator: switches, directed links, NIC endpoints.

A ``Network`` is a layered Clos: level 0 are NIC endpoints, level 1 leaves
(ToR / edge switches), level 2 spines (or aggregation switches), level 3
cores. Every cable is two directed links; parallel cables are separate links.
A failed link has capacity 0; a reduced link has its reduced capacity.
Capacities are in bit/s.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

import fabricmodel

LEVEL_NIC, LEVEL_LEAF, LEVEL_SPINE, LEVEL_CORE = 0, 1, 2, 3
GBIT = 1e9


class TopologyError(ValueError):
    """An inconsistent topology request or description."""


@dataclass(frozen=True, eq=False)
class Network:
    """A layered fabric graph; build it with a generator or ``from_fabric``."""

    node_names: tuple[str, ...]
    """Node names; NIC endpoints are ``<host>/<nic>``."""
    node_level: np.ndarray
    """Level of every node (0 NIC, 1 leaf, 2 spine/agg, 3 core)."""
    link_src: np.ndarray
    """Source node of every directed link."""
    link_dst: np.ndarray
    """Destination node of every directed link."""
    capacity: np.ndarray
    """Capacity of every directed link in bit/s (0 = failed)."""
    nominal: np.ndarray
    """Capacity as built, before failures and reductions."""
    host_names: tuple[str, ...]
    """Host names; a host has one NIC per rail."""
    nic_node: np.ndarray
    """(hosts, rails) node index of each NIC endpoint."""
    name: str = "fabric"

    def __post_init__(self) -> None:
        n = len(self.node_names)
        if not (len(self.link_src) == len(self.link_dst) == len(self.capacity) == len(self.nominal)):
            raise TopologyError("link arrays differ in length")
        if len(self.link_src) and (self.link_src.max() >= n or self.link_dst.max() >= n):
            raise TopologyError("a link names a node that does not exist")
        if np.any(self.capacity < 0):
            raise TopologyError("negative link capacity")
        if self.nic_node.ndim != 2 or self.nic_node.shape[0] != len(self.host_names):
            raise TopologyError("nic_node must be (hosts, rails)")
        if np.any(self.node_level[self.nic_node.ravel()] != LEVEL_NIC):
            raise TopologyError("a NIC endpoint is not a level-0 node")
        # Each NIC has exactly one access link up and one down (its last hop).
        nic_set = self.nic_node.ravel()
        up = np.full(n, -1, np.int64)
        down = np.full(n, -1, np.int64)
        for arr, key in ((up, self.link_src), (down, self.link_dst)):
            sel = np.flatnonzero(self.node_level[key] == LEVEL_NIC)
            counts = np.bincount(key[sel], minlength=n)
            if np.any(counts[nic_set] != 1):
                bad = self.node_names[int(nic_set[np.flatnonzero(counts[nic_set] != 1)[0]])]
                raise TopologyError(f"NIC {bad} must have exactly one access link each way")
            arr[key[sel]] = sel
        object.__setattr__(self, "_access_up", up)
        object.__setattr__(self, "_access_down", down)
        object.__setattr__(self, "_index", {nm: i for i, nm in enumerate(self.node_names)})
        if len(self._index) != n:
            raise TopologyError("duplicate node names")

    # -- sizes -------------------------------------------------------------
    @property
    def n_links(self) -> int:
        """Number of directed links."""
        return len(self.link_src)

    @property
    def n_hosts(self) -> int:
        """Number of hosts."""
        return self.nic_node.shape[0]

    @property
    def n_rails(self) -> int:
        """NICs (rails) per host."""
        return self.nic_node.shape[1]

    @property
    def alive(self) -> np.ndarray:
        """Mask of links that carry traffic."""
        return self.capacity > 0

    def access_up(self, nic_nodes: np.ndarray) -> np.ndarray:
        """Link ids from the given NIC endpoints to their leaves."""
        return self._access_up[nic_nodes]

    def access_down(self, nic_nodes: np.ndarray) -> np.ndarray:
        """Link ids from their leaves to the given NIC endpoints."""
        return self._access_down[nic_nodes]

    def leaf_of(self, nic_nodes: np.ndarray) -> np.ndarray:
        """Leaf node of each NIC endpoint."""
        return self.link_dst[self._access_up[nic_nodes]]

    def node(self, name: str) -> int:
        """Index of the node called ``name``."""
        try:
            return self._index[name]
        except KeyError:
            raise TopologyError(f"no node {name!r} in {self.name}") from None

    def links_between(self, a: str, b: str) -> np.ndarray:
        """Directed link ids from node ``a`` to node ``b`` (parallel links in order)."""
        ia, ib = self.node(a), self.node(b)
        ids = np.flatnonzero((self.link_src == ia) & (self.link_dst == ib))
        if not len(ids):
            raise TopologyError(f"no link between {a} and {b}")
        return ids

    def link_name(self, link: int) -> str:
        """``src->dst`` name of a directed link."""
        return f"{self.node_names[self.link_src[link]]}->{self.node_names[self.link_dst[link]]}"

    def reverse_of(self, links: np.ndarray) -> np.ndarray:
        """The opposite direction of each link (the k-th parallel maps to the k-th)."""
        return self._reverse[np.asarray(links, np.int64)]

    @property
    def _reverse(self) -> np.ndarray:
        rev = self.__dict__.get("_rev")
        if rev is None:
            n = len(self.node_names)
            key = self.link_src * n + self.link_dst
            rkey = self.link_dst * n + self.link_src
            order = np.lexsort((np.arange(self.n_links), key))
            rorder = np.lexsort((np.arange(self.n_links), rkey))
            if not np.array_equal(key[order], rkey[rorder]):
                raise TopologyError("every link needs a reverse link")
            rev = np.empty(self.n_links, np.int64)
            rev[rorder] = order
            object.__setattr__(self, "_rev", rev)
        return rev

    # -- modified copies ------------------------------------------------------
    def with_capacity(self, links: np.ndarray, factor: float) -> Network:
        """A copy where the given links (both directions) run at ``factor`` of nominal."""
        if not 0 <= factor <= 1:
            raise TopologyError(f"capacity factor must be within 0..1, got {factor}")
        links = np.asarray(links, np.int64)
        if len(links) and (links.min() < 0 or links.max() >= self.n_links):
            raise TopologyError("link id out of range")
        both = np.concatenate([links, self.reverse_of(links)])
        cap = self.capacity.copy()
        cap[both] = self.nominal[both] * factor
        return dataclasses.replace(self, capacity=cap)

    def with_failed(self, links: np.ndarray) -> Network:
        """A copy where the given links (both directions) are down."""
        return self.with_capacity(links, 0.0)

    def cable_ids(self, kind: str = "fabric") -> np.ndarray:
        """One directed link per cable: ``fabric`` (switch-switch, upward) or ``access``."""
        lvl_s, lvl_d = self.node_level[self.link_src], self.node_level[self.link_dst]
        if kind == "fabric":
            return np.flatnonzero((lvl_s >= LEVEL_LEAF) & (lvl_d > lvl_s))
        if kind == "access":
            return np.flatnonzero(lvl_s == LEVEL_NIC)
        raise TopologyError(f"unknown cable kind {kind!r} (fabric or access)")

    def summary(self) -> dict[str, Any]:
        """Counts by level and capacities, for reports."""
        levels = {int(lv): int(np.sum(self.node_level == lv)) for lv in np.unique(self.node_level)}
        fab = self.cable_ids("fabric")
        return {
            "name": self.name, "hosts": self.n_hosts, "rails": self.n_rails,
            "nodes_per_level": levels, "fabric_cables": len(fab),
            "failed_cables": int(np.sum(self.capacity[fab] == 0)),
            "reduced_cables": int(np.sum((self.capacity[fab] > 0)
                                         & (self.capacity[fab] < self.nominal[fab]))),
            "failed_nic_links": int(np.sum(self.capacity[self.cable_ids("access")] == 0)),
        }


class _Builder:
    """Accumulates nodes and cables, then freezes them into a ``Network``."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.levels: list[int] = []
        self.src: list[int] = []
        self.dst: list[int] = []
        self.cap: list[float] = []
        self.up: list[bool] = []

    def add_node(self, name: str, level: int) -> int:
        self.names.append(name)
        self.levels.append(level)
        return len(self.names) - 1

    def add_cable(self, a: int, b: int, bps: float, up: bool = True) -> None:
        if not bps > 0:
            raise TopologyError(f"cable {self.names[a]}-{self.names[b]} needs a positive capacity")
        for s, d in ((a, b), (b, a)):
            self.src.append(s)
            self.dst.append(d)
            self.cap.append(bps)
            self.up.append(up)

    def build(self, name: str, host_names: list[str], nic_node: np.ndarray) -> Network:
        nominal = np.asarray(self.cap, float)
        return Network(
            node_names=tuple(self.names), node_level=np.asarray(self.levels, np.int8),
            link_src=np.asarray(self.src, np.int64), link_dst=np.asarray(self.dst, np.int64),
            capacity=np.where(np.asarray(self.up, bool), nominal, 0.0), nominal=nominal,
            host_names=tuple(host_names), nic_node=np.asarray(nic_node, np.int64), name=name)


def _positive_int(label: str, value: Any, lo: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < lo:
        raise TopologyError(f"{label} must be an integer >= {lo}, got {value!r}")
    return int(value)


def _positive_float(label: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise TopologyError(f"{label} must be a positive number, got {value!r}")
    return float(value)


def _attach_hosts(b: _Builder, leaves: list[int], ports_per_leaf: int, rails: int,
                  rail_optimised: bool, nic_bps: float) -> tuple[list[str], np.ndarray]:
    """Create hosts and wire their NICs to leaves (rail-optimised or host-per-leaf)."""
    if rail_optimised:
        if len(leaves) % rails:
            raise TopologyError(f"rail-optimised hosts need leaves ({len(leaves)}) to be a "
                                f"multiple of rails ({rails})")
        groups = [leaves[i:i + rails] for i in range(0, len(leaves), rails)]
        hosts_per_group = ports_per_leaf
        layout = [(g, j) for g in range(len(groups)) for j in range(hosts_per_group)]
    else:
        if ports_per_leaf % rails:
            raise TopologyError(f"ports per leaf ({ports_per_leaf}) must be a multiple of rails "
                                f"({rails}) when a host's NICs share one leaf")
        hosts_per_group = ports_per_leaf // rails
        groups = [[leaf] * rails for leaf in leaves]
        layout = [(g, j) for g in range(len(groups)) for j in range(hosts_per_group)]
    host_names, nic_node = [], []
    for h, (g, _j) in enumerate(layout):
        host_names.append(f"h{h}")
        row = []
        for r in range(rails):
            nic = b.add_node(f"h{h}/nic{r}", LEVEL_NIC)
            b.add_cable(nic, groups[g][r], nic_bps)
            row.append(nic)
        nic_node.append(row)
    return host_names, np.asarray(nic_node, np.int64).reshape(len(host_names), rails)


def leaf_spine(leaves: int, spines: int, ports_per_leaf: int, *, rails: int = 1,
               rail_optimised: bool = True, nic_gbps: float = 400.0,
               oversubscription: float = 1.0, parallel: int = 1,
               name: str | None = None) -> Network:
    """Two-tier leaf-spine: ``ports_per_leaf`` NIC ports per leaf, uplinks sized for the ratio.

    Each leaf has ``parallel`` cables to every spine; the uplink capacity of a
    leaf is its host-facing capacity divided by ``oversubscription``.
    """
    leaves = _positive_int("leaves", leaves)
    spines = _positive_int("spines", spines)
    ports = _positive_int("ports_per_leaf", ports_per_leaf)
    rails = _positive_int("rails", rails)
    parallel = _positive_int("parallel", parallel)
    nic_bps = _positive_float("nic_gbps", nic_gbps) * GBIT
    over = _positive_float("oversubscription", oversubscription)
    b = _Builder()
    leaf_ids = [b.add_node(f"leaf{i}", LEVEL_LEAF) for i in range(leaves)]
    spine_ids = [b.add_node(f"spine{j}", LEVEL_SPINE) for j in range(spines)]
    up_bps = ports * nic_bps / (over * spines * parallel)
    for lf in leaf_ids:
        for sp in spine_ids:
            for _ in range(parallel):
                b.add_cable(lf, sp, up_bps)
    hosts, nics = _attach_hosts(b, leaf_ids, ports, rails, rail_optimised, nic_bps)
    return b.build(name or f"leafspine-{leaves}x{spines}", hosts, nics)


def fat_tree(k: int, *, pods: int | None = None, ports_per_leaf: int | None = None,
             rails: int = 1, rail_optimised: bool = True, nic_gbps: float = 400.0,
             oversubscription: float = 1.0, parallel: int = 1,
             name: str | None = None) -> Network:
    """Three-tier k-ary fat-tree: pods of k/2 edge and k/2 aggregation switches, (k/2)^2 cores.

    ``pods`` (default k) and ``ports_per_leaf`` (default k/2) size the host
    side; edge uplinks carry the edge's host capacity divided by
    ``oversubscription``; aggregation-core capacity matches edge-aggregation.
    """
    k = _positive_int("k", k, 2)
    if k % 2:
        raise TopologyError(f"fat-tree k must be even, got {k}")
    half = k // 2
    pods = _positive_int("pods", k if pods is None else pods)
    ports = _positive_int("ports_per_leaf", half if ports_per_leaf is None else ports_per_leaf)
    rails = _positive_int("rails", rails)
    parallel = _positive_int("parallel", parallel)
    nic_bps = _positive_float("nic_gbps", nic_gbps) * GBIT
    over = _positive_float("oversubscription", oversubscription)
    b = _Builder()
    edges = [[b.add_node(f"p{p}e{i}", LEVEL_LEAF) for i in range(half)] for p in range(pods)]
    aggs = [[b.add_node(f"p{p}a{i}", LEVEL_SPINE) for i in range(half)] for p in range(pods)]
    cores = [[b.add_node(f"c{a}.{j}", LEVEL_CORE) for j in range(half)] for a in range(half)]
    ea_bps = ports * nic_bps / (over * half * parallel)
    ac_bps = half * ea_bps / half  # an aggregation switch's up capacity equals its down capacity
    for p in range(pods):
        for e in edges[p]:
            for a in aggs[p]:
                for _ in range(parallel):
                    b.add_cable(e, a, ea_bps)
        for ai, a in enumerate(aggs[p]):
            for c in cores[ai]:
                for _ in range(parallel):
                    b.add_cable(a, c, ac_bps)
    flat = [e for pod in edges for e in pod]
    if rail_optimised and half % rails:
        raise TopologyError(f"rail-optimised fat-tree needs k/2 ({half}) to be a multiple of "
                            f"rails ({rails}) so that a host's rails share a pod")
    hosts, nics = _attach_hosts(b, flat, ports, rails, rail_optimised, nic_bps)
    return b.build(name or f"fattree-k{k}", hosts, nics)


def from_fabric(fabric: fabricmodel.Fabric) -> Network:
    """Convert a ``fabricmodel.Fabric`` (leaf-spine description) into a ``Network``.

    Link capacities come from the description (Mbit/s), ``status: down``
    links start failed; hosts keep their NIC order as rails.
    """
    b = _Builder()
    ids: dict[str, int] = {}
    for sw in fabric.switches:
        ids[sw.name] = b.add_node(sw.name, LEVEL_LEAF if sw.is_leaf else LEVEL_SPINE)
    for lk in fabric.links:
        b.add_cable(ids[lk.leaf.switch], ids[lk.spine.switch], lk.capacity_mbps * 1e6, lk.up)
    if not fabric.hosts:
        raise TopologyError(f"fabric {fabric.name!r} has no hosts to simulate")
    rails = len(fabric.hosts[0].nics)
    host_names, nic_node = [], []
    for h in fabric.hosts:
        if len(h.nics) != rails:
            raise TopologyError(f"host {h.name!r} has {len(h.nics)} NICs, others have {rails}: "
                                "the simulator needs the same rail count on every host")
        row = []
        for nic in h.nics:
            n = b.add_node(f"{h.name}/{nic.name}", LEVEL_NIC)
            b.add_cable(n, ids[nic.leaf], nic.capacity_mbps * 1e6)
            row.append(n)
        host_names.append(h.name)
        nic_node.append(row)
    return b.build(fabric.name, host_names, np.asarray(nic_node, np.int64))


def load_fabric(path: str) -> Network:
    """Load a fabric description file (the testbed's format) as a ``Network``."""
    try:
        desc = fabricmodel.load(path)
    except fabricmodel.FabricError as e:
        raise TopologyError(str(e)) from None
    return from_fabric(desc)
