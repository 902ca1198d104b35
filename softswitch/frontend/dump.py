"""Readable dumps of the syntax tree (`--dump-ast`) and checked IR (`--dump-ir`)."""

from __future__ import annotations

from typing import Any

from . import ast as A
from .preprocess import P4INCLUDE

_SKIP = {"loc", "type", "const_value", "decl", "target", "owner", "action", "field", "resolved",
         "params", "type_args", "fqname", "receiver", "bound_args", "kind", "method", "index",
         "hi_value", "lo_value", "size_value", "priority_value", "call", "blocks", "properties"}


def _from_include(d: A.Node) -> bool:
    return d.loc.file.endswith(("core.p4", "v1model.p4")) and (
        str(P4INCLUDE.name) in d.loc.file or "/" not in d.loc.file or d.loc.file.startswith("<"))


def dump_program(prog: Any, with_types: bool = False) -> str:
    """The user's declarations (not core.p4 / v1model.p4), one node per line."""
    out: list[str] = []
    for d in prog.ast.decls:
        if _from_include(d):
            continue
        _dump(d, 0, out, with_types, None)
    return "\n".join(out)


def _label(n: A.Node, with_types: bool) -> str:
    parts = [type(n).__name__]
    for attr in ("name", "op", "member", "direction", "match_kind", "value", "label"):
        v = getattr(n, attr, None)
        if isinstance(v, str | int | bool) and v != "" and not isinstance(n, A.SwitchCase):
            parts.append(f"{attr}={v!r}")
    if isinstance(n, A.Annotation):
        return str(n)
    if with_types:
        if getattr(n, "fqname", None):
            parts.append(f"fqname={n.fqname}")
        if isinstance(n, A.Expression) and n.type is not None:
            parts.append(f": {n.type}")
        if isinstance(n, A.Expression) and n.const_value is not None:
            parts.append(f"= {n.const_value!r}")
        if isinstance(n, A.PathExpr) and n.decl is not None:
            parts.append(f"-> {type(n.decl).__name__} {getattr(n.decl, 'name', '')}")
        if isinstance(n, A.MemberExpr) and n.kind is not None:
            parts.append(f"[{n.kind.value}]")
        if isinstance(n, A.CallExpr) and n.kind is not None:
            parts.append(f"[{n.kind.value}]")
        if isinstance(n, A.TypeRef) and n.resolved is not None:
            parts.append(f"=> {n.resolved}")
        if isinstance(n, A.Param) and n.type is not None:
            parts.append(f": {n.type}")
    return " ".join(parts)


def _dump(n: Any, depth: int, out: list[str], with_types: bool, key: str | None) -> None:
    pad = "  " * depth
    prefix = f"{key}: " if key else ""
    if isinstance(n, A.Node):
        out.append(f"{pad}{prefix}{_label(n, with_types)}")
        for k, v in vars(n).items():
            if k in _SKIP or v is None or v == [] or isinstance(v, str | int | bool):
                continue
            if isinstance(n, A.TableDecl) and k == "properties":
                continue
            _dump(v, depth + 1, out, with_types, k)
        if isinstance(n, A.TableDecl) and not n.keys and not n.actions:
            for p in n.properties:
                _dump(p, depth + 1, out, with_types, "property")
    elif isinstance(n, list | tuple):
        for item in n:
            if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
                _dump(item[1], depth, out, with_types, item[0])
            else:
                _dump(item, depth, out, with_types, key)
    elif isinstance(n, A.Node.__class__):
        return
