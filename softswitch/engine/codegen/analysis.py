"""Facts about the checked AST that code generation needs: effects, l-value paths, exits.

Pure functions of the AST, walked without recursion (the depth of a program's
syntax tree is the user's); `Facts` memoises the per-declaration ones.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from softswitch.frontend import ast as A

# fields of AST nodes that refer to other declarations rather than hold children
_REFERENCES = frozenset({"decl", "target", "type", "field", "action", "loc", "owner", "resolved",
                         "params", "type_args", "const_value"})

# calls that never change state (spec 8.17 isValid; lookahead does not advance; length)
PURE_CALLS = frozenset({A.CallKind.HEADER_IS_VALID, A.CallKind.PACKET_LOOKAHEAD,
                        A.CallKind.PACKET_LENGTH})


def walk(node: Any) -> Iterator[A.Node]:
    """Every AST node at or below `node` (dataclass fields, lists), depth first, iteratively."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, list | tuple):
            stack.extend(n)
            continue
        if not isinstance(n, A.Node):
            continue
        yield n
        for name in getattr(n, "__dataclass_fields__", {}):
            if name not in _REFERENCES:
                stack.append(getattr(n, name))


def calls_in(node: Any) -> list[A.CallExpr]:
    """Every call at or below `node`."""
    return [n for n in walk(node) if isinstance(n, A.CallExpr)]


def mentions_params(expr: Any, params: list[Any]) -> bool:
    """True when `expr` names one of `params`."""
    ids = {id(p) for p in params}
    return any(isinstance(n, A.PathExpr) and id(n.decl) in ids for n in walk(expr))


# An l-value as a root declaration and the path below it: field names, constant
# indexes, or ANY for a run-time index / .next / .last (which may be any element).
ANY = object()
LPath = tuple[Any, tuple[Any, ...]]


def lvalue_path(e: A.Expression | None) -> LPath | None:
    """(root declaration, path) of an l-value expression; None when `e` is not one."""
    steps: list[Any] = []
    while True:
        if isinstance(e, A.PathExpr):
            return e.decl, tuple(reversed(steps))
        if isinstance(e, A.MemberExpr):
            if e.kind is A.MemberKind.FIELD:
                steps.append(e.member)
            elif e.kind in (A.MemberKind.STACK_NEXT, A.MemberKind.STACK_LAST):
                steps.append(ANY)
            else:
                return None
            e = e.expr
        elif isinstance(e, A.IndexExpr):
            idx = e.index.const_value
            steps.append(idx if isinstance(idx, int) and not isinstance(idx, bool) else ANY)
            e = e.expr
        elif isinstance(e, A.SliceExpr):
            steps.clear()  # a slice stands for the whole scalar it cuts
            e = e.expr
        else:
            return None


def overlaps(a: LPath | None, b: LPath | None) -> bool:
    """True when two l-values may share storage (one path is a prefix of the other)."""
    if a is None or b is None or a[0] is not b[0]:
        return False
    for x, y in zip(a[1], b[1], strict=False):
        if x is ANY or y is ANY:
            continue
        if x != y:
            return False
    return True


class Facts:
    """Memoised facts about declarations: effects of expressions, names an action reaches,
    whether a callee may execute `exit` (spec 12.5.5)."""

    def __init__(self) -> None:
        self._effects: dict[int, bool] = {}
        self._mentions: dict[int, frozenset[int]] = {}
        self._exits: dict[int, bool] = {}

    def effectful(self, e: A.Node | None) -> bool:
        """True when evaluating `e` may change state: it calls something not known pure."""
        if e is None:
            return False
        key = id(e)
        hit = self._effects.get(key)
        if hit is None:
            hit = any(isinstance(n, A.CallExpr) and n.kind not in PURE_CALLS for n in walk(e))
            self._effects[key] = hit
        return hit

    def mentions(self, action: A.ActionDecl) -> frozenset[int]:
        """ids of every declaration an action names, through the actions it calls."""
        key = id(action)
        hit = self._mentions.get(key)
        if hit is not None:
            return hit
        seen: set[int] = set()
        names: set[int] = set()
        todo = [action]
        while todo:
            a = todo.pop()
            if id(a) in seen:
                continue
            seen.add(id(a))
            for n in walk(a.body):
                if isinstance(n, A.PathExpr) and n.decl is not None:
                    names.add(id(n.decl))
                elif isinstance(n, A.CallExpr) and n.kind is A.CallKind.ACTION and n.target is not None:
                    todo.append(n.target)
        result = frozenset(names)
        self._mentions[key] = result
        return result

    def may_exit(self, decl: Any) -> bool:
        """True when running `decl` (an action or a control) may execute `exit`."""
        key = id(decl)
        hit = self._exits.get(key)
        if hit is not None:
            return hit
        self._exits[key] = False  # P4 has no recursion; guards against malformed input
        body = getattr(decl, "body", None)
        result = False
        for n in walk(body):
            if isinstance(n, A.ExitStmt):
                result = True
            elif isinstance(n, A.CallExpr):
                result = self._call_may_exit(n)
            if result:
                break
        self._exits[key] = result
        return result

    def _call_may_exit(self, c: A.CallExpr) -> bool:
        k = c.kind
        if k is A.CallKind.ACTION:
            return self.may_exit(c.target)
        if k is A.CallKind.TABLE_APPLY and c.target is not None:
            table = c.target
            refs = list(table.actions)
            if table.default_action is not None:
                refs.append(table.default_action)
            return any(r.action is not None and self.may_exit(r.action) for r in refs)
        if k is A.CallKind.CONTROL_APPLY:
            if isinstance(c.target, A.Param):
                return True  # a control passed to the constructor: not known here
            # an instance, or `Type.apply()` (direct invocation: the receiver's type)
            t = getattr(c.target if c.target is not None else c.receiver, "type", None)
            base = getattr(t, "base", t)
            decl = getattr(base, "decl", None)
            return isinstance(decl, A.ControlDecl) and self.may_exit(decl)
        return False
