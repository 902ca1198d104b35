"""Match values given by the control plane for one key field (P4Runtime FieldMatch kinds)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Exact:
    """exact match on `value`."""

    value: int


@dataclass(frozen=True)
class Lpm:
    """Longest-prefix match: the top `prefix_len` bits of `value`."""

    value: int
    prefix_len: int


@dataclass(frozen=True)
class Ternary:
    """Ternary match: bits set in `mask` must equal `value`."""

    value: int
    mask: int


@dataclass(frozen=True)
class Range:
    """Range match, inclusive at both ends."""

    lo: int
    hi: int


@dataclass(frozen=True)
class Optional:
    """optional match: `value`, or None for a wildcard."""

    value: int | None = None


MatchValue = Exact | Lpm | Ternary | Range | Optional
