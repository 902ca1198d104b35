"""Fabric simulator at scale: all-to-all over 1,024 and 16,384 GPUs, ECMP vs SGLB vs spraying.

Prints, per fabric and policy, the all-to-all completion time, its speed-up
over ECMP (same seed, same workload), the wall time and the peak memory of a
fresh process running only that policy (so each figure is that policy's own).
Usage: python bench/bench_fabricsim_scale.py [--sizes 1024,16384]   (default 1,024 GPUs)
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FABRICS = {
    # name: (generator, kwargs); 8 rails (NICs/GPUs) per host, 400G NICs, rail-optimised.
    ("leaf-spine", 1024): ("leaf_spine", dict(leaves=32, spines=16, ports_per_leaf=32, rails=8)),
    ("fat-tree", 1024): ("fat_tree", dict(k=16, pods=8, ports_per_leaf=16, rails=8)),
    ("leaf-spine", 16384): ("leaf_spine", dict(leaves=512, spines=32, ports_per_leaf=32, rails=8)),
    ("fat-tree", 16384): ("fat_tree", dict(k=32, pods=32, ports_per_leaf=32, rails=8)),
}


def _one(fabric: tuple[str, int], policy: str, group: int, nbytes: float, qps: int,
         seed: int, queue) -> None:
    import numpy as np

    from fabricsim import topology
    from fabricsim.engine import simulate
    from fabricsim.experiment import apply_failures
    from fabricsim.policies import make_policy
    from fabricsim.routing import PathTable
    from fabricsim.workloads import all_to_all

    gen, kw = FABRICS[fabric]
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    net = apply_failures(getattr(topology, gen)(**kw), {"random_degrade": 4}, rng)
    wl = all_to_all(net, group, nbytes, qps=qps, placement="hosts", rng=rng)
    paths = PathTable(net)
    t1 = time.perf_counter()
    res = simulate(net, wl, make_policy(policy), seed=seed, paths=paths)
    t2 = time.perf_counter()
    queue.put({"fabric": fabric[0], "gpus": fabric[1], "policy": policy, "flows": wl.n_flows,
               "completion_ms": res.makespan * 1e3, "events": res.events,
               "build_s": t1 - t0, "sim_s": t2 - t1,
               "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})


def run(fabric, policy, group, nbytes, qps, seed):
    """Run one policy in a fresh process and return what it measured."""
    q = mp.get_context("spawn").Queue()
    p = mp.get_context("spawn").Process(target=_one, args=(fabric, policy, group, nbytes, qps,
                                                           seed, q))
    p.start()
    out = q.get()
    p.join()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="1024", help="GPU counts, e.g. 1024,16384")
    ap.add_argument("--fabrics", default="leaf-spine,fat-tree")
    ap.add_argument("--policies", default="ecmp,sglb,spray")
    ap.add_argument("--group", type=int, default=64, help="expert-parallel group (GPUs)")
    ap.add_argument("--bytes", type=float, default=2**20, help="bytes per GPU pair")
    ap.add_argument("--qps", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="1,024 GPUs only")
    ap.add_argument("--json", help="also write the rows here")
    a = ap.parse_args()
    sizes = [1024] if a.quick else [int(s) for s in a.sizes.split(",")]
    rows = []
    print(f"all-to-all, EP groups of {a.group} GPUs on whole hosts, {a.bytes:.0f} B per GPU pair, "
          f"{a.qps} QPs per connection, 4 random fabric cables at half rate, seed {a.seed}")
    print(f"{'fabric':10s} {'GPUs':>6s} {'policy':6s} {'flows':>8s} {'CT ms':>9s} "
          f"{'vs ECMP':>8s} {'events':>7s} {'build s':>8s} {'sim s':>8s} {'peak MB':>8s}")
    for size in sizes:
        for fab in a.fabrics.split(","):
            base = None
            for pol in a.policies.split(","):
                r = run((fab, size), pol, a.group, a.bytes, a.qps, a.seed)
                if pol == "ecmp":
                    base = r["completion_ms"]
                r["speedup_vs_ecmp"] = base / r["completion_ms"] if base else None
                rows.append(r)
                sp = f"{r['speedup_vs_ecmp']:.3f}" if base else "-"
                print(f"{fab:10s} {size:6d} {pol:6s} {r['flows']:8d} {r['completion_ms']:9.3f} "
                      f"{sp:>8s} {r['events']:7d} {r['build_s']:8.2f} {r['sim_s']:8.2f} "
                      f"{r['peak_rss_mb']:8.0f}", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
