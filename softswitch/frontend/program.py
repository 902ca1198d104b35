"""The checked program handed to the engine and to the P4Runtime server."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import ast
from . import types as t
from .info import ProgramInfo


@dataclass(frozen=True)
class MainPackage:
    """The top-level `V1Switch(...) main;` resolved to its six blocks.

    Each block is the ParserDecl / ControlDecl instantiated in that position;
    `*_args` are the constructor arguments given (usually empty).
    """

    package: str
    parser: ast.ParserDecl
    verify_checksum: ast.ControlDecl
    ingress: ast.ControlDecl
    egress: ast.ControlDecl
    compute_checksum: ast.ControlDecl
    deparser: ast.ControlDecl
    instantiation: ast.Instantiation | None = None


@dataclass
class Program:
    """Result of compile_*: checked AST, resolved types, main package and P4Info-like info."""

    ast: ast.P4Program
    main: MainPackage | None
    info: ProgramInfo
    error_type: t.ErrorType
    match_kind_type: t.MatchKindType
    types: dict[str, t.P4Type] = field(default_factory=dict)  # top-level named types
    source_file: str = ""
    warnings: list[Any] = field(default_factory=list)
