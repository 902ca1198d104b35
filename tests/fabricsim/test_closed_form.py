"""Closed-form checks of the flow-level engine and the policies."""

import math

import numpy as np
import pytest

from fabricsim.engine import SimulationError, new_state, simulate
from fabricsim.policies import Ecmp, Sglb, Spray
from fabricsim.routing import PathTable
from fabricsim.topology import fat_tree, leaf_spine
from fabricsim.workloads import Workload, permutation

GBIT = 1e9


def flows(net, pairs, sizes, start=None):
    """A workload of explicit (src host, src rail, dst host, dst rail) flows."""
    src = np.array([net.nic_node[h, r] for h, r, _, _ in pairs])
    dst = np.array([net.nic_node[h, r] for _, _, h, r in pairs])
    n = len(pairs)
    return Workload("test", src, dst, np.asarray(sizes, float),
                    np.zeros(n) if start is None else np.asarray(start, float), np.zeros(n, int))


def bottleneck_net():
    # Two leaves, one spine; 4 NICs of 100G per leaf and a 4:1 oversubscribed 100G uplink.
    return leaf_spine(2, 1, 4, nic_gbps=100, oversubscription=4)


@pytest.mark.parametrize("policy", [Ecmp, Spray, Sglb])
def test_single_bottleneck_equal_flows(policy):
    net = bottleneck_net()
    assert np.allclose(net.capacity[net.links_between("leaf0", "spine0")], 100 * GBIT)
    wl = flows(net, [(h, 0, 4 + h, 0) for h in range(4)], [1e6] * 4)
    res = simulate(net, wl, policy(), tolerance=0.0)
    # Four flows share 100 Gbit/s: each finishes after 4 MB at the full link rate.
    assert res.makespan == pytest.approx(4 * 1e6 * 8 / (100 * GBIT), rel=1e-9)
    assert np.allclose(res.finish, res.makespan)


def test_single_bottleneck_processor_sharing_with_unequal_sizes():
    net = bottleneck_net()
    wl = flows(net, [(0, 0, 4, 0), (1, 0, 5, 0)], [1e6, 3e6])
    res = simulate(net, wl, Ecmp(), tolerance=0.0)
    c = 100 * GBIT
    t1 = 2 * 1e6 * 8 / c          # both at c/2 until the small one ends
    t2 = t1 + 2e6 * 8 / c         # then the big one alone at c
    assert res.finish == pytest.approx([t1, t2], rel=1e-9)


