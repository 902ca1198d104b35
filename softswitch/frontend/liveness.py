"""Which declarations a program uses, as p4c's front end decides before writing P4Info.

p4c folds constants, drops the branches a constant condition never takes (`if
(false)`, `false ? a : b`, `false && x`), then removes every table, action, value
set, parser or control instance (and so every table and action inside it) that
no remaining expression refers to (frontends/p4/unusedDeclarations.cpp, run until
nothing changes). Extern instances are kept even when unused. The P4Info it
writes lists what is left; `Program.info` does the same with this module.

The walk starts at the main package's blocks and follows references: a table
applied, an action called or listed by a used table, a sub-parser or sub-control
instance applied, a function called, a value set selected on. P4Info is written
after p4c's mid end, which inlines the actions an action calls: an action used
only that way is not listed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from . import ast as A

# fields of nodes that refer to other declarations instead of containing children
_REFERENCE_FIELDS = frozenset({
    "decl", "target", "type", "owner", "action", "field", "resolved", "const_value", "loc",
    "params", "type_args", "blocks", "receiver", "annotations",
})
_REFERABLE = (A.ActionDecl, A.TableDecl, A.FunctionDecl, A.Instantiation, A.ValueSetDecl,
              A.ParserDecl, A.ControlDecl)


class Liveness:
    """The set of used declarations of a checked program (see the module docstring)."""

    def __init__(self, roots: Iterable[Any]) -> None:
        self._live: set[int] = set()
        self._work: list[Any] = []
        for r in roots:
            if r is not None:
                self._mark(r)
        while self._work:
            self._visit_decl(self._work.pop())

    def __contains__(self, decl: Any) -> bool:
        return id(decl) in self._live

    def _mark(self, d: Any) -> None:
        if isinstance(d, _REFERABLE) and id(d) not in self._live:
            self._live.add(id(d))
            self._work.append(d)

    def _visit_decl(self, d: Any) -> None:
        if isinstance(d, A.ControlDecl):
            self._walk_locals(d.locals)
            self._walk(d.body)
        elif isinstance(d, A.ParserDecl):
            self._walk_locals(d.locals)
            for st in d.states:
                self._walk(st.stmts)
                self._walk(st.transition)
        elif isinstance(d, A.TableDecl):
            self._walk([k.expr for k in d.keys])
            refs = list(d.actions)
            if d.default_action is not None:
                refs.append(d.default_action)
            refs.extend(en.action for en in d.entries or [])
            for ref in refs:
                self._mark(ref.action)
                if ref.call is not None:
                    self._walk(ref.call.bound_args)
            self._walk([en.keyset for en in d.entries or []])
            self._walk([d.implementation, d.counters, d.meters])
        elif isinstance(d, A.ActionDecl):
            # p4c's mid end inlines the actions an action calls and then drops them, unless
            # something else uses them
            self._walk(d.body, inlining=True)
        elif isinstance(d, A.FunctionDecl):
            self._walk(d.body)
        elif isinstance(d, A.Instantiation):
            self._walk(d.bound_args)
            t = getattr(d.type, "base", d.type)
            self._mark(getattr(t, "decl", None))

    def _walk_locals(self, decls: list[Any]) -> None:
        for d in decls:
            if isinstance(d, A.VariableDecl):
                self._walk(d.init)
            elif isinstance(d, A.Instantiation):
                t = getattr(d.type, "base", d.type)
                if not isinstance(getattr(t, "decl", None), A.ParserDecl | A.ControlDecl):
                    self._mark(d)  # extern instances are never removed

    def _walk(self, node: Any, inlining: bool = False) -> None:
        stack = [node]
        inlined: set[int] = set()
        while stack:
            n = stack.pop()
            if isinstance(n, list | tuple):
                stack.extend(n)
                continue
            if not isinstance(n, A.Node):
                continue
            target = n.decl if isinstance(n, A.PathExpr) else \
                n.target if isinstance(n, A.CallExpr) else None
            if inlining and isinstance(target, A.ActionDecl):
                if id(target) not in inlined:  # its body is part of the caller's
                    inlined.add(id(target))
                    stack.append(target.body)
            elif target is not None:
                self._mark(target)
            elif isinstance(n, A.SwitchCase):
                self._mark(n.action)
            elif isinstance(n, A.DeclStmt):
                stack.append(getattr(n.decl, "init", None) or getattr(n.decl, "value", None))
                continue
            stack.extend(_live_children(n))


def _const_bool(e: Any) -> bool | None:
    v = getattr(e, "const_value", None)
    return v if isinstance(v, bool) else None


def _live_children(n: A.Node) -> Iterator[Any]:
    """The children of `n` that run, leaving out branches a constant condition never takes."""
    if isinstance(n, A.IfStmt) and _const_bool(n.cond) is not None:
        yield n.cond
        yield n.then if _const_bool(n.cond) else n.otherwise
        return
    if isinstance(n, A.TernaryExpr) and _const_bool(n.cond) is not None:
        yield n.cond
        yield n.then if _const_bool(n.cond) else n.otherwise
        return
    if isinstance(n, A.BinaryExpr) and n.op in ("&&", "||") and _const_bool(n.left) is not None:
        yield n.left
        if _const_bool(n.left) == (n.op == "&&"):
            yield n.right
        return
    if isinstance(n, A.CallExpr) and n.bound_args:
        yield n.callee
        yield n.bound_args  # in parameter order, defaults included
        return
    for k, v in vars(n).items():
        if k not in _REFERENCE_FIELDS:
            yield v
