"""fabricsim against ns-3 (packet level, TCP) on small cases, completion times side by side.

The fabric is 2 leaves x 2 spines with two single-NIC hosts per leaf, every
link 10 Gbit/s and 1 us (``fabricsim.ns3_model``); flows are TCP bulk
transfers of 10 MB. ECMP cases pin each flow to a spine (the same spine in
both simulators: named in the case, or what fabricsim's ECMP hash picks for
seed 0); spraying is ns-3's per-packet random choice among equal-cost next
hops against fabricsim's spraying with equal and with capacity weights.

Columns: fabricsim's completion, the same times the wire's header overhead
(1502 bytes on the wire per 1448 of payload in ns-3: TCP with timestamps,
IPv4, PPP), ns-3's, and ns-3 / adjusted fabricsim.
Needs ns-3: ``pip install -e '.[crosscheck]'`` (the ``ns3`` package). Each ns-3
case runs in its own process (ns-3 keeps global state); about 10-30 s each.
Usage: python bench/bench_fabricsim_ns3.py [--workers 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fabricsim.engine import FlowState, new_state, simulate  # noqa: E402
from fabricsim.ns3_model import Ns3Fabric, Ns3Flow  # noqa: E402
from fabricsim.placement import set_fabric_links  # noqa: E402
from fabricsim.policies import Ecmp, Spray  # noqa: E402
from fabricsim.topology import Network, leaf_spine  # noqa: E402
from fabricsim.workloads import Workload  # noqa: E402

MB = 10_000_000
WIRE = 1502 / 1448          # bytes on an ns-3 point-to-point link per byte of TCP payload


@dataclass
class Case:
    """One comparison: flows (src host, dst host, bytes, start s, spine or None = hash)."""

    name: str
    flows: list[tuple[int, int, int, float, int | None]]
    mode: str                                  # "pinned" (ECMP) or "spray"
    slow: tuple[tuple[int, int], ...] = ()
    note: str = ""
    spines: list[int] = field(default_factory=list)


CASES = [
    Case("ECMP, 2 flows on different spines", [(0, 2, MB, 0, 0), (1, 3, MB, 0, 1)], "pinned"),
    Case("ECMP, 2 flows collide on spine0", [(0, 2, MB, 0, 0), (1, 3, MB, 0, 0)], "pinned"),
    Case("ECMP hash (fabricsim seed 0), 4 flows leaf0 -> leaf1",
         [(0, 2, MB, 0, None), (0, 3, MB, 0, None), (1, 2, MB, 0, None), (1, 3, MB, 0, None)],
         "pinned"),
    Case("spraying, 4 flows leaf0 -> leaf1",
         [(0, 2, MB, 0, None), (0, 3, MB, 0, None), (1, 2, MB, 0, None), (1, 3, MB, 0, None)],
         "spray"),
    Case("half-rate leaf0-spine1, ECMP, one flow per spine",
         [(0, 2, MB, 0, 0), (1, 3, MB, 0, 1)], "pinned", slow=((0, 1),)),
    Case("half-rate leaf0-spine1, spraying, 2 flows", [(0, 2, MB, 0, None), (1, 3, MB, 0, None)],
         "spray", slow=((0, 1),)),
    Case("a second flow joins on h2's NIC at 2 ms (5 MB)",
         [(0, 2, MB, 0, 0), (1, 2, MB // 2, 2e-3, 1)], "pinned"),
]


def network(case: Case) -> Network:
    net = leaf_spine(2, 2, 2, nic_gbps=10)
    for leaf, spine in case.slow:
        net = net.with_capacity(net.links_between(f"leaf{leaf}", f"spine{spine}"), 0.5)
    return net


def workload(net: Network, case: Case) -> Workload:
    n = net.nic_node
    src = np.array([n[f[0], 0] for f in case.flows])
    dst = np.array([n[f[1], 0] for f in case.flows])
    return Workload(case.name, src, dst, np.array([float(f[2]) for f in case.flows]),
                    np.array([float(f[3]) for f in case.flows]), np.zeros(len(src), int))


class Pinned:
    """Each flow through the spine it is given (what the ECMP hash chose)."""

    name = "pinned"

    def __init__(self, net: Network, spines: list[int]):
        self.net, self.spines = net, spines

    def prepare(self, st: FlowState) -> None:
        """Nothing to precompute."""

    def place(self, st: FlowState, ids: np.ndarray, now: float) -> None:
        """Up to the flow's spine, down to its destination leaf."""
        for i in ids:
            s, d = st.net.node_names[st.src_leaf[i]], st.net.node_names[st.dst_leaf[i]]
            k = f"spine{self.spines[i]}"
            links = np.array([[self.net.links_between(s, k)[0], self.net.links_between(k, d)[0]]])
            set_fabric_links(st, np.array([i]), links)

    def next_time(self, now: float) -> float:
        """No clock."""
        return np.inf

    def on_time(self, st: FlowState, now: float) -> bool:
        """Never called."""
        return False

    def on_view(self, st: FlowState, now: float, links: np.ndarray) -> bool:
        """No failures in these cases."""
        return False


