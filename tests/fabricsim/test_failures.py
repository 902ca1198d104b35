"""Failures during a run: exact times by hand, what each policy does, and refusals."""

import numpy as np
import pytest

from fabricsim.cli import main
from fabricsim.engine import simulate
from fabricsim.failures import (
    FailureError,
    FailurePlan,
    FailureSpec,
    Recovery,
    parse_failure,
    parse_time,
)
from fabricsim.measured import value
from fabricsim.policies import Ecmp, Sglb, Spray
from fabricsim.topology import leaf_spine
from fabricsim.workloads import Workload

GBIT = 1e9
C = 100 * GBIT       # NIC and uplink rate of the small fabric below
SIZE = 25e6          # bytes: 2 ms at C


def net_2x2():
    # 2 leaves x 2 spines, 2 single-NIC hosts per leaf (h0, h1 on leaf0; h2, h3 on leaf1):
    # each uplink carries 2 NIC ports' worth / 2 spines = C.
    return leaf_spine(2, 2, 2, nic_gbps=100)


def one_flow(net, size=SIZE, src=(0, 0), dst=(2, 0), start=0.0):
    return Workload("one", np.array([net.nic_node[src]]), np.array([net.nic_node[dst]]),
                    np.array([size]), np.array([start]), np.zeros(1, int))


def run(net, wl, policy, specs, **rec):
    plan = FailurePlan(net, [parse_failure(s) for s in specs], policy.name, Recovery(**rec))
    return simulate(net, wl, policy, tolerance=0.0, disruptions=plan)


def test_specs_parse_and_bad_ones_are_refused():
    assert parse_time("1.5ms") == pytest.approx(1.5e-3)
    assert parse_time("200us") == pytest.approx(2e-4)
    assert parse_time("2") == 2.0
    assert parse_failure("1ms:link:leaf0-spine1") == FailureSpec(1e-3, "link", "leaf0-spine1")
    net = net_2x2()
    for spec, message in [("1ms:cable:leaf0-spine1", "kind must be one of"),
                          ("soon:link:leaf0-spine1", "not a time"),
                          ("1ms:link", "TIME:KIND:TARGET"),
                          ("1ms:link:leaf0-leaf1", "no link between leaf0 and leaf1"),
                          ("1ms:link:leaf0-spine1:3", "only 1 parallel cable"),
                          ("1ms:nic:leaf0", "not a NIC endpoint"),
                          ("1ms:switch:h0/nic0", "is a NIC"),
                          ("1ms:switch:spine9", "no node 'spine9'")]:
        with pytest.raises(FailureError, match=message):
            FailurePlan(net, [parse_failure(spec)], "ecmp")
    with pytest.raises(FailureError, match="host mode"):
        Recovery(host="pray")
    with pytest.raises(FailureError, match="restart must be a number >= 0"):
        Recovery(restart=-1.0)


def test_own_uplink_down_costs_exactly_the_local_failover():
    # Spraying over leaf0's two uplinks; cutting one at 0.5 ms stalls the flow (part of it
    # is on the dead link) until leaf0 knows (local_failover), then it runs at C again on
    # the other uplink: finish = SIZE/C + local_failover.
    net = net_2x2()
    wl = one_flow(net)
    healthy = simulate(net, wl, Spray(), tolerance=0.0).makespan
    assert healthy == pytest.approx(SIZE * 8 / C)
    res = run(net, wl, Spray(), ["0.5ms:link:leaf0-spine0"])
    assert res.makespan == pytest.approx(healthy + value("local_failover"), rel=1e-9)
    # SGLB without flowlet re-choices: the same wait when its flow was on that uplink.
    for seed in range(4):
        plan = FailurePlan(net, [parse_failure("0.5ms:link:leaf0-spine0")], "sglb")
        res = simulate(net, wl, Sglb(flowlet_fraction=0.0), seed=seed, tolerance=0.0,
                       disruptions=plan)
        local = [n for n in res.notes if n.get("after") == "local_failover"][0]
        delay = value("local_failover") if local["flows_moved"] else 0.0
        assert res.makespan == pytest.approx(healthy + delay, rel=1e-9)
    # With flowlets the stalled flow may leave sooner, at a flowlet boundary (the dead port
    # reads busy, so no flowlet moves onto it), never later.
    for seed in range(4):
        plan = FailurePlan(net, [parse_failure("0.5ms:link:leaf0-spine0")], "sglb")
        res = simulate(net, wl, Sglb(), seed=seed, tolerance=0.0, disruptions=plan)
        assert healthy * (1 - 1e-9) <= res.makespan <= healthy + value("local_failover") + 1e-9


def test_remote_link_down_sglb_uses_the_notice_ecmp_the_control_plane():
    net = net_2x2()
    wl = one_flow(net)
    healthy = SIZE * 8 / C
    sp = run(net, wl, Spray(), ["0.5ms:link:spine1-leaf1"])
    assert sp.makespan == pytest.approx(healthy + value("remote_failover"), rel=1e-9)
    for seed in range(4):
        pol = Ecmp()
        plan = FailurePlan(net, [parse_failure("0.5ms:link:spine1-leaf1")], "ecmp")
        res = simulate(net, wl, pol, seed=seed, tolerance=0.0, disruptions=plan)
        remote = [n for n in res.notes if n.get("after") == "ecmp_routing_delay"]
        # the rehash happens at the routing delay, not before
        assert [n["time"] for n in remote] == [pytest.approx(0.5e-3 + value("ecmp_routing_delay"))]
        delay = value("ecmp_routing_delay") if remote[0]["flows_moved"] else 0.0
        assert res.makespan == pytest.approx(healthy + delay, rel=1e-9)


