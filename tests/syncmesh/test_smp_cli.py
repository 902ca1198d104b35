"""`syncmesh run --p4runtime` refuses what it cannot use with one located line, no traceback."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testsupport import free_port

REPO = Path(__file__).resolve().parents[2]
FOREIGN_PROGRAM = REPO / "tests" / "softswitch" / "test_p4runtime_prog.p4"


@pytest.fixture
def fabric_file(tmp_path):
    """One leaf and one spine on free loopback ports (nothing serves P4Runtime there)."""
    a = [f"127.0.0.1:{free_port()}" for _ in range(6)]
    path = tmp_path / "smp.yaml"
    path.write_text(f"""name: smp
switches:
- {{name: l1, role: leaf, id: 1, subnet: 10.0.1.0/24, p4runtime: '{a[0]}', syncmesh: '{a[1]}',
   metrics: '{a[2]}'}}
- {{name: s1, role: spine, id: 2, p4runtime: '{a[3]}', syncmesh: '{a[4]}', metrics: '{a[5]}'}}
links:
- a: {{switch: l1, port: 2}}
  b: {{switch: s1, port: 1}}
  capacity: 10Mbit
hosts:
- name: h1
  nics:
  - {{name: eth0, leaf: l1, port: 1, mac: '02:00:00:01:00:01', ip: 10.0.1.10, capacity: 10Mbit}}
""")
    return path


def run(fabric: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, SYNCMESH_TOKEN="smp-secret")
    return subprocess.run([sys.executable, "-m", "syncmesh.cli", "run", str(fabric), "l1",
                           "--metrics", "off", "--insecure", "--state-dir",
                           str(fabric.parent / "state"), *args],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=timeout)


def error_line(proc: subprocess.CompletedProcess) -> str:
    """The one error line of a refused run (no traceback anywhere)."""
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines, proc.stdout
    assert lines[-1].startswith("syncmesh: error: "), proc.stderr
    return lines[-1]


def test_pipeline_with_a_syntax_error_is_refused_at_its_line(fabric_file, tmp_path):
    bad = tmp_path / "bad.p4"
    bad.write_text("#include <core.p4>\n#include <v1model.p4>\n\ncontrol C( {\n}\n")
    proc = run(fabric_file, "--p4runtime", "--pipeline", str(bad))
    assert proc.returncode == 2
    line = error_line(proc)
    assert f"--pipeline: {bad}:4:" in line
    assert "started" not in proc.stderr  # refused before the daemon started


def test_missing_pipeline_file_is_refused(fabric_file, tmp_path):
    proc = run(fabric_file, "--p4runtime", "--pipeline", str(tmp_path / "none.p4"))
    assert proc.returncode == 2
    assert error_line(proc).endswith(f"--pipeline: no such file: {tmp_path / 'none.p4'}")


def test_a_program_without_the_sglb_tables_is_refused(fabric_file):
    proc = run(fabric_file, "--p4runtime", "--pipeline", str(FOREIGN_PROGRAM))
    assert proc.returncode == 2
    line = error_line(proc)
    assert "is not an SGLB program: no table" in line and "switch_config" in line


@pytest.mark.parametrize("args, message", [
    (("--p4runtime", "localhost"), "--p4runtime: expected host:port, got 'localhost'"),
    (("--p4runtime", "--election-id", "0"), "--election-id: must be in 1..2^128-1, got 0"),
    (("--p4runtime", "--device-id", "-1"), "--device-id: must be in 0..2^64-1, got -1"),
    (("--p4runtime", "--switch-budget", "-1"), "--switch-budget: must be >= 0, got -1"),
    (("--pipeline", "p4src/sglb.p4"), "--pipeline needs --p4runtime"),
    (("--p4runtime", "--counter-interval", "0"), "--counter-interval: must be > 0, got 0"),
    (("--p4runtime", "--flowlet-gap-us", "-5"),
     "--flowlet-gap-us: flowlet_gap_us = -5 is not an integer >= 0"),
    (("--p4runtime", "--flowlet-gap-us", str(1 << 32)),
     "--flowlet-gap-us: flowlet_gap_us = 4294967296 is outside 0..4294967295 on v1model "
     "(32-bit us)"),
    # the same gap, refused by the Tofino target's limit before anything is compiled
    (("--p4runtime", "--target", "tofino2", "--flowlet-gap-us", "5000000"),
     "--flowlet-gap-us: flowlet_gap_us = 5000000 is outside 0..4294967 on tofino2 "
     "(32-bit ns)"),
    (("--p4runtime", "--tie-tolerance", "256"),
     "--tie-tolerance: tie_tolerance = 256 is outside 0..255 on v1model"),
    (("--dre-period-shift", "8"), "--dre-period-shift needs --p4runtime"),
    (("--p4runtime", "--dre-period-shift", "25"), "--dre-period-shift: dre_period_shift = 25 is outside 0..24"),
    (("--p4runtime", "--notice-copies", "0"), "--notice-copies: notice_copies = 0 is outside 1..16"),
    (("--p4runtime", "--unknown-level", "8"),
     "--unknown-level: feedback unknown_level = 8 is outside 0..7"),
    (("--p4runtime", "--feedback-fresh-us", "200000"),
     "--feedback-fresh-us/--feedback-stale-us: feedback stale_us 100000 < fresh_us 200000"),
])
def test_bad_p4runtime_options_are_refused(fabric_file, args, message):
    proc = run(fabric_file, *args)
    assert proc.returncode == 2
    assert error_line(proc) == f"syncmesh: error: {message}"


def test_unreachable_switch_ends_the_daemon_after_its_budget(fabric_file):
    port = free_port()  # closed again: nothing listens there
    start = time.monotonic()
    proc = run(fabric_file, "--p4runtime", f"127.0.0.1:{port}", "--switch-budget", "1.5")
    elapsed = time.monotonic() - start
    assert proc.returncode == 1
    line = error_line(proc)
    assert line.startswith("syncmesh: error: l1: switch unreachable for 1.5 s, giving up")
    assert f"127.0.0.1:{port}" in line
    # it retried with back-off before giving up (the attempts are logged) ...
    assert proc.stderr.count("event=switch_lost") >= 2
    assert "event=switch_gave_up" in proc.stderr
    assert elapsed >= 1.5  # ... and did not give up before its budget
