"""softswitch front end: compile time of a ~1,000-line v1model program.

Builds the program from ten copies of the ingress control of
tests/softswitch/programs/frontend_constructs.p4 (each with tables, externs,
actions and an apply block), then prints the one-off grammar build time and
the compile time (preprocess + parse + check + Program.info) per run, with the
time of each stage, plus lines per second. Times are CPU time of this process
(wall time is printed too; on a shared machine it mostly measures the others).
Usage: python bench/bench_softswitch_frontend.py [--copies N] [--runs R]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from softswitch.frontend import compile_source  # noqa: E402
from softswitch.frontend import parser as p4parser  # noqa: E402
from softswitch.frontend.checker import Checker  # noqa: E402
from softswitch.frontend.diagnostics import Reporter  # noqa: E402
from softswitch.frontend.preprocess import P4INCLUDE, preprocess  # noqa: E402

SOURCE = ROOT / "tests" / "softswitch" / "programs" / "frontend_constructs.p4"


def big_program(copies: int) -> str:
    """The constructs program with its ingress control repeated `copies` times."""
    text = SOURCE.read_text()
    start, end = text.index("control Ing("), text.index("control Eg(")
    ingress = text[start:end]
    extra = "".join(ingress.replace("control Ing(", f"control Ing{i}(") for i in range(copies - 1))
    return text[:end] + extra + text[end:]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--copies", type=int, default=10)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    src = big_program(a.copies)
    user_lines = src.count("\n") + 1
    include_lines = sum(len(f.read_text().splitlines()) for f in P4INCLUDE.glob("*.p4"))

    t0 = time.process_time()
    p4parser._parser()
    grammar = time.process_time() - t0

    # CPU time of this process (time.process_time): the machine may be shared, and
    # wall time then mostly measures the other processes
    totals, walls = [], []
    stages: dict[str, list[float]] = {"preprocess": [], "parse": [], "check": []}
    for _ in range(a.runs):
        w0, t0 = time.perf_counter(), time.process_time()
        compile_source(src, filename="bench.p4")
        totals.append(time.process_time() - t0)
        walls.append(time.perf_counter() - w0)
        rep = Reporter()
        t0 = time.process_time()
        pre = preprocess(src, "bench.p4", rep)
        t1 = time.process_time()
        tree = p4parser.parse(pre, rep)
        t2 = time.process_time()
        if tree is None:
            raise SystemExit("bench: the benchmark program does not parse")
        Checker(rep).check(tree)
        t3 = time.process_time()
        stages["preprocess"].append(t1 - t0)
        stages["parse"].append(t2 - t1)
        stages["check"].append(t3 - t2)

    med = statistics.median(totals)
    print(f"program: {user_lines} lines + {include_lines} lines of core.p4/v1model.p4")
    print(f"grammar build (once per process): {grammar * 1000:.0f} ms CPU")
    print(f"compile_source: median {med * 1000:.0f} ms CPU, best {min(totals) * 1000:.0f} ms "
          f"over {a.runs} runs ({(user_lines + include_lines) / med:,.0f} lines/s); "
          f"wall median {statistics.median(walls) * 1000:.0f} ms")
    for name, ts in stages.items():
        print(f"  {name:<10} median {statistics.median(ts) * 1000:6.0f} ms CPU")


if __name__ == "__main__":
    main()
