"""Where a testbed failover's time goes, from the run's logs (no I/O but reading files).

A cut helps the data plane only once the P4 program has the port-status packet:

* softswitch injects it itself when it sees the carrier change, and logs
  ``port_status port=P up=U`` (``logs/<node>.softswitch.log``);
* BMv2 never does: the switch's SyncMesh daemon sends it as PacketOut and logs
  ``event=port_status_sent port=P up=U`` once the switch has taken it
  (``logs/<switch>.syncmesh.log``).

``port_status_delay`` reads whichever line the run's target writes, so both
targets' figures mean the same thing: the cut until the program can act.
``reccl_silences`` picks the ReCCL channels declared dead by silence (not by
their NIC's carrier) around a fault.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

_TS = r"ts=(?P<ts>\S+)Z"
_SOFTSWITCH = re.compile(_TS + r" .*\bport_status port=(?P<port>\d+) up=(?P<up>True|False)\b")
_DAEMON = re.compile(_TS + r" .*\bevent=port_status_sent port=(?P<port>\d+) "
                           r"up=(?P<up>True|False)\b")
SLACK = 0.002
"""Log stamps have millisecond resolution: a line stamped this much before the cut counts."""


def _when(ts: str) -> float:
    return dt.datetime.fromisoformat(ts).replace(tzinfo=dt.UTC).timestamp()


def log_file(log_dir: Path, target: str, node: str, switch: str) -> Path:
    """The log that records when ``switch``'s program got a port-status packet on ``target``."""
    if target == "bmv2":
        return log_dir / f"{switch}.syncmesh.log"
    return log_dir / f"{node}.softswitch.log"


def port_status_delay(log_dir: Path, target: str, node: str, switch: str, port: int, up: bool,
                      after: float, window: float = 10.0) -> float | None:
    """Seconds from ``after`` until ``switch``'s program got the port-status packet of
    ``port`` going ``up`` (the first such line within ``window``); None if no log says so."""
    path = log_file(log_dir, target, node, switch)
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return None
    pattern = _DAEMON if target == "bmv2" else _SOFTSWITCH
    for line in text.splitlines():
        m = pattern.search(line)
        if m is None or int(m["port"]) != port or (m["up"] == "True") != up:
            continue
        try:
            t = _when(m["ts"])
        except ValueError:
            continue
        if after - SLACK <= t <= after + window:
            return max(0.0, t - after)
    return None


def reccl_silences(lines: Mapping[str, Iterable[dict]], since: float,
                   until: float) -> list[dict]:
    """Channels a rank declared dead because they went silent, in [since, until), oldest
    first: host, peer rank, channel, after how long (s after ``since``) and the reason."""
    out = []
    for host, reports in lines.items():
        for report in reports:
            for ev in report.get("channel_events", ()) if report.get("done") else ():
                t = ev.get("t")
                if (ev.get("kind") == "channel_down" and "silent for" in str(ev.get("detail"))
                        and isinstance(t, int | float) and since <= t < until):
                    out.append({"host": host, "peer": ev.get("peer"),
                                "channel": ev.get("channel"), "after_s": round(t - since, 4),
                                "detail": str(ev.get("detail"))[:200]})
    return sorted(out, key=lambda x: x["after_s"])
