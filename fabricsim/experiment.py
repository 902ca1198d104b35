"""Scenarios: one topology, failures, workload and set of policies, run over seeds.

A scenario is plain data (picklable, JSON-able), so a sweep of scenarios runs
on any ``concurrent.futures.Executor``: the local process pool by default, or
a distributed engine's executor (Dask's ``Client.get_executor()``) unchanged.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tqdm import tqdm

from fabricsim import workloads
from fabricsim.engine import Result, SimulationError, simulate
from fabricsim.failures import FailureError, FailurePlan, Recovery, cable_links, parse_failure
from fabricsim.policies import POLICIES, make_policy
from fabricsim.routing import PathTable
from fabricsim.stats import mean_ci
from fabricsim.topology import Network, TopologyError, fat_tree, leaf_spine, load_fabric

TOPOLOGY_KEYS = {
    "leaf-spine": {"leaves", "spines", "ports_per_leaf", "rails", "rail_optimised", "nic_gbps",
                   "oversubscription", "parallel"},
    "fat-tree": {"k", "pods", "ports_per_leaf", "rails", "rail_optimised", "nic_gbps",
                 "oversubscription", "parallel"},
    "fabric": {"path"},
}
WORKLOAD_KEYS = {
    "all-to-all": {"group_size", "bytes", "qps", "placement", "pxn"},
    "all-reduce": {"group_size", "bytes", "qps", "placement"},
    "permutation": {"bytes", "qps"},
    "web-search": {"load", "duration"},
}
FAILURE_KEYS = {"fail", "degrade", "random_fail", "random_degrade", "degrade_factor", "nic"}

def _option_keys(cls) -> set[str]:
    return {f.name for f in dataclasses.fields(cls) if f.name != "name" and not f.name.startswith("_")}


POLICY_KEYS = {name: _option_keys(cls) for name, cls in POLICIES.items()}
RECOVERY_KEYS = _option_keys(Recovery)
TIMELINE_POINTS = 400
"""Throughput samples kept per run for the report and the plot."""


class ScenarioError(ValueError):
    """A scenario with unknown keys, bad values or inconsistent parts."""


def _check_keys(what: str, given: dict, allowed: set[str]) -> None:
    extra = sorted(set(given) - allowed)
    if extra:
        raise ScenarioError(f"{what}: unknown key(s) {', '.join(extra)} "
                            f"(allowed: {', '.join(sorted(allowed))})")


@dataclass(frozen=True)
class Scenario:
    """Everything one experiment needs; validated on construction."""

    topology: dict[str, Any]
    """``kind`` (leaf-spine, fat-tree, fabric) plus the generator's arguments."""
    workload: dict[str, Any]
    """``kind`` (all-to-all, all-reduce, permutation, web-search) plus its arguments."""
    policies: tuple[str, ...] = ("ecmp", "sglb", "spray")
    failures: dict[str, Any] = field(default_factory=dict)
    """``fail``: cables to take down (``a-b`` or ``a-b:k`` for the k-th parallel one);
    ``degrade``: ``[cable, factor]`` pairs; ``random_fail`` / ``random_degrade``:
    counts of fabric cables picked per seed; ``degrade_factor`` for the random ones;
    ``nic``: NICs (``host/nic``) whose last-hop link is down; their traffic fails over
    to the host's other NICs, as under ReCCL."""
    sglb: dict[str, Any] = field(default_factory=dict)
    """SGLB options (``fabricsim.sglb_model.Sglb``): remote, profile_period, counter_interval,
    profile_threshold, delivery, feedback_period, measure, bits, tie_tolerance, flowlets."""
    ecmp: dict[str, Any] = field(default_factory=dict)
    """ECMP options: hashing (end-to-end, per-hop), hash_seeds (same, per-switch)."""
    spray: dict[str, Any] = field(default_factory=dict)
    """Spraying options: weighting (capacity, equal)."""
    events: tuple[str, ...] = ()
    """Failures during the run, ``TIME:KIND:TARGET`` (``fabricsim.failures``)."""
    recovery: dict[str, Any] = field(default_factory=dict)
    """Detection and failover delays and the host library's mode (``failures.Recovery``)."""
    tolerance: float = 1e-2
    name: str = "scenario"

    def __post_init__(self) -> None:
        kind = self.topology.get("kind")
        if kind not in TOPOLOGY_KEYS:
            raise ScenarioError(f"topology.kind must be one of {', '.join(TOPOLOGY_KEYS)}, "
                                f"got {kind!r}")
        _check_keys(f"topology ({kind})", {k: v for k, v in self.topology.items() if k != "kind"},
                    TOPOLOGY_KEYS[kind])
        wk = self.workload.get("kind")
        if wk not in WORKLOAD_KEYS:
            raise ScenarioError(f"workload.kind must be one of {', '.join(WORKLOAD_KEYS)}, "
                                f"got {wk!r}")
        _check_keys(f"workload ({wk})", {k: v for k, v in self.workload.items() if k != "kind"},
                    WORKLOAD_KEYS[wk])
        _check_keys("failures", self.failures, FAILURE_KEYS)
        for pol in POLICIES:
            _check_keys(pol, getattr(self, pol), POLICY_KEYS[pol])
        _check_keys("recovery", self.recovery, RECOVERY_KEYS)
        if isinstance(self.tolerance, bool) or not isinstance(self.tolerance, int | float) \
                or not 0 <= self.tolerance < 1:
            raise ScenarioError(f"tolerance must be a number within [0, 1), got {self.tolerance!r}")
        if not self.policies:
            raise ScenarioError("at least one policy is needed")
        for p in self.policies:
            if p not in POLICIES:
                raise ScenarioError(f"unknown policy {p!r} (choose from {', '.join(POLICIES)})")
        if len(set(self.policies)) != len(self.policies):
            raise ScenarioError("a policy is listed twice")
        for pol in POLICIES:
            try:
                make_policy(pol, **getattr(self, pol))  # validates the options early
            except SimulationError as e:
                raise ScenarioError(f"{pol}: {e}") from None
        if isinstance(self.events, str) or not isinstance(self.events, tuple | list):
            raise ScenarioError("events must be a list of TIME:KIND:TARGET strings")
        try:
            for ev in self.events:
                parse_failure(str(ev))
            Recovery(**self.recovery)
        except FailureError as e:
            raise ScenarioError(str(e)) from None

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the JSON report."""
        return dataclasses.asdict(self)


def build_network(scn: Scenario) -> Network:
    """The scenario's topology before failures."""
    args = {k: v for k, v in scn.topology.items() if k != "kind"}
    kind = scn.topology["kind"]
    try:
        if kind == "leaf-spine":
            return leaf_spine(**args)
        if kind == "fat-tree":
            return fat_tree(**args)
        return load_fabric(args["path"])
    except TypeError as e:
        raise ScenarioError(f"topology ({kind}): {e}") from None


