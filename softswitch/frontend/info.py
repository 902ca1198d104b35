"""Program.info: the control-plane surface of a program, as P4Info describes it.

Names are fully qualified the way p4c writes them in P4Info: the declaring
control's name + "." + the local name (`MyIngress.ipv4_lpm`), top-level
declarations keep their name (`NoAction`), and `@name("x")` overrides the local
part (a leading "." makes it absolute). Objects of a control instantiated inside
another one appear once per instance, under the instance path
(`MyIngress.acl1.t`), as the engine names them. Annotations are kept as
ast.Annotation objects, whose str() is the source text (`@name("x")`).
Objects marked `@hidden` are left out, as p4c does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import ast as A
from . import types as T


@dataclass(frozen=True)
class FieldInfo:
    """A named field with its width (action params, header fields, digest fields)."""

    name: str
    bitwidth: int
    annotations: tuple[Any, ...] = ()
    match_kind: str = "exact"  # value sets only


@dataclass(frozen=True)
class KeyInfo:
    """A table key element: P4Info name (expression text or @name), match kind, width."""

    name: str
    match_kind: str
    bitwidth: int
    annotations: tuple[Any, ...] = ()


@dataclass(frozen=True)
class ActionRefInfo:
    """An action of a table; scope is table_and_default / table_only / default_only."""

    name: str
    scope: str = "table_and_default"
    annotations: tuple[Any, ...] = ()


@dataclass(frozen=True)
class DefaultActionInfo:
    """The table's default action with its constant arguments."""

    name: str
    args: tuple[int, ...] = ()
    const: bool = False


@dataclass(frozen=True)
class EntryInfo:
    """A `const entries` element: key values per key (raw AST keyset kept for the engine)."""

    action: str
    args: tuple[int, ...]
    priority: int | None


@dataclass(frozen=True)
class TableInfo:
    """A table as P4Info shows it."""

    name: str
    annotations: tuple[Any, ...]
    keys: tuple[KeyInfo, ...]
    actions: tuple[ActionRefInfo, ...]
    default_action: DefaultActionInfo | None
    size: int
    is_const: bool
    implementation: str | None
    direct_counter: str | None
    direct_meter: str | None
    entries: tuple[EntryInfo, ...] = ()


@dataclass(frozen=True)
class ActionInfo:
    """An action: action-data parameters (directionless) in declaration order."""

    name: str
    annotations: tuple[Any, ...]
    params: tuple[FieldInfo, ...]


@dataclass(frozen=True)
class ActionProfileInfo:
    """An action_profile or action_selector instance and the tables using it."""

    name: str
    annotations: tuple[Any, ...]
    tables: tuple[str, ...]
    with_selector: bool
    size: int
    max_group_size: int = 0
    algorithm: str | None = None


@dataclass(frozen=True)
class CounterInfo:
    """A counter (indexed) array; unit is packets / bytes / packets_and_bytes."""

    name: str
    annotations: tuple[Any, ...]
    unit: str
    size: int


@dataclass(frozen=True)
class MeterInfo:
    """A meter array; unit is packets / bytes."""

    name: str
    annotations: tuple[Any, ...]
    unit: str
    size: int


@dataclass(frozen=True)
class RegisterInfo:
    """A register array of `size` cells of `bitwidth` bits."""

    name: str
    annotations: tuple[Any, ...]
    size: int
    bitwidth: int


@dataclass(frozen=True)
class DirectInfo:
    """A direct counter or meter and the table it belongs to."""

    name: str
    annotations: tuple[Any, ...]
    unit: str
    table: str | None


@dataclass(frozen=True)
class ControllerHeaderInfo:
    """`@controller_header("packet_in"|"packet_out")` header: role name, type name, fields."""

    name: str
    type_name: str
    annotations: tuple[Any, ...]
    fields: tuple[FieldInfo, ...]


@dataclass(frozen=True)
class DigestInfo:
    """A digest, named after the struct type passed to digest<T>()."""

    name: str
    annotations: tuple[Any, ...]
    fields: tuple[FieldInfo, ...]


