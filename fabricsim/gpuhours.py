"""GPU-hours model: a long training job under component failures, per recovery policy.

Failures of each component class arrive as Poisson processes whose rates come
from published counts, scaled linearly with the number of GPUs. The rates are
themselves uncertain (42 network interruptions is a small sample): every
seed draws them from the Gamma posterior of the observed counts (Jeffreys
prior: rate ~ Gamma(n + 1/2, exposure)), so the spread over seeds holds both
that uncertainty and the Poisson noise of one job.

A *stopping* failure costs detection plus restart time and the work done since
the last checkpoint (fail-stop with checkpoint restart); a failure while the
job is restarting restarts the restart (no work is lost twice, nothing runs
degraded). Under ReCCL a NIC or last-hop failure does not stop the job, under
SGLB rerouting a fabric link or spine failure does not: the job pauses for the
failover and runs degraded until the part is replaced: by default the host is
swapped at the next checkpoint (a planned restart: ``restart`` seconds of
downtime, no work lost), or, with ``degraded="until-repair"``, it runs
degraded until the repair; an earlier stop ends the degradation too (the
scheduler swaps the host). The job is synchronous, so overlapping degraded
periods cost the worst of them, never their sum. A leaf-switch failure is not
survivable by NIC failover (in a rail-optimised fabric it takes one rail from
every host of its group at once) and stops the job under every policy.
Checkpoints are taken every Young/Daly interval for the policy's own rate of
unplanned stops, or at a fixed interval.

Reference statistics (Llama 3 405B pre-training, 16,384 H100 GPUs, 54 days,
419 unexpected interruptions; "The Llama 3 Herd of Models", Meta, 2024,
Table 5), grouped into our classes: see ``LLAMA3_COUNTS``. Every other default
comes from ``fabricsim.measured`` with its source.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from fabricsim.measured import value
from fabricsim.stats import mean_ci

REF_GPUS = 16_384
REF_DAYS = 54.0
# Interruption counts from Llama 3 Table 5, grouped into the model's classes.
LLAMA3_COUNTS = {
    # Network switch/cable: 35 (8.4%), split below into switches (leaf, spine) and cables
    # (host last hops, fabric links): the report does not split them.
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
CLASSES = ("fabric_link", "last_hop", "nic", "leaf_switch", "spine_switch", "gpu", "other")
NETWORK = ("fabric_link", "last_hop", "nic", "leaf_switch", "spine_switch")
POLICIES = {
    "fail-stop": frozenset(),
    "reccl": frozenset({"nic", "last_hop"}),
    "sglb-reroute": frozenset({"fabric_link", "spine_switch"}),
    "reccl+sglb": frozenset({"nic", "last_hop", "fabric_link", "spine_switch"}),
}
"""Failure classes each policy survives without stopping the job (leaf switches: none)."""
DEGRADED = ("swap-at-checkpoint", "until-repair")


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
    """Observed interruption counts per class over ``ref_gpus`` x ``ref_days``."""
    ref_gpus: int = REF_GPUS
    ref_days: float = REF_DAYS
    rate_uncertainty: bool = True
    """Draw each seed's rates from the Gamma posterior of the counts (else use n / exposure)."""
    last_hop_share: float = value("last_hop_share")
    """Share of switch/cable *cable* interruptions that are host-to-leaf (last-hop) cables."""
    switch_share: float = value("switch_share")
    """Share of switch/cable interruptions that are whole switches."""
    leaf_share: float = value("leaf_share_of_switches")
    """Share of switch interruptions that hit a leaf (ToR) rather than a spine."""
    detection: float = value("detection")
    """Time for a fail-stop job to notice a failure (a collective timeout)."""
    restart: float = value("restart")
    """Time to reschedule, re-initialise and load the last checkpoint."""
    checkpoint: float = value("checkpoint_write")
    """Time the job is paused writing one checkpoint."""
    interval: str | float = "daly"
    """Checkpoint interval: ``young``, ``daly`` or a number of seconds."""
    failover: float = value("failover_pause")
    """Pause while ReCCL or SGLB fails over (instead of stopping)."""
    degraded: str = "swap-at-checkpoint"
    """How a degraded host ends: ``swap-at-checkpoint`` (planned restart at the next
    checkpoint) or ``until-repair``; either way an earlier stop ends it."""
    repair: float = value("repair")
    """Time until a failed NIC or link is repaired while the job runs degraded."""
    comm_fraction: float = value("comm_fraction")
    """Share of a training step spent in exposed (not overlapped) communication."""
    reccl_network_throughput: float = value("reccl_network_throughput")
    """Collective throughput while one host runs on one NIC fewer."""
    sglb_network_throughput: float = value("sglb_network_throughput")
    """Collective throughput while a fabric link or a spine is down and SGLB reroutes."""

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
            if not getattr(self, name) >= 0:
                raise GpuHoursError(f"{name} must be non-negative, got {getattr(self, name)!r}")
        if not self.checkpoint > 0:
            raise GpuHoursError(f"checkpoint must be positive, got {self.checkpoint!r}")
        if not self.repair > 0:
            raise GpuHoursError(f"repair must be positive, got {self.repair!r}")
        for name in ("reccl_network_throughput", "sglb_network_throughput", "last_hop_share",
                     "switch_share", "leaf_share", "comm_fraction"):
            v = getattr(self, name)
            if not 0 <= v <= 1:
                raise GpuHoursError(f"{name} must be within 0..1, got {v!r}")
        if self.degraded not in DEGRADED:
            raise GpuHoursError(f"degraded must be one of {', '.join(DEGRADED)}, "
                                f"got {self.degraded!r}")
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

    def exposure(self) -> float:
        """GPU-seconds of the reference observation."""
        return self.ref_gpus * self.ref_days * 86400.0

    def split(self) -> dict[str, dict[str, float]]:
        """Share of each observed count that goes to each model class."""
        s, lh, lf = self.switch_share, self.last_hop_share, self.leaf_share
        return {"switch_cable": {"fabric_link": (1 - s) * (1 - lh), "last_hop": (1 - s) * lh,
                                 "leaf_switch": s * lf, "spine_switch": s * (1 - lf)},
                "nic": {"nic": 1.0}, "gpu": {"gpu": 1.0}, "other": {"other": 1.0}}

    def rates(self, observed: dict[str, float] | None = None) -> dict[str, float]:
        """Failures per second for this job, by class (from the counts or ``observed`` rates
        per GPU-second)."""
        per_gpu_s = observed or {k: float(self.counts.get(k, 0)) / self.exposure()
                                 for k in LLAMA3_COUNTS}
        out = dict.fromkeys(CLASSES, 0.0)
        for key, shares in self.split().items():
            for cls, share in shares.items():
                out[cls] += per_gpu_s[key] * share * self.gpus
        return out

    def throughput_of(self, cls: str) -> float:
        """Network throughput while a surviving failure of ``cls`` is in place."""
        if cls in ("fabric_link", "spine_switch"):
            return self.sglb_network_throughput
        return self.reccl_network_throughput


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
    """Poisson failure events of every class over the job window, for ``seeds`` runs; each
    run's rates drawn from the counts' Gamma posterior when ``rate_uncertainty``."""
    if seeds < 1:
        raise GpuHoursError("seeds must be at least 1")
    rng = np.random.default_rng(seed)
    horizon = params.days * 86400.0
    exposure = params.exposure()
    counts = np.zeros((seeds, len(CLASSES)), np.int64)
    for key, shares in params.split().items():
        n = float(params.counts.get(key, 0))
        if params.rate_uncertainty:
            per_gpu_s = rng.gamma(n + 0.5, 1.0 / exposure, size=seeds)
        else:
            per_gpu_s = np.full(seeds, n / exposure)
        for cls, share in shares.items():
            lam = per_gpu_s * share * params.gpus * horizon
            counts[:, CLASSES.index(cls)] += rng.poisson(lam)
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


