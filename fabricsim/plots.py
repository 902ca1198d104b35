"""PNG figures plus a JSON file holding the data of every figure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

COLOURS = {"ecmp": "#7f7f7f", "sglb": "#1f77b4", "spray": "#2ca02c",
           "fail-stop": "#7f7f7f", "reccl": "#ff7f0e", "sglb-reroute": "#1f77b4",
           "reccl+sglb": "#2ca02c"}


def _bar_ci(ax, names: list[str], stats: list[dict[str, float]], ylabel: str) -> None:
    means = [s["mean"] for s in stats]
    err = np.array([[s["mean"] - s["lo"] for s in stats], [s["hi"] - s["mean"] for s in stats]])
    ax.bar(names, means, yerr=err, capsize=6, color=[COLOURS.get(n, "#9467bd") for n in names])
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)


def simulator_figures(summary: dict[str, Any], runs: list[dict[str, Any]], out: Path) -> dict:
    """Speed-up, completion time and link-utilisation figures of one scenario."""
    out.mkdir(parents=True, exist_ok=True)
    pol = summary["policies"]
    names = list(pol)
    figures: dict[str, Any] = {}
    title = summary["scenario"].get("name", "")
    n = len(summary["seeds"])

    fig, ax = plt.subplots(figsize=(5, 3.5))
    _bar_ci(ax, names, [pol[p]["completion"] for p in names], "completion time (s)")
    ax.set_title(f"{title}: completion time, mean and 95% CI over {n} seeds", fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "completion.png", dpi=120)
    plt.close(fig)
    figures["completion"] = {p: pol[p]["completion"] for p in names}

    if all("speedup_vs_ecmp" in pol[p] for p in names):
        fig, ax = plt.subplots(figsize=(5, 3.5))
        _bar_ci(ax, names, [pol[p]["speedup_vs_ecmp"] for p in names], "speed-up vs ECMP")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_title(f"{title}: speed-up vs ECMP, mean and 95% CI over {n} seeds", fontsize=9)
        fig.tight_layout()
        fig.savefig(out / "speedup.png", dpi=120)
        plt.close(fig)
        figures["speedup"] = {p: pol[p]["speedup_vs_ecmp"] for p in names}

    fig, ax = plt.subplots(figsize=(5, 3.5))
    cdfs = {}
    for p in names:
        u = np.sort(np.concatenate([r["policies"][p]["utilisation"] for r in runs]))
        if not len(u):
            continue
        y = np.arange(1, len(u) + 1) / len(u)
        ax.step(u, y, where="post", label=p, color=COLOURS.get(p))
        # Keep the JSON small: the CDF at 101 quantiles.
        cdfs[p] = {"quantile": np.linspace(0, 1, 101).round(2).tolist(),
                   "utilisation": np.quantile(u, np.linspace(0, 1, 101)).round(4).tolist()}
    ax.set_xlabel("fabric link utilisation over the run")
    ax.set_ylabel("CDF of links")
    ax.legend()
    ax.grid(alpha=0.3)
    ax.set_title(f"{title}: link utilisation", fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "utilisation.png", dpi=120)
    plt.close(fig)
    figures["utilisation_cdf"] = cdfs
    if summary["scenario"].get("events"):
        figures["throughput"] = throughput_figure(summary["scenario"], runs[0], out)
    return figures


def throughput_figure(scenario: dict[str, Any], run: dict[str, Any], out: Path) -> dict:
    """Goodput over time of one seed, per policy, failures marked; the healthy run dashed."""
    out.mkdir(parents=True, exist_ok=True)
    names = list(run["policies"])
    fig, axes = plt.subplots(len(names), 1, figsize=(7, 2.2 * len(names) + 0.6), sharex=True,
                             squeeze=False)
    data = {}
    peak = max(max(run["policies"][p]["timeline_healthy"]["goodput"] or [0]) for p in names)
    scale, unit = (1e12, "Tbit/s") if peak >= 1e13 else (1e9, "Gbit/s")
    for ax, p in zip(axes[:, 0], names, strict=True):
        e = run["policies"][p]
        tl, hl = e["timeline"], e["timeline_healthy"]
        ax.step(np.array(tl["time"]) * 1e3, np.array(tl["goodput"]) / scale, where="post",
                color=COLOURS.get(p), label=f"{p} with failures")
        ax.step(np.array(hl["time"]) * 1e3, np.array(hl["goodput"]) / scale, where="post",
                color=COLOURS.get(p), ls="--", alpha=0.6, label=f"{p} healthy")
        for k, note in enumerate(e["notes"]):
            down = note["event"].endswith(" down")
            ax.axvline(note["time"] * 1e3, color="#d62728" if down else "#9467bd",
                       ls="-" if down else ":", lw=1)
            ax.annotate(note["event"], (note["time"] * 1e3, 0.98 - 0.3 * (k % 3)),
                        xycoords=("data", "axes fraction"), rotation=90, va="top", ha="right",
                        fontsize=6)
        ax.set_ylabel(f"goodput ({unit})", fontsize=8)
        ax.legend(fontsize=7, loc="lower right")
        ax.grid(alpha=0.3)
        data[p] = {"timeline": tl, "timeline_healthy": hl, "inflation": e["inflation"]}
    axes[-1, 0].set_xlabel("time (ms)")
    fig.suptitle(f"{scenario.get('name', '')}: throughput, seed {run['seed']} "
                 "(red: failure, purple: reaction)", fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "throughput.png", dpi=120)
    plt.close(fig)
    return data


def gpu_hours_figure(summary: dict[str, Any], out: Path) -> dict:
    """GPU-hours lost per policy and effective training time ratio."""
    out.mkdir(parents=True, exist_ok=True)
    pol = summary["policies"]
    names = list(pol)
    saved = "gpu_hours_saved" in pol[names[0]]
    fig, axes = plt.subplots(1, 3 if saved else 2, figsize=(13 if saved else 9, 3.6))
    a1, a2 = axes[0], axes[-1]
    _bar_ci(a1, names, [pol[p]["gpu_hours_lost"] for p in names], "GPU-hours lost")
    a1.tick_params(axis="x", labelsize=8)
    if saved:
        _bar_ci(axes[1], names, [pol[p]["gpu_hours_saved"] for p in names],
                "GPU-hours saved vs fail-stop")
        axes[1].tick_params(axis="x", labelsize=8)
    _bar_ci(a2, names, [pol[p]["ettr"] for p in names], "ETTR")
    lo = min(pol[p]["ettr"]["lo"] for p in names)
    a2.set_ylim(max(0.0, lo - 0.05), 1.0)
    a2.tick_params(axis="x", labelsize=8)
    p = summary["params"]
    fig.suptitle(f"{p['gpus']} GPUs, {p['days']} days, {summary['seeds']} seeds "
                 "(mean and 95% CI)", fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "gpu_hours.png", dpi=120)
    plt.close(fig)
    return {"gpu_hours_lost": {n: pol[n]["gpu_hours_lost"] for n in names},
            "gpu_hours_saved": {n: pol[n].get("gpu_hours_saved") for n in names},
            "ettr": {n: pol[n]["ettr"] for n in names}}


def write_json(data: dict[str, Any], path: Path) -> None:
    """Write ``data`` as indented JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")


