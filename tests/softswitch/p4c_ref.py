"""The P4 reference compiler as a test oracle, where it is installed.

`p4c-bm2-ss` (p4c's BMv2 simple_switch back end) on PATH is run on the same source
as softswitch: its verdict and the P4Info it writes (`--p4runtime-files`) are
compared with softswitch's. Tests using it are skipped when it is absent.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

P4C = shutil.which("p4c-bm2-ss")
needs_p4c = pytest.mark.skipif(P4C is None, reason="p4c (p4c-bm2-ss) is not installed")


def run_p4c(src: str, tmp_path: Path, name: str = "prog") -> tuple[bool, str, Path]:
    """Compile `src` with p4c-bm2-ss writing P4Info; (accepted, stderr, P4Info path)."""
    assert P4C is not None
    prog = tmp_path / f"{name}.p4"
    prog.write_text(src)
    p4info = tmp_path / f"{name}.p4info.txtpb"
    run = subprocess.run([P4C, str(prog), "-o", str(tmp_path / f"{name}.json"),
                          "--p4runtime-files", str(p4info)],
                         capture_output=True, text=True, timeout=300)
    return run.returncode == 0, run.stderr, p4info


def canonical_p4info(msg: Any) -> dict:
    """P4Info as a dict without pkg_info (p4c fills it from its own build)."""
    from google.protobuf.json_format import MessageToDict

    d = MessageToDict(msg, preserving_proto_field_name=True)
    d.pop("pkg_info", None)
    return d


def p4c_p4info(src: str, tmp_path: Path) -> dict:
    """The P4Info p4c writes for `src` (canonical dict); fails the test if p4c rejects it."""
    from finsy.proto import p4i
    from google.protobuf import text_format

    ok, err, path = run_p4c(src, tmp_path)
    assert ok, err
    return canonical_p4info(text_format.Parse(path.read_text(), p4i.P4Info()))


def by_name(p4info: dict) -> dict[str, dict[str, Any]]:
    """{kind: {name: entity}}: P4Info entities keyed by name, so that order does not count."""
    out: dict[str, dict[str, Any]] = {}
    for kind, items in p4info.items():
        if isinstance(items, list):
            out[kind] = {e.get("preamble", {}).get("name", str(e)): e for e in items}
        else:
            out[kind] = {"": items}
    return out
