"""P4Runtime match keys and actions <-> engine values, with the spec's validation (9.1)."""

from __future__ import annotations

import grpc
from finsy.proto import p4i, p4r

from softswitch.engine.match import Exact, Lpm, Optional, Range, Ternary
from softswitch.p4runtime.errors import P4RuntimeError, decode_uint, encode_uint, invalid
from softswitch.p4runtime.pipeline import Pipeline
from softswitch.p4runtime.schema import TableSchema


def match_keys(t: TableSchema, matches) -> tuple[tuple, tuple]:
    """Engine match values in key order (omitted fields as the engine's canonical
    wildcards), twice (as the values and as the entry's canonical identity); the
    spec's validation (9.1.1)."""
    fast = t.fast_key
    if fast is None:
        fast = t.fast_key = _fast_key_decoder(t)
    key = fast(matches)
    if key is None:  # not the common shape: the general decoder, with its precise errors
        key = _match_keys_checked(t, matches)
    return key, key


def _fast_key_decoder(t: TableSchema):
    """A decoder for the usual request: every field given, in P4Info order, valid.
    It returns None for anything else, which the general decoder then handles (and
    refuses with the precise error), so both accept exactly the same requests."""
    plan = []
    for fid, _fname, w, kind in t.keys:
        if kind not in ("exact", "lpm"):
            return lambda matches: None
        plan.append((fid, w, (w + 7) >> 3, kind))
    n = len(plan)

    def decode(matches):
        if len(matches) != n:
            return None
        out = []
        for m, (fid, w, nbytes, kind) in zip(matches, plan, strict=True):
            if m.field_id != fid or m.WhichOneof("field_match_type") != kind:
                return None
            if kind == "exact":
                raw = m.exact.value
                v = int.from_bytes(raw, "big")
                if not raw or len(raw) > nbytes or v >> w:
                    return None
                out.append(Exact(v))
            else:
                lpm = m.lpm
                raw = lpm.value
                plen = lpm.prefix_len
                v = int.from_bytes(raw, "big")
                if not raw or len(raw) > nbytes or v >> w or not 0 < plen <= w \
                        or v & ((1 << (w - plen)) - 1):
                    return None
                out.append(Lpm(v, plen))
        return tuple(out)

    return decode


def _match_keys_checked(t: TableSchema, matches) -> tuple:
    given: list = [None] * len(t.keys)
    index = t.key_index
    for m in matches:
        i = index.get(m.field_id)
        if i is None:
            raise invalid(f"{t.name}: unknown match field id {m.field_id}")
        if given[i] is not None:
            raise invalid(f"{t.name}: match field id {m.field_id} given twice")
        given[i] = m
    keys = []
    for (fid, fname, w, expected), m in zip(t.keys, given, strict=True):
        if expected is None:
            raise P4RuntimeError(grpc.StatusCode.UNIMPLEMENTED,
                                 f"{_where(t, fname)}: match type {t.fields[fid].match_type}")
        if m is None:
            if expected == "exact":
                raise invalid(f"{_where(t, fname)}: exact match field missing")
            keys.append(_WILDCARD[expected](w))
            continue
        kind = m.WhichOneof("field_match_type")
        if kind != expected:
            raise invalid(f"{_where(t, fname)}: expected a {expected} match, got {kind}")
        if kind == "exact":
            keys.append(Exact(_uint(m.exact.value, w, t, fname)))
        elif kind == "lpm":
            v = _uint(m.lpm.value, w, t, fname)
            plen = m.lpm.prefix_len
            if plen <= 0 or plen > w:
                raise invalid(
                    f"{_where(t, fname)}: prefix length {plen} not in 1..{w} (omit the field for /0)"
                )
            if v & ((1 << (w - plen)) - 1):
                raise invalid(f"{_where(t, fname)}: value has bits set beyond the /{plen} prefix")
            keys.append(Lpm(v, plen))
        elif kind == "ternary":
            v = _uint(m.ternary.value, w, t, fname)
            mask = _uint(m.ternary.mask, w, t, fname, " mask")
            if mask == 0:
                raise invalid(f"{_where(t, fname)}: all-zero mask: omit the field for a wildcard")
            if v & ~mask:
                raise invalid(f"{_where(t, fname)}: value has bits set outside the mask")
            keys.append(Ternary(v, mask))
        elif kind == "range":
            lo = _uint(m.range.low, w, t, fname, " low")
            hi = _uint(m.range.high, w, t, fname, " high")
            if lo > hi:
                raise invalid(f"{_where(t, fname)}: low {lo} is above high {hi}")
            if lo == 0 and hi == (1 << w) - 1:
                raise invalid(f"{_where(t, fname)}: full range: omit the field for a wildcard")
            keys.append(Range(lo, hi))
        else:
            keys.append(Optional(_uint(m.optional.value, w, t, fname)))
    return tuple(keys)


_WILDCARD = {
    "lpm": lambda w: Lpm(0, 0),
    "ternary": lambda w: Ternary(0, 0),
    "range": lambda w: Range(0, (1 << w) - 1),
    "optional": lambda w: Optional(None),
}


def _where(t: TableSchema, fname: str) -> str:
    return f"{t.name}: match field {fname!r}"


def _uint(data: bytes, w: int, t: TableSchema, fname: str, part: str = "") -> int:
    """decode_uint with the common case inline (this runs for every key of every entry)."""
    v = int.from_bytes(data, "big")
    if data and len(data) <= (w + 7) >> 3 and not v >> w:
        return v
    return decode_uint(data, w, _where(t, fname) + part)


