"""Scenarios, parallel sweeps and the ``fabric-sim`` command line."""

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from fabricsim.cli import main
from fabricsim.experiment import Scenario, ScenarioError, run_many, run_scenario

FABRICS = Path(__file__).resolve().parents[2] / "topologies" / "fabrics"
SMALL = ["--leaves", "4", "--spines", "2", "--ports-per-leaf", "4", "--rails", "2",
         "--nic-gbps", "100", "--group-size", "8", "--bytes", "256KiB", "--seeds", "3", "--quiet"]


def small_scenario(**kw):
    base = dict(topology={"kind": "leaf-spine", "leaves": 4, "spines": 2, "ports_per_leaf": 4,
                          "rails": 2, "nic_gbps": 100},
                workload={"kind": "all-to-all", "group_size": 8, "bytes": 2**18, "qps": 2},
                failures={"random_degrade": 1})
    base.update(kw)
    return Scenario(**base)


def test_sweep_gives_the_same_results_on_any_executor():
    scn = small_scenario()
    tasks = [(scn, s) for s in range(3)]
    serial = run_many(tasks, progress=False)
    with ThreadPoolExecutor(2) as ex:
        pooled = run_many(tasks, executor=ex, progress=False)
    procs = run_many(tasks, workers=2, progress=False)
    for a, b, c in zip(serial, pooled, procs, strict=True):
        for p in scn.policies:
            assert a["policies"][p]["completion"] == b["policies"][p]["completion"]
            assert a["policies"][p]["completion"] == c["policies"][p]["completion"]


def test_summary_speedups_are_per_seed_ratios():
    scn = small_scenario()
    summary, runs = run_scenario(scn, [0, 1, 2], progress=False)
    for p in scn.policies:
        ratios = [r["policies"]["ecmp"]["completion"] / r["policies"][p]["completion"] for r in runs]
        assert summary["policies"][p]["speedup_vs_ecmp"]["mean"] == pytest.approx(np.mean(ratios))
        s = summary["policies"][p]["speedup_vs_ecmp"]
        assert s["lo"] <= s["mean"] <= s["hi"]
    assert summary["policies"]["ecmp"]["speedup_vs_ecmp"]["mean"] == pytest.approx(1.0)
    # Every EP group is one collective; the slowest one ends the all-to-all.
    for r in runs:
        coll = r["policies"]["sglb"]["collectives"]
        assert coll["count"] == 16 // 8  # 8 hosts x 2 GPUs in groups of 8
        assert coll["max"] == pytest.approx(r["policies"]["sglb"]["makespan"])
        assert coll["mean"] <= coll["max"]
    # Spraying is the upper bound on this workload.
    assert summary["policies"]["spray"]["speedup_vs_ecmp"]["mean"] >= 1.0


@pytest.mark.parametrize("kw, message", [
    (dict(topology={"kind": "ring"}), "topology.kind must be one of"),
    (dict(topology={"kind": "leaf-spine", "leafs": 4}), "unknown key"),
    (dict(workload={"kind": "all-to-all", "bytez": 1}), r"unknown key\(s\) bytez"),
    (dict(policies=("ecmp", "conga")), "unknown policy 'conga'"),
    (dict(sglb={"bits": 0}), "bits must be within 1..16"),
    (dict(failures={"random_fail": 1, "colour": 2}), "unknown key"),
    (dict(tolerance="0.1"), "tolerance must be a number"),
])
def test_bad_scenarios_are_rejected(kw, message):
    with pytest.raises(ScenarioError, match=message):
        small_scenario(**kw)


def test_bad_failure_values_are_scenario_errors():
    from fabricsim.experiment import run_seed

    for failures, message in (({"random_fail": "two"}, "failures: invalid literal"),
                              ({"degrade": [["leaf0-spine0", 3.0]]}, "within 0..1"),
                              ({"nic": ["leaf0"]}, "is not a NIC endpoint")):
        with pytest.raises(ScenarioError, match=message):
            run_seed(small_scenario(failures=failures), 0)


