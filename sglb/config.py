"""The SGLB encodings, one copy for the whole project: the sizes and widths of
p4src/sglb.p4, quantisation, DRE shifts, capacity weights, and the argument
lists of its configuration actions.

SyncMesh (through ``syncmesh.sglb_mapping``), the packet tests and the
benchmarks all compute here what they write into the switch, so the
encodings stay next to the program that decodes them; tests/sglb/
test_sglb_config.py checks every constant below against
``p4src/include/constants.p4`` and the action signatures of ``sglb.p4``.

Units and edge cases (docs/sglb.md, "Control-plane reference"): capacities
are in Mbit/s, which is bits per microsecond, the data plane's time unit;
utilisation is a fraction of capacity. NaN, infinities and negative numbers
are refused with ``ValueError`` everywhere: they are a caller's bug, never a
congestion level. This module imports nothing of the project but
``sglb.codes``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from sglb.codes import LbMode, Role

MAX_PATHS = 8                        # #define MAX_PATHS: paths (uplinks) per leaf
DRE_PERIOD_SHIFT = 6                 # #define DRE_PERIOD_SHIFT: period T = 2^6 us
DRE_PERIOD_US = 1 << DRE_PERIOD_SHIFT
QBITS = 3                            # set_profile's rq_i: congestion levels 0..7
QMAX = (1 << QBITS) - 1              # #define QMAX
WBITS = 4                            # set_profile's w_i: capacity weights 0..15
WMAX = (1 << WBITS) - 1
SHIFT_MAX = 31                       # dre_bytes is bit<32>: a larger shift reads 0 forever
PORT_MAX = 511                       # port_t is bit<9>
FULL_LOAD_LEVEL = 6                  # level of a saturated link, on average


def _check_number(value: float, what: str, *, positive: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else ">= 0"
        raise ValueError(f"{what} must be a finite number {bound}, got {value!r}")


def quantise(utilisation: float, bits: int = QBITS) -> int:
    """Utilisation (0.0 = idle, 1.0 = line rate) as a congestion level 0..2^bits - 1.

    Level k covers [k, k+1) / 2^bits of the capacity; anything at or above
    line rate is the top level.
    """
    if not 1 <= bits <= 8:
        raise ValueError(f"bits must be within 1..8, got {bits!r}")
    _check_number(utilisation, "utilisation")
    return min((1 << bits) - 1, int(utilisation * (1 << bits)))


def dre_shift(capacity_mbps: float) -> int:
    """Shift that maps a port's DRE bytes to a congestion level for its capacity.

    With the estimate halved every period T and fed at a constant rate R, it
    swings between R*T and 2*R*T bytes (mean 1.5*R*T); the shift puts that
    mean at level FULL_LOAD_LEVEL when R is the link capacity. Being a power
    of two, the scale is exact to a factor of sqrt(2). Capacities so small
    that a byte is already level 6 get shift 0.
    """
    _check_number(capacity_mbps, "capacity (Mbit/s)", positive=True)
    bytes_per_period = capacity_mbps * DRE_PERIOD_US / 8   # Mbit/s = bit/us
    shift = max(0, round(math.log2(1.5 * bytes_per_period / FULL_LOAD_LEVEL)))
    if shift > SHIFT_MAX:
        raise ValueError(f"capacity {capacity_mbps!r} Mbit/s overflows the 32-bit DRE")
    return shift


def capacity_weights(capacities: Sequence[float]) -> list[int]:
    """Capacities (any one unit, 0 = unusable) as weights 0..WMAX.

    The largest gets WMAX, the others their share rounded to the nearest
    integer (halves to even, Python's ``round``), and every usable path at
    least 1 so that a thin path is never mistaken for a dead one.
    """
    for c in capacities:
        _check_number(c, "capacities")
    top = max(capacities, default=0)
    if top == 0:
        return [0] * len(capacities)
    return [0 if c == 0 else max(1, round(c / top * WMAX)) for c in capacities]


Params = list[tuple[str, int]]
"""An action's arguments as (parameter name, value), in the order of its P4 signature."""


def _pad(values: Sequence[int], what: str, limit: int) -> list[int]:
    if len(values) > MAX_PATHS:
        raise ValueError(f"{what}: at most {MAX_PATHS} paths, got {len(values)}")
    for i, v in enumerate(values):
        if not 0 <= v <= limit:
            raise ValueError(f"{what}[{i}] = {v} is outside 0..{limit}")
    return list(values) + [0] * (MAX_PATHS - len(values))


def profile_params(live_mask: int, gen: int, remote: Sequence[int],
                   weights: Sequence[int]) -> Params:
    """dst_profile's set_profile(live_mask, gen, rq0..7, w0..7); missing paths are 0."""
    if not 0 <= live_mask < 1 << MAX_PATHS:
        raise ValueError(f"live_mask {live_mask:#x} does not fit {MAX_PATHS} bits")
    if not 0 <= gen <= 255:
        raise ValueError(f"gen {gen} is outside 0..255")
    rq = _pad(remote, "remote", QMAX)
    w = _pad(weights, "weights", WMAX)
    return [("live_mask", live_mask), ("gen", gen), *((f"rq{i}", v) for i, v in enumerate(rq)),
            *((f"w{i}", v) for i, v in enumerate(w))]


def uplinks_params(paths: Mapping[int, tuple[int, int]]) -> Params:
    """uplinks' set_uplinks(path_slots, port0..7, shift0..7) from {path index: (port, shift)};
    path_slots has bit i set for every path given."""
    for index in paths:
        if not 0 <= index < MAX_PATHS:
            raise ValueError(f"path index {index} is outside 0..{MAX_PATHS - 1}")
    ports = _pad([paths[i][0] if i in paths else 0 for i in range(MAX_PATHS)], "ports", PORT_MAX)
    shifts = _pad([paths[i][1] if i in paths else 0 for i in range(MAX_PATHS)], "shifts",
                  SHIFT_MAX)
    return [("path_slots", sum(1 << i for i in paths)),
            *((f"port{i}", v) for i, v in enumerate(ports)),
            *((f"shift{i}", v) for i, v in enumerate(shifts))]


def switch_params(role: Role, switch_id: int, mac: int, flowlet_gap_us: int,
                  mode: LbMode = LbMode.SGLB, tie_tolerance: int = 1,
                  notice_group: int = 0) -> Params:
    """switch_config's set_switch(role, lb_mode, switch_id, switch_mac, flowlet_gap,
    tie_tolerance, notice_group)."""
    checks = [("switch_id", switch_id, 0xFFFF), ("mac", mac, (1 << 48) - 1),
              ("flowlet_gap_us", flowlet_gap_us, (1 << 48) - 1),
              ("tie_tolerance", tie_tolerance, 255), ("notice_group", notice_group, 0xFFFF)]
    for name, value, limit in checks:
        if not 0 <= value <= limit:
            raise ValueError(f"{name} = {value} is outside 0..{limit}")
    return [("role", int(role)), ("lb_mode", int(mode)), ("switch_id", switch_id),
            ("switch_mac", mac), ("flowlet_gap", flowlet_gap_us),
            ("tie_tolerance", tie_tolerance), ("notice_group", notice_group)]


def profile_args(live_mask: int, gen: int, remote: Sequence[int],
                 weights: Sequence[int]) -> list[int]:
    """The values of ``profile_params``, positionally."""
    return [v for _, v in profile_params(live_mask, gen, remote, weights)]


def uplinks_args(ports: Sequence[int], shifts: Sequence[int]) -> list[int]:
    """The values of ``uplinks_params`` for paths 0..n-1 (ports[i], shifts[i])."""
    if len(shifts) != len(ports):
        raise ValueError(f"{len(ports)} ports but {len(shifts)} shifts")
    if len(ports) > MAX_PATHS:
        raise ValueError(f"ports: at most {MAX_PATHS} paths, got {len(ports)}")
    return [v for _, v in uplinks_params(dict(enumerate(zip(ports, shifts, strict=True))))]


def switch_args(role: Role, switch_id: int, mac: int, flowlet_gap_us: int,
                mode: LbMode = LbMode.SGLB, tie_tolerance: int = 1,
                notice_group: int = 0) -> list[int]:
    """The values of ``switch_params``, positionally."""
    return [v for _, v in switch_params(role, switch_id, mac, flowlet_gap_us, mode,
                                        tie_tolerance, notice_group)]
