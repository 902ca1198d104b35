"""The encodings of the Tofino program (p4src/tna/sglb.p4), one copy.

What differs from the v1model program's encodings (``sglb.config``), and why
(docs/sglb.md, "The Tofino program"):

* *Nanoseconds.* Tofino's timestamps count ns: flowlet_gap, gap_margin and
  gap_unknown are ns (32 bits: at most 4.29 s); fb_fresh is in feedback units
  of 2^FB_TIME_SHIFT ns; fb_stale and unknown_level are not parameters (the
  control plane floors the profile's remote levels itself). ``set_switch``
  itself is encoded, and its limits checked, with the v1model program's in
  ``sglb.settings`` (``switch_params(SwitchTarget.TOFINO, ...)``).
* *Bit planes.* The remote level of every path travels as three masks
  rq0..rq2 (bit j of each path's level), so that the data plane can find the
  least-congested band with bitwise logic.
* *Draws.* Capacity weights become a weight profile (``wprof``) and a table
  of rows of four paths drawn in proportion to capacity (``draw_rows``).
* *Levels by ternary match.* port_levels holds one ternary entry per level and
  port (the estimate's bits above the port's shift).
* *Band by lookup.* band_level finds the lowest level of an eligible path by
  entry priority and cuts the band at that level plus tie_tolerance in the
  same step, so its entries depend on the switch's tolerance
  (``band_entries``).
* *A spine's draws without multiplication.* A spine's draw_cursor adds
  DRAW_STRIDE per draw; the destination's part of the point (v1model's
  dst_leaf * DRAW_LEAF_STRIDE) comes from leaf_downlinks (``draw_base``).
* *Write-backs are packets.* A notice epoch is confirmed by a notice of kind
  ``NOTICE_WRITEBACK`` sent as a PacketOut (``writeback_frame``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from sglb.config import (
    EPOCH_MASK,
    MAX_PATHS,
    PORT_MAX,
    QMAX,
    check_max_paths,
    dre_shift,
)
from sglb.headers import NOTICE_WRITEBACK

FB_TIME_SHIFT_NS = 14            # p4src/tna/words.p4: feedback units of 2^14 ns
FB_GEN_SHIFT_NS = 23             # freshness generations of 2^23 ns (8.4 ms)
DRAW_ROW_BITS = 6                # rows of the draws table per weight profile
DRAW_ROWS = 1 << DRAW_ROW_BITS
DRAW_COLUMNS = 4                 # paths drawn per row
WEIGHT_PROFILES = 64             # weight profiles the draws table holds
U32 = 0xFFFFFFFF
NS_PER_US = 1000
MAX_LEAVES = 1024                # p4src/tna/words.p4: 10-bit leaf ids
DRAW_STRIDE = 40503              # p4src/include/constants.p4: (sqrt(5) - 1) / 2 * 2^16
DRAW_LEAF_STRIDE = 27146         # (sqrt(2) - 1) * 2^16


def level_planes(levels: Sequence[int], max_paths: int = MAX_PATHS) -> tuple[int, int, int]:
    """The three bit planes (rq0, rq1, rq2) of per-path levels 0..QMAX."""
    check_max_paths(max_paths)
    if len(levels) > max_paths:
        raise ValueError(f"levels: at most {max_paths} paths, got {len(levels)}")
    planes = [0, 0, 0]
    for i, level in enumerate(levels):
        if not 0 <= level <= QMAX:
            raise ValueError(f"levels[{i}] = {level} is outside 0..{QMAX}")
        for j in range(3):
            if level >> j & 1:
                planes[j] |= 1 << i
    return planes[0], planes[1], planes[2]


def at_most(planes: tuple[int, int, int], level: int, max_paths: int) -> int:
    """Mask of the paths whose level (given as bit planes) is at most ``level``:
    what band_level keeps below its cut, here by comparing each path's value."""
    out = 0
    for i in range(max_paths):
        value = sum((planes[j] >> i & 1) << j for j in range(3))
        if value <= level:
            out |= 1 << i
    return out


