"""C-style preprocessing of P4 sources (P4_16 spec section 6.2) on top of pcpp.

Handles #include <...> (searched in the include dirs, then the shipped
`softswitch/p4include`) and "..." (relative to the including file first),
#define (object-like and function-like), #undef, #if/#ifdef/#ifndef/#elif/
#else/#endif and #error. The result keeps a line map so that every later
diagnostic points at the original file:line.

A *self-contained* source (a P4Runtime client's device config) may include only
the shipped `core.p4` and `v1model.p4`, served from memory: the file system is
never touched for it, and any other `#include` is refused naming only the
directive. Every run is bounded (limits.py): source size, bytes read through
includes, include depth (a cycle is reported as such, at the directive),
macro-expansion work and nesting.
"""

from __future__ import annotations

import io
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import pcpp
import pcpp.evaluator

from .ast import Loc
from .diagnostics import Reporter
from .limits import LIMITS, FrontendLimits, LimitExceeded

P4INCLUDE = Path(__file__).resolve().parent.parent / "p4include"
SHIPPED_INCLUDES = ("core.p4", "v1model.p4")
# Read once, when the front end is imported: a client's config never causes a read.
_SHIPPED_TEXT = {name: (P4INCLUDE / name).read_text(encoding="utf-8") for name in SHIPPED_INCLUDES}
_SHIPPED_SOURCE = "<shipped>/"


def _bounded_lshift(self, other, _shift=pcpp.evaluator.Value.__lshift__):
    # `#if` arithmetic is 64-bit and pcpp truncates to 64 bits only after shifting, so
    # `1 << 100000000000` would first build a huge integer; any amount above 64 gives
    # the same truncated result as 64.
    if isinstance(other, int) and int(other) > 64:  # int(): Value's comparisons are not bools
        other = pcpp.evaluator.Value(64)
    return _shift(self, other)


