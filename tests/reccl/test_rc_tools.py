"""reccl-perf, reccl-run and the rendezvous store, run for real over loopback."""

import contextlib
import io
import subprocess
import sys
import textwrap
import threading

import pytest

from reccl.launch import HostSpec, launch, parse_host
from reccl.perf import drive, parse_size
from reccl.store import StoreClient, StoreError, StoreServer


def test_perf_sweep_prints_nccl_tests_format_and_no_wrong_elements(capfd):
    code, _ = drive(["all_reduce", "all_to_all", "broadcast", "-b", "4K", "-e", "64K", "-f",
                     "16", "-n", "2", "-w", "1", "-c", "1", "-r", "1", "-a", "3", "-d", "double",
                     "--hosts", "2", "--rails", "2"])
    out = capfd.readouterr().out  # the ranks print: their output goes to the inherited fd
    assert code == 0, out
    lines = out.splitlines()
    head = [ln.split() for ln in lines if ln.startswith("#") and "redop" in ln]
    assert head and head[0] == ["#", "size", "count", "type", "redop", "root", "time", "algbw",
                                "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"]
    assert any("out-of-place" in ln and "in-place" in ln for ln in lines)
    rows = [ln.split() for ln in lines if ln.strip() and not ln.startswith("#")]
    assert [(r[0], r[2], r[3], r[4]) for r in rows] == [
        ("4096", "double", "sum", "-1"), ("65536", "double", "sum", "-1"),
        ("4096", "double", "none", "-1"), ("65536", "double", "none", "-1"),
        ("4096", "double", "none", "1"), ("65536", "double", "none", "1")]
    for r in rows:
        assert int(r[1]) * 8 == int(r[0])
        t, algbw, busbw, bad = float(r[5]), float(r[6]), float(r[7]), int(r[8])
        assert bad == 0 and t > 0
        assert algbw == pytest.approx(int(r[0]) / t / 1e3, rel=0.02, abs=2e-4)
        factor = 0.5 if r[3] == "none" and r[4] == "-1" else 1.0  # all_to_all (n-1)/n
        assert busbw == pytest.approx(algbw * factor, rel=0.02, abs=2e-4)
    assert [r[9:] for r in rows[2:4]] == [["N/A"] * 4] * 2  # all_to_all has no in-place form
    assert all(int(r[12]) == 0 for r in rows[:2] + rows[4:])
    assert "# Out of bounds values : 0 OK" in out
    avg = [ln for ln in lines if ln.startswith("# Avg bus bandwidth")]
    assert avg and float(avg[0].split(":")[1]) > 0


def test_perf_failure_run_reports_before_during_after_and_detection():
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code, s = drive(["all_reduce", "-e", "256K", "--hosts", "2", "--rails", "2",
                         "--fail-link", "0:1", "--fail-at", "0.5", "--duration", "1.5"])
    assert code == 0, buf.getvalue()
    assert s["cut"] is not None and s["wrong"] == 0 and not s["errors"]
    for k in ("busbw_before", "busbw_during", "busbw_after", "stall", "detect_first"):
        assert s[k] == s[k], k  # not NaN: measured
    assert 0 <= s["detect_first"] < 1.0
    assert "busbw_after" in buf.getvalue() and "stall" in buf.getvalue()


def test_perf_fail_stop_run_aborts_and_says_where():
    with contextlib.redirect_stdout(io.StringIO()):
        code, s = drive(["all_reduce", "-e", "256K", "--hosts", "2", "--rails", "2",
                         "--fail-link", "1:0", "--fail-at", "0.3", "--duration", "1.0",
                         "--fail-stop"])
    assert code != 0
    assert any("fail-stop" in e and "nic0" in e for e in s["errors"])


@pytest.mark.parametrize("argv,msg", [
    (["--fail-link", "5:0"], "host must be below 2"),
    (["--fail-link", "x"], "expected HOST:RAIL"),
    (["-b", "1M", "-e", "1K"], "-b must not exceed -e"),
    (["--rate", "1mbit"], "--rate needs --netns"),
    (["-d", "float77"], "unknown dtype"),
    (["all_reduse"], "unknown collective 'all_reduse'"),
    (["-r", "2"], "root must be below the number of ranks 2"),
])
def test_perf_rejects_bad_options(argv, msg):
    with pytest.raises(SystemExit, match=msg):
        drive(argv)


def test_parse_size_and_host():
    assert parse_size("8K") == 8192 and parse_size("2M") == 2 << 20 and parse_size("100") == 100
    assert parse_host("h1:10.0.0.1,10.1.0.1@ns1") == HostSpec("h1", ("10.0.0.1", "10.1.0.1"),
                                                              "ns1")
    with pytest.raises(ValueError, match="expected NAME:NIC"):
        parse_host("h1")


def test_launcher_sets_the_environment_and_stops_everyone_when_a_rank_fails(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent("""
        import os, sys, time
        from reccl import Communicator
        comm = Communicator.from_env()
        total = comm.all_reduce(__import__("numpy").array([comm.rank + 1]))[0]
        line = " ".join(["rank", os.environ["RECCL_RANK"], os.environ["RECCL_LOCAL_RANK"],
                         os.environ["RECCL_HOST"], str(int(total))]) + "\\n"
        os.write(1, line.encode())  # one write: lines of ranks sharing a pipe stay whole
        comm.close()
        if len(sys.argv) > 1 and comm.rank == 1:
            sys.exit(3)
        if len(sys.argv) > 1:
            time.sleep(60)
    """))
    hosts = [HostSpec("a", ("127.1.0.1",)), HostSpec("b", ("127.1.1.1",))]
    assert launch(hosts, 2, [sys.executable, str(script)], timeout=60) == [0, 0, 0, 0]
    p = subprocess.run([sys.executable, "-m", "reccl.launch", "--host", "a:127.1.0.1",
                        "--nproc-per-host", "2", "--", sys.executable, str(script), "fail"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 3
    assert "rank 1 exited with 3; stopping the others" in p.stderr
    assert "rank 0 0 a 3" in p.stdout and "rank 1 1 a 3" in p.stdout


def test_store_set_get_add_and_errors(tmp_path):
    srv = StoreServer(f"unix:{tmp_path}/s.sock", secret=b"k")
    try:
        a, b = StoreClient(srv.address, secret=b"k"), StoreClient(srv.address, secret=b"k")
        got = []
        t = threading.Thread(target=lambda: got.append(b.get("k", timeout=5)))
        t.start()
        a.set("k", b"\x00v")
        t.join()
        assert got == [b"\x00v"]
        assert a.add("n") == 1 and b.add("n", 5) == 6
        with pytest.raises(StoreError, match="timeout waiting for key 'missing'"):
            a.get("missing", timeout=0.1)
        with pytest.raises(StoreError, match="holds bytes, not a counter"):
            a.add("k")
        a.close()
        b.close()
    finally:
        srv.close()
    with pytest.raises(StoreError, match="expected HOST:PORT or unix:PATH"):
        StoreServer("nonsense")
    with pytest.raises(StoreError, match="cannot reach store"):
        StoreClient(f"unix:{tmp_path}/none.sock", timeout=0.2)
