"""Lexical scopes of the checker and the declarations it puts in them itself."""

from __future__ import annotations

from typing import Any

from .. import ast as A
from .. import types as T


class TypeParamDecl:
    """A generic type parameter in scope."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.type = T.TypeVar(name)


class BuiltinState(A.ParserState):
    """`accept` / `reject`."""


class Scope:
    """A lexical scope: names to declarations, with a parent."""

    def __init__(self, parent: Scope | None = None, kind: str = "block", owner: Any = None) -> None:
        self.parent = parent
        self.names: dict[str, list[Any]] = {}
        self.kind = kind
        self.owner = owner

    def declare(self, name: str, decl: Any) -> None:
        """Add `decl` under `name` (overloads accumulate)."""
        self.names.setdefault(name, []).append(decl)

    def lookup(self, name: str) -> list[Any]:
        """The declarations of `name` in the nearest scope that has it, else []."""
        s: Scope | None = self
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        return []