def test_late_arrival_shares_from_its_start():
    net = bottleneck_net()
    c = 100 * GBIT
    wl = flows(net, [(0, 0, 4, 0), (1, 0, 5, 0)], [2e6, 1e6], start=[0, 8e-5])
    res = simulate(net, wl, Ecmp(), tolerance=0.0)
    # Flow 0 alone for 80 us (1 MB at c), then both at c/2 for their last 1 MB each.
    both = 8e-5 + 1e6 * 8 / (c / 2)
    assert res.finish == pytest.approx([both, both], rel=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_spraying_reaches_full_bisection_on_a_symmetric_fat_tree(seed):
    net = fat_tree(4, nic_gbps=100)
    wl = permutation(net, 1e6, rng=np.random.default_rng(seed))
    res = simulate(net, wl, Spray(), tolerance=0.0)
    # Every NIC runs at line rate: the permutation takes one NIC-time of its bytes.
    assert res.makespan == pytest.approx(1e6 * 8 / (100 * GBIT), rel=1e-9)
    ecmp = simulate(net, wl, Ecmp(), seed=seed, tolerance=0.0)
    assert ecmp.makespan >= res.makespan * (1 - 1e-9)


def test_ecmp_collisions_match_the_birthday_problem():
    # n flows hashed onto m spines: P(all distinct) = m!/(m-n)!/m^n, E[distinct] = m(1-(1-1/m)^n).
    m, n, trials = 8, 4, 3000
    net = leaf_spine(2, m, n, nic_gbps=100)
    src = np.tile(net.nic_node[:n, 0], trials)
    dst = np.tile(net.nic_node[n:2 * n, 0], trials)
    wl = Workload("birthday", src, dst, np.ones(n * trials), np.zeros(n * trials),
                  np.repeat(np.arange(trials), n))
    st = new_state(net, wl, seed=7)
    Ecmp().place(st, np.arange(wl.n_flows), 0.0)
    spine = net.link_dst[st.flow_links[:, 1]].reshape(trials, n)
    distinct = np.array([len(set(row)) for row in spine])
    p_none = math.perm(m, n) / m ** n
    sigma = math.sqrt(p_none * (1 - p_none) / trials)
    assert abs(np.mean(distinct == n) - p_none) < 4 * sigma
    expect = m * (1 - (1 - 1 / m) ** n)
    assert abs(distinct.mean() - expect) < 4 * distinct.std() / math.sqrt(trials)


def test_policies_avoid_failed_links():
    net = leaf_spine(2, 4, 4, nic_gbps=100)
    dead = net.links_between("leaf0", "spine2")
    net = net.with_failed(dead)
    wl = flows(net, [(h, 0, 4 + h, 0) for h in range(4)] * 8, [1e5] * 32)
    for policy in (Ecmp(), Sglb(), Spray()):
        st = new_state(net, wl, seed=3)
        policy.prepare(st)
        policy.place(st, np.arange(wl.n_flows), 0.0)
        used = st.flow_links[st.flow_links >= 0]
        assert not np.isin(used, np.concatenate([dead, net.reverse_of(dead)])).any()
        assert not np.isin(st.group_link[st.group_weight > 0], dead).any()


def test_no_live_path_is_a_clear_error():
    net = leaf_spine(2, 2, 2, nic_gbps=100)
    net = net.with_failed(np.concatenate([net.links_between("leaf0", "spine0"),
                                          net.links_between("leaf0", "spine1")]))
    wl = flows(net, [(0, 0, 2, 0)], [1e6])
    with pytest.raises(SimulationError, match=r"no live path from h0/nic0 to h2/nic0"):
        simulate(net, wl, Ecmp())


def test_sglb_splits_in_proportion_to_capacity():
    # Two uplinks, one at half rate: sequential flowlet choices see the half link fill
    # twice as fast, so it gets about a third of the flows.
    net = leaf_spine(2, 2, 8, nic_gbps=100)
    net = net.with_capacity(net.links_between("leaf0", "spine1"), 0.5)
    wl = flows(net, [(h, 0, 8 + h, 0) for h in range(8)] * 16, [1e6] * 128)
    st = new_state(net, wl, seed=5)
    pol = Sglb()
    pol.prepare(st)
    pol.place(st, np.arange(wl.n_flows), 0.0)
    half = np.isin(st.flow_links[:, 1], net.links_between("leaf0", "spine1")).mean()
    assert 0.25 <= half <= 0.42
    st2 = new_state(net, wl, seed=5)
    Ecmp().place(st2, np.arange(wl.n_flows), 0.0)
    ecmp_half = np.isin(st2.flow_links[:, 1], net.links_between("leaf0", "spine1")).mean()
    assert 0.4 <= ecmp_half <= 0.6


def test_spray_splits_in_proportion_to_capacity():
    net = leaf_spine(2, 2, 2, nic_gbps=100)
    net = net.with_capacity(net.links_between("leaf0", "spine1"), 0.5)
    wl = flows(net, [(0, 0, 2, 0)], [1e6])
    st = new_state(net, wl, seed=0)
    spray = Spray()
    spray.prepare(st)
    spray.place(st, np.arange(wl.n_flows), 0.0)
    up = {int(lk): w for lk, w in zip(st.group_link, st.group_weight, strict=True)}
    full, half = net.links_between("leaf0", "spine0")[0], net.links_between("leaf0", "spine1")[0]
    assert up[full] == pytest.approx(2 / 3)
    assert up[half] == pytest.approx(1 / 3)


def test_sglb_uses_remote_congestion_after_an_update():
    # leaf0 and leaf2 both send to leaf1, whose two spine downlinks are the bottleneck.
    # Only the remote (spine -> leaf1) part of the profile can balance them: SGLB gets
    # within 10% of ideal spraying on every seed, where ECMP collides on some.
    net = leaf_spine(3, 2, 4, nic_gbps=100, oversubscription=2)
    pt = PathTable(net)
    wl = flows(net, [(h, 0, 4 + h, 0) for h in range(4)] + [(8 + h, 0, 4 + h, 0) for h in range(4)],
               [2e7] * 8)
    spray = simulate(net, wl, Spray(), paths=pt).makespan
    assert spray == pytest.approx(8 * 2e7 * 8 / (200 * GBIT))
    sglb, ecmp = [], []
    for seed in range(4):
        sglb.append(simulate(net, wl, Sglb(), paths=pt, seed=seed).makespan)
        ecmp.append(simulate(net, wl, Ecmp(), paths=pt, seed=seed).makespan)
    assert max(sglb) <= spray * 1.1
    assert np.mean(sglb) < np.mean(ecmp)


def test_reccl_failover_moves_a_dead_nic_traffic_to_the_other_rails():
    from fabricsim.experiment import Scenario, run_seed
    from fabricsim.workloads import reroute_failed_nics, ring_all_reduce

    net = leaf_spine(8, 4, 8, rails=4, nic_gbps=100)
    wl = ring_all_reduce(net, 16, 2**26, qps=4, placement="contiguous")
    dead = net.with_failed(net.access_up(net.nic_node[0, 1:2]))
    moved = reroute_failed_nics(dead, wl)
    # Same bytes; nothing leaves or enters the dead NIC; its share is split over 3 rails.
    assert moved.size.sum() == pytest.approx(wl.size.sum())
    assert not np.isin(net.nic_node[0, 1], np.concatenate([moved.src, moved.dst]))
    # With spraying the fabric is no bottleneck: the host's 3 NICs carry 4 rails' data,
    # so the all-reduce runs at 3/4 of its healthy throughput (ideal rebalance).
    healthy = simulate(net, wl, Spray(), tolerance=0.0).makespan
    degraded = simulate(dead, moved, Spray(), tolerance=0.0).makespan
    assert healthy / degraded == pytest.approx(3 / 4, rel=1e-6)
    # The scenario layer applies the same failover for --fail-nic.
    scn = Scenario({"kind": "leaf-spine", "leaves": 8, "spines": 4, "ports_per_leaf": 8,
                    "rails": 4, "nic_gbps": 100},
                   {"kind": "all-reduce", "group_size": 16, "bytes": 2**26, "qps": 4,
                    "placement": "contiguous"}, ("spray",), {"nic": ["h0/nic1"]})
    assert run_seed(scn, 0)["policies"]["spray"]["makespan"] == pytest.approx(degraded, rel=2e-2)


@pytest.mark.parametrize("policy", [Ecmp, Spray, Sglb])
def test_web_search_flows_all_finish_no_faster_than_their_nic(policy):
    from fabricsim.workloads import web_search

    net = leaf_spine(4, 2, 4, nic_gbps=100)
    wl = web_search(net, 0.6, 0.002, rng=np.random.default_rng(3))
    res = simulate(net, wl, policy(), seed=3, tolerance=0.0)
    fct = res.finish - res.start
    assert np.all(np.isfinite(fct))
    assert np.all(fct >= wl.size * 8 / (100 * GBIT) * (1 - 1e-9))
    # Bits conserve: every byte crosses its source NIC's link exactly once.
    up = net.access_up(net.nic_node.ravel())
    assert res.link_bits[up].sum() == pytest.approx(wl.size.sum() * 8, rel=1e-9)
