"""The SGLB encodings, one copy for the whole project: the sizes and widths of
p4src/sglb.p4, quantisation, DRE shifts and level thresholds, capacity
weights and shares, notice epochs, and the argument lists of its
configuration actions. The switch settings (``set_switch``: flowlet gap,
tolerance, feedback) and their defaults are ``sglb.settings``.

SyncMesh (through ``syncmesh.sglb_mapping``), the packet tests and the
benchmarks all compute here what they write into the switch, so the
encodings stay next to the program that decodes them; tests/sglb/
test_sglb_config.py checks every constant below against
``p4src/include/constants.p4`` and the action signatures of the compiled
program, at each MAX_PATHS.

Units and edge cases (docs/sglb.md, "Control-plane reference"): capacities
are in Mbit/s, which is bits per microsecond, the data plane's time unit;
utilisation is a fraction of capacity; times are microseconds. NaN,
infinities and negative numbers are refused with ``ValueError`` everywhere:
they are a caller's bug, never a congestion level. This module imports
nothing of the project.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

PATH_CHOICES = (8, 16, 64)           # MAX_PATHS values p4src/include/paths.p4 accepts
MAX_PATHS = 8                        # the default: paths (uplinks) per leaf
DRE_PERIOD_SHIFT = 6                 # #define DRE_PERIOD_SHIFT (default): period T = 2^6 us
DRE_PERIOD_US = 1 << DRE_PERIOD_SHIFT
DRE_PERIOD_SHIFT_MAX = 24            # T up to 16.8 s: dre_time is 48 bits, any shift fits
DRE_FRAMES_PER_PERIOD = 4            # a period spans at least this many full frames
FLOWLET_GAP_FRAMES = 40              # a flowlet gap spans at least this many full frames
FB_TIME_SHIFT = 4                    # #define FB_TIME_SHIFT: feedback time unit 16 us
QBITS = 3                            # set_profile's rq_i: congestion levels 0..7
QMAX = (1 << QBITS) - 1              # #define QMAX
WBITS = 4                            # set_profile's w_i: capacity weights 0..15
WMAX = (1 << WBITS) - 1
SHIFT_MAX = 31                       # dre_bytes is bit<32>: a larger shift reads 0 forever
PORT_MAX = 511                       # port_t is bit<9>
FULL_LOAD_LEVEL = 6                  # level of a saturated link, on average
EPOCH_BITS = 30                      # notice epochs and write-backs compare mod 2^30
EPOCH_MASK = (1 << EPOCH_BITS) - 1
WRITEBACK_VALID = 1 << 31            # set_profile's ep_i: bit 31 = an epoch is written back
TAG_LENGTH = 20                      # bytes the fabric tag adds to a frame
ETHERNET_FRAME_MAX = 1514            # a 1500-byte MTU frame without FCS
NOTICE_COPIES = 3                    # default copies of every notice a spine sends


def _check_number(value: float, what: str, *, positive: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else ">= 0"
        raise ValueError(f"{what} must be a finite number {bound}, got {value!r}")


def check_max_paths(max_paths: int) -> int:
    """``max_paths`` if the program can be compiled with it (8, 16 or 64)."""
    if max_paths not in PATH_CHOICES:
        raise ValueError(f"MAX_PATHS must be one of {', '.join(map(str, PATH_CHOICES))}, "
                         f"got {max_paths!r}")
    return max_paths


def quantise(utilisation: float, bits: int = QBITS) -> int:
    """Utilisation (0.0 = idle, 1.0 = line rate) as a congestion level 0..2^bits - 1.

    Level k covers [k, k+1) / 2^bits of the capacity; anything at or above
    line rate is the top level.
    """
    if not 1 <= bits <= 8:
        raise ValueError(f"bits must be within 1..8, got {bits!r}")
    _check_number(utilisation, "utilisation")
    return min((1 << bits) - 1, int(utilisation * (1 << bits)))


def dre_period_shift_for(slowest_mbps: float) -> int:
    """DRE_PERIOD_SHIFT for a fabric whose slowest link runs at ``slowest_mbps``.

    The estimate is meant to average several frames: the period T = 2^shift us
    is the smallest power of two that spans DRE_FRAMES_PER_PERIOD full-size
    frames of the slowest link, and at least the default 64 us (CONGA's scale
    for 10-100 Gbit/s links). On the software testbed (2 Mbit/s links: a
    1,514-byte frame takes 6 ms) that is 2^15 us = 33 ms; with the default
    64 us a single frame there reads "saturated" for 0.4 ms and idle after.
    """
    _check_number(slowest_mbps, "slowest link (Mbit/s)", positive=True)
    frames_us = DRE_FRAMES_PER_PERIOD * ETHERNET_FRAME_MAX * 8 / slowest_mbps
    return min(DRE_PERIOD_SHIFT_MAX, max(DRE_PERIOD_SHIFT, math.ceil(math.log2(frames_us))))


def flowlet_gap_floor_us(slowest_mbps: float) -> int:
    """The shortest flowlet gap (us) that fits a fabric whose slowest link runs at
    ``slowest_mbps``: FLOWLET_GAP_FRAMES full-size frames of that link.

    A gap is meant to be longer than the spread of a TCP window across paths,
    which, with queues of so many frames, grows with the frame time. At 10
    Gbit/s 40 frames take 48 us, below the 200 us default, so data-centre
    fabrics keep their gap; on the software testbed (2 Mbit/s: 6 ms a frame)
    it is 242 ms, where a 500 us gap made every frame its own flowlet and SGLB
    re-chose a path per frame (docs/sglb-vs-ecmp.md, #14).
    """
    _check_number(slowest_mbps, "slowest link (Mbit/s)", positive=True)
    return math.ceil(FLOWLET_GAP_FRAMES * ETHERNET_FRAME_MAX * 8 / slowest_mbps)


def dre_shift(capacity_mbps: float, period_shift: int = DRE_PERIOD_SHIFT) -> int:
    """Shift that maps a port's DRE bytes to a congestion level for its capacity.

    With the estimate halved every period T (2^period_shift us, the program's
    DRE_PERIOD_SHIFT) and fed at a constant rate R, it swings between R*T and
    2*R*T bytes (mean 1.5*R*T); the shift puts that mean at level
    FULL_LOAD_LEVEL when R is the link capacity. Being a power of two, the
    scale is exact to a factor of sqrt(2). Capacities so small that a byte is
    already level 6 get shift 0.
    """
    _check_number(capacity_mbps, "capacity (Mbit/s)", positive=True)
    if not 0 <= period_shift <= DRE_PERIOD_SHIFT_MAX:
        raise ValueError(f"period_shift must be within 0..{DRE_PERIOD_SHIFT_MAX}, "
                         f"got {period_shift!r}")
    bytes_per_period = capacity_mbps * (1 << period_shift) / 8   # Mbit/s = bit/us
    shift = max(0, round(math.log2(1.5 * bytes_per_period / FULL_LOAD_LEVEL)))
    if shift > SHIFT_MAX:
        raise ValueError(f"capacity {capacity_mbps!r} Mbit/s overflows the 32-bit DRE")
    return shift


def level_thresholds(capacity_mbps: float, period_shift: int = DRE_PERIOD_SHIFT) -> list[int]:
    """port_levels' set_levels(t1..t7): DRE bytes at which the port reaches levels 1..7.

    The same scale as a leaf's ``bytes >> dre_shift``: level k from k << shift
    bytes, so a spine's tag and a leaf's own DRE read a link alike.
    """
    shift = dre_shift(capacity_mbps, period_shift)
    return [min(k << shift, 0xFFFFFFFF) for k in range(1, QMAX + 1)]


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


def downlink_share(capacity_a: float, capacity_b: float) -> int:
    """leaf_downlinks' share_a: flows (of 256) a spine sends on member a when both are up.

    In proportion to capacity, so both members run at the same utilisation
    and the profile (load over summed capacity) is the real bottleneck's;
    at least 1 and at most 255 so that neither member is left idle.
    """
    _check_number(capacity_a, "capacity_a", positive=True)
    _check_number(capacity_b, "capacity_b", positive=True)
    return min(255, max(1, round(256 * capacity_a / (capacity_a + capacity_b))))


def _check_epoch(epoch: int) -> None:
    if isinstance(epoch, bool) or not isinstance(epoch, int) or not 0 <= epoch <= 0xFFFFFFFF:
        raise ValueError(f"epoch {epoch!r} does not fit 32 bits")


def epoch_newer(a: int, b: int) -> bool:
    """True when notice epoch ``a`` is newer than ``b`` (the spine's 32-bit
    port-status seqs) as sglb.p4 decides it: mod 2^30, newer iff
    0 < a - b < 2^29 (RFC 1982 serial-number arithmetic)."""
    _check_epoch(a)
    _check_epoch(b)
    ahead = (a - b) & EPOCH_MASK
    return ahead != 0 and ahead < 1 << (EPOCH_BITS - 1)


def writeback(epoch: int | None) -> int:
    """set_profile's ep_i for the notice epoch the control plane has taken
    into account (None: none yet, so every notice about the path wins)."""
    if epoch is None:
        return 0
    _check_epoch(epoch)
    return WRITEBACK_VALID | (epoch & EPOCH_MASK)


Params = list[tuple[str, int]]
"""An action's arguments as (parameter name, value), in the order of its P4 signature."""


def _pad(values: Sequence[int], what: str, limit: int, max_paths: int) -> list[int]:
    if len(values) > max_paths:
        raise ValueError(f"{what}: at most {max_paths} paths, got {len(values)}")
    for i, v in enumerate(values):
        if not 0 <= v <= limit:
            raise ValueError(f"{what}[{i}] = {v} is outside 0..{limit}")
    return list(values) + [0] * (max_paths - len(values))


def profile_params(live_mask: int, remote: Sequence[int], weights: Sequence[int],
                   epochs: Sequence[int] = (), max_paths: int = MAX_PATHS) -> Params:
    """dst_profile's set_profile(live_mask, rq_i.., w_i.., ep_i..); missing paths are 0.

    ``epochs[i]`` is ``writeback(e)`` of the notice epoch e of path i's spine
    that the control plane's view already includes: a notice with a newer
    epoch keeps its effect until the control plane writes back at least it.
    """
    check_max_paths(max_paths)
    if not 0 <= live_mask < 1 << max_paths:
        raise ValueError(f"live_mask {live_mask:#x} does not fit {max_paths} bits")
    rq = _pad(remote, "remote", QMAX, max_paths)
    w = _pad(weights, "weights", WMAX, max_paths)
    ep = _pad(epochs, "epochs", 0xFFFFFFFF, max_paths)
    return [("live_mask", live_mask), *((f"rq{i}", v) for i, v in enumerate(rq)),
            *((f"w{i}", v) for i, v in enumerate(w)),
            *((f"ep{i}", v) for i, v in enumerate(ep))]


def uplinks_params(paths: Mapping[int, tuple[int, int]], max_paths: int = MAX_PATHS) -> Params:
    """uplinks' set_uplinks(path_slots, path_count, port_i.., shift_i..) from
    {path index: (port, shift)}; path_slots has bit i set for every path given."""
    check_max_paths(max_paths)
    for index in paths:
        if not 0 <= index < max_paths:
            raise ValueError(f"path index {index} is outside 0..{max_paths - 1}")
    ports = _pad([paths[i][0] if i in paths else 0 for i in range(max_paths)], "ports",
                 PORT_MAX, max_paths)
    shifts = _pad([paths[i][1] if i in paths else 0 for i in range(max_paths)], "shifts",
                  SHIFT_MAX, max_paths)
    return [("path_slots", sum(1 << i for i in paths)),
            ("path_count", max(paths, default=-1) + 1),
            *((f"port{i}", v) for i, v in enumerate(ports)),
            *((f"shift{i}", v) for i, v in enumerate(shifts))]


def levels_params(capacity_mbps: float, period_shift: int = DRE_PERIOD_SHIFT) -> Params:
    """port_levels' set_levels(t1..t7) for a port of this capacity."""
    return [(f"t{k}", t) for k, t in
            enumerate(level_thresholds(capacity_mbps, period_shift), start=1)]


def downlinks_params(port_a: int, port_b: int, share_a: int) -> Params:
    """leaf_downlinks' set_downlinks(port_a, port_b, share_a) (b = a for a single link)."""
    for name, value, limit in (("port_a", port_a, PORT_MAX), ("port_b", port_b, PORT_MAX),
                               ("share_a", share_a, 255)):
        if not 0 <= value <= limit:
            raise ValueError(f"{name} = {value} is outside 0..{limit}")
    return [("port_a", port_a), ("port_b", port_b), ("share_a", share_a)]


def profile_args(live_mask: int, remote: Sequence[int], weights: Sequence[int],
                 epochs: Sequence[int] = (), max_paths: int = MAX_PATHS) -> list[int]:
    """The values of ``profile_params``, positionally."""
    return [v for _, v in profile_params(live_mask, remote, weights, epochs, max_paths)]


def uplinks_args(ports: Sequence[int], shifts: Sequence[int],
                 max_paths: int = MAX_PATHS) -> list[int]:
    """The values of ``uplinks_params`` for paths 0..n-1 (ports[i], shifts[i])."""
    if len(shifts) != len(ports):
        raise ValueError(f"{len(ports)} ports but {len(shifts)} shifts")
    if len(ports) > max_paths:
        raise ValueError(f"ports: at most {max_paths} paths, got {len(ports)}")
    return [v for _, v in uplinks_params(dict(enumerate(zip(ports, shifts, strict=True))),
                                         max_paths)]
