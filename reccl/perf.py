"""reccl-perf: collective bandwidth in nccl-tests' format and flags, with link cuts.

    reccl-perf all_reduce -b 8K -e 8M -f 4                   # sweep, loopback
    reccl-perf all_reduce --netns --hosts 2 --rails 2 --rate 400mbit \\
               -e 4M --fail-link 0:1 --fail-at 1.0 --duration 3

The collectives to run are named as arguments (default: all); the flags are
nccl-tests': -b/-e/-f sizes, -n iterations, -w warmup, -c check (1/0), -o op,
-d type, -r root, -a average mode (0 rank 0, 1 mean, 2 min, 3 max over ranks).
For every size it prints nccl-tests' columns `size count type redop root time
algbw busbw #wrong` for out-of-place and in-place (N/A where ReCCL's API has
no in-place form: all_gather, reduce_scatter, all_to_all), then the closing
`# Avg bus bandwidth` line. algbw = bytes / time; busbw scales algbw by the
bytes each rank must move (nccl-tests' PERFORMANCE.md): all_reduce 2(n-1)/n,
reduce_scatter, all_gather and all_to_all (n-1)/n, broadcast and reduce 1.
The size is the whole buffer (all_gather: the gathered output). #wrong counts
elements that differ bit-wise from the single-process reference computed in
the same order, summed over ranks.

With --fail-link HOST:RAIL --fail-at T the first collective runs back to back
at the largest size for --duration seconds; T seconds in, that NIC's link is
cut (`ip link set down` in --netns mode, a black hole plus link event over
loopback). It then reports busbw before, during and after the cut, the stall
(slowest iteration minus the healthy median) and when each rank saw the
failure. --fail-stop runs the same with failover switched off.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import threading
import time

import numpy as np

BUS_FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "reduce_scatter": lambda n: (n - 1) / n,
              "all_gather": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n,
              "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0}
COLLECTIVES = list(BUS_FACTOR)
ROOTED = ("broadcast", "reduce")
REDUCING = ("all_reduce", "reduce_scatter", "reduce")
IN_PLACE = ("all_reduce", "broadcast", "reduce")
NCCL_TYPES = {"float": "float32", "double": "float64", "half": "float16", "int": "int32",
              "char": "int8", "uint8": "uint8", "int8": "int8", "int32": "int32",
              "uint32": "uint32", "int64": "int64", "uint64": "uint64"}
"""nccl-tests' type names and the NumPy dtypes they mean (NumPy names work too)."""
TYPE_NAMES = {v: k for k, v in reversed(NCCL_TYPES.items())}


def type_name(dtype: np.dtype) -> str:
    """nccl-tests' name of a dtype (float, double, half, int32, ...)."""
    return TYPE_NAMES.get(dtype.name, dtype.name)


def parse_size(text: str) -> int:
    """'8', '8K', '4M', '1G' -> bytes."""
    t = text.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    num = t[:-1] if t[-1:] in "KMG" else t
    try:
        return int(float(num) * mult)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad size {text!r} (examples: 1024, 8K, 4M)") from None


def sizes(lo: int, hi: int, factor: float) -> list[int]:
    """Geometric sweep lo..hi."""
    out, s = [], lo
    while s <= hi:
        out.append(s)
        s = int(s * factor) if factor > 1 else hi + 1
    return out


def inputs(rank: int, count: int, dtype: np.dtype) -> np.ndarray:
    """Deterministic input of a rank (every rank can rebuild every other's)."""
    rng = np.random.default_rng(rank + 17)
    if dtype.kind == "f":
        return rng.standard_normal(count).astype(dtype)
    return rng.integers(0, 100, count).astype(dtype)


