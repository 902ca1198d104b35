"""Testbed pieces that need no root: flow choice, name checks, figures, command-line errors."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fabricmodel import FabricError, leaf_spine, load
from topologies import analysis
from topologies.demo import pick_flows
from topologies.mininet_fabric import FabricNetError, check_names, with_free_addresses
from topologies.udpload import Rails

REPO = Path(__file__).resolve().parents[2]
LS4X2 = load(REPO / "topologies" / "fabrics" / "ls4x2.yaml")


def test_flows_pair_hosts_without_a_common_leaf_both_ways():
    flows = pick_flows(LS4X2)
    pairs = [(f.src, f.dst) for f in flows]
    assert sorted(pairs) == sorted([("h1", "h3"), ("h3", "h1"), ("h2", "h4"), ("h4", "h2")])
    for f in flows:
        assert not set(f.src_leaves) & set(f.dst_leaves)
        assert len(f.src_ips) == len(f.dst_ips) == 2


def test_no_flows_when_every_host_shares_a_leaf():
    with pytest.raises(FabricError, match="nothing would cross a spine"):
        pick_flows(load(REPO / "topologies" / "fabrics" / "ls2x2.yaml"))


def test_interface_names_are_checked_against_the_kernel_limit():
    check_names(LS4X2, "tb")
    with pytest.raises(FabricNetError, match=r"'tbtoolongpre.*' of switch l1 is longer than 15"):
        check_names(LS4X2, "tbtoolongpre")


def test_free_addresses_are_distinct_and_keep_everything_else():
    f = with_free_addresses(LS4X2)
    addrs = [a for s in f.switches for a in (s.p4runtime, s.syncmesh, s.metrics)]
    assert len(set(addrs)) == len(addrs)
    assert [s.name for s in f.switches] == [s.name for s in LS4X2.switches]
    assert f.links == LS4X2.links and f.hosts == LS4X2.hosts


def _log(flow, sent_t, lost_idx, size=1000):
    seq = np.arange(len(sent_t), dtype=np.uint32)
    keep = np.ones(len(seq), bool)
    keep[list(lost_idx)] = False
    return analysis.FlowLog(flow, "a", "b", seq, np.asarray(sent_t, float),
                            np.zeros(len(seq), np.uint8), seq[keep],
                            np.asarray(sent_t, float)[keep] + 0.001, size)


def test_outage_is_time_from_cut_to_last_lost_packet():
    t = 100 + np.arange(0, 10, 0.01)  # 100 packets/s for 10 s
    log = _log(0, t, range(500, 512))  # packets sent at 105.00 .. 105.11 lost
    assert analysis.outage(log, 105.0, 3.0) == pytest.approx(0.11)
    assert analysis.outage(log, 107.0, 3.0) == 0.0
    fault = analysis.Fault("cut", "leaf-spine", 105.0, 108.0, local_flows=(0,), remote_flows=(1,))
    other = _log(1, t, [])
    figs = analysis.fault_figures([log, other], fault)
    assert figs.lost == 12
    assert figs.local_outage_s == pytest.approx(0.11) and figs.remote_outage_s == 0.0


def test_a_nic_cut_outage_counts_only_the_cut_rails_losses():
    t = 100 + np.arange(0, 4, 0.01)
    log = _log(0, t, [10, 11, 250])  # 100.10-100.11 on the cut rail, 102.50 on the other
    log.sent_rail[:] = 1
    log.sent_rail[:100] = 0
    fault = analysis.Fault("nic", "host-nic", 100.0, 104.0, remote_flows=(0,), rails={0: (0,)})
    figs = analysis.fault_figures([log], fault)
    assert figs.lost == 3
    assert figs.remote_outage_s == pytest.approx(0.11)  # not 2.5: rail 1's loss is not failover
    assert analysis.outage(log, 100.0, 4.0) == pytest.approx(2.5)


def test_loss_bursts_split_a_failover_from_a_later_loss():
    t = 100 + np.arange(0, 4, 0.01)
    # flow 0: the failover (100.00-100.05, every other packet), then a stall (101.20-101.25)
    # and a loss on rail 1, which the fault does not count; flow 1 is not the fault's at all
    a = _log(0, t, [0, 2, 4, 120, 121, 122, 123, 124, 125, 300])
    a.sent_rail[300] = 1
    b = _log(1, t, [50, 51])
    c = _log(2, t, [8])  # a remote flow's loss joins the first burst (80 ms after 40 ms)
    fault = analysis.Fault("cut", "leaf-spine", 100.0, 104.0, local_flows=(0,),
                           remote_flows=(2,), rails={0: (0,)})
    figs = analysis.fault_figures([a, b, c], fault)
    assert [(x, y, n) for x, y, n in figs.loss_bursts] == [
        (0.0, pytest.approx(0.08), 4), (pytest.approx(1.2), pytest.approx(1.25), 6)]
    assert figs.local_outage_s == pytest.approx(1.25)  # the outage counts the stall too
    # within the window only, and nothing lost is no burst
    assert analysis.loss_bursts([a], fault, window=1.0) == [(0.0, pytest.approx(0.04), 3)]
    assert analysis.loss_bursts([_log(0, t, [])], fault) == []


def _answered(rails, rail, sent_from, sent_to, rtt, bits=0b11, every=0.01):
    """Beacons on ``rail`` answering sends from ``sent_from`` to ``sent_to`` after ``rtt``."""
    for sent in np.arange(sent_from, sent_to, every):
        rails.on_beacon(rail, bits, float(sent), float(sent) + rtt)


def test_a_slow_rail_stays_alive_and_a_cut_one_dies_within_about_a_round_trip():
    rails = Rails(2, start=0.0)
    _answered(rails, 0, 0.0, 5.0, rtt=0.6)  # a loaded switch: 600 ms round trips
    _answered(rails, 1, 0.0, 5.0, rtt=0.03)
    assert rails.alive(5.0) == [True, True]  # slow is not dead
    # rail 0 is cut at t=5: its last answers (to sends before 5) keep arriving until 5.6
    _answered(rails, 0, 4.99, 5.0, rtt=0.6)
    _answered(rails, 1, 5.0, 6.0, rtt=0.03)
    assert rails.alive(5.5) == [True, True]
    assert rails.alive(5.0 + rails.timeout(0) + 0.01) == [False, True]
    assert rails.timeout(0) < 1.0  # about one round trip plus its variation
    # a probe on rail 0 answered after the repair brings it back
    _answered(rails, 1, 6.0, 7.6, rtt=0.03)
    rails.on_beacon(0, 0b11, 7.0, 7.6)
    assert rails.alive(7.6) == [True, True]


def test_beacons_that_arrive_late_do_not_revive_a_cut_rail():
    rails = Rails(2, start=9.0)
    _answered(rails, 0, 9.0, 10.0, rtt=0.05)
    _answered(rails, 1, 9.0, 10.0, rtt=0.05)
    # rail 0 is cut at t=10 while its return path queues: beacons answering the last sends
    # before the cut arrive until t=10.3, then beacons for older sends until t=11
    _answered(rails, 0, 9.99, 10.0, rtt=0.3, every=0.001)
    for k in range(10):
        rails.on_beacon(0, 0b11, 9.9 + 0.01 * k, 10.3 + 0.07 * k)
    _answered(rails, 1, 10.0, 11.0, rtt=0.05)
    assert rails.timeout(0) < 1.0
    assert rails.alive(11.0) == [False, True]


def test_the_receivers_carrier_report_takes_a_rail_out_until_it_says_otherwise():
    rails = Rails(2, start=0.0)
    rails.on_beacon(1, 0b10, 5.0, 5.05)  # on rail 1: "rail 0 has no carrier at my end"
    rails.on_beacon(0, 0b11, 4.9, 5.06)  # an older report (queued) does not override it
    assert rails.alive(5.1) == [False, True]
    rails.on_beacon(0, 0b11, 5.1, 5.15)  # the answer to a probe after the repair
    assert rails.alive(5.15) == [True, True]
    rails.link_ok = [True, False]  # our own NIC on rail 1 lost carrier
    assert rails.alive(5.15) == [True, False]
    rails.link_ok = [False, False]
    assert rails.alive(5.15) == [False, False] and rails.fallback() == []


def test_phase_rates_and_throughput_count_what_arrived():
    t = 100 + np.arange(0, 4, 0.001)  # 1000 packets/s of 1000 B = 8 Mbit/s
    log = _log(0, t, range(2000, 2500))  # half a second lost in the second half
    rates = analysis.phase_rates([log], [("a", 100, 102), ("b", 102, 104)])
    assert rates["a"]["lost"] == 0 and rates["b"]["lost"] == 500
    assert rates["a"]["delivered_mbps"] == pytest.approx(8.0, rel=0.01)
    assert rates["b"]["delivered_mbps"] == pytest.approx(6.0, rel=0.01)
    times, mbps = analysis.throughput([log], 100, 104, bin_s=0.5)
    assert len(times) == len(mbps) == 8
    assert mbps[0] == pytest.approx(8.0, rel=0.01)
    assert mbps[4] == pytest.approx(0.0, abs=0.1)


def test_one_way_delay_per_phase_by_send_time():
    t = 100 + np.arange(0, 4, 0.01)
    seq = np.arange(len(t), dtype=np.uint32)
    # the second half queues: 2 ms, then 300 ms; arrivals out of order and one duplicate
    delay = np.where(t < 102, 0.002, 0.300)
    recv_seq = np.concatenate([seq[::-1], seq[:1]])
    recv_t = np.concatenate([(t + delay)[::-1], t[:1] + 0.5])
    log = analysis.FlowLog(0, "a", "b", seq, t, np.zeros(len(t), np.uint8), recv_seq, recv_t, 100)
    rates = analysis.phase_rates([log], [("a", 100, 102), ("b", 102, 104), ("none", 200, 201)])
    assert rates["a"]["delay_ms_median"] == pytest.approx(2.0)
    assert rates["b"]["delay_ms_median"] == pytest.approx(300.0)
    assert rates["a"]["delay_ms_p99"] == pytest.approx(2.0)  # one duplicate of 201 is not p99
    assert rates["none"]["delay_ms_median"] is None
    # a received sequence number that was never sent has no delay
    stray = analysis.FlowLog(0, "a", "b", seq[:3], t[:3], np.zeros(3, np.uint8),
                             np.array([7, 1], np.uint32), np.array([100.5, 100.02]), 100)
    sent_at, d = analysis.one_way_delays(stray)
    assert sent_at.tolist() == [t[1]] and d == pytest.approx([0.01])


def test_plot_writes_a_png(tmp_path):
    times = np.arange(0, 5, 0.25)
    analysis.plot(tmp_path / "p.png", times, np.full(len(times), 5.0), [(101.0, "cut x")],
                  [("a", 100, 105)], 100.0, "t")
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("args, message", [
    (["send", "--flow", "1", "--src", "10.0.0.1,10.0.0.2", "--ifaces", "e0", "--dst", "10.0.0.3",
      "--rate-mbps", "1", "--duration", "1", "--out", "x"], "one entry per rail"),
    (["send", "--flow", "1", "--src", "10.0.0.1", "--ifaces", "e0", "--dst", "10.0.0.3",
      "--rate-mbps", "0", "--duration", "1", "--out", "x"], "--rate-mbps > 0"),
])
def test_udpload_rejects_bad_arguments_without_traceback(args, message):
    r = subprocess.run([sys.executable, "-m", "topologies.udpload", *args], capture_output=True,
                       text=True, cwd=REPO)
    assert r.returncode == 2
    assert message in r.stderr and "Traceback" not in r.stderr


def test_demo_refuses_a_bad_fabric_file_with_its_location(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nswitches: []\nlinks: []\nbogus: 1\n")
    r = subprocess.run([sys.executable, "-m", "topologies.demo", "--fabric", str(bad)],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert "bad.yaml" in r.stderr and "bogus" in r.stderr


def test_generated_fabric_gives_one_flow_pair_per_pod_pair():
    fabric = leaf_spine(4, 2, 2, 2)
    assert len(pick_flows(fabric)) == 4


def test_demo_refuses_a_prefix_that_makes_interface_names_too_long():
    r = subprocess.run([sys.executable, "-m", "topologies.demo", "--prefix", "muchtoolong"],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "longer than 15 characters" in r.stderr


@pytest.mark.parametrize("scale", ["0", "-2", "1e9", "nan"])
def test_demo_refuses_a_link_scale_out_of_range(scale):
    r = subprocess.run([sys.executable, "-m", "topologies.demo", "--link-scale", scale],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "--link-scale" in r.stderr


def test_testbed_softswitches_use_v2_rings_unless_told_otherwise(monkeypatch):
    """V2 rings hand each frame over at once (V3 holds a block up to 1 ms); the testbed's
    frames fit V2's slots. $SOFTSWITCH_RINGS still decides; BMv2 gets no such variable."""
    from types import SimpleNamespace

    from topologies.p4switch import P4RuntimeSwitch

    monkeypatch.delenv("SOFTSWITCH_RINGS", raising=False)
    assert P4RuntimeSwitch.environment(SimpleNamespace(target="softswitch"))["SOFTSWITCH_RINGS"] == "version=2"
    assert "SOFTSWITCH_RINGS" not in P4RuntimeSwitch.environment(SimpleNamespace(target="bmv2"))
    monkeypatch.setenv("SOFTSWITCH_RINGS", "version=3,timeout_ms=2")
    env = P4RuntimeSwitch.environment(SimpleNamespace(target="softswitch"))
    assert env["SOFTSWITCH_RINGS"] == "version=3,timeout_ms=2"


