"""Rules p4c applies to table keys and const entries for the control plane.

* Key names (p4c's KeyNameGenerator, frontends/p4/tableKeyNames.cpp): a key
  without `@name` is named after its expression, which must be a name, a field
  (named by the field's `@name` if it has one), a constant-indexed stack
  element, a slice, `x & constant`, or `h.isValid()` (named `h.$valid$`, as
  P4Runtime expects); anything else needs `@name`.
* Const entries (p4c's P4Runtime serializer, control-plane/p4RuntimeSerializer.cpp,
  which every entry must pass to reach a P4Runtime target): per match kind,
  exact keys take a value; lpm a value, `_` or `value &&& prefix-mask`; ternary
  a value, `_` or `value &&& mask`; range a value, `_` or `lo .. hi` with lo <= hi;
  optional a value or `_`. Bits of an lpm/ternary value outside its mask are
  cleared with a warning, as p4c does.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import ast as A
from .. import types as T

_BASE_PREFIX = {2: "0b", 8: "0o", 16: "0x", 10: ""}


def _constant_text(e: A.IntLiteral) -> str:
    """A constant as p4c prints it in key names: base prefix, lower-case digits, no width."""
    body = e.text.split("w", 1)[-1].split("s", 1)[-1] if e.width is not None else e.text
    base = {"0x": 16, "0b": 2, "0o": 8}.get(body[:2].lower(), 10)
    digits = {16: "x", 2: "b", 8: "o"}
    value = e.const_value if isinstance(e.const_value, int) else e.value
    return _BASE_PREFIX[base] + (format(value, digits[base]) if base != 10 else str(value))


def key_name(e: A.Expression) -> str | None:
    """p4c's generated name of a key expression, or None when it needs `@name`."""
    if isinstance(e, A.PathExpr):
        return ("." if e.absolute else "") + e.name
    if isinstance(e, A.IntLiteral):
        return _constant_text(e)
    if isinstance(e, A.CastExpr) and e.implicit:
        return key_name(e.expr)
    if isinstance(e, A.MemberExpr):
        if isinstance(e.expr, A.TypeNameExpr):
            return None
        member = e.member
        if e.field is not None and e.field.decl is not None:
            ann = A.find_annotation(e.field.decl.annotations, "name")
            member = (ann.string_arg() if ann is not None else None) or member
            if member.startswith("."):
                return member[1:]
        base = key_name(e.expr)
        return f"{base}.{member}" if base is not None else None
    if isinstance(e, A.IndexExpr):
        base, index = key_name(e.expr), key_name(e.index)
        return f"{base}[{index}]" if base is not None and index is not None else None
    if isinstance(e, A.SliceExpr):
        parts = [key_name(x) for x in (e.expr, e.hi, e.lo)]
        return f"{parts[0]}[{parts[1]}:{parts[2]}]" if None not in parts else None
    if isinstance(e, A.BinaryExpr) and e.op == "&":
        left, right = key_name(e.left), key_name(e.right)
        return f"{left} & {right}" if left is not None and right is not None else None
    if isinstance(e, A.CallExpr) and e.kind is A.CallKind.HEADER_IS_VALID and not e.args \
            and e.receiver is not None:
        base = key_name(e.receiver)
        return f"{base}.$valid$" if base is not None else None
    return None


Report = Callable[[A.Loc, str], None]


def _int(e: A.Expression) -> int | None:
    v = e.const_value
    if isinstance(v, bool):
        return int(v)
    return v if isinstance(v, int) else None


def _simple(e: A.Expression) -> bool:
    """A value P4Runtime can carry: a constant (integer, bool or serializable enum member)."""
    return not isinstance(e, A.MaskExpr | A.RangeExpr | A.DefaultExpr | A.DontCareExpr) \
        and _int(e) is not None


