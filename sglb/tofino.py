"""Compile p4src/tna/sglb.p4 with the open-source Tofino compiler and read the
resources it reports.

``bf-p4c -g`` writes, per pipe, ``logs/resources.json`` (stages, RAMs, TCAMs,
logical tables: the schema of ``compiler_interfaces/schemas`` in p4c's
``backends/tofino``) and ``logs/phv.json`` (PHV containers and the field
slices in them). ``figures`` reads both; ``compile_tna`` runs the compiler;
``python -m sglb.resources --tofino`` prints the figures for Tofino and
Tofino 2 at MAX_PATHS 8 and 64 (README, docs/sglb.md).
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TNA_PROGRAM = ROOT / "p4src" / "tna" / "sglb.p4"


@dataclass(frozen=True)
class Target:
    """A Tofino generation as bf-p4c names it, its MAU stage count, and how many
    times the program sends a leaf's data packet through ingress there."""

    name: str
    arch: str
    stages: int
    """MAU stages per pipe (Tofino 12, Tofino 2 20)."""
    passes: int
    """2 on Tofino: the GLB engine runs in the recirculation port's egress and the
    pick in a second pass (p4src/tna/words.p4, SGLB_TWO_PASS)."""


TARGETS = {"tofino": Target("tofino", "tna", 12, 2), "tofino2": Target("tofino2", "t2na", 20, 1)}
COMPILE_TIMEOUT_S = 3600
COMPILE_MEMORY_BYTES = 14 * 10**9
"""Address-space limit of one bf-p4c run ($SGLB_BF_P4C_MEMORY_GB overrides; Tofino at
64 paths peaks at 10.1 GB): a program that needs more counts as not fitting, rather
than taking the machine."""
NO_COMPILER = ("bf-p4c is not on PATH: the Tofino figures need the open-source Tofino "
               "compiler (p4c's backends/tofino; README, \"Tofino\")")


class CompileError(RuntimeError):
    """bf-p4c refused the program (the message carries its diagnostics)."""


@dataclass(frozen=True)
class Figures:
    """What bf-p4c reports for one compiled pipe."""

    target: str
    max_paths: int
    stages: int
    """MAU stages that hold at least one logical table."""
    stage_limit: int
    srams: int
    tcams: int
    map_rams: int
    logical_tables: int
    phv_containers: dict[int, int]
    """PHV containers that hold a field slice, by width (8, 16, 32)."""
    phv_bits: int
    """Bits of those containers in use."""

    @property
    def fits(self) -> bool:
        """True when the program uses no more stages than the target has."""
        return self.stages <= self.stage_limit


def bf_p4c() -> str | None:
    """Path of bf-p4c, or None."""
    return shutil.which("bf-p4c")


def memory_limit() -> int:
    """bf-p4c's address-space limit in bytes (COMPILE_MEMORY_BYTES, or
    $SGLB_BF_P4C_MEMORY_GB)."""
    text = os.environ.get("SGLB_BF_P4C_MEMORY_GB")
    if not text:
        return COMPILE_MEMORY_BYTES
    try:
        gb = float(text)
    except ValueError:
        raise ValueError(f"SGLB_BF_P4C_MEMORY_GB must be a number of GB, got {text!r}") from None
    if gb <= 0:
        raise ValueError(f"SGLB_BF_P4C_MEMORY_GB must be positive, got {text!r}")
    return int(gb * 10**9)


