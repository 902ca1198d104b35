"""P4Info for a softswitch program, with names, aliases and IDs as p4c assigns them.

ID scheme (p4c control-plane/p4RuntimeSymbolTable.cpp, P4Runtime spec 1.3 section 6.3):
the top 8 bits hold the resource type prefix of p4info.proto's P4Ids.Prefix, the lower
24 bits the Jenkins one-at-a-time hash of the fully-qualified name. IDs given with @id
are reserved first (the prefix is added when missing); the other names are then taken
in sorted order and collisions are resolved by incrementing the hash (linear probing).
Aliases are the shortest unique suffix of dot-separated components over all names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

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


def _get(obj: Any, name: str, default: Any = None) -> Any:
    """Read a field of a Program.info record (dataclass attribute or mapping key)."""
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _annotations(obj: Any) -> list[Any]:
    return list(_get(obj, "annotations", None) or [])


def _ann_name(a: Any) -> str:
    return a.name if hasattr(a, "name") else str(a).lstrip("@").split("(", 1)[0]


def _ann_arg(a: Any) -> Any:
    args = getattr(a, "args", None)
    return args[0] if args else None


def _explicit_id(obj: Any) -> int | None:
    for a in _annotations(obj):
        if _ann_name(a) == "id":
            value = _ann_arg(a)
            if not isinstance(value, int):
                raise P4InfoError(f"{_get(obj, 'name')}: @id needs an integer argument")
            return value
    return None


def _fill_preamble(pre: Any, name: str, ident: int, alias: str, obj: Any) -> None:
    """Preamble as p4c writes it: @name/@id dropped, @brief/@description into doc."""
    pre.id = ident
    pre.name = name
    pre.alias = alias
    for a in _annotations(obj):
        n = _ann_name(a)
        if n in ("name", "id"):
            continue
        if n == "brief":
            pre.doc.brief = str(_ann_arg(a) or "")
        elif n == "description":
            pre.doc.description = str(_ann_arg(a) or "")
        else:
            pre.annotations.append(str(a) if not isinstance(a, str) else a)


_MATCH_TYPES = {"exact": 2, "lpm": 3, "ternary": 4, "range": 5, "optional": 6}  # MatchField.MatchType
_COUNTER_UNITS = {"packets": 2, "bytes": 1, "packets_and_bytes": 3, "both": 3}
_METER_UNITS = {"packets": 2, "bytes": 1}
_SCOPES = {"table_and_default": 0, "table_only": 1, "default_only": 2}


def build_p4info(info: Any) -> Any:
    """The P4Info (p4.config.v1.P4Info) p4c writes for a program's control-plane surface."""
    from finsy.proto import p4i

    tables = list(_get(info, "tables", []) or [])
    used_actions: list[str] = []
    for t in tables:
        for ref in _get(t, "actions", []) or []:
            used_actions.append(_get(ref, "name"))
    profiles = list(_get(info, "action_profiles", []) or [])
    actions = [a for a in _get(info, "actions", []) or [] if _get(a, "name") in set(used_actions)]
    groups: list[tuple[int, list[Any]]] = [
        (TABLE, tables),
        (ACTION, actions),
        (ACTION_PROFILE, profiles),
        (COUNTER, list(_get(info, "counters", []) or [])),
        (DIRECT_COUNTER, list(_get(info, "direct_counters", []) or [])),
        (METER, list(_get(info, "meters", []) or [])),
        (DIRECT_METER, list(_get(info, "direct_meters", []) or [])),
        (REGISTER, list(_get(info, "registers", []) or [])),
        (DIGEST, list(_get(info, "digests", []) or [])),
        (VALUE_SET, list(_get(info, "value_sets", []) or [])),
    ]
    headers = list(_get(info, "controller_headers", []) or [])
    alloc = IdAllocator()
    symbol_names: list[str] = []
    for prefix, objs in groups:
        for o in objs:
            alloc.add(prefix, _get(o, "name"), _explicit_id(o))
            symbol_names.append(_get(o, "name"))
    for h in headers:
        # p4c hashes the header *type* name; the P4Info name is the annotation's argument.
        type_name = _get(h, "type_name") or _get(h, "name")
        alloc.add(CONTROLLER_HEADER, type_name, _explicit_id(h))
        symbol_names.append(type_name)
    ids = alloc.assign()
    aliases = shortest_unique_suffixes(symbol_names)

    def ident(prefix: int, name: str) -> int:
        return ids[(prefix, name)]

    out = p4i.P4Info()
    out.pkg_info.arch = "v1model"
    direct_of: dict[str, list[int]] = {}
    for prefix, kind in ((DIRECT_COUNTER, "direct_counters"), (DIRECT_METER, "direct_meters")):
        for d in _get(info, kind, []) or []:
            direct_of.setdefault(_get(d, "table"), []).append(ident(prefix, _get(d, "name")))

    for t in tables:
        name = _get(t, "name")
        msg = out.tables.add()
        _fill_preamble(msg.preamble, name, ident(TABLE, name), aliases[name], t)
        for i, k in enumerate(_get(t, "keys", []) or [], start=1):
            kind = _get(k, "match_kind")
            if kind == "selector":
                continue
            mf = msg.match_fields.add(id=i, name=_get(k, "name"), bitwidth=_get(k, "bitwidth"))
            if kind in _MATCH_TYPES:
                mf.match_type = _MATCH_TYPES[kind]
            else:
                mf.other_match_type = kind
            for a in _annotations(k):
                if _ann_name(a) not in ("name", "id"):
                    mf.annotations.append(str(a))
        for ref in _get(t, "actions", []) or []:
            r = msg.action_refs.add(id=ident(ACTION, _get(ref, "name")))
            r.scope = _SCOPES.get(_get(ref, "scope", "table_and_default") or "table_and_default", 0)
            for a in _annotations(ref):
                if _ann_name(a) not in ("name", "id"):
                    r.annotations.append(str(a))
        default = _get(t, "default_action")
        if default is not None and _get(default, "const", False):
            msg.const_default_action_id = ident(ACTION, _get(default, "name"))
        impl = _get(t, "implementation")
        if impl:
            msg.implementation_id = ident(ACTION_PROFILE, impl)
        msg.direct_resource_ids.extend(direct_of.get(name, []))
        msg.size = _get(t, "size", 1024) or 1024
        if _get(t, "is_const", False):
            msg.is_const_table = True
        if _get(t, "entries", ()):
            msg.has_initial_entries = True  # p4c (P4Runtime 1.4+) marks tables with `entries`

    for a in actions:
        name = _get(a, "name")
        msg = out.actions.add()
        _fill_preamble(msg.preamble, name, ident(ACTION, name), aliases[name], a)
        for i, prm in enumerate(_get(a, "params", []) or [], start=1):
            p = msg.params.add(id=i, name=_get(prm, "name"), bitwidth=_get(prm, "bitwidth"))
            for ann in _annotations(prm):
                if _ann_name(ann) not in ("name", "id"):
                    p.annotations.append(str(ann))

    for ap in profiles:
        name = _get(ap, "name")
        msg = out.action_profiles.add()
        _fill_preamble(msg.preamble, name, ident(ACTION_PROFILE, name), aliases[name], ap)
        msg.table_ids.extend(ident(TABLE, tn) for tn in _get(ap, "tables", []) or [])
        msg.with_selector = bool(_get(ap, "with_selector", False))
        msg.size = _get(ap, "size", 0) or 0
        msg.max_group_size = _get(ap, "max_group_size", 0) or 0

    for c in _get(info, "counters", []) or []:
        name = _get(c, "name")
        msg = out.counters.add()
        _fill_preamble(msg.preamble, name, ident(COUNTER, name), aliases[name], c)
        msg.spec.unit = _COUNTER_UNITS.get(str(_get(c, "unit", "packets")).lower(), 0)
        msg.size = _get(c, "size", 0)
    for c in _get(info, "direct_counters", []) or []:
        name = _get(c, "name")
        msg = out.direct_counters.add()
        _fill_preamble(msg.preamble, name, ident(DIRECT_COUNTER, name), aliases[name], c)
        msg.spec.unit = _COUNTER_UNITS.get(str(_get(c, "unit", "packets")).lower(), 0)
        msg.direct_table_id = ident(TABLE, _get(c, "table"))
    for m in _get(info, "meters", []) or []:
        name = _get(m, "name")
        msg = out.meters.add()
        _fill_preamble(msg.preamble, name, ident(METER, name), aliases[name], m)
        msg.spec.unit = _METER_UNITS.get(str(_get(m, "unit", "packets")).lower(), 0)
        msg.size = _get(m, "size", 0)
    for m in _get(info, "direct_meters", []) or []:
        name = _get(m, "name")
        msg = out.direct_meters.add()
        _fill_preamble(msg.preamble, name, ident(DIRECT_METER, name), aliases[name], m)
        msg.spec.unit = _METER_UNITS.get(str(_get(m, "unit", "packets")).lower(), 0)
        msg.direct_table_id = ident(TABLE, _get(m, "table"))

    for h in headers:
        type_name = _get(h, "type_name") or _get(h, "name")
        role = _get(h, "name")
        msg = out.controller_packet_metadata.add()
        msg.preamble.id = ident(CONTROLLER_HEADER, type_name)
        msg.preamble.name = role
        msg.preamble.alias = role
        msg.preamble.annotations.append(f'@controller_header("{role}")')
        for i, f in enumerate(_get(h, "fields", []) or [], start=1):
            msg.metadata.add(id=i, name=_get(f, "name"), bitwidth=_get(f, "bitwidth"))

    for vs in _get(info, "value_sets", []) or []:
        name = _get(vs, "name")
        msg = out.value_sets.add()
        _fill_preamble(msg.preamble, name, ident(VALUE_SET, name), aliases[name], vs)
        for i, f in enumerate(_get(vs, "fields", []) or [], start=1):
            mf = msg.match.add(id=i, name=_get(f, "name"), bitwidth=_get(f, "bitwidth"))
            mf.match_type = _MATCH_TYPES.get(_get(f, "match_kind", "exact") or "exact", 2)
        msg.size = _get(vs, "size", 0)

    for r in _get(info, "registers", []) or []:
        name = _get(r, "name")
        msg = out.registers.add()
        _fill_preamble(msg.preamble, name, ident(REGISTER, name), aliases[name], r)
        msg.type_spec.bitstring.bit.bitwidth = _get(r, "bitwidth")
        msg.size = _get(r, "size", 0)

    for d in _get(info, "digests", []) or []:
        name = _get(d, "name")
        msg = out.digests.add()
        _fill_preamble(msg.preamble, name, ident(DIGEST, name), aliases[name], d)
        msg.type_spec.struct.name = name
        struct = out.type_info.structs[name]
        for f in _get(d, "fields", []) or []:
            member = struct.members.add(name=_get(f, "name"))
            member.type_spec.bitstring.bit.bitwidth = _get(f, "bitwidth")
    return out