def _cable(net: Network, spec: str) -> np.ndarray:
    """Both directed links of cable ``a-b`` or ``a-b:k``."""
    try:
        return cable_links(net, spec)
    except FailureError as e:
        raise ScenarioError(str(e)) from None


def apply_failures(net: Network, failures: dict[str, Any], rng: np.random.Generator) -> Network:
    """Take cables down or reduce them as the scenario says (random ones drawn from ``rng``)."""
    try:
        for spec in failures.get("fail", []):
            net = net.with_failed(_cable(net, spec))
        for item in failures.get("degrade", []):
            if not isinstance(item, list | tuple) or len(item) != 2:
                raise ScenarioError(f"degrade entry {item!r}: expected [cable, factor]")
            net = net.with_capacity(_cable(net, item[0]), float(item[1]))
        for nic in failures.get("nic", []):
            node = net.node(str(nic))
            if node not in set(net.nic_node.ravel().tolist()):
                raise ScenarioError(f"nic {nic!r} is not a NIC endpoint (write host/nic)")
            net = net.with_failed(net.access_up(np.array([node])))
        n_fail = int(failures.get("random_fail", 0))
        n_deg = int(failures.get("random_degrade", 0))
        if n_fail or n_deg:
            cables = net.cable_ids("fabric")
            cables = cables[net.capacity[cables] > 0]
            if n_fail + n_deg > len(cables):
                raise ScenarioError(f"asked for {n_fail + n_deg} random cable faults but the "
                                    f"fabric has {len(cables)} live cables")
            pick = rng.choice(cables, n_fail + n_deg, replace=False)
            if n_fail:
                net = net.with_failed(pick[:n_fail])
            if n_deg:
                net = net.with_capacity(pick[n_fail:], float(failures.get("degrade_factor", 0.5)))
    except ScenarioError:
        raise
    except (TopologyError, TypeError, ValueError) as e:
        raise ScenarioError(f"failures: {e}") from None
    return net


def build_workload(net: Network, spec: dict[str, Any], rng: np.random.Generator):
    """The scenario's traffic on ``net``."""
    args = {k: v for k, v in spec.items() if k != "kind"}
    kind = spec["kind"]
    try:
        if kind == "all-to-all":
            return workloads.all_to_all(net, args.pop("group_size"), args.pop("bytes"), rng=rng, **args)
        if kind == "all-reduce":
            return workloads.ring_all_reduce(net, args.pop("group_size"), args.pop("bytes"),
                                             rng=rng, **args)
        if kind == "permutation":
            return workloads.permutation(net, args.pop("bytes"), rng=rng, **args)
        return workloads.web_search(net, args.pop("load"), args.pop("duration"), rng=rng)
    except KeyError as e:
        raise ScenarioError(f"workload ({kind}): missing key {e}") from None


def _timeline(res: Result, points: int = TIMELINE_POINTS) -> dict[str, list[float]]:
    """The goodput step function at ``points`` times over the run (bit/s)."""
    if not len(res.timeline):
        return {"time": [], "goodput": []}
    grid = np.linspace(0.0, res.makespan, points)
    idx = np.searchsorted(res.timeline[:, 0], grid, side="right") - 1
    rate = res.timeline[np.maximum(idx, 0), 1]
    return {"time": grid.tolist(), "goodput": rate.tolist()}


