"""SGLB's switch settings: one record, its defaults, and the one check of its
bounds on each target.

What an operator may tune on a switch is ``SwitchSettings``: set_switch's
flowlet gap, tie tolerance and in-band feedback settings (``Feedback``), the
copies of every notice a spine sends, and the DRE period the program is
compiled with. The defaults live here only: ``DEFAULT`` is what ``syncmesh
run`` writes unless told otherwise, ``TESTBED`` what the Mininet testbed runs
with. The ``default_action`` of ``switch_config`` in p4src/sglb.p4 and
p4src/tna/sglb.p4 (the state before the control plane writes) encodes
``DEFAULT`` with feedback off; tests/sglb/test_sglb_config.py checks both.

Bounds come in two kinds. The record refuses what no target can hold
(non-integers, negative values, a stale horizon before the fresh one, a level
above QMAX, 0 or more than 16 notice copies). ``SwitchSettings.check(target)``
refuses what one target's ``set_switch`` cannot hold: ``LIMITS`` derives
them from its parameter widths and time unit (v1model: 32-bit microseconds;
Tofino and Tofino 2: 32-bit nanoseconds, a 16-bit frame length). Every
error is a ``SettingsError`` that names the setting.

``switch_params`` encodes the settings as each target's ``set_switch``
(docs/sglb.md, "Control-plane reference" and "The Tofino program").
"""

from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass

from sglb.codes import LbMode, Role
from sglb.config import (
    DRE_PERIOD_SHIFT,
    DRE_PERIOD_SHIFT_MAX,
    ETHERNET_FRAME_MAX,
    NOTICE_COPIES,
    QMAX,
    Params,
)
from sglb.tna_config import FB_TIME_SHIFT_NS, NS_PER_US

U32 = 0xFFFFFFFF
NOTICE_COPIES_MAX = 16        # replicas per port a notice group may hold


class SettingsError(ValueError):
    """A setting outside what the record or a target holds; the message names it."""


class SwitchTarget(enum.Enum):
    """Where an SGLB switch runs: p4src/sglb.p4 on a v1model target (softswitch,
    BMv2), or p4src/tna/sglb.p4 compiled for Tofino or Tofino 2."""

    V1MODEL = "v1model"
    TOFINO = "tofino"
    TOFINO2 = "tofino2"

    @property
    def is_tna(self) -> bool:
        """True for the Tofino program (p4src/tna/sglb.p4)."""
        return self is not SwitchTarget.V1MODEL


