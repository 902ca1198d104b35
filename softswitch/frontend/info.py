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
from . import names
from . import types as T
from .liveness import Liveness


@dataclass(frozen=True)
class FieldInfo:
    """A named field with its width (action params, header fields, digest fields)."""

    name: str
    bitwidth: int
    annotations: tuple[Any, ...] = ()
    match_kind: str = "exact"  # value sets only
    type_name: str | None = None  # a `type` (spec 7.6.2) P4Runtime names (see new_type_name)


@dataclass(frozen=True)
class KeyInfo:
    """A table key element: P4Info name (expression text or @name), match kind, width."""

    name: str
    match_kind: str
    bitwidth: int
    annotations: tuple[Any, ...] = ()
    type_name: str | None = None


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
    idle_timeout: bool = False  # `support_timeout = true`


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
class NewTypeInfo:
    """A `type` named by a key, action parameter or packet-metadata field: P4Info's
    type_info.new_types entry (original_type: the bit<W>/int<W>/bool at the chain's end)."""

    name: str
    annotations: tuple[Any, ...]
    bitwidth: int
    signed: bool = False
    is_bool: bool = False


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
    new_types: tuple[NewTypeInfo, ...] = ()
    by_name: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    calls_extern_functions: bool = False  # a used control calls one (p4c then has type_info)

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


def new_type_name(t: Any) -> str | None:
    """The `type` P4Info names for a value of type `t` (p4c's getTypeName: typedefs see
    through to it). A `type` with `@p4runtime_translation` is not named: its P4Runtime
    form (another width, or a string) would need translation, which softswitch does not do."""
    if not isinstance(t, T.NewType):
        return None
    decl = t.decl
    if decl is not None and A.find_annotation(decl.annotations, "p4runtime_translation"):
        return None
    return t.name


def _new_types(named: set[str], types: dict[str, Any]) -> tuple[NewTypeInfo, ...]:
    out = []
    for name in sorted(named):
        t = types.get(name)
        if not isinstance(t, T.NewType):
            continue
        base = T.strip_newtype(t)
        anns = tuple(a for a in (t.decl.annotations if t.decl is not None else ())
                     if a.name not in ("name", "id"))
        out.append(NewTypeInfo(name, anns, 1 if isinstance(base, T.BoolType) else
                               T.bit_width(base), bool(getattr(base, "signed", False)),
                               isinstance(base, T.BoolType)))
    return tuple(out)


def _flat_fields(t: Any, prefix: str = "") -> tuple[FieldInfo, ...]:
    """The fields of a header with struct-typed fields (spec 7.2.2) flattened in wire order,
    named `s.f` as p4c names packet-metadata fields."""
    out: list[FieldInfo] = []
    for f in T.strip_newtype(t).fields:
        ft = T.strip_newtype(f.type)
        if isinstance(ft, T.StructType):
            out.extend(_flat_fields(ft, f"{prefix}{f.name}."))
        else:
            out.append(FieldInfo(f"{prefix}{f.name}", _width(f.type), tuple(f.annotations),
                                 type_name=new_type_name(f.type)))
    return tuple(out)