pcpp.evaluator.Value.__lshift__ = _bounded_lshift


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
    """pcpp with errors collected instead of printed, files named by display path, and bounds."""

    def __init__(self, reporter: Reporter, sources: dict[str, list[str]], self_contained: bool,
                 limits: FrontendLimits):
        super().__init__()
        self.line_directive = "#line"
        self._reporter = reporter
        self._sources = sources
        self._self_contained = self_contained
        self._limits = limits
        self._open: list[str] = []  # files being read, outermost first
        self._bytes_read = 0
        self._macro_work = 0
        self._expanding_at: Loc | None = None

    # ---- bounds ----------------------------------------------------------------------

    def _directive_loc(self) -> Loc:
        d = self.lastdirective
        if d is None:
            return Loc(self._open[0] if self._open else "<string>", 1, 1)
        return Loc(str(d.source), d.lineno, 1)

    def expand_macros(self, tokens, expanding_from=[]):  # noqa: B006 (pcpp's signature)
        if not expanding_from and tokens:
            self._expanding_at = Loc(str(tokens[0].source), tokens[0].lineno or 1, 1)
        lim = self._limits
        if len(expanding_from) > lim.macro_depth:
            raise LimitExceeded(self._expanding_at or self._directive_loc(),
                                f"macros nested deeper than {lim.macro_depth} levels "
                                f"(expanding {expanding_from[-1]})")
        self._macro_work += len(tokens)
        out = super().expand_macros(tokens, expanding_from)
        self._macro_work += len(out)
        if self._macro_work > lim.macro_tokens:
            raise LimitExceeded(self._expanding_at or self._directive_loc(),
                                f"macro expansion exceeds the limit of {lim.macro_tokens} tokens")
        return out

    def parsegen(self, input, source=None, abssource=None):
        if abssource and abssource.startswith(_SHIPPED_SOURCE):
            source, abssource = abssource[len(_SHIPPED_SOURCE):], None
        elif abssource:
            source = display_name(abssource)
        if len(self._open) >= self._limits.include_depth:
            raise LimitExceeded(self._directive_loc(), self._depth_message(str(source)))
        self._open.append(str(source))
        try:
            yield from super().parsegen(input, source, abssource)
        finally:
            self._open.pop()

    def _depth_message(self, source: str) -> str:
        if source in self._open:
            start = len(self._open) - 1 - self._open[::-1].index(source)
            cycle = self._open[start:] + [source]
            return "include cycle: " + " -> ".join(cycle) + " (no include guard ends it)"
        return f"includes nested deeper than {self._limits.include_depth} files"

    def _take(self, name: str, text: str) -> None:
        self._bytes_read += len(text)
        if self._bytes_read > self._limits.preprocessed_bytes:
            raise LimitExceeded(self._directive_loc(), "included files exceed "
                                f"{self._limits.preprocessed_bytes} bytes in all")
        self._sources[name] = text.splitlines()

    # ---- includes --------------------------------------------------------------------

    def include(self, tokens, original_line):
        if not self._self_contained:
            yield from super().include(tokens, original_line)
            return
        shown = "".join(t.value for t in tokens).strip()
        if tokens and tokens[0].value != "<" and tokens[0].type != self.t_STRING:
            tokens = self.tokenstrip(self.expand_macros(tokens))
        name = "".join(t.value for t in tokens).strip()
        if name[:1] + name[-1:] in ('""', "<>"):
            name = name[1:-1]
        if name not in _SHIPPED_TEXT:
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            raise LimitExceeded(self._directive_loc(), f"#include {shown} is refused: a device "
                                "config is self-contained and may include only <core.p4> and "
                                "<v1model.p4>")
        text = _SHIPPED_TEXT[name]
        self._take(name, text)
        yield from self.parsegen(text, name, _SHIPPED_SOURCE + name)

    def on_file_open(self, is_system_include, includepath):
        try:
            st = os.stat(includepath)
        except OSError as exc:
            raise OSError(str(exc)) from None  # not found here: pcpp tries the next directory
        if not stat.S_ISREG(st.st_mode):
            raise LimitExceeded(self._directive_loc(),
                                f"#include: {display_name(includepath)} is not a regular file")
        limit = self._limits.source_bytes
        with open(includepath, encoding="utf-8", errors="replace") as fh:
            data = fh.read(limit + 1)
        if len(data) > limit:
            raise LimitExceeded(self._directive_loc(), f"included file {display_name(includepath)} "
                                f"is larger than the limit of {limit} bytes")
        self._take(display_name(includepath), data)
        return io.StringIO(data.lstrip("\ufeff"))

    # ---- diagnostics -----------------------------------------------------------------

    def on_error(self, file, line, msg):
        self._reporter.error(Loc(str(file), int(line or 0), 1), f"preprocessor: {msg}")
        self.return_code += 1

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


def preprocess(
    text: str,
    filename: str,
    reporter: Reporter,
    include_dirs: tuple[str, ...] | list[str] = (),
    defines: dict[str, str | None] | None = None,
    base_dir: str | None = None,
    *,
    self_contained: bool = False,
    limits: FrontendLimits = LIMITS,
) -> Preprocessed:
    """Preprocess `text` (named `filename`); errors go to `reporter`.

    With `self_contained`, only the shipped core.p4 / v1model.p4 can be included and
    no file is opened (`include_dirs` and `base_dir` are then ignored).
    """
    sources: dict[str, list[str]] = {filename: text.splitlines()}
    if len(text) > limits.source_bytes:
        reporter.error(Loc(filename, 1, 1), f"source is {len(text)} bytes, above the limit of "
                       f"{limits.source_bytes}")
        return Preprocessed("", [], sources)
    pp = _Pcpp(reporter, sources, self_contained, limits)
    if not self_contained:
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
    except LimitExceeded as exc:
        reporter.error(exc.loc, exc.message)
        return Preprocessed("", [], sources)
    except RecursionError:  # bounded above; kept so that no input can crash the caller
        reporter.error(Loc(filename, 1, 1), "preprocessor: input nested too deeply")
        return Preprocessed("", [], sources)
    except Exception as exc:  # pcpp raises on some malformed directives
        reporter.error(Loc(filename, 1, 1), f"preprocessor: {exc}")
        return Preprocessed("", [], sources)
    raw = out.getvalue()
    if len(raw) > limits.preprocessed_bytes:
        reporter.error(Loc(filename, 1, 1), f"preprocessed program is {len(raw)} bytes, above the "
                       f"limit of {limits.preprocessed_bytes}")
        return Preprocessed("", [], sources)
    return _strip_line_directives(raw, filename, sources)


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
