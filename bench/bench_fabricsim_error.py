"""The engine's completion-time error against exact runs (tolerance 0), and what batching saves.

* the issue's case: 10 and 20 Mbit flows sharing a 10 Gbit/s NIC from t = 9 s
  while an unrelated flow runs since t = 0 (by hand: 2 ms and 3 ms);
* web-search flows at 70% load on a 16-host leaf-spine: per-flow error
  relative to the flow's own running time (p50, p99, max) over seeds;
* the 1,024-GPU all-to-all of bench_fabricsim_scale.py: events, solves and wall
  time exact and at the default tolerance, and the largest per-flow error.
Usage: python bench/bench_fabricsim_error.py [--seeds 4] [--tolerance 0.01] [--skip-1k]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fabricsim.engine import simulate  # noqa: E402
from fabricsim.experiment import apply_failures  # noqa: E402
from fabricsim.policies import Ecmp, Spray, make_policy  # noqa: E402
from fabricsim.routing import PathTable  # noqa: E402
from fabricsim.topology import leaf_spine  # noqa: E402
from fabricsim.workloads import Workload, all_to_all, web_search  # noqa: E402


def rel_error(exact, approx) -> np.ndarray:
    return np.abs(approx.finish - exact.finish) / (exact.finish - exact.start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--tolerance", type=float, default=0.01)
    ap.add_argument("--skip-1k", action="store_true")
    a = ap.parse_args()
    tol = a.tolerance

    net = leaf_spine(2, 2, 4, nic_gbps=10)
    n = net.nic_node
    wl = Workload("issue", np.array([n[0, 0], n[0, 0], n[3, 0]]),
                  np.array([n[1, 0], n[2, 0], n[4, 0]]),
                  np.array([10e6 / 8, 20e6 / 8, 12.5e9]), np.array([9.0, 9.0, 0.0]),
                  np.zeros(3, int))
    res = simulate(net, wl, Ecmp(), tolerance=tol)
    print(f"issue case at tolerance {tol:g}: {(res.finish[0] - 9) * 1e3:.4f} ms and "
          f"{(res.finish[1] - 9) * 1e3:.4f} ms (by hand 2 and 3)")

    print(f"web search, 70% load, 16 hosts x 100G, tolerance {tol:g} against 0:")
    net = leaf_spine(4, 2, 4, nic_gbps=100)
    for pol in (Ecmp, Spray):
        errs, ev = [], []
        for seed in range(a.seeds):
            wl = web_search(net, 0.7, 0.004, rng=np.random.default_rng(seed))
            exact = simulate(net, wl, pol(), seed=seed, tolerance=0.0)
            approx = simulate(net, wl, pol(), seed=seed, tolerance=tol)
            errs.append(rel_error(exact, approx))
            ev.append((exact.events, approx.events))
        e = np.concatenate(errs)
        print(f"  {pol.name:6s} {len(e)} flows: error p50 {np.percentile(e, 50):.5f} "
              f"p99 {np.percentile(e, 99):.5f} max {e.max():.5f} (bound {tol:g}); events "
              f"{sum(x for x, _ in ev)} exact, {sum(y for _, y in ev)} batched")

    if a.skip_1k:
        return
    print(f"1,024-GPU all-to-all (32 x 16 leaf-spine, 4 half-rate cables), tolerance {tol:g}:")
    net = leaf_spine(32, 16, 32, rails=8)
    rng = np.random.default_rng(0)
    net = apply_failures(net, {"random_degrade": 4}, rng)
    wl = all_to_all(net, 64, 2**20, qps=2, rng=rng)
    paths = PathTable(net)
    for name in ("ecmp", "sglb", "spray"):
        out = {}
        for t in (0.0, tol):
            t0 = time.perf_counter()
            out[t] = (simulate(net, wl, make_policy(name), paths=paths, tolerance=t),
                      time.perf_counter() - t0)
        (ex, wx), (ap_, wa) = out[0.0], out[tol]
        print(f"  {name:6s} exact {ex.events} events / {ex.solves} solves / {wx:.1f} s; "
              f"batched {ap_.events} / {ap_.solves} / {wa:.1f} s; makespan "
              f"{ex.makespan * 1e3:.4f} vs {ap_.makespan * 1e3:.4f} ms; max flow error "
              f"{rel_error(ex, ap_).max():.5f}")


if __name__ == "__main__":
    main()