def test_throughput_timeline_shows_the_stall_and_the_recovery():
    net = net_2x2()
    res = run(net, one_flow(net), Spray(), ["0.5ms:link:leaf0-spine0"])
    t, g = res.timeline[:, 0], res.timeline[:, 1]
    at = lambda x: g[np.searchsorted(t, x, side="right") - 1]  # noqa: E731
    assert at(0.2e-3) == pytest.approx(C)
    assert at(5e-3) == 0.0
    assert at(0.5e-3 + value("local_failover") + 1e-4) == pytest.approx(C)


def test_reccl_moves_the_rest_of_a_dead_nics_flows_to_the_other_rail():
    # Host h0 has rails 0 and 1 on leaf0; its flow from rail 0 stalls at 0.5 ms, and after
    # ReCCL's detection the remaining bytes leave from rail 1 (idle) at C.
    net = leaf_spine(2, 2, 4, rails=2, rail_optimised=False, nic_gbps=100)
    wl = one_flow(net, src=(0, 0), dst=(2, 0))
    res = run(net, wl, Spray(), ["0.5ms:nic:h0/nic0"])
    assert res.makespan == pytest.approx(SIZE * 8 / C + value("reccl_detect_link_down"), rel=1e-9)
    notes = [n["event"] for n in res.notes]
    assert notes == ["nic h0/nic0 down", "reccl failover"]
    # a silent failure takes ReCCL's silence timeout instead
    slow = run(net, wl, Spray(), ["0.5ms:nic:h0/nic0"],
               reccl_detection=value("reccl_detect_silent"))
    assert slow.makespan == pytest.approx(SIZE * 8 / C + value("reccl_detect_silent"), rel=1e-9)


def test_fail_stop_aborts_and_reruns_the_whole_collective_after_the_restart():
    net = leaf_spine(2, 2, 4, rails=2, rail_optimised=False, nic_gbps=100)
    n = net.nic_node
    # One collective of two flows; only the first touches the failing NIC.
    wl = Workload("coll", np.array([n[0, 0], n[1, 0]]), np.array([n[2, 0], n[3, 0]]),
                  np.array([SIZE, SIZE]), np.zeros(2), np.zeros(2, int))
    res = run(net, wl, Spray(), ["0.5ms:nic:h0/nic0"], host="fail-stop", restart=0.2)
    restart_at = 0.5e-3 + value("failstop_detect") + 0.2
    # After the restart the replaced host's NIC works: both flows run again from scratch.
    assert res.finish == pytest.approx([restart_at + SIZE * 8 / C] * 2, rel=1e-9)
    assert [n["event"] for n in res.notes] == ["nic h0/nic0 down", "fail-stop abort",
                                               "fail-stop restart"]


def test_a_leaf_switch_takes_its_nics_and_reccl_moves_them_to_other_rails():
    # Rail-optimised: leaf0 holds rail 0 of hosts h0..h3, leaf1 rail 1 of the same hosts.
    net = leaf_spine(4, 2, 4, rails=2, nic_gbps=100)
    n = net.nic_node
    wl = Workload("x", np.array([n[0, 0], n[4, 1]]), np.array([n[4, 0], n[1, 0]]),
                  np.array([SIZE, SIZE]), np.zeros(2), np.zeros(2, int))
    res = run(net, wl, Spray(), ["0.5ms:switch:leaf0"])
    assert np.all(np.isfinite(res.finish))
    failover = [x for x in res.notes if x["event"] == "reccl failover"][0]
    assert failover["flows"] == 2       # both flows touch a NIC on leaf0
    assert res.makespan > SIZE * 8 / C + value("reccl_detect_link_down") - 1e-9


def test_a_spine_failure_leaves_ecmp_and_sglb_running_on_the_other_spine():
    net = leaf_spine(2, 2, 4, nic_gbps=100)
    n = net.nic_node
    wl = Workload("x", n[:4, 0], n[4:, 0], np.full(4, SIZE), np.zeros(4), np.zeros(4, int))
    for pol in (Ecmp(), Sglb(), Spray()):
        res = run(net, wl, pol, ["0.3ms:switch:spine1"])
        assert np.all(np.isfinite(res.finish))
        # Uplinks are 2C each: at most 4C until the cut, then at most the one spine's 2C.
        bound = 0.3e-3 + (4 * SIZE * 8 - 4 * C * 0.3e-3) / (2 * C)
        assert res.makespan >= bound * (1 - 1e-9)


def test_cli_failure_run_prints_inflation_and_named_delays(tmp_path, capsys):
    out = tmp_path / "fail"
    code = main(["run", "--leaves", "4", "--spines", "2", "--ports-per-leaf", "4", "--rails", "2",
                 "--nic-gbps", "100", "--group-size", "8", "--bytes", "1MiB", "--seeds", "2",
                 "--quiet", "--fail-at", "0.2ms:link:leaf0-spine1", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    assert "inflation" in text
    assert "local_failover; measured: bench/bench_testbed_failover.py" in text
    assert "ecmp_routing_delay" in text and "remote_failover" in text
    assert (out / "throughput.png").stat().st_size > 0
    assert main(["run", "--fail-at", "1ms:link:leaf0-nowhere", "--quiet"]) == 2
    assert "no node 'nowhere'" in capsys.readouterr().err
