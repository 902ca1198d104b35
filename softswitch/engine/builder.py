"""Builds what one compiled program runs on: its generated module, tables, externs, value sets.

`build_program` compiles the checked program with `codegen`, creates the
runtime objects the generated code refers to by global name (register cells,
counters, meters, action profiles, tables with their const entries, parser
value sets) and executes the module once. `Switch` keeps the result.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from softswitch.frontend import ast as A
from softswitch.frontend.program import Program
from softswitch.frontend.types import bit_width

from . import runtime
from .codegen import Codegen, TableInfo, rt
from .errors import CompileError, SwitchError
from .externs import CounterArray, MeterArray, RegisterArray
from .match import Exact, Lpm, MatchValue, Optional, Range, Ternary
from .runtime import ValueSet
from .tables import ActionProfile, ActionSpec, KeySpec, Table


class DirectSpec:
    """A direct_counter / direct_meter declaration (its cells live in table entries)."""

    def __init__(self, name: str, kind: str, unit: str) -> None:
        self.name = name
        self.kind = kind
        self.unit = unit


@dataclass
class BuiltProgram:
    """A program ready to run: the generated module's globals and the objects behind them."""

    source: str  # the generated Python
    gen: Codegen
    ns: dict[str, Any]  # globals of the executed module
    tables: dict[str, Table] = field(default_factory=dict)
    registers: dict[str, RegisterArray] = field(default_factory=dict)
    counters: dict[str, CounterArray] = field(default_factory=dict)
    meters: dict[str, MeterArray] = field(default_factory=dict)
    profiles: dict[str, ActionProfile] = field(default_factory=dict)
    direct: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (kind, table)
    value_sets: dict[str, ValueSet] = field(default_factory=dict)

    def entry(self, name: str) -> Callable[..., Any]:
        """A function of the generated module (`RUN_ingress`, ...)."""
        fn: Callable[..., Any] = self.ns[name]
        return fn


def build_program(program: Program) -> BuiltProgram:
    """Compile `program` and build its runtime objects; CompileError for what cannot run."""
    gen = Codegen(program)
    # chains of operators and else-ifs are compiled without recursion; other nesting
    # (calls in calls, casts of casts) recurses once per level, as the front end does
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, 5000))
    try:
        source = gen.compile()
    except RecursionError:
        where = getattr(program, "source_file", "") or "program"
        raise CompileError(where, "the program is nested too deeply for the engine") from None
    finally:
        sys.setrecursionlimit(old_limit)
    built = BuiltProgram(source, gen, runtime.namespace())
    _build_externs(built)
    code = compile(source, f"<softswitch:{getattr(program, 'source_file', 'program')}>", "exec")
    exec(code, built.ns)
    _build_tables(built)
    for decl, g in gen.value_sets:
        vs = ValueSet(decl.fqname or decl.name, decl.size_value)
        built.ns[g] = vs
        built.value_sets[vs.name] = vs
    return built


def _build_externs(built: BuiltProgram) -> None:
    ns = built.ns
    for info in built.gen.externs:
        a = info.args
        tn = info.type_name
        obj: Any
        if tn == "register":
            t = rt(info.type_args[0]) if info.type_args else None
            width = getattr(t, "width", 32) if t is not None else 32
            signed = bool(getattr(t, "signed", False))
            obj = RegisterArray(info.name, int(a[0]), width, signed)
            built.registers[info.name] = obj
            ns[info.gname + "_v"] = obj.values
        elif tn == "counter":
            obj = CounterArray(info.name, int(a[0]), str(a[1]))
            built.counters[info.name] = obj
            ns[info.gname + "_p"] = obj.packets
            ns[info.gname + "_b"] = obj.bytes
        elif tn == "meter":
            obj = MeterArray(info.name, int(a[0]), str(a[1]))
            built.meters[info.name] = obj
        elif tn in ("direct_counter", "direct_meter"):
            obj = DirectSpec(info.name, tn, str(a[0]))
        elif tn == "action_profile":
            obj = ActionProfile(info.name, False, int(a[0] or 0))
            built.profiles[info.name] = obj
        elif tn == "action_selector":
            obj = ActionProfile(info.name, True, int(a[1] or 0), algorithm=str(a[0]))
            built.profiles[info.name] = obj
        else:
            raise CompileError(getattr(info.decl, "loc", "?"),
                               f"unsupported: extern {tn} (softswitch runs the externs of "
                               f"core.p4 and v1model.p4)")
        ns[info.gname] = obj