def _value_set_fields(t: Any) -> tuple[FieldInfo, ...]:
    """Match fields of a value set as p4c lists them (P4Runtime 1.0): a bit<W> element is one
    unnamed exact field; a struct's fields are matched as their `@match(kind)` says (exact
    without it)."""
    t = T.strip_newtype(t)
    if isinstance(t, T.StructLike):
        out = []
        for f in t.fields:
            ann = A.find_annotation(f.annotations, "match")
            kind = str(ann.args[0]) if ann is not None and ann.args else "exact"
            out.append(FieldInfo(f.name, _width(f.type), tuple(f.annotations), kind))
        return tuple(out)
    return (FieldInfo("", _width(t)),)


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
    """Where each used parser/control runs: the instance paths (names.py) of its instances,
    starting at the main package's blocks; unused instances (liveness.py) are not followed."""

    def __init__(self, main_blocks: list[Any], live: Liveness):
        self.prefixes: dict[int, list[str]] = {}
        self.live = live
        for b in main_blocks:
            if b is not None:
                self._visit(b, names.block_path(b), 0)

    def _visit(self, decl: Any, prefix: str, depth: int) -> None:
        paths = self.prefixes.setdefault(id(decl), [])
        if prefix in paths or depth > 32:
            return
        paths.append(prefix)
        for d in getattr(decl, "locals", []):
            if not isinstance(d, A.Instantiation) or d not in self.live:
                continue
            t = d.type.base if isinstance(d.type, T.SpecializedType) else d.type
            sub = getattr(t, "decl", None)
            if isinstance(sub, A.ParserDecl | A.ControlDecl):
                self._visit(sub, names.instance_path(prefix, d), depth + 1)

    def names(self, decl: Any, merge: bool = False) -> list[tuple[str | None, str]]:
        """(instance path, P4Info name) for every instance of the block declaring `decl`;
        with `merge`, instances giving the same name (an absolute `@name`) count once."""
        owner = getattr(decl, "owner", None)
        if owner is None:
            return [(None, names.name_in(decl, None))]
        out: list[tuple[str | None, str]] = []
        for p in self.prefixes.get(id(owner), []):
            name = names.name_in(decl, p)
            if not merge or all(name != n for _, n in out):
                out.append((p, name))
        return out

    @staticmethod
    def name_at(decl: Any, prefix: str | None) -> str:
        """The name of `decl` inside the instance at `prefix`."""
        if getattr(decl, "owner", None) is None:
            prefix = None
        return names.name_in(decl, prefix)


def build_info(checker, tree: A.P4Program, reporter) -> ProgramInfo:
    """Collect the control-plane surface from a checked program."""
    blocks = getattr(checker.main_inst, "blocks", []) or []
    live = Liveness(blocks)
    paths = _InstancePaths(blocks, live)
    tables: list[TableInfo] = []
    direct_counter_table: dict[str, str] = {}
    direct_meter_table: dict[str, str] = {}
    profile_tables: dict[str, list[str]] = {}
    for t in checker.tables:
        if _hidden(t) or t not in live:
            continue
        keys = tuple(
            KeyInfo(k.name, k.match_kind, _width(k.expr.type), tuple(k.annotations),
                    new_type_name(k.expr.type))
            for k in t.keys
        )
        impl = _decl_of(t.implementation)
        dc = _decl_of(t.counters)
        dm = _decl_of(t.meters)
        for prefix, tname in paths.names(t):
            def at(d: Any, prefix=prefix) -> str:
                return paths.name_at(d, prefix)

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
                is_const=t.entries is not None and t.entries_const,  # `const entries = { }` too
                implementation=at(impl) if impl is not None else None,
                direct_counter=at(dc) if dc is not None else None,
                direct_meter=at(dm) if dm is not None else None, entries=entries,
                idle_timeout=t.support_timeout))

    actions: list[ActionInfo] = []
    seen_actions: set[str] = set()
    in_tables = {id(r.action) for t in checker.tables if t in live
                 for r in [*t.actions, t.default_action, *[e.action for e in t.entries or []]]
                 if r is not None}
    for a in checker.actions:
        if _hidden(a) or a not in live:
            continue
        # an action only called directly gets its data from the call: p4c's mid end turns
        # those parameters into locals (RemoveActionParameters), so P4Info lists none
        params = tuple(FieldInfo(names.local_name(p), _width(p.type), tuple(p.annotations),
                                 type_name=new_type_name(p.type))
                       for p in a.params if p.direction == "") if id(a) in in_tables else ()
        for _, name in paths.names(a, merge=True):
            if name not in seen_actions:
                seen_actions.add(name)
                actions.append(ActionInfo(name, tuple(a.annotations), params))

    profiles, counters, meters, registers, dcounters, dmeters = [], [], [], [], [], []
    for inst in checker.instances:
        if _hidden(inst) or inst.fqname is None:
            continue
        kind, targs = _extern_base(inst)
        ann = tuple(inst.annotations)
        for _, name in paths.names(inst):
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
            elif kind in ("direct_counter", "direct_meter"):
                # attached to no table: nothing to describe (p4c leaves it out, and warns)
                table = (direct_counter_table if kind == "direct_counter"
                         else direct_meter_table).get(name)
                if table is None:
                    reporter.warning(inst.loc, f"'{inst.name}' is unused ({kind} attached to "
                                               f"no table)")
                    continue
                (dcounters if kind == "direct_counter" else dmeters).append(
                    DirectInfo(name, ann, str(_ctor_arg(inst, 0)), table))

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
                                                    _flat_fields(d.type)))

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
        if vs not in live:
            continue
        et = vs.type.element if isinstance(vs.type, T.SetType) else None
        fields = _value_set_fields(et) if et is not None else ()
        for _, name in paths.names(vs):
            value_sets.append(ValueSetInfo(name, tuple(vs.annotations), vs.size_value, fields))

    named = {k.type_name for t in tables for k in t.keys if k.type_name} | {
        f.type_name for x in (*actions, *headers) for f in (
            x.params if isinstance(x, ActionInfo) else x.fields) if f.type_name}
    info = ProgramInfo(
        new_types=_new_types(named, checker.types),
        tables=tuple(tables), actions=tuple(actions), action_profiles=tuple(profiles),
        counters=tuple(counters), meters=tuple(meters), registers=tuple(registers),
        direct_counters=tuple(dcounters), direct_meters=tuple(dmeters),
        controller_headers=tuple(headers), digests=tuple(digests), value_sets=tuple(value_sets),
        calls_extern_functions=_calls_extern_functions(tree, live),
    )
    for group in (info.tables, info.actions, info.action_profiles, info.counters, info.meters,
                  info.registers, info.direct_counters, info.direct_meters, info.digests,
                  info.value_sets):
        for obj in group:
            info.by_name.setdefault(obj.name, obj)
    _unique_names(info, reporter, tree)
    return info


