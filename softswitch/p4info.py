"""P4Info for a softswitch program, with names, aliases and IDs as p4c assigns them.

ID scheme (p4c control-plane/p4RuntimeSymbolTable.cpp, P4Runtime spec 1.3 section 6.3):
the top 8 bits hold the resource type prefix of p4info.proto's P4Ids.Prefix, the lower
24 bits the Jenkins one-at-a-time hash of the fully-qualified name. IDs given with @id
are reserved first (the prefix is added when missing); the other names are then taken
in sorted order and collisions are resolved by incrementing the hash (linear probing).
Aliases are the shortest unique suffix of dot-separated components over all names.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, cast

if TYPE_CHECKING:
    from finsy.proto import p4i

    from softswitch.frontend.info import DirectInfo, ProgramInfo
    from softswitch.frontend.program import Program

    _MatchType: TypeAlias = p4i.MatchField.MatchType.ValueType
    _CounterUnit: TypeAlias = p4i.CounterSpec.Unit.ValueType
    _MeterUnit: TypeAlias = p4i.MeterSpec.Unit.ValueType
    _Scope: TypeAlias = p4i.ActionRef.Scope.ValueType

# P4Ids.Prefix (p4/config/v1/p4info.proto)
ACTION = 0x01
TABLE = 0x02
VALUE_SET = 0x03
CONTROLLER_HEADER = 0x04
PSA_EXTERNS_START = 0x10
ACTION_PROFILE = 0x11
COUNTER = 0x12
DIRECT_COUNTER = 0x13
METER = 0x14
DIRECT_METER = 0x15
REGISTER = 0x16
DIGEST = 0x17

_MASK32 = 0xFFFFFFFF
_PREFIX_MASK = 0xFF << 24


class _Described(Protocol):
    """A Program.info record that becomes a P4Info object (name and annotations)."""

    @property
    def name(self) -> str: ...

    @property
    def annotations(self) -> tuple[Any, ...]: ...


class P4InfoError(ValueError):
    """A program's control-plane surface cannot be described (bad or duplicate @id)."""


def jenkins_one_at_a_time(name: str) -> int:
    """Jenkins one-at-a-time hash of the UTF-8 bytes of `name` (32 bits)."""
    h = 0
    for byte in name.encode():
        h = (h + byte) & _MASK32
        h = (h + (h << 10)) & _MASK32
        h ^= h >> 6
    h = (h + (h << 3)) & _MASK32
    h ^= h >> 11
    h = (h + (h << 15)) & _MASK32
    return h


@dataclass
class IdAllocator:
    """Assigns P4Runtime IDs to (prefix, name) symbols the way p4c does."""

    _wanted: dict[tuple[int, str], int | None] = field(default_factory=dict)

    def add(self, prefix: int, name: str, explicit_id: int | None = None) -> None:
        """Register a symbol; a repeated (prefix, name) is ignored as in p4c."""
        key = (prefix, name)
        if key in self._wanted:
            return
        if explicit_id is not None:
            if explicit_id < 0 or explicit_id > _MASK32:
                raise P4InfoError(f"{name}: @id {explicit_id} is not a 32-bit unsigned integer")
            top = explicit_id & _PREFIX_MASK
            if top and top != prefix << 24:
                raise P4InfoError(
                    f"{name}: @id {explicit_id:#x} has the wrong 8-bit prefix "
                    f"(expected {prefix:#04x})"
                )
            explicit_id |= prefix << 24
        self._wanted[key] = explicit_id

    def assign(self) -> dict[tuple[int, str], int]:
        """Return the ID of every registered symbol, keyed by (prefix, name)."""
        ids: dict[tuple[int, str], int] = {}
        used: set[int] = set()
        for key, explicit in self._wanted.items():
            if explicit is None:
                continue
            if explicit in used:
                raise P4InfoError(f"@id {explicit} is assigned to multiple declarations")
            used.add(explicit)
            ids[key] = explicit
        for prefix in sorted({p for p, _ in self._wanted}):
            names = sorted(n for (p, n), e in self._wanted.items() if p == prefix and e is None)
            for name in names:
                start = jenkins_one_at_a_time(name)
                value = start
                while True:
                    candidate = (prefix << 24) | (value & 0xFFFFFF)
                    if candidate not in used:
                        break
                    value = (value + 1) & _MASK32
                    if value == start:
                        raise P4InfoError(f"no available id to represent {name} in P4Runtime")
                used.add(candidate)
                ids[(prefix, name)] = candidate
        return ids


