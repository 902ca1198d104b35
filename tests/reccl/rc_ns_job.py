"""One rank of a namespace test, started by reccl-run inside a host namespace.

usage: rc_ns_job.py OUT_DIR SCENARIO SEED

Runs the scenario's collectives on seeded data, cutting this host's links
where the scenario says, and pickles results, events, counters and any
error to OUT_DIR/rank<r>.pkl for the test to check against the reference.
"""

from __future__ import annotations

import os
import pickle
import random
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np

from reccl import CommOptions, Communicator, ReCCLError, TransportOptions
from reccl.linkstate import interface_of, set_link

COLLECTIVES = ["all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce",
               "all_to_all"]


def rank_data(rank: int, n: int, seed: int) -> np.ndarray:
    """The seeded input of a rank (the test recomputes it)."""
    return np.random.default_rng(seed * 1000 + rank).standard_normal(n).astype(np.float32)


def run_collective(comm: Communicator, name: str, x: np.ndarray):
    if name == "all_reduce":
        return comm.all_reduce(x)
    if name == "reduce_scatter":
        return comm.reduce_scatter(x)
    if name == "all_gather":
        return comm.all_gather(x)
    if name == "broadcast":
        return comm.broadcast(x, root=comm.size - 1)
    if name == "reduce":
        return comm.reduce(x, root=0)
    return comm.all_to_all(x)


def link(comm: Communicator, rail: int, up: bool) -> None:
    dev = interface_of(comm.topology.ranks[comm.rank].nics[rail][0])
    set_link(str(dev), up)


def later(delay: float, fn, *args) -> threading.Thread:
    t = threading.Thread(target=lambda: (time.sleep(delay), fn(*args)), daemon=True)
    t.start()
    return t


def junk_sender(comm: Communicator, stop: threading.Event) -> int:
    """Connections to every peer's NIC listeners that carry junk, frames without a
    handshake, or a handshake without the secret, while collectives run."""
    from reccl import auth, wire

    targets = [nic for r in comm.topology.ranks if r.rank != comm.rank for nic in r.nics]
    session = comm.endpoint.session
    data = wire.encode(wire.Header(wire.DATA, comm.rank, (comm.rank + 1) % comm.size, 0),
                       wire.Data(0, 1, 4, 0, b"ab"))
    hello = wire.encode(wire.Header(wire.HELLO, comm.rank, (comm.rank + 1) % comm.size, 0),
                        wire.Hello(session, auth.nonce()))
    forged = wire.encode(wire.Header(wire.AUTH, comm.rank, 0, 0), wire.Auth(os.urandom(32)))
    junk = [b"hello\r\n\r\n", os.urandom(64), b"RC" + os.urandom(40), data, hello + forged]
    sent = 0
    while not stop.is_set():
        for t in targets:
            for j in junk:
                try:
                    with socket.create_connection(t, timeout=1) as s:
                        s.sendall(j)
                        s.settimeout(1)
                        try:
                            while s.recv(4096):
                                pass
                        except OSError:
                            pass
                    sent += 1
                except OSError:
                    pass
        time.sleep(0.01)
    return sent


