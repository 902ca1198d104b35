"""Match-action tables at run time: entries, lookup, default actions, action profiles.

Lookup keeps per-packet work small: exact tables are one dict hit, lpm tables one
dict per prefix length tried longest first, other tables a list kept sorted by
priority (larger wins, as in P4Runtime; among equal priorities the older entry).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from .errors import SwitchError
from .match import Exact, Lpm, MatchValue, Optional, Range, Ternary

PRIORITY_KINDS = frozenset({"ternary", "range", "optional"})
_VALUE = itemgetter(1)  # the value of an Exact or Lpm match value (see match.py)


def _values(key: tuple) -> tuple:
    """The lookup values of an exact or lpm key (the prefix's value for the lpm field)."""
    return tuple(map(_VALUE, key))


def _values1(key: tuple) -> tuple:
    return (key[0][1],)  # _values of a one-field key, without the generic loop


def _values2(key: tuple) -> tuple:
    return (key[0][1], key[1][1])


@dataclass(frozen=True)
class KeySpec:
    """One table key field: its name as P4Info writes it, match kind and width."""

    name: str
    match_kind: str
    width: int


@dataclass(frozen=True)
class ActionSpec:
    """An action's control-plane surface: name and (param name, width) list."""

    name: str
    params: tuple[tuple[str, int], ...]


@dataclass(slots=True)
class Entry:
    """A table entry; `key` is the canonical tuple of match values."""

    handle: int
    key: tuple[MatchValue, ...]
    action: str | None
    args: tuple[int, ...]
    priority: int = 0
    member: int | None = None
    group: int | None = None
    packets: int = 0
    bytes: int = 0
    meter: Any = None
    fn: Callable | None = field(default=None, repr=False)
    # Precomputed per-field tests for list lookup: (kind, a, b) with kind 0 = mask, 1 = range.
    tests: tuple = field(default=(), repr=False)


def _check_width(table: str, what: str, value: int, width: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise SwitchError("INVALID_ARGUMENT", f"{table}: {what} must be an integer, got {value!r}")
    if value < 0 or value >> width:
        raise SwitchError(
            "INVALID_ARGUMENT", f"{table}: {what} = {value:#x} does not fit in {width} bits"
        )


class ActionProfile:
    """An action profile or selector: members (action + args) and groups of members."""

    def __init__(
        self,
        name: str,
        with_selector: bool,
        size: int,
        algorithm: str = "crc16",
        max_group_size: int = 0,
    ) -> None:
        self.name = name
        self.with_selector = with_selector
        self.size = size
        self.algorithm = algorithm
        self.max_group_size = max_group_size
        self.members: dict[int, tuple[str, tuple[int, ...], Callable | None]] = {}
        self.groups: dict[int, tuple[int, ...]] = {}
        # BMv2 gives each member the lowest free handle when it is created and a selector
        # indexes a group's members in handle order
        self.handles: dict[int, int] = {}
        self.tables: list[Table] = []

    def _changed(self) -> None:
        """Members and groups are part of the tables that use the profile (the native engine
        reloads a changed table)."""
        for table in self.tables:
            table.version += 1
        Table.changes += 1

    def _action_spec(self, action: str) -> ActionSpec:
        for table in self.tables:
            spec = table.action_specs.get(action)
            if spec is not None:
                return spec
        raise SwitchError("NOT_FOUND", f"{self.name}: action {action} is not usable here")

    def _resolve(self, action: str, args: Sequence[int] | Mapping[str, int]):
        if not self.tables:
            raise SwitchError("FAILED_PRECONDITION", f"{self.name}: no table uses this profile")
        table = self.tables[0]
        spec = table.resolve_action_name(action)
        args_t = table.check_args(spec, args)
        return spec.name, args_t, table.action_fns.get(spec.name)

    def member_add(self, member_id: int, action: str, args=()) -> None:
        """Add a member; ALREADY_EXISTS if the id is taken."""
        self._changed()
        if member_id in self.members:
            raise SwitchError("ALREADY_EXISTS", f"{self.name}: member {member_id} exists")
        if self.size and len(self.members) >= self.size:
            raise SwitchError("RESOURCE_EXHAUSTED", f"{self.name}: profile full ({self.size})")
        self.members[member_id] = self._resolve(action, args)
        used = set(self.handles.values())
        self.handles[member_id] = next(h for h in range(len(used) + 1) if h not in used)

    def member_modify(self, member_id: int, action: str, args=()) -> None:
        """Change a member's action and args."""
        self._changed()
        if member_id not in self.members:
            raise SwitchError("NOT_FOUND", f"{self.name}: no member {member_id}")
        self.members[member_id] = self._resolve(action, args)

    def member_delete(self, member_id: int) -> None:
        """Delete a member that no group or entry refers to."""
        self._changed()
        if member_id not in self.members:
            raise SwitchError("NOT_FOUND", f"{self.name}: no member {member_id}")
        if any(member_id in g for g in self.groups.values()):
            raise SwitchError("FAILED_PRECONDITION", f"{self.name}: member {member_id} is in a group")
        for table in self.tables:
            if any(e.member == member_id for e in table.entries.values()):
                raise SwitchError(
                    "FAILED_PRECONDITION", f"{self.name}: member {member_id} used by {table.name}"
                )
        del self.members[member_id]
        del self.handles[member_id]

    def _check_group(self, group_id: int, members: Sequence[int]) -> tuple[int, ...]:
        if not self.with_selector:
            raise SwitchError("INVALID_ARGUMENT", f"{self.name}: not an action selector")
        for m in members:
            if m not in self.members:
                raise SwitchError("NOT_FOUND", f"{self.name}: group {group_id}: no member {m}")
        if len(set(members)) != len(members):
            raise SwitchError("INVALID_ARGUMENT", f"{self.name}: group {group_id}: duplicate member")
        if self.max_group_size and len(members) > self.max_group_size:
            raise SwitchError(
                "RESOURCE_EXHAUSTED",
                f"{self.name}: group {group_id} larger than {self.max_group_size}",
            )
        # BMv2 keeps group members ordered by member handle; the selector indexes that order.
        return tuple(sorted(members, key=self.handles.__getitem__))

    def group_add(self, group_id: int, members: Sequence[int] = ()) -> None:
        """Create a selector group."""
        self._changed()
        if group_id in self.groups:
            raise SwitchError("ALREADY_EXISTS", f"{self.name}: group {group_id} exists")
        self.groups[group_id] = self._check_group(group_id, members)

    def group_modify(self, group_id: int, members: Sequence[int]) -> None:
        """Replace a group's members."""
        self._changed()
        if group_id not in self.groups:
            raise SwitchError("NOT_FOUND", f"{self.name}: no group {group_id}")
        self.groups[group_id] = self._check_group(group_id, members)

    def group_delete(self, group_id: int) -> None:
        """Delete a group no entry refers to."""
        self._changed()
        if group_id not in self.groups:
            raise SwitchError("NOT_FOUND", f"{self.name}: no group {group_id}")
        for table in self.tables:
            if any(e.group == group_id for e in table.entries.values()):
                raise SwitchError(
                    "FAILED_PRECONDITION", f"{self.name}: group {group_id} used by {table.name}"
                )
        del self.groups[group_id]

    def rebind(self, action_fns: Mapping[str, Callable]) -> None:
        """Attach compiled action functions to members."""
        for mid, (name, args, _fn) in list(self.members.items()):
            self.members[mid] = (name, args, action_fns.get(name))


class Table:
    """One match-action table with its entries and default action."""

    changes = 0  # bumped with every table's `version`: one read tells that nothing changed

    def __init__(
        self,
        name: str,
        keys: Sequence[KeySpec],
        actions: Sequence[ActionSpec],
        scopes: Mapping[str, str] | None = None,
        default: tuple[str, Sequence[int]] = ("NoAction", ()),
        const_default: bool = False,
        is_const: bool = False,
        size: int = 1024,
        profile: ActionProfile | None = None,
        with_counter: bool = False,
        with_meter: bool = False,
    ) -> None:
        self.name = name
        self.match_keys = tuple(k for k in keys if k.match_kind != "selector")
        self.selector_keys = tuple(k for k in keys if k.match_kind == "selector")
        self.action_specs = {a.name: a for a in actions}
        self.scopes = dict(scopes or {})
        self.const_default = const_default
        self.is_const = is_const
        self.size = size
        self.profile = profile
        if profile is not None:
            profile.tables.append(self)
        self.with_counter = with_counter
        self.with_meter = with_meter
        self.action_fns: dict[str, Callable] = {}
        self.entries: dict[int, Entry] = {}
        self.version = 0  # bumped by every change (the native engine reloads a changed table)
        self._next_handle = 1
        self._by_key: dict[tuple, int] = {}
        kinds = {k.match_kind for k in self.match_keys}
        self.needs_priority = bool(kinds & PRIORITY_KINDS)
        lpm_count = sum(1 for k in self.match_keys if k.match_kind == "lpm")
        if kinds <= {"exact"}:
            self.mode = "exact"
        elif kinds <= {"exact", "lpm"} and lpm_count == 1:
            self.mode = "lpm"
            self._lpm_index = next(
                i for i, k in enumerate(self.match_keys) if k.match_kind == "lpm"
            )
        else:
            self.mode = "list"
        self._values = {1: _values1, 2: _values2}.get(len(self.match_keys), _values)
        self._exact: dict[tuple, Entry] = {}
        self._lpm: dict[int, dict[tuple, Entry]] = {}
        self._lpm_lens: list[int] = []
        self._lpm_masks: list[int] = []
        self._list: list[Entry] = []
        self._list_order: list[tuple[int, int]] = []
        self.initial_default = (default[0], tuple(default[1]))
        self.default_action = default[0]
        self.default_args: tuple[int, ...] = tuple(default[1])
        self.default_fn: Callable | None = None
        self.lookup = {"exact": self._lookup_exact, "lpm": self._lookup_lpm, "list": self._lookup_list}[
            self.mode
        ]

    # ---- names and validation -------------------------------------------------

    def resolve_action_name(self, action: str) -> ActionSpec:
        """The table's action named `action` (fully qualified or a unique suffix)."""
        spec = self.action_specs.get(action)
        if spec is not None:
            return spec
        hits = [a for n, a in self.action_specs.items() if n.endswith("." + action)]
        if len(hits) == 1:
            return hits[0]
        if not hits:
            raise SwitchError("NOT_FOUND", f"{self.name}: no action {action}")
        raise SwitchError("INVALID_ARGUMENT", f"{self.name}: action name {action} is ambiguous")

    def check_args(self, spec: ActionSpec, args: Sequence[int] | Mapping[str, int]) -> tuple[int, ...]:
        """Validate action data against the action's parameters; returns them in order."""
        if isinstance(args, Mapping):
            unknown = set(args) - {p for p, _ in spec.params}
            if unknown:
                raise SwitchError(
                    "INVALID_ARGUMENT", f"{self.name}: {spec.name} has no parameter {sorted(unknown)[0]}"
                )
            missing = [p for p, _ in spec.params if p not in args]
            if missing:
                raise SwitchError("INVALID_ARGUMENT", f"{self.name}: {spec.name} needs {missing[0]}")
            values = [args[p] for p, _ in spec.params]
        else:
            values = list(args)
            if len(values) != len(spec.params):
                raise SwitchError(
                    "INVALID_ARGUMENT",
                    f"{self.name}: {spec.name} takes {len(spec.params)} arguments, got {len(values)}",
                )
        for (pname, width), v in zip(spec.params, values, strict=True):
            _check_width(self.name, f"{spec.name}({pname})", v, width)
        return tuple(values)

    def canonical_key(self, keys: Sequence[MatchValue] | Mapping[str, MatchValue]) -> tuple:
        """Validate match values and return the canonical key tuple."""
        if isinstance(keys, Mapping):
            names = {k.name: k for k in self.match_keys}
            for n in keys:
                if n not in names:
                    raise SwitchError("INVALID_ARGUMENT", f"{self.name}: no key field {n}")
            ordered = []
            for k in self.match_keys:
                if k.name in keys:
                    ordered.append(keys[k.name])
                elif k.match_kind in ("ternary", "optional", "lpm", "range"):
                    ordered.append(None)  # omitted = wildcard, as in P4Runtime
                else:
                    raise SwitchError("INVALID_ARGUMENT", f"{self.name}: missing exact key {k.name}")
        else:
            ordered = list(keys)
            if len(ordered) != len(self.match_keys):
                raise SwitchError(
                    "INVALID_ARGUMENT",
                    f"{self.name}: expected {len(self.match_keys)} key fields, got {len(ordered)}",
                )
        out = []
        for spec, mv in zip(self.match_keys, ordered, strict=True):
            out.append(self._canonical_field(spec, mv))
        return tuple(out)

    def _canonical_field(self, spec: KeySpec, mv: MatchValue | None) -> MatchValue:
        where = f"key {spec.name}"
        w = spec.width
        full = (1 << w) - 1
        kind = spec.match_kind
        if kind == "exact" and (mv is None or mv == Ternary(0, 0)):
            # `_` on an exact field (const entries): a wildcard, possible only in list mode
            if self.mode == "list":
                return Ternary(0, 0)
            raise SwitchError("INVALID_ARGUMENT", f"{self.name}: {where} needs an exact value")
        if mv is None:
            mv = {"lpm": Lpm(0, 0), "ternary": Ternary(0, 0), "range": Range(0, full),
                  "optional": Optional(None)}[kind]
        if isinstance(mv, int) and not isinstance(mv, bool):
            mv = Exact(mv)
        if kind == "exact":
            if not isinstance(mv, Exact):
                raise SwitchError("INVALID_ARGUMENT", f"{self.name}: {where} needs an exact value")
            _check_width(self.name, where, mv.value, w)
            return mv
        if kind == "lpm":
            if isinstance(mv, Exact):
                mv = Lpm(mv.value, w)
            if not isinstance(mv, Lpm):
                raise SwitchError("INVALID_ARGUMENT", f"{self.name}: {where} needs an lpm value")
            _check_width(self.name, where, mv.value, w)
            if not 0 <= mv.prefix_len <= w:
                raise SwitchError("INVALID_ARGUMENT", f"{self.name}: {where}: prefix length {mv.prefix_len} not in 0..{w}")
            pmask = full ^ ((1 << (w - mv.prefix_len)) - 1)
            if mv.value & ~pmask:
                raise SwitchError("INVALID_ARGUMENT", f"{self.name}: {where}: bits set beyond the /{mv.prefix_len} prefix")
            return mv
        if kind == "ternary":
            if isinstance(mv, Exact):
                mv = Ternary(mv.value, full)
            if not isinstance(mv, Ternary):
                raise SwitchError("INVALID_ARGUMENT", f"{self.name}: {where} needs a ternary value")
            _check_width(self.name, where, mv.value, w)
            _check_width(self.name, where + " mask", mv.mask, w)
            if mv.value & ~mv.mask:
                raise SwitchError("INVALID_ARGUMENT", f"{self.name}: {where}: value has bits outside the mask")
            return mv
        if kind == "range":
            if isinstance(mv, Exact):
                mv = Range(mv.value, mv.value)
            if not isinstance(mv, Range):
                raise SwitchError("INVALID_ARGUMENT", f"{self.name}: {where} needs a range")
            _check_width(self.name, where + " low", mv.lo, w)
            _check_width(self.name, where + " high", mv.hi, w)
            if mv.lo > mv.hi:
                raise SwitchError("INVALID_ARGUMENT", f"{self.name}: {where}: empty range {mv.lo}..{mv.hi}")
            return mv
        if kind == "optional":
            if isinstance(mv, Exact):
                mv = Optional(mv.value)
            if not isinstance(mv, Optional):
                raise SwitchError("INVALID_ARGUMENT", f"{self.name}: {where} needs an optional value")
            if mv.value is not None:
                _check_width(self.name, where, mv.value, w)
            return mv
        raise SwitchError("UNIMPLEMENTED", f"{self.name}: match kind {kind}")

    def _identity(self, key: tuple, priority: int) -> tuple:
        return (key, priority) if self.needs_priority else (key, 0)

    # ---- entry operations -----------------------------------------------------

    def add(self, keys, action: str | None, args=(), priority: int = 0, *,
            member: int | None = None, group: int | None = None, const_ok: bool = False) -> int:
        """Insert an entry; returns its handle."""
        if self.is_const and not const_ok:
            raise SwitchError("PERMISSION_DENIED", f"{self.name}: table has const entries")
        key = self.canonical_key(keys)
        if not self.needs_priority:
            priority = 0
        elif not isinstance(priority, int) or priority < 0:
            raise SwitchError("INVALID_ARGUMENT", f"{self.name}: bad priority {priority!r}")
        ident = self._identity(key, priority)
        if ident in self._by_key:
            raise SwitchError("ALREADY_EXISTS", f"{self.name}: an entry with this key exists")
        if len(self.entries) >= self.size:
            raise SwitchError("RESOURCE_EXHAUSTED", f"{self.name}: table full ({self.size} entries)")
        if self.profile is None:
            if action is None:
                raise SwitchError("INVALID_ARGUMENT", f"{self.name}: an action is required")
            spec = self.resolve_action_name(action)
            if self.scopes.get(spec.name) == "default_only":
                raise SwitchError("INVALID_ARGUMENT", f"{self.name}: {spec.name} is default-only")
            args_t = self.check_args(spec, args)
            entry = Entry(0, key, spec.name, args_t, priority, fn=self.action_fns.get(spec.name))
        else:
            self._check_indirect(member, group)
            entry = Entry(0, key, None, (), priority, member=member, group=group)
        return self._store(entry, ident)

    def add_canonical(self, key: tuple, action: str, args: tuple, priority: int = 0) -> int:
        """add() of a direct entry for a caller that validated it: `key` is canonical (as
        canonical_key returns it) and the action's scope and the args' widths were checked
        (the P4Runtime server does so per the spec); saves validating twice per entry.
        Written out in one function: it runs for every entry a controller inserts."""
        self.version += 1
        Table.changes += 1
        if self.is_const:
            raise SwitchError("PERMISSION_DENIED", f"{self.name}: table has const entries")
        if self.profile is not None:
            raise SwitchError("INVALID_ARGUMENT", f"{self.name}: entries name a member or group")
        if not self.needs_priority:
            priority = 0
        ident = (key, priority)
        if ident in self._by_key:
            raise SwitchError("ALREADY_EXISTS", f"{self.name}: an entry with this key exists")
        entries = self.entries
        if len(entries) >= self.size:
            raise SwitchError("RESOURCE_EXHAUSTED", f"{self.name}: table full ({self.size} entries)")
        spec = self.action_specs.get(action) or self.resolve_action_name(action)
        name = spec.name
        handle = self._next_handle
        self._next_handle = handle + 1
        entry = Entry(handle, key, name, tuple(args), priority, None, None, 0, 0, None,
                      self.action_fns.get(name))
        mode = self.mode
        bucket = self._lpm.get(key[self._lpm_index][2]) if mode == "lpm" else None  # prefix_len
        if bucket is not None:
            bucket[self._values(key)] = entry
        elif mode == "exact":
            self._exact[self._values(key)] = entry
        else:
            if mode == "list":
                entry.tests = self._tests(key)
            self._insert(entry)
        self._by_key[ident] = handle
        entries[handle] = entry
        return handle

    def modify_canonical(self, handle: int, action: str, args: tuple) -> None:
        """modify() of a direct entry for a caller that validated the action and args
        (see add_canonical); counters are kept."""
        self.version += 1
        Table.changes += 1
        if self.is_const:
            raise SwitchError("PERMISSION_DENIED", f"{self.name}: table has const entries")
        if self.profile is not None:
            raise SwitchError("INVALID_ARGUMENT", f"{self.name}: entries name a member or group")
        entry = self.get(handle)
        name = (self.action_specs.get(action) or self.resolve_action_name(action)).name
        entry.action, entry.args, entry.fn = name, tuple(args), self.action_fns.get(name)

    def find_canonical(self, key: tuple, priority: int = 0) -> int | None:
        """find() for a key already canonical (see add_canonical)."""
        return self._by_key.get((key, priority) if self.needs_priority else (key, 0))

    def _store(self, entry: Entry, ident: tuple) -> int:
        self.version += 1
        Table.changes += 1
        entry.handle = self._next_handle
        self._next_handle += 1
        if self.mode == "list":
            entry.tests = self._tests(entry.key)
        self._insert(entry)
        self._by_key[ident] = entry.handle
        self.entries[entry.handle] = entry
        return entry.handle

    def _check_indirect(self, member: int | None, group: int | None) -> None:
        prof = self.profile
        if (member is None) == (group is None):
            raise SwitchError("INVALID_ARGUMENT", f"{self.name}: give exactly one of member or group")
        if member is not None and member not in prof.members:
            raise SwitchError("NOT_FOUND", f"{self.name}: {prof.name} has no member {member}")
        if group is not None:
            if not prof.with_selector:
                raise SwitchError("INVALID_ARGUMENT", f"{prof.name} is not an action selector")
            if group not in prof.groups:
                raise SwitchError("NOT_FOUND", f"{self.name}: {prof.name} has no group {group}")

    def _tests(self, key: tuple) -> tuple:
        tests = []
        for spec, mv in zip(self.match_keys, key, strict=True):
            full = (1 << spec.width) - 1
            if isinstance(mv, Exact):
                tests.append((0, full, mv.value))
            elif isinstance(mv, Lpm):
                m = full ^ ((1 << (spec.width - mv.prefix_len)) - 1)
                tests.append((0, m, mv.value))
            elif isinstance(mv, Ternary):
                tests.append((0, mv.mask, mv.value))
            elif isinstance(mv, Optional):
                tests.append((0, 0, 0) if mv.value is None else (0, full, mv.value))
            else:
                tests.append((1, mv.lo, mv.hi))
        return tuple(tests)

    def _insert(self, entry: Entry) -> None:
        if self.mode == "exact":
            self._exact[self._values(entry.key)] = entry
        elif self.mode == "lpm":
            plen = entry.key[self._lpm_index][2]  # Lpm.prefix_len
            bucket = self._lpm.get(plen)
            if bucket is None:
                bucket = self._lpm[plen] = {}
                self._lpm_lens = sorted(self._lpm, reverse=True)
                self._lpm_masks = [self._plen_mask(p) for p in self._lpm_lens]
            bucket[self._values(entry.key)] = entry
        else:
            order = (-entry.priority, entry.handle)
            pos = bisect.bisect(self._list_order, order)
            self._list_order.insert(pos, order)
            self._list.insert(pos, entry)

    def _plen_mask(self, plen: int) -> int:
        w = self.match_keys[self._lpm_index].width
        return ((1 << w) - 1) ^ ((1 << (w - plen)) - 1)

    def _remove(self, entry: Entry) -> None:
        if self.mode == "exact":
            del self._exact[self._values(entry.key)]
        elif self.mode == "lpm":
            plen = entry.key[self._lpm_index].prefix_len
            bucket = self._lpm[plen]
            del bucket[self._values(entry.key)]
            if not bucket:
                del self._lpm[plen]
                self._lpm_lens = sorted(self._lpm, reverse=True)
                self._lpm_masks = [self._plen_mask(p) for p in self._lpm_lens]
        else:
            pos = self._list.index(entry)
            del self._list[pos]
            del self._list_order[pos]

    def get(self, handle: int) -> Entry:
        """The entry with this handle; NOT_FOUND otherwise."""
        entry = self.entries.get(handle)
        if entry is None:
            raise SwitchError("NOT_FOUND", f"{self.name}: no entry with handle {handle}")
        return entry

    def modify(self, handle: int, action: str | None, args=(), *, member=None, group=None) -> None:
        """Change the action (or member/group) of an entry; counters are kept."""
        self.version += 1
        Table.changes += 1
        if self.is_const:
            raise SwitchError("PERMISSION_DENIED", f"{self.name}: table has const entries")
        entry = self.get(handle)
        if self.profile is None:
            spec = self.resolve_action_name(action)
            if self.scopes.get(spec.name) == "default_only":
                raise SwitchError("INVALID_ARGUMENT", f"{self.name}: {spec.name} is default-only")
            args_t = self.check_args(spec, args)
            entry.action, entry.args, entry.fn = spec.name, args_t, self.action_fns.get(spec.name)
        else:
            self._check_indirect(member, group)
            entry.member, entry.group = member, group

    def delete(self, handle: int) -> None:
        """Remove an entry."""
        self.version += 1
        Table.changes += 1
        if self.is_const:
            raise SwitchError("PERMISSION_DENIED", f"{self.name}: table has const entries")
        entry = self.get(handle)
        self._remove(entry)
        del self._by_key[self._identity(entry.key, entry.priority)]
        del self.entries[handle]

    def find(self, keys, priority: int = 0) -> int | None:
        """Handle of the entry with exactly this key (and priority), or None."""
        key = self.canonical_key(keys)
        return self._by_key.get(self._identity(key, priority if self.needs_priority else 0))

    def clear(self) -> None:
        """Remove every entry (const entries stay)."""
        self.version += 1
        Table.changes += 1
        if self.is_const:
            raise SwitchError("PERMISSION_DENIED", f"{self.name}: table has const entries")
        self.entries.clear()
        self._by_key.clear()
        self._exact.clear()
        self._lpm.clear()
        self._lpm_lens = []
        self._list.clear()
        self._list_order.clear()

    def set_default(self, action: str, args=()) -> None:
        """Change the default action (refused when it is const)."""
        self.version += 1
        Table.changes += 1
        if self.const_default:
            raise SwitchError("PERMISSION_DENIED", f"{self.name}: default action is const")
        spec = self.resolve_action_name(action)
        if self.scopes.get(spec.name) == "table_only":
            raise SwitchError("INVALID_ARGUMENT", f"{self.name}: {spec.name} cannot be the default")
        args_t = self.check_args(spec, args)
        self.default_action, self.default_args = spec.name, args_t
        self.default_fn = self.action_fns.get(spec.name)

    def reset_default(self) -> None:
        """Restore the default action the program declares."""
        self.version += 1
        Table.changes += 1
        self.default_action, self.default_args = self.initial_default
        self.default_fn = self.action_fns.get(self.default_action)

    def bind(self, action_fns: Mapping[str, Callable]) -> None:
        """Attach compiled action functions to the table, its entries and default."""
        self.action_fns = dict(action_fns)
        for e in self.entries.values():
            if e.action is not None:
                e.fn = self.action_fns.get(e.action)
        self.default_fn = self.action_fns.get(self.default_action)
        if self.profile is not None:
            self.profile.rebind(self.action_fns)

    # ---- lookup ---------------------------------------------------------------

    def _lookup_exact(self, values: tuple) -> Entry | None:
        return self._exact.get(values)

    def _lookup_lpm(self, values: tuple) -> Entry | None:
        i = self._lpm_index
        v = values[i]
        lpm = self._lpm
        for plen, m in zip(self._lpm_lens, self._lpm_masks, strict=True):
            probe = list(values)
            probe[i] = v & m
            hit = lpm[plen].get(tuple(probe))
            if hit is not None:
                return hit
        return None

    def _lookup_list(self, values: tuple) -> Entry | None:
        for entry in self._list:
            for (kind, a, b), v in zip(entry.tests, values, strict=True):
                if kind == 0:
                    if v & a != b:
                        break
                elif not a <= v <= b:
                    break
            else:
                return entry
        return None
