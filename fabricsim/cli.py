"""``fabric-sim``: flow-level fabric simulation and the GPU-hours model of failover."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import yaml

from fabricsim import measured
from fabricsim.engine import SimulationError
from fabricsim.experiment import (
    Scenario,
    ScenarioError,
    apply_failures,
    build_network,
    run_scenario,
)
from fabricsim.failures import FailureError
from fabricsim.gpuhours import POLICIES as GH_POLICIES
from fabricsim.gpuhours import GpuHoursError, GpuHoursParams, gpu_hours
from fabricsim.plots import gpu_hours_figure, sensitivity_figure, simulator_figures, write_json
from fabricsim.sensitivity import sensitivity
from fabricsim.topology import TopologyError
from fabricsim.workloads import WorkloadError

# gpu-hours flags: (flag, figure in fabricsim.measured, GpuHoursParams field)
GH_FLAGS = (("--detection", "detection", "detection"), ("--restart", "restart", "restart"),
            ("--checkpoint", "checkpoint_write", "checkpoint"),
            ("--failover", "failover_pause", "failover"), ("--repair", "repair", "repair"),
            ("--comm-fraction", "comm_fraction", "comm_fraction"),
            ("--last-hop-share", "last_hop_share", "last_hop_share"),
            ("--switch-share", "switch_share", "switch_share"),
            ("--leaf-share", "leaf_share_of_switches", "leaf_share"),
            ("--reccl-throughput", "reccl_network_throughput", "reccl_network_throughput"),
            ("--sglb-throughput", "sglb_network_throughput", "sglb_network_throughput"))
GH_SOURCES = {field_name: measured.figure(name) for _, name, field_name in GH_FLAGS}

ERRORS = (ScenarioError, TopologyError, WorkloadError, SimulationError, GpuHoursError,
          FailureError)


def _size(text: str) -> float:
    """Bytes from ``1MiB``, ``256KiB``, ``1e6`` or ``4GB``."""
    units = {"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "KB": 1e3, "MB": 1e6, "GB": 1e9, "B": 1}
    t = text.strip().upper()
    for u, f in units.items():
        if t.endswith(u):
            try:
                return float(t[: -len(u)]) * f
            except ValueError:
                break
    try:
        return float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 1MiB, 256KiB, 1e6)") from None


def _scenario_from_args(a: argparse.Namespace) -> Scenario:
    if a.config:
        try:
            data = yaml.safe_load(Path(a.config).read_text())
        except (OSError, yaml.YAMLError) as e:
            raise ScenarioError(f"{a.config}: {e}") from None
        if not isinstance(data, dict):
            raise ScenarioError(f"{a.config}: expected a mapping at the top level")
        try:
            return Scenario(**{k: tuple(v) if k in ("policies", "events") else v
                               for k, v in data.items()})
        except TypeError as e:
            raise ScenarioError(f"{a.config}: {e}") from None
    if a.fabric:
        topo = {"kind": "fabric", "path": a.fabric}
    elif a.topology == "leaf-spine":
        topo = {"kind": "leaf-spine", "leaves": a.leaves, "spines": a.spines,
                "ports_per_leaf": a.ports_per_leaf, "rails": a.rails,
                "rail_optimised": not a.host_per_leaf, "nic_gbps": a.nic_gbps,
                "oversubscription": a.oversubscription, "parallel": a.parallel}
    else:
        topo = {"kind": "fat-tree", "k": a.k, "rails": a.rails,
                "rail_optimised": not a.host_per_leaf, "nic_gbps": a.nic_gbps,
                "oversubscription": a.oversubscription, "parallel": a.parallel}
        if a.pods:
            topo["pods"] = a.pods
        if a.ports_per_leaf_ft:
            topo["ports_per_leaf"] = a.ports_per_leaf_ft
    if a.workload == "all-to-all":
        wl = {"kind": a.workload, "group_size": a.group_size, "bytes": a.bytes, "qps": a.qps,
              "placement": a.placement, "pxn": not a.no_pxn}
    elif a.workload == "all-reduce":
        wl = {"kind": a.workload, "group_size": a.group_size, "bytes": a.bytes, "qps": a.qps,
              "placement": a.placement}
    elif a.workload == "permutation":
        wl = {"kind": a.workload, "bytes": a.bytes, "qps": a.qps}
    else:
        wl = {"kind": a.workload, "load": a.load, "duration": a.duration}
    failures = {"fail": a.fail, "degrade": [d.rsplit("=", 1) for d in a.degrade],
                "random_fail": a.random_fail, "random_degrade": a.random_degrade,
                "degrade_factor": a.degrade_factor, "nic": a.fail_nic}
    for d in failures["degrade"]:
        if len(d) != 2:
            raise ScenarioError(f"--degrade {'='.join(d)!r}: write it as cable=factor")
        try:
            d[1] = float(d[1])
        except ValueError:
            raise ScenarioError(f"--degrade {'='.join(map(str, d))!r}: factor is not a number") from None
    if not hasattr(a, "sglb_remote"):    # describe: topology and failures only
        return Scenario(topo, wl, ("ecmp",), failures, name=a.name)
    sglb = {"remote": a.sglb_remote, "profile_period": a.profile_period,
            "counter_interval": a.counter_interval, "profile_threshold": a.profile_threshold,
            "delivery": a.delivery, "feedback_period": a.feedback_period, "measure": a.measure,
            "bits": a.bits, "tie_tolerance": a.tie_tolerance,
            "flowlet_interval": a.flowlet_interval, "flowlet_fraction": a.flowlet_fraction}
    ecmp = {"hashing": a.ecmp_hashing, "hash_seeds": a.ecmp_seeds}
    spray = {"weighting": a.spray_weighting}
    recovery = {"host": a.host, "local_failover": a.local_failover,
                "remote_failover": a.remote_failover, "ecmp_routing_delay": a.ecmp_routing_delay,
                "reccl_detection": a.reccl_detection, "failstop_detection": a.failstop_detection,
                "restart": a.restart}
    return Scenario(topo, wl, tuple(a.policies.split(",")), failures, sglb, ecmp, spray,
                    tuple(a.fail_at), recovery, a.tolerance, a.name)


def cmd_run(a: argparse.Namespace) -> int:
    """Simulate one scenario over seeds; print and write the figures."""
    scn = _scenario_from_args(a)
    net = apply_failures(build_network(scn), scn.failures, np.random.default_rng(a.seed))
    print(f"fabric (seed {a.seed}): {json.dumps(net.summary())}")
    _print_figures_in_force(scn)
    t0 = time.perf_counter()
    summary, runs = run_scenario(scn, list(range(a.seed, a.seed + a.seeds)), workers=a.workers,
                                 progress=not a.quiet)
    summary["wall_seconds"] = time.perf_counter() - t0
    print(f"{scn.workload['kind']} over {len(runs)} seed(s), {runs[0]['flows']} flows:")
    for p, e in summary["policies"].items():
        c = e["completion"]
        line = f"  {p:6s} completion {c['mean'] * 1e3:9.3f} ms [{c['lo'] * 1e3:.3f}, {c['hi'] * 1e3:.3f}]"
        if "speedup_vs_ecmp" in e:
            s = e["speedup_vs_ecmp"]
            line += f"  speed-up vs ECMP {s['mean']:.3f} [{s['lo']:.3f}, {s['hi']:.3f}]"
        u = e["utilisation_percentiles"]
        line += f"  link util p50 {u['50']:.2f} p99 {u['99']:.2f}"
        if "inflation" in e:
            i, h = e["inflation"], e["healthy_completion"]
            line += (f"\n         without the failures {h['mean'] * 1e3:.3f} ms: inflation "
                     f"{i['mean']:.3f} [{i['lo']:.3f}, {i['hi']:.3f}]")
        print(line)
    if scn.events:
        print("what happened (first seed):")
        for p in scn.policies:
            for note in runs[0]["policies"][p]["notes"]:
                _print_note(p, note)
    if a.out:
        out = Path(a.out)
        summary["figures"] = simulator_figures(summary, runs, out)
        write_json({"summary": summary, "runs": runs if a.keep_runs else None},
                   out / "results.json")
        extra = ", throughput.png" if scn.events else ""
        print(f"wrote {out}/results.json, completion.png, speedup.png, utilisation.png{extra}")
    return 0


def _print_note(policy: str, note: dict) -> None:
    extra = {k: v for k, v in note.items() if k not in ("time", "event", "reactions")}
    tail = ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in extra.items())
    print(f"  {policy:6s} {note['time'] * 1e3:9.3f} ms  {note['event']}" + (f" ({tail})" if tail else ""))
    for r in note.get("reactions", []):
        print(f"  {'':6s} {'':12s}  -> {r}")


def _print_figures_in_force(scn: Scenario) -> None:
    """The SGLB timers and, with failures, the delays in force, each with its source."""
    from fabricsim.policies import make_policy

    if "sglb" in scn.policies:
        print(f"sglb: {make_policy('sglb', **scn.sglb).describe()}")
    if "ecmp" in scn.policies and scn.ecmp.get("hashing", "end-to-end") == "per-hop":
        print(f"ecmp: hashed per hop, {scn.ecmp.get('hash_seeds', 'same')} seed(s)")


def cmd_figures(a: argparse.Namespace) -> int:
    """Print every default figure with its source."""
    print(measured.table())
    return 0


def _gpu_params(a: argparse.Namespace) -> GpuHoursParams:
    interval = a.interval if a.interval in ("young", "daly") else float(a.interval)
    return GpuHoursParams(
        gpus=a.gpus, days=a.days, detection=a.detection, restart=a.restart,
        checkpoint=a.checkpoint, interval=interval, failover=a.failover, repair=a.repair * 3600,
        comm_fraction=a.comm_fraction, last_hop_share=a.last_hop_share,
        switch_share=a.switch_share, leaf_share=a.leaf_share, degraded=a.degraded,
        rate_uncertainty=not a.no_rate_uncertainty,
        reccl_network_throughput=a.reccl_network_throughput,
        sglb_network_throughput=a.sglb_network_throughput)


def _print_sources(params: GpuHoursParams) -> None:
    """Each assumption in force, with where its default comes from."""
    print("assumptions (value; default and its source):")
    for field_name, fig in GH_SOURCES.items():
        v = getattr(params, field_name)
        shown = v / 3600 if field_name == "repair" else v
        unit = "h" if field_name == "repair" else fig.unit
        mark = "" if v == fig.value else "   <- set for this run"
        print(f"  {field_name:26s} {shown:g} {unit}; {fig.kind}: {fig.source}{mark}")
    print("  failure counts             Llama 3 405B, 16,384 GPUs, 54 days (Meta 2024, "
          "Table 5): switch/cable 35, NIC 7, GPU 268, other 109; rates from their Gamma "
          f"posterior: {'yes' if params.rate_uncertainty else 'no'}")


def _saved(s: dict) -> str:
    return (f"saved {s['mean']:9,.0f} [{s['lo']:,.0f}, {s['hi']:,.0f}] "
            f"(95% of seeds {s['p2.5']:,.0f} to {s['p97.5']:,.0f})")


def cmd_gpu_hours(a: argparse.Namespace) -> int:
    """Monte Carlo of the GPU-hours model (and its sensitivity); print and write the figures."""
    params = _gpu_params(a)
    _print_sources(params)
    t0 = time.perf_counter()
    res = gpu_hours(params, a.seeds, a.seed, tuple(a.policies.split(",")))
    res["wall_seconds"] = time.perf_counter() - t0
    f, nf = res["failures_per_seed"], res["network_failures_per_seed"]
    print(f"{a.gpus} GPUs, {a.days:g} days, {a.seeds} seeds: {f['mean']:.1f} failures per run, "
          f"{nf['mean']:.1f} of them network ({res['wall_seconds']:.2f} s)")
    for p, e in res["policies"].items():
        g, r = e["gpu_hours_lost"], e["ettr"]
        line = (f"  {p:13s} lost {g['mean']:12,.0f} [{g['lo']:,.0f}, {g['hi']:,.0f}]"
                f"  ETTR {r['mean']:.4f}  stops {e['stops']['mean']:.1f}"
                f"  swaps {e['swaps']['mean']:.1f}")
        if "gpu_hours_saved" in e and p != "fail-stop":
            line += "  " + _saved(e["gpu_hours_saved"])
        print(line)
    out = Path(a.out) if a.out else None
    if out:
        res["figures"] = gpu_hours_figure(res, out)
        write_json(res, out / "gpu_hours.json")
        print(f"wrote {out}/gpu_hours.json, gpu_hours.png")
    if a.sensitivity:
        out = out or Path("results/gpu-hours")
        print(f"sensitivity ({a.sensitivity_seeds} seeds per point; saving of reccl+sglb, "
              "mean [95% CI] and 95% of seeds; reccl and sglb-reroute means):")
        sens = sensitivity(params, a.sensitivity_seeds, a.seed,
                           progress=None if a.quiet else
                           (lambda msg: print(f"  ... {msg}", file=sys.stderr)))
        for sw in sens["sweeps"].values():
            print(f"  {sw['label']} (default {sw['default']}):")
            for row in sw["rows"]:
                sv = row["saved"]
                print(f"    {str(row['value']):>20s}  {_saved(sv['reccl+sglb'])}  reccl "
                      f"{sv['reccl']['mean']:,.0f}  sglb {sv['sglb-reroute']['mean']:,.0f}")
        for name, sv in sens["corners"].items():
            print(f"  {name}: {_saved(sv['reccl+sglb'])}")
        r = sens["range"]
        print(f"  range of the mean saving over every variation: {r['min']:,.0f} to "
              f"{r['max']:,.0f} GPU-hours")
        sens["figures"] = sensitivity_figure(sens, out)
        write_json(sens, out / "gpu_hours_sensitivity.json")
        print(f"wrote {out}/gpu_hours_sensitivity.json, gpu_hours_sensitivity.png")
    return 0


def cmd_describe(a: argparse.Namespace) -> int:
    """Print a topology's summary."""
    scn = _scenario_from_args(a)
    net = apply_failures(build_network(scn), scn.failures, np.random.default_rng(0))
    print(json.dumps(net.summary(), indent=1))
    return 0


