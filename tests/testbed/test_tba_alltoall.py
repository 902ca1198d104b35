"""Units of topologies/alltoall.py: the plan, fabric scaling, bounds, and real transfers on loopback."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fabricmodel import FabricError, load
from testsupport import free_port, stop_process
from topologies import alltoall

REPO = Path(__file__).resolve().parents[2]
FABRICS = REPO / "topologies" / "fabrics"


def test_plan_pairs_cross_leaves_on_every_rail():
    fab = load(FABRICS / "ls4x2.yaml")
    plan = alltoall.plan(fab, 3, 1000)
    # h1, h2 (l1/l2) <-> h3, h4 (l3/l4): 8 ordered pairs, 2 rails, 3 connections each
    assert len(plan) == 8 * 2 * 3
    assert [t.id for t in plan] == list(range(len(plan)))
    pairs = {(t.src, t.dst) for t in plan}
    assert pairs == {(a, b) for a in ("h1", "h2") for b in ("h3", "h4")} | \
        {(b, a) for a in ("h1", "h2") for b in ("h3", "h4")}
    for t in plan:
        src_nic = fab.host(t.src).nics[t.rail]
        dst_nic = fab.host(t.dst).nics[t.rail]
        assert (t.src_ip, t.dst_ip) == (str(src_nic.ip), str(dst_nic.ip))
        assert src_nic.leaf != dst_nic.leaf
        assert t.nbytes == 1000


def test_plan_refuses_fabric_without_spine_traffic_and_bad_sizes():
    with pytest.raises(FabricError, match="no two hosts with disjoint leaves"):
        alltoall.plan(load(FABRICS / "ls2x2.yaml"), 1, 1000)
    fab = load(FABRICS / "ls4x2.yaml")
    with pytest.raises(ValueError, match="flows_per_pair >= 1"):
        alltoall.plan(fab, 0, 1000)
    with pytest.raises(ValueError, match="nbytes >= 1"):
        alltoall.plan(fab, 1, 0)


def test_scale_fabric_keeps_asymmetry_and_down_links():
    fab = load(FABRICS / "ls4x2-asym.yaml")
    small = alltoall.scale_fabric(fab, 0.2)
    assert [lk.name for lk in small.links] == [lk.name for lk in fab.links]
    for a, b in zip(fab.links, small.links, strict=True):
        assert b.capacity_mbps == pytest.approx(a.capacity_mbps * 0.2)
        assert b.up == a.up
    assert sorted({lk.capacity_mbps for lk in small.links}) == [1.0, 2.0]
    assert [lk.name for lk in small.links if not lk.up] == ["l1:4-s1:2"]
    assert all(n.capacity_mbps == pytest.approx(2.0) for h in small.hosts for n in h.nics)
    with pytest.raises(ValueError, match="scale factor must be > 0"):
        alltoall.scale_fabric(fab, 0)


def test_ideal_seconds_is_the_busiest_nic():
    fab = load(FABRICS / "ls4x2.yaml")
    plan = alltoall.plan(fab, 4, 100_000)
    # each NIC sends to 2 peers x 4 connections x 100 kB = 800 kB at 10 Mbit/s
    assert alltoall.ideal_seconds(fab, plan) == pytest.approx(800_000 * 8 / 10e6)
    # one extra transfer makes h1's rail-0 NIC the busiest
    extra = alltoall.Transfer(999, "h1", "h3", 0, "10.0.1.10", "10.0.3.10", 200_000)
    assert alltoall.ideal_seconds(fab, [*plan, extra]) == pytest.approx(1_000_000 * 8 / 10e6)


def test_completion_figures_and_errors():
    recs = [{"id": 0, "bytes": 10, "start": 100.0, "end": 101.0},
            {"id": 1, "bytes": 10, "connect": 100.125, "start": 100.25, "end": 103.5},
            {"id": 2, "bytes": 10, "start": 100.0, "end": 102.0},
            {"id": 3, "bytes": 10, "error": "refused"}]
    fig = alltoall.completion(recs, 100.0)
    assert fig == {"completion_s": 3.5, "first_s": 1.0, "median_s": 2.0, "latest_connect_s": 0.125,
                   "latest_start_s": 0.25,
                   "transfers": 3, "errors": 1, "bytes": 30}
    with pytest.raises(ValueError, match="no transfer finished"):
        alltoall.completion([recs[3]], 100.0)


def test_transfers_json_round_trip_and_errors():
    plan = alltoall.plan(load(FABRICS / "ls4x2.yaml"), 1, 5)
    assert alltoall.transfers_from_json(alltoall.transfers_to_json(plan)) == plan
    with pytest.raises(ValueError, match="not JSON"):
        alltoall.transfers_from_json("[{")
    with pytest.raises(ValueError, match=r"--transfers\[0\]"):
        alltoall.transfers_from_json('[{"id": 1}]')
    bad = json.loads(alltoall.transfers_to_json(plan[:2]))
    bad[1]["nbytes"] = -3
    with pytest.raises(ValueError, match=r"--transfers\[1\]: nbytes"):
        alltoall.transfers_from_json(json.dumps(bad))


def test_transfers_over_loopback_complete_and_refusals_are_reported():
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "topologies.alltoall", "serve", "--listen",
                               "127.0.0.1", "--port", str(port), "--duration", "60"],
                              cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        assert json.loads(server.stdout.readline()) == {"ready": True}
        sizes = [1, 300_000, 2_000_000]
        ts = [alltoall.Transfer(i, "a", "b", 0, "127.0.0.1", "127.0.0.1", n) for i, n in enumerate(sizes)]
        ts.append(alltoall.Transfer(3, "a", "b", 0, "127.0.0.1", "127.0.0.2", 10))  # nobody listens
        start = time.time() + 0.2
        recs = alltoall.send(ts, port, start)
    finally:
        stop_process(server)
    assert [r["id"] for r in recs] == [0, 1, 2, 3]
    for r, n in zip(recs[:3], sizes, strict=True):
        assert "error" not in r, r
        assert r["bytes"] == n and start <= r["connect"] <= r["start"] <= r["end"]
    assert "127.0.0.1->127.0.0.2" in recs[3]["error"]
    fig = alltoall.completion(recs, start)
    assert fig["transfers"] == 3 and fig["errors"] == 1 and fig["bytes"] == sum(sizes)


def test_command_line_errors_have_no_traceback():
    for argv in (["send", "--transfers", "nope"], ["send", "--transfers", "[]", "--port", "0"],
                 ["serve", "--listen", "127.0.0.1", "--duration", "-1"]):
        p = subprocess.run([sys.executable, "-m", "topologies.alltoall", *argv], cwd=REPO,
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 2, argv
        assert "Traceback" not in p.stderr and "error:" in p.stderr, p.stderr


SNMP = """Ip: Forwarding DefaultTTL
Ip: 1 64
Tcp: RtoAlgorithm RtoMin ActiveOpens RetransSegs InErrs
Tcp: 1 200 7 42 0
Udp: InDatagrams
Udp: 5
"""
NETSTAT = """TcpExt: SyncookiesSent TCPTimeouts TCPSACKReorder TCPTSReorder TCPRenoReorder
TcpExt: 0 3 10 4 1
IpExt: InNoRoutes
IpExt: 0
"""


def test_tcp_counters_parse_proc_tables():
    assert alltoall.tcp_counters(SNMP, NETSTAT) == {"retrans_segs": 42, "reorder_events": 15,
                                                    "timeouts": 3}
    assert alltoall.tcp_counters("", "") == {"retrans_segs": 0, "reorder_events": 0, "timeouts": 0}


def _validate_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("tba_validate", REPO / "bench" / "bench_validate_sim.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def test_simulated_testbed_workload_matches_the_plan_and_the_nic_bound():
    from fabricsim.engine import simulate
    from fabricsim.policies import make_policy
    from fabricsim.topology import from_fabric

    mod = _validate_module()
    fab = alltoall.scale_fabric(load(FABRICS / "ls4x2.yaml"), 0.2)
    net = from_fabric(fab)
    wl = mod.testbed_workload(fab, net, 4, 100_000)
    plan = alltoall.plan(fab, 4, 100_000)
    assert wl.n_flows == len(plan)
    names = [(net.node_names[s], net.node_names[d]) for s, d in zip(wl.src, wl.dst, strict=True)]
    assert names[0] == ("h1/eth0", "h3/eth0")
    assert {n for pair in names for n in pair} == {f"{h}/eth{k}" for h in ("h1", "h2", "h3", "h4")
                                                  for k in (0, 1)}
    # the symmetric fabric is non-blocking: spraying reaches the NIC bound exactly
    ideal = alltoall.ideal_seconds(fab, plan)
    assert simulate(net, wl, make_policy("spray")).makespan == pytest.approx(ideal, rel=1e-6)
    for seed in range(3):
        assert simulate(net, wl, make_policy("ecmp"), seed=seed).makespan >= ideal * (1 - 1e-9)


def test_the_prediction_takes_the_testbed_runs_workload(tmp_path, capsys):
    """Given a run's JSON the simulator predicts that run's workload (its scale, bytes and
    flows), not the defaults; a JSON whose args are not numbers is refused by name."""
    mod = _validate_module()
    run = tmp_path / "alltoall.json"
    run.write_text(json.dumps({"args": {"flows": 2, "bytes": 50_000, "scale": 0.5},
                               "fabrics": {}}))
    assert mod.main(["--testbed", str(run), "--seeds", "2"]) == 0
    assert "2 flows x 50000 B per host pair and rail, links x0.5" in capsys.readouterr().out
    run.write_text(json.dumps({"args": {"scale": "fast"}, "fabrics": {}}))
    with pytest.raises(SystemExit) as e:
        mod.main(["--testbed", str(run), "--seeds", "2"])
    assert e.value.code == 2 and "args.scale is 'fast'" in capsys.readouterr().err
