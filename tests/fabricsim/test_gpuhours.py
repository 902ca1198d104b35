"""GPU-hours model: accounting against hand-computed cases, scaling and input checks."""

import math

import numpy as np
import pytest

from fabricsim.gpuhours import (
    CLASSES,
    NETWORK,
    GpuHoursError,
    GpuHoursParams,
    checkpoint_interval,
    draw_failures,
    failures_from_events,
    gpu_hours,
    run_policy,
)

DAY = 86400.0


def small(**kw):
    base = dict(gpus=8, days=1.0, interval=3600.0, checkpoint=600.0, detection=300.0,
                restart=900.0, repair=3600.0, failover=5.0, comm_fraction=0.5,
                reccl_network_throughput=0.8, degraded="until-repair")
    base.update(kw)
    return GpuHoursParams(**base)


def one(params, events, policy):
    return {k: float(v[0]) for k, v in run_policy(params, failures_from_events(events), policy).items()}


def test_fail_stop_single_failure_by_hand():
    # Cycle = 3600 s work + 600 s checkpoint. Failure at 10000 s: two cycles saved (7200 s
    # of work), 1600 s lost, down 300 + 900 s; then 75200 s to the end: 17 cycles and 3800 s.
    r = one(small(), [(10000.0, "gpu")], "fail-stop")
    assert r["productive"] == pytest.approx(7200 + 17 * 3600 + 3800)
    assert r["lost_work_h"] * 3600 == pytest.approx(1600)
    assert r["downtime_h"] * 3600 == pytest.approx(1200)
    assert r["checkpoint_h"] * 3600 == pytest.approx(19 * 600)
    assert r["ettr"] == pytest.approx(72200 / DAY)
    assert r["gpu_hours_lost"] == pytest.approx((DAY - 72200) * 8 / 3600)


def test_fail_stop_time_is_fully_accounted():
    params = small(interval="young", checkpoint=60.0, gpus=16384, days=10.0)
    fails = draw_failures(params, 50, seed=3)
    r = run_policy(params, fails, "fail-stop")
    total = r["productive"] + 3600 * (r["lost_work_h"] + r["downtime_h"] + r["checkpoint_h"])
    assert total == pytest.approx(np.full(50, 10 * DAY))


def test_reccl_survives_a_nic_failure_at_degraded_throughput():
    events = [(10000.0, "gpu"), (20000.0, "nic")]
    stop = one(small(), events, "fail-stop")
    # Fail-stop also stops at 20000 s: segment 8800 s = 2 cycles + 400 s lost; 65200 s at the end.
    assert stop["productive"] == pytest.approx(7200 + 7200 + 15 * 3600 + 2200)
    reccl = one(small(), events, "reccl")
    # ReCCL: only the GPU failure stops the job (72200 s of work as above); the NIC failure
    # costs a 5 s failover and one repair hour at job throughput 1/(0.5 + 0.5/0.8) = 8/9.
    assert reccl["productive"] == pytest.approx(72200 - 3600 / 9 - 5)
    assert reccl["stops"] == 1 and stop["stops"] == 2


def test_degradation_ends_at_the_next_restart():
    r = one(small(), [(20000.0, "nic"), (22000.0, "gpu")], "reccl")
    # Stop at 22000: 5 cycles saved, 1000 s lost; restart at 23200; 63200 s to the end.
    # The degraded NIC is swapped at that restart: 2000 s at 8/9 throughput.
    assert r["productive"] == pytest.approx(18000 + 15 * 3600 + 200 - 2000 / 9 - 5)


def test_sglb_reroute_only_covers_fabric_links():
    events = [(10000.0, "fabric_link"), (30000.0, "last_hop")]
    sg = one(small(), events, "sglb-reroute")
    both = one(small(), events, "reccl+sglb")
    assert sg["stops"] == 1 and both["stops"] == 0


def test_failure_during_restart_extends_the_downtime():
    r = one(small(), [(10000.0, "gpu"), (10500.0, "other")], "fail-stop")
    # Down from 10000 until 10500 + 1200 = 11700; nothing else lost.
    assert r["downtime_h"] * 3600 == pytest.approx(1700)
    assert r["lost_work_h"] * 3600 == pytest.approx(1600)


