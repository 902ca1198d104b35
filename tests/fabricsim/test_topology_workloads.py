"""Topology generators, the fabric-description bridge and workload construction."""

from pathlib import Path

import numpy as np
import pytest

from fabricsim.routing import PathTable
from fabricsim.topology import (
    GBIT,
    LEVEL_CORE,
    LEVEL_LEAF,
    LEVEL_SPINE,
    TopologyError,
    fat_tree,
    from_fabric,
    leaf_spine,
    load_fabric,
)
from fabricsim.workloads import (
    WorkloadError,
    all_to_all,
    permutation,
    ring_all_reduce,
    web_search,
    web_search_mean,
    web_search_sizes,
)

FABRICS = Path(__file__).resolve().parents[2] / "topologies" / "fabrics"


def test_leaf_spine_counts_capacities_and_rails():
    net = leaf_spine(8, 4, 16, rails=4, nic_gbps=400, oversubscription=2, parallel=2)
    assert net.n_hosts == 32 and net.n_rails == 4
    up = net.links_between("leaf0", "spine0")
    assert len(up) == 2
    # 16 x 400G down, 2:1 oversubscribed, over 4 spines x 2 parallel cables.
    assert net.capacity[up] == pytest.approx(16 * 400 * GBIT / (2 * 4 * 2))
    # Rail-optimised: a host's four NICs sit on four different leaves.
    leaves = net.leaf_of(net.nic_node[0])
    assert len(set(leaves.tolist())) == 4
    fab = net.cable_ids("fabric")
    assert len(fab) == 8 * 4 * 2


def test_fat_tree_paths():
    net = fat_tree(4, nic_gbps=100)
    lv = net.node_level
    assert (np.sum(lv == LEVEL_LEAF), np.sum(lv == LEVEL_SPINE), np.sum(lv == LEVEL_CORE)) == (8, 8, 4)
    assert net.n_hosts == 16
    pt = PathTable(net)
    e = [net.node("p0e0"), net.node("p0e1"), net.node("p1e0")]
    levels = pt.pair_level(np.array([e[0], e[0], e[0]]), np.array([e[0], e[1], e[2]]))
    assert levels.tolist() == [0, 2, 3]
    cand = pt.candidates(3, np.array([e[0]]), np.array([e[2]]))
    assert cand.valid.sum() == 4  # (k/2)^2 core paths between pods
    links = cand.links(np.flatnonzero(cand.valid.ravel()))
    assert links.shape == (4, 4)
    # Every path goes up, up, down, down and ends at the destination edge.
    assert np.all(net.link_dst[links[:, -1]] == e[2])
    assert np.all(net.link_src[links[:, 0]] == e[0])
    for row in links:
        assert all(net.link_dst[a] == net.link_src[b] for a, b in zip(row[:-1], row[1:], strict=True))


def test_failures_and_reductions_apply_to_both_directions():
    net = leaf_spine(2, 2, 2, nic_gbps=100)
    lk = net.links_between("leaf0", "spine1")
    red = net.with_capacity(lk, 0.25)
    assert red.capacity[lk] == pytest.approx(net.nominal[lk] * 0.25)
    assert red.capacity[net.reverse_of(lk)] == pytest.approx(net.nominal[lk] * 0.25)
    assert net.capacity[lk] == pytest.approx(net.nominal[lk])  # the original is unchanged
    assert red.summary()["reduced_cables"] == 1
    assert net.with_failed(lk).summary()["failed_cables"] == 1


@pytest.mark.parametrize("call, message", [
    (lambda: fat_tree(5), "k must be even"),
    (lambda: leaf_spine(3, 2, 4, rails=2), "multiple of rails"),
    (lambda: leaf_spine(2, 0, 4), "spines must be an integer >= 1"),
    (lambda: leaf_spine(2, 2, 4, nic_gbps=-1), "nic_gbps must be a positive number"),
    (lambda: leaf_spine(2, 2, 2).with_capacity(np.array([0]), 1.5), "within 0..1"),
    (lambda: leaf_spine(2, 2, 2).links_between("leaf0", "leaf1"), "no link between leaf0 and leaf1"),
])
def test_inconsistent_topologies_are_rejected(call, message):
    with pytest.raises(TopologyError, match=message):
        call()


def test_from_fabric_description_keeps_capacities_and_down_links():
    net = load_fabric(str(FABRICS / "ls4x2-asym.yaml"))
    assert net.n_hosts >= 1
    l1s1 = net.links_between("l1", "s1")
    assert len(l1s1) == 2
    assert sorted(net.capacity[l1s1] > 0) == [False, True]  # one bundle member is down
    assert net.summary()["failed_cables"] == 1


def test_from_fabric_generated_description():
    import fabricmodel as fab

    desc = fab.leaf_spine(4, 2, 2, 2, links_per_pair=2, link_capacity="10Gbit",
                          nic_capacity="25Gbit")
    net = from_fabric(desc)
    assert net.n_hosts == len(desc.hosts) and net.n_rails == 2
    assert len(net.cable_ids("fabric")) == len(desc.links)
    assert net.capacity[net.links_between("l1", "s1")] == pytest.approx([10e9, 10e9])
    assert net.capacity[net.access_up(net.nic_node[0])] == pytest.approx([25e9, 25e9])