def p4info_text(p4info: Any) -> str:
    """The P4Info in protobuf text format (what `p4c --p4runtime-files x.txtpb` writes)."""
    from google.protobuf import text_format

    return text_format.MessageToString(p4info)


def add_compile_arguments(parser: Any) -> Any:
    """Arguments of `softswitch compile` (an argparse parser)."""
    parser.add_argument("program", help="P4_16 program (.p4)")
    parser.add_argument("--p4info", metavar="OUT.txtpb", help="write the P4Info (text format) here")
    parser.add_argument("--device-config", metavar="OUT.p4cfg",
                        help="write the self-contained device config for SetForwardingPipelineConfig")
    parser.add_argument("-I", dest="include_dirs", action="append", default=[], help="include directory")
    parser.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]")
    return parser


def compile_main(args: Any) -> int:
    """`softswitch compile`: check a program, write its P4Info and device config."""
    import sys
    from pathlib import Path

    from softswitch.frontend import P4Error, compile_file
    from softswitch.p4runtime.pipeline_loader import device_config_from_file

    defines = dict(d.split("=", 1) if "=" in d else (d, None) for d in args.defines)
    try:
        program = compile_file(args.program, include_dirs=tuple(args.include_dirs), defines=defines)
        info = build_p4info(program.info)
        config = device_config_from_file(args.program, tuple(args.include_dirs), defines)
    except P4Error as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except (P4InfoError, OSError) as exc:
        print(f"{args.program}: error: {exc}", file=sys.stderr)
        return 1
    if args.p4info:
        Path(args.p4info).write_text(p4info_text(info))
    if args.device_config:
        Path(args.device_config).write_bytes(config)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run `softswitch compile` on its own (python -m softswitch.p4info)."""
    import argparse

    parser = add_compile_arguments(argparse.ArgumentParser(prog="softswitch compile"))
    return compile_main(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
