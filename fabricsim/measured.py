"""Every default figure of the simulator and the GPU-hours model, with what it is and its source.

One table, one place: the policies' timers, the failover delays and the
GPU-hours assumptions take their defaults from here, the command line prints
the source next to each value it uses (``fabric-sim figures`` lists them all),
and a figure re-measured elsewhere in the project is updated here only.

``kind`` says how much to trust a figure:

* ``as built``: a setting of the project's own code (a default, a constant);
* ``measured``: measured by a project benchmark (named in ``source``) on the
  2-core development machine with software switches, so an upper bound for
  hardware;
* ``published``: from a publication (cited);
* ``assumed``: a choice nothing measured yet; the GPU-hours sensitivity
  sweeps these.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    """One default: its value, unit, meaning and where it comes from."""

    value: float
    unit: str
    what: str
    source: str
    kind: str

    def cite(self) -> str:
        """``value unit (kind: source)``, for reports."""
        return f"{self.value:g} {self.unit} ({self.kind}: {self.source})"


_TB_FAILOVER = "bench/bench_testbed_failover.py, 5 cuts on the 4x2 testbed, median"
_RECCL_FAILOVER = "bench/bench_reccl_failover.py, 2 hosts x 2 NICs"

FIGURES: dict[str, Figure] = {
    # -- SGLB as built: SyncMesh's congestion profiles ------------------------------
    "syncmesh_profile_period": Figure(
        1.0, "s", "SyncMesh sends each spine's congestion profile at least this often",
        "syncmesh run --profile-period default (docs/syncmesh.md)", "as built"),
    "syncmesh_counter_interval": Figure(
        0.01, "s", "SyncMesh polls a spine's port counters this often; utilisation is the rate "
        "over it (leaves every 0.25 s)", "syncmesh run --counter-interval default "
        "(docs/syncmesh.md)", "as built"),
    "syncmesh_profile_threshold": Figure(
        1, "levels", "a profile goes out early when a level moved by more than this",
        "syncmesh run --profile-threshold as the testbed runs it (docs/syncmesh.md)", "as built"),
    "syncmesh_agreement": Figure(
        0.016, "s", "cut to every SyncMesh daemon holding the same link view (control-plane "
        "routing repair; also used as a profile's delivery time), median; p99 145 ms",
        "bench/bench_syncmesh_testbed.py, 40 cuts on the 4x2 testbed, one daemon process per "
        "switch", "measured"),
    # -- SGLB data plane ----------------------------------------------------------------
    "dre_period": Figure(
        64e-6, "s", "DRE period T: the egress rate estimator halves every T "
                    "(2^DRE_PERIOD_SHIFT us)", "p4src/include/constants.p4", "as built"),
    "congestion_bits": Figure(
        3, "bits", "congestion level width (0 idle .. 7 saturated)",
        "p4src/include/constants.p4 QMAX; SyncMesh level_bits", "as built"),
    "tie_tolerance": Figure(
        1, "levels", "paths within this many levels of the best one tie (split by capacity)",
        "controller/syncmesh/sglb_mapping.py default", "as built"),
    "inband_feedback_period": Figure(
        50e-6, "s", "in-band congestion feedback: refresh period and age of the remote levels",
        "bench/bench_testbed_feedback.py: new flowlets move 22.8 ms after a spine link "
        "saturates, 0.7 of the testbed's DRE period (32.8 ms) plus a few probe intervals "
        "(docs/sglb.md); scaled to the 64 us DRE period of a 400G fabric plus round trips",
        "measured"),
    "flowlet_interval": Figure(
        100e-6, "s", "how often the simulator lets running flows start a new flowlet",
        "simulator abstraction of flowlet gaps", "assumed"),
    "flowlet_fraction": Figure(
        0.25, "", "share of running flows that start a new flowlet at each check",
        "simulator abstraction of flowlet gaps", "assumed"),
    # -- failover delays ---------------------------------------------------------------
    "local_failover": Figure(
        0.0101, "s", "a leaf moves flows off its own dead uplink (port-status in the data "
        "plane); SGLB and the ECMP baseline alike", _TB_FAILOVER, "measured"),
    "remote_failover": Figure(
        0.0046, "s", "a leaf moves flows off a path whose spine-to-leaf link died, on the "
        "spine's in-band failure notice (SGLB)", _TB_FAILOVER, "measured"),
    "ecmp_routing_delay": Figure(
        0.016, "s", "the ECMP baseline learns of a remote dead link from the control plane "
        "(SyncMesh agreement) and rehashes", "bench/bench_syncmesh_testbed.py, 40 cuts, median",
        "measured"),
    "reccl_detect_link_down": Figure(
        0.0114, "s", "ReCCL: NIC or last-hop link down (carrier loss) to the last rank failing "
        "over (median of 4 runs; detection 0.3-3.5 ms, last rank 1.3-82 ms)", _RECCL_FAILOVER,
        "measured"),
    "reccl_detect_silent": Figure(
        1.11, "s", "ReCCL: a silent dead path (no carrier event) to failover by the liveness "
        "rule (1.03-1.19 s)", _RECCL_FAILOVER, "measured"),
    "failstop_detect": Figure(
        0.017, "s", "fail-stop mode: link down to the collective aborting on the last rank "
        "(1.7-33 ms)", _RECCL_FAILOVER, "measured"),
    # -- GPU-hours model -------------------------------------------------------------
    "restart": Figure(
        300.0, "s", "reschedule, re-initialise and load the last checkpoint after a stop",
        "no measurement; sensitivity sweeps 30-1,800 s", "assumed"),
    "detection": Figure(
        120.0, "s", "a fail-stop job notices a failure (collective timeout)",
        "no measurement; NCCL's watchdog defaults to minutes; sensitivity sweeps 10-600 s",
        "assumed"),
    "checkpoint_write": Figure(
        30.0, "s", "job paused writing one checkpoint",
        "no measurement; sensitivity sweeps 10-300 s", "assumed"),
    "failover_pause": Figure(
        5.0, "s", "job-level pause while ReCCL or SGLB fails over (collectives in flight "
        "retried), far above the measured ms", "conservative choice over "
        "reccl_detect_silent", "assumed"),
    "repair": Figure(
        8 * 3600.0, "s", "a degraded part (NIC, link) is repaired while the job runs, unless "
        "a restart or the swap policy replaces the host first", "no measurement", "assumed"),
    "comm_fraction": Figure(
        0.3, "", "share of a training step spent in exposed (not overlapped) communication",
        "no measurement", "assumed"),
    "reccl_network_throughput": Figure(
        0.875, "", "collective throughput with one NIC of a host down (7 of 8 rails)",
        "fabric-sim run --fail-nic (ring all-reduce, 1,024 GPUs, docs/fabricsim.md)",
        "measured"),
    "sglb_network_throughput": Figure(
        0.97, "", "collective throughput with one fabric link down, SGLB rerouting",
        "conservative: bench/bench_fabricsim_failures.py measures 1.00 [0.997, 1.004] for the "
        "1,024-GPU all-to-all with one of 512 fabric cables down", "assumed"),
    "last_hop_share": Figure(
        0.5, "", "share of switch/cable interruptions that are host last hops (NIC-leaf cable)",
        "no published split; half the cables of a non-blocking rail-optimised 2-tier fabric "
        "are host-to-leaf; sensitivity sweeps 0-1", "assumed"),
    "switch_share": Figure(
        0.25, "", "share of switch/cable interruptions that are whole switches (not cables)",
        "no published split for Llama 3; sensitivity sweeps 0-0.5", "assumed"),
    "leaf_share_of_switches": Figure(
        0.94, "", "share of switch failures that hit a leaf (ToR) rather than a spine",
        "switch count of the 16,384-GPU leaf-spine (512 leaves, 32 spines), failures "
        "proportional to switches", "assumed"),
}


def figure(name: str) -> Figure:
    """The figure called ``name``."""
    return FIGURES[name]


def value(name: str) -> float:
    """The value of the figure called ``name``."""
    return FIGURES[name].value


def table() -> str:
    """Every figure as a plain-text table (for ``fabric-sim figures``)."""
    width = max(len(n) for n in FIGURES)
    lines = [f"{'name':{width}s}  {'value':>10s}  {'unit':6s}  {'kind':9s}  what; source"]
    for name, f in FIGURES.items():
        lines.append(f"{name:{width}s}  {f.value:>10g}  {f.unit:6s}  {f.kind:9s}  "
                     f"{f.what}; {f.source}")
    return "\n".join(lines)
