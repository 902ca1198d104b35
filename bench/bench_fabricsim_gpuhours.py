"""GPU-hours model: a 54-day, 16,384-GPU job, 1,000 seeds, every policy.

Prints the wall time of the Monte Carlo run and, per policy, GPU-hours lost,
saved against fail-stop (mean, its 95% CI and the 2.5-97.5 percentile range
over seeds, which holds the rates' Gamma-posterior uncertainty and one job's
luck) and the effective training time ratio (ETTR). The defaults and their
sources: ``fabric-sim figures``; the sweep over them: ``fabric-sim gpu-hours
--sensitivity``.
Usage: python bench/bench_fabricsim_gpuhours.py [--gpus N] [--days D] [--seeds S]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fabricsim.gpuhours import GpuHoursParams, gpu_hours  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--gpus", type=int, default=16384)
    ap.add_argument("--days", type=float, default=54.0)
    ap.add_argument("--seeds", type=int, default=1000)
    a = ap.parse_args()
    params = GpuHoursParams(gpus=a.gpus, days=a.days)
    t0 = time.perf_counter()
    res = gpu_hours(params, a.seeds, seed=0)
    wall = time.perf_counter() - t0
    f = res["failures_per_seed"]
    print(f"{a.gpus} GPUs, {a.days:g} days, {a.seeds} seeds: {wall:.2f} s wall "
          f"({f['mean']:.1f} failures per run)")
    for p, e in res["policies"].items():
        g, r, s = e["gpu_hours_lost"], e["ettr"], e["gpu_hours_saved"]
        print(f"  {p:13s} lost {g['mean']:11,.0f} GPU-h [{g['lo']:,.0f}, {g['hi']:,.0f}]  "
              f"saved {s['mean']:9,.0f} [{s['lo']:,.0f}, {s['hi']:,.0f}] (95% of seeds "
              f"{s['p2.5']:,.0f} to {s['p97.5']:,.0f})  ETTR {r['mean']:.4f}  "
              f"stops {e['stops']['mean']:.1f}  swaps {e['swaps']['mean']:.1f}  "
              f"checkpoint every {e['interval_s']['mean']:.0f} s")

if __name__ == "__main__":
    main()
