"""Checking pass: tables (P4_16 spec section 14.2).

Table properties become fields of the `TableDecl` (keys, actions, default
action, const entries, size, implementation, direct counters and meters); an
extern constructed inline in a property becomes a local instance of the
control, named as p4c names it.
"""

from __future__ import annotations

from typing import Any

from .. import ast as A
from .. import types as T
from ..ast import expr_text
from .base import CheckerBase
from .scope import Scope
from .typeops import POISON

_TABLE_PROPS = {"key", "actions", "default_action", "entries", "size", "implementation",
                "counters", "meters", "support_timeout", "idle_timeout"}


class TableChecks(CheckerBase):
    """Table declarations, their properties, action references and const entries."""

    def table_decl(self, d: A.TableDecl, scope: Scope, owner: Any) -> None:
        d.owner = owner
        d.fqname = self.fqname(d, owner)
        d.type = T.TableType(d)
        self.tables.append(d)
        seen: set[str] = set()
        key_types: list[T.P4Type] = []
        for prop in d.properties:
            if prop.name in seen:
                self.err(prop.loc, f"duplicate table property '{prop.name}'")
                continue
            seen.add(prop.name)
            if prop.name not in _TABLE_PROPS:
                self.err(prop.loc, f"unknown table property '{prop.name}'")
                continue
            if prop.name in ("support_timeout", "idle_timeout"):
                self.unsupported(prop.loc, f"table property '{prop.name}'")
                continue
            if prop.name == "key":
                d.keys = prop.value
                for k in d.keys:
                    k.expr = self.expr(k.expr, scope)
                    kt = T.strip_newtype(k.expr.type)
                    if k.expr.type is not POISON and not isinstance(
                            kt, T.Bits | T.BoolType | T.EnumType | T.ErrorType):
                        self.err(k.expr.loc, f"table key must be bit<W>, int<W>, bool, "
                                             f"enum or error, not {k.expr.type}")
                    if isinstance(kt, T.EnumType) and kt.underlying is None:
                        self.unsupported(k.expr.loc, "non-serializable enum as table key")
                    if k.match_kind not in self.match_kind_type.members:
                        self.err(k.loc, f"unknown match kind '{k.match_kind}'")
                    ann = A.find_annotation(k.annotations, "name")
                    k.name = (ann.string_arg() if ann else None) or expr_text(k.expr)
                    key_types.append(k.expr.type)
            elif prop.name == "actions":
                d.actions = prop.value
                names = set()
                for ref in d.actions:
                    self.action_ref(ref, scope, bind_all=False)
                    if ref.action is not None:
                        if ref.action.name in names:
                            self.err(ref.loc, f"action '{ref.action.name}' listed twice")
                        names.add(ref.action.name)
        for prop in d.properties:
            if prop.name == "default_action" and prop.name in seen:
                d.default_action = self.action_call_prop(prop.value, scope, d, "default_action")
                d.default_action_const = prop.const
            elif prop.name == "entries":
                d.entries = prop.value
                d.entries_const = prop.const
                if not prop.const:
                    self.unsupported(prop.loc, "non-const table entries")
                for en in d.entries:
                    self.table_entry(en, d, key_types, scope)
            elif prop.name == "size":
                d.size = prop.value
                d.size_value = self.const_int(prop.value, scope, "table size")
            elif prop.name == "implementation":
                d.implementation = self.table_extern_prop(
                    prop, scope, ("action_profile", "action_selector"), d, owner)
            elif prop.name == "counters":
                d.counters = self.table_extern_prop(prop, scope, ("direct_counter",), d, owner)
            elif prop.name == "meters":
                d.meters = self.table_extern_prop(prop, scope, ("direct_meter",), d, owner)
        if not d.actions and "actions" not in seen:
            self.err(d.loc, f"table '{d.name}' has no 'actions' property")
        has_selector = any(k.match_kind == "selector" for k in d.keys)
        impl_name = _extern_name(d.implementation)
        if has_selector and impl_name != "action_selector":
            self.err(d.loc, f"table '{d.name}' has 'selector' keys but no action_selector")
        if impl_name == "action_selector" and not has_selector:
            self.err(d.loc, f"table '{d.name}' uses an action_selector but has no 'selector' key")

    def table_extern_prop(self, prop: A.TableProperty, scope: Scope, kinds: tuple[str, ...],
                          table: A.TableDecl, owner: Any) -> A.Expression:
        e: A.Expression = prop.value
        if isinstance(e, A.CallExpr) and isinstance(e.callee, A.TypeNameExpr):
            # an anonymous instance (`implementation = action_profile(128);`): declared here
            # as a local of the control, named like p4c: @name on the property, else the
            # table's name
            inst = A.Instantiation(loc=e.loc, name=table.name, annotations=list(prop.annotations),
                                   type_ref=e.callee.type_ref, args=e.args, owner=owner)
            self.instantiation(inst, scope)
            if inst.type is POISON or inst.type is None:
                e.type = POISON
                return e
            inst.fqname = self.fqname(inst, owner)
            self._synthesized.append((table, inst))
            e = A.PathExpr(loc=e.loc, name=table.name, decl=inst)
            e.type = inst.type
        else:
            e = self.expr(e, scope)
        name = _extern_name(e)
        if e.type is not POISON and name not in kinds:
            self.err(e.loc, f"table property '{prop.name}' must name a {' or '.join(kinds)} "
                            f"instance")
        return e

    def action_ref(self, ref: A.ActionRef, scope: Scope, bind_all: bool) -> None:
        found = scope.lookup(ref.name.name)
        if ref.name.absolute:
            found = self.global_scope.lookup(ref.name.name)
        if not found or not isinstance(found[-1], A.ActionDecl):
            self.err(ref.name.loc, f"unknown action '{ref.name.name}'")
            return
        act = found[-1]
        ref.action = act
        ref.name.decl = act
        ref.name.type = T.ActionType(act)
        call = A.CallExpr(loc=ref.loc, callee=ref.name, args=ref.args)
        call.kind = A.CallKind.ACTION
        call.target = act
        call.method = act.name
        params = act.type.params if act.type else []
        if not bind_all:
            dir_params = [p for p in params if p.direction]
            if ref.has_args or dir_params:
                if len(ref.args) != len(dir_params):
                    self.err(ref.loc, f"action '{act.name}' in a table list needs its "
                                      f"{len(dir_params)} directional argument(s)")
                else:
                    call.bound_args = self.bind_args(ref.args, dir_params, scope, ref.loc,
                                                     f"action '{act.name}'")
            call.params = dir_params
        else:
            call.bound_args = self.bind_args(ref.args, params, scope, ref.loc, f"action '{act.name}'")
            call.params = params
        call.type = T.VOID
        ref.call = call

    def action_call_prop(self, e: A.Expression, scope: Scope, table: A.TableDecl,
                         what: str) -> A.ActionRef | None:
        if isinstance(e, A.CallExpr) and isinstance(e.callee, A.PathExpr):
            ref = A.ActionRef(loc=e.loc, name=e.callee, args=e.args, has_args=True)
        elif isinstance(e, A.PathExpr):
            ref = A.ActionRef(loc=e.loc, name=e, args=[])
        else:
            self.err(e.loc, f"{what} must be an action call")
            return None
        self.action_ref(ref, scope, bind_all=True)
        if ref.action is None:
            return ref
        if isinstance(e, A.CallExpr) and ref.call is not None:
            # the property's own expression mirrors the call built for the engine
            e.kind, e.target, e.method = ref.call.kind, ref.call.target, ref.call.method
            e.params, e.bound_args, e.type = ref.call.params, ref.call.bound_args, T.VOID
        listed = [r.action for r in table.actions]
        if ref.action not in listed:
            self.err(ref.loc, f"{what} '{ref.action.name}' is not in the actions of "
                              f"table '{table.name}'")
        if ref.call is not None:
            for p, a in zip(ref.call.params, ref.call.bound_args, strict=False):
                if p.direction == "" and a is not None and a.const_value is None \
                        and a.type is not POISON:
                    self.err(a.loc, f"argument '{p.name}' of {what} must be a constant")
        return ref

    def table_entry(self, en: A.TableEntry, table: A.TableDecl, key_types: list[T.P4Type],
                    scope: Scope) -> None:
        if not key_types:
            self.err(en.loc, f"table '{table.name}' has entries but no key")
            return
        en.keyset = self.keyset(en.keyset, key_types, scope)
        e = A.CallExpr(loc=en.action.loc, callee=en.action.name, args=en.action.args) \
            if en.action.has_args else en.action.name
        ref = self.action_call_prop(e, scope, table, "entry action")
        if ref is not None:
            ref.annotations = en.action.annotations
            en.action = ref
        prio = en.priority
        ann = A.find_annotation(en.annotations, "priority")
        if prio is not None:
            en.priority_value = self.const_int(prio, scope, "priority")
        elif ann is not None and ann.args and isinstance(ann.args[0], int):
            en.priority_value = ann.args[0]
        elif ann is not None:
            self.err(ann.loc, "@priority needs an integer")


def _extern_name(e: A.Expression | None) -> str | None:
    if e is None:
        return None
    t = e.type
    if isinstance(t, T.SpecializedType):
        t = t.base
    return t.name if isinstance(t, T.ExternType) else None
