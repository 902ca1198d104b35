"""Traffic for the simulator: collectives and a standard flow-size distribution.

A GPU is ``host * rails + local``; GPU ``local`` sits next to NIC ``local %
rails``. Traffic between GPUs of one host stays on the intra-host path (the
NVLink stand-in) and is not simulated. Every connection (NIC pair) is split
into ``qps`` equal flows, as RDMA libraries spread a connection over queue
pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabricsim.topology import Network

MSS = 1460
# Web-search flow sizes (DCTCP, Alizadeh et al., SIGCOMM 2010, as tabulated for
# pFabric, SIGCOMM 2013): CDF breakpoints in 1460-byte packets, linear in between.
WEB_SEARCH_PACKETS = np.array([6, 6, 13, 19, 33, 53, 133, 667, 1333, 3333, 6667, 20000], float)
WEB_SEARCH_CDF = np.array([0, 0.15, 0.2, 0.3, 0.4, 0.53, 0.6, 0.7, 0.8, 0.9, 0.97, 1.0])


class WorkloadError(ValueError):
    """A workload that cannot be built on the given network."""


@dataclass(frozen=True, eq=False)
class Workload:
    """Flows to simulate: NIC endpoints, bytes, start time and collective id."""

    name: str
    src: np.ndarray
    """Source NIC node of each flow."""
    dst: np.ndarray
    """Destination NIC node of each flow."""
    size: np.ndarray
    """Bytes of each flow."""
    start: np.ndarray
    """Start time of each flow (s)."""
    coll: np.ndarray
    """Collective (group) each flow belongs to; flows of one collective finish it together."""

    def __post_init__(self) -> None:
        n = len(self.src)
        if not (len(self.dst) == len(self.size) == len(self.start) == len(self.coll) == n):
            raise WorkloadError("flow arrays differ in length")
        if n == 0:
            raise WorkloadError(f"workload {self.name!r} has no traffic crossing the fabric "
                                "(every pair is on one host?)")
        if np.any(self.size <= 0) or np.any(self.start < 0):
            raise WorkloadError("flow sizes must be positive and start times non-negative")
        if np.any(self.src == self.dst):
            raise WorkloadError("a flow cannot go from a NIC to itself")

    @property
    def n_flows(self) -> int:
        """Number of flows."""
        return len(self.src)


def _check_positive(label: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer) or not value > 0:
        raise WorkloadError(f"{label} must be positive, got {value!r}")


PLACEMENTS = ("contiguous", "hosts", "random")


def _groups(net: Network, group_size: int, placement: str, rng: np.random.Generator) -> np.ndarray:
    """(groups, group_size) GPU ids.

    ``contiguous``: consecutive GPUs; ``hosts``: whole hosts picked at random
    (what a scheduler allocating full nodes produces); ``random``: GPUs scattered.
    """
    rails = net.n_rails
    n_gpus = net.n_hosts * rails
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 2:
        raise WorkloadError(f"group size must be an integer >= 2, got {group_size!r}")
    if n_gpus % group_size:
        raise WorkloadError(f"group size {group_size} does not divide the {n_gpus} GPUs")
    if placement == "contiguous":
        order = np.arange(n_gpus)
    elif placement == "hosts":
        if group_size % rails:
            raise WorkloadError(f"placement 'hosts' needs group size {group_size} to be a "
                                f"multiple of the {rails} GPUs per host")
        hosts = rng.permutation(net.n_hosts)
        order = (hosts[:, None] * rails + np.arange(rails)).ravel()
    elif placement == "random":
        order = rng.permutation(n_gpus)
    else:
        raise WorkloadError(f"placement must be one of {', '.join(PLACEMENTS)}, got {placement!r}")
    return order.reshape(-1, group_size)


def _connections(name: str, src: np.ndarray, dst: np.ndarray, size: np.ndarray, coll: np.ndarray,
                 qps: int) -> Workload:
    """Merge GPU-pair traffic into NIC-pair connections per collective, then into qps flows."""
    if isinstance(qps, bool) or not isinstance(qps, int) or qps < 1:
        raise WorkloadError(f"qps must be an integer >= 1, got {qps!r}")
    keys = np.stack([coll, src, dst])
    uniq, inv = np.unique(keys, axis=1, return_inverse=True)
    total = np.bincount(inv.ravel(), weights=size, minlength=uniq.shape[1])
    rep = lambda a: np.repeat(a, qps)  # noqa: E731
    return Workload(name, rep(uniq[1]), rep(uniq[2]), rep(total / qps),
                    np.zeros(uniq.shape[1] * qps), rep(uniq[0]))


def all_to_all(net: Network, group_size: int, bytes_per_pair: float, *, qps: int = 4,
               placement: str = "hosts", pxn: bool = True,
               rng: np.random.Generator | None = None) -> Workload:
    """All-to-all inside expert-parallel groups: every GPU sends ``bytes_per_pair`` to each peer.

    With ``pxn`` (NCCL's PCIe x NVLink path) data first moves over the intra-host
    path to the GPU on the destination's rail, so inter-host traffic stays on one rail.
    """
    _check_positive("bytes_per_pair", bytes_per_pair)
    rng = rng or np.random.default_rng(0)
    groups = _groups(net, group_size, placement, rng)
    g = groups.shape[1]
    a = np.repeat(groups, g, axis=1).ravel()
    b = np.tile(groups, (1, g)).ravel()
    coll = np.repeat(np.arange(len(groups)), g * g)
    rails = net.n_rails
    keep = (a // rails) != (b // rails)
    a, b, coll = a[keep], b[keep], coll[keep]
    src_rail = (b % rails) if pxn else (a % rails)
    src = net.nic_node[a // rails, src_rail]
    dst = net.nic_node[b // rails, b % rails]
    return _connections("all-to-all", src, dst, np.full(len(a), float(bytes_per_pair)), coll, qps)


def ring_all_reduce(net: Network, group_size: int, bytes_per_gpu: float, *, qps: int = 4,
                    placement: str = "hosts", rng: np.random.Generator | None = None) -> Workload:
    """Ring all-reduce of ``bytes_per_gpu`` per GPU: one ring of hosts per rail, pipelined.

    Ranks first reduce inside the host, then each rail runs a ring over the
    group's hosts carrying 1/rails of the data; every ring edge moves
    2(H-1)/H of that share (reduce-scatter plus all-gather).
    """
    _check_positive("bytes_per_gpu", bytes_per_gpu)
    rng = rng or np.random.default_rng(0)
    rails = net.n_rails
    if group_size % rails:
        raise WorkloadError(f"ring all-reduce groups are whole hosts: group size {group_size} "
                            f"is not a multiple of {rails} GPUs per host")
    host_groups = _groups_of_hosts(net, group_size // rails, placement, rng)
    h = host_groups.shape[1]
    if h < 2:
        raise WorkloadError("a ring all-reduce group needs at least two hosts")
    nxt = np.roll(host_groups, -1, axis=1)
    per_edge = 2 * (h - 1) / h * bytes_per_gpu / rails
    src_h = np.repeat(host_groups.ravel(), rails)
    dst_h = np.repeat(nxt.ravel(), rails)
    rail = np.tile(np.arange(rails), host_groups.size)
    coll = np.repeat(np.arange(len(host_groups)), h * rails)
    return _connections("ring all-reduce", net.nic_node[src_h, rail], net.nic_node[dst_h, rail],
                        np.full(len(src_h), per_edge), coll, qps)


def _groups_of_hosts(net: Network, hosts: int, placement: str,
                     rng: np.random.Generator) -> np.ndarray:
    if hosts < 1 or net.n_hosts % hosts:
        raise WorkloadError(f"{hosts} hosts per group does not divide the {net.n_hosts} hosts")
    if placement not in PLACEMENTS:
        raise WorkloadError(f"placement must be one of {', '.join(PLACEMENTS)}, got {placement!r}")
    order = np.arange(net.n_hosts) if placement == "contiguous" else rng.permutation(net.n_hosts)
    return order.reshape(-1, hosts)


def permutation(net: Network, bytes_per_nic: float, *, qps: int = 1,
                rng: np.random.Generator | None = None) -> Workload:
    """Random permutation: every NIC sends to one NIC of another host and receives from one."""
    _check_positive("bytes_per_nic", bytes_per_nic)
    if net.n_hosts < 2:
        raise WorkloadError("a permutation needs at least two hosts")
    rng = rng or np.random.default_rng(0)
    nics = net.nic_node.ravel()
    host = np.repeat(np.arange(net.n_hosts), net.n_rails)
    perm = rng.permutation(len(nics))
    # Repair same-host pairs by swapping targets with random other senders.
    for _ in range(100 * len(nics)):
        bad = np.flatnonzero(host == host[perm])
        if not len(bad):
            break
        i, j = bad[0], rng.integers(len(nics))
        if host[j] != host[perm[i]] and host[i] != host[perm[j]]:
            perm[i], perm[j] = perm[j], perm[i]
    else:
        raise WorkloadError("could not build a permutation across hosts")
    src = nics
    dst = nics[perm]
    return _connections("permutation", src, dst, np.full(len(src), float(bytes_per_nic)),
                        np.arange(len(src)), qps)


def web_search_sizes(n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` flow sizes in bytes from the web-search distribution."""
    u = rng.random(n)
    return np.maximum(1.0, np.interp(u, WEB_SEARCH_CDF, WEB_SEARCH_PACKETS) * MSS)


def web_search_mean() -> float:
    """Mean of the web-search distribution in bytes (piecewise-linear CDF)."""
    mids = (WEB_SEARCH_PACKETS[1:] + WEB_SEARCH_PACKETS[:-1]) / 2
    return float(np.sum(np.diff(WEB_SEARCH_CDF) * mids) * MSS)


def web_search(net: Network, load: float, duration: float, *,
               rng: np.random.Generator | None = None) -> Workload:
    """Poisson arrivals of web-search flows between random NICs of different hosts.

    ``load`` is the offered load as a fraction of the total NIC capacity.
    """
    if not 0 < load < 1:
        raise WorkloadError(f"load must be within (0, 1), got {load!r}")
    _check_positive("duration", duration)
    if net.n_hosts < 2:
        raise WorkloadError("web-search traffic needs at least two hosts")
    rng = rng or np.random.default_rng(0)
    nics = net.nic_node.ravel()
    nic_bps = net.capacity[net.access_up(nics)].sum()
    rate = load * nic_bps / (8 * web_search_mean())
    n = int(rng.poisson(rate * duration))
    if n == 0:
        raise WorkloadError("no flow arrives in that duration; raise load or duration")
    start = np.sort(rng.random(n) * duration)
    s = rng.integers(len(nics), size=n)
    host = np.repeat(np.arange(net.n_hosts), net.n_rails)
    other = rng.integers(len(nics) - net.n_rails, size=n)
    # Map onto the NICs of the other hosts: skip the sender's own host block.
    d = other + np.where(other >= host[s] * net.n_rails, net.n_rails, 0)
    return Workload("web search", nics[s], nics[d], web_search_sizes(n, rng), start,
                    np.full(n, -1))


def reroute_failed_nics(net: Network, wl: Workload) -> Workload:
    """Move traffic off NICs whose last-hop link is down, as ReCCL's failover does.

    A flow from (or to) a dead NIC is cut into equal parts, one per live NIC of
    the same host (ReCCL spreads the failed channel's chunks over the surviving
    NICs; the intra-host path carries the data between the GPU and those NICs).
    """
    nics = net.nic_node.ravel()
    dead_nic = (net.capacity[net.access_up(nics)] <= 0) | (net.capacity[net.access_down(nics)] <= 0)
    if not dead_nic.any():
        return wl
    dead = dead_nic.reshape(net.nic_node.shape)
    host_of = np.full(len(net.node_names), -1)
    host_of[nics] = np.repeat(np.arange(net.n_hosts), net.n_rails)
    src, dst, size, start, coll = wl.src, wl.dst, wl.size, wl.start, wl.coll
    for end in ("src", "dst"):
        arr = src if end == "src" else dst
        moved = np.isin(arr, nics[dead_nic])
        if not moved.any():
            continue
        parts_src, parts_dst, parts_size, parts_start, parts_coll = [], [], [], [], []
        for i in np.flatnonzero(moved):
            h = host_of[arr[i]]
            live = net.nic_node[h][~dead[h]]
            if not len(live):
                raise WorkloadError(f"host {net.host_names[h]} has no live NIC left")
            k = len(live)
            parts_src.append(live if end == "src" else np.full(k, src[i]))
            parts_dst.append(live if end == "dst" else np.full(k, dst[i]))
            parts_size.append(np.full(k, size[i] / k))
            parts_start.append(np.full(k, start[i]))
            parts_coll.append(np.full(k, coll[i]))
        keep = ~moved
        src = np.concatenate([src[keep], *parts_src])
        dst = np.concatenate([dst[keep], *parts_dst])
        size = np.concatenate([size[keep], *parts_size])
        start = np.concatenate([start[keep], *parts_start])
        coll = np.concatenate([coll[keep], *parts_coll])
    same = src == dst
    return Workload(wl.name, src[~same], dst[~same], size[~same], start[~same], coll[~same])
