"""Max-min fairness: closed forms and invariants of progressive filling."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim.maxmin import Incidence, max_min_rates


def reference_rates(paths: list[list[int]], cap: np.ndarray) -> np.ndarray:
    """Textbook progressive filling: raise all unfrozen flows, freeze at the first full link."""
    n = len(paths)
    x = np.zeros(n)
    free = [True] * n
    spare = cap.astype(float).copy()
    while any(free):
        count = np.zeros(len(cap))
        for f, p in enumerate(paths):
            if free[f]:
                for lk in p:
                    count[lk] += 1
        step = min(spare[lk] / count[lk] for lk in range(len(cap)) if count[lk] > 0)
        for f in range(n):
            if free[f]:
                x[f] += step
        spare -= step * count
        full = {lk for lk in range(len(cap)) if count[lk] > 0 and spare[lk] <= 1e-9 * cap[lk]}
        for f, p in enumerate(paths):
            if free[f] and full & set(p):
                free[f] = False
    return x


def incidence(paths: list[list[int]], n_links: int) -> Incidence:
    k = max(len(p) for p in paths)
    arr = np.full((len(paths), k), -1)
    for f, p in enumerate(paths):
        arr[f, :len(p)] = p
    return Incidence(n_links, arr)


def test_single_bottleneck_shares_equally():
    cap = np.array([100.0, 1000.0])
    rates = max_min_rates(incidence([[0, 1]] * 4, 2), cap)
    assert np.allclose(rates, 25.0)


def test_classic_three_link_example():
    # Flows A: l0; B: l0,l1; C: l1; D: l1 with capacities 10 and 30:
    # l0 fills first at 5 each (A, B); C and D share the rest of l1: (30 - 5) / 2.
    cap = np.array([10.0, 30.0])
    rates = max_min_rates(incidence([[0], [0, 1], [1], [1]], 2), cap)
    assert np.allclose(rates, [5, 5, 12.5, 12.5])


def test_flow_on_failed_link_gets_nothing_and_others_are_unaffected():
    cap = np.array([0.0, 10.0])
    rates = max_min_rates(incidence([[0, 1], [1]], 2), cap)
    assert np.allclose(rates, [0, 10])


def test_group_matrix_equals_explicit_fractional_paths():
    # A sprayed flow splits 2/3 : 1/3 over links 1 and 2 (after link 0).
    cap = np.array([100.0, 40.0, 40.0])
    inc = Incidence(3, np.array([[0], [2]]), flow_group=np.array([0, -1]),
                    group_link=np.array([1, 2]), group_id=np.array([0, 0]),
                    group_weight=np.array([2 / 3, 1 / 3]))
    rates = max_min_rates(inc, cap)
    # Link 2 carries x0/3 + x1; link 1 carries 2 x0 / 3. Equal rates fill link 2 at 30 each
    # (30/3 + 30 = 40); flow 0 is also frozen there.
    assert np.allclose(rates, [30, 30])
    load = inc.load(rates)
    assert np.allclose(load, [30, 20, 40])


@st.composite
def networks(draw):
    n_links = draw(st.integers(1, 8))
    cap = np.array(draw(st.lists(st.floats(1, 100), min_size=n_links, max_size=n_links)))
    n_flows = draw(st.integers(1, 12))
    paths = [sorted(draw(st.sets(st.integers(0, n_links - 1), min_size=1, max_size=n_links)))
             for _ in range(n_flows)]
    return paths, cap


@settings(max_examples=200, deadline=None)
@given(networks())
def test_max_min_invariants(case):
    paths, cap = case
    inc = incidence(paths, len(cap))
    rates = max_min_rates(inc, cap)
    load = inc.load(rates)
    # Feasible.
    assert np.all(load <= cap * (1 + 1e-7))
    # Every flow has a bottleneck: a full link on which no flow gets more than it.
    for f, p in enumerate(paths):
        ok = False
        for lk in p:
            on = [g for g, q in enumerate(paths) if lk in q]
            if load[lk] >= cap[lk] * (1 - 1e-7) and rates[f] >= max(rates[on]) * (1 - 1e-7):
                ok = True
        assert ok, (f, p, rates, load, cap)
    # Same allocation as the textbook algorithm (max-min fair allocations are unique).
    assert np.allclose(rates, reference_rates(paths, cap), rtol=1e-6)
