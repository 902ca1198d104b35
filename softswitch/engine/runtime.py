"""What the generated code uses at run time: packet context, stacks, signals, helpers.

`namespace()` gives the globals the generated module starts with; the short
names there (`_div`, `_mk`, ...) are what softswitch.engine.codegen emits.
"""

from __future__ import annotations

import logging
import random as _random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from .errors import PacketDropped, PacketTooShort, ParserReject, SwitchError
from .hashes import hash_result


class Digest(NamedTuple):
    """A digest message: struct type name and (field, bitwidth, value) triples."""

    name: str
    fields: tuple[tuple[str, int, int], ...]

if TYPE_CHECKING:
    from .switch import Switch
    from .tables import ActionProfile

log = logging.getLogger("softswitch.engine")

# loop iterations (P4 `for` statements) one packet may run in one pass through the
# pipeline; a program that loops longer drops the packet (a P4 loop whose condition
# never turns false would otherwise hang the switch)
LOOP_BUDGET = 1_000_000

__all__ = [
    "PacketContext",
    "PacketOut",
    "HeaderStack",
    "ExitSignal",
    "PacketDropped",
    "PacketTooShort",
    "ParserReject",
    "ValueSet",
    "namespace",
    "read_bits",
]


def read_bits(data: bytes, bitpos: int, width: int) -> int:
    """Read `width` bits starting at bit `bitpos` (network order); PacketTooShort past the end."""
    end_bit = bitpos + width
    if end_bit > len(data) * 8:
        raise PacketTooShort(f"need {end_bit} bits, packet has {len(data) * 8}")
    if width == 0:
        return 0
    start = bitpos >> 3
    end = (end_bit + 7) >> 3
    value = int.from_bytes(data[start:end], "big")
    return (value >> (end * 8 - end_bit)) & ((1 << width) - 1)


class ExitSignal(Exception):
    """`exit;`: leaves the top-level control being applied (spec 12.5.5)."""


class PacketOut:
    """Bytes emitted by the deparser; partial bytes accumulate in a bit buffer."""

    __slots__ = ("parts", "acc", "nbits")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.acc = 0
        self.nbits = 0

    def put(self, value: int, width: int) -> None:
        """Append the low `width` bits of `value`."""
        if not self.nbits and not width & 7:
            self.parts.append((value & ((1 << width) - 1)).to_bytes(width >> 3, "big"))
            return
        self.acc = (self.acc << width) | (value & ((1 << width) - 1))
        self.nbits += width
        if not self.nbits & 7:
            self.parts.append(self.acc.to_bytes(self.nbits >> 3, "big"))
            self.acc = 0
            self.nbits = 0

    def getvalue(self) -> bytes:
        """All emitted bytes; a trailing partial byte is zero-padded."""
        if self.nbits:
            pad = (-self.nbits) % 8
            self.parts.append((self.acc << pad).to_bytes((self.nbits + pad) >> 3, "big"))
            self.acc = 0
            self.nbits = 0
        return b"".join(self.parts)


class HeaderStack:
    """A header stack: `e` the elements, `n` nextIndex (spec 8.18)."""

    __slots__ = ("e", "n")

    def __init__(self, elements: list[Any]) -> None:
        self.e = elements
        self.n = 0

    def copy(self) -> HeaderStack:
        """Deep copy (P4 assignment copies values)."""
        s = HeaderStack([h.copy() for h in self.e])
        s.n = self.n
        return s

    def push_front(self, count: int) -> None:
        """Shift elements up by `count`; the first `count` become invalid (spec 8.18)."""
        size = len(self.e)
        count = min(count, size)
        if count <= 0:
            return
        cls = type(self.e[0])
        self.e[count:] = self.e[: size - count]
        self.e[:count] = [cls() for _ in range(count)]
        self.n = min(self.n + count, size)

    def pop_front(self, count: int) -> None:
        """Shift elements down by `count`; the last `count` become invalid (spec 8.18)."""
        size = len(self.e)
        count = min(count, size)
        if count <= 0:
            return
        cls = type(self.e[0])
        self.e[: size - count] = self.e[count:]
        self.e[size - count :] = [cls() for _ in range(count)]
        self.n = max(self.n - count, 0)

    def at(self, i: int, where: str = "") -> Any:
        """Element `i` (a run-time index), or a fresh invalid element when `i` is out of range:
        reading it gives an invalid header and writes to it are lost (spec 8.26)."""
        if 0 <= i < len(self.e):
            return self.e[i]
        _index_out_of_range(i, len(self.e), where)
        return type(self.e[0])()

    def put(self, i: int, value: Any, where: str = "") -> None:
        """Assign element `i`; no effect when `i` is out of range (spec 8.26)."""
        if 0 <= i < len(self.e):
            self.e[i] = value
        else:
            _index_out_of_range(i, len(self.e), where)

    def next_for_extract(self) -> Any:
        """Element at nextIndex for extract; StackOutOfBounds when full."""
        if self.n >= len(self.e):
            raise ParserReject("StackOutOfBounds")
        return self.e[self.n]

    def last(self) -> Any:
        """Element at nextIndex - 1; StackOutOfBounds when empty."""
        if self.n == 0:
            raise ParserReject("StackOutOfBounds")
        return self.e[self.n - 1]


