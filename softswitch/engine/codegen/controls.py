"""Code generation: controls, actions, functions and tables (P4_16 spec sections 13, 14).

A control becomes `def CTL_n(P, <params>)` with a frame object `F` holding its
parameters and control-level variables; sub-control and sub-parser instances are
compiled once per instance path. Every action and function becomes
`def A_n(P, F, ...)`, every table a runtime `Table` (built by
`softswitch.engine.builder`) plus `def TA_T_n(P, F)` that looks it up and runs
the action.
"""

from __future__ import annotations

from typing import Any, cast

from softswitch.frontend import ast as A
from softswitch.frontend import types as T
from softswitch.frontend.ast import expr_text

from .analysis import calls_in, mentions_params
from .base import ActionInfo, CodegenBase, Emitter, ExternInfo, TableInfo, receiver_of
from .values import is_agg, rt, width_of


class ControlCode(CodegenBase):
    """Controls, actions, functions, instances and table apply functions; control-plane names."""

    def fq(self, decl: Any) -> str:
        """Fully-qualified control-plane name of a control/parser-local declaration."""
        if self.prefix_fq is not None:
            # inside a sub-instance: the instance path, then the @name (relative) or the name
            ann = A.find_annotation(getattr(decl, "annotations", None) or [], "name")
            local = ann.string_arg() if ann is not None else None
            if local and local.startswith("."):
                return local[1:]
            return f"{self.prefix_fq}.{local or decl.name}"
        if decl.fqname:
            return str(decl.fqname)
        return f"{self.block_fq}.{decl.name}" if self.block_fq else decl.name

    def action_name_of(self, decl: A.ActionDecl) -> str:
        return self.action_info(decl, decl).name

    def action_info(self, decl: A.ActionDecl, node: Any) -> ActionInfo:
        key = (id(decl), self.prefix if decl.owner is not None else "")
        info = self.action_by_decl.get(key)
        if info is None:
            raise self.err(node, f"action {decl.name} not found")
        return info

    def compile_action(self, decl: A.ActionDecl) -> ActionInfo:
        """Emit `def A(P, F, <directional params>, <action data>)`."""
        key = (id(decl), self.prefix if decl.owner is not None else "")
        if key in self.action_by_decl:
            return self.action_by_decl[key]
        gname = self.fresh("A_")
        name = self.fq(decl) if decl.owner is not None else (decl.fqname or decl.name)
        params = [(p.name, width_of(p.type)) for p in decl.params if not p.direction]
        info = ActionInfo(decl, name, gname, params)
        self.action_by_decl[key] = info
        self.actions.append(info)
        self.emit_callable(gname, decl.params, decl.body, self.facts.may_exit(decl))
        return info

    def compile_function(self, decl: A.FunctionDecl) -> str:
        gname = self.fresh("FN_")
        self.functions[id(decl)] = gname
        saved = (self.out, self.fn_outs)
        self.out = Emitter()
        self.emit_callable(gname, decl.params, decl.body)
        text = self.out
        self.out, self.fn_outs = saved
        self.deferred.append(text)
        return gname

    def emit_callable(self, gname: str, params: list[A.Param], body: A.BlockStmt,
                      may_exit: bool = False) -> None:
        e = self.out
        locals_ = []
        outs = []
        for p in params:
            local = self.fresh(f"a_{p.name}_")
            self.names[id(p)] = local
            locals_.append(local)
            if p.direction in ("out", "inout") and not is_agg(p.type):
                outs.append((local, p.name))
        e(f"def {gname}(P, F{''.join(', ' + x for x in locals_)}):")
        e.indent()
        saved = self.fn_outs
        self.fn_outs = outs
        for p, local in zip(params, locals_, strict=True):
            if p.direction == "out" and not is_agg(p.type):
                e(f"{local} = {self.default_value(p.type)}")
            pt = rt(p.type) if p.type is not None else None
            if not p.direction and isinstance(pt, T.Bits) and pt.signed:
                # action data arrives unsigned from the control plane
                e(f"{local} = {self.wrap(local, pt)}")
        self.body_with_outs(body.stmts, [o for o, _ in outs], may_exit)
        self.fn_outs = saved
        e.dedent()
        e("")

    def body_with_outs(self, stmts: list[A.Statement], outs: list[str], may_exit: bool) -> None:
        """A callee's body returning `(None, outs...)`; when it may run `exit`, the out values
        ride on the exception so that the caller still copies them out (spec 12.5.5)."""
        e = self.out
        if outs and may_exit:
            e("try:")
            e.indent()
            self.block(stmts)
            e.dedent()
            e("except _Exit as _x:")
            e(f"    _x.outs = (None, {', '.join(outs)})")
            e("    raise")
        else:
            self.block(stmts)
        if outs:
            e(f"return (None, {', '.join(outs)})")

    def frame_class(self, params: list[A.Param], locals_: list[Any]) -> tuple[str, list[str]]:
        """A frame class holding a block's parameters and control-level variables."""
        slots = []
        for p in params:
            # aggregates (never rebound, aliased by alias_params) and scalars get distinct slots
            acc = f"p_{p.name}" if is_agg(p.type) else f"s_{p.name}"
            self.names[id(p)] = f"F.{acc}"
            slots.append(acc)
            if is_agg(p.type):
                self.agg_params.add(acc)
        for d in locals_:
            if isinstance(d, A.VariableDecl):
                acc = self.fresh(f"l_{d.name}_")
                self.names[id(d)] = f"F.{acc}"
                slots.append(acc)
        name = self.fresh("FR")
        self.class_src(f"class {name}:")
        self.class_src(f"    __slots__ = {tuple(slots)!r}")
        self.class_src("")
        return name, slots

    def compile_control(self, decl: A.ControlDecl, prefix: str, prefix_fq: str | None) -> str:
        """Emit the control's actions, tables and `def CTL(P, <params>)`; returns its name."""
        saved = (self.prefix, self.prefix_fq)
        self.prefix, self.prefix_fq = prefix, prefix_fq
        frame, _ = self.frame_class(decl.params, decl.locals)
        for d in decl.locals:
            if isinstance(d, A.Instantiation):
                self.register_instance(d)
        for d in decl.locals:
            if isinstance(d, A.ActionDecl):
                self.compile_action(d)
        for d in decl.locals:
            if isinstance(d, A.TableDecl):
                self.compile_table(d)
        gname = self.fresh("CTL_")
        pnames = [f"a{i}" for i in range(len(decl.params))]
        e = self.out
        e(f"def {gname}(P{''.join(', ' + p for p in pnames)}):")
        e.indent()
        scalar_outs = any(p.direction in ("out", "inout") and not is_agg(p.type) for p in decl.params)
        if not decl.body.stmts and not scalar_outs and not any(isinstance(d, A.VariableDecl) for d in decl.locals):
            # an empty apply block (common for egress and the checksum controls): nothing to run
            e("return None")
            e.dedent()
            e("")
            self.prefix, self.prefix_fq = saved
            return gname
        e(f"F = {frame}()")
        for p, a in zip(decl.params, pnames, strict=True):
            e(f"{self.names[id(p)]} = {a}")
        for d in decl.locals:
            if isinstance(d, A.VariableDecl):
                acc = self.names[id(d)]
                e(f"{acc} = {self.value_copy(d.init) if d.init is not None else self.default_value(d.type)}")
        # scalar inout params are handed back to the caller (copy-out) as (None, outs...)
        outs = [(self.names[id(p)], p.name) for p in decl.params if p.direction in ("out", "inout") and not is_agg(p.type)]
        for p in decl.params:
            if p.direction == "out" and not is_agg(p.type):
                e(f"{self.names[id(p)]} = {self.default_value(p.type)}")
        saved_outs = self.fn_outs
        self.fn_outs = outs
        self.body_with_outs(decl.body.stmts, [o for o, _ in outs], self.facts.may_exit(decl))
        self.fn_outs = saved_outs
        e.dedent()
        e("")
        self.prefix, self.prefix_fq = saved
        return gname

    def register_instance(self, d: A.Instantiation) -> None:
        """Record an extern instance (or compile a sub-control/parser instance)."""
        t = d.type
        base = t.base if isinstance(t, T.SpecializedType) else t
        if isinstance(base, T.ControlType | T.ParserType):
            decl = base.decl
            if not isinstance(decl, A.ControlDecl | A.ParserDecl):
                raise self.err(d, f"cannot instantiate {base}")
            sub_fq = self.fq(d)
            self.sub_blocks[(id(d), self.prefix)] = self.compile_instance(
                decl, f"{self.prefix}/{d.name}", sub_fq, d.bound_args, self.apply_calls(d))
            return
        if not isinstance(base, T.ExternType):
            raise self.err(d, f"unsupported: instantiation of {base}")
        gname = self.fresh("X_")
        args = [self.ctor_value(a) for a in d.bound_args]
        targs = list(t.args) if isinstance(t, T.SpecializedType) else []
        info = ExternInfo(d, gname, self.fq(d), base.name, args, targs)
        self.externs.append(info)
        self.extern_by_decl[(id(d), self.prefix)] = info

    # ---- constructor parameters (spec 14) and direct invocation (spec 15.1)

    def compile_instance(self, decl: A.ControlDecl | A.ParserDecl, prefix: str, fq: str | None,
                         args: list[A.Expression | None],
                         calls: list[A.CallExpr] | None = None) -> str:
        """Compile one instance of a parser/control with its constructor arguments bound (and
        its extern-typed apply parameters, from the calls that apply it)."""
        bindings = {id(p): self.ctor_binding(a, p) for p, a in zip(decl.ctor_params, args,
                                                                 strict=False)}
        bindings.update(self.extern_apply_params(decl, calls or []))
        saved = self.ctor_bindings
        self.ctor_bindings = {**saved, **bindings}
        try:
            if isinstance(decl, A.ControlDecl):
                return self.compile_control(decl, prefix, fq)
            return self.compile_parser(decl, prefix, fq)
        finally:
            self.ctor_bindings = saved

    def ctor_binding(self, a: A.Expression | None, p: A.Param) -> tuple[str, Any]:
        """What a constructor parameter stands for in the instance being compiled: a value,
        a compiled block (its function name and declaration), or an extern instance."""
        if a is None:
            raise self.err(p, f"no value for constructor parameter '{p.name}'")
        if isinstance(a, A.PathExpr):
            d = a.decl
            if isinstance(d, A.Param) and id(d) in self.ctor_bindings:
                return self.ctor_bindings[id(d)]
            if isinstance(d, A.Instantiation):
                t = d.type.base if isinstance(d.type, T.SpecializedType) else d.type
                if isinstance(t, T.ParserType):
                    return ("block", (self.sub_blocks[(id(d), self.prefix)], t.decl))
                return ("extern", self.extern_info(d, a))
        if isinstance(a, A.CallExpr) and a.kind is A.CallKind.CONSTRUCTOR and \
                isinstance(a.target, A.ControlDecl | A.ParserDecl):
            decl = a.target
            fq = f"{self.prefix_fq or self.block_fq}.{p.name}"
            gname = self.detached(lambda: self.compile_instance(
                decl, f"{self.prefix}/{p.name}#{id(a)}", fq, list(a.bound_args)))
            return ("block", (gname, decl))
        return ("value", self.ctor_value(a))

    def apply_calls(self, inst: A.Instantiation) -> list[A.CallExpr]:
        """The calls applying a parser/control instance, anywhere in the program."""
        if self._apply_calls is None:
            found: dict[int, list[A.CallExpr]] = {}
            for n in calls_in(self.program.ast):
                if n.kind in (A.CallKind.CONTROL_APPLY, A.CallKind.PARSER_APPLY):
                    found.setdefault(id(n.target), []).append(n)
            self._apply_calls = found
        return self._apply_calls.get(id(inst), [])

    def extern_apply_params(self, decl: A.ControlDecl | A.ParserDecl,
                            calls: list[A.CallExpr]) -> dict[int, tuple[str, Any]]:
        """An extern passed as a (directionless) apply argument: the instance is compiled for
        the extern its calls pass, which must be the same one at every call."""
        out: dict[int, tuple[str, Any]] = {}
        for j, p in enumerate(decl.params):
            if p.direction or not _is_extern_type(p.type) or \
                    getattr(p.type, "name", "") in ("packet_in", "packet_out"):
                continue  # (packets are the context P)
            infos = {}
            for c in calls:
                a = c.bound_args[j] if j < len(c.bound_args) else None
                if isinstance(a, A.PathExpr):
                    info = self.extern_info(a.decl, a)
                    infos[info.gname] = info
            if len(infos) > 1:
                raise self.err(decl, f"unsupported: '{decl.name}' applied with different "
                                     f"externs for '{p.name}'")
            if infos:
                out[id(p)] = ("extern", next(iter(infos.values())))
        return out

    def ctor_value(self, a: A.Expression | None) -> Any:
        """The compile-time value of an argument (a constructor parameter passed on included)."""
        if a is None:
            return None
        if isinstance(a, A.PathExpr) and isinstance(a.decl, A.Param):
            bound = self.ctor_bindings.get(id(a.decl))
            if bound is not None and bound[0] == "value":
                return bound[1]
        return a.const_value

    def detached(self, compile_fn: Any) -> str:
        """Compile a block while another is being compiled: its code goes to its own buffer
        (emitted before the module body) and the state of the outer compilation is kept."""
        saved = (self.out, self.fn_outs, self.loop_updates, self.state_names, self.nesting)
        self.out = Emitter()
        self.fn_outs, self.loop_updates, self.nesting = [], [], 0
        try:
            name: str = compile_fn()
        finally:
            self.deferred.append(self.out)
            self.out, self.fn_outs, self.loop_updates, self.state_names, self.nesting = saved
        return name

    def block_of(self, c: A.CallExpr) -> tuple[str, Any]:
        """The compiled block (function name, declaration) a parser/control apply runs."""
        target = c.target
        if isinstance(target, A.Instantiation):
            gname = self.sub_blocks.get((id(target), self.prefix))
            t = target.type.base if isinstance(target.type, T.SpecializedType) else target.type
            if gname is not None:
                return gname, getattr(t, "decl", None)
        elif isinstance(target, A.Param):
            bound = self.ctor_bindings.get(id(target))
            if bound is not None and bound[0] == "block":
                block: tuple[str, Any] = bound[1]
                return block
        else:
            # `Type.apply(...)`: a local instance per invocation, named after the type
            t = getattr(receiver_of(c), "type", None)
            decl = getattr(t, "decl", None)
            if isinstance(decl, A.ControlDecl | A.ParserDecl):
                key = (id(c), self.prefix)
                gname = self.sub_blocks.get(key)
                if gname is None:
                    fq = f"{self.prefix_fq or self.block_fq}.{decl.name}"
                    gname = self.detached(lambda: self.compile_instance(
                        decl, f"{self.prefix}/{decl.name}#{id(c)}", fq, [], [c]))
                    self.sub_blocks[key] = gname
                return gname, decl
        raise self.err(c, "parser/control instance not found")

    def call_subcontrol(self, c: A.CallExpr) -> str:
        gname, decl = self.block_of(c)
        params = decl.params if decl is not None else []
        bound = self.bind_call(c, params, skip_data=False, callee=decl)
        code = f"{gname}(P{''.join(', ' + a for a in bound.codes)})"
        may_exit = decl is not None and self.facts.may_exit(decl)
        return self.finish_call(code, bound, want_value=False, may_exit=may_exit) or ""

    def call_subparser(self, c: A.CallExpr) -> str:
        gname, decl = self.block_of(c)
        params = decl.params if decl is not None else []
        bound = self.bind_call(c, params, skip_data=False, callee=decl)
        code = f"{gname}(P{''.join(', ' + a for a in bound.codes)})"
        return self.finish_call(code, bound, want_value=False, may_exit=False) or ""

    def compile_table(self, d: A.TableDecl) -> TableInfo:
        gname = self.fresh("T_")
        name = self.fq(d)
        keys = [(k.name, k.match_kind, _key_width(k.expr.type)) for k in d.keys]
        actions = []
        for ref in d.actions:
            ainfo = self.action_info(ref.action, ref)
            fn = ainfo.gname
            if any(p.direction for p in ref.action.params) and ref.call is not None:
                # the directional arguments written in the actions list are evaluated each
                # time the table runs the action (spec 14.2.1.2)
                wrapper = self.fresh("W_")
                e = self.out
                e(f"def {wrapper}(P, F, *d):")
                e.indent()
                bound = self.bind_call(ref.call, ref.action.params, skip_data=True,
                                       callee=ref.action)
                code = f"{fn}(P, F, {''.join(x + ', ' for x in bound.codes)}*d)"
                line = self.finish_call(code, bound, want_value=False,
                                        may_exit=self.facts.may_exit(ref.action))
                if line:
                    e(line)
                e.dedent()
                e("")
                fn = wrapper
            actions.append((ainfo.name, ref, fn))
        info = TableInfo(d, name, gname, keys, actions)
        impl = d.implementation
        if impl is not None:
            if isinstance(impl, A.PathExpr):
                info.profile = self.extern_info(impl.decl, impl).gname
            else:
                # inline constructor: an anonymous profile owned by the table
                pg = self.fresh("X_")
                ctor = cast(A.CallExpr, impl)
                ctor_args = [a.const_value if a is not None else None for a in ctor.bound_args]
                tname = "action_selector" if len(ctor_args) >= 3 else "action_profile"
                self.externs.append(ExternInfo(impl, pg, self.impl_name(d), tname, ctor_args))
                info.profile = pg
        for prop, attr in ((d.counters, "direct_counter"), (d.meters, "direct_meter")):
            if prop is not None:
                if isinstance(prop, A.PathExpr):
                    setattr(info, attr, self.extern_info(prop.decl, prop).gname)
                else:
                    raise self.err(prop, "direct resources must be declared as instances")
        self.tables.append(info)
        self.table_by_decl[(id(d), self.prefix)] = info
        self.emit_table_apply(info)
        return info

    def direct_meter_targets(self, info: TableInfo) -> list[A.Expression]:
        """Destinations of `<direct meter>.read(dest)` in the table's actions (first of each kind)."""
        meter = info.decl.meters.decl if isinstance(info.decl.meters, A.PathExpr) else None
        found: list[A.Expression] = []
        seen: set[str] = set()
        for _, ref, _ in info.actions:
            for call in calls_in(ref.action.body):
                if call.kind is A.CallKind.EXTERN_METHOD and call.target is meter and call.method == "read":
                    dest = call.bound_args[0]
                    # a destination naming an action parameter cannot be written outside the action
                    if dest is None or mentions_params(dest, ref.action.params):
                        continue
                    text = expr_text(dest)
                    if text not in seen:
                        seen.add(text)
                        found.append(dest)
        return found

    def impl_name(self, d: A.TableDecl) -> str:
        info = getattr(self.program, "info", None)
        for tinfo in getattr(info, "tables", []) or []:
            if getattr(tinfo, "name", None) == self.fq(d):
                impl = getattr(tinfo, "implementation", None)
                if impl:
                    return str(impl)
        return self.fq(d) + "_profile"

    def key_codes(self, d: A.TableDecl) -> tuple[list[str], list[tuple[str, int]]]:
        """Codes of the match keys and of the selector keys, evaluated in order (spec 14.2.1.1)."""
        codes = self.operands([k.expr for k in d.keys])
        key_exprs: list[str] = []
        sel_exprs: list[tuple[str, int]] = []
        for k, code in zip(d.keys, codes, strict=True):
            kt = rt(k.expr.type)
            if isinstance(kt, T.BoolType):
                code = f"(1 if {code} else 0)"
            elif isinstance(kt, T.EnumType | T.ErrorType):
                code = f"_midx({tuple(kt.members)!r}, {code})"  # as BMv2: the member's number
            elif isinstance(kt, T.Bits) and kt.signed:
                code = f"({code} & {hex((1 << kt.width) - 1)})"  # the control plane speaks unsigned
            if k.match_kind == "selector":
                sel_exprs.append((code, width_of(k.expr.type)))
            else:
                key_exprs.append(code)
        return key_exprs, sel_exprs

    def emit_table_apply(self, info: TableInfo) -> None:
        e = self.out
        g = info.gname
        e(f"def TA_{g}(P, F):")
        e.indent()
        key_exprs, sel_exprs = self.key_codes(info.decl)
        key = "(" + "".join(k + ", " for k in key_exprs) + ")"
        e(f"_e = {g}.lookup({key})")
        e("if _e is None:")
        e(f"    {g}.default_fn(P, F, *{g}.default_args)")
        e(f"    return (False, {g}.default_action)")
        if info.direct_counter:
            e("_e.packets += 1")
            e("_e.bytes += P.length")
        if info.direct_meter:
            # BMv2 executes the direct meter on every hit, before the action, and writes the
            # colour to the destination of the program's read() whatever action runs
            amount = f"(1 if {info.direct_meter}.unit == 'packets' else P.length)"
            e(f"P.dm = _e.meter.execute({amount}, P.now) if _e.meter is not None else 0")
            for dest in self.direct_meter_targets(info):
                self.assign(dest, self.wrap("P.dm", dest.type))
        if info.profile:
            pg = info.profile
            e("if _e.member is not None:")
            e(f"    _name, _args, _fn = {pg}.members[_e.member]")
            e("else:")
            e.indent()
            e(f"_g = {pg}.groups[_e.group]")
            e("if not _g:")
            e(f"    {g}.default_fn(P, F, *{g}.default_args)")
            e(f"    return (False, {g}.default_action)")
            packed, nbits = self.packed(sel_exprs)
            e(f"_name, _args, _fn = {pg}.members[_g[_sel(P, {pg}, {packed}, {nbits}) % len(_g)]]")
            e.dedent()
            e("_fn(P, F, *_args)")
            e("return (True, _name)")
        else:
            e("_e.fn(P, F, *_e.args)")
            e("return (True, _e.action)")
        e.dedent()
        e("")


def _key_width(t: T.P4Type) -> int:
    """Width of a match key; an error or plain enum key is its member number in 32 bits."""
    return 32 if isinstance(rt(t), T.EnumType | T.ErrorType) else width_of(t)


def _is_extern_type(t: T.P4Type | None) -> bool:
    base = t.base if isinstance(t, T.SpecializedType) else t
    return isinstance(base, T.ExternType)
