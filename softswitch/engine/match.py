"""Match values given by the control plane for one key field (P4Runtime FieldMatch kinds).

Each is an immutable tuple tagged with its kind, so that equality and hashing, which the
tables do for every entry written, run in C: values of different kinds never compare
equal (`Lpm(0, 0) != Ternary(0, 0)`).
"""

from __future__ import annotations

from operator import itemgetter


class _MatchValue(tuple):
    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def __repr__(self) -> str:
        args = ", ".join(f"{name}={v!r}" for name, v in zip(self._fields, self[1:], strict=True))
        return f"{type(self).__name__}({args})"

    def __getnewargs__(self) -> tuple:
        return tuple(self[1:])


class Exact(_MatchValue):
    """exact match on `value`."""

    __slots__ = ()
    _fields = ("value",)
    value = property(itemgetter(1))

    def __new__(cls, value: int) -> Exact:
        return tuple.__new__(cls, ("exact", value))


class Lpm(_MatchValue):
    """Longest-prefix match: the top `prefix_len` bits of `value`."""

    __slots__ = ()
    _fields = ("value", "prefix_len")
    value = property(itemgetter(1))
    prefix_len = property(itemgetter(2))

    def __new__(cls, value: int, prefix_len: int) -> Lpm:
        return tuple.__new__(cls, ("lpm", value, prefix_len))


class Ternary(_MatchValue):
    """Ternary match: bits set in `mask` must equal `value`."""

    __slots__ = ()
    _fields = ("value", "mask")
    value = property(itemgetter(1))
    mask = property(itemgetter(2))

    def __new__(cls, value: int, mask: int) -> Ternary:
        return tuple.__new__(cls, ("ternary", value, mask))


class Range(_MatchValue):
    """Range match, inclusive at both ends."""

    __slots__ = ()
    _fields = ("lo", "hi")
    lo = property(itemgetter(1))
    hi = property(itemgetter(2))

    def __new__(cls, lo: int, hi: int) -> Range:
        return tuple.__new__(cls, ("range", lo, hi))


class Optional(_MatchValue):
    """optional match: `value`, or None for a wildcard."""

    __slots__ = ()
    _fields = ("value",)
    value = property(itemgetter(1))

    def __new__(cls, value: int | None = None) -> Optional:
        return tuple.__new__(cls, ("optional", value))


MatchValue = Exact | Lpm | Ternary | Range | Optional
