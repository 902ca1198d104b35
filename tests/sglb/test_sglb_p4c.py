"""sglb.p4 is valid for stock p4c: ``p4c-bm2-ss p4src/sglb.p4`` compiles it with
no extra flag (only -DMAX_PATHS to choose another width), and the P4Info p4c
writes agrees with the software target's. Skipped when p4c-bm2-ss is not on
PATH (the reference tools are optional: docs/bmv2.md)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from google.protobuf import text_format
from google.protobuf.json_format import MessageToDict
from sglb_harness import P4_PATH, softswitch_compiled

from sglb import config
from softswitch.p4info import p4info_from_program_info

P4C = shutil.which("p4c-bm2-ss")

# MAX_PATHS = 64 compiles the widest program (seconds): marked slow
WIDTHS = [8, 16, pytest.param(64, marks=pytest.mark.slow)]

pytestmark = pytest.mark.skipif(P4C is None, reason="p4c-bm2-ss is not on PATH")


def _canonical(p4info) -> dict:
    """A P4Info as a dict with entity lists sorted by name; without pkg_info (p4c
    fills it from its own build) and an empty type_info (p4c writes it, empty)."""
    d = MessageToDict(p4info, preserving_proto_field_name=True)
    d.pop("pkg_info", None)
    if not d.get("type_info"):
        d.pop("type_info", None)
    for entities in d.values():
        if isinstance(entities, list):
            entities.sort(key=lambda e: e.get("preamble", {}).get("name", ""))
    return d


def _p4c(tmp_path, max_paths: int):
    from finsy.proto import p4i

    defines = [] if max_paths == config.MAX_PATHS else [f"-DMAX_PATHS={max_paths}"]
    info = tmp_path / f"sglb{max_paths}.p4info.txtpb"
    done = subprocess.run([P4C, *defines, str(P4_PATH), "-o", str(tmp_path / "sglb.json"),
                           "--p4runtime-files", str(info)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "error" not in done.stderr.lower(), done.stderr
    return text_format.Parse(info.read_text(), p4i.P4Info())


@pytest.mark.parametrize("max_paths", WIDTHS)
def test_p4c_compiles_and_p4info_agrees(tmp_path, max_paths):
    theirs = _canonical(_p4c(tmp_path, max_paths))
    ours = _canonical(p4info_from_program_info(softswitch_compiled(max_paths).info))
    assert sorted(ours) == sorted(theirs)
    for kind in ours:
        assert ours[kind] == theirs[kind], kind