@dataclass(frozen=True)
class BandEntry:
    """One ternary entry of band_level: path ``path`` eligible (live_safe) at
    ``level`` (its bits in the planes fb0..fb2); ``cut`` = min(level +
    tolerance, QMAX), the action ``above_<cut>``; a lower level has a higher
    ``priority``."""
    path: int
    level: int
    cut: int
    priority: int

    def key(self) -> tuple[tuple[int, int], ...]:
        """(value, mask) of live_safe, fb0, fb1, fb2."""
        bit = 1 << self.path
        return ((bit, bit), *(((self.level >> j & 1) << self.path, bit) for j in range(3)))


def band_entries(tie_tolerance: int, paths: Sequence[int], max_paths: int = MAX_PATHS) -> list[BandEntry]:
    """band_level's entries for the configured ``paths``: for each level below
    QMAX (level QMAX, or no eligible path, is the table's default: no cut) and
    path, its cut at min(level + tie_tolerance, QMAX)."""
    check_max_paths(max_paths)
    if not 0 <= tie_tolerance <= 255:
        raise ValueError(f"tie_tolerance = {tie_tolerance} is outside 0..255")
    for i in paths:
        if not 0 <= i < max_paths:
            raise ValueError(f"path index {i} is outside 0..{max_paths - 1}")
    return [BandEntry(i, level, min(level + tie_tolerance, QMAX), QMAX - level)
            for level in range(QMAX) for i in sorted(paths)]


def _apportion(weights: Sequence[int], slots: int) -> list[int]:
    """Slots per path in proportion to weights (largest remainder; every
    non-zero weight at least one slot when there are enough slots)."""
    total = sum(weights)
    exact = [w * slots / total for w in weights]
    counts = [math.floor(x) for x in exact]
    order = sorted(range(len(weights)), key=lambda i: (counts[i] - exact[i], i))
    for i in order[:slots - sum(counts)]:
        counts[i] += 1
    for i, w in enumerate(weights):     # a thin path is never left out
        if w and not counts[i]:
            donor = max(range(len(counts)), key=lambda k: counts[k])
            counts[donor] -= 1
            counts[i] += 1
    return counts


def draw_rows(weights: Sequence[int], rows: int = DRAW_ROWS,
              columns: int = DRAW_COLUMNS) -> list[tuple[int, ...]]:
    """The rows of one weight profile: ``columns`` path indices per row.

    Every column holds each path in proportion to its weight (largest
    remainder over ``rows`` slots), each column in its own fixed shuffled
    order, so that the columns of a row are (nearly) independent draws: the
    first draw that is a candidate is then a capacity-proportional pick among
    the candidates (rejection sampling), and all draws miss with probability
    about (1 - candidates' share)^columns, when the lowest candidate is taken.
    Deterministic: the same weights give the same rows.
    """
    if rows < 1 or columns < 1:
        raise ValueError("rows and columns must be >= 1")
    if any(w < 0 for w in weights):
        raise ValueError(f"negative weight in {list(weights)}")
    if not any(weights):
        raise ValueError("a weight profile needs a non-zero weight")
    counts = _apportion(weights, rows)
    sequence = [i for i, c in enumerate(counts) for _ in range(c)]
    cols = []
    for j in range(columns):
        col = list(sequence)
        random.Random(j + 1).shuffle(col)
        cols.append(col)
    return [tuple(cols[j][r] for j in range(columns)) for r in range(rows)]


@dataclass(frozen=True)
class LevelEntry:
    """One ternary entry of port_levels: estimates e with e & mask == value read
    ``level``."""

    value: int
    mask: int
    level: int


