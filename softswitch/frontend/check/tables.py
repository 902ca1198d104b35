"""Checking pass: tables (P4_16 spec section 14.2).

Table properties become fields of the `TableDecl` (keys, actions, default
action, const entries, size, implementation, direct counters and meters); an
extern constructed inline in a property becomes a local instance of the
control, named as p4c names it.
"""

from __future__ import annotations

from typing import Any

from .. import ast as A
from .. import names
from .. import types as T
from ..ast import expr_text
from .base import CheckerBase
from .scope import Scope
from .table_rules import check_entry_key, entry_priorities, key_name
from .typeops import POISON

_TABLE_PROPS = {"key", "actions", "default_action", "entries", "size", "implementation",
                "counters", "meters", "support_timeout", "largest_priority_wins",
                "priority_delta"}


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
            if prop.name == "entries" and "key" not in seen and any(
                    q.name == "key" for q in d.properties):
                self.err(prop.loc, "Entries list must be after table key")
            if prop.name not in _TABLE_PROPS:
                # p4c-bm2-ss ignores a property v1model does not define, with this warning
                self.r.warning(prop.loc, f"Unknown table property: {prop.name}")
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
                    name = (ann.string_arg() if ann else None) or key_name(k.expr)
                    if name is None:
                        self.err(k.expr.loc, f"{expr_text(k.expr)}: Complex key expression "
                                             f"requires a @name annotation")
                    k.name = name or expr_text(k.expr)
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
        largest_wins, priority_delta = True, 1
        for prop in d.properties:
            if prop.name == "default_action" and prop.name in seen:
                d.default_action = self.action_call_prop(prop.value, scope, d, "default_action")
                d.default_action_const = prop.const
            elif prop.name == "entries":
                d.entries = prop.value
                d.entries_const = prop.const
                for en in d.entries:
                    self.table_entry(en, d, key_types, scope)
            elif prop.name == "support_timeout":
                d.support_timeout = self.bool_property(prop, scope)
            elif prop.name == "largest_priority_wins":
                largest_wins = self.bool_property(prop, scope)
            elif prop.name == "priority_delta":
                delta = self.const_int(prop.value, scope, "priority_delta")
                if delta is not None and delta <= 0:
                    self.err(prop.value.loc, f"{delta} must be a positive value")
                priority_delta = delta if delta is not None and delta > 0 else 1
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
        entry_priorities(d, largest_wins, priority_delta, self.err, self.r.warning)
        if not d.actions and "actions" not in seen:
            self.err(d.loc, f"table '{d.name}' has no 'actions' property")
        elif "default_action" not in seen:
            self.implicit_default_action(d, scope)
        has_selector = any(k.match_kind == "selector" for k in d.keys)
        impl_name = _extern_name(d.implementation)
        if impl_name == "action_selector" and not has_selector:
            self.err(d.loc, f"table '{d.name}' uses an action_selector but has no 'selector' key")

    def implicit_default_action(self, d: A.TableDecl, scope: Scope) -> None:
        """A table without `default_action` has `NoAction` as its (non-const) default, listed
        as `@defaultonly` when not in its actions (spec 14.2.1.3; p4c's CreateBuiltins)."""
        found = self.global_scope.lookup("NoAction")
        if not found or not isinstance(found[-1], A.ActionDecl):
            self.err(d.loc, "Declaration of the action NoAction not found; did you include "
                            "core.p4?")
            return
        if not any(r.name.name == "NoAction" for r in d.actions):
            ref = A.ActionRef(loc=d.loc, name=A.PathExpr(loc=d.loc, name="NoAction", absolute=True),
                              annotations=[A.Annotation(loc=d.loc, name="defaultonly")])
            self.action_ref(ref, scope, bind_all=False)
            d.actions.append(ref)
        default = A.PathExpr(loc=d.loc, name="NoAction", absolute=True)
        d.default_action = self.action_call_prop(default, scope, d, "default_action")
        d.default_action_const = False

    def table_extern_prop(self, prop: A.TableProperty, scope: Scope, kinds: tuple[str, ...],
                          table: A.TableDecl, owner: Any) -> A.Expression:
        e: A.Expression = prop.value
        if isinstance(e, A.CallExpr) and isinstance(e.callee, A.TypeNameExpr):
            # an anonymous instance (`implementation = action_profile(128);`): declared here
            # as a local of the control; p4c names it by the property's own name, @name or
            # else the property name, without the control's prefix
            if A.find_annotation(prop.annotations, "name") is None:
                self.err(prop.loc, f"Table '{table.fqname}' has an anonymous table property "
                                   f"'{prop.name}' with no name annotation, which is not "
                                   f"supported by P4Runtime")
            cp_name = names.local_name(prop)
            annotations = [a for a in prop.annotations if a.name != "name"]
            annotations.append(A.Annotation(loc=prop.loc, name="name", text=f'".{cp_name}"',
                                            args=[f".{cp_name}"]))
            inst = A.Instantiation(loc=e.loc, name=table.name, annotations=annotations,
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
                    self.no_table_apply_in(call.bound_args)
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
        listed = [r for r in table.actions if r.action is ref.action]
        if not listed:
            self.err(ref.loc, f"{what} '{ref.action.name}' is not in the actions of "
                              f"table '{table.name}'")
        elif what == "default_action" and A.find_annotation(listed[0].annotations, "tableonly"):
            self.err(ref.loc, "default_action: Action marked with tableonly used as default "
                              "action")
        elif what == "entry action" and A.find_annotation(listed[0].annotations, "defaultonly"):
            self.err(ref.loc, "Entry: Action marked with defaultonly used in table")
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
        items = en.keyset.items if isinstance(en.keyset, A.ListExpr) else [en.keyset]
        if len(items) == len(table.keys):
            for item, k in zip(items, table.keys, strict=True):
                check_entry_key(item, k.match_kind, k.expr.type, self.err, self.r.warning)
        e = A.CallExpr(loc=en.action.loc, callee=en.action.name, args=en.action.args) \
            if en.action.has_args else en.action.name
        ref = self.action_call_prop(e, scope, table, "entry action")
        if ref is not None:
            ref.annotations = en.action.annotations
            en.action = ref
        if en.priority is not None:
            self.const_int(en.priority, scope, "priority")

    def bool_property(self, prop: A.TableProperty, scope: Scope) -> bool:
        """A table property whose value is a compile-time bool (`support_timeout = true`)."""
        e = prop.value = self.expr(prop.value, scope, T.BOOL)
        if not isinstance(e.const_value, bool):
            if e.type is not POISON:
                self.err(e.loc, f"table property '{prop.name}' must be a boolean constant")
            return False
        return e.const_value


def _extern_name(e: A.Expression | None) -> str | None:
    if e is None:
        return None
    t = e.type
    if isinstance(t, T.SpecializedType):
        t = t.base
    return t.name if isinstance(t, T.ExternType) else None