def compile_tna(target: str, max_paths: int, out_dir: Path, *, program: Path = TNA_PROGRAM,
                compiler: str | None = None, timeout: float = COMPILE_TIMEOUT_S,
                memory: int | None = None, defines: Mapping[str, str] | None = None) -> Path:
    """Compile ``program`` for ``target`` (tofino / tofino2) with -g, writing the
    P4Info (standard extern messages) next to it, under an address-space limit (``memory`` bytes, default
    memory_limit()); returns ``out_dir``. Raises CompileError with bf-p4c's
    diagnostics (and how far its table placement got) if it fails,
    FileNotFoundError if there is no bf-p4c. ``defines``: further -D macros."""
    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")
    exe = compiler or bf_p4c()
    if exe is None:
        raise FileNotFoundError(NO_COMPILER)
    t = TARGETS[target]
    out_dir.mkdir(parents=True, exist_ok=True)
    # standard P4Runtime extern messages in the P4Info (not barefoot.Register and
    # the like): what a P4Runtime client such as SyncMesh parses
    cmd = [exe, "--target", t.name, "--arch", t.arch, "-g", f"-DMAX_PATHS={max_paths}",
           *(f"-D{k}={v}" for k, v in (defines or {}).items() if k != "MAX_PATHS"),
           "--p4runtime-force-std-externs",
           "--p4runtime-files", str(out_dir / "p4info.txtpb"), "-o", str(out_dir), str(program)]
    limit = memory or memory_limit()

    def bound_memory() -> None:   # in the child, before bf-p4c starts
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          preexec_fn=bound_memory)
    (out_dir / "bf-p4c.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        output = _diagnostics(done.stderr + done.stdout)
        if "bad_alloc" in output:
            output = (f"bf-p4c ran out of memory (limit {limit / 10**9:g} GB: "
                      f"$SGLB_BF_P4C_MEMORY_GB)\n{output}")
        progress = placement_progress(out_dir)
        if progress is not None:
            output += (f"\ntable placement: {progress[0]} ingress stages needed, "
                       f"dependence chain {progress[1]} (of {t.stages})")
        raise CompileError(f"bf-p4c --target {t.name} -DMAX_PATHS={max_paths} failed "
                           f"({done.returncode}):\n{output}")
    return out_dir


def _diagnostics(output: str, most: int = 12) -> str:
    """bf-p4c's errors without its warnings (each warning quotes source lines):
    the lines that name an error or bad_alloc, and the first fields of a list of
    fields PHV allocation left out; the whole log is bf-p4c.log."""
    lines = output.splitlines()
    kept: list[str] = []
    for i, line in enumerate(lines):
        if "error" in line.lower() or "bad_alloc" in line:
            kept.append(line.strip())
        elif "were not allocated" in line:
            kept.append(line.strip() + " " + ", ".join(
                f.strip() for f in lines[i + 1:i + 1 + most] if f.strip()))
    return "\n".join(kept) or "\n".join(lines[-most:])


def placement_progress(out_dir: Path) -> tuple[int, int] | None:
    """(ingress stages, critical path length) of bf-p4c's first table placement
    (pipe/logs/table_summary.log), or None when it did not get that far."""
    try:
        text = _logs(out_dir, "table_summary.log").read_text()
    except FileNotFoundError:
        return None
    stages = re.search(r"Number of stages for ingress table allocation: (\d+)", text)
    path = re.search(r"Critical path length through the table dependency graph: (\d+)", text)
    if stages is None or path is None:
        return None
    return int(stages.group(1)), int(path.group(1))


def _logs(out_dir: Path, name: str) -> Path:
    found = sorted(out_dir.glob(f"*/logs/{name}")) or sorted(out_dir.glob(f"logs/{name}"))
    if not found:
        raise FileNotFoundError(f"{out_dir}: no {name} (compile with bf-p4c -g)")
    return found[0]


def _mau(resources: dict) -> tuple[int, int, int, int, int]:
    """(stages, srams, tcams, map_rams, logical tables) of resources.json."""
    stages = srams = tcams = map_rams = tables = 0
    for stage in resources["resources"]["mau"]["mau_stages"]:
        ids = stage.get("logical_tables", {}).get("ids", [])
        if ids:
            stages = max(stages, int(stage["stage_number"]) + 1)
        tables += len(ids)
        srams += len(stage.get("rams", {}).get("srams", []))
        tcams += len(stage.get("tcams", {}).get("tcams", []))
        map_rams += len(stage.get("map_rams", {}).get("maprams", []))
    return stages, srams, tcams, map_rams, tables


def _phv(phv: dict) -> tuple[dict[int, int], int]:
    """(containers by width, bits) occupied in phv.json."""
    used: dict[tuple[str, int, int], set[int]] = {}
    for c in phv["containers"]:
        bits = used.setdefault((c["container_type"], int(c["bit_width"]), int(c["phv_number"])),
                               set())
        for s in c.get("slices", []):
            info = s["slice_info"]
            bits.update(range(int(info["lsb"]), int(info["msb"]) + 1))
    by_width: dict[int, int] = {}
    total = 0
    for (_, width, _), bits in used.items():
        if bits:
            by_width[width] = by_width.get(width, 0) + 1
            total += len(bits)
    return dict(sorted(by_width.items())), total


def figures(out_dir: Path, target: str, max_paths: int) -> Figures:
    """The figures of a compile output directory (bf-p4c -g)."""
    try:
        stages, srams, tcams, map_rams, tables = _mau(
            json.loads(_logs(out_dir, "resources.json").read_text()))
        containers, bits = _phv(json.loads(_logs(out_dir, "phv.json").read_text()))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{out_dir}: unexpected bf-p4c log layout: {exc!r}") from None
    return Figures(target, max_paths, stages, TARGETS[target].stages, srams, tcams, map_rams,
                   tables, containers, bits)


def table(rows: list[Figures]) -> str:
    """The figures as a printable table."""
    lines = [f"{'target':<8} {'paths':>5} {'passes':>6} {'stages':>9} {'SRAM':>5} {'TCAM':>5} "
             f"{'map RAM':>7} {'tables':>6}  PHV containers (8/16/32 bits), bits used"]
    for f in rows:
        phv = "/".join(str(f.phv_containers.get(w, 0)) for w in (8, 16, 32))
        lines.append(f"{f.target:<8} {f.max_paths:>5} {TARGETS[f.target].passes:>6} "
                     f"{f.stages:>4} of {f.stage_limit:<2} "
                     f"{f.srams:>5} {f.tcams:>5} {f.map_rams:>7} {f.logical_tables:>6}  "
                     f"{phv}, {f.phv_bits}")
    return "\n".join(lines)


def tna_include_dir() -> Path | None:
    """Where tna.p4 / t2na.p4 are: $SGLB_TNA_INCLUDE, else bf-p4c's own installed
    include directory (<prefix>/share/p4c/p4include); None if neither has tna.p4."""
    candidates = []
    if os.environ.get("SGLB_TNA_INCLUDE"):
        candidates.append(Path(os.environ["SGLB_TNA_INCLUDE"]))
    exe = bf_p4c()
    if exe is not None:
        candidates.append(Path(exe).resolve().parents[1] / "share" / "p4c" / "p4include")
    return next((c for c in candidates if (c / "tna.p4").is_file()), None)


def front_end_p4info(target: str, max_paths: int, out: Path, include: Path,
                     *, program: Path = TNA_PROGRAM, entries: Path | None = None) -> Path:
    """P4Info of the program as p4c's front end (p4test) sees it with the TNA
    include files: table, action and key names without bf-p4c's pipe prefix;
    with ``entries``, also the const table entries there (a P4Runtime
    WriteRequest, text format). Raises CompileError if p4test rejects the
    program."""
    exe = shutil.which("p4test")
    if exe is None:
        raise FileNotFoundError("p4test is not on PATH")
    version = 2 if target == "tofino2" else 1
    done = subprocess.run([exe, f"-I{include}", f"-D__TARGET_TOFINO__={version}",
                           f"-DMAX_PATHS={max_paths}", "--p4runtime-files", str(out),
                           *(["--p4runtime-entries-files", str(entries)] if entries else []),
                           str(program)], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise CompileError(f"p4test rejected {program.name} ({target}, {max_paths} paths):\n"
                           f"{done.stderr.strip()}")
    return out