def _topology_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("topology")
    g.add_argument("--fabric", help="fabric description file (the testbed's YAML/JSON)")
    g.add_argument("--topology", choices=("leaf-spine", "fat-tree"), default="leaf-spine")
    g.add_argument("--leaves", type=int, default=8)
    g.add_argument("--spines", type=int, default=4)
    g.add_argument("--ports-per-leaf", type=int, default=8, help="NIC ports per leaf (leaf-spine)")
    g.add_argument("--k", type=int, default=8, help="fat-tree radix")
    g.add_argument("--pods", type=int, default=0, help="fat-tree pods (default k)")
    g.add_argument("--ports-per-edge", dest="ports_per_leaf_ft", type=int, default=0,
                   help="fat-tree NIC ports per edge switch (default k/2)")
    g.add_argument("--rails", type=int, default=1, help="NICs (and GPUs) per host")
    g.add_argument("--host-per-leaf", action="store_true",
                   help="all NICs of a host on one leaf instead of rail-optimised")
    g.add_argument("--nic-gbps", type=float, default=400.0)
    g.add_argument("--oversubscription", type=float, default=1.0)
    g.add_argument("--parallel", type=int, default=1, help="parallel cables per switch pair")
    f = p.add_argument_group("failures")
    f.add_argument("--fail", action="append", default=[], metavar="A-B[:K]",
                   help="take a cable down (repeatable)")
    f.add_argument("--degrade", action="append", default=[], metavar="A-B[:K]=FACTOR",
                   help="run a cable at a fraction of its capacity (repeatable)")
    f.add_argument("--random-fail", type=int, default=0, help="random fabric cables down per seed")
    f.add_argument("--random-degrade", type=int, default=0, help="random reduced cables per seed")
    f.add_argument("--degrade-factor", type=float, default=0.5)
    f.add_argument("--fail-nic", action="append", default=[], metavar="HOST/NIC",
                   help="take a NIC's last-hop link down; its traffic fails over to the "
                        "host's other NICs as under ReCCL (repeatable)")


