"""The run's picture: every fabric link's utilisation over time, failures marked."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def utilisation(result: dict[str, Any], out: Path) -> None:
    """Two panels (leaf->spine, spine->leaf), one line per link, cuts as vertical lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = result["samples"]
    names, t = s["links"], s["t_s"]
    gbps = [result["links"][n]["gbps"] for n in names]
    fig, axes = plt.subplots(2, 1, figsize=(12, 6.5), sharex=True)
    for ax, key, title in ((axes[0], "bytes_up", "leaf -> spine"),
                           (axes[1], "bytes_down", "spine -> leaf")):
        rows = s[key]
        for i, name in enumerate(names):
            xs, ys = [], []
            for k in range(1, len(t)):
                dt = t[k] - t[k - 1]
                if dt <= 0 or gbps[i] <= 0:
                    continue
                xs.append(t[k] * 1e3)
                ys.append((rows[k][i] - rows[k - 1][i]) * 8 / dt / (gbps[i] * 1e9))
            if any(y > 0 for y in ys):
                ax.plot(xs, ys, lw=1, label=f"{name} ({gbps[i]:g} Gb/s)")
        for f in result["failures"]:
            ax.axvline(f["at_s"] * 1e3, color="red", ls="--", lw=1)
        ax.set_ylabel("utilisation")
        ax.set_ylim(0, 1.1)
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes[1].set_xlabel("simulated time (ms)")
    o = result["options"]
    done = result["completion_s"]
    fig.suptitle(f"{result['fabric']}, {o['lb']}, {o['workload']} "
                 f"({o['nbytes']:,} B x {o['flows']} per pair), link scale {o['link_scale']:g}: "
                 + (f"done in {done * 1e3:.2f} ms" if done is not None else "not finished"),
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
