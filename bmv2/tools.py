"""Where p4c and BMv2 are: PATH, or an environment variable per tool.

Each tool is looked up as its environment variable (a path) first, then by
name on PATH. ``require`` raises ``MissingToolError`` naming every tool that
is missing and how to point at it, so that ``TARGET=bmv2`` and the tests say
exactly what to install instead of failing later.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Tool:
    """A reference tool the BMv2 target may need."""

    name: str
    """Executable name looked up on PATH."""
    env: str
    """Environment variable holding its path (takes precedence over PATH)."""
    what: str
    """What it is, for the error message."""


P4C = Tool("p4c-bm2-ss", "P4C_BM2_SS", "p4c's BMv2 back end (p4lang/p4c)")
SWITCH = Tool("simple_switch_grpc", "SIMPLE_SWITCH_GRPC",
              "BMv2's v1model switch with P4Runtime (p4lang/behavioral-model built --with-pi)")
CLI = Tool("simple_switch_CLI", "SIMPLE_SWITCH_CLI", "BMv2's Thrift command line (registers)")
TUNED = Tool("simple_switch_grpc", "BMV2_TUNED",
             "a BMv2 built with --disable-logging-macros --disable-elogger -O3 (benchmarks only)")


class MissingToolError(RuntimeError):
    """A reference tool is not installed; the message names each one and how to point at it."""

    def __init__(self, missing: list[Tool], purpose: str) -> None:
        self.missing = missing
        lines = [f"{purpose} needs {', '.join(t.name for t in missing)}, not found:"]
        lines += [f"  {t.name}: {t.what}; put it on PATH or set {t.env}=/path/to/{t.name}"
                  for t in missing]
        lines.append("  (docs/bmv2.md, \"Installing p4c and BMv2\")")
        super().__init__("\n".join(lines))


def find(tool: Tool, use_path: bool = True) -> Path | None:
    """The tool's executable, or None. An environment variable that names no
    executable file counts as missing (it is not silently replaced by PATH)."""
    given = os.environ.get(tool.env)
    if given:
        p = Path(given).expanduser()
        return p if p.is_file() and os.access(p, os.X_OK) else None
    if not use_path:
        return None
    found = shutil.which(tool.name)
    return Path(found) if found else None


def require(*tools: Tool, purpose: str = "the BMv2 target") -> dict[str, Path]:
    """Every tool's path by name; raises MissingToolError listing all that are missing."""
    found = {t.name: find(t) for t in tools}
    missing = [t for t in tools if found[t.name] is None]
    if missing:
        raise MissingToolError(missing, purpose)
    return {name: path for name, path in found.items() if path is not None}


def available(*tools: Tool) -> bool:
    """True when every tool is installed."""
    return all(find(t) is not None for t in tools)


def missing_names(*tools: Tool) -> list[str]:
    """Names of the tools that are not installed."""
    return [t.name for t in tools if find(t) is None]
