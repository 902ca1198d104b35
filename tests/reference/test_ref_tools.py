"""Finding p4c and BMv2, and what every entry point says when they are missing; the p4c
compile cache (with p4c installed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bmv2 import tools

ROOT = Path(__file__).resolve().parents[2]
ROUTER = ROOT / "tests" / "softswitch" / "stf" / "router.p4"


@pytest.fixture
def no_tools(monkeypatch, tmp_path):
    """p4c and BMv2 pointed at files that do not exist (as on a machine without them)."""
    for tool in (tools.P4C, tools.SWITCH, tools.CLI):
        monkeypatch.setenv(tool.env, str(tmp_path / "absent" / tool.name))
    return {t.env: str(tmp_path / "absent" / t.name) for t in (tools.P4C, tools.SWITCH, tools.CLI)}


def test_missing_tools_are_each_named_with_their_variable(no_tools):
    with pytest.raises(tools.MissingToolError) as e:
        tools.require(tools.P4C, tools.SWITCH, purpose="TARGET=bmv2 make run")
    text = str(e.value)
    assert text.startswith("TARGET=bmv2 make run needs p4c-bm2-ss, simple_switch_grpc")
    assert "P4C_BM2_SS=" in text and "SIMPLE_SWITCH_GRPC=" in text
    assert [t.name for t in e.value.missing] == ["p4c-bm2-ss", "simple_switch_grpc"]


def test_variable_naming_no_executable_is_missing_not_replaced_by_path(monkeypatch, tmp_path):
    not_exec = tmp_path / "p4c-bm2-ss"
    not_exec.write_text("#!/bin/sh\n")
    monkeypatch.setenv(tools.P4C.env, str(not_exec))
    assert tools.find(tools.P4C) is None
    not_exec.chmod(0o755)
    assert tools.find(tools.P4C) == not_exec


def test_compile_without_p4c_names_it(no_tools, tmp_path):
    from bmv2.compiler import compile_program

    with pytest.raises(tools.MissingToolError, match="p4c-bm2-ss"):
        compile_program(ROUTER, cache=tmp_path / "cache")


def test_syncmesh_run_for_bmv2_without_p4c_is_refused_in_one_line(no_tools, tmp_path):
    env = {**os.environ, "SYNCMESH_TOKEN": "t" * 32}
    done = subprocess.run([sys.executable, "-m", "syncmesh.cli", "run",
                           str(ROOT / "topologies" / "fabrics" / "ls4x2.yaml"), "l1",
                           "--insecure", "--p4runtime", "127.0.0.1:1", "--target", "bmv2"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("syncmesh: error: --pipeline:") and "p4c-bm2-ss" in line


def test_make_run_on_bmv2_without_tools_stops_before_mininet(no_tools):
    done = subprocess.run([sys.executable, "-m", "topologies.demo", "--phase", "1"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "TARGET": "bmv2"})
    assert done.returncode == 2
    assert "TARGET=bmv2 make run needs p4c-bm2-ss, simple_switch_grpc" in done.stderr
    assert "SIMPLE_SWITCH_GRPC=" in done.stderr and "[testbed]" not in done.stdout


def test_make_run_refuses_an_unknown_target():
    done = subprocess.run([sys.executable, "-m", "topologies.demo", "--phase", "1"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "TARGET": "tofino"})
    assert done.returncode == 2 and "TARGET=tofino" in done.stderr


@pytest.mark.p4c
def test_compile_cache_keys_on_every_included_file(tmp_path):
    from bmv2.compiler import compile_program

    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "port.p4").write_text("const bit<9> SPARE_PORT = 2;\n")
    prog = tmp_path / "prog.p4"
    prog.write_text(ROUTER.read_text().replace("#include <v1model.p4>",
                                               "#include <v1model.p4>\n#include \"inc/port.p4\""))
    cache = tmp_path / "cache"
    first = compile_program(prog, cache=cache)
    again = compile_program(prog, cache=cache)
    assert not first.cached and again.cached and again.json == first.json
    assert first.p4info_message().tables  # a real P4Info
    (inc / "port.p4").write_text("const bit<9> SPARE_PORT = 3;\n")  # only the include changes
    changed = compile_program(prog, cache=cache)
    assert not changed.cached and changed.json != first.json
    assert compile_program(prog, cache=cache, defines={"X": "1"}).json != changed.json


@pytest.mark.p4c
def test_compile_error_carries_p4cs_diagnostics(tmp_path):
    from bmv2.compiler import P4cError, compile_program

    bad = tmp_path / "bad.p4"
    bad.write_text(ROUTER.read_text().replace("transition accept;", "transition nowhere;", 1))
    with pytest.raises(P4cError) as e:
        compile_program(bad, cache=tmp_path / "cache")
    assert "bad.p4" in str(e.value) and "nowhere" in str(e.value)
    assert not list((tmp_path / "cache").glob("*/bad.json"))  # nothing half-made is kept