def test_cli_run_writes_figures_and_json(tmp_path, capsys):
    out = tmp_path / "fs"
    assert main(["run", *SMALL, "--degrade", "leaf0-spine0=0.5", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "speed-up vs ECMP" in text and "reduced_cables\": 1" in text
    data = json.loads((out / "results.json").read_text())
    pol = data["summary"]["policies"]
    assert set(pol) == {"ecmp", "sglb", "spray"}
    assert set(data["summary"]["figures"]) == {"completion", "speedup", "utilisation_cdf"}
    for png in ("completion.png", "speedup.png", "utilisation.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_runs_the_testbed_fabric_description(capsys):
    assert main(["run", "--fabric", str(FABRICS / "ls4x2-asym.yaml"), "--workload",
                 "permutation", "--bytes", "64KiB", "--qps", "2", "--seeds", "2", "--quiet"]) == 0
    assert "failed_cables\": 1" in capsys.readouterr().out


def test_cli_config_file(tmp_path, capsys):
    cfg = tmp_path / "scn.yaml"
    cfg.write_text("topology: {kind: fat-tree, k: 4, nic_gbps: 100}\n"
                   "workload: {kind: permutation, bytes: 100000}\n"
                   "policies: [ecmp, spray]\n")
    assert main(["run", "--config", str(cfg), "--seeds", "2", "--quiet"]) == 0
    assert "spray" in capsys.readouterr().out
    # failures during the run, recovery, per-policy options from the file
    cfg.write_text("topology: {kind: leaf-spine, leaves: 2, spines: 2, ports_per_leaf: 2, "
                   "nic_gbps: 100}\n"
                   "workload: {kind: permutation, bytes: 10000000}\n"
                   "policies: [ecmp, spray]\n"
                   "events: ['0.1ms:switch:spine1']\n"
                   "recovery: {ecmp_routing_delay: 0.001}\n"
                   "ecmp: {hashing: per-hop, hash_seeds: per-switch}\n"
                   "spray: {weighting: equal}\n")
    assert main(["run", "--config", str(cfg), "--seeds", "2", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "inflation" in out and "1 ms (ecmp_routing_delay; set for this run)" in out
    cfg.write_text("topology: {kind: leaf-spine, leaves: 2, spines: 2, ports_per_leaf: 2}\n"
                   "workload: {kind: permutation, bytes: 1}\n"
                   "events: ['soon:switch:spine1']\n")
    assert main(["run", "--config", str(cfg), "--quiet"]) == 2
    assert "not a time: 'soon'" in capsys.readouterr().err
    cfg.write_text("topology: {kind: fat-tree, k: 4}\nworkload: {kind: permutation, bytes: 1}\n"
                   "colour: blue\n")
    assert main(["run", "--config", str(cfg), "--quiet"]) == 2
    assert "colour" in capsys.readouterr().err


@pytest.mark.parametrize("extra, message", [
    (["--fail", "leaf0-spine9"], "no node 'spine9'"),
    (["--fail", "leaf0spine0"], "write it as a-b or a-b:k"),
    (["--degrade", "leaf0-spine0"], "write it as cable=factor"),
    (["--group-size", "5"], "group size 5 does not divide"),
    (["--policies", "ecmp,hula"], "unknown policy 'hula'"),
    (["--random-fail", "99"], "asked for 99 random cable faults"),
])
def test_cli_reports_bad_input_without_traceback(extra, message, capsys):
    assert main(["run", *SMALL, *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fabric-sim: error:") and message in err
    assert "Traceback" not in err


def test_cli_describe_and_a_missing_fabric_file(tmp_path, capsys):
    assert main(["describe", "--fabric", str(FABRICS / "ls2x2.yaml"), "--fail-nic", "h1/eth0"]) == 0
    assert '"failed_nic_links": 1' in capsys.readouterr().out
    assert main(["describe", "--fabric", str(tmp_path / "missing.yaml")]) == 2
    err = capsys.readouterr().err
    assert "missing.yaml: cannot read" in err and "Traceback" not in err
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nswitches: []\nlinks: []\n")
    assert main(["describe", "--fabric", str(bad)]) == 2
    assert "fabric-sim: error:" in capsys.readouterr().err


def test_cli_gpu_hours(tmp_path, capsys):
    out = tmp_path / "gh"
    assert main(["gpu-hours", "--gpus", "2048", "--days", "10", "--seeds", "50",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "ETTR" in text and "reccl+sglb" in text
    data = json.loads((out / "gpu_hours.json").read_text())
    pol = data["policies"]
    assert pol["fail-stop"]["gpu_hours_saved"]["mean"] == 0
    assert pol["reccl+sglb"]["stops"]["mean"] < pol["fail-stop"]["stops"]["mean"]
    assert (out / "gpu_hours.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["gpu-hours", "--gpus", "-3"]) == 2
    assert "gpus must be a positive integer" in capsys.readouterr().err