def shortest_unique_suffixes(names: Iterable[str]) -> dict[str, str]:
    """Map each name to its shortest dot-component suffix that no other name shares."""
    unique = list(dict.fromkeys(names))
    counts: dict[tuple[str, ...], int] = {}
    for name in unique:
        parts = tuple(name.split("."))
        for k in range(1, len(parts) + 1):
            counts[parts[-k:]] = counts.get(parts[-k:], 0) + 1
    aliases = {}
    for name in unique:
        parts = tuple(name.split("."))
        k = 1
        while k < len(parts) and counts[parts[-k:]] >= 2:
            k += 1
        aliases[name] = ".".join(parts[-k:])
    return aliases


# ---- P4Info from Program.info ---------------------------------------------------------------


def _ann_name(a: Any) -> str:
    return a.name if hasattr(a, "name") else str(a).lstrip("@").split("(", 1)[0]


def _ann_arg(a: Any) -> Any:
    args = getattr(a, "args", None)
    return args[0] if args else None


def _explicit_id(obj: _Described) -> int | None:
    for a in obj.annotations:
        if _ann_name(a) == "id":
            value = _ann_arg(a)
            if not isinstance(value, int):
                raise P4InfoError(f"{obj.name}: @id needs an integer argument")
            return value
    return None


def _fill_preamble(pre: p4i.Preamble, name: str, ident: int, alias: str, obj: _Described) -> None:
    """Preamble as p4c writes it: @name/@id dropped, @brief/@description into doc."""
    pre.id = ident
    pre.name = name
    pre.alias = alias
    for a in obj.annotations:
        n = _ann_name(a)
        if n in ("name", "id"):
            continue
        if n == "brief":
            pre.doc.brief = str(_ann_arg(a) or "")
        elif n == "description":
            pre.doc.description = str(_ann_arg(a) or "")
        else:
            pre.annotations.append(str(a) if not isinstance(a, str) else a)


def _other_annotations(obj: _Described) -> list[str]:
    """Annotations that P4Info keeps as text (all but @name and @id)."""
    return [str(a) for a in obj.annotations if _ann_name(a) not in ("name", "id")]


# p4info.proto enum values (the protobuf module is imported only when a P4Info is built)
_MATCH_TYPES = cast("dict[str, _MatchType]",
                    {"exact": 2, "lpm": 3, "ternary": 4, "range": 5, "optional": 6})
_COUNTER_UNITS = cast("dict[str, _CounterUnit]",
                      {"packets": 2, "bytes": 1, "packets_and_bytes": 3, "both": 3})
_METER_UNITS = cast("dict[str, _MeterUnit]", {"packets": 2, "bytes": 1})
_SCOPES = cast("dict[str, _Scope]", {"table_and_default": 0, "table_only": 1, "default_only": 2})
_UNSPECIFIED_UNIT = cast("_CounterUnit", 0)
_UNSPECIFIED_METER_UNIT = cast("_MeterUnit", 0)


def p4info_from_program(program: Program) -> p4i.P4Info:
    """The P4Info of a compiled program (what p4c writes with --p4runtime-files)."""
    return p4info_from_program_info(program.info)