def test_all_to_all_conserves_bytes_and_keeps_rails_with_pxn():
    net = leaf_spine(4, 2, 4, rails=2, nic_gbps=100)
    g = 8
    wl = all_to_all(net, g, 1000.0, qps=3, placement="random", rng=np.random.default_rng(2))
    gpus = net.n_hosts * net.n_rails
    # Every ordered GPU pair of a group on different hosts moves 1000 bytes.
    rng = np.random.default_rng(2)
    groups = rng.permutation(gpus).reshape(-1, g)
    expected = sum(1000.0 for grp in groups for a in grp for b in grp
                   if a // 2 != b // 2)
    assert wl.size.sum() == pytest.approx(expected)
    host = {int(n): h for h in range(net.n_hosts) for n in net.nic_node[h]}
    rail = {int(n): r for h in range(net.n_hosts) for r, n in enumerate(net.nic_node[h])}
    assert all(host[s] != host[d] for s, d in zip(wl.src, wl.dst, strict=True))
    assert all(rail[s] == rail[d] for s, d in zip(wl.src, wl.dst, strict=True))
    assert wl.n_flows % 3 == 0
    no_pxn = all_to_all(net, g, 1000.0, placement="random", pxn=False,
                        rng=np.random.default_rng(2))
    assert no_pxn.size.sum() == pytest.approx(expected)


def test_ring_all_reduce_bytes_per_edge():
    net = leaf_spine(4, 2, 4, rails=2, nic_gbps=100)
    wl = ring_all_reduce(net, 8, 1e6, qps=1, placement="contiguous")
    # Groups of 4 hosts; each rail ring edge carries 2(H-1)/H of 1/rails of the data.
    assert wl.n_flows == (net.n_hosts // 4) * 4 * 2
    assert wl.size == pytest.approx(np.full(wl.n_flows, 2 * 3 / 4 * 1e6 / 2))


def test_permutation_sends_once_and_receives_once_across_hosts():
    net = leaf_spine(4, 2, 4, rails=2, nic_gbps=100)
    wl = permutation(net, 1e6, rng=np.random.default_rng(4))
    assert sorted(wl.src.tolist()) == sorted(net.nic_node.ravel().tolist())
    assert sorted(wl.dst.tolist()) == sorted(net.nic_node.ravel().tolist())
    host = np.repeat(np.arange(net.n_hosts), net.n_rails)
    order = np.argsort(net.nic_node.ravel())
    pos = {int(n): host[i] for i, n in zip(order, net.nic_node.ravel()[order], strict=True)}
    assert all(pos[int(s)] != pos[int(d)] for s, d in zip(wl.src, wl.dst, strict=True))


def test_web_search_distribution_and_load():
    rng = np.random.default_rng(0)
    sizes = web_search_sizes(200_000, rng)
    assert sizes.mean() == pytest.approx(web_search_mean(), rel=0.03)
    assert np.mean(sizes <= 6 * 1460) == pytest.approx(0.15, abs=0.01)
    net = leaf_spine(4, 2, 4, nic_gbps=100)
    wl = web_search(net, 0.5, 0.02, rng=np.random.default_rng(1))
    offered = wl.size.sum() * 8 / 0.02
    assert offered == pytest.approx(0.5 * 16 * 100e9, rel=0.25)


@pytest.mark.parametrize("call, message", [
    (lambda n: all_to_all(n, 7, 1.0), "group size 7 does not divide the 16 GPUs"),
    (lambda n: all_to_all(n, 8, 0.0), "bytes_per_pair must be positive"),
    (lambda n: all_to_all(n, 8, 1.0, placement="spread"), "placement must be one of"),
    (lambda n: all_to_all(n, 8, 1.0, qps=0), "qps must be an integer >= 1"),
    (lambda n: ring_all_reduce(n, 3, 1.0), "not a multiple of 2 GPUs per host"),
    (lambda n: all_to_all(n, 2, 1.0, placement="contiguous"), "no traffic crossing the fabric"),
    (lambda n: web_search(n, 1.5, 0.01), "load must be within"),
])
def test_inconsistent_workloads_are_rejected(call, message):
    net = leaf_spine(4, 2, 4, rails=2, nic_gbps=100)
    with pytest.raises(WorkloadError, match=message):
        call(net)


def test_from_fabric_refuses_hosts_with_different_rail_counts():
    import dataclasses

    import fabricmodel as fab

    desc = fab.leaf_spine(2, 2, 2, 2)
    short = dataclasses.replace(desc.hosts[0], nics=desc.hosts[0].nics[:1])
    odd = object.__new__(type(desc))
    for f in dataclasses.fields(desc):
        object.__setattr__(odd, f.name, getattr(desc, f.name))
    object.__setattr__(odd, "hosts", (short,) + desc.hosts[1:])
    with pytest.raises(TopologyError, match="has 2 NICs, others have 1: the simulator needs the same"):
        from_fabric(odd)