def _whole(value: object, what: str, low: int, high: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low \
            or (high is not None and value > high):
        if high is None:
            raise SettingsError(f"{what} = {value!r} is not an integer >= {low}")
        raise SettingsError(f"{what} = {value!r} is outside {low}..{high}")


@dataclass(frozen=True)
class Feedback:
    """In-band feedback and flowlet-gap settings of a leaf (set_switch)."""

    enabled: bool = True
    """Tag leaf-to-leaf traffic and use the fed-back congestion (False: profiles only)."""
    tag_frame_max: int = ETHERNET_FRAME_MAX
    """Frames longer than this once tagged go untagged (the fabric's MTU + 14)."""
    fresh_us: int = 10_000
    """Feedback at most this old replaces the profile's remote level."""
    stale_us: int = 100_000
    """Older feedback only raises the level; beyond this it is unknown."""
    unknown_level: int = 0
    """Floor of the remote level where feedback is not fresh: 0 defers to the profile
    (which SyncMesh ages toward high when its spine is silent); a higher floor makes
    leaves prefer measured paths, at the price of exploring unmeasured ones less."""
    gap_margin_us: int = 100
    """Added to a measured one-way-delay skew before a flowlet may move."""
    gap_unknown_us: int = 100_000
    """Idle time a flowlet needs to move where the delays are not known."""

    def __post_init__(self) -> None:
        if not isinstance(self.enabled, bool):
            raise SettingsError(f"feedback enabled = {self.enabled!r} is not a bool")
        for name in ("tag_frame_max", "fresh_us", "stale_us", "gap_margin_us",
                     "gap_unknown_us"):
            _whole(getattr(self, name), f"feedback {name}", 0)
        _whole(self.unknown_level, "feedback unknown_level", 0, QMAX)
        if self.stale_us < self.fresh_us:
            raise SettingsError(f"feedback stale_us {self.stale_us} < fresh_us {self.fresh_us}")


@dataclass(frozen=True)
class Limits:
    """The largest value of each setting that one target's set_switch holds
    (times in microseconds, whatever the target's unit)."""

    flowlet_gap_us: int
    tie_tolerance: int
    tag_frame_max: int
    fresh_us: int
    stale_us: int
    gap_margin_us: int
    gap_unknown_us: int
    unit: str
    """How the target holds times, named in errors."""


_V1MODEL_LIMITS = Limits(flowlet_gap_us=U32, tie_tolerance=0xFF, tag_frame_max=U32,
                         fresh_us=U32, stale_us=U32,
                         gap_margin_us=(1 << 31) - 1,   # added to a skew in 32 bits
                         gap_unknown_us=U32, unit="32-bit us")
# the Tofino program counts ns in 32 bits; fb_fresh is capped in 2^14-ns units and
# fb_stale is not a parameter (the control plane floors the levels), so those keep
# the v1model bounds
_TNA_LIMITS = Limits(flowlet_gap_us=U32 // NS_PER_US, tie_tolerance=0xFF, tag_frame_max=0xFFFF,
                     fresh_us=U32, stale_us=U32, gap_margin_us=U32 // NS_PER_US,
                     gap_unknown_us=U32 // NS_PER_US, unit="32-bit ns")
LIMITS = {SwitchTarget.V1MODEL: _V1MODEL_LIMITS, SwitchTarget.TOFINO: _TNA_LIMITS,
          SwitchTarget.TOFINO2: _TNA_LIMITS}
"""Per target, what its set_switch holds (the one table of target limits)."""


@dataclass(frozen=True)
class SwitchSettings:
    """What an operator tunes on an SGLB switch; the defaults are the project's."""

    flowlet_gap_us: int = 200
    """A flow idle this long may change path (the delay-skew rule may hold it longer)."""
    tie_tolerance: int = 1
    """Paths within this many congestion levels of the best count as equally good."""
    feedback: Feedback = Feedback()
    """In-band feedback and delay-skew settings of leaves."""
    notice_copies: int = NOTICE_COPIES
    """Copies of every failure notice a spine sends to each leaf (1..16)."""
    dre_period_shift: int | None = None
    """DRE_PERIOD_SHIFT the program is compiled with (period 2^N us, 0..24); None: the
    program's own default until ``for_slowest_link`` fits it to a fabric."""

    def __post_init__(self) -> None:
        _whole(self.flowlet_gap_us, "flowlet_gap_us", 0)
        _whole(self.tie_tolerance, "tie_tolerance", 0)
        if not isinstance(self.feedback, Feedback):
            raise SettingsError(f"feedback = {self.feedback!r} is not a Feedback")
        _whole(self.notice_copies, "notice_copies", 1, NOTICE_COPIES_MAX)
        if self.dre_period_shift is not None:
            _whole(self.dre_period_shift, "dre_period_shift", 0, DRE_PERIOD_SHIFT_MAX)

    @property
    def period_shift(self) -> int:
        """The DRE_PERIOD_SHIFT in force: the one set, else the program's default."""
        return DRE_PERIOD_SHIFT if self.dre_period_shift is None else self.dre_period_shift

    def for_slowest_link(self, slowest_mbps: float) -> SwitchSettings:
        """These settings fitted to a fabric whose slowest link runs at ``slowest_mbps``:
        the DRE period (``sglb.config.dre_period_shift_for``) unless one is set, and the
        flowlet gap raised to at least ``sglb.config.flowlet_gap_floor_us`` (a gap of a
        fraction of a frame makes every frame a flowlet; 10 Gbit/s fabrics keep theirs)."""
        from sglb.config import dre_period_shift_for, flowlet_gap_floor_us

        shift = self.dre_period_shift
        if shift is None:
            shift = dre_period_shift_for(slowest_mbps)
        gap = max(self.flowlet_gap_us, flowlet_gap_floor_us(slowest_mbps))
        return dataclasses.replace(self, dre_period_shift=shift, flowlet_gap_us=gap)

    def check(self, target: SwitchTarget) -> SwitchSettings:
        """These settings if ``target``'s set_switch holds them, else SettingsError."""
        limits = LIMITS[target]
        fb = self.feedback
        for what, value, high, time in (
                ("flowlet_gap_us", self.flowlet_gap_us, limits.flowlet_gap_us, True),
                ("tie_tolerance", self.tie_tolerance, limits.tie_tolerance, False),
                ("feedback tag_frame_max", fb.tag_frame_max, limits.tag_frame_max, False),
                ("feedback fresh_us", fb.fresh_us, limits.fresh_us, True),
                ("feedback stale_us", fb.stale_us, limits.stale_us, True),
                ("feedback gap_margin_us", fb.gap_margin_us, limits.gap_margin_us, True),
                ("feedback gap_unknown_us", fb.gap_unknown_us, limits.gap_unknown_us, True)):
            if value > high:
                unit = f" ({limits.unit})" if time else ""
                raise SettingsError(f"{what} = {value} is outside 0..{high} on "
                                    f"{target.value}{unit}")
        return self


DEFAULT = SwitchSettings()
"""What ``syncmesh run`` writes unless told otherwise."""
TESTBED = dataclasses.replace(DEFAULT, flowlet_gap_us=500)
"""The Mininet testbed's settings (topologies.control.ControlOptions)."""


def switch_params(target: SwitchTarget, role: Role, switch_id: int, mac: int,
                  settings: SwitchSettings = DEFAULT, mode: LbMode = LbMode.SGLB,
                  notice_group: int = 0) -> Params:
    """switch_config's set_switch for ``target``, in the order of its P4 signature.

    v1model: (role, lb_mode, switch_id, switch_mac, flowlet_gap, tie_tolerance,
    notice_group, feedback, tag_frame_max, fb_fresh, fb_stale, unknown_level,
    gap_margin, gap_unknown), times in us. Tofino: the same without fb_stale and
    unknown_level, times in ns and fb_fresh in units of 2^FB_TIME_SHIFT_NS ns.
    """
    settings.check(target)
    _whole(switch_id, "switch_id", 0, 0xFFFF)
    _whole(mac, "mac", 0, (1 << 48) - 1)
    _whole(notice_group, "notice_group", 0, 0xFFFF)
    fb = settings.feedback
    head = [("role", int(role)), ("lb_mode", int(mode)), ("switch_id", switch_id),
            ("switch_mac", mac)]
    if not target.is_tna:
        return [*head, ("flowlet_gap", settings.flowlet_gap_us),
                ("tie_tolerance", settings.tie_tolerance), ("notice_group", notice_group),
                ("feedback", int(fb.enabled)), ("tag_frame_max", fb.tag_frame_max),
                ("fb_fresh", fb.fresh_us), ("fb_stale", fb.stale_us),
                ("unknown_level", fb.unknown_level), ("gap_margin", fb.gap_margin_us),
                ("gap_unknown", fb.gap_unknown_us)]
    fresh_units = min((1 << 28) - 1, math.ceil(fb.fresh_us * NS_PER_US / (1 << FB_TIME_SHIFT_NS)))
    return [*head, ("flowlet_gap", settings.flowlet_gap_us * NS_PER_US),
            ("tie_tolerance", settings.tie_tolerance), ("notice_group", notice_group),
            ("feedback", int(fb.enabled)), ("tag_frame_max", fb.tag_frame_max),
            ("fb_fresh", fresh_units), ("gap_margin", fb.gap_margin_us * NS_PER_US),
            ("gap_unknown", fb.gap_unknown_us * NS_PER_US)]


def switch_args(target: SwitchTarget, role: Role, switch_id: int, mac: int,
                settings: SwitchSettings = DEFAULT, mode: LbMode = LbMode.SGLB,
                notice_group: int = 0) -> list[int]:
    """The values of ``switch_params``, positionally."""
    return [v for _, v in switch_params(target, role, switch_id, mac, settings, mode,
                                        notice_group)]
