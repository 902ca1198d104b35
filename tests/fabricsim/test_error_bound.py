"""The engine's documented error bound: every flow within ``tolerance`` of its own running time."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricsim.engine import simulate
from fabricsim.policies import Ecmp, Spray
from fabricsim.topology import leaf_spine
from fabricsim.workloads import Workload, web_search

GBIT = 1e9


def test_issue_case_a_long_running_flow_does_not_widen_the_window():
    # Two flows of 10 and 20 Mbit share one 10 Gbit/s NIC from t = 9 s while an unrelated
    # flow has run since t = 0. By hand: both at 5 Gbit/s until the small one ends at
    # 9.002 s, then the big one alone at 10 Gbit/s for its last 10 Mbit: 9.003 s.
    net = leaf_spine(2, 2, 4, nic_gbps=10)
    n = net.nic_node
    wl = Workload("issue", np.array([n[0, 0], n[0, 0], n[3, 0]]),
                  np.array([n[1, 0], n[2, 0], n[4, 0]]),
                  np.array([10e6 / 8, 20e6 / 8, 12.5e9]), np.array([9.0, 9.0, 0.0]),
                  np.zeros(3, int))
    res = simulate(net, wl, Ecmp(), tolerance=0.01)
    assert res.finish[0] - 9.0 == pytest.approx(2e-3, rel=0.01)
    assert res.finish[1] - 9.0 == pytest.approx(3e-3, rel=0.01)


@st.composite
def workloads(draw):
    leaves = draw(st.integers(2, 4))
    spines = draw(st.integers(1, 3))
    ports = draw(st.integers(2, 4))
    over = draw(st.sampled_from([1.0, 2.0, 4.0]))
    net = leaf_spine(leaves, spines, ports, nic_gbps=10, oversubscription=over)
    nics = net.nic_node.ravel()
    n = draw(st.integers(2, 24))
    src = draw(st.lists(st.integers(0, len(nics) - 1), min_size=n, max_size=n))
    off = draw(st.lists(st.integers(1, len(nics) - 1), min_size=n, max_size=n))
    dst = [(s + o) % len(nics) for s, o in zip(src, off, strict=True)]
    # Sizes over four orders of magnitude; starts spread or bunched (old and young flows mixed).
    size = draw(st.lists(st.floats(1e3, 1e7), min_size=n, max_size=n))
    start = draw(st.lists(st.one_of(st.just(0.0), st.floats(0.0, 2e-2)), min_size=n, max_size=n))
    wl = Workload("random", nics[src], nics[dst], np.array(size), np.array(start), np.zeros(n, int))
    return net, wl


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=workloads(), tolerance=st.sampled_from([0.01, 0.05]), spray=st.booleans(),
       seed=st.integers(0, 3))
def test_every_flow_within_tolerance_of_its_running_time(case, tolerance, spray, seed):
    net, wl = case
    policy = Spray if spray else Ecmp
    exact = simulate(net, wl, policy(), seed=seed, tolerance=0.0)
    approx = simulate(net, wl, policy(), seed=seed, tolerance=tolerance)
    running = exact.finish - exact.start
    err = np.abs(approx.finish - exact.finish)
    assert np.all(err <= tolerance * running * (1 + 1e-9) + 1e-15), (
        f"worst relative error {np.max(err / running):.4f} > {tolerance}")


def test_web_search_errors_stay_within_the_bound_and_batching_still_pays_on_collectives():
    net = leaf_spine(4, 2, 4, nic_gbps=100)
    wl = web_search(net, 0.7, 0.003, rng=np.random.default_rng(1))
    exact = simulate(net, wl, Ecmp(), seed=1, tolerance=0.0)
    approx = simulate(net, wl, Ecmp(), seed=1, tolerance=0.01)
    rel = np.abs(approx.finish - exact.finish) / (exact.finish - exact.start)
    assert rel.max() <= 0.01
    # A collective (every flow starts together) batches its completions.
    from fabricsim.workloads import all_to_all

    net = leaf_spine(8, 4, 8, rails=2, nic_gbps=100)
    net = net.with_capacity(net.links_between("leaf0", "spine1"), 0.5)
    wl = all_to_all(net, 16, 2**18, qps=2)
    exact = simulate(net, wl, Ecmp(), tolerance=0.0)
    approx = simulate(net, wl, Ecmp(), tolerance=0.01)
    rel = np.abs(approx.finish - exact.finish) / (exact.finish - exact.start)
    assert rel.max() <= 0.01
    assert approx.solves < exact.solves
