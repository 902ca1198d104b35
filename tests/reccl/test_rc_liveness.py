"""Liveness over real processes on loopback: idle gaps, a stalled rank, a dead path.

The virtual-clock tests (test_rc_transport.py) cover gaps up to 30 s; these use a few
real seconds to show the same with sockets, threads and the OS scheduler in the loop.
"""

import os
import re
import signal
import threading
import time

import numpy as np

from reccl.ops import reference_ring
from reccl.spawn import loopback_layout, run_ranks


def downs(comm):
    return [e.detail for e in comm.events() if e.kind in ("channel_down", "peer_failed")]


def idle_loop(comm, gaps):
    """A training loop: 1 MiB all_reduce, then 'compute' (the GIL released) for a while."""
    x = np.full(1 << 18, comm.rank + 1, dtype=np.float32)
    out = []
    for gap in gaps:
        out.append(float(comm.all_reduce(x)[0]))
        time.sleep(gap)
    return out, downs(comm)


def test_compute_gaps_cause_no_failover():
    gaps = [0.0, 2.5, 0.0, 1.2, 0.3]
    res = run_ranks(idle_loop, loopback_layout(2, 1, 2), (gaps,), timeout=120)
    for r in range(2):
        sums, events = res[r]
        assert sums == [3.0] * len(gaps)
        assert events == [], events


def stalled(comm, how, seconds):
    """Rank 1 stalls (stopped by SIGSTOP, or holding the GIL) before its all_reduce."""
    pids = comm.all_gather(np.array([os.getpid()]))[:, 0]
    x = np.arange(1 << 18, dtype=np.float32) * (comm.rank + 1)
    comm.all_reduce(x)
    t0 = time.monotonic()
    resume = None
    if how == "sigstop" and comm.rank == 0:  # stopped before this all_reduce can finish
        os.kill(int(pids[1]), signal.SIGSTOP)
        resume = threading.Timer(seconds, os.kill, (int(pids[1]), signal.SIGCONT))
        resume.start()
    if how == "gil" and comm.rank == 1:
        pattern = re.compile(r"(x+x+)+y")  # catastrophic backtracking: C code, GIL held
        n = 18
        while time.monotonic() - t0 < seconds:
            pattern.match("x" * n)
            n += 1
    y = comm.all_reduce(x)
    took = time.monotonic() - t0
    if resume:
        resume.join()
    return y, took, downs(comm)


def check_stall(res, seconds):
    xs = [np.arange(1 << 18, dtype=np.float32) * (r + 1) for r in range(2)]
    ref = reference_ring(xs, "sum")
    for r in range(2):
        y, took, events = res[r]
        assert y.tobytes() == ref.tobytes()
        assert events == [], events
    assert max(res[r][1] for r in range(2)) >= seconds * 0.8  # it did wait for the peer


def test_a_rank_stopped_for_5_s_is_waited_for_not_failed():
    check_stall(run_ranks(stalled, loopback_layout(2, 1, 2), ("sigstop", 5.0), timeout=120),
                5.0)


def test_a_rank_holding_the_gil_is_waited_for_not_failed():
    check_stall(run_ranks(stalled, loopback_layout(2, 1, 2), ("gil", 2.5), timeout=120), 2.0)


def silent_rail(comm):
    x = np.ones(1 << 18, dtype=np.float32)
    comm.all_reduce(x)
    if comm.rank == 0:
        comm.set_link(1, False, silent=True)  # gray failure: no carrier change
    # Every rank must call the same collectives: a loop timed by each rank's own clock let
    # one rank run one all_reduce more, which met the other's final barrier (close()) and
    # failed with "got 0 elements". 50 rounds of >= 50 ms outlast the 1 s silence timeout.
    for _ in range(50):
        y = comm.all_reduce(x)
        time.sleep(0.05)
    if comm.rank == 0:
        comm.set_link(1, True, silent=True)
    time.sleep(2.0)  # reconnect and hold-down
    y = comm.all_reduce(x)
    st = {c["channel"]: c for c in comm.stats()}
    return y, [(e.kind, e.detail) for e in comm.events()], st[1]["alive"]


def test_a_silent_rail_dies_while_the_peer_is_heard_on_the_other_and_rejoins():
    res = run_ranks(silent_rail, loopback_layout(2, 1, 2), timeout=120)
    for r in range(2):
        y, events, alive = res[r]
        assert (y == 2).all()
        kinds = [k for k, _ in events]
        assert "channel_down" in kinds and "channel_up" in kinds, events
        assert alive
    details = [d for r in range(2) for k, d in res[r][1] if k == "channel_down"]
    assert any(re.search(r"silent for \d\.\d+ s while rank \d was heard on channel 0", d)
               for d in details), details
