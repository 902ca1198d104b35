"""Tunables of the SyncMesh decision logic and daemon."""

from __future__ import annotations

from dataclasses import dataclass

from sglb.config import QBITS


@dataclass(frozen=True)
class CoreConfig:
    """Timers and thresholds of the decision logic (seconds, levels)."""

    keepalive_interval: float = 0.5
    """A Hello goes to every peer this often."""
    dead_interval: float = 2.0
    """A peer not heard from for this long is declared down (time this daemon was stalled
    does not count: see ``PeerTable.forgive``)."""
    profile_period: float = 1.0
    """A spine re-sends its whole profile this often while it keeps measuring."""
    profile_threshold: int = 0
    """A spine sends a delta as soon as some level moved by more than this many levels."""
    profile_stale_after: float = 3.0
    """A profile not refreshed for this long starts ageing toward the top level."""
    profile_age_step: float = 0.25
    """An ageing profile's levels rise by one every this many seconds."""
    rate_decay: float = 0.1
    """Measured rates rise at once and fall with this time constant (s); 0: raw samples."""
    level_bits: int = QBITS
    """Congestion levels are quantised to this many bits (0 .. 2^bits - 1); sglb.p4 holds 3."""
    glb: bool = True
    """Leaves run the GLB engine (True) or plain ECMP (False)."""
    max_skew: float = 60.0
    """Largest clock difference between daemons (s): a peer's incarnation or time later than
    this daemon's clock plus ``max_skew`` is refused as forged."""
    resync_chunk: int = 128
    """Link-end records per resync message (the receiver merges one chunk at a time)."""

    def __post_init__(self) -> None:
        if not 0 < self.keepalive_interval < self.dead_interval:
            raise ValueError("need 0 < keepalive_interval < dead_interval")
        if self.profile_period <= 0:
            raise ValueError("profile_period must be positive")
        if not self.profile_stale_after > self.profile_period:
            raise ValueError("profile_stale_after must be longer than profile_period")
        if self.rate_decay < 0:
            raise ValueError("rate_decay must be >= 0")
        if self.profile_age_step <= 0:
            raise ValueError("profile_age_step must be positive")
        if not 1 <= self.level_bits <= 8:
            raise ValueError("level_bits must be within 1..8")
        if self.profile_threshold < 0:
            raise ValueError("profile_threshold must be >= 0")
        if self.max_skew <= 0:
            raise ValueError("max_skew must be positive")
        if self.resync_chunk < 1:
            raise ValueError("resync_chunk must be >= 1")

    @property
    def max_level(self) -> int:
        """The largest congestion level (a saturated, dead or unknown path)."""
        return (1 << self.level_bits) - 1
