"""The `make run` scenario, shortened, in Mininet: traffic, failover, clean-up (also on Ctrl-C)."""

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from topologies import demo

pytestmark = [pytest.mark.mininet, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]
PREFIX = "tb"


def leftovers(prefix: str, marker: str) -> list[str]:
    """Interfaces of our nodes still in the root namespace, and processes of this run."""
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    names = [line.split(":", 2)[1].strip().split("@")[0] for line in out.splitlines()]
    found = [n for n in names if n.startswith((f"{prefix}l", f"{prefix}s", f"{prefix}h"))]
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmd or f"--name {prefix}l" in cmd or f"--name {prefix}s" in cmd:
            found.append(f"pid {pid}: {cmd[:120]}")
    return found


def test_shortened_scenario_delivers_fails_over_and_cleans_up(tmp_path):
    # Collectives of 32 KiB once a second per rank, not 128 KiB twice: the checks are about
    # failover and exact results, not capacity. With the default load a NIC cut puts a host's
    # UDP and ReCCL on one 10 Mbit/s link, whose tc queue then drops UDP behind TCP bursts
    sc = demo.Scenario(phase_s=3.0, prefix=PREFIX, out_dir=tmp_path, quiet=True,
                       reccl_interval=1.0, reccl_elements=8192)
    s = demo.run(sc)

    run_dir = Path(s["run_dir"])
    assert (run_dir / "summary.json").is_file() and (run_dir / "throughput.png").stat().st_size > 0
    # what was sent in every phase arrived, including with a fabric link and a host NIC cut
    # (by send time: on a loaded machine the software switches queue for a second or more, so
    # arrivals drift into the next phase; a path that did not fail over loses its share)
    for name, phase in s["phases"].items():
        assert phase["sent"] > 0 and phase["delivered_mbps"] > 0, (name, phase)
        assert phase["lost"] < 0.1 * phase["sent"], (name, phase)
    pk = s["packets"]
    assert pk["delivered"] >= 0.97 * pk["sent"], pk
    assert pk["duplicates"] == 0 and s["correct"]
    # the fabric cut was seen and agreed by every daemon, and paths failed over
    fabric_cut, nic_cut = s["faults"]
    assert fabric_cut["kind"] == "leaf-spine"
    assert fabric_cut["syncmesh_convergence_s"] is not None
    assert s["syncmesh"]["failovers"] >= 1
    assert len(s["phases"]) == 5
    assert s["syncmesh"]["restore_convergence_s"][0] is not None
    # ... in the data plane: l1 saw its uplink go down, s1 sent in-band notices, leaves took them
    ev = s["data_plane_events"]
    assert ev["l1"].get("PORT_DOWN", 0) >= 2  # the uplink, then the host port
    assert ev["s1"].get("NOTICE_SENT", 0) >= 1
    assert sum(ev[leaf].get("NOTICE_RECEIVED", 0) for leaf in ("l2", "l3", "l4")) >= 1
    # where the failover's time went: both ends' programs got the port-status packet (the
    # switch's own log), and the host port's leaf after the NIC cut
    assert set(fabric_cut["port_status_s"]) == {"l1:3", "s1:1"}
    assert all(x is not None for x in fabric_cut["port_status_s"].values()), fabric_cut
    assert nic_cut["port_status_s"]["l1:1"] is not None, nic_cut
    assert isinstance(fabric_cut["reccl_silences"], list)
    # the host cut: the host kept sending on its other rail (outage well below the phase)
    assert nic_cut["local_outage_s"] is not None and nic_cut["local_outage_s"] < 1.0
    assert nic_cut["remote_outage_s"] is not None and nic_cut["remote_outage_s"] < 1.5
    # ReCCL collectives ran in every phase and every result was bit-exact
    rc = s["reccl"]
    assert rc["errors"] == [] and rc["wrong"] == 0 and rc["ranks_finished"] == 4
    # ... and ran through every phase: a collective finished in it, or one that was in progress
    # during it finished later (under load one collective can outlast a phase)
    marks = [s["start"]] + [e["t"] for e in s["events"]] + [s["start"] + 5 * sc.phase_s]
    spans = [(x["t"] - x["seconds"], x["t"]) for host in ("h1", "h2", "h3", "h4")
             for x in map(json.loads, (run_dir / f"reccl-{host}.jsonl").read_text().splitlines())
             if "op" in x]
    for a, b in itertools.pairwise(marks):
        assert any(begin < b and end > a for begin, end in spans), (a - marks[0], rc["phases"])
    assert leftovers(PREFIX, str(tmp_path)) == []


def test_ctrl_c_mid_run_cleans_up(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "topologies.demo", "--phase", "5", "--prefix", PREFIX,
         "--out", str(tmp_path)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True)
    try:
        assert proc.stdout is not None
        seen = []
        for line in proc.stdout:
            seen.append(line)
            if ">>> cut" in line:
                break
        assert any(">>> cut" in x for x in seen), "".join(seen)
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, rest
    assert "interrupted: cleaned up" in rest
    time.sleep(0.5)
    assert leftovers(PREFIX, str(tmp_path)) == []
