"""Where a failover's time goes, read from a run's logs; the side-by-side table; TARGET's list.

The log lines are written by the real formatters (the daemon's ``SwitchLog`` in
logfmt, softswitch's key=value lines), so a change of either format breaks
these tests rather than the summary's figures silently.
"""

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from syncmesh.logs import LogfmtFormatter, SwitchLog

from softswitch.runner import _KeyValueFormatter
from topologies import compare, failover_path
from topologies.demo import parse_targets

REPO = Path(__file__).resolve().parents[2]


def write_log(path: Path, formatter: logging.Formatter, lines) -> None:
    """``lines``: (time, emit(logger)) pairs, written through ``formatter`` stamped at those times."""
    logger = logging.getLogger(f"tb-failover-path.{path.stem}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    handler = logging.FileHandler(path)
    handler.setFormatter(formatter)
    stamp = [0.0]

    def restamp(record: logging.LogRecord) -> bool:
        record.created = stamp[0]
        record.msecs = (stamp[0] - int(stamp[0])) * 1000
        return True

    handler.addFilter(restamp)
    logger.handlers[:] = [handler]
    try:
        for at, emit in lines:
            stamp[0] = at
            emit(logger)
    finally:
        handler.close()
        logger.handlers.clear()


def daemon_line(port, up, seq=1):
    return lambda lg: SwitchLog("l1", lg).event("port_status_sent", port=port, up=up, seq=seq,
                                                waited_ms=0.1, send_ms=0.4)


def softswitch_line(port, up, seq=1):
    return lambda lg: lg.info("switch=tbl1 port_status port=%d up=%s seq=%d", port, up, seq)


CUT = 1_800_000_000.0


def test_bmv2_reads_the_daemons_packet_out_line(tmp_path):
    write_log(tmp_path / "l1.syncmesh.log", LogfmtFormatter(), [
        (CUT - 5, daemon_line(3, False)),        # an earlier cut: before this one
        (CUT + 0.010, daemon_line(1, False)),    # another port
        (CUT + 0.020, daemon_line(3, True)),     # the other direction
        (CUT + 0.031, daemon_line(3, False)),
        (CUT + 0.050, daemon_line(3, False)),
    ])
    got = failover_path.port_status_delay(tmp_path, "bmv2", "tbl1", "l1", 3, False, CUT)
    assert got == pytest.approx(0.031, abs=0.0011)
    assert failover_path.port_status_delay(tmp_path, "bmv2", "tbl1", "l1", 3, True, CUT) \
        == pytest.approx(0.020, abs=0.0011)
    # softswitch's log is not where BMv2's figure comes from
    assert failover_path.port_status_delay(tmp_path, "softswitch", "tbl1", "l1", 3, False,
                                           CUT) is None


def test_softswitch_reads_the_switchs_own_line(tmp_path):
    write_log(tmp_path / "tbl1.softswitch.log", _KeyValueFormatter(), [
        (CUT + 0.004, softswitch_line(4, False)),
        (CUT + 0.012, softswitch_line(3, False)),
    ])
    (tmp_path / "l1.syncmesh.log").write_text("")  # the daemon sends nothing on softswitch
    got = failover_path.port_status_delay(tmp_path, "softswitch", "tbl1", "l1", 3, False, CUT)
    assert got == pytest.approx(0.012, abs=0.0011)


def test_no_line_no_log_or_garbage_is_no_figure(tmp_path):
    assert failover_path.port_status_delay(tmp_path, "bmv2", "tbl1", "l1", 3, False, CUT) is None
    (tmp_path / "l1.syncmesh.log").write_bytes(
        b"\xff\xfe garbage\nts=notatime level=info switch=l1 event=port_status_sent port=3 "
        b"up=False\n")
    assert failover_path.port_status_delay(tmp_path, "bmv2", "tbl1", "l1", 3, False, CUT) is None
    write_log(tmp_path / "l1.syncmesh.log", LogfmtFormatter(), [(CUT + 20, daemon_line(3, False))])
    assert failover_path.port_status_delay(tmp_path, "bmv2", "tbl1", "l1", 3, False, CUT) is None


def done(events):
    return {"done": True, "channel_events": events}


def test_reccl_silences_are_the_channels_declared_dead_by_silence_in_the_window():
    lines = {
        "h1": [{"op": "all_reduce"}, done([
            {"t": CUT + 1.1, "kind": "channel_down", "peer": 2, "channel": 5,
             "detail": "h1 eth0 -> h3 eth0: silent for 1.10 s while rank 2 was heard on "
                       "channel 6; 3 chunks moved"},
            {"t": CUT + 0.01, "kind": "channel_down", "peer": 2, "channel": 7,
             "detail": "h1 eth0 -> h3 eth0: link down; 0 chunks moved"},   # carrier, not silence
            {"t": CUT + 2.0, "kind": "channel_up", "peer": 2, "channel": 5, "detail": "rejoined"},
            {"t": CUT + 9.0, "kind": "channel_down", "peer": 1, "channel": 1,
             "detail": "silent for 1.0 s"},                                 # after the window
        ])],
        "h3": [done([{"t": CUT + 0.4, "kind": "channel_down", "peer": 0, "channel": 2,
                      "detail": "silent for 1.00 s while rank 0 was heard on channel 3"}]),
               {"error": "x"}],
        "h2": [{"channel_events": [{"t": CUT + 1, "kind": "channel_down",
                                    "detail": "silent for 1 s"}]}],      # not a done line
    }
    got = failover_path.reccl_silences(lines, CUT, CUT + 6)
    assert [(x["host"], x["channel"], x["after_s"]) for x in got] == [("h3", 2, 0.4),
                                                                       ("h1", 5, 1.1)]


def summary(target, local, leaf_ps, silences, load):
    return {
        "target": target, "fabric": "ls4x2", "wall_seconds": 51.2, "load_average": load,
        "phases": {"baseline": {"delivered_mbps": 10.1, "lost": 0, "delay_ms_median": local * 10,
                                "delay_ms_p99": local * 100},
                   "1: cut l1:3-s1:1": {"delivered_mbps": 9.5, "lost": 40}},
        "faults": [{"kind": "leaf-spine", "local_outage_s": local, "remote_outage_s": 0.0,
                    "syncmesh_convergence_s": 0.04,
                    "port_status_s": {"l1:3": leaf_ps, "s1:1": 0.003},
                    "reccl_silences": silences,
                    "loss_bursts": [[0.0, local, 12], [1.5, 1.6, 3]]},
                   {"kind": "host-nic", "local_outage_s": 0.0, "remote_outage_s": 0.2,
                    "port_status_s": {"l1:1": None}, "reccl_silences": []}],
        "packets": {"sent": 1000, "lost": 41},
        "reccl": {"collectives": 56, "wrong": 0,
                  "phases": {"baseline": {"slowest_s": 0.3}, "cut": {"slowest_s": 1.26}}},
        "correct": True}


def test_the_side_by_side_table_has_one_column_per_target():
    text = compare.render([
        summary("softswitch", 0.055, 0.012, [], [3.1, 3.4]),
        summary("bmv2", 0.932, 0.9, [{"after_s": 1.1}], [5.0, 6.5]),
    ])
    rows = {line[:28].strip(): line[28:].split() for line in text.splitlines()[2:]}
    head = text.splitlines()[1].split()
    assert head == ["softswitch", "bmv2"]
    assert "55.0 ms" in " ".join(rows["local outage"]) and "932.0 ms" in " ".join(
        rows["local outage"])
    assert rows["load average (start/end)"] == ["3.1/3.4", "5.0/6.5"]
    bursts = [line for line in text.splitlines() if "loss bursts" in line]
    assert "0-55 1500-1600 ms" in bursts[0] and "0-932 1500-1600 ms" in bursts[0]
    assert bursts[1].split()[-2:] == ["n/a", "n/a"]  # the NIC cut's were not given
    delay = [line for line in text.splitlines() if "one-way delay" in line][0]
    assert "0.6 / 5.5 ms" in delay and "9.3 / 93.2 ms" in delay
    leaf = text.splitlines()[[i for i, line in enumerate(text.splitlines())
                              if "port-status at the leaf" in line][0]]
    assert "l1:3 12.0 ms" in leaf and "l1:3 900.0 ms" in leaf
    silent = [line for line in text.splitlines() if "ReCCL channels silent" in line][0]
    assert "none" in silent and "1, first after 1100 ms" in silent
    nic = [line for line in text.splitlines() if "port-status at the leaf" in line][1]
    assert nic.count("l1:1 n/a") == 2  # no log line: no figure, the end still named


def test_an_old_summary_without_the_new_figures_reads_n_a():
    old = summary("softswitch", 0.02, 0.01, [], [1.0, 1.0])
    for f in old["faults"]:
        del f["port_status_s"], f["reccl_silences"]
    del old["load_average"]
    text = compare.render([old])
    assert "n/a" in [line for line in text.splitlines() if "port-status at the spine" in line][0]
    assert "20.0 ms" in text


def test_compare_on_the_command_line_and_its_errors(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(summary("softswitch", 0.05, 0.01, [], [1.0, 2.0])))
    b.write_text(json.dumps(summary("bmv2", 0.06, 0.02, [], [1.0, 2.0])))
    r = subprocess.run([sys.executable, "-m", "topologies.demo", "--compare", str(a), str(b)],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert "softswitch" in r.stdout and "bmv2" in r.stdout and "60.0 ms" in r.stdout
    bad = tmp_path / "bad.json"
    for content, message in (("{not json", "not JSON"), ('{"faults": 1}', "not a testbed summary")):
        bad.write_text(content)
        r = subprocess.run([sys.executable, "-m", "topologies.demo", "--compare", str(a),
                            str(bad)], capture_output=True, text=True, cwd=REPO)
        assert r.returncode == 2 and "Traceback" not in r.stderr
        assert str(bad) in r.stderr and message in r.stderr
    r = subprocess.run([sys.executable, "-m", "topologies.demo", "--compare",
                        str(tmp_path / "missing.json")], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and "missing.json" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("value, want", [
    ("softswitch", ["softswitch"]), ("BMv2", ["bmv2"]), ("softswitch,bmv2", ["softswitch", "bmv2"]),
    (" bmv2 , softswitch", ["bmv2", "softswitch"]), ("bmv2,bmv2", None), ("tofino", None),
    ("softswitch,", None), ("", None)])
def test_target_lists(value, want):
    assert parse_targets(value) == want


def test_demo_refuses_an_unknown_target_without_traceback():
    r = subprocess.run([sys.executable, "-m", "topologies.demo"], capture_output=True, text=True,
                       cwd=REPO, env={**os.environ, "TARGET": "softswitch,nope"})
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "TARGET=softswitch,nope" in r.stderr


def test_both_targets_without_bmv2_stop_before_anything_runs():
    from bmv2 import tools

    if not tools.missing_names(tools.P4C, tools.SWITCH):
        pytest.skip("p4c and BMv2 are installed: the run would start")
    r = subprocess.run([sys.executable, "-m", "topologies.demo"], capture_output=True, text=True,
                       cwd=REPO, env={**os.environ, "TARGET": "softswitch,bmv2"})
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "TARGET=bmv2 make run needs" in r.stderr and "[testbed]" not in r.stdout