def p4info_from_program_info(info: ProgramInfo) -> p4i.P4Info:
    """The P4Info (p4.config.v1.P4Info) p4c writes for a program's control-plane surface."""
    from finsy.proto import p4i

    tables = list(info.tables)
    used_actions = {ref.name for t in tables for ref in t.actions}
    profiles = list(info.action_profiles)
    actions = [a for a in info.actions if a.name in used_actions]
    groups: list[tuple[int, list[_Described]]] = [
        (TABLE, list(tables)),
        (ACTION, list(actions)),
        (ACTION_PROFILE, list(profiles)),
        (COUNTER, list(info.counters)),
        (DIRECT_COUNTER, list(info.direct_counters)),
        (METER, list(info.meters)),
        (DIRECT_METER, list(info.direct_meters)),
        (REGISTER, list(info.registers)),
        (DIGEST, list(info.digests)),
        (VALUE_SET, list(info.value_sets)),
    ]
    headers = list(info.controller_headers)
    alloc = IdAllocator()
    symbol_names: list[str] = []
    for prefix, objs in groups:
        for o in objs:
            alloc.add(prefix, o.name, _explicit_id(o))
            symbol_names.append(o.name)
    for h in headers:
        # p4c hashes the header *type* name; the P4Info name is the annotation's argument.
        type_name = h.type_name or h.name
        alloc.add(CONTROLLER_HEADER, type_name, _explicit_id(h))
        symbol_names.append(type_name)
    ids = alloc.assign()
    aliases = shortest_unique_suffixes(symbol_names)

    def ident(prefix: int, name: str) -> int:
        return ids[(prefix, name)]

    out = p4i.P4Info()
    out.pkg_info.arch = "v1model"
    direct_of: dict[str | None, list[int]] = {}
    for prefix, directs in ((DIRECT_COUNTER, info.direct_counters),
                            (DIRECT_METER, info.direct_meters)):
        for d in directs:
            direct_of.setdefault(d.table, []).append(ident(prefix, d.name))

    for t in tables:
        name = t.name
        msg = out.tables.add()
        _fill_preamble(msg.preamble, name, ident(TABLE, name), aliases[name], t)
        for i, k in enumerate(t.keys, start=1):
            kind = k.match_kind
            if kind == "selector":
                continue
            mf = msg.match_fields.add(id=i, name=k.name, bitwidth=k.bitwidth)
            if kind in _MATCH_TYPES:
                mf.match_type = _MATCH_TYPES[kind]
            else:
                mf.other_match_type = kind
            mf.annotations.extend(_other_annotations(k))
        for ref in t.actions:
            r = msg.action_refs.add(id=ident(ACTION, ref.name))
            r.scope = _SCOPES.get(ref.scope or "table_and_default", _SCOPES["table_and_default"])
            r.annotations.extend(_other_annotations(ref))
        default = t.default_action
        if default is not None and default.const:
            msg.const_default_action_id = ident(ACTION, default.name)
        if t.implementation:
            msg.implementation_id = ident(ACTION_PROFILE, t.implementation)
        msg.direct_resource_ids.extend(direct_of.get(name, []))
        msg.size = t.size or 1024
        if t.is_const:
            msg.is_const_table = True
        if t.entries:
            msg.has_initial_entries = True  # p4c (P4Runtime 1.4+) marks tables with `entries`

    for a in actions:
        name = a.name
        amsg = out.actions.add()
        _fill_preamble(amsg.preamble, name, ident(ACTION, name), aliases[name], a)
        for i, prm in enumerate(a.params, start=1):
            p = amsg.params.add(id=i, name=prm.name, bitwidth=prm.bitwidth)
            p.annotations.extend(_other_annotations(prm))

    for ap in profiles:
        name = ap.name
        pmsg = out.action_profiles.add()
        _fill_preamble(pmsg.preamble, name, ident(ACTION_PROFILE, name), aliases[name], ap)
        pmsg.table_ids.extend(ident(TABLE, tn) for tn in ap.tables)
        pmsg.with_selector = bool(ap.with_selector)
        pmsg.size = ap.size or 0
        pmsg.max_group_size = ap.max_group_size or 0

    for c in info.counters:
        cmsg = out.counters.add()
        _fill_preamble(cmsg.preamble, c.name, ident(COUNTER, c.name), aliases[c.name], c)
        cmsg.spec.unit = _COUNTER_UNITS.get(str(c.unit).lower(), _UNSPECIFIED_UNIT)
        cmsg.size = c.size
    for dc in info.direct_counters:
        dcmsg = out.direct_counters.add()
        _fill_preamble(dcmsg.preamble, dc.name, ident(DIRECT_COUNTER, dc.name),
                       aliases[dc.name], dc)
        dcmsg.spec.unit = _COUNTER_UNITS.get(str(dc.unit).lower(), _UNSPECIFIED_UNIT)
        dcmsg.direct_table_id = ident(TABLE, _table_of(dc))
    for m in info.meters:
        mmsg = out.meters.add()
        _fill_preamble(mmsg.preamble, m.name, ident(METER, m.name), aliases[m.name], m)
        mmsg.spec.unit = _METER_UNITS.get(str(m.unit).lower(), _UNSPECIFIED_METER_UNIT)
        mmsg.size = m.size
    for dm in info.direct_meters:
        dmmsg = out.direct_meters.add()
        _fill_preamble(dmmsg.preamble, dm.name, ident(DIRECT_METER, dm.name),
                       aliases[dm.name], dm)
        dmmsg.spec.unit = _METER_UNITS.get(str(dm.unit).lower(), _UNSPECIFIED_METER_UNIT)
        dmmsg.direct_table_id = ident(TABLE, _table_of(dm))

    for h in headers:
        type_name = h.type_name or h.name
        role = h.name
        hmsg = out.controller_packet_metadata.add()
        hmsg.preamble.id = ident(CONTROLLER_HEADER, type_name)
        hmsg.preamble.name = role
        hmsg.preamble.alias = role
        hmsg.preamble.annotations.append(f'@controller_header("{role}")')
        for i, f in enumerate(h.fields, start=1):
            hmsg.metadata.add(id=i, name=f.name, bitwidth=f.bitwidth)

    for vs in info.value_sets:
        vmsg = out.value_sets.add()
        _fill_preamble(vmsg.preamble, vs.name, ident(VALUE_SET, vs.name), aliases[vs.name], vs)
        for i, f in enumerate(vs.fields, start=1):
            vmf = vmsg.match.add(id=i, name=f.name, bitwidth=f.bitwidth)
            vmf.match_type = _MATCH_TYPES.get(f.match_kind or "exact", _MATCH_TYPES["exact"])
        vmsg.size = vs.size

    for reg in info.registers:
        rmsg = out.registers.add()
        _fill_preamble(rmsg.preamble, reg.name, ident(REGISTER, reg.name), aliases[reg.name], reg)
        rmsg.type_spec.bitstring.bit.bitwidth = reg.bitwidth
        rmsg.size = reg.size

    for dg in info.digests:
        gmsg = out.digests.add()
        _fill_preamble(gmsg.preamble, dg.name, ident(DIGEST, dg.name), aliases[dg.name], dg)
        gmsg.type_spec.struct.name = dg.name
        struct = out.type_info.structs[dg.name]
        for f in dg.fields:
            member = struct.members.add(name=f.name)
            member.type_spec.bitstring.bit.bitwidth = f.bitwidth
    return out


def _table_of(direct: DirectInfo) -> str:
    # an unattached direct resource (the front end warns) has no table ID: KeyError below
    return str(direct.table)


def p4info_text(p4info: p4i.P4Info) -> str:
    """The P4Info in protobuf text format (what `p4c --p4runtime-files x.txtpb` writes)."""
    from google.protobuf import text_format

    return str(text_format.MessageToString(p4info))
