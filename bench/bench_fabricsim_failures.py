"""Failures during a collective: completion-time inflation per policy, with the delays used.

1,024 GPUs (leaf-spine 32 x 16, 128 hosts x 8 rails, 400G), MoE all-to-all in
groups of 64 GPUs, 1 MiB per GPU pair, 2 QPs per connection. At 0.5 ms a
fabric cable, a spine, a NIC or a leaf fails; every policy runs the same
seeds with and without the failure. Detection and failover delays are the
project's measured figures (``fabric-sim figures``); the run's notes name
them. Also: the steady throughput with one fabric cable down from the start
(the GPU-hours model's ``sglb_network_throughput``), and a throughput plot.
Usage: python bench/bench_fabricsim_failures.py [--seeds 3] [--workers 2] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fabricsim.experiment import Scenario, run_many, summarise  # noqa: E402
from fabricsim.plots import throughput_figure  # noqa: E402
from fabricsim.stats import mean_ci  # noqa: E402

TOPO = {"kind": "leaf-spine", "leaves": 32, "spines": 16, "ports_per_leaf": 32, "rails": 8}
WORKLOAD = {"kind": "all-to-all", "group_size": 64, "bytes": 2**20, "qps": 2}
ALL = ("ecmp", "sglb", "spray")
CASES = {
    "fabric cable leaf0-spine0": (ALL, ("0.5ms:link:leaf0-spine0",), {}),
    "spine spine0": (ALL, ("0.5ms:switch:spine0",), {}),
    "NIC h0/nic1, ReCCL fails over": (("spray",), ("0.5ms:nic:h0/nic1",), {}),
    "NIC h0/nic1, fail-stop": (("spray",), ("0.5ms:nic:h0/nic1",), {"host": "fail-stop"}),
    "leaf leaf0 (a rail of 32 hosts), ReCCL": (("spray",), ("0.5ms:switch:leaf0",), {}),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default="results/fabricsim-failures")
    ap.add_argument("--small", action="store_true", help="a 16-GPU fabric (smoke test)")
    a = ap.parse_args()
    if a.small:
        TOPO.update(leaves=4, spines=2, ports_per_leaf=4, rails=2)
        WORKLOAD.update(group_size=8, bytes=2**24)
    scns = {name: Scenario(TOPO, WORKLOAD, pols, events=ev, recovery=rec, name=name)
            for name, (pols, ev, rec) in CASES.items()}
    steady = {"healthy": Scenario(TOPO, WORKLOAD, ALL, name="healthy"),
              "one cable down": Scenario(TOPO, WORKLOAD, ALL, {"fail": ["leaf0-spine0"]},
                                         name="one cable down from the start")}
    all_scns = list(scns.values()) + list(steady.values())
    tasks = [(scn, s) for scn in all_scns for s in range(a.seeds)]
    t0 = time.perf_counter()
    runs = run_many(tasks, workers=a.workers, progress=False)
    wall = time.perf_counter() - t0
    by = {scn.name: runs[i * a.seeds:(i + 1) * a.seeds] for i, scn in enumerate(all_scns)}
    print(f"{len(tasks)} runs in {wall:.0f} s on {a.workers} worker(s); 1,024-GPU all-to-all, "
          f"failure at 0.5 ms, mean and 95% CI over {a.seeds} seeds")
    print(f"  {'failure':40s} {'policy':6s} {'healthy ms':>11s} {'failed ms':>13s} "
          f"{'inflation':>22s}")
    for name, scn in scns.items():
        summ = summarise(scn, by[name])
        for p in scn.policies:
            e = summ["policies"][p]
            i, h, c = e["inflation"], e["healthy_completion"], e["completion"]
            print(f"  {name:40s} {p:6s} {h['mean'] * 1e3:11.3f} {c['mean'] * 1e3:13.3f} "
                  f"{i['mean']:9.3f} [{i['lo']:.3f}, {i['hi']:.3f}]")
        for note in by[name][0]["policies"][scn.policies[-1]]["notes"]:
            for reaction in note.get("reactions", []):
                print(f"      {note['event']}: {reaction}")
    out = Path(a.out)
    throughput_figure(scns["fabric cable leaf0-spine0"].to_dict(), by["fabric cable leaf0-spine0"][0],
                      out)
    print(f"  wrote {out}/throughput.png (fabric cable, seed 0)")
    print("steady throughput with one fabric cable down (healthy completion / degraded):")
    for p in ALL:
        ratio = [h["policies"][p]["completion"] / d["policies"][p]["completion"]
                 for h, d in zip(by["healthy"], by["one cable down from the start"], strict=True)]
        r = mean_ci(ratio)
        print(f"  {p:6s} {r['mean']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}]  per seed "
              f"{', '.join(f'{x:.3f}' for x in np.round(ratio, 3))}")


if __name__ == "__main__":
    main()
