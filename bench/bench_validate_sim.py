"""The fabric simulator's prediction for the testbed all-to-all, next to what the testbed measured.

Builds exactly the workload of ``bench/bench_testbed_alltoall.py`` (every host
to every host it shares no leaf with, both rails, ``--flows`` connections of
``--bytes`` per pair and rail, links at the fabric's capacity x ``--scale``)
as a ``fabricsim`` workload on the same fabric files, and simulates ECMP,
SGLB (SyncMesh as the testbed runs it: profiles every 1 s, counters every 0.25 s; flowlet re-choices every
``--flowlet-interval`` s for ``--flowlet-fraction`` of the running flows) and
ideal spraying over ``--seeds`` seeds (ECMP's hash and SGLB's tie-breaks
change with the seed). With ``--testbed out/.../alltoall.json`` (the
benchmark's figures) it prints the measured ECMP/SGLB ratio beside the
prediction, for the workload that run had (its args in the JSON). No root needed; a few seconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fabricmodel import Fabric, load  # noqa: E402
from fabricsim.engine import simulate  # noqa: E402
from fabricsim.policies import make_policy  # noqa: E402
from fabricsim.routing import PathTable  # noqa: E402
from fabricsim.stats import mean_ci  # noqa: E402
from fabricsim.topology import Network, from_fabric  # noqa: E402
from fabricsim.workloads import Workload  # noqa: E402
from topologies import alltoall  # noqa: E402

FABRICS = {"symmetric": REPO / "topologies/fabrics/ls4x2.yaml",
           "asymmetric": REPO / "topologies/fabrics/ls4x2-asym.yaml",
           "thin": REPO / "topologies/fabrics/ls4x2-thin.yaml"}


def testbed_workload(fabric: Fabric, net: Network, flows: int, nbytes: int) -> Workload:
    """The benchmark's transfers as simulator flows (one flow per TCP connection, one collective)."""
    hosts = {h: i for i, h in enumerate(net.host_names)}
    plan = alltoall.plan(fabric, flows, nbytes)
    src = np.array([net.nic_node[hosts[t.src], t.rail] for t in plan])
    dst = np.array([net.nic_node[hosts[t.dst], t.rail] for t in plan])
    n = len(plan)
    return Workload("testbed-all-to-all", src, dst, np.full(n, float(nbytes)), np.zeros(n),
                    np.zeros(n, dtype=int))


def predict(fabric: Fabric, flows: int, nbytes: int, seeds: int, sglb: dict) -> dict:
    """Completion per policy and per seed, and the speed-ups over ECMP with 95% CIs."""
    net = from_fabric(fabric)
    wl = testbed_workload(fabric, net, flows, nbytes)
    paths = PathTable(net)
    comp: dict[str, list[float]] = {"ecmp": [], "sglb": [], "spray": []}
    for seed in range(seeds):
        for name in comp:
            policy = make_policy(name, **(sglb if name == "sglb" else {}))
            comp[name].append(simulate(net, wl, policy, seed=seed, paths=paths).makespan)
    out = {name: {"completion": mean_ci(v), "per_seed": v} for name, v in comp.items()}
    for name in ("sglb", "spray"):
        out[name]["speedup_vs_ecmp"] = mean_ci([e / x for e, x in zip(comp["ecmp"], comp[name],
                                                                       strict=True)])
    return out