def check_entry_key(item: A.Expression, match_kind: str, key_type: T.P4Type,
                    error: Report, warning: Report) -> None:
    """Check one element of a const entry's keyset against its key's match kind."""
    width = T.bit_width(T.strip_newtype(key_type)) if not isinstance(
        T.strip_newtype(key_type), T.BoolType) else 1
    full = (1 << width) - 1
    text = A.expr_text(item) if not isinstance(item, A.MaskExpr | A.RangeExpr) else None
    wildcard = isinstance(item, A.DefaultExpr | A.DontCareExpr)
    if match_kind == "exact" or match_kind == "optional":
        if not _simple(item) and not (wildcard and match_kind == "optional"):
            error(item.loc, f"{_shown(item, text)} invalid key expression")
        return
    if match_kind not in ("lpm", "ternary", "range"):
        if not wildcard:
            error(item.loc, f"{match_kind}: match type not supported by P4Runtime serializer")
        return
    if wildcard:
        return
    if isinstance(item, A.MaskExpr):
        if match_kind == "range":
            error(item.loc, f"{_shown(item, text)} invalid key expression")
            return
        value, mask = _int(item.value), _int(item.mask)
        if value is None or mask is None:
            return
        mask &= full
        if match_kind == "lpm":
            zeros = (mask & -mask).bit_length() - 1 if mask else width
            if zeros + bin(mask).count("1") != width:
                error(item.loc, f"{value} &&& {mask} invalid mask for LPM key")
                return
        if value & mask != value:
            kind = "LPM" if match_kind == "lpm" else "Ternary"
            warning(item.loc, f"P4Runtime requires that {kind} matches have masked-off bits "
                              f"set to 0, updating value "
                              f"{A.expr_text(item.value)} to conform to the P4Runtime "
                              f"specification")
            item.value.const_value = value & mask
        return
    if isinstance(item, A.RangeExpr):
        if match_kind != "range":
            error(item.loc, f"{_shown(item, text)} invalid key expression")
            return
        lo, hi = _int(item.lo), _int(item.hi)
        if lo is not None and hi is not None and lo > hi:
            error(item.loc, f"{lo} .. {hi} Invalid range for table entry")
        return
    if not _simple(item):
        error(item.loc, f"{_shown(item, text)} invalid key expression")


def _shown(item: A.Expression, text: str | None) -> str:
    if isinstance(item, A.MaskExpr):
        return f"{_int(item.value)} &&& {_int(item.mask)}"
    if isinstance(item, A.RangeExpr):
        return f"{_int(item.lo)} .. {_int(item.hi)}"
    return text or "?"


def _needs_priority(match_kind: str) -> bool:
    return match_kind not in ("exact", "lpm")  # p4c treats unknown match kinds as needing one


def entry_priorities(table: A.TableDecl, largest_wins: bool, delta: int,
                     error: Report, warning: Report) -> None:
    """Priorities of a table's initial entries (spec 14.2.1.4, p4c's EntryPriorities), then
    `priority_value` for the engine (higher wins) in the order BMv2 matches them.

    `priority=` is for non-const `entries` only; the entries without one get the previous
    priority +/- `priority_delta`, and entries out of order are sorted. BMv2 then matches
    in that order, except for entries with `@priority(N)`, which it gives priority N
    instead of their position (lower wins there).
    """
    entries = table.entries or []
    if not entries:
        return
    explicit = [en for en in entries if en.priority is not None]
    if table.entries_const and explicit:
        error(explicit[0].loc, "Table with 'const' entries cannot have priorities")
        explicit = []
    if not any(_needs_priority(k.match_kind) for k in table.keys):
        if explicit:
            error(explicit[0].loc, "key match type does not require priorities, but some are "
                                   "specified")
        order = list(entries)
    elif explicit:
        order = _ordered_by_priority(entries, largest_wins, delta, error, warning)
    else:
        order = list(entries)
    ranks: list[int] = []
    for i, en in enumerate(order, start=1):
        ann = A.find_annotation(en.annotations, "priority")
        value = ann.args[0] if ann is not None and ann.args and isinstance(ann.args[0], int) \
            else None
        if ann is not None and value is None:
            error(ann.loc, "Invalid priority value; must be constant.")
        ranks.append(value if value is not None else i)
    top = max(ranks) + 1
    for en, rank in zip(order, ranks, strict=True):
        en.priority_value = top - rank


def _ordered_by_priority(entries: list[A.TableEntry], largest_wins: bool, delta: int,
                         error: Report, warning: Report) -> list[A.TableEntry]:
    """p4c's priorities for a list where some entries give one; the list sorted by them."""
    if entries[0].priority is None:
        error(entries[0].loc, "entry must have a priority")
        return list(entries)
    given: list[int] = []
    current = 0
    previous = 0
    out_of_order = False
    used: dict[int, A.TableEntry] = {}
    for i, en in enumerate(entries):
        if en.priority is not None:
            value = _int(en.priority)
            if value is None or value < 0:
                error(en.priority.loc, f"{A.expr_text(en.priority)} must be a constant")
                return list(entries)
            current = value
        if current in used:
            warning(en.loc, f"entries have the same priority {current}")
        used.setdefault(current, en)
        if i > 0 and not out_of_order and (current > previous if largest_wins
                                           else current < previous):
            warning(en.loc, f"entries with priorities {previous} and {current} are out of order")
            out_of_order = True
        given.append(current)
        previous = current
        current = current - delta if largest_wins else current + delta
        if current < 0:
            error(en.loc, "Overflow in priority computation")
            return list(entries)
    pairs = list(zip(given, entries, strict=True))
    if out_of_order:
        pairs.sort(key=lambda p: -p[0] if largest_wins else p[0])
    return [en for _, en in pairs]