_warned_indexes: set[str] = set()


def _index_out_of_range(i: int, size: int, where: str) -> None:
    """Warn once per program location: BMv2 simple_switch aborts the whole process here
    (std::out_of_range from its header-stack dereference), softswitch goes on per spec 8.26."""
    if where in _warned_indexes or len(_warned_indexes) > 10_000:
        return
    _warned_indexes.add(where)
    log.warning("%s: header stack index %d out of range (size %d): reads give an invalid "
                "header, writes are lost (P4_16 spec 8.26; BMv2 would abort); "
                "logged once per location", where or "program", i, size)


class PacketContext:
    """Per-pass state of one packet: input bytes, parse position and the extern requests.

    Rarely set requests (clone, resubmit, ...) are class-level defaults, so a
    packet pays only for what its program asks for.
    """

    payload = b""
    out: PacketOut | None = None
    sm: Any = None  # standard_metadata of this pass
    clone_i2e: tuple[int, int | None] | None = None  # (session, field list)
    clone_e2e: tuple[int, int | None] | None = None
    resubmit: int | None = None  # field list
    recirc: int | None = None
    truncate = 0
    dm = 0  # colour of the table's direct meter
    loops = LOOP_BUDGET  # iterations left for `for` loops (statements.py)

    def __init__(self, sw: Switch, data: bytes, now: int) -> None:
        self.sw = sw
        self.data = data
        self.pos = 0
        self.nbits = len(data) * 8
        self.length = len(data)
        self.plen = len(data)  # BMv2's packet length register, moved by add/remove_header
        self.now = now
        self.digests: list[tuple[str, tuple[Any, ...]]] = []


def random_value(lo: int, hi: int) -> int:
    """v1model random(): uniform in [lo, hi] (lo when hi < lo)."""
    if hi <= lo:
        return lo
    return _random.randint(lo, hi)


def log_msg(msg: str, values: tuple[Any, ...] = ()) -> None:
    """v1model log_msg: `{}` placeholders replaced by the values in order."""
    parts = msg.split("{}")
    text = parts[0]
    for i, rest in enumerate(parts[1:]):
        text += (str(values[i]) if i < len(values) else "{}") + rest
    log.info("log_msg: %s", text)


def agg_fields(value: Any) -> Any:
    """Comparable content of a header/struct/stack value (for == and !=)."""
    if isinstance(value, HeaderStack):
        return tuple(agg_fields(h) for h in value.e)  # nextIndex is not compared (spec 8.18)
    if isinstance(value, tuple):
        return tuple(agg_fields(x) for x in value)
    slots = getattr(type(value), "__slots__", None)
    if slots is None:
        return value
    if "_v" in slots and not value._v:
        return (False,)  # two invalid headers are equal whatever their fields
    return tuple(agg_fields(getattr(value, s)) for s in slots)


def assign_into(dst: Any, src: Any) -> None:
    """Overwrite aggregate `dst` with the content of `src` (a fresh copy), keeping its identity."""
    if isinstance(dst, HeaderStack):
        dst.e = src.e
        dst.n = src.n
        return
    for slot in type(dst).__slots__:
        setattr(dst, slot, getattr(src, slot))


def pack_dynamic(items: tuple[tuple[int, int, Any], ...]) -> tuple[int, int]:
    """(value, bit count) of (value, width, included) triples packed left to right."""
    acc = 0
    n = 0
    for v, w, ok in items:
        if ok:
            acc = (acc << w) | (v & ((1 << w) - 1))
            n += w
    return acc, n


