"""The test harness's own helpers (testsupport.py) where their behaviour is not obvious."""

import subprocess
import sys
from pathlib import Path

from testsupport import wait_until

REPO = Path(__file__).resolve().parent.parent


def hog_pids(parent: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(parent), "-x", "yes"], capture_output=True,
                         text=True).stdout
    return [int(x) for x in out.split()]


def running_yes(pid: int) -> bool:
    """`pid` is a `yes` that still runs (a zombie waiting for its new parent counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    name, state = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2]
    return name == "yes" and state != "Z"


def test_cpu_hogs_die_with_a_killed_test_process():
    """A test process killed inside `with CpuHogs()` (no __exit__ runs) takes its hogs along."""
    code = ("import sys, time; sys.path.insert(0, sys.argv[1]); from testsupport import CpuHogs\n"
            "with CpuHogs(2):\n    print('in', flush=True); time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(REPO)], stdout=subprocess.PIPE,
                            text=True)
    pids: list[int] = []
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "in"

        def two_hogs() -> list[int] | None:
            found = hog_pids(proc.pid)
            return found if len(found) == 2 else None

        pids = wait_until(two_hogs, "two hogs (setpriv exec'd into yes)", timeout=10)
        assert all(running_yes(p) for p in pids)
        proc.kill()
        proc.wait(10)
        wait_until(lambda: not any(running_yes(p) for p in pids), "the hogs gone", timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for p in pids:
            if running_yes(p):
                subprocess.run(["kill", "-9", str(p)], capture_output=True)
