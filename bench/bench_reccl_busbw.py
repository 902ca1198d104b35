"""ReCCL all_reduce busbw on loopback against plain Python TCP measured in the same run.

Interleaved rounds of: a Python TCP `sendall` stream between two processes (the
baseline the issue names), the same two processes sending and receiving at once
(full duplex: what a 2-rank all_reduce, whose ranks both send and receive, could
reach in Python), and ReCCL all_reduce between 2 ranks x 2 NICs (two pretend
hosts on loopback) at several sizes. Prints the medians over the rounds, the ratio
busbw / stream (target >= 0.5) and busbw / duplex, and the best round's ratio.
busbw follows nccl-tests: algbw x 2(n-1)/n, which is algbw for 2 ranks. The
machine is shared, so rounds swing; the ratios compare figures taken seconds apart.
Prints figures, asserts nothing.

    python bench/bench_reccl_busbw.py [--rounds 5] [--sizes 4M,16M,64M]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from reccl_baseline import tcp_duplex, tcp_stream

from reccl.perf import parse_size
from reccl.spawn import loopback_layout, run_ranks


def job(comm, sizes: list[int], iters: int) -> dict[int, float]:
    out = {}
    for size in sizes:
        x = np.ones(size // 4, dtype=np.float32)
        comm.all_reduce(x)
        comm.barrier()
        times = []
        for _ in range(iters):
            t0 = time.perf_counter()
            comm.all_reduce(x)
            times.append(time.perf_counter() - t0)
        out[size] = statistics.median(times)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sizes", default="4M,16M,64M")
    ap.add_argument("--iters", type=int, default=6)
    a = ap.parse_args()
    sizes = [parse_size(s) for s in a.sizes.split(",")]
    layout = loopback_layout(2, 1, 2)
    stream, duplex = [], []
    busbw: dict[int, list[float]] = {s: [] for s in sizes}
    print(f"# ReCCL all_reduce, 2 ranks x 2 NICs on loopback; {a.rounds} interleaved rounds "
          f"of {a.iters} calls (median per round)")
    for i in range(a.rounds):
        stream.append(tcp_stream() / 1e9)
        duplex.append(tcp_duplex() / 1e9)
        res = run_ranks(job, layout, (sizes, a.iters), timeout=600)
        for s in sizes:
            t = max(res[r][s] for r in res)
            busbw[s].append(s / t / 1e9)  # 2(n-1)/n = 1 for n = 2
        print(f"# round {i + 1}: stream {stream[-1]:.3f} GB/s, duplex {duplex[-1]:.3f} GB/s, "
              + ", ".join(f"{s >> 20} MiB {busbw[s][-1]:.3f}" for s in sizes), flush=True)
    st, du = statistics.median(stream), statistics.median(duplex)
    print(f"{'size':>8} {'busbw(GB/s)':>12} {'stream':>8} {'duplex':>8} {'busbw/stream':>13} "
          f"{'busbw/duplex':>13} {'best round busbw/stream':>24}")
    for s in sizes:
        bw = statistics.median(busbw[s])
        best = max(b / x for b, x in zip(busbw[s], stream, strict=True))
        print(f"{s >> 20:>6}Mi {bw:>12.3f} {st:>8.3f} {du:>8.3f} {bw / st:>13.2f} "
              f"{bw / du:>13.2f} {best:>24.2f}", flush=True)
    print("# stream: one Python process sendall()s, another recv_into()s (one direction);")
    print("# duplex: both processes send and receive at once (per-direction rate);")
    print("# target: busbw >= 0.5 x stream")


if __name__ == "__main__":
    main()
