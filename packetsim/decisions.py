"""A record of the leaves' new-flowlet decisions (``--decisions``; off by default).

For every frame a host sends into its leaf toward another leaf that starts a
new flowlet (its 5-tuple idle longer than the flowlet gap, or never seen), the
log reads, just before the program sees the frame, what the program's GLB
engine will read: each uplink's DRE (decayed to now and quantised by the
uplink's shift), the remote level (fresh in-band feedback, ageing feedback or
SyncMesh's profile, as SGLB_PATH_STATE combines them), the resulting cost and
the capacity weight; and after the frame, the uplink the program chose and
whether its ``new_flowlet`` counter moved. The state is read from the engine's
registers and tables (diagnosis only: nothing is written), so the record is the
program's view, not a model of it. Only decisions cost anything: a few register
reads each, a few hundred per leaf in a 64-connection all-to-all.
"""

from __future__ import annotations

from typing import Any

from sglb.codes import Event

from .observe import tcp_segment

_FB_UNITS = 4          # FB_TIME_SHIFT: feedback times count 16 us units in 28 bits
_FB_MASK = (1 << 28) - 1
_QMAX = 7


class DecisionLog:
    """New-flowlet decisions of the leaves, as plain data for the run's JSON."""

    def __init__(self, leaves: dict[str, Any], dre_period_shift: int,
                 flow_of_port: dict[int, int], leaf_of_ip: dict[bytes, str],
                 leaf_id: dict[str, int]):
        self.leaves = leaves
        self.period_shift = dre_period_shift
        self.flow_of_port = flow_of_port
        self.leaf_of_ip = leaf_of_ip
        self.leaf_id = leaf_id
        self.last_seen: dict[tuple[str, bytes], int] = {}
        self.last_port: dict[tuple[str, bytes], int] = {}
        self.records: list[dict[str, Any]] = []
        self._config: dict[str, tuple[int, ...]] = {}

    def before(self, leaf: str, frame: bytes, now_us: int) -> dict[str, Any] | None:
        """The engine's view of the paths if ``frame`` starts a new flowlet at ``leaf``."""
        sw = self.leaves.get(leaf)
        if sw is None or len(frame) < 34 or frame[12:14] != b"\x08\x00":
            return None
        seg = tcp_segment(frame)
        if seg is None:
            return None
        dst = self.leaf_of_ip.get(frame[30:34])
        if dst is None or dst == leaf:
            return None
        key = (leaf, frame[26:38])   # addresses and ports
        eng = sw.engine
        cfg = self._config.get(leaf)
        if cfg is None:
            cfg = self._config[leaf] = eng.table_get_default("switch_config")[1]
        gap, tol, feedback, fresh, stale, unknown = (cfg[4], cfg[5], cfg[7], cfg[9], cfg[10],
                                                     cfg[11])
        last = self.last_seen.get(key)
        self.last_seen[key] = now_us
        if last is not None and now_us - last <= gap:
            return None
        flow = self.flow_of_port.get(seg[1])
        kind = "data"
        if flow is None:
            flow = self.flow_of_port.get(seg[0])
            kind = "ack"
        dst_id = self.leaf_id[dst]
        _, up = eng.table_get_default("uplinks")
        count = up[1]
        ports, shifts = up[2:2 + (len(up) - 2) // 2], up[2 + (len(up) - 2) // 2:]
        rq = [0] * len(ports)
        w = [1] * len(ports)
        for e in eng.table_entries("dst_profile"):
            if e.key and _key_int(e.key[0]) == dst_id and e.action and e.action.endswith("set_profile"):
                n = len(ports)
                rq, w = list(e.args[1:1 + n]), list(e.args[1 + n:1 + 2 * n])
        now_fb = (now_us >> _FB_UNITS) & _FB_MASK
        paths = []
        for i in range(count):
            port = ports[i]
            x = eng.register_read("dre_bytes", port)
            t = eng.register_read("dre_time", port)
            periods = (now_us - t) >> self.period_shift if now_us > t else 0
            x = 0 if periods >= 32 else x >> periods
            lq = min(_QMAX, x >> shifts[i])
            remote, source = rq[i], "profile"
            owd = None
            if feedback:
                remote = max(remote, unknown)
                word = eng.register_read(f"fb_{i}", dst_id)
                if word >> 31:
                    age = ((now_fb - (word & _FB_MASK)) & _FB_MASK) << _FB_UNITS
                    level = (word >> 28) & 7
                    if age <= fresh:
                        remote, source = level, "fresh"
                        owd = eng.register_read(f"owd_{i}", dst_id)
                    elif age <= stale and level > remote:
                        remote, source = level, "stale"
            paths.append({"port": port, "dre": x, "local": lq, "remote": remote,
                          "source": source, "cost": max(lq, remote), "weight": w[i],
                          "owd": owd})
        return {"t_us": now_us, "leaf": leaf, "dst": dst, "flow": flow, "kind": kind,
                "idle_us": None if last is None else now_us - last,
                "last_port": self.last_port.get(key), "tolerance": tol, "paths": paths,
                "_key": key, "_new": eng.counter_read("SglbIngress.events",
                                                      int(Event.NEW_FLOWLET))[0]}

    def after(self, leaf: str, frame: bytes, view: dict[str, Any] | None,
              uplinks: list[int]) -> None:
        """What the program did with the frame ``before`` looked at: ``uplinks``, the
        uplink ports it went out of."""
        if view is None:
            if uplinks and len(frame) >= 38:
                key = (leaf, frame[26:38])
                if key in self.last_seen:
                    self.last_port[key] = uplinks[0]
            return
        key = view.pop("_key")
        before = view.pop("_new")
        eng = self.leaves[leaf].engine
        view["new_flowlet"] = eng.counter_read("SglbIngress.events",
                                               int(Event.NEW_FLOWLET))[0] > before
        view["chosen"] = uplinks[0] if uplinks else None
        if uplinks:
            self.last_port[key] = uplinks[0]
        self.records.append(view)


def _key_int(value: Any) -> int:
    """The integer of an exact match value (softswitch's ``Exact``), -1 for anything else."""
    v = getattr(value, "value", value)
    return v if isinstance(v, int) else -1
