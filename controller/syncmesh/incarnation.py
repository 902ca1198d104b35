"""Incarnations: when a daemon started, in ms of the wall clock, and always newer after a restart.

A daemon's incarnation orders its news before and after a restart, so it
must grow across restarts and must not be forgeable into the far future.
``IncarnationFile`` takes the wall clock in milliseconds, or one more than
the last incarnation it handed out if the clock is behind that (a restart
within the same millisecond, or a clock stepped back), and writes it to
disk before the daemon uses it. Receivers refuse incarnations later than
their own clock plus the allowed skew (``latest_allowed``).
"""

from __future__ import annotations

import os
from pathlib import Path

PER_SECOND = 1000
"""Incarnation units per second of wall clock."""


def from_clock(now: float) -> int:
    """The incarnation a daemon starting at Unix time ``now`` takes."""
    return int(now * PER_SECOND)


def latest_allowed(now: float, max_skew: float) -> int:
    """The largest incarnation a receiver whose clock reads ``now`` accepts."""
    return int((now + max_skew) * PER_SECOND)


class IncarnationError(RuntimeError):
    """The incarnation file cannot be read or written (the message names it)."""


class IncarnationFile:
    """The last incarnation of one switch's daemon, kept in a small text file."""

    def __init__(self, path: Path):
        self.path = path

    def last(self) -> int:
        """The incarnation stored (0 when there is none yet)."""
        try:
            text = self.path.read_text().strip()
        except FileNotFoundError:
            return 0
        except OSError as e:
            raise IncarnationError(f"{self.path}: cannot read: {e.strerror}") from None
        if not text.isdigit():
            raise IncarnationError(f"{self.path}: not an incarnation: {text[:40]!r}")
        return int(text)

    def next(self, now: float) -> int:
        """A new incarnation, newer than every earlier one, stored before it is returned."""
        inc = max(from_clock(now), self.last() + 1)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "w") as f:
                f.write(f"{inc}\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except OSError as e:
            raise IncarnationError(f"{self.path}: cannot write: {e.strerror}") from None
        return inc
