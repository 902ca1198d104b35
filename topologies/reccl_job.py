"""One ReCCL rank of the testbed workload (runs inside a Mininet host).

Alternates all-to-all and all-reduce on float32 arrays whose exact results are
known in closed form, checks every result bit for bit, and prints one JSON
line per collective (time, kind, bytes this rank sent, seconds, correct) until
``--duration`` has passed; a final line carries the totals. Rank 0 serves the
rendezvous store on its first NIC's address.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

MAX_EVENTS = 200
"""Channel events a rank reports at the end (the newest; a run of a minute has a few dozen)."""


def expected_all_reduce(it: int, world: int, n: int) -> np.ndarray:
    """Sum over ranks r of (r + 1) * (it + 1) in every element."""
    return np.full(n, (it + 1) * world * (world + 1) / 2, dtype=np.float32)


def rows_for(rank: int, it: int, world: int, m: int) -> np.ndarray:
    """The all-to-all input of ``rank``: row j goes to rank j."""
    base = np.arange(m, dtype=np.float32)
    return np.stack([base + 1000 * rank + j + it for j in range(world)])


def main(argv: list[str] | None = None) -> int:
    """Run collectives until the duration is over."""
    p = argparse.ArgumentParser(prog="python -m topologies.reccl_job")
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--store", required=True, help="host:port of rank 0's store")
    p.add_argument("--host", required=True)
    p.add_argument("--nics", required=True, help="this rank's NIC addresses, comma-separated")
    p.add_argument("--elements", type=int, default=32768, help="float32 elements per collective")
    p.add_argument("--duration", type=float, required=True)
    p.add_argument("--start-on-stdin", action="store_true",
                   help="after connecting, print a ready line and wait for the start time "
                        "(seconds since the epoch) on standard input; the duration counts from it")
    p.add_argument("--interval", type=float, default=0.0,
                   help="least seconds between the starts of two collectives (caps the load)")
    args = p.parse_args(argv)
    from reccl import Communicator, ReCCLError

    try:
        comm = Communicator(args.rank, args.world, args.store, host=args.host,
                            nics=args.nics.split(","), serve_store=args.rank == 0)
    except ReCCLError as e:
        print(json.dumps({"error": str(e)}), flush=True)
        return 1
    n, w = args.elements, args.world
    m = max(1, n // w)
    if args.start_on_stdin:
        try:
            comm.barrier()  # every rank connected: the first collective costs no set-up time
        except ReCCLError as e:
            print(json.dumps({"error": str(e)}), flush=True)
            return 1
        print(json.dumps({"ready": True}), flush=True)
        try:
            start_at = float(sys.stdin.readline())
        except ValueError:
            print(json.dumps({"error": "no start time on standard input"}), flush=True)
            return 1
        time.sleep(max(0.0, start_at - time.time()))
    end = time.time() + args.duration
    it = ok = wrong = 0
    try:
        next_start = time.time()
        while True:
            if it % 2 == 0:  # all ranks agree on when to stop: the max of their flags
                flag = np.array([int(time.time() >= end)], dtype=np.int32)
                if comm.all_reduce(flag, "max")[0]:
                    break
            if time.time() < next_start:
                time.sleep(next_start - time.time())
            t0 = time.time()
            next_start = t0 + args.interval
            if it % 2 == 0:
                got = comm.all_to_all(rows_for(args.rank, it, w, m))
                want = np.stack([np.arange(m, dtype=np.float32) + 1000 * j + args.rank + it
                                 for j in range(w)])
                kind, sent = "all_to_all", (w - 1) * m * 4
            else:
                got = comm.all_reduce(np.full(n, (args.rank + 1) * (it + 1), dtype=np.float32),
                                      "sum")
                want = expected_all_reduce(it, w, n)
                kind, sent = "all_reduce", 2 * (w - 1) * n * 4 // w
            correct = bool(np.array_equal(got, want))
            ok += correct
            wrong += not correct
            print(json.dumps({"t": time.time(), "op": kind, "bytes": sent,
                              "seconds": time.time() - t0, "correct": correct}), flush=True)
            it += 1
        comm.barrier()
    except ReCCLError as e:
        print(json.dumps({"error": str(e)}), flush=True)
        return 1
    finally:
        seen = comm.events()
        events = [str(e) for e in seen]
        # the events' clock is monotonic; the summary compares them with the cuts' wall time
        offset = time.time() - time.monotonic()
        channel_events = [{"t": round(e.time + offset, 4), "kind": e.kind, "peer": e.peer,
                           "channel": e.channel, "detail": e.detail[:200]}
                          for e in seen if e.kind in ("channel_down", "channel_up")][-MAX_EVENTS:]
        try:
            comm.close()
        except ReCCLError:
            pass
    print(json.dumps({"done": True, "ops": it, "correct": ok, "wrong": wrong,
                      "events": events[-20:], "channel_events": channel_events}), flush=True)
    return 0 if wrong == 0 else 3


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # the store server and I/O threads must not keep the rank alive
