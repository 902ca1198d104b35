"""GPU-hours model: a long training job under component failures, per recovery policy.

Failures of each component class arrive as Poisson processes whose rates
come from published statistics, scaled linearly with the number of GPUs. A
*stopping* failure costs detection plus restart time and the work done since
the last checkpoint (fail-stop with checkpoint restart). Under ReCCL a NIC or
host last-hop link failure does not stop the job: it pauses for the failover
and continues at a degraded throughput until the part is repaired or the job
next restarts (when the scheduler swaps the host); under SGLB rerouting a
fabric link failure does the same. Checkpoints are taken every
Young/Daly interval for the policy's own stopping-failure rate.

Reference statistics (Llama 3 405B pre-training, 16,384 H100 GPUs, 54 days,
419 unexpected interruptions; "The Llama 3 Herd of Models", Meta, 2024,
Table 5), grouped into our component classes: see ``LLAMA3_COUNTS``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from fabricsim.stats import mean_ci

REF_GPUS = 16_384
REF_DAYS = 54.0
# Interruption counts from Llama 3 Table 5, grouped into the model's classes.
LLAMA3_COUNTS = {
    # Network switch/cable: 35 (8.4%), split below into fabric links and host last hops.
    "switch_cable": 35,
    # NIC: 7 (1.7%).
    "nic": 7,
    # Faulty GPU 148, GPU HBM3 memory 72, GPU SRAM memory 19, GPU system processor 17,
    # silent data corruption 6, GPU thermal interface + sensor 6.
    "gpu": 268,
    # Software bug 54, host maintenance 32, NCCL watchdog timeouts 7, SSD 3, power supply 3,
    # server chassis 2, IO expansion board 2, dependency 2, CPU 2, system memory 2.
    "other": 109,
}
CLASSES = ("fabric_link", "last_hop", "nic", "gpu", "other")
POLICIES = {
    "fail-stop": frozenset(),
    "reccl": frozenset({"nic", "last_hop"}),
    "sglb-reroute": frozenset({"fabric_link"}),
    "reccl+sglb": frozenset({"nic", "last_hop", "fabric_link"}),
}
"""Failure classes each policy survives without stopping the job."""


class GpuHoursError(ValueError):
    """Inconsistent GPU-hours model parameters."""


@dataclass(frozen=True)
class GpuHoursParams:
    """A training job and its failure and recovery parameters (times in seconds)."""

    gpus: int = REF_GPUS
    """GPUs in the job; failure rates scale linearly with it."""
    days: float = REF_DAYS
    """Wall-clock length of the job window."""
    counts: dict[str, float] = field(default_factory=lambda: dict(LLAMA3_COUNTS))
    """Reference interruption counts per class over ``ref_gpus`` x ``ref_days``."""
    ref_gpus: int = REF_GPUS
    ref_days: float = REF_DAYS
    last_hop_share: float = 0.5
    """Share of switch/cable interruptions that are host-to-leaf (last-hop) links (assumed)."""
    detection: float = 120.0
    """Time for a fail-stop library to notice a failure (a collective timeout)."""
    restart: float = 300.0
    """Time to reschedule, re-initialise and load the last checkpoint."""
    checkpoint: float = 30.0
    """Time the job is paused writing one checkpoint."""
    interval: str | float = "daly"
    """Checkpoint interval: ``young``, ``daly`` or a number of seconds."""
    failover: float = 5.0
    """Pause while ReCCL or SGLB fails over (instead of stopping)."""
    repair: float = 8 * 3600.0
    """Time until a failed NIC or link is repaired while the job runs degraded."""
    comm_fraction: float = 0.3
    """Share of a training step spent in exposed (not overlapped) communication."""
    reccl_network_throughput: float = 0.875
    """Collective throughput while one host runs on one NIC fewer (simulator: 7 of 8 rails)."""
    sglb_network_throughput: float = 0.97
    """Collective throughput while one fabric link is down and SGLB reroutes around it."""

    def job_throughput(self, network_throughput: float) -> float:
        """Training throughput when collectives run at ``network_throughput`` of normal."""
        if network_throughput <= 0:
            return 0.0
        return 1.0 / ((1 - self.comm_fraction) + self.comm_fraction / network_throughput)

    def __post_init__(self) -> None:
        if isinstance(self.gpus, bool) or not isinstance(self.gpus, int) or self.gpus < 1:
            raise GpuHoursError(f"gpus must be a positive integer, got {self.gpus!r}")
        for name in ("days", "ref_days"):
            if not getattr(self, name) > 0:
                raise GpuHoursError(f"{name} must be positive, got {getattr(self, name)!r}")
        if self.ref_gpus < 1:
            raise GpuHoursError("ref_gpus must be positive")
        for name in ("detection", "restart", "failover"):
            if getattr(self, name) < 0:
                raise GpuHoursError(f"{name} must be non-negative, got {getattr(self, name)!r}")
        if not self.checkpoint > 0:
            raise GpuHoursError(f"checkpoint must be positive, got {self.checkpoint!r}")
        if not self.repair > 0:
            raise GpuHoursError(f"repair must be positive, got {self.repair!r}")
        for name in ("reccl_network_throughput", "sglb_network_throughput", "last_hop_share",
                     "comm_fraction"):
            v = getattr(self, name)
            if not 0 <= v <= 1:
                raise GpuHoursError(f"{name} must be within 0..1, got {v!r}")
        unknown = set(self.counts) - set(LLAMA3_COUNTS)
        if unknown:
            raise GpuHoursError(f"unknown failure class(es) {sorted(unknown)} "
                                f"(known: {', '.join(LLAMA3_COUNTS)})")
        if any(v < 0 for v in self.counts.values()):
            raise GpuHoursError("failure counts must be non-negative")
        if isinstance(self.interval, str):
            if self.interval not in ("young", "daly"):
                raise GpuHoursError(f"interval must be 'young', 'daly' or seconds, "
                                    f"got {self.interval!r}")
        elif not self.interval > 0:
            raise GpuHoursError(f"checkpoint interval must be positive, got {self.interval!r}")

    def rates(self) -> dict[str, float]:
        """Failures per second for this job, by class."""
        scale = self.gpus / (self.ref_gpus * self.ref_days * 86400.0)
        c = {k: float(self.counts.get(k, 0)) for k in LLAMA3_COUNTS}
        return {
            "fabric_link": c["switch_cable"] * (1 - self.last_hop_share) * scale,
            "last_hop": c["switch_cable"] * self.last_hop_share * scale,
            "nic": c["nic"] * scale,
            "gpu": c["gpu"] * scale,
            "other": c["other"] * scale,
        }


def checkpoint_interval(checkpoint: float, mtbf: float, rule: str | float = "daly") -> float:
    """Checkpoint interval: Young (1974) sqrt(2 C M), or Daly (2006) higher-order estimate."""
    if not isinstance(rule, str):
        return float(rule)
    if not math.isfinite(mtbf):
        return math.inf
    young = math.sqrt(2 * checkpoint * mtbf)
    if rule == "young":
        return young
    if checkpoint >= 2 * mtbf:
        return mtbf
    r = checkpoint / (2 * mtbf)
    return young * (1 + math.sqrt(r) / 3 + r / 9) - checkpoint


@dataclass(frozen=True, eq=False)
class Failures:
    """Failure events of many seeds: (seeds, K) times and classes, padded with inf / -1."""

    time: np.ndarray
    cls: np.ndarray

    @property
    def seeds(self) -> int:
        """Number of seeds."""
        return self.time.shape[0]


def draw_failures(params: GpuHoursParams, seeds: int, seed: int = 0) -> Failures:
    """Poisson failure events of every class over the job window, for ``seeds`` runs."""
    if seeds < 1:
        raise GpuHoursError("seeds must be at least 1")
    rng = np.random.default_rng(seed)
    horizon = params.days * 86400.0
    rates = params.rates()
    counts = np.stack([rng.poisson(rates[c] * horizon, size=seeds) for c in CLASSES], axis=1)
    total = counts.sum(axis=1)
    k = max(int(total.max()), 1)
    time = np.full((seeds, k), np.inf)
    cls = np.full((seeds, k), -1, np.int64)
    col = np.arange(k)[None, :]
    valid = col < total[:, None]
    time[valid] = rng.random(int(total.sum())) * horizon
    bounds = np.cumsum(counts, axis=1)
    cls[valid] = (col[None, :, :] >= bounds[:, :, None]).sum(axis=1)[valid]
    order = np.argsort(time, axis=1)
    return Failures(np.take_along_axis(time, order, 1), np.take_along_axis(cls, order, 1))


def failures_from_events(events: list[tuple[float, str]]) -> Failures:
    """One seed's failures from explicit ``(time_s, class)`` events (for checks by hand)."""
    for t, c in events:
        if c not in CLASSES:
            raise GpuHoursError(f"unknown failure class {c!r} (known: {', '.join(CLASSES)})")
        if t < 0:
            raise GpuHoursError(f"failure time must be non-negative, got {t}")
    ev = sorted(events)
    k = max(len(ev), 1)
    time = np.full((1, k), np.inf)
    cls = np.full((1, k), -1, np.int64)
    for i, (t, c) in enumerate(ev):
        time[0, i] = t
        cls[0, i] = CLASSES.index(c)
    return Failures(time, cls)


