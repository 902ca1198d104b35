"""P4Runtime match keys and actions <-> engine values, with the spec's validation (9.1)."""

from __future__ import annotations

import grpc
from finsy.proto import p4i, p4r

from softswitch.p4runtime.errors import P4RuntimeError, decode_uint, encode_uint, invalid
from softswitch.p4runtime.pipeline import Pipeline
from softswitch.p4runtime.schema import TableSchema


def match_keys(t: TableSchema, matches) -> tuple[list, tuple]:
    """Engine match values in key order, plus a canonical identity of the match."""
    from softswitch.engine import Exact, Lpm, Optional, Range, Ternary

    given: dict[int, p4r.FieldMatch] = {}
    for m in matches:
        if m.field_id not in t.fields:
            raise invalid(f"{t.name}: unknown match field id {m.field_id}")
        if m.field_id in given:
            raise invalid(f"{t.name}: match field id {m.field_id} given twice")
        given[m.field_id] = m
    keys = []
    for fid, fname, w, expected in t.keys:
        def where(fname=fname) -> str:
            return f"{t.name}: match field {fname!r}"

        if expected is None:
            raise P4RuntimeError(grpc.StatusCode.UNIMPLEMENTED,
                                 f"{where()}: match type {t.fields[fid].match_type}")
        m = given.get(fid)
        if m is None:
            if expected == "exact":
                raise invalid(f"{where()}: exact match field missing")
            keys.append(None)
            continue
        kind = m.WhichOneof("field_match_type")
        if kind != expected:
            raise invalid(f"{where()}: expected a {expected} match, got {kind}")
        if kind == "exact":
            keys.append(Exact(decode_uint(m.exact.value, w, where)))
        elif kind == "lpm":
            v = decode_uint(m.lpm.value, w, where)
            plen = m.lpm.prefix_len
            if plen <= 0 or plen > w:
                raise invalid(
                    f"{where()}: prefix length {plen} not in 1..{w} (omit the field for /0)"
                )
            if v & ((1 << (w - plen)) - 1):
                raise invalid(f"{where()}: value has bits set beyond the /{plen} prefix")
            keys.append(Lpm(v, plen))
        elif kind == "ternary":
            v = decode_uint(m.ternary.value, w, where)
            mask = decode_uint(m.ternary.mask, w, lambda: where() + " mask")
            if mask == 0:
                raise invalid(f"{where()}: all-zero mask: omit the field for a wildcard")
            if v & ~mask:
                raise invalid(f"{where()}: value has bits set outside the mask")
            keys.append(Ternary(v, mask))
        elif kind == "range":
            lo = decode_uint(m.range.low, w, lambda: where() + " low")
            hi = decode_uint(m.range.high, w, lambda: where() + " high")
            if lo > hi:
                raise invalid(f"{where()}: low {lo} is above high {hi}")
            if lo == 0 and hi == (1 << w) - 1:
                raise invalid(f"{where()}: full range: omit the field for a wildcard")
            keys.append(Range(lo, hi))
        else:
            keys.append(Optional(decode_uint(m.optional.value, w, where)))
    return keys, tuple(keys)


def action_args(p: Pipeline, action: p4r.Action, where: str) -> tuple[str, list[int]]:
    """(action name, args in param order) of a P4Runtime Action, validated against P4Info."""
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


def check_action_in_table(t: TableSchema, action_id: int, default: bool) -> None:
    """INVALID_ARGUMENT unless the action may be used in an entry (or as default) of `t`."""
    scope = t.action_scopes.get(action_id)
    if scope is None:
        raise invalid(f"{t.name}: action id {action_id} is not an action of this table")
    if default and scope == p4i.ActionRef.TABLE_ONLY:
        raise invalid(f"{t.name}: action id {action_id} is @tableonly, cannot be the default")
    if not default and scope == p4i.ActionRef.DEFAULT_ONLY:
        raise invalid(f"{t.name}: action id {action_id} is @defaultonly, cannot be in an entry")


def entry_to_proto(p: Pipeline, t: TableSchema, entry, with_counter: bool) -> p4r.TableEntry:
    """An engine table entry as a canonical P4Runtime TableEntry (wildcards omitted)."""
    from softswitch.engine import Lpm, Optional, Range, Ternary

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
    key = (t.info.preamble.id, entry.handle)
    if key in p.entry_metadata:
        out.metadata = p.entry_metadata[key]
    if key in p.direct_meter_cfg:
        out.meter_config.CopyFrom(p.direct_meter_cfg[key])
    if with_counter and p.schema.direct_resource(t, "direct_counters") is not None:
        pk, by = p.switch.direct_counter_read(t.name, entry.handle)
        out.counter_data.packet_count = pk
        out.counter_data.byte_count = by
    return out


def action_proto(p: Pipeline, name: str, args) -> p4r.Action:
    """A P4Runtime Action for an engine (action name, args)."""
    aid = next(i for i, a in p.schema.actions.items() if a.preamble.name == name)
    msg = p4r.Action(action_id=aid)
    for spec, v in zip(p.schema.action_params[aid].values(), args, strict=True):
        msg.params.add(param_id=spec.id, value=encode_uint(v))
    return msg
