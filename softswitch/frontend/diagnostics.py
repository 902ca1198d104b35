"""Diagnostics: located messages, collected many at once, raised as one P4Error."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .ast import Loc

LineSource = Callable[[str, int], str]  # (file, line) -> the text of that line


@dataclass(frozen=True)
class Diagnostic:
    """One message at `file:line:col`, with the source line it points into."""

    file: str
    line: int
    col: int
    severity: str  # "error" or "warning"
    message: str
    source_line: str = ""

    def __str__(self) -> str:
        head = f"{self.file}:{self.line}:{self.col}: {self.severity}: {self.message}"
        if not self.source_line:
            return head
        text = self.source_line.rstrip("\n").expandtabs(1)
        caret = " " * max(self.col - 1, 0) + "^"
        return f"{head}\n{text}\n{caret}"


class P4Error(Exception):
    """Raised by compile_*: `.diagnostics` lists every error found."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = list(diagnostics)
        super().__init__("\n".join(str(d) for d in self.diagnostics))


class Reporter:
    """Collects diagnostics; reads source lines lazily through `line_source`."""

    def __init__(self, line_source: LineSource | None = None) -> None:
        self.diagnostics: list[Diagnostic] = []
        self._line_source: LineSource = line_source or (lambda file, line: "")
        self._seen: set[tuple[str, int, int, str]] = set()

    def error(self, loc: Loc, message: str) -> None:
        """Record an error at `loc` (duplicates at the same place are dropped)."""
        self._add(loc, "error", message)

    def warning(self, loc: Loc, message: str) -> None:
        """Record a warning at `loc`."""
        self._add(loc, "warning", message)

    def unsupported(self, loc: Loc, construct: str) -> None:
        """Record that the engine does not support `construct`."""
        self._add(loc, "error", f"unsupported: {construct}")

    def _add(self, loc: Loc, severity: str, message: str) -> None:
        key = (loc.file, loc.line, loc.col, message)
        if key in self._seen:
            return
        self._seen.add(key)
        self.diagnostics.append(
            Diagnostic(loc.file, loc.line, loc.col, severity, message,
                       self._line_source(loc.file, loc.line))
        )

    @property
    def errors(self) -> list[Diagnostic]:
        """Only the error diagnostics."""
        return [d for d in self.diagnostics if d.severity == "error"]

    def raise_if_errors(self) -> None:
        """Raise P4Error when at least one error was recorded."""
        if self.errors:
            raise P4Error(self.diagnostics)