def run_policy(params: GpuHoursParams, fails: Failures, policy: str) -> dict[str, np.ndarray]:
    """Per-seed accounting of one policy: productive time, losses and ETTR."""
    if policy not in POLICIES:
        raise GpuHoursError(f"unknown policy {policy!r} (choose from {', '.join(POLICIES)})")
    survives = np.array([c in POLICIES[policy] for c in CLASSES])
    horizon = params.days * 86400.0
    rates = params.rates()
    stop_rate = sum(r for c, r in rates.items() if c not in POLICIES[policy])
    tau = checkpoint_interval(params.checkpoint, 1 / stop_rate if stop_rate else math.inf,
                              params.interval)
    cycle = tau + params.checkpoint
    down = params.detection + params.restart
    valid = fails.cls >= 0
    stops = valid & ~survives[np.maximum(fails.cls, 0)]
    degr = valid & survives[np.maximum(fails.cls, 0)]
    n = fails.seeds
    # Walk the stopping failures in time order, all seeds at once.
    stop_t = np.where(stops, fails.time, np.inf)
    stop_t.sort(axis=1)
    up_at = np.zeros(n)
    work = np.zeros(n)
    lost = np.zeros(n)
    ckpt = np.zeros(n)
    downtime = np.zeros(n)
    restart_at = np.full(stop_t.shape, np.inf)

    def run_segment(length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        cycles = np.floor(length / cycle) if math.isfinite(cycle) else np.zeros_like(length)
        return cycles, length - cycles * cycle

    for k in range(stop_t.shape[1]):
        t = stop_t[:, k]
        hit = np.isfinite(t) & (t < horizon)
        running = hit & (t >= up_at)
        seg = np.where(running, t - up_at, 0.0)
        cycles, rest = run_segment(seg)
        work += np.where(running, cycles * tau, 0.0)
        ckpt += np.where(running, cycles * params.checkpoint, 0.0)
        lost += np.where(running, rest, 0.0)
        new_up = np.where(hit, np.maximum(up_at, t + down), up_at)
        # Down from the failure (or from the restart it extends) until the new start.
        since = np.minimum(np.where(running, t, up_at), horizon)
        downtime += np.where(hit, np.minimum(new_up, horizon) - since, 0.0)
        up_at = new_up
        restart_at[:, k] = np.where(hit, t, np.inf)
    # The last segment runs to the end of the window; its work counts (a final checkpoint).
    seg = np.maximum(horizon - up_at, 0.0)
    cycles, rest = run_segment(seg)
    work += cycles * tau + rest
    ckpt += cycles * params.checkpoint
    # Degraded periods: from the failure until repair, the next restart or the window's end.
    deg_t = np.where(degr, fails.time, np.inf)
    nxt = np.full(deg_t.shape, np.inf)
    for s in range(n):
        idx = np.searchsorted(restart_at[s], deg_t[s], side="right")
        ok = idx < restart_at.shape[1]
        nxt[s, ok] = restart_at[s, idx[ok]]
    end = np.minimum(np.minimum(deg_t + params.repair, nxt), horizon)
    dur = np.where(np.isfinite(deg_t), np.maximum(end - deg_t, 0.0), 0.0)
    slow = np.where(fails.cls == CLASSES.index("fabric_link"),
                    1 - params.job_throughput(params.sglb_network_throughput),
                    1 - params.job_throughput(params.reccl_network_throughput))
    degraded = (dur * slow).sum(axis=1)
    pauses = np.where(np.isfinite(deg_t), params.failover, 0.0).sum(axis=1)
    productive = np.maximum(work - degraded - pauses, 0.0)
    return {
        "productive": productive,
        "ettr": productive / horizon,
        "gpu_hours_lost": (horizon - productive) * params.gpus / 3600.0,
        "lost_work_h": lost / 3600.0,
        "downtime_h": downtime / 3600.0,
        "checkpoint_h": ckpt / 3600.0,
        "degraded_h": degraded / 3600.0,
        "failover_h": pauses / 3600.0,
        "stops": (stops & (fails.time < horizon)).sum(axis=1).astype(float),
        "interval_s": np.full(n, tau),
    }


def gpu_hours(params: GpuHoursParams, seeds: int = 1000, seed: int = 0,
              policies: tuple[str, ...] = tuple(POLICIES)) -> dict:
    """Monte Carlo over seeds: GPU-hours lost and saved per policy, ETTR, with 95% CIs."""
    fails = draw_failures(params, seeds, seed)
    per = {p: run_policy(params, fails, p) for p in policies}
    base = per.get("fail-stop")
    out: dict = {"params": dict(params.__dict__), "seeds": seeds,
                 "rates_per_day": {k: v * 86400 for k, v in params.rates().items()},
                 "failures_per_seed": mean_ci((fails.cls >= 0).sum(axis=1)),
                 "policies": {}}
    for p, r in per.items():
        entry = {k: mean_ci(v) for k, v in r.items() if k != "productive"}
        if base is not None:
            entry["gpu_hours_saved"] = mean_ci(base["gpu_hours_lost"] - r["gpu_hours_lost"])
        out["policies"][p] = entry
    return out
