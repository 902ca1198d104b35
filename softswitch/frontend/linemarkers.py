"""Line markers of an already preprocessed source: `# 12 "file.p4" 1` (GNU cpp) and
`#line 12 "file.p4"` (C standard, P4_16 spec 6.2 defers to it).

A program run through an external preprocessor (e.g. `cpp`) is full of them;
p4c's lexer reads them to report positions in the original files. Here they
are taken out before softswitch's own preprocessing (which would reject `# 12`
as an unknown directive) and applied to the line map afterwards, so that
diagnostics name the original file and line as p4c's do.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import replace

from .preprocess import Preprocessed

_MARKER = re.compile(r'[ \t]*#[ \t]*(?:line[ \t]+)?(\d+)(?:[ \t]+"((?:[^"\\]|\\.)*)")?[ \t\d]*\r?$')


def strip_markers(text: str) -> tuple[str, dict[int, tuple[str | None, int]]]:
    """The text with marker lines blanked (line count kept), and the markers by line:
    {line of the marker (1-based): (file or None for the same file, line of the next line)}."""
    if "#" not in text:
        return text, {}
    lines = text.split("\n")
    markers: dict[int, tuple[str | None, int]] = {}
    for i, ln in enumerate(lines):
        if ln.lstrip().startswith("#"):
            m = _MARKER.match(ln)
            if m is not None:
                markers[i + 1] = (m.group(2), int(m.group(1)))
                lines[i] = ""
    return "\n".join(lines), markers


def apply_markers(pre: Preprocessed, filename: str,
                  markers: dict[int, tuple[str | None, int]]) -> Preprocessed:
    """Re-map the lines of `filename` in `pre.line_map` as its markers say: a line L after
    the marker at line M (the last one before L) is line `next + (L - M - 1)` of the
    marker's file (a marker without a file keeps the previous one)."""
    if not markers:
        return pre
    at = sorted(markers)
    files: list[str] = []
    current = filename
    for m in at:
        current = markers[m][0] or current
        files.append(current)

    def mapped(entry: tuple[str, int]) -> tuple[str, int]:
        src, line = entry
        if src != filename:
            return entry
        k = bisect.bisect_left(at, line) - 1
        if k < 0:
            return entry
        return files[k], markers[at[k]][1] + line - at[k] - 1

    return replace(pre, line_map=[mapped(e) for e in pre.line_map])