def test_young_and_daly_intervals():
    assert checkpoint_interval(60, 3600, "young") == pytest.approx(math.sqrt(2 * 60 * 3600))
    # Daly (2006): sqrt(2CM)(1 + sqrt(C/2M)/3 + C/(18M)) - C.
    assert checkpoint_interval(60, 3600, "daly") == pytest.approx(617.88, abs=0.05)
    assert checkpoint_interval(60, 3600, 1234.0) == 1234.0
    assert checkpoint_interval(60, math.inf, "daly") == math.inf


def test_rates_reproduce_llama3_and_scale_with_gpus():
    ref = GpuHoursParams()
    assert sum(ref.rates().values()) * 54 * DAY == pytest.approx(419)
    res = gpu_hours(GpuHoursParams(gpus=4096, days=27.0, rate_uncertainty=False), seeds=2000,
                    seed=1, policies=("fail-stop",))
    f = res["failures_per_seed"]
    assert f["lo"] <= 419 / 8 <= f["hi"]
    # Every failure stops fail-stop; under ReCCL+SGLB the 35 switch/cable and 7 NIC ones do
    # not, except leaf switches (switch share x leaf share of the 35).
    both = gpu_hours(GpuHoursParams(rate_uncertainty=False), seeds=300, seed=2)
    stops = both["policies"]["reccl+sglb"]["stops"]["mean"]
    leaf = 35 * ref.switch_share * ref.leaf_share
    assert stops == pytest.approx(419 - 42 + leaf, rel=0.02)


def test_the_rate_posterior_widens_the_spread_beyond_poisson():
    # 42 network events: with the rates drawn from Gamma(n + 1/2, exposure) per seed the
    # count per seed has variance n + n^2 / (n + 1/2) (negative binomial), not n.
    fixed = draw_failures(GpuHoursParams(rate_uncertainty=False), 4000, seed=4)
    drawn = draw_failures(GpuHoursParams(), 4000, seed=4)
    net = [CLASSES.index(c) for c in NETWORK]
    var_fixed = np.isin(fixed.cls, net).sum(axis=1).var()
    var_drawn = np.isin(drawn.cls, net).sum(axis=1).var()
    assert var_fixed == pytest.approx(42, rel=0.1)
    assert var_drawn == pytest.approx(42 + 42**2 / 42.5, rel=0.12)


@pytest.mark.parametrize("kw, message", [
    (dict(gpus=0), "gpus must be a positive integer"),
    (dict(days=-1.0), "days must be positive"),
    (dict(checkpoint=0.0), "checkpoint must be positive"),
    (dict(interval="hourly"), "interval must be 'young', 'daly' or seconds"),
    (dict(reccl_network_throughput=1.5), "reccl_network_throughput must be within 0..1"),
    (dict(counts={"cosmic_rays": 3}), "unknown failure class"),
])
def test_inconsistent_parameters_are_rejected(kw, message):
    with pytest.raises(GpuHoursError, match=message):
        GpuHoursParams(**kw)


def test_unknown_policy_and_event_class_are_rejected():
    with pytest.raises(GpuHoursError, match="unknown policy 'magic'"):
        run_policy(small(), failures_from_events([]), "magic")
    with pytest.raises(GpuHoursError, match="unknown failure class 'psu'"):
        failures_from_events([(1.0, "psu")])


def test_swap_at_the_next_checkpoint_by_hand():
    # Cycle 4200 s. NIC at 20000 s: the job runs degraded (8/9) until the checkpoint that
    # completes at 5 x 4200 = 21000 s, then a planned restart swaps the host: 900 s down, no
    # work lost. Work: 5 x 3600 + (86400 - 21900 - 15 x 600) = 73500 s, less 1000/9 and 5.
    r = one(small(degraded="swap-at-checkpoint"), [(20000.0, "nic")], "reccl")
    assert r["productive"] == pytest.approx(73500 - 1000 / 9 - 5)
    assert r["swaps"] == 1 and r["stops"] == 0
    assert r["downtime_h"] * 3600 == pytest.approx(900)
    assert r["lost_work_h"] == 0
    # Fail-stop loses 3200 s of work and is down 1200 s: 70600 s of work.
    fs = one(small(degraded="swap-at-checkpoint"), [(20000.0, "nic")], "fail-stop")
    assert fs["productive"] == pytest.approx(70600)


