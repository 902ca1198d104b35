"""The SGLB that is built (SyncMesh timers, DRE levels, in-band option) and per-hop ECMP."""

import math

import numpy as np
import pytest

from fabricsim.engine import SimulationError, new_state, simulate
from fabricsim.hashing import HopTable
from fabricsim.measured import FIGURES, value
from fabricsim.policies import Ecmp, make_policy
from fabricsim.sglb_model import Sglb, dre_scale
from fabricsim.topology import fat_tree, leaf_spine
from fabricsim.workloads import Workload
from sglb.config import dre_shift

GBIT = 1e9


def test_defaults_are_the_built_figures():
    from syncmesh.config import CoreConfig
    from syncmesh.daemon import DaemonOptions

    s = Sglb()  # the simulator's SGLB is the daemon as it ships
    assert s.profile_period == CoreConfig.profile_period == value("syncmesh_profile_period")
    assert s.counter_interval == DaemonOptions.counter_interval
    assert s.delivery == value("syncmesh_agreement")
    assert s.bits == 3 and s.tie_tolerance == 1
    for name, f in FIGURES.items():
        assert f.kind in ("as built", "measured", "published", "assumed"), name
        assert f.source and f.what, name


def test_dre_scale_matches_the_shift_by_hand():
    # 10 Gb/s: a saturated port holds 1.5 x 1250 B/us x 64 us = 120,000 B on average; the
    # shift is round(log2(120000 / 6)) = 14, so the mean reads 120000 / 2^14 = 7.32 (not 6).
    assert dre_shift(10_000) == 14  # Mbit/s
    assert dre_scale(np.array([10e9]))[0] * 6 == pytest.approx(120000 / 2**14)
    assert dre_scale(np.array([0.0]))[0] == 0.0


def test_local_levels_swing_with_the_dre_sawtooth_and_offered_load_reads_top():
    net = leaf_spine(2, 2, 4, nic_gbps=100)
    wl = Workload("x", net.nic_node[:1, 0], net.nic_node[4:5, 0], np.ones(1), np.zeros(1),
                  np.zeros(1, int))
    st = new_state(net, wl, seed=1)
    pol = Sglb()
    pol.prepare(st)
    up = net.links_between("leaf0", "spine0")
    cap = net.capacity[up[0]]
    full = pol._dre_level(st, np.full(4000, cap), np.repeat(up, 4000))
    kappa = dre_scale(net.capacity[up])[0]
    # x in [R T, 2 R T): level floor(4 kappa u (1 + phase)), capped at 7
    assert full.min() == math.floor(4 * kappa) and full.max() == min(7, math.ceil(8 * kappa) - 1)
    half = pol._dre_level(st, np.full(4000, cap / 2), np.repeat(up, 4000))
    assert half.mean() < full.mean()
    # Twice the capacity offered (what an oversubscribed link is asked to carry) reads
    # higher than full: floor(8 kappa) at least, mostly the top level.
    over = pol._dre_level(st, np.full(4000, 2 * cap), np.repeat(up, 4000))
    assert over.min() == min(7, math.floor(8 * kappa)) and over.mean() > full.mean()


def _remote_only_case():
    # leaf0 and leaf2 send to leaf1; leaf2's cable to spine1 is down from the start, so all
    # of leaf2's traffic crosses spine0 -> leaf1. Only remote congestion tells leaf0 to use
    # spine1: its own uplinks are equally idle.
    net = leaf_spine(3, 2, 4, nic_gbps=100, oversubscription=2)
    net = net.with_failed(net.links_between("leaf2", "spine1"))
    n = net.nic_node
    # leaf2's four long flows start first, leaf0's four later, once a profile could exist.
    src = np.concatenate([n[8:12, 0], n[0:4, 0]])
    dst = np.concatenate([n[4:8, 0], n[4:8, 0]])
    start = np.concatenate([np.zeros(4), np.full(4, 2e-3)])
    size = np.concatenate([np.full(4, 2e8), np.full(4, 2.5e7)])
    coll = np.concatenate([np.zeros(4, int), np.ones(4, int)])
    return net, Workload("remote", src, dst, size, start, coll)


def test_profiles_slower_than_the_run_never_reach_it_inband_feedback_does():
    net, wl = _remote_only_case()
    built, inband, fast = [], [], []
    for seed in range(4):
        # SyncMesh as first built (counters every 0.5 s, 37 ms delivery)
        pol = Sglb(counter_interval=0.5, delivery=0.037, flowlet_fraction=0.0)
        r = simulate(net, wl, pol, seed=seed)
        # The counters' first poll comes within 0.5 s, after the whole run: nothing installed.
        assert pol._remote.max() == 0
        built.append(r.collective_times()[1])
        inband.append(simulate(net, wl, Sglb(remote="inband", flowlet_fraction=0.0),
                               seed=seed).collective_times()[1])
        fast.append(simulate(net, wl, Sglb(profile_period=2e-4, counter_interval=1e-4,
                                           delivery=0.0, flowlet_fraction=0.0),
                             seed=seed).collective_times()[1])
    # leaf0's 4 flows of 25 MB over spine1 alone (leaf0's uplink there is 200 Gb/s) vs
    # sharing spine0 -> leaf1 with leaf2's traffic: fresh remote levels pay.
    assert np.mean(inband) < np.mean(built)
    assert np.mean(fast) < np.mean(built)
    # Levels from offered load (NIC-bound demand) see the same congestion.
    offered = simulate(net, wl, Sglb(remote="inband", measure="offered", flowlet_fraction=0.0),
                       seed=0).collective_times()[1]
    assert offered < np.mean(built)


