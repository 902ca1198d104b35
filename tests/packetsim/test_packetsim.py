"""The packet-level simulator: real sglb.p4 in every switch, ns-3's TCP, SyncMesh in the loop.

Each run is a ``fabric-sim packet`` process (ns-3 keeps global state), on small
fabrics made here, at 10 Gbit/s (``--link-scale 1000`` of 10 Mbit/s files).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fabricmodel import dump, leaf_spine

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("ns") is None,
                                 reason="ns-3 not installed (pip install -e '.[crosscheck]')")]

ROOT = Path(__file__).resolve().parents[2]


def fabric_file(tmp: Path, name: str, **kw) -> Path:
    path = tmp / f"{name}.yaml"
    dump(leaf_spine(name=name, link_capacity="10Mbit", nic_capacity="10Mbit", **kw), path)
    return path


def simulate(fabric: Path, out: Path, *args: str) -> dict:
    """One run of ``fabric-sim packet``; its JSON."""
    cmd = [sys.executable, "-m", "packetsim.cli", "--fabric", str(fabric), "--json", str(out),
           "--quiet", *args]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


def test_one_flow_runs_at_the_bottleneck_rate_of_its_frames(tmp_path):
    # h2 (l2) -> h1 (l1) over the one spine (an incast of two hosts: one flow), every link
    # 10 Gbit/s. The buffers dwarf the bandwidth-delay product (~15 KB), so TCP keeps the
    # path busy: the transfer takes its segments' wire time on the busiest link. A full
    # segment is 1448 B of payload + 32 B TCP (timestamps) + 20 B IPv4; on a host link
    # + 2 B PPP (1502 B); between switches the frame is Ethernet (14 B), and with a fabric
    # MTU of 1520 (tag_frame_max 1534) leaf-to-leaf traffic carries SGLB's 20-byte tag,
    # + 2 B PPP: 1536 B. 5 MB -> 3454 segments -> 3454 * 1536 * 8 / 10e9 = 4.244 ms.
    fab = fabric_file(tmp_path, "one", leaves=2, spines=1, hosts_per_leaf=1)
    r = simulate(fab, tmp_path / "one.json", "--workload", "incast", "--flows", "1",
                 "--bytes", "5000000", "--lb", "sglb", "--set", "tag_frame_max=1534")
    assert r["finished"] == r["flows_total"] == 1
    segments = -(-5_000_000 // 1448)
    expected = segments * 1536 * 8 / 10e9
    assert r["completion_s"] == pytest.approx(expected, rel=0.01)
    assert r["dataplane_events"]["l2"].get("tag_skipped", 0) == 0
    assert r["reorderings"] == 0 and r["timeouts"] == 0


def test_the_same_seed_gives_the_same_json_and_another_seed_another(tmp_path):
    fab = fabric_file(tmp_path, "det", leaves=2, spines=2, hosts_per_leaf=2)
    args = ("--workload", "permutation", "--flows", "2", "--bytes", "300000", "--lb", "sglb")
    a = simulate(fab, tmp_path / "a.json", *args, "--seed", "3")
    simulate(fab, tmp_path / "b.json", *args, "--seed", "3")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert a["finished"] == a["flows_total"] > 0
    c = simulate(fab, tmp_path / "c.json", *args, "--seed", "4")
    assert c["flows"] != a["flows"]  # another permutation, other start times


def test_a_cut_link_is_left_by_sglb_within_microseconds_and_by_ecmp_after_the_control_plane(
        tmp_path):
    # Two leaves, two spines, long flows both ways: cutting l1's link to s1 at 3 ms strands
    # whatever crosses it. SGLB's l1 moves its packets on the port-status packet (10 us);
    # s1 gets its own at the same time and sends notices that move l2's packets for l1.
    # From then on no switch sends a frame into the failure, and TCP's fast retransmit
    # recovers most flows well within a millisecond (one that lost its whole window in
    # those 10 us waits for its retransmission timeout). ECMP's l2 hashes over the live paths
    # SyncMesh writes, after s1's daemon hears of the cut (--port-event 1 ms) and tells it
    # (--message-delay 2 ms): its flows through s1 lose their packets until then, and wait
    # for TCP's retransmission timeout (200 ms).
    fab = fabric_file(tmp_path, "cut", leaves=2, spines=2, hosts_per_leaf=1)
    # (leaf_spine: each leaf's host on port 1, its uplinks to s1 and s2 on ports 2 and 3)
    args = ("--workload", "alltoall", "--flows", "8", "--bytes", "8000000",
            "--fail", "l1:2-s1:1@3ms", "--port-event", "1ms", "--message-delay", "2ms")
    sglb = simulate(fab, tmp_path / "sglb.json", *args, "--lb", "sglb")
    (cut,) = sglb["failures"]
    assert cut["affected_flows"], "no flow crossed the cut link"
    assert 10 <= cut["dataplane_us"] <= 50
    assert cut["unrecovered_flows"] == [] and cut["recovery_us_median"] < 1000
    assert sglb["finished"] == sglb["flows_total"]
    assert sglb["dataplane_events"]["l1"]["port_down"] == 1
    assert sglb["dataplane_events"]["s1"]["notice_sent"] >= 1
    ecmp = simulate(fab, tmp_path / "ecmp.json", *args, "--lb", "ecmp")
    (ecut,) = ecmp["failures"]
    assert ecut["affected_flows"]
    assert ecut["recovery_us"] is None or ecut["recovery_us"] > 3000


def test_the_control_plane_alone_moves_traffic_off_a_path_syncmesh_excludes(tmp_path):
    # The data plane never hears of the cut (--detect long after the run), so only
    # SyncMesh can act: s1's daemon sees its link to l2 go down at 2 ms (+0.5 ms), tells
    # l1's daemon (+1 ms), which writes l1's profile for l2 without the s1 path. From
    # then on no new flowlet from l1 to l2 takes s1: l1's uplink to s1 falls silent
    # while l1's uplink to s2 carries it all (a 1 ms minimum RTO brings back the
    # connections that lost packets into the cut before).
    fab = fabric_file(tmp_path, "ctl", leaves=2, spines=2, hosts_per_leaf=1)
    r = simulate(fab, tmp_path / "ctl.json", "--workload", "alltoall", "--flows", "4",
                 "--bytes", "12000000", "--lb", "sglb", "--fail", "l2:2-s1:2@2ms",
                 "--detect", "900ms", "--stop", "1s", "--port-event", "0.5ms",
                 "--message-delay", "1ms", "--sample", "100us", "--min-rto", "1ms")
    s = r["samples"]
    up = s["links"].index("l1:2-s1:1")
    other = s["links"].index("l1:3-s2:1")
    t = s["t_s"]
    late = [k for k in range(1, len(t)) if 4.5e-3 <= t[k - 1]]
    assert late, "the run ended before the window"
    moved = sum(s["bytes_up"][k][up] - s["bytes_up"][k - 1][up] for k in late)
    kept = sum(s["bytes_up"][k][other] - s["bytes_up"][k - 1][other] for k in late)
    assert kept > 10_000_000
    assert moved == 0
    assert r["switch_writes"]["l1"] > 0


def test_bad_input_is_one_line_naming_the_problem(tmp_path):
    fab = fabric_file(tmp_path, "bad", leaves=2, spines=1, hosts_per_leaf=1)
    cases = [(["--fail", "l9:9@1ms"], "no link 'l9:9'"),
             (["--link-scale", "0"], "--link-scale"),
             (["--set", "nonsense=3"], "unknown setting 'nonsense'"),
             (["--define", "MAX_PATHS=64"], "--define: MAX_PATHS is set from --max-paths"),
             (["--define", "X=1;drop"], "--define: expected NAME=VALUE")]
    for extra, needle in cases:
        proc = subprocess.run([sys.executable, "-m", "packetsim.cli", "--fabric", str(fab),
                               "--quiet", *extra], cwd=ROOT, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 2, (extra, proc.stderr[-2000:])
        assert needle in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    bad = tmp_path / "unknown-key.yaml"
    bad.write_text(fab.read_text() + "colour: blue\n")
    proc = subprocess.run([sys.executable, "-m", "packetsim.cli", "--fabric", str(bad), "--quiet"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2 and "colour" in proc.stderr and "Traceback" not in proc.stderr


def _pinned(flows):
    from fabricsim.ns3_model import Ns3Fabric, run

    return run(Ns3Fabric(), flows, "pinned")


@pytest.mark.xfail(strict=True, reason="open finding: ECMP here finishes 11% later than the "
                   "cross-check's pinned routers (7.67 against 6.92 ms after framing); not explained yet")
def test_ecmp_agrees_with_the_ns3_crosscheck_pinned_to_the_spines_it_hashed_to(tmp_path):
    # The fabric of fabricsim's ns-3 cross-check (2 leaves x 2 spines, two hosts a leaf,
    # 10 Gbit/s, 1 us): every host sends 4 MB to both hosts of the other leaf. Whatever
    # spines sglb.p4's ECMP hashes the flows to, the cross-check's IP routers pinned to the
    # same spines must finish them in about the same times: the switches differ, TCP and
    # the bottlenecks do not. Frames between switches are 14 B longer here (Ethernet; ECMP
    # adds no SGLB tag): 1516 B a full segment against 1502, which the comparison takes out.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from fabricsim.ns3_model import Ns3Flow

    fab = fabric_file(tmp_path, "xc", leaves=2, spines=2, hosts_per_leaf=2)
    r = simulate(fab, tmp_path / "xc.json", "--lb", "ecmp", "--workload", "alltoall",
                 "--flows", "1", "--bytes", "4000000")
    index = {"h1": 0, "h2": 1, "h3": 2, "h4": 3}
    flows = []
    for f in r["flows"]:
        (uplink,) = f["uplinks"]  # ECMP: one path per flow
        spine = 0 if "-s1:" in uplink else 1
        flows.append(Ns3Flow(index[f["src"]], index[f["dst"]], f["bytes"], 0.0, spine))
    assert len({fl.spine for fl in flows}) == 2 or len(flows) == 8
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=ctx) as ex:
        ref = ex.submit(_pinned, flows).result(timeout=900)
    ours = [f["fct_s"] for f in r["flows"]]
    assert max(ours) == pytest.approx(max(ref) * 1516 / 1502, rel=0.05)
    assert sorted(ours) == pytest.approx([t * 1516 / 1502 for t in sorted(ref)], rel=0.15)


def test_both_engines_give_the_same_simulation_byte_for_byte(tmp_path):
    # The native engine is the same program compiled to C: a whole simulation (every
    # flowlet decision, register and counter read by SyncMesh, a link cut and the
    # failover it causes) must come out identical but for the engine's name.
    pytest.importorskip("cffi")
    fab = fabric_file(tmp_path, "eng", leaves=2, spines=2, hosts_per_leaf=2)
    args = ("--workload", "alltoall", "--flows", "2", "--bytes", "200000", "--lb", "sglb",
            "--fail", "l1:3@1600us")   # 0.6 ms into the transfers (they start at 1 ms)
    runs = {engine: simulate(fab, tmp_path / f"{engine}.json", *args, "--engine", engine)
            for engine in ("python", "native")}
    assert runs["python"]["failures"][0]["affected_flows"], runs["python"]["failures"]
    assert runs["python"]["dataplane_events"]["l1"].get("failover", 0) > 0
    for r in runs.values():
        assert r["options"].pop("engine") is not None
    assert json.dumps(runs["python"]) == json.dumps(runs["native"])


def test_the_decision_record_sees_every_new_flowlet_and_changes_nothing(tmp_path):
    """``--decisions`` records the leaves' new-flowlet decisions with the state the
    program read; it only reads, so the run is the same without it."""
    fab = fabric_file(tmp_path, "dec", leaves=2, spines=2, hosts_per_leaf=2)
    args = ("--workload", "permutation", "--flows", "2", "--bytes", "300000", "--lb", "sglb")
    plain = simulate(fab, tmp_path / "plain.json", *args)
    rec = simulate(fab, tmp_path / "rec.json", *args, "--decisions")
    decisions = rec.pop("decisions")
    rec["options"].pop("decisions")
    plain["options"].pop("decisions")
    assert rec == plain
    for leaf, events in rec["dataplane_events"].items():
        mine = [d for d in decisions if d["leaf"] == leaf and d["new_flowlet"]]
        assert len(mine) == events.get("new_flowlet", 0)
        for d in mine:
            assert d["chosen"] in [p["port"] for p in d["paths"]]
            assert all(p["cost"] == max(p["local"], p["remote"]) for p in d["paths"])
    assert any(d["flow"] is not None and d["kind"] == "data" for d in decisions)