@pytest.mark.parametrize("args", [["--size", "19"], ["--size", "1401"], ["--rate", "0"],
                                  ["--rate", "nan"]])
def test_demo_refuses_a_load_out_of_range(args):
    r = subprocess.run([sys.executable, "-m", "topologies.demo", *args],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert args[0] in r.stderr


def test_make_run_rates_follow_the_switch_engine(monkeypatch):
    """The native engine's links run at 10x the examples' rates (more load, in full-size
    frames); the Python engine and BMv2 stay at 1x, and a side-by-side run takes the load all
    its targets carry."""
    from topologies import demo

    monkeypatch.setenv("SOFTSWITCH_ENGINE", "native")
    assert demo.default_load(["softswitch"]) == demo.NATIVE_LOAD
    assert demo.default_load(["bmv2"]) == demo.BASE_LOAD
    assert demo.default_load(["softswitch", "bmv2"]) == demo.BASE_LOAD
    monkeypatch.setenv("SOFTSWITCH_ENGINE", "python")
    assert demo.default_load(["softswitch"]) == demo.BASE_LOAD
    assert demo.NATIVE_LOAD.link_scale >= 10 * demo.BASE_LOAD.link_scale
    assert demo.NATIVE_LOAD.rate_mbps > demo.BASE_LOAD.rate_mbps


def test_demo_names_an_unknown_engine_before_it_builds_anything():
    r = subprocess.run([sys.executable, "-m", "topologies.demo"], capture_output=True, text=True,
                       cwd=REPO, env={**os.environ, "SOFTSWITCH_ENGINE": "bogus"})
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "SOFTSWITCH_ENGINE='bogus'" in r.stderr