@dataclass(frozen=True)
class ValueSetInfo:
    """A parser value set: size and the fields of its element type."""

    name: str
    annotations: tuple[Any, ...]
    size: int
    fields: tuple[FieldInfo, ...]


@dataclass(frozen=True)
class ProgramInfo:
    """Everything P4Info is built from (see docs/softswitch-api.md)."""

    tables: tuple[TableInfo, ...] = ()
    actions: tuple[ActionInfo, ...] = ()
    action_profiles: tuple[ActionProfileInfo, ...] = ()
    counters: tuple[CounterInfo, ...] = ()
    meters: tuple[MeterInfo, ...] = ()
    registers: tuple[RegisterInfo, ...] = ()
    direct_counters: tuple[DirectInfo, ...] = ()
    direct_meters: tuple[DirectInfo, ...] = ()
    controller_headers: tuple[ControllerHeaderInfo, ...] = ()
    digests: tuple[DigestInfo, ...] = ()
    value_sets: tuple[ValueSetInfo, ...] = ()
    by_name: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def table(self, name: str) -> TableInfo | None:
        """The table called `name` (fully-qualified), or None."""
        return next((t for t in self.tables if t.name == name), None)

    def action(self, name: str) -> ActionInfo | None:
        """The action called `name` (fully-qualified), or None."""
        return next((a for a in self.actions if a.name == name), None)


def _hidden(d: A.Declaration) -> bool:
    return A.find_annotation(d.annotations, "hidden") is not None


def _width(t: Any) -> int:
    t = T.strip_newtype(t)
    if isinstance(t, T.ErrorType):
        return 32
    return T.bit_width(t)


def _fields_of(t: Any) -> tuple[FieldInfo, ...]:
    t = T.strip_newtype(t)
    if isinstance(t, T.StructLike):
        return tuple(FieldInfo(f.name, _width(f.type), tuple(f.annotations)) for f in t.fields)
    if isinstance(t, T.TupleType):
        return tuple(FieldInfo(f"f{i}", _width(e)) for i, e in enumerate(t.elements))
    return (FieldInfo("value", _width(t)),)


def _ctor_arg(inst: A.Instantiation, i: int) -> Any:
    if i < len(inst.bound_args) and inst.bound_args[i] is not None:
        return inst.bound_args[i].const_value
    return None


def _extern_base(inst: A.Instantiation) -> tuple[str | None, list[Any]]:
    t = inst.type
    if isinstance(t, T.SpecializedType):
        base = t.base
        return (base.name if isinstance(base, T.ExternType) else None), list(t.args)
    return (t.name if isinstance(t, T.ExternType) else None), []


def _action_args(ref: A.ActionRef | None) -> tuple[int, ...]:
    if ref is None or ref.call is None:
        return ()
    out = []
    for p, a in zip(ref.call.params, ref.call.bound_args, strict=False):
        if p.direction == "" and a is not None and isinstance(a.const_value, int):
            out.append(int(a.const_value))
    return tuple(out)


class _InstancePaths:
    """Where each parser/control runs: p4c names the objects of a sub-control instance
    by the path of instances (`MyIngress.acl1.t`), those of the six top-level blocks
    by the block's declaration name (`MyIngress.t`)."""

    def __init__(self, main_blocks: list[Any]):
        self.prefixes: dict[int, list[str]] = {}
        for b in main_blocks:
            if b is not None:
                self._visit(b, b.name, 0)

    def _visit(self, decl: Any, prefix: str, depth: int) -> None:
        paths = self.prefixes.setdefault(id(decl), [])
        if prefix in paths or depth > 32:
            return
        paths.append(prefix)
        for d in getattr(decl, "locals", []):
            if not isinstance(d, A.Instantiation):
                continue
            t = d.type.base if isinstance(d.type, T.SpecializedType) else d.type
            sub = getattr(t, "decl", None)
            if isinstance(sub, A.ParserDecl | A.ControlDecl) and d.fqname:
                self._visit(sub, prefix + "." + _local_part(d.fqname, decl), depth + 1)

    def names(self, fqname: str, owner: Any) -> list[tuple[str | None, str]]:
        """(instance prefix, P4Info name) for every instance of the owning block."""
        if owner is None:
            return [(None, fqname)]
        out: list[tuple[str | None, str]] = []
        for p in self.prefixes.get(id(owner)) or [owner.name]:
            name = self.name_at(fqname, owner, p)
            if all(name != n for _, n in out):
                out.append((p, name))
        return out

    @staticmethod
    def name_at(fqname: str, owner: Any, prefix: str | None) -> str:
        """The name of an object of `owner` inside the instance at `prefix`."""
        if owner is None or prefix is None:
            return fqname
        head = owner.name + "."
        return prefix + "." + fqname[len(head):] if fqname.startswith(head) else fqname


