"""compile_file / compile_source: preprocess -> parse -> check -> Program."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from . import ast as A
from .checker import Checker
from .diagnostics import P4Error, Reporter
from .info import build_info
from .limits import check_resolved_tree, check_syntax_tree
from .parser import parse
from .preprocess import Preprocessed, display_name, preprocess
from .program import MainPackage, Program

_BLOCK_FIELDS = ("parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser")


def compile_file(path: str | os.PathLike, include_dirs=(), defines=None) -> Program:
    """Compile a .p4 file; raises P4Error with every diagnostic on failure."""
    p = Path(path)
    name = display_name(str(p))
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise P4Error([_plain(name, f"cannot read file: {exc.strerror or exc}")]) from None
    return compile_source(text, filename=name, include_dirs=include_dirs, defines=defines,
                          base_dir=str(p.resolve().parent))


def compile_source(text: str, filename: str = "<string>", include_dirs=(), defines=None,
                   base_dir: str | None = None, *, self_contained: bool = False) -> Program:
    """Compile P4 source text; `filename` names it in diagnostics.

    `self_contained` (a P4Runtime device config): only the shipped core.p4 and
    v1model.p4 may be included, and no file is read (see preprocess.py).
    """
    # Tree walks recurse per nesting level, which limits.py bounds (syntax depth 1,000).
    # The interpreter-wide limit is only ever raised, never restored: compilations run
    # in several threads at once (the P4Runtime server's pool), and restoring it in one
    # would cut another short.
    if sys.getrecursionlimit() < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)
    return _compile(text, filename, include_dirs, defines, base_dir, self_contained)


_RECURSION_LIMIT = 5000


def _compile(text, filename, include_dirs, defines, base_dir, self_contained) -> Program:
    holder: dict[str, Preprocessed] = {}

    def line_source(file: str, line: int) -> str:
        pre = holder.get("pre")
        if pre is not None:
            return pre.source_line(file, line)
        if file == filename:
            lines = text.splitlines()
            return lines[line - 1] if 1 <= line <= len(lines) else ""
        return ""

    reporter = Reporter(line_source)
    pre = preprocess(text, filename, reporter, include_dirs=tuple(include_dirs), defines=defines,
                     base_dir=None if self_contained else base_dir or os.getcwd(),
                     self_contained=self_contained)
    holder["pre"] = pre
    reporter.raise_if_errors()
    tree = parse(pre, reporter)
    check_syntax_tree(tree, reporter)  # bounded work: before the checker folds constants
    reporter.raise_if_errors()
    checker = Checker(reporter)
    checker.check(tree)
    main = _main_package(checker, tree, reporter)
    check_resolved_tree(tree, reporter)  # bounded work: sizes the engine allocates
    reporter.raise_if_errors()
    info = build_info(checker, tree, reporter)
    reporter.raise_if_errors()
    return Program(
        ast=tree, main=main, info=info, error_type=checker.error_type,
        match_kind_type=checker.match_kind_type, types=dict(checker.types),
        source_file=filename,
        warnings=[d for d in reporter.diagnostics if d.severity == "warning"],
    )


def _main_package(checker: Checker, tree: A.P4Program, reporter: Reporter) -> MainPackage | None:
    inst = checker.main_inst
    if inst is None:
        loc = tree.decls[-1].loc if tree.decls else A.Loc("<string>", 1, 1)
        reporter.error(loc, "no top-level 'main' package instantiation (e.g. V1Switch(...) main;)")
        return None
    pkg = inst.type.base if hasattr(inst.type, "base") else inst.type
    if getattr(pkg, "name", None) != "V1Switch":
        reporter.unsupported(inst.loc, f"package '{getattr(pkg, 'name', '?')}' (only V1Switch)")
        return None
    blocks = getattr(inst, "blocks", [])
    if len(blocks) != 6 or any(b is None for b in blocks):
        return None
    return MainPackage("V1Switch", *blocks, instantiation=inst)


def _plain(file: str, message: str):
    from .diagnostics import Diagnostic

    return Diagnostic(file, 1, 1, "error", message, "")
