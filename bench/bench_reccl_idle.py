"""ReCCL in a training loop: spurious failovers with compute gaps of 0-30 s, and a rank
that stalls for 5 s.

2 ranks x 2 NICs (pretend hosts on loopback). Each step is a 1 MiB all_reduce
followed by "compute" (a sleep, the GIL released) whose length runs through
0 to 30 s; then rank 1 is stopped (SIGSTOP) for 5 s while rank 0 waits in an
all_reduce, then a rank holds the GIL (C regex) for 3 s before its all_reduce.
Prints every step's time, the number of channel_down events (spurious
failovers: nothing failed, so the target is 0) and whether the stalls raised
an error (target: no). The first ReCCL showed 18-22 channel_down events in 14
steps with 1 s gaps. Takes about a minute. Prints figures, asserts nothing.

    python bench/bench_reccl_idle.py [--gaps 0,0.5,1,2,5,10,30,0]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import threading
import time

import numpy as np

from reccl.spawn import loopback_layout, run_ranks


def loop(comm, gaps: list[float], stall: float, gil: float) -> dict:
    x = np.ones(1 << 18, dtype=np.float32)
    steps = []
    for gap in gaps:
        t0 = time.monotonic()
        comm.all_reduce(x)
        steps.append((gap, time.monotonic() - t0))
        time.sleep(gap)
    pids = comm.all_gather(np.array([os.getpid()]))[:, 0]
    resume = None
    if comm.rank == 0:  # stopped before the next all_reduce can finish
        os.kill(int(pids[1]), signal.SIGSTOP)
        resume = threading.Timer(stall, os.kill, (int(pids[1]), signal.SIGCONT))
        resume.start()
    t0 = time.monotonic()
    error = ""
    try:
        comm.all_reduce(x)
    except Exception as e:  # noqa: BLE001 - reported, that is the figure
        error = str(e)
    stalled = time.monotonic() - t0
    if resume:
        resume.join()
    t0 = time.monotonic()
    if comm.rank == 1:
        pattern, n = re.compile(r"(x+x+)+y"), 18
        while time.monotonic() - t0 < gil:
            pattern.match("x" * n)
            n += 1
    try:
        comm.all_reduce(x)
    except Exception as e:  # noqa: BLE001
        error = error or str(e)
    gil_wait = time.monotonic() - t0
    downs = [e.detail for e in comm.events() if e.kind == "channel_down"]
    return {"steps": steps, "stall": stalled, "gil": gil_wait, "error": error, "downs": downs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gaps", default="0,0.5,1,2,5,10,30,0")
    ap.add_argument("--stall", type=float, default=5.0)
    ap.add_argument("--gil", type=float, default=3.0)
    a = ap.parse_args()
    gaps = [float(g) for g in a.gaps.split(",")]
    res = run_ranks(loop, loopback_layout(2, 1, 2), (gaps, a.stall, a.gil),
                    timeout=sum(gaps) + 300)
    print(f"# ReCCL training loop: 2 ranks x 2 NICs on loopback, 1 MiB all_reduce per step, "
          f"compute gaps {a.gaps} s")
    print(f"{'step':>4} {'gap before next(s)':>18} {'all_reduce time(ms) rank0':>26} {'rank1':>8}")
    for i, ((gap, t0), (_, t1)) in enumerate(zip(res[0]["steps"], res[1]["steps"],
                                                 strict=True)):
        print(f"{i:>4} {gap:>18.1f} {t0 * 1e3:>26.1f} {t1 * 1e3:>8.1f}")
    downs = sum(len(res[r]["downs"]) for r in res)
    print(f"spurious failovers (channel_down events, both ranks): {downs}")
    for r in res:
        for d in res[r]["downs"]:
            print(f"#   rank {r}: {d}")
    print(f"rank 1 stopped for {a.stall:.1f} s: rank 0's all_reduce took {res[0]['stall']:.2f} s, "
          f"error: {res[0]['error'] or res[1]['error'] or 'none'}")
    print(f"rank 1 holding the GIL for {a.gil:.1f} s: all_reduce took {res[0]['gil']:.2f} s on "
          f"rank 0")
    print("# targets: 0 spurious failovers; no error when a rank stalls for 5 s")


if __name__ == "__main__":
    main()