def elements(coll: str, size: int, p: int, itemsize: int) -> int:
    """Per-rank input element count for a whole-buffer size in bytes (nccl-tests style)."""
    count = max(1, size // itemsize)
    if coll in ("all_gather", "reduce_scatter", "all_to_all"):
        count = max(p, count - count % p)
    return count // p if coll == "all_gather" else count


def run_one(comm, coll: str, x: np.ndarray, op: str, algorithm: str = "auto", root: int = 0,
            out: np.ndarray | None = None):
    """One collective call (`out`: in place, for the collectives that have that form)."""
    if coll == "all_reduce":
        return comm.all_reduce(x, op, algorithm=algorithm, out=out)
    if coll == "reduce_scatter":
        return comm.reduce_scatter(x, op)
    if coll == "all_gather":
        return comm.all_gather(x)
    if coll == "broadcast":
        return comm.broadcast(x, root=root, out=out)
    if coll == "reduce":
        return comm.reduce(x, op, root=root, out=out)
    return comm.all_to_all(x)


def expected(coll: str, xs: list[np.ndarray], op: str, r: int, algorithm: str = "auto",
             root: int = 0):
    """The reference result of rank r."""
    from .ops import reference_all_reduce, reference_ring

    p = len(xs)
    if coll == "all_reduce":
        return reference_all_reduce(xs, op, algorithm)
    if coll == "reduce_scatter":
        m = xs[0].size // p
        return reference_ring(xs, op, shift=1)[r * m:(r + 1) * m]
    if coll == "all_gather":
        return np.stack(xs)
    if coll == "broadcast":
        return xs[root]
    if coll == "reduce":
        return reference_ring(xs, op) if r == root else None
    m = xs[0].size // p
    return np.concatenate([x[r * m:(r + 1) * m] for x in xs])


def wrong(got, want) -> int:
    """Elements that differ bit-wise."""
    if want is None:
        return 0 if got is None else 1
    g = np.ascontiguousarray(got).reshape(-1).view(np.uint8)
    w = np.ascontiguousarray(want).reshape(-1).view(np.uint8)
    if g.size != w.size:
        return max(g.size, w.size)
    item = want.dtype.itemsize
    return int(np.any((g != w).reshape(-1, item), axis=1).sum())


# ------------------------------------------------------------------ worker side

def cut_link(comm, rail: int, netns: bool, silent: bool = False) -> float:
    """Cut this rank's NIC `rail`; returns the monotonic time of the cut. `silent`: the
    link stays up but every datagram is lost (a gray failure: only timeouts can tell)."""
    if netns:
        from .linkstate import interface_of, set_link

        dev = str(interface_of(comm.topology.ranks[comm.rank].nics[rail][0]))
        if silent:  # a token bucket of 8 bit/s with a 2 KB queue drops everything
            subprocess.run(["tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", "8bit",
                            "burst", "2kb", "limit", "2kb"], check=True)
            return time.monotonic()
        return set_link(dev, False)
    t = time.monotonic()
    comm.set_link(rail, False, silent=silent)
    return t


def _timed(comm, a, coll: str, x: np.ndarray, in_place: bool) -> tuple[float, object]:
    """Mean seconds per call over -n iterations (after -w warmup) and the last result."""
    buf = x.copy() if in_place else None
    for _ in range(a.warmup):
        if buf is not None:
            buf[...] = x
        run_one(comm, coll, x if buf is None else buf, a.op, a.algorithm, a.root, buf)
    comm.barrier()
    total = 0.0
    got = None
    for _ in range(a.iters):
        if buf is not None:
            buf[...] = x  # every in-place call starts from the same input
        t0 = time.perf_counter()
        got = run_one(comm, coll, x if buf is None else buf, a.op, a.algorithm, a.root, buf)
        total += time.perf_counter() - t0
    return total / max(1, a.iters), got


def _across_ranks(comm, mode: int, dt: float, bad: int) -> tuple[float, int]:
    """Time as -a says (0 rank 0, 1 mean, 2 min, 3 max) and #wrong summed over ranks."""
    op = {1: "sum", 2: "min", 3: "max"}.get(mode, "sum")
    t = comm.all_reduce(np.array([dt if mode or comm.rank == 0 else 0.0]), op)[0]
    if mode == 1:
        t /= comm.size
    return float(t), int(comm.all_reduce(np.array([bad], dtype=np.int64), "sum")[0])


def worker(a: argparse.Namespace) -> int:
    """One rank: run the sweep or the failure run; rank 0 prints."""
    from .communicator import CommOptions, Communicator
    from .errors import ReCCLError

    comm = Communicator.from_env(options=CommOptions(fail_stop=a.fail_stop))
    p, r = comm.size, comm.rank
    dtype = np.dtype(a.dtype)
    out = sys.stdout if r == 0 else None
    try:
        if a.fail_link:
            return _failure_run(comm, a, dtype, out)
        say = (lambda text: print(text, file=out, flush=True)) if out else (lambda text: None)
        say(f"# reccl-perf: {p} ranks, minBytes {a.minbytes} maxBytes {a.maxbytes} step: "
            f"{a.stepfactor:g}(factor) warmup iters: {a.warmup} iters: {a.iters} "
            f"validation: {a.check} average: {a.average} "
            f"{'fail-stop' if a.fail_stop else 'failover'} mode")
        busbws: list[float] = []
        wrong_total = 0
        for coll in a.collectives:
            say(f"#\n# Collective test: {coll}")
            say(f"#{'':>54}{'out-of-place':>21}{'':>14}{'in-place':>21}")
            say(f"#{'size':>11} {'count':>12} {'type':>9} {'redop':>7} {'root':>7} "
                f"{'time':>8} {'algbw':>7} {'busbw':>7} {'#wrong':>6} "
                f"{'time':>8} {'algbw':>7} {'busbw':>7} {'#wrong':>6}")
            say(f"#{'(B)':>11} {'(elements)':>12} {'':>9} {'':>7} {'':>7} "
                f"{'(us)':>8} {'(GB/s)':>7} {'(GB/s)':>7} {'':>6} "
                f"{'(us)':>8} {'(GB/s)':>7} {'(GB/s)':>7} {'':>6}")
            for size in sizes(a.minbytes, a.maxbytes, a.stepfactor):
                count = elements(coll, size, p, dtype.itemsize)
                x = inputs(r, count, dtype)
                want = None
                if a.check:
                    xs = [inputs(i, count, dtype) for i in range(p)]
                    want = expected(coll, xs, a.op, r, a.algorithm, a.root)
                nbytes = count * dtype.itemsize * (p if coll == "all_gather" else 1)
                cols = []
                for in_place in (False, True):
                    if in_place and coll not in IN_PLACE:
                        cols.append(f"{'N/A':>8} {'N/A':>7} {'N/A':>7} {'N/A':>6}")
                        continue
                    dt, got = _timed(comm, a, coll, x, in_place)
                    bad = wrong(got, want) if a.check else 0
                    t, bad = _across_ranks(comm, a.average, dt, bad)
                    algbw = nbytes / t / 1e9
                    busbw = algbw * BUS_FACTOR[coll](p)
                    busbws.append(busbw)
                    wrong_total += bad
                    cols.append(f"{t * 1e6:>8.1f} {algbw:>7.4f} {busbw:>7.4f} "
                                f"{bad if a.check else 'N/A':>6}")
                redop = a.op if coll in REDUCING else "none"
                root = a.root if coll in ROOTED else -1
                say(f" {nbytes:>11} {nbytes // dtype.itemsize:>12} {type_name(dtype):>9} "
                    f"{redop:>7} {root:>7} {cols[0]} {cols[1]}")
        say(f"# Out of bounds values : {wrong_total} {'OK' if not wrong_total else 'FAILED'}")
        say(f"# Avg bus bandwidth    : {sum(busbws) / max(1, len(busbws)):.6f}")
        say("#")
        comm.close()
        return 1 if wrong_total else 0
    except ReCCLError as e:
        print(f"reccl-perf: rank {r}: {e}", file=sys.stderr, flush=True)
        comm.abort()
        return 1


def _failure_run(comm, a, dtype, out) -> int:
    from .errors import ReCCLError

    p, r = comm.size, comm.rank
    coll = a.collectives[0]
    host, rail = (int(v) for v in a.fail_link.split(":"))
    count = elements(coll, a.maxbytes, p, dtype.itemsize)
    x = inputs(r, count, dtype)
    xs = [inputs(i, count, dtype) for i in range(p)] if a.check else None
    want = expected(coll, xs, a.op, r, a.algorithm, a.root) if xs else None
    run_one(comm, coll, x, a.op, a.algorithm, a.root)
    comm.barrier()
    start = time.monotonic()  # CLOCK_MONOTONIC is shared by all processes of the machine
    cut_at: list[float] = []
    is_cutter = os.environ.get("RECCL_HOST") == f"h{host}" and \
        os.environ.get("RECCL_LOCAL_RANK", "0") == "0"
    if is_cutter:
        def cutter() -> None:
            time.sleep(max(0.0, start + a.fail_at - time.monotonic()))
            cut_at.append(cut_link(comm, rail, a.netns, a.fail_silent))
        threading.Thread(target=cutter, daemon=True).start()
    iters: list[tuple[float, float]] = []
    bad, error = 0, ""
    try:
        while True:
            t0 = time.monotonic()
            got = run_one(comm, coll, x, a.op, a.algorithm, a.root)
            t1 = time.monotonic()
            iters.append((t0, t1))
            if want is not None or xs is not None:
                bad += wrong(got, want)
            stop = comm.all_reduce(np.array([t1 - start >= a.duration], dtype=np.int32), "max")
            if stop[0]:
                break
    except ReCCLError as e:
        error = str(e)
    cut = cut_at[0] if cut_at else None
    detect = [e.time for e in comm.events() if e.kind in ("channel_down", "peer_failed")]
    st = comm.stats()
    report = {"rank": r, "iters": iters, "cut": cut, "detect": detect[:1], "wrong": bad,
              "error": error, "retransmits": sum(c["retransmits"] for c in st),
              "failures": sum(c["failures"] for c in st), "counters": comm.counters()}
    path = os.environ.get("RECCL_PERF_OUT")
    if path:
        with open(os.path.join(path, f"rank{r}.json"), "w") as f:
            json.dump(report, f)
    if error:
        print(f"reccl-perf: rank {r}: {error}", file=sys.stderr, flush=True)
        comm.abort()
        return 1
    comm.close()
    return 0


def summarize(reports: list[dict], coll: str, nbytes: int, p: int, fail_stop: bool) -> dict:
    """Busbw before/during/after the cut, the stall, detection times, from all ranks."""
    cut = next((rep["cut"] for rep in reports if rep["cut"] is not None), None)
    it = max(reports, key=lambda rep: len(rep["iters"]))["iters"]
    factor = BUS_FACTOR[coll](p)

    def busbw(rows: list) -> float:
        t = sum(e - s for s, e in rows)
        return nbytes * len(rows) / t * factor / 1e9 if rows and t > 0 else float("nan")

    res: dict = {"cut": cut, "errors": [rep["error"] for rep in reports if rep["error"]],
                 "wrong": sum(rep["wrong"] for rep in reports),
                 "retransmits": sum(rep["retransmits"] for rep in reports),
                 "resent": sum(rep["counters"]["resent"] for rep in reports)}
    if cut is None or not it:
        return res
    before = [x for x in it if x[1] <= cut]
    during = [x for x in it if x[0] <= cut < x[1]]
    if not during:  # the cut fell between two calls: the next call is the affected one
        during = [x for x in it if x[0] > cut][:1]
    after = [x for x in it if x[0] > cut and x not in during]

    def median(rows: list) -> float:
        d = sorted(e - s for s, e in rows)
        return d[len(d) // 2] if d else float("nan")

    healthy, degraded = median(before), median(after)
    # Stall: how much longer the affected call took than healthy speed up to the cut and
    # the degraded speed after it would explain.
    stall = 0.0
    for s0, e0 in during:
        done = min(1.0, max(0.0, cut - s0) / healthy) if healthy == healthy else 0.0
        expect = max(0.0, cut - s0) + (1 - done) * degraded
        stall = max(stall, (e0 - s0) - expect)
    detect = [d[0] - cut for d in (rep["detect"] for rep in reports) if d]
    res.update(busbw_before=busbw(before), busbw_during=busbw(during), busbw_after=busbw(after),
               stall=stall, healthy_iter=healthy, degraded_iter=degraded,
               detect_first=min(detect, default=float("nan")),
               detect_last=max(detect, default=float("nan")), iters=len(it))
    return res


# ------------------------------------------------------------------ driver side

def build_parser() -> argparse.ArgumentParser:
    """Command-line options (nccl-tests' names and meanings)."""
    ap = argparse.ArgumentParser(prog="reccl-perf", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("collectives", nargs="*", metavar="COLLECTIVE",
                    help=f"any of {', '.join(COLLECTIVES)} (default: all)")
    ap.add_argument("--collective", dest="more", action="append", choices=COLLECTIVES,
                    default=[], help="same as naming it (repeatable)")
    ap.add_argument("-b", "--minbytes", type=parse_size, default=parse_size("8K"))
    ap.add_argument("-e", "--maxbytes", type=parse_size, default=parse_size("1M"))
    ap.add_argument("-f", "--stepfactor", type=float, default=4.0)
    ap.add_argument("-n", "--iters", type=int, default=5)
    ap.add_argument("-w", "--warmup_iters", dest="warmup", type=int, default=1)
    ap.add_argument("-c", "--check", type=int, default=1, choices=[0, 1],
                    help="count #wrong against the reference (1) or not (0)")
    ap.add_argument("-o", "--op", default="sum", choices=["sum", "prod", "min", "max", "avg"])
    ap.add_argument("-d", "--datatype", dest="dtype", default="float",
                    help="nccl-tests' names (float, double, half, int32, ...) or NumPy's")
    ap.add_argument("-r", "--root", type=int, default=0, help="root of broadcast and reduce")
    ap.add_argument("-a", "--average", type=int, default=1, choices=[0, 1, 2, 3],
                    help="time reported: 0 rank 0's, 1 mean, 2 min, 3 max over ranks")
    ap.add_argument("--algo", dest="algorithm", default="auto", choices=["auto", "ring", "tree"],
                    help="all_reduce algorithm (auto: tree for small messages, else ring)")
    ap.add_argument("--hosts", type=int, default=2)
    ap.add_argument("--ranks-per-host", type=int, default=1)
    ap.add_argument("--rails", type=int, default=2, help="NICs per rank")
    ap.add_argument("--netns", action="store_true",
                    help="run the hosts in network namespaces (root) instead of over loopback")
    ap.add_argument("--rate", help="cap every NIC at this rate, e.g. 400mbit (--netns only)")
    ap.add_argument("--fail-link", metavar="HOST:RAIL", help="cut this NIC's link mid-run")
    ap.add_argument("--fail-at", type=float, default=1.0, help="seconds into the run")
    ap.add_argument("--duration", type=float, default=3.0, help="length of the failure run")
    ap.add_argument("--fail-silent", action="store_true",
                    help="the cut link stays up but loses everything (timeout detection)")
    ap.add_argument("--fail-stop", action="store_true", help="no failover (baseline)")
    ap.add_argument("--json", action="store_true", help="failure run: print the summary as JSON")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return ap


def check_args(a: argparse.Namespace) -> None:
    """Reject inconsistent options with a precise message."""
    names = list(a.collectives) + list(a.more)
    bad = [c for c in names if c not in COLLECTIVES]
    if bad:
        raise SystemExit(f"reccl-perf: unknown collective {bad[0]!r} (expected one of "
                         f"{', '.join(COLLECTIVES)})")
    a.collectives = names or COLLECTIVES
    a.dtype = NCCL_TYPES.get(a.dtype, a.dtype)
    try:
        np.dtype(a.dtype)
    except TypeError:
        raise SystemExit(f"reccl-perf: unknown dtype {a.dtype!r}") from None
    if a.iters < 1 or a.warmup < 0:
        raise SystemExit("reccl-perf: -n must be at least 1 and -w at least 0")
    if a.minbytes > a.maxbytes:
        raise SystemExit("reccl-perf: -b must not exceed -e")
    if a.rate and not a.netns:
        raise SystemExit("reccl-perf: --rate needs --netns")
    if a.fail_link:
        try:
            h, rail = (int(v) for v in a.fail_link.split(":"))
        except ValueError:
            raise SystemExit(f"reccl-perf: --fail-link {a.fail_link!r}: expected HOST:RAIL"
                             ) from None
        if not (0 <= h < a.hosts and 0 <= rail < a.rails):
            raise SystemExit(f"reccl-perf: --fail-link {a.fail_link}: host must be below "
                             f"{a.hosts} and rail below {a.rails}")
    if not 0 <= a.root < a.hosts * a.ranks_per_host:
        raise SystemExit(f"reccl-perf: -r {a.root}: root must be below the number of ranks "
                         f"{a.hosts * a.ranks_per_host}")


def drive(argv: list[str]) -> tuple[int, dict | None]:
    """Set up the hosts, launch the ranks, collect the failure-run summary."""
    import tempfile

    from .launch import HostSpec, launch
    from .netns import Testbed

    a = build_parser().parse_args(argv)
    check_args(a)
    tb = None
    hosts: list[HostSpec] = []
    if a.netns:
        if os.geteuid() != 0:
            raise SystemExit("reccl-perf: --netns needs root")
        tb = Testbed(f"rc{secrets.token_hex(2)}", a.hosts, a.rails,
                     ranks_per_host=a.ranks_per_host).create()
        if a.rate:
            for h in range(a.hosts):
                for rail in range(a.rails):
                    for s in range(a.ranks_per_host):
                        tb.rate_limit(h, rail, a.rate, slot=s)
        hosts = [HostSpec(f"h{h}", tuple(tb.nics(h, s)), tb.ns(h))
                 for h in range(a.hosts) for s in range(a.ranks_per_host)]
    else:
        hosts = [HostSpec(f"h{h}", tuple(f"127.{i + 1}.{h}.1" for i in range(a.rails)))
                 for h in range(a.hosts) for _ in range(a.ranks_per_host)]
    outdir = tempfile.mkdtemp(prefix="reccl-perf-")
    env = {"RECCL_PERF_OUT": outdir}
    cmd = [sys.executable, "-m", "reccl.perf", "--worker", *argv]
    try:
        codes = launch(hosts, 1, cmd, env=env, timeout=600)
    finally:
        if tb:
            tb.destroy()
    summary = None
    if a.fail_link:
        reports = []
        for r in range(len(hosts)):
            try:
                with open(os.path.join(outdir, f"rank{r}.json")) as f:
                    reports.append(json.load(f))
            except FileNotFoundError:
                pass
        p = len(hosts)
        dtype = np.dtype(a.dtype)
        coll = a.collectives[0]
        count = elements(coll, a.maxbytes, p, dtype.itemsize)
        nbytes = count * dtype.itemsize * (p if coll == "all_gather" else 1)
        summary = summarize(reports, coll, nbytes, p, a.fail_stop) if reports else {}
        summary.update(collective=coll, bytes=nbytes, ranks=p, rails=a.rails,
                       mode="fail-stop" if a.fail_stop else "failover",
                       failure="silent" if a.fail_silent else "link down")
        _print_summary(summary, a.json)
    for name in os.listdir(outdir):
        os.unlink(os.path.join(outdir, name))
    os.rmdir(outdir)
    return max(codes), summary


def _print_summary(s: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(s))
        return
    print(f"# failure run: {s.get('collective')} {s.get('bytes')} B on {s.get('ranks')} ranks "
          f"x {s.get('rails')} NICs, {s.get('mode')} mode, failure: {s.get('failure')}")
    if s.get("cut") is None:
        print("#   the link was not cut (run shorter than --fail-at?)")
    for k in ("busbw_before", "busbw_during", "busbw_after"):
        if k in s:
            print(f"#   {k:<14} {s[k]:8.4f} GB/s")
    for k in ("stall", "detect_first", "detect_last", "healthy_iter", "degraded_iter"):
        if k in s:
            print(f"#   {k:<14} {s[k] * 1e3:8.1f} ms")
    print(f"#   iterations     {s.get('iters', 0)}   #wrong {s.get('wrong', 0)}   "
          f"retransmissions {s.get('retransmits', 0)}")
    for e in s.get("errors", [])[:3]:
        print(f"#   error: {e}")


def main(argv: list[str] | None = None) -> int:
    """Entry point of reccl-perf."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--worker" in args:
        a = build_parser().parse_args(args)
        check_args(a)
        return worker(a)
    code, _ = drive(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
