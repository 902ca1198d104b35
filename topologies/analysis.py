"""Figures of a testbed run from the load generator's send and receive logs (no I/O but files).

Everything is computed from what was sent and what arrived (topologies/udpload.py
logs every datagram with its send time), so a packet is lost exactly when it
is in a send log and in no receive log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class FlowLog:
    """One flow: what was sent and what arrived (times in s since the epoch)."""

    flow: int
    src: str
    dst: str
    sent_seq: np.ndarray
    sent_t: np.ndarray
    sent_rail: np.ndarray
    recv_seq: np.ndarray
    recv_t: np.ndarray
    size: int

    @property
    def delivered(self) -> np.ndarray:
        """Per sent packet: True if it arrived (at least once)."""
        return np.isin(self.sent_seq, self.recv_seq)


@dataclass(frozen=True)
class Fault:
    """One injected fault: what, when (s since epoch) and when it was undone."""

    name: str
    kind: str
    """leaf-spine or host-nic."""
    at: float
    restored_at: float
    local_flows: tuple[int, ...] = ()
    """Flows whose source leaf sits at the cut (failover decided locally)."""
    remote_flows: tuple[int, ...] = ()
    """Flows whose path is chosen by a leaf that learns of the cut remotely."""
    rails: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """Per flow, the rails whose packets can cross the fault (a NIC cut: that NIC's rail; a
    leaf-spine cut: rails from or to that leaf). Only their losses make a flow's outage:
    losses elsewhere, e.g. a loaded software switch's, are not the failover's. A flow not
    listed: every rail."""


@dataclass
class FaultFigures:
    """What one fault cost."""

    name: str
    lost: int
    local_outage_s: float | None
    """Longest time after the cut during which a local flow still lost packets."""
    remote_outage_s: float | None
    syncmesh_convergence_s: float | None = None
    per_flow_outage_s: dict[int, float] = field(default_factory=dict)
    loss_bursts: list[tuple[float, float, int]] = field(default_factory=list)
    """Losses on the rails the outage counts, as bursts: (first, last lost packet's send time
    after the cut in s, packets). A failover is one burst from the cut; a later one is
    something else (e.g. a starved software switch) that the outage figure counts too."""


def load_flow(flow: int, src: str, dst: str, send_file: Path, recv_file: Path,
              size: int) -> FlowLog:
    """Read one flow's logs (the receive file may hold several flows)."""
    s = np.load(send_file)
    r = np.load(recv_file)
    mine = r["flow"] == flow
    return FlowLog(flow, src, dst, s["seq"], s["send_ns"] / 1e9, s["rail"],
                   r["seq"][mine], r["recv_ns"][mine] / 1e9, size)


def outage(log: FlowLog, at: float, window: float, rails: tuple[int, ...] | None = None) -> float:
    """Seconds after ``at`` until the last packet of the flow that was lost (0: none lost);
    with ``rails``, the last one lost of those sent on these rails."""
    ok = log.delivered
    sel = (log.sent_t >= at) & (log.sent_t < at + window) & ~ok
    if rails is not None:
        sel &= np.isin(log.sent_rail, rails)
    if not sel.any():
        return 0.0
    return float(log.sent_t[sel].max() - at)


def fault_figures(logs: Sequence[FlowLog], fault: Fault, window: float = 3.0) -> FaultFigures:
    """Lost packets and outage times of one fault (window: how long after the cut to look)."""
    lost = 0
    per: dict[int, float] = {}
    for log in logs:
        sel = (log.sent_t >= fault.at) & (log.sent_t < fault.restored_at)
        lost += int((sel & ~log.delivered).sum())
        per[log.flow] = outage(log, fault.at, min(window, fault.restored_at - fault.at),
                               fault.rails.get(log.flow))
    local = [per[f] for f in fault.local_flows if f in per]
    remote = [per[f] for f in fault.remote_flows if f in per]
    return FaultFigures(fault.name, lost, max(local) if local else None,
                        max(remote) if remote else None, per_flow_outage_s=per,
                        loss_bursts=loss_bursts(logs, fault, window))


BURST_GAP = 0.1
"""Losses further apart than this (s) belong to different bursts (a flow sends a packet on
each rail every few ms, so a path still failing loses one every few tens of ms at most)."""


