"""Congestion profiles: utilisation from port counters, versioned publishing, ageing.

Levels are quantised with ``sglb.config.quantise``, the encoding sglb.p4 reads.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from .linkstate import Version


@dataclass(frozen=True)
class Profile:
    """A spine's congestion toward each leaf (by leaf id), at one version."""

    origin: str
    version: Version
    bits: int
    levels: tuple[tuple[int, int], ...]
    """(destination leaf id, level) pairs, sorted by leaf id."""

    @cached_property
    def by_leaf(self) -> dict[int, int]:
        """Levels keyed by destination leaf id (computed once; do not modify)."""
        return dict(self.levels)

    def as_dict(self) -> dict[int, int]:
        """Levels keyed by destination leaf id (a copy)."""
        return dict(self.levels)


class RateMeter:
    """Turns cumulative per-port byte counters into rates (Mbit/s) that rise at once and fall
    with time constant ``decay``: a short sampling period sees a busy link's packets in
    bursts, and a gap between two bursts must not read as an idle link."""

    def __init__(self, decay: float = 0.0) -> None:
        self.decay = decay
        self._last: dict[int, tuple[int, float]] = {}
        self._rate: dict[int, float] = {}

    def update(self, counters: Mapping[int, int], now: float) -> dict[int, float]:
        """Rates after this sample; ports seen for the first time or reset are skipped."""
        rates: dict[int, float] = {}
        for port, total in counters.items():
            prev = self._last.get(port)
            self._last[port] = (total, now)
            if prev is None:
                continue
            delta, dt = total - prev[0], now - prev[1]
            # a smaller counter means the switch restarted: no rate from this sample
            if delta < 0 or dt <= 0:
                continue
            rate = delta * 8 / dt / 1e6
            if self.decay > 0 and port in self._rate:
                rate = max(rate, self._rate[port] * math.exp(-dt / self.decay))
            self._rate[port] = rates[port] = rate
        return rates


@dataclass(frozen=True)
class Publication:
    """A profile to send: whole, or only the entries that changed since seq - 1."""

    profile: Profile
    delta: bool


class ProfilePublisher:
    """Decides what a spine sends: a delta as soon as levels move, the whole profile each period.

    ``last_sent`` is what every peer holds after the last publication; a
    delta carries the entries that moved by more than ``threshold`` levels
    from it. The periodic whole profile goes out only while measurements
    keep coming, so a spine whose counters stopped falls silent and its
    leaves age its profile (``ProfileStore.level``) instead of trusting it.
    """

    def __init__(self, origin: str, incarnation: int, bits: int, threshold: int, period: float):
        self.origin = origin
        self.incarnation = incarnation
        self.bits = bits
        self.threshold = threshold
        self.period = period
        self.seq = 0
        self.last_sent: dict[int, int] | None = None
        self.last_full_at = -math.inf
        self.current: dict[int, int] | None = None
        self.measured_at = -math.inf
        self.changed_at: dict[int, float] = {}
        """When each destination's published level last changed."""
        self.congested_since: dict[int, float] = {}
        """Destinations whose published level is in the top two, since when."""

    def observe(self, levels: Mapping[int, int], now: float) -> None:
        """Record the latest measured levels."""
        self.current = dict(levels)
        self.measured_at = now

    def due(self, now: float) -> Publication | None:
        """What to send now, with a fresh version, or None."""
        if self.current is None:
            return None
        if self.last_sent is None or (now - self.last_full_at >= self.period
                                      and self.measured_at > self.last_full_at):
            self.seq += 1
            self._note(self.current, now)
            self.last_sent = dict(self.current)
            self.last_full_at = now
            latest = self.latest()
            assert latest is not None
            return Publication(latest, False)
        moved = {dst: lv for dst, lv in self.current.items()
                 if dst not in self.last_sent or abs(lv - self.last_sent[dst]) > self.threshold}
        if not moved:
            return None
        self.seq += 1
        self._note(moved, now)
        self.last_sent.update(moved)
        return Publication(Profile(self.origin, Version(self.incarnation, self.seq), self.bits,
                                   tuple(sorted(moved.items()))), True)

    def _note(self, levels: Mapping[int, int], now: float) -> None:
        old = self.last_sent or {}
        high = (1 << self.bits) - 2
        for dst, level in levels.items():
            if old.get(dst) != level:
                self.changed_at[dst] = now
            if level < high:
                self.congested_since.pop(dst, None)
            else:
                self.congested_since.setdefault(dst, now)

    def latest(self) -> Profile | None:
        """The whole profile as last sent (what a resync carries), or None."""
        if self.last_sent is None:
            return None
        return Profile(self.origin, Version(self.incarnation, self.seq), self.bits,
                       tuple(sorted(self.last_sent.items())))


@dataclass
class _Held:
    profile: Profile
    received_at: float


@dataclass
class ProfileStore:
    """The newest profile received from each origin, and how old it is.

    A profile not refreshed for ``stale_after`` seconds ages: its levels rise
    one step every ``age_step`` seconds up to ``max_level``. A spine that has
    gone silent is unknown, and unknown counts as congested, never as idle;
    an origin never heard from reads ``max_level``.
    """

    max_level: int
    stale_after: float
    age_step: float
    _by_origin: dict[str, _Held] = field(default_factory=dict)

    def merge(self, profile: Profile, now: float) -> bool:
        """Keep a whole ``profile`` if it is newer than the stored one from its origin."""
        old = self._by_origin.get(profile.origin)
        if old is not None and old.profile.version >= profile.version:
            return False
        self._by_origin[profile.origin] = _Held(profile, now)
        return True

    def apply_delta(self, delta: Profile, now: float) -> bool | None:
        """Apply the changed entries of version seq on top of the stored seq - 1.

        True: applied; False: old news (version not newer); None: the base is
        missing (a gap), nothing changed.
        """
        old = self._by_origin.get(delta.origin)
        if old is not None and old.profile.version >= delta.version:
            return False
        base = Version(delta.version.incarnation, delta.version.seq - 1)
        if old is None or old.profile.version != base:
            return None
        levels = old.profile.by_leaf | delta.by_leaf
        self._by_origin[delta.origin] = _Held(
            Profile(delta.origin, delta.version, delta.bits, tuple(sorted(levels.items()))), now)
        return True

    def get(self, origin: str) -> Profile | None:
        """The stored profile of ``origin``, if any."""
        held = self._by_origin.get(origin)
        return held.profile if held else None

    def all(self) -> list[Profile]:
        """Every stored profile."""
        return [h.profile for h in self._by_origin.values()]

    def level(self, origin: str, dst_leaf: int, now: float) -> int:
        """The level to use for ``origin``'s path toward ``dst_leaf`` now (aged if stale)."""
        held = self._by_origin.get(origin)
        if held is None:
            return self.max_level
        level = held.profile.by_leaf.get(dst_leaf)
        if level is None:
            return self.max_level
        late = now - held.received_at - self.stale_after
        if late <= 0:
            return level
        return min(self.max_level, level + 1 + int(late / self.age_step))

    def ageing(self, now: float) -> bool:
        """True while some stored profile is stale but not yet aged all the way up."""
        full = (self.max_level + 1) * self.age_step
        return any(0 < now - h.received_at - self.stale_after <= full
                   for h in self._by_origin.values())