def main() -> None:
    out, scenario, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    options = None
    if scenario == "nopath":
        options = CommOptions(timeout=4.0, transport=TransportOptions(no_path_timeout=2.0))
    comm = Communicator.from_env(options=options)
    r = comm.rank
    local = int(os.environ["RECCL_LOCAL_RANK"])
    host = int(os.environ["RECCL_HOST"].lstrip("h"))
    rng = random.Random(seed)  # same sequence on every rank
    res: dict = {"results": {}, "error": None}
    t0 = time.monotonic()
    try:
        if scenario == "cuts":
            n = 240_000
            x = rank_data(r, n, seed)
            for name in COLLECTIVES:
                cut_host = rng.randrange(int(os.environ.get("RC_HOSTS", "2")))
                cut_rail = rng.randrange(2)
                delay = rng.uniform(0.0, 0.05)
                comm.barrier()
                cutter = None
                if host == cut_host and local == 0:
                    cutter = later(delay, link, comm, cut_rail, False)
                res["results"][name] = run_collective(comm, name, x)
                if cutter:
                    cutter.join()
                comm.barrier()
                if host == cut_host and local == 0:
                    link(comm, cut_rail, True)
        elif scenario == "weights":
            x = rank_data(r, 400_000, seed)
            for i in range(2):
                res["results"][f"all_reduce{i}"] = comm.all_reduce(x)
        elif scenario == "impaired":
            x = rank_data(r, 300_000, seed)
            for i in range(3):
                res["results"][f"all_reduce{i}"] = comm.all_reduce(x)
        elif scenario == "flap":
            x = rank_data(r, 100_000, seed)
            stop = threading.Event()

            def flapper():
                up = False
                while not stop.is_set():
                    link(comm, 0, up)
                    up = not up
                    time.sleep(0.4)
                link(comm, 0, True)

            th = threading.Thread(target=flapper, daemon=True) if r == 0 else None
            if th:
                th.start()
            end = time.monotonic() + 4.0
            i = 0
            while True:
                res["results"][f"all_reduce{i}"] = comm.all_reduce(x)
                i += 1
                done = comm.all_reduce(np.array([time.monotonic() > end], dtype=np.int32), "max")
                if done[0]:
                    break
            stop.set()
            if th:
                th.join()
        elif scenario == "relay":
            if r == 0:
                link(comm, 0, False)
                link(comm, 1, False)
            x = rank_data(r, 240_000, seed)
            res["results"]["all_reduce"] = comm.all_reduce(x)
            res["results"]["all_to_all"] = comm.all_to_all(x)
        elif scenario == "nopath":
            x = rank_data(r, 100_000, seed)
            res["results"]["all_reduce"] = comm.all_reduce(x)
            comm.barrier()
            if r == 0:
                link(comm, 0, False)
                link(comm, 1, False)
            t0 = time.monotonic()
            comm.all_reduce(x)
        elif scenario == "idle_stall":
            # Compute gaps between steps, then rank 1 stopped for 3 s mid-collective.
            x = rank_data(r, 250_000, seed)
            for i, gap in enumerate([0.0, 1.5, 0.2, 2.5, 0.0]):
                res["results"][f"all_reduce{i}"] = comm.all_reduce(x)
                time.sleep(gap)
            pids = comm.all_gather(np.array([os.getpid()]))[:, 0]
            resume = None
            if r == 0:  # stop the peer first, so that it stalls this very all_reduce
                os.kill(int(pids[1]), signal.SIGSTOP)
                resume = threading.Timer(3.0, os.kill, (int(pids[1]), signal.SIGCONT))
                resume.start()
            t1 = time.monotonic()
            res["results"]["stalled"] = comm.all_reduce(x)
            res["stall_wait"] = time.monotonic() - t1
            if resume:
                resume.join()
        elif scenario == "oneway":
            # Rail 0 loses rank 0's egress, rail 1 rank 1's: each side sees one rail go
            # silent (carrier stays up) and must learn about the other from a notice.
            x = rank_data(r, 300_000, seed)
            res["results"]["before"] = comm.all_reduce(x)
            comm.barrier()
            dev = interface_of(comm.topology.ranks[r].nics[r][0])
            subprocess.run(["tc", "qdisc", "replace", "dev", str(dev), "root", "tbf", "rate",
                            "8bit", "burst", "2kb", "limit", "2kb"], check=True)
            for i in range(3):
                res["results"][f"all_reduce{i}"] = comm.all_reduce(x)
                time.sleep(0.7)
            res["alive"] = [c["alive"] for c in comm.stats()]
        elif scenario == "junk":
            stop = threading.Event()
            th = threading.Thread(target=junk_sender, args=(comm, stop), daemon=True)
            th.start()
            x = rank_data(r, 240_000, seed)
            for i in range(3):
                res["results"][f"all_reduce{i}"] = comm.all_reduce(x)
            time.sleep(0.1)
            stop.set()
            th.join()
        else:
            raise SystemExit(f"unknown scenario {scenario!r}")
    except ReCCLError as e:
        res["error"] = str(e)
    res["elapsed"] = time.monotonic() - t0
    res["events"] = [(e.time, e.kind, e.peer, e.channel, e.detail) for e in comm.events()]
    res["counters"] = comm.counters()
    res["stats"] = comm.stats()
    with open(os.path.join(out, f"rank{r}.pkl"), "wb") as f:
        pickle.dump(res, f)
    if res["error"]:
        comm.abort()
    else:
        comm.close()


if __name__ == "__main__":
    main()