def build_parser() -> argparse.ArgumentParser:
    """The ``fabric-sim`` argument parser."""
    ap = argparse.ArgumentParser(prog="fabric-sim", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="simulate collectives under ECMP, SGLB and spraying")
    run.add_argument("--config", help="scenario YAML (instead of the options below)")
    _topology_args(run)
    w = run.add_argument_group("workload")
    w.add_argument("--workload", choices=("all-to-all", "all-reduce", "permutation", "web-search"),
                   default="all-to-all")
    w.add_argument("--group-size", type=int, default=16, help="GPUs per collective group")
    w.add_argument("--bytes", type=_size, default=_size("1MiB"),
                   help="all-to-all: per GPU pair; all-reduce: per GPU; permutation: per NIC")
    w.add_argument("--qps", type=int, default=4, help="flows (queue pairs) per connection")
    w.add_argument("--placement", choices=("hosts", "random", "contiguous"), default="hosts")
    w.add_argument("--no-pxn", action="store_true", help="send from the source GPU's own NIC")
    w.add_argument("--load", type=float, default=0.5, help="web-search offered load")
    w.add_argument("--duration", type=float, default=0.01, help="web-search arrivals window (s)")
    s = run.add_argument_group("SGLB (defaults: as built; fabric-sim figures gives sources)")
    s.add_argument("--sglb-remote", choices=("syncmesh", "inband"), default="syncmesh",
                   help="remote congestion from SyncMesh's profiles (as built) or in-band feedback")
    s.add_argument("--profile-period", type=float, default=measured.value("syncmesh_profile_period"),
                   help="SyncMesh profile period (s)")
    s.add_argument("--counter-interval", type=float,
                   default=measured.value("syncmesh_counter_interval"),
                   help="SyncMesh counter poll interval (s)")
    s.add_argument("--profile-threshold", type=int,
                   default=int(measured.value("syncmesh_profile_threshold")),
                   help="early profile when a level moves by more than this")
    s.add_argument("--delivery", type=float, default=measured.value("syncmesh_agreement"),
                   help="profile delivery time (s)")
    s.add_argument("--feedback-period", type=float,
                   default=measured.value("inband_feedback_period"),
                   help="in-band feedback period and age (s)")
    s.add_argument("--measure", choices=("carried", "offered"), default="carried",
                   help="levels from bytes sent (as built) or from NIC-bound demand")
    s.add_argument("--bits", type=int, default=int(measured.value("congestion_bits")),
                   help="congestion quantisation bits")
    s.add_argument("--tie-tolerance", type=int, default=int(measured.value("tie_tolerance")))
    s.add_argument("--flowlet-interval", type=float, default=measured.value("flowlet_interval"))
    s.add_argument("--flowlet-fraction", type=float, default=measured.value("flowlet_fraction"))
    e = run.add_argument_group("ECMP and spraying")
    e.add_argument("--ecmp-hashing", choices=("end-to-end", "per-hop"), default="end-to-end",
                   help="uniform over paths, or every switch hashes (can polarise)")
    e.add_argument("--ecmp-seeds", choices=("same", "per-switch"), default="same",
                   help="per-hop hashing: one seed for all switches or one each")
    e.add_argument("--spray-weighting", choices=("capacity", "equal"), default="capacity")
    d = run.add_argument_group("failures during the run")
    d.add_argument("--fail-at", action="append", default=[], metavar="TIME:KIND:TARGET",
                   help="e.g. 1ms:link:leaf0-spine1, 2ms:nic:h0/nic3, 1ms:switch:spine2 "
                        "(repeatable); the report adds inflation and throughput.png")
    d.add_argument("--host", choices=("reccl", "fail-stop"), default="reccl",
                   help="what the host library does when a NIC dies")
    for flag, name in (("--local-failover", "local_failover"),
                       ("--remote-failover", "remote_failover"),
                       ("--ecmp-routing-delay", "ecmp_routing_delay"),
                       ("--reccl-detection", "reccl_detect_link_down"),
                       ("--failstop-detection", "failstop_detect"), ("--restart", "restart")):
        f = measured.figure(name)
        d.add_argument(flag, type=float, default=f.value,
                       help=f"{f.what} (s; default {f.cite()})")
    run.add_argument("--policies", default="ecmp,sglb,spray")
    run.add_argument("--seeds", type=int, default=5)
    run.add_argument("--seed", type=int, default=0, help="first seed")
    run.add_argument("--workers", type=int, default=1, help="parallel processes over seeds")
    run.add_argument("--tolerance", type=float, default=1e-2,
                     help="bound on each flow's completion-time error, relative to its own "
                          "running time (0: exact)")
    run.add_argument("--name", default="fabric-sim")
    run.add_argument("--out", help="directory for results.json and PNG figures")
    run.add_argument("--keep-runs", action="store_true", help="store per-seed runs in the JSON")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.set_defaults(func=cmd_run)

    gh = sub.add_parser("gpu-hours", help="GPU-hours lost per failure-recovery policy")
    gh.add_argument("--gpus", type=int, default=16384)
    gh.add_argument("--days", type=float, default=54.0)
    gh.add_argument("--seeds", type=int, default=1000)
    gh.add_argument("--seed", type=int, default=0)
    for flag, name, field_name in GH_FLAGS:
        fig = measured.figure(name)
        default = fig.value / 3600 if field_name == "repair" else fig.value
        gh.add_argument(flag, dest=field_name, type=float, default=default,
                        help=f"{fig.what} (default {fig.cite()})")
    gh.add_argument("--interval", default="daly", help="checkpoint interval: young, daly or s")
    gh.add_argument("--degraded", choices=("swap-at-checkpoint", "until-repair"),
                    default="swap-at-checkpoint", help="how a degraded host is replaced")
    gh.add_argument("--no-rate-uncertainty", action="store_true",
                    help="use the observed rates as exact instead of their Gamma posterior")
    gh.add_argument("--policies", default=",".join(GH_POLICIES))
    gh.add_argument("--sensitivity", action="store_true",
                    help="also sweep every assumption; prints a table and writes "
                         "gpu_hours_sensitivity.png (in --out, default results/gpu-hours)")
    gh.add_argument("--sensitivity-seeds", type=int, default=300)
    gh.add_argument("--quiet", action="store_true", help="no progress lines")
    gh.add_argument("--out", help="directory for gpu_hours.json and gpu_hours.png")
    gh.set_defaults(func=cmd_gpu_hours)

    fi = sub.add_parser("figures", help="every default figure with its source")
    fi.set_defaults(func=cmd_figures)

    de = sub.add_parser("describe", help="print a topology's summary")
    de.add_argument("--config", help="scenario YAML")
    _topology_args(de)
    de.set_defaults(func=cmd_describe, workload="permutation", bytes=1.0, qps=1, policies="ecmp",
                    tolerance=1e-2, name="describe")
    return ap


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``fabric-sim``."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ERRORS as e:
        print(f"fabric-sim: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
