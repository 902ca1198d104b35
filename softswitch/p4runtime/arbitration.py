"""Client arbitration (P4Runtime spec section 5): election IDs per role, no I/O.

`Arbitration` takes stream events and returns the arbitration responses to send as
(stream, role, primary election id, status code) notices; the gRPC layer delivers them.
The primary of a role is the connected stream with the highest election ID; when it
goes away the next highest is promoted and every remaining stream of the role is told.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import grpc

from softswitch.p4runtime.errors import P4RuntimeError


@dataclass(frozen=True)
class Notice:
    """An arbitration response to send on `stream`."""

    stream: Hashable
    role: str
    election_id: int | None
    code: grpc.StatusCode
    message: str


@dataclass
class _Member:
    role: str
    election_id: int | None  # None: the client sent no election ID and stays a backup


class Arbitration:
    """Tracks which stream is the primary controller of each role."""

    def __init__(self) -> None:
        self._members: dict[Hashable, _Member] = {}
        self._highest_seen: dict[str, int] = {}

    def primary(self, role: str) -> tuple[Hashable, int] | None:
        """Return (stream, election id) of the role's primary, or None."""
        best = None
        for stream, m in self._members.items():
            if m.role == role and m.election_id is not None:
                if best is None or m.election_id > best[1]:
                    best = (stream, m.election_id)
        return best

    def is_primary(self, role: str, election_id: int) -> bool:
        """True if `election_id` is the current primary's ID for `role`."""
        p = self.primary(role)
        return p is not None and p[1] == election_id

    def stream_role(self, stream: Hashable) -> str | None:
        """The role a stream arbitrated for, or None before its first arbitration."""
        m = self._members.get(stream)
        return None if m is None else m.role

    def is_primary_stream(self, stream: Hashable) -> bool:
        """True if `stream` is the primary of its role."""
        m = self._members.get(stream)
        if m is None or m.election_id is None:
            return False
        p = self.primary(m.role)
        return p is not None and p[0] == stream

    def streams(self) -> list[Hashable]:
        """All arbitrated streams."""
        return list(self._members)

    def update(self, stream: Hashable, role: str, election_id: int | None) -> list[Notice]:
        """Handle a MasterArbitrationUpdate (spec 5.3); raise P4RuntimeError if refused."""
        current = self._members.get(stream)
        if current is not None and current.role != role:
            raise P4RuntimeError(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"stream already arbitrated for role {current.role!r}, cannot switch to {role!r}",
            )
        if election_id is not None:
            for other, m in self._members.items():
                if other != stream and m.role == role and m.election_id == election_id:
                    raise P4RuntimeError(
                        grpc.StatusCode.INVALID_ARGUMENT,
                        f"election id {election_id} is already used by another controller "
                        f"of role {role!r}",
                    )
        before = self.primary(role)
        self._members[stream] = _Member(role, election_id)
        if election_id is not None:
            self._highest_seen[role] = max(self._highest_seen.get(role, 0), election_id)
        after = self.primary(role)
        if before is None or after is None or before[0] != after[0] or before[1] != after[1]:
            return self._notify_role(role)
        return [self._notice_for(stream)]

    def remove(self, stream: Hashable) -> list[Notice]:
        """Forget a closed stream; promote and notify when it was the primary."""
        m = self._members.pop(stream, None)
        if m is None:
            return []
        if m.election_id is None:
            return []
        p = self.primary(m.role)
        if p is not None and p[1] > m.election_id:
            return []  # a backup left; nothing changes for the others
        return self._notify_role(m.role)

    def _notify_role(self, role: str) -> list[Notice]:
        return [self._notice_for(s) for s, m in self._members.items() if m.role == role]

    def _notice_for(self, stream: Hashable) -> Notice:
        m = self._members[stream]
        p = self.primary(m.role)
        if p is not None and p[0] == stream:
            return Notice(stream, m.role, p[1], grpc.StatusCode.OK, "is primary")
        if p is not None:
            return Notice(stream, m.role, p[1], grpc.StatusCode.ALREADY_EXISTS, "is backup")
        return Notice(
            stream,
            m.role,
            self._highest_seen.get(m.role),
            grpc.StatusCode.NOT_FOUND,
            "no primary for this role",
        )