def main(argv: list[str] | None = None) -> int:
    """Simulate both fabrics and print the prediction (and the measurement, if given)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--flows", type=int, default=None,
                   help="default: the --testbed run's, else 4")
    p.add_argument("--bytes", type=int, default=None,
                   help="default: the --testbed run's, else 1000000 (the benchmark's default)")
    p.add_argument("--scale", type=float, default=None,
                   help="default: the --testbed run's, else 2 (the benchmark's default)")
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--profile-period", type=float, default=1.0, help="SyncMesh profile period (s)")
    p.add_argument("--counter-interval", type=float, default=0.25,
                   help="SyncMesh counter poll interval (s; the testbed's ControlOptions)")
    p.add_argument("--flowlet-interval", type=float, default=0.01)
    p.add_argument("--flowlet-fraction", type=float, default=0.25)
    p.add_argument("--testbed", type=Path, default=None, help="alltoall.json of the testbed benchmark")
    args = p.parse_args(argv)
    measured = {}
    ran: dict = {}  # the testbed run's workload: the prediction is for the same one
    if args.testbed is not None:
        try:
            doc = json.loads(args.testbed.read_text())
            measured = doc["fabrics"]
            ran = doc.get("args") or {}
        except (OSError, ValueError, KeyError, TypeError) as e:
            p.error(f"--testbed {args.testbed}: {e}")
    for name, fallback in (("flows", 4), ("bytes", 1_000_000), ("scale", 2.0)):
        if getattr(args, name) is None:
            value = ran.get(name, fallback)
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                p.error(f"--testbed {args.testbed}: args.{name} is {value!r}, not a number")
            setattr(args, name, value)
    if args.flows < 1 or args.bytes < 1 or args.scale <= 0 or args.seeds < 2:
        p.error("need --flows, --bytes >= 1, --scale > 0, --seeds >= 2")
    sglb = {"profile_period": args.profile_period, "counter_interval": args.counter_interval,
            "flowlet_interval": args.flowlet_interval, "flowlet_fraction": args.flowlet_fraction}
    print(f"simulator: {args.flows} flows x {args.bytes} B per host pair and rail, links x{args.scale:g}, "
          f"SGLB {sglb}, {args.seeds} seeds")
    print(f"{'fabric':<12}{'ECMP s':>18}{'SGLB s':>18}{'spray s':>10}{'sim ECMP/SGLB [95% CI]':>30}"
          f"{'testbed ECMP/SGLB':>20}")
    for name, path in FABRICS.items():
        t0 = time.time()
        fabric = alltoall.scale_fabric(load(path), args.scale)
        r = predict(fabric, args.flows, args.bytes, args.seeds, sglb)
        ci = r["sglb"]["speedup_vs_ecmp"]
        tb = measured.get(name)
        tb_text = "-"
        tb_more = []
        if tb:
            ecmp_s = statistics.median(x["completion_s"] for x in tb["modes"]["ECMP"]["reps"])
            for label, m in tb["modes"].items():
                if label == "ECMP":
                    continue
                s = statistics.median(x["completion_s"] for x in m["reps"])
                text = f"{ecmp_s / s:.3f} ({ecmp_s:.2f}/{s:.2f} s)"
                if label == "SGLB":
                    tb_text = text
                else:
                    tb_more.append(f"testbed {label}: {text}")
        print(f"{name:<12}{r['ecmp']['completion']['mean']:>9.2f} "
              f"[{r['ecmp']['completion']['lo']:.2f}, {r['ecmp']['completion']['hi']:.2f}]"
              f"{r['sglb']['completion']['mean']:>7.2f} "
              f"[{r['sglb']['completion']['lo']:.2f}, {r['sglb']['completion']['hi']:.2f}]"
              f"{r['spray']['completion']['mean']:>8.2f}  "
              f"{ci['mean']:>8.3f} [{ci['lo']:.3f}, {ci['hi']:.3f}]      {tb_text:>20}"
              f"   ({time.time() - t0:.1f} s)")
        pairs = [e / s for e, s in zip(r["ecmp"]["per_seed"], r["sglb"]["per_seed"], strict=True)]
        print(f"{'':<12}per-seed ECMP/SGLB min {min(pairs):.3f}, max {max(pairs):.3f}; "
              f"spray speed-up over ECMP {r['spray']['speedup_vs_ecmp']['mean']:.3f}"
              + "".join(f"; {x}" for x in tb_more))
    return 0


if __name__ == "__main__":
    sys.exit(main())