def _metrics(scn: Scenario, net: Network, res: Result) -> dict[str, Any]:
    fct = res.finish - res.start
    completion = float(fct.mean()) if scn.workload["kind"] == "web-search" else res.makespan
    per_coll = res.collective_times()
    return {
        "completion": completion,
        "collectives": {"count": len(per_coll),
                        "mean": float(per_coll.mean()) if len(per_coll) else None,
                        "max": float(per_coll.max()) if len(per_coll) else None},
        "makespan": res.makespan,
        "fct_mean": float(fct.mean()),
        "fct_p99": float(np.percentile(fct, 99)),
        "utilisation": np.round(res.utilisation(net), 4).tolist(),
        "events": res.events,
    }


def run_seed(scn: Scenario, seed: int) -> dict[str, Any]:
    """Every policy of the scenario on one seed's failures and workload.

    With ``events`` each policy also runs without them (same seed) and the
    report gives the completion-time inflation, the throughput over time and
    what happened when, with the delays used.
    """
    rng = np.random.default_rng(seed)
    net = apply_failures(build_network(scn), scn.failures, rng)
    wl = workloads.reroute_failed_nics(net, build_workload(net, scn.workload, rng))
    paths = PathTable(net)
    specs = [parse_failure(str(e)) for e in scn.events]
    recovery = Recovery(**scn.recovery)
    out: dict[str, Any] = {"seed": seed, "flows": wl.n_flows, "policies": {}}
    for name in scn.policies:
        options = getattr(scn, name)
        res = simulate(net, wl, make_policy(name, **options), seed=seed, tolerance=scn.tolerance,
                       paths=paths)
        entry = _metrics(scn, net, res)
        if specs:
            try:
                plan = FailurePlan(net, specs, name, recovery)
            except FailureError as e:
                raise ScenarioError(f"events: {e}") from None
            hit = simulate(net, wl, make_policy(name, **options), seed=seed,
                           tolerance=scn.tolerance, paths=paths, disruptions=plan)
            healthy = entry
            entry = _metrics(scn, net, hit)
            entry["healthy"] = {k: healthy[k] for k in ("completion", "makespan", "fct_p99")}
            entry["inflation"] = entry["completion"] / healthy["completion"]
            entry["notes"] = list(hit.notes)
            entry["timeline"] = _timeline(hit)
            entry["timeline_healthy"] = _timeline(res)
        out["policies"][name] = entry
    return out


def summarise(scn: Scenario, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Aggregate per-seed runs: completion per policy and speed-up vs ECMP with 95% CIs."""
    runs = sorted(runs, key=lambda r: r["seed"])
    summary: dict[str, Any] = {"scenario": scn.to_dict(), "seeds": [r["seed"] for r in runs],
                               "policies": {}}
    for p in scn.policies:
        comp = [r["policies"][p]["completion"] for r in runs]
        util = np.concatenate([r["policies"][p]["utilisation"] for r in runs])
        entry = {"completion": mean_ci(comp), "completion_per_seed": comp,
                 "fct_p99": mean_ci([r["policies"][p]["fct_p99"] for r in runs]),
                 "utilisation_percentiles": {
                     str(q): float(np.percentile(util, q)) if len(util) else None
                     for q in (1, 10, 50, 90, 99)}}
        if scn.events:
            entry["inflation"] = mean_ci([r["policies"][p]["inflation"] for r in runs])
            entry["healthy_completion"] = mean_ci(
                [r["policies"][p]["healthy"]["completion"] for r in runs])
        if "ecmp" in scn.policies:
            ratio = [r["policies"]["ecmp"]["completion"] / r["policies"][p]["completion"]
                     for r in runs]
            entry["speedup_vs_ecmp"] = mean_ci(ratio)
            entry["speedup_per_seed"] = ratio
        summary["policies"][p] = entry
    return summary


def run_scenario(scn: Scenario, seeds: list[int], *, executor: Executor | None = None,
                 workers: int = 1, progress: bool = True) -> tuple[dict, list[dict]]:
    """Run every seed (in parallel when ``workers`` > 1 or an executor is given)."""
    runs = run_many([(scn, s) for s in seeds], executor=executor, workers=workers,
                    progress=progress)
    return summarise(scn, runs), runs


def _task(args: tuple[Scenario, int]) -> dict[str, Any]:
    scn, seed = args
    return run_seed(scn, seed)


def run_many(tasks: list[tuple[Scenario, int]], *, executor: Executor | None = None,
             workers: int = 1, progress: bool = True) -> list[dict[str, Any]]:
    """Run (scenario, seed) tasks on an executor, in task order, with a progress bar."""
    bar = tqdm(total=len(tasks), desc="runs", disable=not progress, leave=False)
    try:
        if executor is None and workers <= 1:
            out = []
            for t in tasks:
                out.append(_task(t))
                bar.update()
            return out
        own = executor is None
        ex = executor or ProcessPoolExecutor(max_workers=workers)
        try:
            futures = [ex.submit(_task, t) for t in tasks]
            out = []
            for f in futures:
                out.append(f.result())
                bar.update()
            return out
        finally:
            if own:
                ex.shutdown()
    finally:
        bar.close()
