"""The one exception type ReCCL raises at its boundary."""

from __future__ import annotations


class ReCCLError(RuntimeError):
    """A collective or point-to-point operation failed; names the rank (and peer, path)."""

    def __init__(self, message: str, rank: int | None = None, peer: int | None = None) -> None:
        super().__init__(message)
        self.rank = rank
        self.peer = peer

    def is_no_path(self) -> bool:
        """True when every path to the peer died (failover mode)."""
        return "no path left" in str(self)

    def is_fail_stop(self) -> bool:
        """True when fail-stop mode aborted on a path failure."""
        return "fail-stop" in str(self)

    def is_timeout(self) -> bool:
        """True when a receive timed out."""
        return "timeout after" in str(self)