def test_overlapping_degradations_cost_the_worst_not_the_sum():
    # Two NICs down 500 s apart, each repaired after 3600 s: degraded 20000..24100, once.
    r = one(small(), [(20000.0, "nic"), (20500.0, "nic")], "reccl")
    assert r["degraded_h"] * 3600 == pytest.approx(4100 / 9)
    # A NIC (slowdown 1/9) over a fabric link (SGLB 0.97: 1 - 1/(0.5 + 0.5/0.97) = 0.0152):
    # the NIC's slowdown while both run, the link's alone after.
    p = small(sglb_network_throughput=0.97)
    link_slow = 1 - p.job_throughput(0.97)
    r = one(p, [(20000.0, "fabric_link"), (21000.0, "nic")], "reccl+sglb")
    # link 20000..23600, NIC 21000..24600: the link alone for 1000 s, then the NIC's worse
    # slowdown until 24600 (its 3600 s)
    expect = 1000 * link_slow + 3600 / 9
    assert r["degraded_h"] * 3600 == pytest.approx(expect)


def test_a_surviving_failure_during_a_restart_costs_nothing():
    base = one(small(), [(10000.0, "gpu")], "reccl")
    r = one(small(), [(10000.0, "gpu"), (10500.0, "nic")], "reccl")
    assert r["productive"] == pytest.approx(base["productive"])
    assert r["degraded_h"] == 0 and r["failover_h"] == 0


def test_leaf_switches_stop_every_policy_spines_are_rerouted():
    for pol in ("fail-stop", "reccl", "sglb-reroute", "reccl+sglb"):
        assert one(small(), [(10000.0, "leaf_switch")], pol)["stops"] == 1
    assert one(small(), [(10000.0, "spine_switch")], "sglb-reroute")["stops"] == 0
    assert one(small(), [(10000.0, "spine_switch")], "reccl")["stops"] == 1


@pytest.mark.parametrize("degraded", ["swap-at-checkpoint", "until-repair"])
def test_every_second_is_accounted_under_every_policy(degraded):
    params = GpuHoursParams(gpus=16384, days=10.0, degraded=degraded)
    fails = draw_failures(params, 40, seed=5)
    for pol in ("fail-stop", "reccl", "sglb-reroute", "reccl+sglb"):
        r = run_policy(params, fails, pol)
        # work = productive + degraded + pauses; work + checkpoints + lost + down = window
        work = r["productive"] + 3600 * (r["degraded_h"] + r["failover_h"])
        total = work + 3600 * (r["lost_work_h"] + r["downtime_h"] + r["checkpoint_h"])
        assert total == pytest.approx(np.full(40, 10 * DAY))


def test_sensitivity_sweeps_and_the_cli_plot(tmp_path, capsys):
    from fabricsim.cli import main
    from fabricsim.sensitivity import sensitivity

    sens = sensitivity(GpuHoursParams(), seeds=30, seed=1)
    det = [r["saved"]["reccl+sglb"]["mean"] for r in sens["sweeps"]["detection"]["rows"]]
    assert det[-1] > det[0]          # a slower fail-stop detection makes failover worth more
    net = [r["saved"]["reccl+sglb"]["mean"] for r in sens["sweeps"]["network_counts"]["rows"]]
    assert net == sorted(net)
    assert sens["range"]["min"] <= min(det) and sens["range"]["max"] >= max(det)
    code = main(["gpu-hours", "--seeds", "20", "--sensitivity", "--sensitivity-seeds", "10",
                 "--quiet", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert "range of the mean saving over every variation" in out
    assert "assumed: no published split" in out
    assert (tmp_path / "gpu_hours_sensitivity.png").stat().st_size > 0
