"""softswitch against p4c's own test corpus: STF tests, sample programs, errors, P4Info.

The reference for softswitch is p4c + BMv2. p4c's `testdata/` (the p4lang/p4c
repository, tag v1.2.5.16) holds the P4 community's conformance material; this
benchmark runs every v1model part of it through softswitch and prints pass
rates per category:

  stf     p4_16_samples/X.p4 (v1model) with X.stf: the STF test passes
  accept  p4_16_samples/*.p4 (v1model; p4c accepts all of them): softswitch accepts
  errors  p4_16_errors/*.p4 that include v1model.p4 (p4c rejects all): softswitch rejects
  p4info  p4_16_samples_outputs/X.p4.p4info.txtpb: softswitch's P4Info is identical
          (pkg_info aside)

Every program runs in its own process (bench/p4c_corpus_worker.py) with a time
and memory limit, so a crash is reported as a crash, not as a failure. It also
groups the failures by cause and writes every result to
out/p4c-corpus-<time>.json.

Usage: python bench/bench_p4c_corpus.py --testdata P4C/testdata [--only stf,p4info]
       [--filter SUBSTRING] [-j N] [--timeout S]
Without --testdata (or $P4C_TESTDATA) it says where to get the corpus and exits 0.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import resource
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKER = ROOT / "bench" / "p4c_corpus_worker.py"
CATEGORIES = ("stf", "accept", "errors", "p4info")
GOOD = {"stf": "pass", "accept": "accept", "errors": "reject", "p4info": "same"}
MEMORY_LIMIT = 4 << 30


def _is_v1model(path: Path) -> bool:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return False
    return re.search(r'#\s*include\s*[<"]v1model\.p4[>"]', text) is not None


def jobs(testdata: Path, only: set[str], needle: str) -> list[tuple[str, str, list[str]]]:
    """(category, program name, worker arguments) for every selected corpus item."""
    samples = testdata / "p4_16_samples"
    outputs = testdata / "p4_16_samples_outputs"
    errors = testdata / "p4_16_errors"
    v1 = sorted(p for p in samples.glob("*.p4") if p.is_file() and _is_v1model(p))
    out = []
    for p in v1:
        stf = p.with_suffix(".stf")
        if "stf" in only and stf.is_file():
            out.append(("stf", p.name, ["stf", str(p), str(stf)]))
        if "accept" in only:
            out.append(("accept", p.name, ["accept", str(p)]))
        ref = outputs / f"{p.name}.p4info.txtpb"
        if "p4info" in only and ref.is_file():
            out.append(("p4info", p.name, ["p4info", str(p), str(ref)]))
    if "errors" in only:
        for p in sorted(errors.glob("*.p4")):
            if p.is_file() and _is_v1model(p):
                out.append(("errors", p.name, ["accept", str(p)]))
    return [j for j in out if needle in j[1]]


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_one(args: list[str], timeout: float) -> dict:
    try:
        proc = subprocess.run([sys.executable, str(WORKER), *args], capture_output=True,
                              text=True, timeout=timeout, preexec_fn=_limit_memory)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "detail": f"no result within {timeout:.0f} s"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"status": "crash", "detail": f"exit {proc.returncode}: {tail[:300]}"}
    return json.loads(lines[-1])


def _cause(detail: str) -> str:
    """A failure message without its file:line:col prefix and numbers, for grouping."""
    text = re.sub(r"^\S+?:\d+(:\d+)?:\s*(error:\s*)?", "", detail)
    text = re.sub(r"'[^']*'", "'…'", text)
    return re.sub(r"\d+", "N", text)[:110]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--testdata", default=os.environ.get("P4C_TESTDATA"),
                    help="p4c's testdata folder (default: $P4C_TESTDATA)")
    ap.add_argument("--only", default=",".join(CATEGORIES), help="categories, comma-separated")
    ap.add_argument("--filter", default="", help="only programs whose name contains this")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1, help="programs in parallel")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per program")
    ap.add_argument("--causes", type=int, default=12, help="failure causes shown per category")
    a = ap.parse_args()
    if not a.testdata:
        print("skipped: p4c's testdata not given. Get the p4lang/p4c repository at tag v1.2.5.16 "
              "and pass --testdata P4C/testdata (or set P4C_TESTDATA).")
        return 0
    testdata = Path(a.testdata)
    if not (testdata / "p4_16_samples").is_dir():
        print(f"error: {testdata} has no p4_16_samples folder", file=sys.stderr)
        return 2
    only = set(a.only.split(",")) & set(CATEGORIES)
    todo = jobs(testdata, only, a.filter)
    print(f"{len(todo)} runs over {testdata} ({', '.join(sorted(only))}), {a.j} at a time")

    results: list[dict] = []
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, a.j)) as pool:
        futures = [(cat, name, pool.submit(run_one, args, a.timeout)) for cat, name, args in todo]
        for i, (cat, name, fut) in enumerate(futures, 1):
            res = fut.result()
            results.append({"category": cat, "program": name, **res})
            if i % 25 == 0 or i == len(futures):
                print(f"  {i}/{len(futures)} done, {time.monotonic() - start:.0f} s", file=sys.stderr)

    print(f"\n{'category':<8} {'total':>6} {'good':>6} {'rate':>7}   other outcomes")
    for cat in CATEGORIES:
        rows = [r for r in results if r["category"] == cat]
        if not rows:
            continue
        counts = collections.Counter(r["status"] for r in rows)
        good = counts.pop(GOOD[cat], 0)
        others = ", ".join(f"{k} {v}" for k, v in counts.most_common())
        print(f"{cat:<8} {len(rows):>6} {good:>6} {100 * good / len(rows):>6.1f}%   {others}")
        if cat == "p4info" and good + counts["differ"]:
            print(f"{'':<8} of the programs softswitch accepts: {good}/{good + counts['differ']} "
                  f"identical ({100 * good / (good + counts['differ']):.1f}%)")
    for cat in CATEGORIES:
        bad = [r for r in results if r["category"] == cat and r["status"] != GOOD[cat]]
        if not bad:
            continue
        print(f"\n{cat}: causes of the {len(bad)} others (most frequent first)")
        causes = collections.Counter((r["status"], _cause(r["detail"])) for r in bad)
        for (status, cause), n in causes.most_common(a.causes):
            print(f"  {n:>4}  {status:<8} {cause}")
    out = ROOT / "out" / f"p4c-corpus-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print(f"\nper-program results: {out.relative_to(ROOT)} "
          f"({time.monotonic() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
