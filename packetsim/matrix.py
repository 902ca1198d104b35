"""Many packet-level runs and their table: ECMP against SGLB per fabric and seed.

    python -m packetsim.matrix --fabrics ls4x2,ls4x2-asym,ls4x2-thin,ls4x2-halfspine \\
        --seeds 1,2,3 --out results/packetsim [--fail l1:3@3ms] [--workers 2]

Each run is its own ``fabric-sim packet`` process (ns-3 keeps global state); a
run whose JSON exists already is not run again, so an interrupted matrix goes
on where it stopped. The table gives, per fabric, the median over seeds of
ECMP's and SGLB's completion, their ratio per seed, reorderings and timeouts,
and with a cut the recovery; ``--set`` and every other option of ``fabric-sim
packet`` pass through (after ``--``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

FABRICS = Path(__file__).resolve().parents[1] / "topologies" / "fabrics"


def _one(fabric: str, lb: str, seed: int, out: Path, extra: list[str]) -> dict[str, Any]:
    path = out / f"{fabric}-{lb}-s{seed}.json"
    if not path.exists():
        cmd = [sys.executable, "-m", "packetsim.cli", "--fabric", str(FABRICS / f"{fabric}.yaml"),
               "--lb", lb, "--seed", str(seed), "--json", str(path), "--quiet", *extra]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{fabric} {lb} seed {seed}: {proc.stderr.strip()[-2000:]}")
        print(f"  done {path.name}: {proc.stderr.strip().splitlines()[-1]}", file=sys.stderr)
    return json.loads(path.read_text())


def table(results: dict[tuple[str, str, int], dict[str, Any]], fabrics: list[str],
          seeds: list[int]) -> str:
    """The markdown table of the docs (one row per fabric)."""
    rows = ["| fabric | ECMP ms (median) | SGLB ms (median) | SGLB speed-up per seed | "
            "median | SGLB reorderings | timeouts ECMP / SGLB | recovery after the cut, us (SGLB / ECMP) |",
            "|---|---|---|---|---|---|---|---|"]
    for fab in fabrics:
        e = [results[fab, "ecmp", s] for s in seeds]
        g = [results[fab, "sglb", s] for s in seeds]

        def ms(r: dict[str, Any]) -> float:
            return float("nan") if r["completion_s"] is None else r["completion_s"] * 1e3

        ratios = [ms(a) / ms(b) for a, b in zip(e, g, strict=True)]
        reord = max(r["reordering_fraction"] for r in g)

        def rec(rs: list[dict[str, Any]]) -> str:
            vals = [f["recovery_us"] for r in rs for f in r["failures"]]
            if not vals:
                return "-"
            return "/".join("never" if v is None else f"{v:.0f}" for v in vals)
        cut = "-" if not g[0]["failures"] else f"{rec(g)} / {rec(e)}"
        rows.append(
            f"| {fab} | {statistics.median(map(ms, e)):.2f} | {statistics.median(map(ms, g)):.2f} | "
            f"{', '.join(f'{x:.2f}x' for x in ratios)} | **{statistics.median(ratios):.2f}x** | "
            f"{100 * reord:.2f}% max | {sum(r['timeouts'] for r in e)} / "
            f"{sum(r['timeouts'] for r in g)} | {cut} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    extra: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(prog="python -m packetsim.matrix", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fabrics", default="ls4x2,ls4x2-asym,ls4x2-thin,ls4x2-halfspine")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--lbs", default="ecmp,sglb")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    fabrics = args.fabrics.split(",")
    for f in fabrics:
        if not (FABRICS / f"{f}.yaml").exists():
            print(f"matrix: error: no fabric {f!r} in topologies/fabrics/", file=sys.stderr)
            return 2
    seeds = [int(s) for s in args.seeds.split(",")]
    lbs = args.lbs.split(",")
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = [(f, lb, s) for f in fabrics for s in seeds for lb in lbs]
    with ThreadPoolExecutor(max(1, args.workers)) as ex:
        futures = {j: ex.submit(_one, *j, args.out, extra) for j in jobs}
        results = {j: fut.result() for j, fut in futures.items()}
    if set(lbs) >= {"ecmp", "sglb"}:
        print(table(results, fabrics, seeds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