def sensitivity_figure(sens: dict[str, Any], out: Path) -> dict:
    """GPU-hours saved by ReCCL+SGLB (and each alone) across every sweep, with ranges."""
    out.mkdir(parents=True, exist_ok=True)
    sweeps = sens["sweeps"]
    cols = 3
    rows = -(-len(sweeps) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
    for ax, sw in zip(axes.ravel(), sweeps.values(), strict=False):
        x = np.arange(len(sw["rows"]))
        labels = [str(r["value"]) for r in sw["rows"]]
        for pol in ("reccl+sglb", "reccl", "sglb-reroute"):
            m = np.array([r["saved"][pol]["mean"] for r in sw["rows"]]) / 1e3
            ax.plot(x, m, marker="o", ms=3, color=COLOURS.get(pol), label=pol)
            if pol == "reccl+sglb":
                lo = np.array([r["saved"][pol]["p2.5"] for r in sw["rows"]]) / 1e3
                hi = np.array([r["saved"][pol]["p97.5"] for r in sw["rows"]]) / 1e3
                ax.fill_between(x, lo, hi, color=COLOURS.get(pol), alpha=0.15)
        at = [i for i, r in enumerate(sw["rows"]) if r["value"] == sw["default"]]
        if at:
            ax.axvline(at[0], color="k", ls=":", lw=0.8)
        ax.axhline(0, color="k", lw=0.6)
        ax.set_xticks(x, labels, fontsize=7)
        ax.set_xlabel(sw["label"], fontsize=8)
        ax.set_ylabel("GPU-hours saved (k)", fontsize=8)
        ax.grid(alpha=0.3)
    for ax in axes.ravel()[len(sweeps):]:
        ax.axis("off")
    axes[0, 0].legend(fontsize=7)
    r = sens["range"]
    fig.suptitle(f"GPU-hours saved against fail-stop: mean over {sens['seeds']} seeds, shaded "
                 f"2.5-97.5% of seeds (ReCCL+SGLB); dotted: default. Range of means "
                 f"{r['min'] / 1e3:,.1f}k to {r['max'] / 1e3:,.1f}k", fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "gpu_hours_sensitivity.png", dpi=120)
    plt.close(fig)
    return {"sweeps": sweeps, "corners": sens["corners"], "range": r}
