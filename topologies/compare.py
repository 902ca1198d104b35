"""Side-by-side table of `make run` summaries (one per target): `TARGET=softswitch,bmv2 make run`
prints it after both runs, ``python -m topologies.demo --compare A.json B.json`` from saved ones.

Only figures both runs have are compared; a missing one reads ``n/a``. Each
column names the machine's load average during its run, because testbed
timings depend on it (docs/testbed.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


class SummaryError(ValueError):
    """A summary file that cannot be compared (message names the file)."""


def load_summary(path: Path) -> dict:
    """One run's ``summary.json``."""
    try:
        data = json.loads(path.read_text())
    except OSError as e:
        raise SummaryError(f"{path}: {e.strerror or e}") from None
    except ValueError as e:
        raise SummaryError(f"{path}: not JSON: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("faults"), list) \
            or not isinstance(data.get("phases"), dict):
        raise SummaryError(f"{path}: not a testbed summary (no faults or phases)")
    return data


def _ms(x: Any) -> str:
    return f"{x * 1000:.1f} ms" if isinstance(x, int | float) else "n/a"


def _fault(s: dict, kind: str) -> dict:
    return next((f for f in s["faults"] if isinstance(f, dict) and f.get("kind") == kind), {})


def _port_status(kind: str, index: int) -> Callable[[dict], str]:
    def get(s: dict) -> str:
        seen = list((_fault(s, kind).get("port_status_s") or {}).items())
        return f"{seen[index][0]} {_ms(seen[index][1])}" if index < len(seen) else "n/a"
    return get


def _bursts(kind: str) -> Callable[[dict], str]:
    def get(s: dict) -> str:
        found = _fault(s, kind).get("loss_bursts")
        if found is None:
            return "n/a"
        if not found:
            return "none"
        shown = " ".join(f"{a * 1000:.0f}-{b * 1000:.0f}" for a, b, _ in found[:3])
        return shown + (" ..." if len(found) > 3 else "") + " ms"
    return get


def _silences(kind: str) -> Callable[[dict], str]:
    def get(s: dict) -> str:
        found = _fault(s, kind).get("reccl_silences")
        if found is None:
            return "n/a"
        if not found:
            return "none"
        return f"{len(found)}, first after {found[0]['after_s'] * 1000:.0f} ms"
    return get


def _phase(index: int) -> Callable[[dict], str]:
    def get(s: dict) -> str:
        phases = list(s["phases"].values())
        if index >= len(phases):
            return "n/a"
        p = phases[index]
        return f"{p.get('delivered_mbps', 0):.2f} M, {p.get('lost', '?')} lost"
    return get


def _delay(index: int) -> Callable[[dict], str]:
    def get(s: dict) -> str:
        phases = list(s["phases"].values())
        p = phases[index] if index < len(phases) else {}
        m, p99 = p.get("delay_ms_median"), p.get("delay_ms_p99")
        return f"{m:.1f} / {p99:.1f} ms" if isinstance(m, int | float) and \
            isinstance(p99, int | float) else "n/a"
    return get


def _slowest(index: int) -> Callable[[dict], str]:
    def get(s: dict) -> str:
        rc = s.get("reccl") or {}
        phases = list((rc.get("phases") or {}).values())
        x = phases[index].get("slowest_s") if index < len(phases) else None
        return f"{x:.2f} s" if isinstance(x, int | float) else "n/a"
    return get


def _load(s: dict) -> str:
    la = s.get("load_average")
    return "/".join(f"{x:.1f}" for x in la) if isinstance(la, list) and la else "n/a"


ROWS: list[tuple[str, Callable[[dict], str]]] = [
    ("load average (start/end)", _load),
    ("wall time", lambda s: f"{s['wall_seconds']:.0f} s" if "wall_seconds" in s else "n/a"),
    ("baseline delivered", _phase(0)),
    ("baseline one-way delay, median / p99", _delay(0)),
    ("leaf-spine cut: delivered", _phase(1)),
    ("  local outage", lambda s: _ms(_fault(s, "leaf-spine").get("local_outage_s"))),
    ("  remote outage", lambda s: _ms(_fault(s, "leaf-spine").get("remote_outage_s"))),
    ("  loss bursts after the cut", _bursts("leaf-spine")),
    ("  port-status at the leaf", _port_status("leaf-spine", 0)),
    ("  port-status at the spine", _port_status("leaf-spine", 1)),
    ("  SyncMesh agreement", lambda s: _ms(_fault(s, "leaf-spine").get("syncmesh_convergence_s"))),
    ("  ReCCL channels silent", _silences("leaf-spine")),
    ("  slowest collective", _slowest(1)),
    ("NIC cut: local outage", lambda s: _ms(_fault(s, "host-nic").get("local_outage_s"))),
    ("  remote outage", lambda s: _ms(_fault(s, "host-nic").get("remote_outage_s"))),
    ("  loss bursts after the cut", _bursts("host-nic")),
    ("  port-status at the leaf", _port_status("host-nic", 0)),
    ("  ReCCL channels silent", _silences("host-nic")),
    ("packets sent / lost", lambda s: f"{s['packets']['sent']} / {s['packets']['lost']}"
        if isinstance(s.get("packets"), dict) else "n/a"),
    ("collectives / wrong", lambda s: f"{s['reccl']['collectives']} / {s['reccl']['wrong']}"
        if isinstance(s.get("reccl"), dict) else "n/a"),
    ("everything correct", lambda s: str(s.get("correct", "n/a"))),
]


def render(summaries: Sequence[dict]) -> str:
    """The table: one row per figure, one column per run (headed by its target)."""
    heads = [str(s.get("target", "?")) for s in summaries]
    cells = []
    for label, get in ROWS:
        row = []
        for s in summaries:
            try:
                row.append(get(s))
            except (KeyError, TypeError, ValueError, IndexError):
                row.append("n/a")  # an older or partial summary: the figure is missing
        cells.append((label, row))
    width = max(len(label) for label, _ in cells)
    cols = [max(len(h), *(len(r[i]) for _, r in cells)) for i, h in enumerate(heads)]
    fabric = {str(s.get("fabric", "?")) for s in summaries}
    out = [f"== side by side: {', '.join(sorted(fabric))}, "
           "figures from a shared machine (see the load average)",
           " " * width + "  " + "  ".join(h.rjust(c) for h, c in zip(heads, cols, strict=True))]
    for label, row in cells:
        out.append(label.ljust(width) + "  " + "  ".join(
            v.rjust(c) for v, c in zip(row, cols, strict=True)))
    return "\n".join(out)