def hashed_spines(net: Network, wl: Workload, seed: int = 0) -> list[int]:
    """The spine fabricsim's ECMP hash gives each flow."""
    st = new_state(net, wl, seed)
    ecmp = Ecmp()
    ecmp.prepare(st)
    ecmp.place(st, np.arange(wl.n_flows), 0.0)
    return [int(net.node_names[net.link_dst[lk]][5:]) for lk in st.flow_links[:, 1]]


def fabricsim_times(case: Case) -> dict[str, list[float]]:
    net = network(case)
    wl = workload(net, case)
    if case.mode == "pinned":
        hashed = hashed_spines(net, wl)
        case.spines = [f[4] if f[4] is not None else hashed[i] for i, f in enumerate(case.flows)]
        res = simulate(net, wl, Pinned(net, case.spines), tolerance=0.0)
        return {"fabricsim": (res.finish - res.start).tolist()}
    out = {}
    for weighting in ("equal", "capacity"):
        res = simulate(net, wl, Spray(weighting=weighting), tolerance=0.0)
        out[f"fabricsim spray ({weighting})"] = (res.finish - res.start).tolist()
    return out


def ns3_times(case: Case) -> list[float]:
    """Runs in a fresh process (spawned): ns-3 keeps global state between simulations."""
    from fabricsim.ns3_model import run

    flows = [Ns3Flow(f[0], f[1], f[2], f[3], case.spines[i] if case.spines else 0)
             for i, f in enumerate(case.flows)]
    return run(Ns3Fabric(slow=case.slow), flows, case.mode)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args()
    if importlib.util.find_spec("ns") is None:
        print("ns-3 is not installed: pip install -e '.[crosscheck]' (package ns3)")
        sys.exit(1)
    sims = [fabricsim_times(c) for c in CASES]
    t0 = time.perf_counter()
    ctx = multiprocessing.get_context("spawn")
    # one process per case (max_tasks_per_child=1): ns-3 and cling keep global state
    with ProcessPoolExecutor(a.workers, mp_context=ctx, max_tasks_per_child=1) as ex:
        ns3 = list(ex.map(ns3_times, CASES))
    wall = time.perf_counter() - t0
    import ns as ns_pkg  # for the version line

    version = getattr(ns_pkg, "__version__", "3.44")
    print(f"fabricsim vs ns-3 {version} (TCP, 10 Gbit/s links, 1 us, 10 MB flows; ns-3 runs "
          f"{wall:.0f} s on {a.workers} worker(s)); times in ms")
    report = []
    for case, sim, pkt in zip(CASES, sims, ns3, strict=True):
        spines = f" (spines {case.spines})" if case.spines else ""
        print(f"\n{case.name}{spines}")
        cols = list(sim)
        head = "  flow              " + "".join(f"{c:>28s}" for c in cols)
        print(head + f"{'ns-3':>10s}{'ns-3 / (fabricsim x wire)':>28s}")
        rows = []
        for i, f in enumerate(case.flows):
            ref = sim[cols[0]][i] * WIRE
            vals = "".join(f"{sim[c][i] * 1e3:19.3f} (x wire {sim[c][i] * WIRE * 1e3:6.3f})"
                           for c in cols)
            ratio = pkt[i] / ref if pkt[i] > 0 else float("nan")
            label = f"h{f[0]}->h{f[1]} {f[2] / 1e6:g} MB"
            print(f"  {label:18s}{vals}{pkt[i] * 1e3:10.3f}{ratio:28.3f}")
            rows.append({"flow": label, **{c: sim[c][i] for c in cols}, "ns3": pkt[i],
                         "ratio": ratio})
        report.append({"case": case.name, "mode": case.mode, "spines": case.spines,
                       "slow": case.slow, "flows": rows})
    if a.json:
        Path(a.json).write_text(json.dumps({"cases": report, "ns3_wall_s": wall}, indent=1))


if __name__ == "__main__":
    main()
