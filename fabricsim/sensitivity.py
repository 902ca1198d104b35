"""How the GPU-hours saving moves with the model's assumptions, one at a time.

Each sweep varies one parameter of ``GpuHoursParams`` over a plausible range
(the defaults and their sources are in ``fabricsim.measured``) with every
other at its default, on the same seeds (common random numbers), and records
the GPU-hours each policy saves against fail-stop: the mean, its 95% CI and
the 2.5-97.5 percentile range over seeds. Two corners combine parameters:
a fast-restart shop and a slow one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from fabricsim.gpuhours import LLAMA3_COUNTS, GpuHoursParams, gpu_hours


def _scaled_network(params: GpuHoursParams, factor: float) -> dict[str, Any]:
    counts = dict(params.counts)
    for key in ("switch_cable", "nic"):
        counts[key] = LLAMA3_COUNTS[key] * factor
    return {"counts": counts}


SWEEPS: dict[str, tuple[str, list, Callable[[GpuHoursParams, Any], dict[str, Any]]]] = {
    "detection": ("fail-stop detection (s)", [10, 30, 60, 120, 300, 600],
                  lambda p, v: {"detection": float(v)}),
    "restart": ("restart (s)", [30, 120, 300, 600, 1800], lambda p, v: {"restart": float(v)}),
    "interval": ("checkpoint interval (s; daly = optimal)", ["daly", 300, 900, 1800, 3600, 7200],
                 lambda p, v: {"interval": v if isinstance(v, str) else float(v)}),
    "checkpoint": ("checkpoint write (s)", [10, 30, 60, 120, 300],
                   lambda p, v: {"checkpoint": float(v)}),
    "network_counts": ("network failure counts (x Llama 3's 42)", [0.5, 1, 2, 4],
                       _scaled_network),
    "last_hop_share": ("last-hop share of cable failures", [0.0, 0.25, 0.5, 0.75, 1.0],
                       lambda p, v: {"last_hop_share": float(v)}),
    "switch_share": ("switch share of switch/cable failures", [0.0, 0.25, 0.5],
                     lambda p, v: {"switch_share": float(v)}),
    "degraded": ("degraded host replaced", ["swap-at-checkpoint", "until-repair"],
                 lambda p, v: {"degraded": v}),
}
CORNERS = {
    "fast restart (detection 30 s, restart 120 s, checkpoint write 10 s)":
        {"detection": 30.0, "restart": 120.0, "checkpoint": 10.0},
    "slow restart (restart 1,800 s)": {"restart": 1800.0},
}


def sensitivity(params: GpuHoursParams, seeds: int = 300, seed: int = 0,
                progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Savings per policy for every sweep value and corner, and the overall range."""
    def point(changes: dict[str, Any]) -> dict[str, Any]:
        res = gpu_hours(dataclasses.replace(params, **changes), seeds, seed)
        return {p: e["gpu_hours_saved"] for p, e in res["policies"].items() if p != "fail-stop"}

    out: dict[str, Any] = {"seeds": seeds, "sweeps": {}, "corners": {}}
    for key, (label, values, change) in SWEEPS.items():
        rows = []
        for v in values:
            if progress:
                progress(f"{key} = {v}")
            rows.append({"value": v, "saved": point(change(params, v))})
        out["sweeps"][key] = {"label": label, "default": _default(params, key), "rows": rows}
    for name, changes in CORNERS.items():
        if progress:
            progress(name)
        out["corners"][name] = point(changes)
    means = [r["saved"]["reccl+sglb"]["mean"] for s in out["sweeps"].values() for r in s["rows"]]
    means += [c["reccl+sglb"]["mean"] for c in out["corners"].values()]
    out["range"] = {"min": min(means), "max": max(means)}
    return out


def _default(params: GpuHoursParams, key: str) -> Any:
    if key == "network_counts":
        return 1
    return getattr(params, key)