def _worst_overlap(periods: list[tuple[float, float, float]]) -> float:
    """Integral over time of the largest slowdown among the periods running then."""
    if not periods:
        return 0.0
    edges = sorted({p for s, e, _ in periods for p in (s, e)})
    total = 0.0
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        worst = max((w for s, e, w in periods if s <= a and e >= b), default=0.0)
        total += (b - a) * worst
    return total


def _one_seed(params: GpuHoursParams, times: np.ndarray, classes: np.ndarray,
              survives: frozenset[str], tau: float) -> dict[str, float]:
    """Walk one seed's failures in time order; every second of the window lands in exactly
    one of work, checkpointing, lost work or downtime."""
    horizon = params.days * 86400.0
    cycle = tau + params.checkpoint
    slow = {c: 1 - params.job_throughput(params.throughput_of(c)) for c in CLASSES}
    acc = dict(work=0.0, ckpt=0.0, lost=0.0, down=0.0, pauses=0.0, stops=0.0, swaps=0.0)
    periods: list[tuple[float, float, float]] = []
    open_: list[tuple[float, float]] = []     # degradations running: (start, slowdown)
    seg = 0.0                                 # the job runs (up) from seg
    up_at = 0.0                               # down until up_at
    swap_at = math.inf

    def run_to(t: float, lost_tail: bool) -> None:
        length = max(t - seg, 0.0)
        cycles = math.floor(length / cycle) if math.isfinite(cycle) else 0
        rest = length - cycles * cycle
        acc["work"] += cycles * tau + (0.0 if lost_tail else rest)
        acc["ckpt"] += cycles * params.checkpoint
        acc["lost"] += rest if lost_tail else 0.0

    def close(t: float) -> None:
        for s, w in open_:
            periods.append((s, min(t, s + params.repair), w))
        open_.clear()

    def stop(t: float, downtime: float, planned: bool) -> None:
        nonlocal seg, up_at, swap_at
        run_to(t, lost_tail=not planned)
        close(t)
        up_at = t + downtime
        acc["down"] += min(up_at, horizon) - t
        seg = up_at
        swap_at = math.inf
        acc["swaps" if planned else "stops"] += 1

    for t, c in zip(times.tolist(), classes.tolist(), strict=True):
        if c < 0 or t >= horizon:
            break
        if swap_at <= t:
            stop(swap_at, params.restart, planned=True)
        cls = CLASSES[c]
        if t < up_at:
            # Down already: a stopping failure restarts the restart; a surviving one is
            # swapped out by it (nothing runs degraded).
            if cls not in survives:
                new_up = max(up_at, t + params.detection + params.restart)
                acc["down"] += min(new_up, horizon) - min(up_at, horizon)
                up_at = seg = new_up
                acc["stops"] += 1
            continue
        if cls in survives:
            acc["pauses"] += params.failover
            open_.append((t, slow[cls]))
            if params.degraded == "swap-at-checkpoint" and math.isfinite(cycle):
                k = math.floor((t - seg) / cycle) + 1
                swap_at = min(swap_at, seg + k * cycle)
            continue
        stop(t, params.detection + params.restart, planned=False)
    if swap_at < horizon:
        stop(swap_at, params.restart, planned=True)
    if seg < horizon:
        length = horizon - seg
        cycles = math.floor(length / cycle) if math.isfinite(cycle) else 0
        acc["work"] += length - cycles * params.checkpoint   # the last stretch's work counts
        acc["ckpt"] += cycles * params.checkpoint
    close(horizon)
    periods = [(s, min(e, horizon), w) for s, e, w in periods]
    acc["degraded"] = _worst_overlap(periods)
    return acc