def loss_bursts(logs: Sequence[FlowLog], fault: Fault, window: float = 3.0,
                gap: float = BURST_GAP) -> list[tuple[float, float, int]]:
    """The fault's losses within ``window`` on the rails its outage counts (of its local and
    remote flows), grouped into bursts split at gaps above ``gap``."""
    counted = set(fault.local_flows) | set(fault.remote_flows)
    end = min(window, fault.restored_at - fault.at)
    times = []
    for log in logs:
        if log.flow not in counted:
            continue
        sel = (log.sent_t >= fault.at) & (log.sent_t < fault.at + end) & ~log.delivered
        rails = fault.rails.get(log.flow)
        if rails is not None:
            sel &= np.isin(log.sent_rail, rails)
        times.append(log.sent_t[sel] - fault.at)
    t = np.sort(np.concatenate(times)) if times else np.zeros(0)
    bursts: list[tuple[float, float, int]] = []
    start = 0
    for i in range(1, len(t) + 1):
        if i == len(t) or t[i] - t[i - 1] > gap:
            bursts.append((round(float(t[start]), 4), round(float(t[i - 1]), 4), i - start))
            start = i
    return bursts


def throughput(logs: Sequence[FlowLog], start: float, end: float,
               bin_s: float = 0.25) -> tuple[np.ndarray, np.ndarray]:
    """Delivered Mbit/s of all flows together per bin: (bin start since ``start``, rate)."""
    edges = np.arange(start, end + bin_s, bin_s)
    total = np.zeros(len(edges) - 1)
    for log in logs:
        h, _ = np.histogram(log.recv_t, bins=edges)
        total += h * log.size * 8 / 1e6 / bin_s
    return edges[:-1] - start, total


def one_way_delays(log: FlowLog) -> tuple[np.ndarray, np.ndarray]:
    """(send time, one-way delay) of every arrival that matches a sent packet (hosts share
    the machine's clock): the switches' queueing shows here, not as loss."""
    order = np.argsort(log.sent_seq, kind="stable")
    seqs, times = log.sent_seq[order], log.sent_t[order]
    if not len(seqs):
        return np.zeros(0), np.zeros(0)
    idx = np.minimum(np.searchsorted(seqs, log.recv_seq), len(seqs) - 1)
    ok = seqs[idx] == log.recv_seq
    return times[idx[ok]], log.recv_t[ok] - times[idx[ok]]


def phase_rates(logs: Sequence[FlowLog], phases: Sequence[tuple[str, float, float]]) -> dict:
    """Per phase: delivered Mbit/s, offered Mbit/s, packets lost, and the one-way delay
    (median and 99th percentile, ms) of the packets sent in it that arrived."""
    out = {}
    delays = [one_way_delays(log) for log in logs]
    for name, a, b in phases:
        got = sent = lost = 0
        mine = []
        for log, (sent_at, delay) in zip(logs, delays, strict=True):
            got += int(((log.recv_t >= a) & (log.recv_t < b)).sum())
            in_phase = (log.sent_t >= a) & (log.sent_t < b)
            sent += int(in_phase.sum())
            lost += int((in_phase & ~log.delivered).sum())
            mine.append(delay[(sent_at >= a) & (sent_at < b)])
        size = logs[0].size if logs else 0
        dur = max(b - a, 1e-9)
        d = np.concatenate(mine) * 1000 if mine else np.zeros(0)
        out[name] = {"delivered_mbps": round(got * size * 8 / 1e6 / dur, 3),
                     "offered_mbps": round(sent * size * 8 / 1e6 / dur, 3),
                     "sent": sent, "lost": lost, "seconds": round(dur, 3),
                     "delay_ms_median": round(float(np.median(d)), 2) if len(d) else None,
                     "delay_ms_p99": round(float(np.percentile(d, 99)), 2) if len(d) else None}
    return out


def plot(path: Path, times: np.ndarray, rates: np.ndarray, marks: Sequence[tuple[float, str]],
         phases: Sequence[tuple[str, float, float]], start: float, title: str) -> None:
    """PNG of delivered throughput over time with the faults marked."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4))
    ax.step(times, rates, where="post", color="tab:blue", label="delivered (all flows)")
    ax.set_ylim(0, max(float(rates.max()) if len(rates) else 1.0, 1.0) * 1.15)
    for t, label in marks:
        ax.axvline(t - start, color="tab:red" if "cut" in label else "tab:green",
                   linestyle="--", linewidth=1)
        ax.annotate(label, (t - start, ax.get_ylim()[1] * 0.95), rotation=90, va="top",
                    ha="right", fontsize=8)
    ax.set_xlabel("time since traffic start (s)")
    ax.set_ylabel("Mbit/s")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
