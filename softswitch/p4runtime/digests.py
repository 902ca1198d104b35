"""Digest batching for DigestList messages (P4Runtime spec 16.2), no I/O, explicit clock.

Per digest: messages gather into a list until `max_list_size` is reached or the first one
is `max_timeout_ns` old; a sent list stays outstanding until acknowledged or until
`ack_timeout_ns` passes, and while it is, identical messages are suppressed.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class DigestConfig:
    """The DigestEntry.Config the controller wrote."""

    max_timeout_ns: int = 0
    max_list_size: int = 1
    ack_timeout_ns: int = 0


@dataclass
class _State:
    config: DigestConfig
    pending: list[bytes] = field(default_factory=list)
    first_ns: int = 0
    outstanding: dict[int, tuple[set[bytes], int]] = field(default_factory=dict)


@dataclass(frozen=True)
class ReadyList:
    """A DigestList to send: its ID and the serialised P4Data messages."""

    digest_id: int
    list_id: int
    data: tuple[bytes, ...]


class DigestBatcher:
    """Gathers digest messages into lists by the rules of each DigestEntry."""

    def __init__(self) -> None:
        self._states: dict[int, _State] = {}
        self._next_list_id = 1

    def configure(self, digest_id: int, config: DigestConfig | None) -> None:
        """Set (or with None, remove) the configuration of a digest."""
        if config is None:
            self._states.pop(digest_id, None)
        elif digest_id in self._states:
            self._states[digest_id].config = config
        else:
            self._states[digest_id] = _State(config)

    def configured(self, digest_id: int) -> DigestConfig | None:
        """The configuration of a digest, or None."""
        st = self._states.get(digest_id)
        return None if st is None else st.config

    def add(self, now_ns: int, digest_id: int, data: bytes) -> list[ReadyList]:
        """Queue one message (serialised P4Data); return lists that are now due."""
        st = self._states.get(digest_id)
        if st is None:
            return []  # not enabled by the controller: dropped, as on BMv2
        self._expire(now_ns, st)
        if data in st.pending or any(data in s for s, _ in st.outstanding.values()):
            return []
        if not st.pending:
            st.first_ns = now_ns
        st.pending.append(data)
        limit = st.config.max_list_size if st.config.max_list_size > 0 else 1
        if len(st.pending) >= limit:
            return [self._emit(now_ns, digest_id, st)]
        return self.due(now_ns)

    def due(self, now_ns: int) -> list[ReadyList]:
        """Lists whose max_timeout has passed."""
        ready = []
        for digest_id, st in self._states.items():
            self._expire(now_ns, st)
            if st.pending and now_ns - st.first_ns >= st.config.max_timeout_ns:
                ready.append(self._emit(now_ns, digest_id, st))
        return ready

    def next_deadline(self) -> int | None:
        """The earliest time at which `due` may return something."""
        times = [st.first_ns + st.config.max_timeout_ns for st in self._states.values() if st.pending]
        return min(times) if times else None

    def ack(self, digest_id: int, list_id: int) -> bool:
        """Acknowledge a list; False if no such list is outstanding."""
        st = self._states.get(digest_id)
        if st is None or list_id not in st.outstanding:
            return False
        del st.outstanding[list_id]
        return True

    def _emit(self, now_ns: int, digest_id: int, st: _State) -> ReadyList:
        list_id = self._next_list_id
        self._next_list_id += 1
        data = tuple(st.pending)
        st.pending = []
        if st.config.ack_timeout_ns > 0:
            st.outstanding[list_id] = (set(data), now_ns + st.config.ack_timeout_ns)
        return ReadyList(digest_id, list_id, data)

    @staticmethod
    def _expire(now_ns: int, st: _State) -> None:
        for lid in [lid for lid, (_, t) in st.outstanding.items() if t <= now_ns]:
            del st.outstanding[lid]