def run_policy(params: GpuHoursParams, fails: Failures, policy: str) -> dict[str, np.ndarray]:
    """Per-seed accounting of one policy: productive time, losses and ETTR."""
    if policy not in POLICIES:
        raise GpuHoursError(f"unknown policy {policy!r} (choose from {', '.join(POLICIES)})")
    survives = POLICIES[policy]
    horizon = params.days * 86400.0
    rates = params.rates()
    stop_rate = sum(r for c, r in rates.items() if c not in survives)
    tau = checkpoint_interval(params.checkpoint, 1 / stop_rate if stop_rate else math.inf,
                              params.interval)
    rows = [_one_seed(params, fails.time[s], fails.cls[s], survives, tau)
            for s in range(fails.seeds)]
    col = {k: np.array([r[k] for r in rows]) for k in rows[0]}
    productive = np.maximum(col["work"] - col["degraded"] - col["pauses"], 0.0)
    return {
        "productive": productive,
        "ettr": productive / horizon,
        "gpu_hours_lost": (horizon - productive) * params.gpus / 3600.0,
        "lost_work_h": col["lost"] / 3600.0,
        "downtime_h": col["down"] / 3600.0,
        "checkpoint_h": col["ckpt"] / 3600.0,
        "degraded_h": col["degraded"] / 3600.0,
        "failover_h": col["pauses"] / 3600.0,
        "stops": col["stops"],
        "swaps": col["swaps"],
        "interval_s": np.full(fails.seeds, tau),
    }


def interval95(values) -> dict[str, float]:
    """Mean, its 95% CI, and the 2.5-97.5 percentile range of per-seed values."""
    v = np.asarray(values, float)
    out = mean_ci(v)
    out["p2.5"], out["p97.5"] = (float(x) for x in np.percentile(v, [2.5, 97.5]))
    return out


def gpu_hours(params: GpuHoursParams, seeds: int = 1000, seed: int = 0,
              policies: tuple[str, ...] = tuple(POLICIES)) -> dict:
    """Monte Carlo over seeds: GPU-hours lost and saved per policy, ETTR, with 95% CIs and
    the 95% range over seeds (rate uncertainty and one job's luck)."""
    fails = draw_failures(params, seeds, seed)
    per = {p: run_policy(params, fails, p) for p in policies}
    base = per.get("fail-stop")
    params_dict = dataclasses.asdict(params)
    out: dict = {"params": params_dict, "seeds": seeds,
                 "rates_per_day": {k: v * 86400 for k, v in params.rates().items()},
                 "failures_per_seed": mean_ci((fails.cls >= 0).sum(axis=1)),
                 "network_failures_per_seed": mean_ci(
                     np.isin(fails.cls, [CLASSES.index(c) for c in NETWORK]).sum(axis=1)),
                 "policies": {}}
    for p, r in per.items():
        entry = {k: mean_ci(v) for k, v in r.items() if k != "productive"}
        if base is not None:
            entry["gpu_hours_saved"] = interval95(base["gpu_hours_lost"] - r["gpu_hours_lost"])
        out["policies"][p] = entry
    return out
