"""C-style preprocessing of P4 sources (P4_16 spec section 6.2) on top of pcpp.

Handles #include <...> (searched in the include dirs, then the shipped
`softswitch/p4include`) and "..." (relative to the including file first),
#define (object-like and function-like), #undef, #if/#ifdef/#ifndef/#elif/
#else/#endif and #error. The result keeps a line map so that every later
diagnostic points at the original file:line.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from pathlib import Path

import pcpp

from .ast import Loc
from .diagnostics import Reporter

P4INCLUDE = Path(__file__).resolve().parent.parent / "p4include"


@dataclass
class Preprocessed:
    """Preprocessed text plus the original (file, line) of every output line."""

    text: str
    line_map: list[tuple[str, int]]  # index = output line - 1
    sources: dict[str, list[str]] = field(default_factory=dict)  # display name -> lines

    def loc(self, line: int, col: int) -> Loc:
        """Map an output position (1-based) back to the original source."""
        if 1 <= line <= len(self.line_map):
            f, ln = self.line_map[line - 1]
            return Loc(f, ln, col)
        f, ln = self.line_map[-1] if self.line_map else ("<string>", 1)
        return Loc(f, ln, col)

    def source_line(self, file: str, line: int) -> str:
        """The text of an original source line ('' if unknown)."""
        lines = self.sources.get(file)
        if lines and 1 <= line <= len(lines):
            return lines[line - 1]
        return ""


def display_name(path: str) -> str:
    """How a file is named in diagnostics: relative to the cwd when below it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


class _Pcpp(pcpp.Preprocessor):
    """pcpp with errors collected instead of printed, and files named by display path."""

    def __init__(self, reporter: Reporter, sources: dict[str, list[str]]):
        super().__init__()
        self.line_directive = "#line"
        self._reporter = reporter
        self._sources = sources

    def on_error(self, file, line, msg):
        self._reporter.error(Loc(str(file), int(line or 0), 1), f"preprocessor: {msg}")
        self.return_code += 1

    def on_file_open(self, is_system_include, includepath):
        with open(includepath, encoding="utf-8", errors="replace") as fh:
            data = fh.read()
        self._sources[display_name(includepath)] = data.splitlines()
        return io.StringIO(data.lstrip("\ufeff"))

    def on_include_not_found(self, is_malformed, is_system_include, curdir, includepath):
        d = self.lastdirective
        what = "malformed #include" if is_malformed else f"include file '{includepath}' not found"
        self._reporter.error(Loc(str(d.source), d.lineno, 1), what)
        raise pcpp.OutputDirective(pcpp.Action.IgnoreAndRemove)

    def on_directive_unknown(self, directive, toks, ifpassthru, precedingtoks):
        text = "".join(t.value for t in toks).strip()
        loc = Loc(str(directive.source), directive.lineno, 1)
        if directive.value == "error":
            self._reporter.error(loc, f"#error {text}")
            return True
        if directive.value == "warning":
            self._reporter.warning(loc, f"#warning {text}")
            return True
        if directive.value in ("pragma", "line"):
            return True
        self._reporter.error(loc, f"unknown preprocessor directive #{directive.value}")
        return True

    def on_unknown_macro_in_expr(self, ident):
        return 0

    def parsegen(self, input, source=None, abssource=None):
        if abssource:
            source = display_name(abssource)
        return super().parsegen(input, source, abssource)


def preprocess(
    text: str,
    filename: str,
    reporter: Reporter,
    include_dirs: tuple[str, ...] | list[str] = (),
    defines: dict[str, str | None] | None = None,
    base_dir: str | None = None,
) -> Preprocessed:
    """Preprocess `text` (named `filename`); errors go to `reporter`."""
    sources: dict[str, list[str]] = {filename: text.splitlines()}
    pp = _Pcpp(reporter, sources)
    for d in include_dirs:
        pp.add_path(str(d))
    pp.add_path(str(P4INCLUDE))
    if base_dir:
        pp.temp_path.insert(0, base_dir)
    for name, value in (defines or {}).items():
        pp.define(f"{name} {'1' if value is None else value}")
    out = io.StringIO()
    try:
        pp.parse(text, filename)
        pp.write(out)
    except Exception as exc:  # pcpp raises on some malformed directives
        reporter.error(Loc(filename, 1, 1), f"preprocessor: {exc}")
        return Preprocessed("", [], sources)
    return _strip_line_directives(out.getvalue(), filename, sources)


def _strip_line_directives(raw: str, filename: str, sources) -> Preprocessed:
    """Turn pcpp's `#line N "file"` lines into a per-line map (blank lines left in place)."""
    lines = raw.split("\n")
    line_map: list[tuple[str, int]] = []
    cur_file, cur_line = filename, 1
    out: list[str] = []
    for ln in lines:
        s = ln.lstrip()
        if s.startswith("#line "):
            parts = s.split(None, 2)
            try:
                cur_line = int(parts[1])
            except (IndexError, ValueError):
                cur_line += 1
            if len(parts) > 2:
                cur_file = parts[2].strip().strip('"')
            out.append("")
            line_map.append((cur_file, cur_line))
            continue
        out.append(ln)
        line_map.append((cur_file, cur_line))
        cur_line += 1
    return Preprocessed("\n".join(out), line_map, sources)
