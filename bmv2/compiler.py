"""``p4c-bm2-ss``: a P4_16 v1model program to BMv2 JSON and P4Info, cached by content.

The cache key is the SHA-256 of the compiler's version, its flags and the
preprocessed program (``p4c-bm2-ss -E``: the program with every include it
pulls in), so an edit to any included file, a define or a new compiler
recompiles, and nothing else does. Entries live in ``$SGLB_P4C_CACHE``, else
``$XDG_CACHE_HOME/sglb/p4c``, else ``~/.cache/sglb/p4c``; each is a folder
written under a temporary name and renamed into place, so concurrent runs
never see half an entry. ``P4C_FLAGS`` adds flags to every compile (e.g. a
``-D`` that an older program needs).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import tools

COMPILE_TIMEOUT_S = 600.0
"""p4c's whole run on one program; a program that takes longer is reported as an error."""


class P4cError(RuntimeError):
    """p4c refused the program (or could not run); the message carries its diagnostics."""


@dataclass(frozen=True)
class CompiledProgram:
    """What p4c made of a program."""

    source: Path
    """The .p4 file compiled."""
    json: Path
    """BMv2 JSON: simple_switch's program, and P4Runtime's ``p4_device_config`` for BMv2."""
    p4info: Path
    """P4Info in protobuf text format."""
    cached: bool
    """True when the result came from the cache."""

    def p4info_message(self) -> Any:
        """The P4Info as a protobuf message (finsy's generated ``p4.config.v1.P4Info``)."""
        from finsy.proto import p4i
        from google.protobuf import text_format

        return text_format.Parse(self.p4info.read_text(), p4i.P4Info())


def cache_dir() -> Path:
    """Where compiled programs are kept."""
    if os.environ.get("SGLB_P4C_CACHE"):
        return Path(os.environ["SGLB_P4C_CACHE"]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "sglb" / "p4c"


def _run(argv: list[str], what: str, timeout: float) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise P4cError(f"{what}: p4c took longer than {timeout:.0f} s") from None
    except OSError as e:
        raise P4cError(f"{what}: cannot run {argv[0]}: {e.strerror}") from None


def _diagnostics(stderr: str, limit: int = 40) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    more = f"\n  ... {len(lines) - limit} more lines" if len(lines) > limit else ""
    return "\n".join("  " + ln for ln in lines[:limit]) + more


def flags_for(defines: Mapping[str, str] | None = None, include_dirs: Sequence[Path | str] = (),
              extra: Sequence[str] = ()) -> list[str]:
    """p4c's preprocessor and extra flags, ``P4C_FLAGS`` last."""
    flags = [f"-I{d}" for d in include_dirs]
    flags += [f"-D{k}={v}" for k, v in sorted((defines or {}).items())]
    flags += list(extra)
    flags += shlex.split(os.environ.get("P4C_FLAGS", ""))
    return flags


def compile_program(program: Path | str, *, defines: Mapping[str, str] | None = None,
                    include_dirs: Sequence[Path | str] = (), extra_flags: Sequence[str] = (),
                    cache: Path | None = None) -> CompiledProgram:
    """Compile ``program`` with p4c-bm2-ss (or take it from the cache).

    Raises MissingToolError when p4c-bm2-ss is not installed and P4cError when
    it refuses the program (its diagnostics in the message).
    """
    p4c = str(tools.require(tools.P4C, purpose=f"compiling {program} for BMv2")[tools.P4C.name])
    program = Path(program).resolve()
    if not program.is_file():
        raise P4cError(f"{program}: no such file")
    flags = flags_for(defines, include_dirs, extra_flags)
    version = _run([p4c, "--version"], str(program), 60).stdout.strip()
    pre = _run([p4c, "-E", *flags, str(program)], str(program), COMPILE_TIMEOUT_S)
    # p4c 1.2.5 exits 1 after -E even when it preprocessed fine: judge by what it printed
    if not pre.stdout.strip() or "error" in pre.stderr.lower():
        raise P4cError(f"{program}: p4c's preprocessor failed:\n{_diagnostics(pre.stderr)}")
    key = hashlib.sha256("\0".join([version, *flags, pre.stdout]).encode()).hexdigest()[:32]
    root = cache or cache_dir()
    entry = root / key
    stem = program.stem
    result = CompiledProgram(program, entry / f"{stem}.json", entry / f"{stem}.p4info.txtpb", True)
    if result.json.is_file() and result.p4info.is_file():
        return result
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=root))
    try:
        done = _run([p4c, *flags, str(program), "-o", str(work / f"{stem}.json"),
                     "--p4runtime-files", str(work / f"{stem}.p4info.txtpb")],
                    str(program), COMPILE_TIMEOUT_S)
        (work / "p4c.log").write_text(done.stderr)
        if done.returncode != 0:
            raise P4cError(f"{program}: p4c-bm2-ss failed (exit {done.returncode}):\n"
                           f"{_diagnostics(done.stderr)}")
        try:
            work.rename(entry)
        except OSError:
            if not (entry / f"{stem}.json").is_file():  # not a concurrent run's entry: a real error
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return CompiledProgram(program, result.json, result.p4info, False)
