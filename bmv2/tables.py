"""P4Runtime table, counter and replication calls, named as softswitch's ``Switch`` names them.

``P4RuntimeTables`` turns softswitch's calls (``table_add``, ``table_set_default``,
``counter_read``, ``mc_group_set``, ...) with its ``Exact``/``Lpm``/``Ternary``/
``Range``/``Optional`` keys into P4Runtime writes and reads on a ``Session``, by
the P4Info's names (fully qualified, alias or a unique suffix). It knows nothing
of the target behind the session: ``Bmv2Switch`` uses it for BMv2, and the
benchmarks use it to configure a ``softswitch run`` process as they configure an
in-process ``Switch``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from finsy.proto import p4i, p4r

from softswitch.engine import Exact, Lpm, Range, SwitchError, Ternary
from softswitch.engine import Optional as OptionalMatch

from .session import Session

_KINDS = {p4i.MatchField.EXACT: "exact", p4i.MatchField.LPM: "lpm",
          p4i.MatchField.TERNARY: "ternary", p4i.MatchField.RANGE: "range",
          p4i.MatchField.OPTIONAL: "optional"}


@dataclass(frozen=True)
class KeySpec:
    """One match field of a table (softswitch's key spec shape)."""

    name: str
    id: int
    match_kind: str
    width: int


@dataclass(frozen=True)
class ParamSpec:
    """One action parameter."""

    name: str
    id: int
    width: int


@dataclass(frozen=True)
class ActionSpec:
    """An action of the program."""

    name: str
    id: int
    params: tuple[ParamSpec, ...]


def resolve_name(kind: str, names: Iterable[str], name: str, aliases: Mapping[str, str] = {}) -> str:
    """A fully-qualified name from itself, an alias or a unique dotted suffix."""
    names = list(names)
    if name in names:
        return name
    if name in aliases:
        return aliases[name]
    hits = [n for n in names if n.endswith("." + name)]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise SwitchError("NOT_FOUND", f"no {kind} named {name}")
    raise SwitchError("INVALID_ARGUMENT", f"{kind} name {name} is ambiguous")


class TableView:
    """A table as the P4Info describes it (what the STF runner asks of a table)."""

    def __init__(self, msg: Any, actions: dict[int, ActionSpec]) -> None:
        self.name: str = msg.preamble.name
        self.id: int = msg.preamble.id
        self.match_keys = [KeySpec(f.name, f.id, _KINDS.get(f.match_type, "exact"), f.bitwidth)
                           for f in msg.match_fields]
        self.needs_priority = any(k.match_kind in ("ternary", "range", "optional")
                                  for k in self.match_keys)
        self.actions = {actions[r.id].name: actions[r.id] for r in msg.action_refs}
        self.direct_counter: int | None = None

    def resolve_action_name(self, name: str) -> ActionSpec:
        """The action called ``name`` (fully qualified or a unique suffix) of this table."""
        full = resolve_name("action", self.actions, name)
        return self.actions[full]


def _bytes(value: int, width: int, what: str) -> bytes:
    if value < 0 or value >> width:
        raise SwitchError("OUT_OF_RANGE", f"{what}: {value} does not fit {width} bits")
    return value.to_bytes(max((width + 7) // 8, 1), "big")


class P4RuntimeTables:
    """softswitch's table, counter and replication calls over a P4Runtime session."""

    def __init__(self, p4info: Any, session: Session | None = None) -> None:
        self.p4info = p4info
        self.session = session
        self._schema()
        self._entries: dict[int, tuple[TableView, Any]] = {}
        self._next_handle = 1
        self._groups: set[int] = set()
        self._clones: set[int] = set()

    def _schema(self) -> None:
        info = self.p4info
        self.actions = {a.preamble.id: ActionSpec(a.preamble.name, a.preamble.id, tuple(
            ParamSpec(p.name, p.id, p.bitwidth) for p in a.params)) for a in info.actions}
        self.tables = {t.preamble.name: TableView(t, self.actions) for t in info.tables}
        self._table_alias = {t.preamble.alias: t.preamble.name for t in info.tables}
        self.counters = {c.preamble.name: c for c in info.counters}
        self.direct: dict[str, tuple[str, str]] = {}
        """Direct resources by name: (kind, table name), as softswitch's ``Switch.direct``."""
        for dc in info.direct_counters:
            table = next(t for t in self.tables.values() if t.id == dc.direct_table_id)
            table.direct_counter = dc.preamble.id
            self.direct[dc.preamble.name] = ("counter", table.name)

    def table(self, name: str) -> TableView:
        """The table called ``name`` (fully qualified, alias or a unique suffix)."""
        return self.tables[resolve_name("table", self.tables, name, self._table_alias)]

    # ------------------------------------------------------------------ tables

    def _match(self, table: TableView, keys: Sequence[Any] | Mapping[str, Any]) -> list[Any]:
        if isinstance(keys, Mapping):
            by_name = {}
            for name, value in keys.items():
                full = resolve_name("key", [k.name for k in table.match_keys], name)
                by_name[full] = value
            values = [by_name.get(k.name) for k in table.match_keys]
        else:
            values = list(keys)
            if len(values) != len(table.match_keys):
                raise SwitchError("INVALID_ARGUMENT", f"{table.name} takes {len(table.match_keys)} "
                                  f"key(s), got {len(values)}")
        out = []
        for spec, v in zip(table.match_keys, values, strict=True):
            fm = self._field_match(table, spec, v)
            if fm is not None:
                out.append(fm)
        return out

    def _field_match(self, table: TableView, k: KeySpec, v: Any) -> Any:
        what = f"{table.name} key {k.name}"
        full = (1 << k.width) - 1
        if v is None:
            if k.match_kind == "exact":
                raise SwitchError("INVALID_ARGUMENT", f"{what}: an exact key needs a value")
            return None
        if isinstance(v, int):
            v = Exact(v)
        fm = p4r.FieldMatch(field_id=k.id)
        if k.match_kind == "exact" and isinstance(v, Exact):
            fm.exact.value = _bytes(v.value, k.width, what)
        elif k.match_kind == "lpm" and isinstance(v, (Lpm, Exact)):
            value, plen = (v.value, v.prefix_len) if isinstance(v, Lpm) else (v.value, k.width)
            if plen == 0:
                return None
            fm.lpm.value, fm.lpm.prefix_len = _bytes(value, k.width, what), plen
        elif k.match_kind == "ternary" and isinstance(v, (Ternary, Exact)):
            value, mask = (v.value, v.mask) if isinstance(v, Ternary) else (v.value, full)
            if mask == 0:
                return None
            fm.ternary.value, fm.ternary.mask = _bytes(value, k.width, what), _bytes(mask, k.width, what)
        elif k.match_kind == "range" and isinstance(v, (Range, Exact)):
            lo, hi = (v.lo, v.hi) if isinstance(v, Range) else (v.value, v.value)
            if lo == 0 and hi == full:
                return None
            fm.range.low, fm.range.high = _bytes(lo, k.width, what), _bytes(hi, k.width, what)
        elif k.match_kind == "optional" and isinstance(v, (OptionalMatch, Exact)):
            if v.value is None:
                return None
            fm.optional.value = _bytes(v.value, k.width, what)
        else:
            raise SwitchError("INVALID_ARGUMENT", f"{what}: a {type(v).__name__} value cannot "
                              f"match a {k.match_kind} key")
        return fm

    def _action(self, table: TableView, action: str, args: Sequence[int] | Mapping[str, int]) -> Any:
        spec = table.resolve_action_name(action)
        if isinstance(args, Mapping):
            unknown = set(args) - {p.name for p in spec.params}
            if unknown:
                raise SwitchError("INVALID_ARGUMENT", f"{spec.name} has no parameter "
                                  f"{sorted(unknown)[0]}")
            values = [args.get(p.name, 0) for p in spec.params]
        else:
            values = list(args)
            if len(values) != len(spec.params):
                raise SwitchError("INVALID_ARGUMENT", f"{spec.name} takes {len(spec.params)} "
                                  f"argument(s), got {len(values)}")
        return p4r.TableAction(action=p4r.Action(action_id=spec.id, params=[
            p4r.Action.Param(param_id=p.id, value=_bytes(int(v), p.width, f"{spec.name}({p.name})"))
            for p, v in zip(spec.params, values, strict=True)]))

    def _write(self, kind: Any, entity: Any, what: str) -> None:
        assert self.session is not None
        self.session.write([p4r.Update(type=kind, entity=entity)], what)

    def table_add(self, table: str, keys: Sequence[Any] | Mapping[str, Any], action: str,
                  args: Sequence[int] | Mapping[str, int] = (), priority: int = 0) -> int:
        """Insert an entry; returns its handle (this adapter's own numbering)."""
        t = self.table(table)
        entry = p4r.TableEntry(table_id=t.id, match=self._match(t, keys),
                               action=self._action(t, action, args))
        if t.needs_priority:
            if priority <= 0:
                raise SwitchError("INVALID_ARGUMENT", f"{t.name} needs a priority above 0")
            entry.priority = priority
        self._write(p4r.Update.INSERT, p4r.Entity(table_entry=entry), f"{t.name}: add")
        handle = self._next_handle
        self._next_handle += 1
        self._entries[handle] = (t, entry)
        return handle

    def _entry(self, table: str, handle: int) -> tuple[TableView, Any]:
        t = self.table(table)
        got = self._entries.get(handle)
        if got is None or got[0] is not t:
            raise SwitchError("NOT_FOUND", f"{t.name} has no entry {handle}")
        return got

    def table_modify(self, table: str, handle: int, action: str | None = None,
                     args: Sequence[int] | Mapping[str, int] = ()) -> None:
        """Change an entry's action and arguments."""
        t, entry = self._entry(table, handle)
        new = p4r.TableEntry()
        new.CopyFrom(entry)
        name = action or self.actions[entry.action.action.action_id].name
        new.action.CopyFrom(self._action(t, name, args))
        self._write(p4r.Update.MODIFY, p4r.Entity(table_entry=new), f"{t.name}: modify")
        self._entries[handle] = (t, new)

    def table_delete(self, table: str, handle: int) -> None:
        """Delete an entry."""
        t, entry = self._entry(table, handle)
        self._write(p4r.Update.DELETE, p4r.Entity(table_entry=entry), f"{t.name}: delete")
        del self._entries[handle]

    def table_find(self, table: str, keys: Sequence[Any] | Mapping[str, Any],
                   priority: int = 0) -> int | None:
        """Handle of the entry with exactly these keys (and priority), or None."""
        t = self.table(table)
        match = self._match(t, keys)
        for handle, (tt, entry) in self._entries.items():
            if tt is t and list(entry.match) == match and (
                    not t.needs_priority or entry.priority == priority):
                return handle
        return None

    def table_set_default(self, table: str, action: str,
                          args: Sequence[int] | Mapping[str, int] = ()) -> None:
        """Set the default action."""
        t = self.table(table)
        entry = p4r.TableEntry(table_id=t.id, is_default_action=True,
                               action=self._action(t, action, args))
        self._write(p4r.Update.MODIFY, p4r.Entity(table_entry=entry), f"{t.name}: default")

    # ------------------------------------------------------------------ counters

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        """(packets, bytes) of an indexed counter."""
        assert self.session is not None
        full = resolve_name("counter", self.counters, name)
        c = self.counters[full]
        got = self.session.read([p4r.Entity(counter_entry=p4r.CounterEntry(
            counter_id=c.preamble.id, index=p4r.Index(index=index)))], f"counter {full}")
        if not got:
            raise SwitchError("NOT_FOUND", f"counter {full}[{index}]")
        data = got[0].counter_entry.data
        return data.packet_count, data.byte_count

    def direct_counter_read(self, table: str, handle: int) -> tuple[int, int]:
        """(packets, bytes) of an entry's direct counter."""
        assert self.session is not None
        t, entry = self._entry(table, handle)
        if t.direct_counter is None:
            raise SwitchError("FAILED_PRECONDITION", f"{t.name} has no direct counter")
        got = self.session.read([p4r.Entity(direct_counter_entry=p4r.DirectCounterEntry(
            table_entry=entry))], f"{t.name}: direct counter")
        if not got:
            raise SwitchError("NOT_FOUND", f"{t.name} entry {handle}")
        data = got[0].direct_counter_entry.data
        return data.packet_count, data.byte_count

    # ------------------------------------------------------------------ replication

    def mc_group_set(self, group_id: int, replicas: Iterable[tuple[int, int]]) -> None:
        """Create or replace a multicast group of (port, rid) replicas."""
        entry = p4r.MulticastGroupEntry(multicast_group_id=group_id, replicas=[
            p4r.Replica(egress_port=port, instance=rid) for port, rid in replicas])
        kind = p4r.Update.MODIFY if group_id in self._groups else p4r.Update.INSERT
        self._write(kind, p4r.Entity(packet_replication_engine_entry=p4r.PacketReplicationEngineEntry(
            multicast_group_entry=entry)), f"multicast group {group_id}")
        self._groups.add(group_id)

    def clone_session_set(self, session_id: int, replicas: Iterable[tuple[int, int]],
                          truncate: int = 0) -> None:
        """Create or replace a clone session."""
        entry = p4r.CloneSessionEntry(session_id=session_id, packet_length_bytes=truncate,
                                      replicas=[p4r.Replica(egress_port=port, instance=rid)
                                                for port, rid in replicas])
        kind = p4r.Update.MODIFY if session_id in self._clones else p4r.Update.INSERT
        self._write(kind, p4r.Entity(packet_replication_engine_entry=p4r.PacketReplicationEngineEntry(
            clone_session_entry=entry)), f"clone session {session_id}")
        self._clones.add(session_id)