def _build_tables(built: BuiltProgram) -> None:
    gen, ns = built.gen, built.ns
    action_fns_global = {a.name: ns[a.gname] for a in gen.actions}
    action_specs = {a.name: ActionSpec(a.name, tuple(a.params)) for a in gen.actions}
    for info in gen.tables:
        d = info.decl
        keys = [KeySpec(n, k, w) for n, k, w in info.keys]
        specs, scopes, fns = [], {}, {}
        for aname, ref, fname in info.actions:
            specs.append(action_specs[aname])
            fns[aname] = ns[fname]
            names = {a.name for a in ref.annotations}
            if "defaultonly" in names:
                scopes[aname] = "default_only"
            elif "tableonly" in names:
                scopes[aname] = "table_only"
        default: tuple[str, tuple[int, ...]] = ("NoAction", ())
        if d.default_action is not None:
            ref = d.default_action
            ainfo = gen.action_by_decl.get((id(ref.action), _prefix_of(gen, info))) or gen.action_by_decl.get(
                (id(ref.action), "")
            )
            assert ainfo is not None  # every action of the program is compiled
            default = (ainfo.name, _const_action_args(ref))
            if ainfo.name not in fns:
                fns[ainfo.name] = ns[ainfo.gname]
        elif "NoAction" in action_fns_global:
            fns.setdefault("NoAction", action_fns_global["NoAction"])
        if default[0] not in action_specs:
            action_specs.setdefault(default[0], ActionSpec(default[0], ()))
        if default[0] not in {s.name for s in specs}:
            specs.append(action_specs[default[0]])
            scopes.setdefault(default[0], "default_only")
        profile = ns[info.profile] if info.profile else None
        dc = ns[info.direct_counter] if info.direct_counter else None
        dm = ns[info.direct_meter] if info.direct_meter else None
        table = Table(
            info.name,
            keys,
            specs,
            scopes,
            default=default,
            const_default=d.default_action_const,
            is_const=d.entries is not None and d.entries_const,
            size=d.size_value or 1024,
            profile=profile,
            with_counter=dc is not None,
            with_meter=dm is not None,
        )
        table.bind(fns)
        if dc is not None:
            built.direct[dc.name] = ("counter", info.name)
        if dm is not None:
            built.direct[dm.name] = ("meter", info.name)
        ns[info.gname] = table
        built.tables[info.name] = table
        if d.entries:
            _add_const_entries(table, info, d.entries)


def _const_action_args(ref: A.ActionRef) -> tuple[int, ...]:
    call = ref.call
    params = ref.action.params
    values = []
    if call is not None and call.bound_args:
        for p, a in zip(params, call.bound_args, strict=False):
            if not p.direction:
                values.append(_const_int(a) & _mask_of(p))
    else:
        data = [p for p in params if not p.direction]
        for p, arg in zip(data, ref.args, strict=False):
            values.append(_const_int(arg.value) & _mask_of(p))
    return tuple(values)


def _add_const_entries(table: Table, info: TableInfo, entries: list[A.TableEntry]) -> None:
    n = len(entries)
    for i, ent in enumerate(entries):
        ks = ent.keyset
        items = ks.items if isinstance(ks, A.ListExpr) else [ks]
        if len(table.match_keys) == 1 and not isinstance(ks, A.ListExpr):
            items = [ks]
        keys = [_keyset_value(item, spec) for item, spec in zip(items, table.match_keys, strict=False)]
        aname = next(a for a, ref, _ in info.actions if ref.action is ent.action.action)
        prio = ent.priority_value if ent.priority_value is not None else n - i
        try:
            table.add(keys, aname, _const_action_args(ent.action), prio, const_ok=True)
        except SwitchError as exc:  # an entry the table cannot take: the program's error
            raise CompileError(getattr(ent, "loc", "?"), f"entry refused: {exc.message}") from None


def _prefix_of(gen: Codegen, info: TableInfo) -> str:
    for (_decl_id, prefix), ti in gen.table_by_decl.items():
        if ti is info:
            return prefix
    return ""


def _mask_of(param: A.Param) -> int:
    """All-ones mask of an action parameter's width (negative constants become two's complement)."""
    w = bit_width(param.type) if param.type is not None else 0
    return (1 << w) - 1 if w else -1


def _const_int(e: A.Expression | None) -> int:
    v = e.const_value if e is not None else 0
    if isinstance(v, bool):
        return int(v)
    members = getattr(rt(e.type), "members", None) if e is not None and isinstance(v, str) else None
    if members is not None and v in members:
        return list(members).index(v)  # an error or enum member: its number (codegen `_midx`)
    if not isinstance(v, int):
        raise CompileError(getattr(e, "loc", "?"), "action argument is not a compile-time constant")
    return v


def _keyset_value(item: A.Expression, spec: KeySpec) -> MatchValue:
    """MatchValue of one const-entry keyset element for a key of the given kind."""
    w = spec.width
    full = (1 << w) - 1
    kind = spec.match_kind
    if isinstance(item, A.DefaultExpr | A.DontCareExpr):
        wildcard: dict[str, MatchValue] = {
            "exact": Ternary(0, 0), "lpm": Lpm(0, 0), "ternary": Ternary(0, 0),
            "range": Range(0, full), "optional": Optional(None)}
        return wildcard[kind]
    if isinstance(item, A.MaskExpr):
        v, m = _const_int(item.value) & full, _const_int(item.mask) & full
        if kind == "lpm":
            plen = bin(m).count("1")
            return Lpm(v & m, plen)
        return Ternary(v & m, m)
    if isinstance(item, A.RangeExpr):
        return Range(_const_int(item.lo), _const_int(item.hi))
    v = _const_int(item) & full
    value: dict[str, MatchValue] = {
        "exact": Exact(v), "lpm": Lpm(v, w), "ternary": Ternary(v, full), "range": Range(v, v),
        "optional": Optional(v)}
    return value[kind]