_KINDS = (("tables", "table"), ("action_profiles", "action profile"), ("counters", "counter"),
          ("direct_counters", "direct counter"), ("meters", "meter"),
          ("direct_meters", "direct meter"), ("registers", "register"),
          ("value_sets", "value set"))


def _unique_names(info: ProgramInfo, reporter, tree: A.P4Program) -> None:
    """Every object of a kind needs a name of its own in P4Info: p4c's errors when two
    (e.g. two instances of a control with an `@name(".t")` table) get the same one."""
    duplicates = 0
    where = tree.decls[-1].loc if tree.decls else A.NOWHERE
    for field_name, kind in _KINDS:
        seen: set[str] = set()
        for obj in getattr(info, field_name):
            if obj.name in seen:
                duplicates += 1
                reporter.error(where, f"Name '{obj.name}' is used for multiple {kind} objects "
                                      f"in the P4Info message")
            seen.add(obj.name)
    if duplicates:
        reporter.error(where, f"Found {duplicates} duplicate name(s) in the P4Info")


def _calls_extern_functions(tree: A.P4Program, live: Liveness) -> bool:
    """Whether a used control (its apply block or an action) calls an extern function."""
    for c in tree.decls:
        if not isinstance(c, A.ControlDecl) or c not in live:
            continue
        bodies = [c.body] + [d.body for d in c.locals if isinstance(d, A.ActionDecl)]
        if any(isinstance(n, A.CallExpr) and n.kind is A.CallKind.EXTERN_FUNCTION
               for n in A.iter_nodes(bodies)):
            return True
    return False


def _decl_of(e: A.Expression | None) -> Any:
    if isinstance(e, A.PathExpr) and isinstance(e.decl, A.Instantiation):
        return e.decl
    return None
