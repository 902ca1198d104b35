"""What a run measures at the fabric's edges: reordering, delivery over time, recovery.

The observer sees every frame a host sends into its leaf and every frame a
leaf sends to a host, and the frames on links that are cut during the run:

* **reorderings**: a data segment delivered after a segment of the same flow
  that its host sent later (the order in which the source leaf received them,
  each transmission told apart by its IPv4 identification); a retransmission
  is a new send, so loss alone does not count;
* **delivery**: data bytes delivered per flow and time bin (``sample_us``);
* **the data plane's reaction** to a cut at T (``dataplane_us``): the last time a
  switch sent a frame into the failure, onto the cut link or from a leaf to a
  spine left without a link to the frame's destination leaf;
* **recovery** after a cut at T: the *affected* flows are those with a frame on
  the cut link in the ``AFFECTED_WINDOW_US`` before T or any time after it; a
  flow's ``recovery_us`` is from T to the first delivery of a segment its host
  sent after T (which went over a live path, or it could not arrive);
  ``throughput_recovered_us`` is from T to the end of the first bin in which
  the affected flows' delivery rate is back within 10% of their rate in the
  ``PRE_WINDOW_US`` before T.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from dataclasses import dataclass, field

AFFECTED_WINDOW_US = 100.0
PRE_WINDOW_US = 500.0
_TCP = struct.Struct("!HHI")
_ETH_SGLB = b"\x88\xb6"


def tcp_segment(frame: bytes) -> tuple[int, int, int, int, int] | None:
    """(source port, destination port, sequence number, payload bytes, IPv4 identification)
    of a TCP/IPv4 frame, with or without SGLB's tag; None for anything else. ns-3's hosts
    give every IPv4 packet they send (a retransmission too) the next identification."""
    ip = 14
    if frame[12:14] == _ETH_SGLB:
        if len(frame) < 34 or frame[15] != 0x05 or frame[32:34] != b"\x08\x00":
            return None
        ip = 34
    elif frame[12:14] != b"\x08\x00":
        return None
    if len(frame) < ip + 40 or frame[ip + 9] != 6:
        return None
    ihl = (frame[ip] & 0x0F) * 4
    total = (frame[ip + 2] << 8) | frame[ip + 3]
    ident = (frame[ip + 4] << 8) | frame[ip + 5]
    tcp = ip + ihl
    if len(frame) < tcp + 20:
        return None
    sport, dport, seq = _TCP.unpack_from(frame, tcp)
    doff = (frame[tcp + 12] >> 4) * 4
    return sport, dport, seq, total - ihl - doff, ident


@dataclass
class Cut:
    """One link cut and what the observer noted about it."""

    link: str
    at_ns: int
    affected: set[int] = field(default_factory=set)
    dead: frozenset[tuple[str, str]] = frozenset()
    """(spine, leaf) pairs left without a live link by the cut."""
    last_into_ns: int = -1
    """The last time a switch sent a frame into the failure: onto the cut link, or from a
    leaf to a spine that no longer reaches the frame's destination leaf."""