def test_syncmesh_sends_early_when_a_level_moves_by_more_than_the_threshold():
    net, wl = _remote_only_case()
    pol = Sglb(profile_period=10.0, counter_interval=1e-4, delivery=0.0, flowlet_fraction=0.0)
    simulate(net, wl, pol, seed=0)
    # The period is 10 s, yet profiles went out: the spine0 -> leaf1 level jumped.
    assert pol._last_send > 0
    down = net.links_between("spine0", "leaf1")[0]
    assert pol._remote[down] >= 6 or pol._sent[down] >= 6


def test_bad_sglb_and_ecmp_options_are_refused():
    for kw, message in [({"remote": "carrier-pigeon"}, "remote must be one of"),
                        ({"measure": "vibes"}, "measure must be one of"),
                        ({"profile_period": 0}, "profile_period must be a positive"),
                        ({"tie_tolerance": 9}, "tie_tolerance must be within")]:
        with pytest.raises(SimulationError, match=message):
            Sglb(**kw)
    with pytest.raises(SimulationError, match="hashing must be one of"):
        Ecmp(hashing="magic")
    with pytest.raises(SimulationError, match="sglb: .*unexpected keyword"):
        make_policy("sglb", update_period=1e-3)


def test_per_hop_hashing_with_one_seed_polarises_a_fat_tree():
    # k=4: an edge hashes over its 2 aggregation switches, each aggregation over its 2 cores.
    # With the same seed everywhere the aggregation repeats the edge's choice (h mod 2), so
    # each aggregation switch uses one core uplink only; with per-switch seeds both.
    net = fat_tree(4, nic_gbps=100)
    n = net.nic_node
    k = 400
    src = np.repeat(n[0:2, 0], k // 2)             # pod 0, edge p0e0
    dst = np.tile(n[4:8, 0], k // 4)               # pod 1
    wl = Workload("pol", src, dst, np.ones(k), np.zeros(k), np.zeros(k, int))

    def core_uplinks_used(seeds):
        st = new_state(net, wl, seed=3)
        pol = Ecmp(hashing="per-hop", hash_seeds=seeds)
        pol.prepare(st)
        pol.place(st, np.arange(k), 0.0)
        second = st.flow_links[:, 2]
        return {net.link_name(int(lk)) for lk in second}

    same = core_uplinks_used("same")
    salted = core_uplinks_used("per-switch")
    assert len(same) == 2            # one core uplink per aggregation switch
    assert len(salted) == 4          # both of each aggregation switch's core uplinks
    # end-to-end hashing is uniform over all 4 core paths too
    st = new_state(net, wl, seed=3)
    e2e = Ecmp()
    e2e.prepare(st)
    e2e.place(st, np.arange(k), 0.0)
    assert len({int(lk) for lk in st.flow_links[:, 2]}) == 4


def test_per_hop_paths_are_valid_up_down_paths_that_avoid_known_dead_links():
    net = fat_tree(4, nic_gbps=100)
    dead = net.links_between("p1a0", "p1e0")
    net = net.with_failed(dead)
    hops = HopTable(net)
    rng = np.random.default_rng(0)
    src = np.repeat(net.leaf_of(net.nic_node[0:1, 0]), 200)
    dst = np.repeat(net.leaf_of(net.nic_node[4:5, 0]), 200)
    links = hops.walk(src, dst, 3, rng.integers(0, 2**63, 200, dtype=np.uint64), net.capacity)
    assert np.all(links >= 0)
    # contiguous: every hop starts where the previous ended, from the source to the dest leaf
    assert np.all(net.link_src[links[:, 0]] == src)
    assert np.all(net.link_dst[links[:, -1]] == dst)
    assert np.all(net.link_dst[links[:, :-1]] == net.link_src[links[:, 1:]])
    assert not np.isin(links, np.concatenate([dead, net.reverse_of(dead)])).any()
    # and the engine runs with it
    wl = Workload("x", net.nic_node[:4, 0], net.nic_node[4:8, 0], np.full(4, 1e6), np.zeros(4),
                  np.zeros(4, int))
    res = simulate(net, wl, Ecmp(hashing="per-hop", hash_seeds="per-switch"), seed=1)
    assert np.all(np.isfinite(res.finish))