class ValueSet:
    """A parser value set: up to `size` (value, mask) members matched by select."""

    changes = 0  # bumped by every set's `set`: one read tells the native engine that none moved

    def __init__(self, name: str, size: int) -> None:
        self.name = name
        self.size = size
        self.members: list[tuple[Any, Any]] = []

    def set(self, members: Any) -> None:
        """Replace the members: each a value or a (value, mask) pair (tuples for multi-key selects)."""
        members = list(members)
        if self.size and len(members) > self.size:
            raise SwitchError("RESOURCE_EXHAUSTED", f"{self.name}: more than {self.size} members")
        out = []
        for m in members:
            if isinstance(m, tuple) and len(m) == 2 and not isinstance(m[0], tuple) and isinstance(m[1], int):
                out.append(m)
            else:
                out.append((m, None))
        self.members = out
        ValueSet.changes += 1

    def match(self, value: Any) -> bool:
        """True when `value` equals (under mask) one member."""
        for v, m in self.members:
            if m is None:
                if value == v:
                    return True
            elif isinstance(value, int) and value & m == v & m:
                return True
        return False


# ---- helpers called by the generated code (P4_16 spec section 8 where noted)


def copy_value(v: Any) -> Any:
    """A copy of an aggregate (headers, structs, stacks); scalars as they are."""
    return v.copy() if hasattr(v, "copy") else v


def member_index(members: tuple[str, ...], value: str) -> int:
    """Number of an enum or error member in declaration order (how BMv2 encodes them)."""
    try:
        return members.index(value)
    except ValueError:
        return 0


def build_value(cls: type, items: tuple[tuple[str, Any], ...], valid: bool) -> Any:
    """A header/struct of class `cls` from (field, value) pairs; headers built valid."""
    obj = cls()
    for name, value in items:
        setattr(obj, "f_" + name, value)
    if valid:
        obj._v = True
    return obj


def div(a: int, b: int) -> int:
    """Integer division rounding toward zero; 0 for a zero divisor (BMv2 does not trap)."""
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def mod(a: int, b: int) -> int:
    """Remainder of `div`; 0 for a zero divisor."""
    if b == 0:
        return 0
    return a - div(a, b) * b


def shl(a: int, b: int, w: int) -> int:
    """Left shift by a run-time amount; 0 once the amount reaches the width (spec 8.5)."""
    return 0 if b >= w else a << b


def saturate(v: int, w: int) -> int:
    """Clamp an exact result to the range of int<w> (saturating |+| and |-|, spec 8.6)."""
    lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
    return lo if v < lo else hi if v > hi else v


def hash_value(P: PacketContext, algo: str, base: int, packed: int, nbits: int,
               max_value: int) -> int:
    """v1model hash(): `base + H mod max_value` over the packed field list."""
    return hash_result(P.sw.hashes.compute_packed(algo, packed, nbits), base, max_value)


def checksum(P: PacketContext, algo: str, packed: int, nbits: int, payload: bytes) -> int:
    """verify_checksum / update_checksum (with payload when `payload` is not empty)."""
    result: int = P.sw.hashes.compute_packed(algo, packed, nbits, payload)
    return result


def selector_hash(P: PacketContext, profile: ActionProfile, packed: int, nbits: int) -> int:
    """Hash of an action selector's keys, with the selector's algorithm."""
    result: int = P.sw.hashes.compute_packed(profile.algorithm, packed, nbits)
    return result


def namespace() -> dict[str, Any]:
    """The globals a generated module starts with (the names codegen emits)."""
    names: dict[str, Callable[..., Any] | type | None] = {
        "_Stack": HeaderStack,
        "_Exit": ExitSignal,
        "_Reject": ParserReject,
        "_TooShort": PacketTooShort,
        "_Drop": PacketDropped,
        "_rb": read_bits,
        "_fb": int.from_bytes,
        "_mk": build_value,
        "_aggf": agg_fields,
        "_div": div,
        "_mod": mod,
        "_shl": shl,
        "_sat": saturate,
        "_hash": hash_value,
        "_csum": checksum,
        "_sel": selector_hash,
        "_log": log_msg,
        "_random": random_value,
        "_cp": copy_value,
        "_into": assign_into,
        "_dyn": pack_dynamic,
        "_midx": member_index,
        "_REJECT": None,
    }
    return {"__builtins__": __builtins__, **names}