class Observer:
    """Counts what the hosts send and receive; one per run."""

    def __init__(self, flow_of_port: dict[int, int], sample_us: float):
        self.flow_of_port = flow_of_port
        self.bin_ns = int(sample_us * 1000)
        self.sent: dict[int, int] = defaultdict(int)
        self.order: dict[tuple[int, int], int] = {}
        """(flow, IPv4 identification) -> its place in the flow's sending order."""
        self.last_delivered: dict[int, int] = defaultdict(int)
        self.reorderings: dict[int, int] = defaultdict(int)
        self.segments: dict[int, int] = defaultdict(int)
        self.delivered: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
        self.cuts: list[Cut] = []
        self.watched: dict[int, Cut] = {}
        """Shim device -> the cut of its link."""
        self.first_after: list[dict[int, int]] = []
        """Per cut: flow -> first delivery (ns) of a segment sent after the cut."""
        self.entered_after: list[set[tuple[int, int]]] = []
        self.uplinks: dict[int, dict[str, int]] = {}
        """Flow -> data segments its source leaf sent on each of its uplinks."""

    def watch(self, link: str, at_ns: int, devs: tuple[int, int],
              dead: frozenset[tuple[str, str]] = frozenset()) -> None:
        """Measure recovery from cutting ``link`` (shim devices ``devs``) at ``at_ns``;
        ``dead``: the (spine, leaf) pairs it leaves without a live link."""
        cut = Cut(link, at_ns, dead=dead)
        self.cuts.append(cut)
        self.first_after.append({})
        self.entered_after.append(set())
        for d in devs:
            self.watched[d] = cut

    def from_host(self, frame: bytes, now_ns: int) -> int | None:
        """A frame a host sent into its leaf; its flow if it carries data."""
        seg = tcp_segment(frame)
        if seg is None or seg[3] <= 0:
            return None
        flow = self.flow_of_port.get(seg[1])
        if flow is None:
            return None
        self.sent[flow] += 1
        self.order[flow, seg[4]] = self.sent[flow]
        for i, cut in enumerate(self.cuts):
            if now_ns >= cut.at_ns:
                self.entered_after[i].add((flow, seg[4]))
        return flow

    def uplink(self, flow: int, link: str) -> None:
        """The source leaf sent one of ``flow``'s data segments on ``link``."""
        per = self.uplinks.setdefault(flow, {})
        per[link] = per.get(link, 0) + 1

    def to_host(self, frame: bytes, now_ns: int) -> None:
        """A frame a leaf sent to a host."""
        seg = tcp_segment(frame)
        if seg is None or seg[3] <= 0:
            return
        flow = self.flow_of_port.get(seg[1])
        if flow is None:
            return
        self.segments[flow] += 1
        self.delivered[flow][now_ns // self.bin_ns] += seg[3]
        n = self.order.pop((flow, seg[4]), None)
        if n is not None:
            if n < self.last_delivered[flow]:
                self.reorderings[flow] += 1
            else:
                self.last_delivered[flow] = n
        for i, cut in enumerate(self.cuts):
            if (now_ns >= cut.at_ns and flow not in self.first_after[i]
                    and (flow, seg[4]) in self.entered_after[i]):
                self.first_after[i][flow] = now_ns

    def to_spine(self, leaf_spine: tuple[str, str], frame: bytes, now_ns: int,
                 leaf_of: dict[bytes, str]) -> None:
        """A leaf sent ``frame`` to a spine after a cut: note it if that spine no longer
        reaches the frame's destination leaf (the frame is lost to the failure)."""
        ip = 34 if frame[12:14] == _ETH_SGLB else 14
        dst_leaf = leaf_of.get(frame[ip + 16:ip + 20])
        for cut in self.cuts:
            if now_ns >= cut.at_ns and (leaf_spine[1], dst_leaf) in cut.dead:
                cut.last_into_ns = now_ns

    def on_link(self, dev: int, frame: bytes, now_ns: int) -> None:
        """A frame sent on a device of a link that is cut during the run."""
        cut = self.watched[dev]
        if now_ns >= cut.at_ns:
            cut.last_into_ns = now_ns
        seg = tcp_segment(frame)
        if seg is None:
            return
        flow = self.flow_of_port.get(seg[1] if seg[3] > 0 else seg[0])
        if flow is None:
            flow = self.flow_of_port.get(seg[0])
        if flow is None:
            return
        if now_ns >= cut.at_ns - AFFECTED_WINDOW_US * 1000:
            cut.affected.add(flow)

    # ---- results -------------------------------------------------------------------

    def recovery(self, done_ns: dict[int, int]) -> list[dict[str, object]]:
        """Per cut: the affected flows and their recovery (see the module's docstring)."""
        out: list[dict[str, object]] = []
        for i, cut in enumerate(self.cuts):
            per_flow: dict[int, float | None] = {}
            for f in sorted(cut.affected):
                t = self.first_after[i].get(f)
                if t is None and done_ns.get(f, -1) >= 0 and done_ns[f] < cut.at_ns:
                    continue  # finished before the cut: nothing to recover
                per_flow[f] = None if t is None else (t - cut.at_ns) / 1000
            values = [v for v in per_flow.values() if v is not None]
            unrecovered = [f for f, v in per_flow.items() if v is None]
            out.append({
                "link": cut.link,
                "at_s": cut.at_ns / 1e9,
                "affected_flows": sorted(per_flow),
                "recovery_us": (max(values) if values and not unrecovered else None),
                "recovery_us_median": (sorted(values)[len(values) // 2] if values else None),
                "unrecovered_flows": unrecovered,
                "flow_recovery_us": {str(f): v for f, v in per_flow.items()},
                "throughput_recovered_us": self._throughput_back(cut, set(per_flow)),
                "dataplane_us": (None if cut.last_into_ns < 0
                                 else (cut.last_into_ns - cut.at_ns) / 1000),
            })
        return out

    def _throughput_back(self, cut: Cut, flows: set[int]) -> float | None:
        if not flows:
            return None
        rate: dict[int, int] = defaultdict(int)
        for f in flows:
            for b, n in self.delivered[f].items():
                rate[b] += n
        first = cut.at_ns // self.bin_ns
        pre_bins = max(1, int(PRE_WINDOW_US * 1000 // self.bin_ns))
        pre = sum(rate.get(b, 0) for b in range(first - pre_bins, first)) / pre_bins
        if pre <= 0:
            return None
        last = max(rate) if rate else first
        for b in range(first + 1, last + 1):
            if rate.get(b, 0) >= 0.9 * pre:
                return ((b + 1) * self.bin_ns - cut.at_ns) / 1000
        return None