def _local_part(fqname: str, owner: Any) -> str:
    head = owner.name + "."
    return fqname[len(head):] if fqname.startswith(head) else fqname


def build_info(checker, tree: A.P4Program, reporter) -> ProgramInfo:
    """Collect the control-plane surface from a checked program."""
    paths = _InstancePaths(getattr(checker.main_inst, "blocks", []) or [])
    tables: list[TableInfo] = []
    direct_counter_table: dict[str, str] = {}
    direct_meter_table: dict[str, str] = {}
    profile_tables: dict[str, list[str]] = {}
    for t in checker.tables:
        if _hidden(t):
            continue
        keys = tuple(
            KeyInfo(k.name, k.match_kind, _width(k.expr.type), tuple(k.annotations))
            for k in t.keys
        )
        impl = _decl_of(t.implementation)
        dc = _decl_of(t.counters)
        dm = _decl_of(t.meters)
        for prefix, tname in paths.names(t.fqname, t.owner):
            def at(d: Any, prefix=prefix) -> str:
                return paths.name_at(d.fqname, getattr(d, "owner", None), prefix)

            refs = []
            for r in t.actions:
                if r.action is None or _hidden(r.action):
                    continue
                scope = "table_and_default"
                if A.find_annotation(r.annotations, "tableonly"):
                    scope = "table_only"
                elif A.find_annotation(r.annotations, "defaultonly"):
                    scope = "default_only"
                refs.append(ActionRefInfo(at(r.action), scope, tuple(r.annotations)))
            default = None
            if t.default_action is not None and t.default_action.action is not None:
                default = DefaultActionInfo(at(t.default_action.action),
                                            _action_args(t.default_action),
                                            t.default_action_const)
            if impl is not None:
                profile_tables.setdefault(at(impl), []).append(tname)
            if dc is not None:
                direct_counter_table[at(dc)] = tname
            if dm is not None:
                direct_meter_table[at(dm)] = tname
            entries = tuple(
                EntryInfo(at(e.action.action) if e.action.action else "?",
                          _action_args(e.action), e.priority_value)
                for e in (t.entries or [])
            )
            tables.append(TableInfo(
                name=tname, annotations=tuple(t.annotations), keys=keys, actions=tuple(refs),
                default_action=default, size=t.size_value if t.size_value is not None else 1024,
                is_const=bool(t.entries) and t.entries_const,
                implementation=at(impl) if impl is not None else None,
                direct_counter=at(dc) if dc is not None else None,
                direct_meter=at(dm) if dm is not None else None, entries=entries))

    actions: list[ActionInfo] = []
    seen_actions: set[str] = set()
    for a in checker.actions:
        if _hidden(a):
            continue
        params = tuple(FieldInfo(p.name, _width(p.type), tuple(p.annotations))
                       for p in a.params if p.direction == "")
        for _, name in paths.names(a.fqname, a.owner):
            if name not in seen_actions:
                seen_actions.add(name)
                actions.append(ActionInfo(name, tuple(a.annotations), params))

    profiles, counters, meters, registers, dcounters, dmeters = [], [], [], [], [], []
    for inst in checker.instances:
        if _hidden(inst) or inst.fqname is None:
            continue
        kind, targs = _extern_base(inst)
        ann = tuple(inst.annotations)
        for _, name in paths.names(inst.fqname, inst.owner):
            if kind == "action_profile":
                profiles.append(ActionProfileInfo(name, ann, tuple(profile_tables.get(name, [])),
                                                  False, int(_ctor_arg(inst, 0) or 0)))
            elif kind == "action_selector":
                mgs = A.find_annotation(inst.annotations, "max_group_size")
                algo = _ctor_arg(inst, 0)
                profiles.append(ActionProfileInfo(
                    name, ann, tuple(profile_tables.get(name, [])), True,
                    int(_ctor_arg(inst, 1) or 0),
                    int(mgs.args[0]) if mgs and mgs.args and isinstance(mgs.args[0], int) else 0,
                    str(algo) if algo is not None else None))
            elif kind == "counter":
                counters.append(CounterInfo(name, ann, str(_ctor_arg(inst, 1)),
                                            int(_ctor_arg(inst, 0) or 0)))
            elif kind == "meter":
                meters.append(MeterInfo(name, ann, str(_ctor_arg(inst, 1)),
                                        int(_ctor_arg(inst, 0) or 0)))
            elif kind == "register":
                width = _width(targs[0]) if targs else 0
                registers.append(RegisterInfo(name, ann, int(_ctor_arg(inst, 0) or 0), width))
            elif kind == "direct_counter":
                table = direct_counter_table.get(name)
                if table is None:
                    reporter.warning(inst.loc, f"direct_counter '{inst.name}' is not used by a "
                                               f"table")
                dcounters.append(DirectInfo(name, ann, str(_ctor_arg(inst, 0)), table))
            elif kind == "direct_meter":
                table = direct_meter_table.get(name)
                if table is None:
                    reporter.warning(inst.loc, f"direct_meter '{inst.name}' is not used by a table")
                dmeters.append(DirectInfo(name, ann, str(_ctor_arg(inst, 0)), table))

    headers = []
    for d in tree.decls:
        if isinstance(d, A.HeaderDecl) and d.type is not None:
            ch = A.find_annotation(d.annotations, "controller_header")
            if ch is not None:
                role = ch.string_arg()
                if role not in ("packet_in", "packet_out"):
                    reporter.error(ch.loc, '@controller_header needs "packet_in" or "packet_out"')
                    continue
                headers.append(ControllerHeaderInfo(role, d.name, tuple(d.annotations),
                                                    _fields_of(d.type)))

    digests: list[DigestInfo] = []
    seen_digests: set[str] = set()
    for call in checker.digest_calls:
        dt = call.type_args[0] if call.type_args else None
        st = T.strip_newtype(dt) if dt is not None else None
        if not isinstance(st, T.StructType):
            reporter.unsupported(call.loc, f"digest of {dt} (pass a struct)")
            continue
        if st.name in seen_digests:
            continue
        seen_digests.add(st.name)
        digests.append(DigestInfo(st.name, tuple(st.decl.annotations) if st.decl else (),
                                  _fields_of(st)))

    value_sets = []
    for vs in checker.value_sets:
        et = vs.type.element if isinstance(vs.type, T.SetType) else None
        fields = _fields_of(et) if et is not None else ()
        if et is not None and not isinstance(T.strip_newtype(et), (T.StructLike, T.TupleType)):
            fields = (FieldInfo("", _width(et)),)  # p4c names no field of a bit<W> value set
        for _, name in paths.names(vs.fqname, vs.owner):
            value_sets.append(ValueSetInfo(name, tuple(vs.annotations), vs.size_value, fields))

    info = ProgramInfo(
        tables=tuple(tables), actions=tuple(actions), action_profiles=tuple(profiles),
        counters=tuple(counters), meters=tuple(meters), registers=tuple(registers),
        direct_counters=tuple(dcounters), direct_meters=tuple(dmeters),
        controller_headers=tuple(headers), digests=tuple(digests), value_sets=tuple(value_sets),
    )
    for group in (info.tables, info.actions, info.action_profiles, info.counters, info.meters,
                  info.registers, info.direct_counters, info.direct_meters, info.digests,
                  info.value_sets):
        for obj in group:
            info.by_name.setdefault(obj.name, obj)
    return info


def _decl_of(e: A.Expression | None) -> Any:
    if isinstance(e, A.PathExpr) and isinstance(e.decl, A.Instantiation):
        return e.decl
    return None
