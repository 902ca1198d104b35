"""Control-plane arithmetic for p4src/sglb.p4: quantisation, DRE shifts,
capacity weights, and the argument lists of its configuration actions.

SyncMesh (or a test) computes here what it writes through P4Runtime, so the
encodings stay next to the program that decodes them (docs/sglb.md,
"Control-plane reference").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from sglb.codes import MAX_PATHS, LbMode, Role

DRE_PERIOD_SHIFT = 6                 # must match constants.p4
DRE_PERIOD_US = 1 << DRE_PERIOD_SHIFT
QBITS = 3                            # remote / local congestion levels 0..7
QMAX = (1 << QBITS) - 1
WBITS = 4                            # capacity weights 0..15
WMAX = (1 << WBITS) - 1
FULL_LOAD_LEVEL = 6                  # level of a saturated link, on average


def quantise(utilisation: float) -> int:
    """Utilisation (0.0 = idle, 1.0 = full) as a congestion level 0..QMAX."""
    if not math.isfinite(utilisation) or utilisation < 0:
        raise ValueError(f"utilisation must be a finite number >= 0, got {utilisation!r}")
    return min(QMAX, int(utilisation * (QMAX + 1)))


def dre_shift(capacity_bps: float) -> int:
    """Shift that maps a port's DRE bytes to a congestion level for its capacity.

    With the estimate halved every period T and fed at a constant rate R, it
    swings between R*T and 2*R*T bytes (mean 1.5*R*T); the shift puts that
    mean at level FULL_LOAD_LEVEL when R is the link capacity. Being a power
    of two, the scale is exact to a factor of sqrt(2).
    """
    if not math.isfinite(capacity_bps) or capacity_bps <= 0:
        raise ValueError(f"capacity must be a finite number > 0 bit/s, got {capacity_bps!r}")
    bytes_per_period = capacity_bps / 8 / 1e6 * DRE_PERIOD_US
    return max(0, round(math.log2(1.5 * bytes_per_period / FULL_LOAD_LEVEL)))


def capacity_weights(capacities: Sequence[float]) -> list[int]:
    """Capacities (any unit, 0 = unusable) as weights 0..WMAX; the largest gets WMAX
    and every usable path at least 1."""
    if any(not math.isfinite(c) or c < 0 for c in capacities):
        raise ValueError(f"capacities must be finite numbers >= 0, got {list(capacities)!r}")
    top = max(capacities, default=0)
    if top == 0:
        return [0] * len(capacities)
    return [0 if c == 0 else max(1, round(c / top * WMAX)) for c in capacities]


def _pad(values: Sequence[int], what: str, limit: int) -> list[int]:
    if len(values) > MAX_PATHS:
        raise ValueError(f"{what}: at most {MAX_PATHS} paths, got {len(values)}")
    for i, v in enumerate(values):
        if not 0 <= v <= limit:
            raise ValueError(f"{what}[{i}] = {v} is outside 0..{limit}")
    return list(values) + [0] * (MAX_PATHS - len(values))


def profile_args(live_mask: int, gen: int, remote: Sequence[int],
                 weights: Sequence[int]) -> list[int]:
    """Arguments of dst_profile's set_profile(live_mask, gen, rq0..7, w0..7)."""
    if not 0 <= live_mask < 1 << MAX_PATHS:
        raise ValueError(f"live_mask {live_mask:#x} does not fit {MAX_PATHS} bits")
    if not 0 <= gen <= 255:
        raise ValueError(f"gen {gen} is outside 0..255")
    return [live_mask, gen, *_pad(remote, "remote", QMAX), *_pad(weights, "weights", WMAX)]


def uplinks_args(ports: Sequence[int], shifts: Sequence[int]) -> list[int]:
    """Arguments of uplinks' set_uplinks(path_slots, port0..7, shift0..7); path i
    exists when ports[i] is given."""
    if len(shifts) != len(ports):
        raise ValueError(f"{len(ports)} ports but {len(shifts)} shifts")
    slots = (1 << len(ports)) - 1
    return [slots, *_pad(ports, "ports", 511), *_pad(shifts, "shifts", 31)]


def switch_args(role: Role, switch_id: int, mac: int, flowlet_gap_us: int,
                mode: LbMode = LbMode.SGLB, tie_tolerance: int = 1,
                notice_group: int = 0) -> list[int]:
    """Arguments of switch_config's set_switch(role, lb_mode, switch_id,
    switch_mac, flowlet_gap, tie_tolerance, notice_group)."""
    checks = [("switch_id", switch_id, 0xFFFF), ("mac", mac, (1 << 48) - 1),
              ("flowlet_gap_us", flowlet_gap_us, (1 << 48) - 1),
              ("tie_tolerance", tie_tolerance, 255), ("notice_group", notice_group, 0xFFFF)]
    for name, value, limit in checks:
        if not 0 <= value <= limit:
            raise ValueError(f"{name} = {value} is outside 0..{limit}")
    return [int(role), int(mode), switch_id, mac, flowlet_gap_us, tie_tolerance, notice_group]
