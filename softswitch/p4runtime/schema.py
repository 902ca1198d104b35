"""Index of a P4Info by ID: what the server validates every request against."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from finsy.proto import p4i

from softswitch.p4runtime.errors import P4RuntimeError, invalid, not_found

MatchType = p4i.MatchField.MatchType


MATCH_KINDS = {
    MatchType.EXACT: "exact",
    MatchType.LPM: "lpm",
    MatchType.TERNARY: "ternary",
    MatchType.RANGE: "range",
    MatchType.OPTIONAL: "optional",
}


@dataclass
class TableSchema:
    """A table of the P4Info with its match fields and action references by ID."""

    info: p4i.Table
    fields: dict[int, p4i.MatchField] = field(default_factory=dict)
    action_scopes: dict[int, int] = field(default_factory=dict)
    # (field id, name, bitwidth, match kind name or None if unsupported), in P4Info order;
    # plain Python values because protobuf attribute access is slow on the write path.
    keys: list[tuple[int, str, int, str | None]] = field(default_factory=list)
    name: str = ""
    needs_priority: bool = False
    """True if a match field is ternary, range or optional (spec 9.1.1)."""
    # Plain copies of P4Info values the write path reads for every update.
    id: int = 0
    key_index: dict[int, int] = field(default_factory=dict)  # match field id -> position
    is_const: bool = False
    direct: bool = True  # actions in entries (no action profile)
    fast_key: Any = None  # codec's decoder for the usual request, built on first use


class Schema:
    """P4Info lookups that raise the P4Runtime error for unknown IDs."""

    def __init__(self, info: p4i.P4Info) -> None:
        self.info = info
        self.tables: dict[int, TableSchema] = {}
        for t in info.tables:
            ts = TableSchema(t, name=t.preamble.name, id=t.preamble.id, is_const=t.is_const_table,
                             direct=t.implementation_id == 0)
            for f in t.match_fields:
                ts.fields[f.id] = f
                ts.key_index[f.id] = len(ts.keys)
                ts.keys.append((f.id, f.name, f.bitwidth, MATCH_KINDS.get(f.match_type)))
            ts.needs_priority = any(k[3] in ("ternary", "range", "optional") for k in ts.keys)
            for ref in t.action_refs:
                ts.action_scopes[ref.id] = ref.scope
            self.tables[t.preamble.id] = ts
        self.actions = {a.preamble.id: a for a in info.actions}
        self.action_ids = {a.preamble.name: a.preamble.id for a in info.actions}
        self.action_params = {
            a.preamble.id: {p.id: p for p in a.params} for a in info.actions
        }
        # action id -> (name, {param id: (name, bitwidth)}) as plain values, for the write path
        self.action_specs = {
            a.preamble.id: (a.preamble.name, {p.id: (p.name, p.bitwidth) for p in a.params})
            for a in info.actions
        }
        # action id -> (name, [(param id, bitwidth, byte width)] in order), for the fast path
        self.fast_actions = {
            a.preamble.id: (a.preamble.name, [(p.id, p.bitwidth, (p.bitwidth + 7) >> 3)
                                              for p in a.params])
            for a in info.actions
        }
        self.profiles = {p.preamble.id: p for p in info.action_profiles}
        self.counters = {c.preamble.id: c for c in info.counters}
        self.direct_counters = {c.preamble.id: c for c in info.direct_counters}
        self.meters = {m.preamble.id: m for m in info.meters}
        self.direct_meters = {m.preamble.id: m for m in info.direct_meters}
        self.registers = {r.preamble.id: r for r in info.registers}
        self.digests = {d.preamble.id: d for d in info.digests}
        self.controller_headers = {
            h.preamble.name: h for h in info.controller_packet_metadata
        }

    def table(self, table_id: int) -> TableSchema:
        """The table with this ID, or NOT_FOUND."""
        t = self.tables.get(table_id)
        if t is None:
            raise not_found(f"unknown table id {table_id}")
        return t

    def action(self, action_id: int) -> p4i.Action:
        """The action with this ID, or NOT_FOUND."""
        a = self.actions.get(action_id)
        if a is None:
            raise not_found(f"unknown action id {action_id}")
        return a

    def lookup(self, kind: str, ident: int):
        """Look up an entity of `kind` ('profiles', 'counters', ...) by ID, or NOT_FOUND."""
        found = getattr(self, kind).get(ident)
        if found is None:
            raise not_found(f"unknown {kind[:-1].replace('_', ' ')} id {ident}")
        return found

    def direct_resource(self, table: TableSchema, kind: str) -> str | None:
        """Name of the table's direct counter or meter (`kind` 'direct_counters'/'direct_meters')."""
        ids = getattr(self, kind)
        for rid in table.info.direct_resource_ids:
            if rid in ids:
                return ids[rid].preamble.name
        return None

    def check_same_ids(self, other: p4i.P4Info) -> None:
        """INVALID_ARGUMENT if `other` describes a table or action differently from this P4Info.

        Compared: IDs and names of tables and actions, and the (id, name, bitwidth, match
        type) of every match field and the (id, name, bitwidth) of every action parameter.
        """

        def mismatch(kind: str, obj, detail: str) -> P4RuntimeError:
            return invalid(
                f"P4Info does not match the device config: {kind} {obj.preamble.name!r} "
                f"(id {obj.preamble.id}) {detail}"
            )

        for t in other.tables:
            mine = self.tables.get(t.preamble.id)
            if mine is None or mine.name != t.preamble.name:
                raise mismatch("table", t, "is not in the program" if mine is None
                               else f"is {mine.name!r} there")
            theirs = [(f.id, f.name, f.bitwidth, f.match_type) for f in t.match_fields]
            ours = [(f.id, f.name, f.bitwidth, f.match_type) for f in mine.info.match_fields]
            if theirs != ours:
                raise mismatch("table", t, f"has match fields {theirs}, the program {ours}")
        for a in other.actions:
            mine_a = self.actions.get(a.preamble.id)
            if mine_a is None or mine_a.preamble.name != a.preamble.name:
                raise mismatch("action", a, "is not in the program" if mine_a is None
                               else f"is {mine_a.preamble.name!r} there")
            theirs = [(x.id, x.name, x.bitwidth) for x in a.params]
            ours = [(x.id, x.name, x.bitwidth) for x in mine_a.params]
            if theirs != ours:
                raise mismatch("action", a, f"has params {theirs}, the program {ours}")


__all__ = ["Schema", "TableSchema", "MatchType", "P4RuntimeError"]
