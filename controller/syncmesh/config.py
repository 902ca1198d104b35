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
    """A peer not heard from for this long is declared down."""
    profile_period: float = 1.0
    """A spine re-sends its profile at least this often, changed or not."""
    profile_threshold: int = 1
    """A spine sends early when some level moved by more than this many levels."""
    level_bits: int = QBITS
    """Congestion levels are quantised to this many bits (0 .. 2^bits - 1); sglb.p4 holds 3."""
    glb: bool = True
    """Leaves run the GLB engine (True) or plain ECMP (False)."""

    def __post_init__(self) -> None:
        if not 0 < self.keepalive_interval < self.dead_interval:
            raise ValueError("need 0 < keepalive_interval < dead_interval")
        if self.profile_period <= 0:
            raise ValueError("profile_period must be positive")
        if not 1 <= self.level_bits <= 8:
            raise ValueError("level_bits must be within 1..8")
        if self.profile_threshold < 0:
            raise ValueError("profile_threshold must be >= 0")

    @property
    def max_level(self) -> int:
        """The largest congestion level (a saturated or dead path)."""
        return (1 << self.level_bits) - 1
