"""Congestion profiles: utilisation from port counters, versioned publishing.

Levels are quantised with ``sglb.config.quantise``, the encoding sglb.p4 reads.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from .linkstate import Version


@dataclass(frozen=True)
class Profile:
    """A spine's congestion toward each leaf (by leaf id), at one version."""

    origin: str
    version: Version
    bits: int
    levels: tuple[tuple[int, int], ...]
    """(destination leaf id, level) pairs, sorted by leaf id."""

    def as_dict(self) -> dict[int, int]:
        """Levels keyed by destination leaf id."""
        return dict(self.levels)


class RateMeter:
    """Turns cumulative per-port byte counters into rates (Mbit/s)."""

    def __init__(self) -> None:
        self._last: dict[int, tuple[int, float]] = {}

    def update(self, counters: Mapping[int, int], now: float) -> dict[int, float]:
        """Rates since the previous sample; ports seen for the first time or reset are skipped."""
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
            rates[port] = delta * 8 / dt / 1e6
        return rates


class ProfilePublisher:
    """Decides when a spine's profile goes out: a big enough change, or the period elapsed."""

    def __init__(self, origin: str, incarnation: int, bits: int, threshold: int, period: float):
        self.origin = origin
        self.incarnation = incarnation
        self.bits = bits
        self.threshold = threshold
        self.period = period
        self.seq = 0
        self.last_sent: dict[int, int] | None = None
        self.last_sent_at = -math.inf
        self.current: dict[int, int] | None = None

    def observe(self, levels: Mapping[int, int]) -> None:
        """Record the latest measured levels."""
        self.current = dict(levels)

    def due(self, now: float) -> Profile | None:
        """The profile to send now, with a fresh version, or None."""
        if self.current is None:
            return None
        changed = self.last_sent is None or any(
            abs(level - self.last_sent.get(dst, 0)) > self.threshold
            for dst, level in self.current.items())
        if not changed and now - self.last_sent_at < self.period:
            return None
        self.seq += 1
        self.last_sent = dict(self.current)
        self.last_sent_at = now
        return self.latest()

    def latest(self) -> Profile | None:
        """The last profile sent (what a resync carries), or None."""
        if self.last_sent is None:
            return None
        return Profile(self.origin, Version(self.incarnation, self.seq), self.bits,
                       tuple(sorted(self.last_sent.items())))


class ProfileStore:
    """The newest profile received from each origin."""

    def __init__(self) -> None:
        self._by_origin: dict[str, Profile] = {}

    def merge(self, profile: Profile) -> bool:
        """Keep ``profile`` if it is newer than the stored one from its origin."""
        old = self._by_origin.get(profile.origin)
        if old is not None and old.version >= profile.version:
            return False
        self._by_origin[profile.origin] = profile
        return True

    def drop(self, origin: str) -> bool:
        """Forget an origin's profile (its peer went down); True if there was one."""
        return self._by_origin.pop(origin, None) is not None

    def get(self, origin: str) -> Profile | None:
        """The stored profile of ``origin``, if any."""
        return self._by_origin.get(origin)

    def all(self) -> list[Profile]:
        """Every stored profile."""
        return list(self._by_origin.values())
