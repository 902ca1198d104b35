"""The usual table-entry update on a short path: few protobuf reads, no intermediate objects.

Most Write traffic is INSERT, MODIFY or DELETE of entries of a direct table: the match
fields in P4Info order (ternary, range and optional ones may be omitted), a direct
action with every param in order, nothing else set. A `TablePlan`, built once per
table and pipeline, applies exactly such an update with the validation of spec 8.3
and 9.1 (byte and bit widths, prefixes, masks, ranges, priorities, the action's scope
in the table). For any other update, or one that would be refused, it returns False
having changed nothing, and writes.py's general path applies it or refuses it with
the precise error: both paths accept the same requests and make the same changes.

Where the time goes (bench/bench_p4runtime.py, docs/softswitch-p4runtime.md): every
protobuf read from Python costs 30-250 ns, so the plan reads each field once and
infers a match's kind from which value is set (a valid value is never empty) instead
of asking for the oneof; a validated action is remembered by its serialized bytes
(entries of a table share few actions: next hops, ports), which saves reading its
params; match values are built straight into the engine's canonical key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from finsy.proto import p4i, p4r

from softswitch.engine.match import Exact, Lpm, Optional, Range, Ternary
from softswitch.p4runtime.errors import from_switch_error
from softswitch.p4runtime.pipeline import Pipeline
from softswitch.p4runtime.schema import Schema, TableSchema

INSERT, MODIFY, DELETE = p4r.Update.INSERT, p4r.Update.MODIFY, p4r.Update.DELETE
MAX_PRIORITY = (1 << 31) - 1
_ACTION_CACHE = 1024  # validated actions remembered per table (then forgotten at once)
_new = tuple.__new__  # builds a match value without its Python-level constructor


class TablePlan:
    """The short path for the entries of one direct table of a pipeline."""

    __slots__ = ("table", "tid", "positions", "wildcards", "kinds", "n", "decode_key",
                 "needs_priority", "actions", "entry_actions", "metadata", "meter_cfg",
                 "_switch_error", "apply")

    def __init__(self, p: Pipeline, t: TableSchema) -> None:
        from softswitch.engine import SwitchError

        self._switch_error = SwitchError
        self.table = p.switch.table(t.name)
        self.tid = t.id
        self.n = len(t.keys)
        # per key position: (field id, bit width, byte width, kind)
        # (plan_for makes plans only for tables whose every match kind is known)
        self.kinds = [(fid, w, (w + 7) >> 3, cast(str, kind)) for fid, _name, w, kind in t.keys]
        self.positions = {fid: i for i, (fid, *_rest) in enumerate(self.kinds)}
        self.wildcards = [_wildcard(kind, w) for _fid, w, _nb, kind in self.kinds]
        ordered = all(kind in ("exact", "lpm") for *_r, kind in self.kinds)
        self.decode_key = _ordered_decoder(self.kinds) if ordered else self._decode_any
        self.needs_priority = t.needs_priority
        self.actions: dict[bytes, tuple[str, tuple[int, ...]]] = {}
        self.entry_actions = _entry_actions(p.schema, t)
        self.metadata = p.entry_metadata
        self.meter_cfg = p.direct_meter_cfg
        self.apply = self._make_apply()

    def _make_apply(self) -> Callable[[int, p4r.TableEntry], bool]:
        """apply(op, entry): the update applied if it has the usual shape and is valid (True),
        or nothing changed (False). Raises P4RuntimeError only for what the engine refuses
        (a full table). A closure over what it reads, with a one-field key decoded inline:
        it runs for every entry written."""
        table, tid, actions, metadata, meter_cfg = (self.table, self.tid, self.actions,
                                                    self.metadata, self.meter_cfg)
        find, add, modify, delete = (table.find_canonical, table.add_canonical,
                                     table.modify_canonical, table.delete)
        decode_key, decode_action = self.decode_key, self._decode_action
        needs_priority, switch_error = self.needs_priority, self._switch_error
        from_bytes = int.from_bytes
        one = self.kinds[0] if len(self.kinds) == 1 and self.kinds[0][3] in ("exact", "lpm") \
            else None
        fid1, w1, nbytes1, kind1 = one if one is not None else (0, 0, 0, None)

        def apply(op: int, e: p4r.TableEntry) -> bool:
            if e.is_default_action or e.idle_timeout_ns:
                return False
            priority = e.priority
            if needs_priority:
                if op != DELETE and not 0 < priority <= MAX_PRIORITY:
                    return False
            elif priority:
                return False
            matches = e.match
            key: tuple | None
            if kind1 == "lpm":  # decode_key, written out for the usual one-field tables
                if len(matches) != 1:
                    return False
                m = matches[0]
                lpm = m.lpm
                raw = lpm.value
                plen = lpm.prefix_len
                v = from_bytes(raw, "big")
                if (m.field_id != fid1 or not raw or len(raw) > nbytes1 or v >> w1
                        or not 0 < plen <= w1 or v & ((1 << (w1 - plen)) - 1)):
                    return False
                key = (_new(Lpm, ("lpm", v, plen)),)
            elif kind1 == "exact":
                if len(matches) != 1:
                    return False
                m = matches[0]
                raw = m.exact.value
                v = from_bytes(raw, "big")
                if m.field_id != fid1 or not raw or len(raw) > nbytes1 or v >> w1:
                    return False
                key = (_new(Exact, ("exact", v)),)
            else:
                key = decode_key(matches)
                if key is None:
                    return False
            handle = find(key, priority)
            if op == DELETE:
                if handle is None:
                    return False
                delete(handle)
                metadata.pop((tid, handle), None)
                meter_cfg.pop((tid, handle), None)
                return True
            if (handle is None) != (op == INSERT):  # an INSERT of an existing entry, or the opposite
                return False
            if e.HasField("counter_data") or e.HasField("meter_config"):
                return False
            ta = e.action
            raw = ta.SerializeToString()
            action = actions.get(raw)
            if action is None:
                action = decode_action(ta)
                if action is None:
                    return False
                if len(actions) >= _ACTION_CACHE:
                    actions.clear()
                actions[raw] = action
            try:
                if handle is None:  # an INSERT (checked above)
                    handle = add(key, action[0], action[1], priority)
                else:  # a MODIFY
                    modify(handle, action[0], action[1])
            except switch_error as exc:
                raise from_switch_error(exc) from exc
            md = e.metadata
            if md:
                metadata[(tid, handle)] = bytes(md)
            elif op == MODIFY:
                metadata.pop((tid, handle), None)
            return True

        return apply

    def _decode_any(self, matches) -> tuple | None:
        """The canonical key (as codec.match_keys makes it) if every field is valid, else
        None; fields in any order, ternary, range and optional ones may be omitted."""
        kinds = self.kinds
        out = list(self.wildcards)
        given = [False] * self.n
        positions = self.positions
        for m in matches:
            i = positions.get(m.field_id)
            if i is None or given[i]:
                return None
            given[i] = True
            _fid, w, nbytes, kind = kinds[i]
            mv = _decode_field(m, kind, w, nbytes)
            if mv is None:
                return None
            out[i] = mv
        if None in out:  # an exact field is missing
            return None
        return tuple(out)

    def _decode_action(self, ta: p4r.TableAction) -> tuple[str, tuple[int, ...]] | None:
        """(action name, args) of a direct action allowed in entries, every param in order."""
        action = ta.action
        spec = self.entry_actions.get(action.action_id)
        if spec is None:  # not a direct action, or not one of the table's entry actions
            return None
        name, plan = spec
        params = action.params
        if len(params) != len(plan):
            return None
        values = []
        for prm, (pid, w, nbytes) in zip(params, plan, strict=True):
            raw = prm.value
            v = int.from_bytes(raw, "big")
            if prm.param_id != pid or not raw or len(raw) > nbytes or v >> w:
                return None
            values.append(v)
        return name, tuple(values)


def _ordered_decoder(kinds: list) -> Callable[[Any], tuple | None]:
    """decode_key for a table of exact and lpm fields, which must all be given in P4Info
    order: one field (the usual case) without a loop."""
    from_bytes = int.from_bytes
    if len(kinds) == 1:
        ((fid, w, nbytes, kind),) = kinds
        if kind == "exact":
            def exact1(matches):
                if len(matches) != 1:
                    return None
                m = matches[0]
                raw = m.exact.value
                v = from_bytes(raw, "big")
                if m.field_id != fid or not raw or len(raw) > nbytes or v >> w:
                    return None
                return (_new(Exact, ("exact", v)),)
            return exact1

        def lpm1(matches):
            if len(matches) != 1:
                return None
            m = matches[0]
            lpm = m.lpm
            raw = lpm.value
            plen = lpm.prefix_len
            v = from_bytes(raw, "big")
            if (m.field_id != fid or not raw or len(raw) > nbytes or v >> w or not 0 < plen <= w
                    or v & ((1 << (w - plen)) - 1)):
                return None
            return (_new(Lpm, ("lpm", v, plen)),)
        return lpm1
    n = len(kinds)

    def ordered(matches):
        if len(matches) != n:
            return None
        out = []
        for m, (fid, w, nbytes, kind) in zip(matches, kinds, strict=True):
            if m.field_id != fid:
                return None
            if kind == "exact":
                raw = m.exact.value
                v = from_bytes(raw, "big")
                if not raw or len(raw) > nbytes or v >> w:
                    return None
                out.append(_new(Exact, ("exact", v)))
            else:
                lpm = m.lpm
                raw = lpm.value
                plen = lpm.prefix_len
                v = from_bytes(raw, "big")
                if (not raw or len(raw) > nbytes or v >> w or not 0 < plen <= w
                        or v & ((1 << (w - plen)) - 1)):
                    return None
                out.append(_new(Lpm, ("lpm", v, plen)))
        return tuple(out)
    return ordered


def _uint(raw: bytes, w: int, nbytes: int) -> int | None:
    v = int.from_bytes(raw, "big")
    if not raw or len(raw) > nbytes or v >> w:
        return None
    return v


def _decode_field(m: p4r.FieldMatch, kind: str, w: int, nbytes: int):
    """One match field as codec._match_keys_checked accepts it, or None. The kind the
    request used is the one whose value is set (valid values are never empty)."""
    if kind == "exact":
        v = _uint(m.exact.value, w, nbytes)
        return None if v is None else _new(Exact, ("exact", v))
    if kind == "lpm":
        lpm = m.lpm
        v = _uint(lpm.value, w, nbytes)
        plen = lpm.prefix_len
        if v is None or not 0 < plen <= w or v & ((1 << (w - plen)) - 1):
            return None
        return _new(Lpm, ("lpm", v, plen))
    if kind == "ternary":
        t = m.ternary
        v = _uint(t.value, w, nbytes)
        mask = _uint(t.mask, w, nbytes)
        if v is None or not mask or v & ~mask:
            return None
        return _new(Ternary, ("ternary", v, mask))
    if kind == "range":
        r = m.range
        lo = _uint(r.low, w, nbytes)
        hi = _uint(r.high, w, nbytes)
        if lo is None or hi is None or lo > hi or (lo == 0 and hi == (1 << w) - 1):
            return None
        return _new(Range, ("range", lo, hi))
    v = _uint(m.optional.value, w, nbytes)
    return None if v is None else _new(Optional, ("optional", v))


def _wildcard(kind: str, w: int):
    """The canonical value of an omitted field (codec._WILDCARD); None: it cannot be omitted."""
    if kind == "lpm":
        return Lpm(0, 0)
    if kind == "ternary":
        return Ternary(0, 0)
    if kind == "range":
        return Range(0, (1 << w) - 1)
    if kind == "optional":
        return Optional(None)
    return None


def _entry_actions(schema: Schema, t: TableSchema) -> dict[int, tuple[str, list]]:
    """Action id -> (name, [(param id, bit width, byte width)]) for the actions an entry of
    `t` may use (codec.check_action_in_table with default=False)."""
    out = {}
    for aid, scope in t.action_scopes.items():
        if scope == p4i.ActionRef.DEFAULT_ONLY or aid not in schema.fast_actions:
            continue
        out[aid] = schema.fast_actions[aid]
    return out


def plan_for(p: Pipeline, table_id: int) -> TablePlan | None:
    """The pipeline's plan for a table (built on first use); None if the table has none
    (unknown id, an action profile, const entries, an unsupported match kind)."""
    plans = p.table_plans
    if table_id in plans:
        return plans[table_id]
    t = p.schema.tables.get(table_id)
    plan = None
    if (t is not None and t.direct and not t.is_const
            and all(kind is not None for *_r, kind in t.keys)):
        plan = TablePlan(p, t)
    plans[table_id] = plan
    return plan