def action_args(p: Pipeline, action: p4r.Action, where: str) -> tuple[str, list[int]]:
    """(action name, args in param order) of a P4Runtime Action, validated against P4Info."""
    fast = p.schema.fast_actions.get(action.action_id)
    if fast is not None:
        aname, plan = fast
        params = action.params
        if len(params) == len(plan):  # the usual request: every param, in order, valid
            values = []
            for prm, (pid, w, nbytes) in zip(params, plan, strict=True):
                raw = prm.value
                v = int.from_bytes(raw, "big")
                if prm.param_id != pid or not raw or len(raw) > nbytes or v >> w:
                    break
                values.append(v)
            else:
                return aname, values
    return _action_args_checked(p, action, where)


def _action_args_checked(p: Pipeline, action: p4r.Action, where: str) -> tuple[str, list[int]]:
    spec = p.schema.action_specs.get(action.action_id)
    if spec is None:
        p.schema.action(action.action_id)  # raises NOT_FOUND
    aname, params = spec
    values: dict[int, int] = {}
    for prm in action.params:
        pid = prm.param_id
        pspec = params.get(pid)
        if pspec is None:
            raise invalid(f"{where}: action {aname} has no param id {pid}")
        if pid in values:
            raise invalid(f"{where}: param {pspec[0]!r} given twice")
        values[pid] = decode_uint(
            prm.value, pspec[1], lambda pspec=pspec: f"{where}: param {pspec[0]!r} of {aname}"
        )
    if len(values) != len(params):
        missing = [name for pid, (name, _) in params.items() if pid not in values]
        raise invalid(f"{where}: action {aname} is missing params {missing}")
    return aname, [values[pid] for pid in params]


def check_action_in_table(t: TableSchema, action_id: int, default: bool, schema=None) -> None:
    """INVALID_ARGUMENT unless the action may be used in an entry (or as default) of `t`
    (NOT_FOUND first for an action id unknown to `schema`, when given)."""
    scope = t.action_scopes.get(action_id)
    if scope is None:
        if schema is not None:
            schema.action(action_id)  # NOT_FOUND for an unknown id
        raise invalid(f"{t.name}: action id {action_id} is not an action of this table")
    if default and scope == p4i.ActionRef.TABLE_ONLY:
        raise invalid(f"{t.name}: action id {action_id} is @tableonly, cannot be the default")
    if not default and scope == p4i.ActionRef.DEFAULT_ONLY:
        raise invalid(f"{t.name}: action id {action_id} is @defaultonly, cannot be in an entry")


def entry_to_proto(p: Pipeline, t: TableSchema, entry, with_counter: bool) -> p4r.TableEntry:
    """An engine table entry as a canonical P4Runtime TableEntry (wildcards omitted)."""
    key = (t.info.preamble.id, entry.handle)
    counters = None
    if with_counter and p.schema.direct_resource(t, "direct_counters") is not None:
        counters = p.switch.direct_counter_read(t.name, entry.handle)
    return entry_proto(p, t, entry, p.entry_metadata.get(key), p.direct_meter_cfg.get(key),
                       counters)


def entry_proto(p: Pipeline, t: TableSchema, entry, metadata: bytes | None,
                meter_cfg: p4r.MeterConfig | None,
                counters: tuple[int, int] | None) -> p4r.TableEntry:
    """entry_to_proto with the entry's controller data given (as it was at some moment)."""
    out = p4r.TableEntry(table_id=t.info.preamble.id, priority=entry.priority)
    for (fid, f), mv in zip(t.fields.items(), entry.key, strict=False):
        w = f.bitwidth
        if isinstance(mv, Lpm):
            if mv.prefix_len == 0:
                continue
            out.match.add(field_id=fid, lpm=p4r.FieldMatch.LPM(
                value=encode_uint(mv.value), prefix_len=mv.prefix_len))
        elif isinstance(mv, Ternary):
            if mv.mask == 0:
                continue
            out.match.add(field_id=fid, ternary=p4r.FieldMatch.Ternary(
                value=encode_uint(mv.value), mask=encode_uint(mv.mask)))
        elif isinstance(mv, Range):
            if mv.lo == 0 and mv.hi == (1 << w) - 1:
                continue
            out.match.add(field_id=fid, range=p4r.FieldMatch.Range(
                low=encode_uint(mv.lo), high=encode_uint(mv.hi)))
        elif isinstance(mv, Optional):
            if mv.value is None:
                continue
            out.match.add(field_id=fid, optional=p4r.FieldMatch.Optional(value=encode_uint(mv.value)))
        else:
            out.match.add(field_id=fid, exact=p4r.FieldMatch.Exact(value=encode_uint(mv.value)))
    if entry.member is not None:
        out.action.action_profile_member_id = entry.member
    elif entry.group is not None:
        out.action.action_profile_group_id = entry.group
    elif entry.action is not None:
        out.action.action.CopyFrom(action_proto(p, entry.action, entry.args))
    if metadata is not None:
        out.metadata = metadata
    if meter_cfg is not None:
        out.meter_config.CopyFrom(meter_cfg)
    if counters is not None:
        out.counter_data.packet_count = counters[0]
        out.counter_data.byte_count = counters[1]
    return out


def action_proto(p: Pipeline, name: str, args) -> p4r.Action:
    """A P4Runtime Action for an engine (action name, args)."""
    aid = p.schema.action_ids[name]
    msg = p4r.Action(action_id=aid)
    for spec, v in zip(p.schema.action_params[aid].values(), args, strict=True):
        msg.params.add(param_id=spec.id, value=encode_uint(v))
    return msg