def level_entries(capacity_mbps: float, period_shift: int) -> list[LevelEntry]:
    """port_levels' ternary entries of a port: level k is estimate >> shift for
    k < 8, shift being the v1model program's (thresholds k << shift bytes: the
    Lpf runs in rate mode with the DRE period as time constant, so it reads on
    that scale); an estimate of 8 << shift or more matches no entry and reads
    QMAX, the table's default. Ternary, not range: bf-p4c matches ranges on at
    most 5 nibbles of a key, the estimate has 8."""
    shift = dre_shift(capacity_mbps, period_shift)
    mask = U32 & ~((1 << shift) - 1)
    return [LevelEntry(level << shift, mask, level) for level in range(QMAX + 1)
            if level << shift <= U32]


def draw_base(dst_leaf: int, swapped_share: int | None = None) -> int:
    """leaf_downlinks' draw_base: the first draw point of ``dst_leaf`` on an SGLB
    spine, so that its n-th is n * DRAW_STRIDE + dst_leaf * DRAW_LEAF_STRIDE (mod
    2^16), the v1model program's (draw_cursor adds the other n - 1 strides).

    ``swapped_share``: the v1model share_a of a bundle whose members the Tofino
    program lists the other way round (port_a the lower port, share_a 256 minus
    it); the points move down by it, so that every draw gives the same link as
    in the v1model program: top 8 bits - share < 256 - share iff top >= share.
    """
    if isinstance(dst_leaf, bool) or not 0 <= dst_leaf < MAX_LEAVES:
        raise ValueError(f"dst_leaf {dst_leaf!r} is outside 0..{MAX_LEAVES - 1}")
    base = DRAW_STRIDE + dst_leaf * DRAW_LEAF_STRIDE
    if swapped_share is not None:
        if not 1 <= swapped_share <= 255:
            raise ValueError(f"share_a {swapped_share!r} is outside 1..255")
        base -= swapped_share << 8
    return base % (1 << 16)


PATH_WORD_VALID = 1 << 15


def path_word(path: int, port: int) -> int:
    """The word a flowlet keeps (draws, lowest_path, flowlet_path): valid (bit 15)
    ++ path (14:9) ++ port (8:0)."""
    if not 0 <= path < 64:
        raise ValueError(f"path {path} is outside 0..63")
    if not 0 <= port <= PORT_MAX:
        raise ValueError(f"port {port} is outside 0..{PORT_MAX}")
    return PATH_WORD_VALID | path << 9 | port


def lowest_entries(ports: dict[int, int], max_paths: int = MAX_PATHS) -> list[tuple[int, int, int, int]]:
    """lowest_path's ternary entries (value, mask, path, port): path i matches
    when bit i is set and bits 0..i-1 are clear (the masks never overlap)."""
    check_max_paths(max_paths)
    out = []
    for i in sorted(ports):
        if not 0 <= i < max_paths:
            raise ValueError(f"path index {i} is outside 0..{max_paths - 1}")
        if not 0 <= ports[i] <= PORT_MAX:
            raise ValueError(f"port {ports[i]} is outside 0..{PORT_MAX}")
        out.append((1 << i, (1 << (i + 1)) - 1, i, ports[i]))
    return out


def writeback_frame(spine_id: int, leaf_id: int, epoch: int, src_mac: int = 0) -> bytes:
    """The frame that confirms a notice epoch to the Tofino program, sent as a
    PacketOut with packet_out.op 0 (run the pipeline): Ethernet 0x88B6 and a
    notice of kind NOTICE_WRITEBACK naming (spine, leaf, epoch)."""
    for name, value, limit in (("spine_id", spine_id, 0xFFFF), ("leaf_id", leaf_id, 0xFFFF),
                               ("epoch", epoch, U32), ("src_mac", src_mac, (1 << 48) - 1)):
        if not 0 <= value <= limit:
            raise ValueError(f"{name} = {value} is outside 0..{limit}")
    ethernet = b"\xff" * 6 + src_mac.to_bytes(6, "big") + b"\x88\xb6"
    notice = (bytes([1, NOTICE_WRITEBACK, 12, 0]) + spine_id.to_bytes(2, "big")
              + leaf_id.to_bytes(2, "big") + (epoch & EPOCH_MASK).to_bytes(4, "big"))
    return ethernet + notice
