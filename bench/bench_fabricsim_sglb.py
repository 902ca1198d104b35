"""SGLB sensitivity: speed-up over ECMP for the SGLB that is built and for what it could become.

1,024 GPUs on a leaf-spine (128 hosts x 8 rails), MoE all-to-all in groups of
64 GPUs, 4 random fabric cables at half rate; every variant runs ECMP and SGLB
on the same seeds, as one parameter sweep over a process pool.
Usage: python bench/bench_fabricsim_sglb.py [--seeds 5] [--workers 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fabricsim.experiment import Scenario, run_many, summarise  # noqa: E402

VARIANTS: dict[str, dict[str, Any]] = {
    "as built (SyncMesh: spine counters 10 ms, profiles on a level change, 16 ms delivery)": {},
    "SyncMesh at hardware speed (1 ms profiles and counters, no delivery delay)":
        {"profile_period": 1e-3, "counter_interval": 1e-3, "delivery": 0.0},
    "in-band feedback every 20 us (issue 11)": {"remote": "inband", "feedback_period": 2e-5},
    "in-band feedback every 200 us": {"remote": "inband", "feedback_period": 2e-4},
    "in-band, levels from offered load": {"remote": "inband", "measure": "offered"},
    "as built, tie tolerance 0": {"tie_tolerance": 0},
    "as built, 1-bit levels": {"bits": 1},
    "as built, flowlet fraction 5%": {"flowlet_fraction": 0.05},
    "as built, flowlet fraction 100%": {"flowlet_fraction": 1.0},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    topo = {"kind": "leaf-spine", "leaves": 32, "spines": 16, "ports_per_leaf": 32, "rails": 8}
    wl = {"kind": "all-to-all", "group_size": 64, "bytes": 2**20, "qps": 2}
    scns = {name: Scenario(topo, wl, ("ecmp", "sglb"), {"random_degrade": 4}, opts, name=name)
            for name, opts in VARIANTS.items()}
    tasks = [(scn, s) for scn in scns.values() for s in range(a.seeds)]
    t0 = time.perf_counter()
    runs = run_many(tasks, workers=a.workers, progress=False)
    wall = time.perf_counter() - t0
    print(f"{len(tasks)} runs on {a.workers} worker(s) in {wall:.1f} s; speed-up of SGLB over "
          f"ECMP, mean and 95% CI over {a.seeds} seeds:")
    for i, (name, scn) in enumerate(scns.items()):
        summ = summarise(scn, runs[i * a.seeds:(i + 1) * a.seeds])
        s = summ["policies"]["sglb"]["speedup_vs_ecmp"]
        c = summ["policies"]["sglb"]["completion"]
        print(f"  {name:75s} {s['mean']:.3f} [{s['lo']:.3f}, {s['hi']:.3f}]   "
              f"SGLB completion {c['mean'] * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
