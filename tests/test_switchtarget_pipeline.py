"""switchtarget.pipeline: a target's builder chosen by name, the software target's
pipeline built from the SGLB program, and Tofino's device config packed from
bf-p4c's output (checked by parsing it with protobuf's own decoder)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from finsy.proto import p4i
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format

from sglb import tofino_target
from switchtarget.pipeline import BUILDERS, PipelineError, load_builder

ROOT = Path(__file__).resolve().parents[1]


def test_builders_load_by_name_and_unknown_names_are_refused():
    assert {name: load_builder(name).name for name in BUILDERS} == {n: n for n in BUILDERS}
    assert load_builder("softswitch").injects_port_status
    assert not load_builder("bmv2").injects_port_status
    assert not load_builder("tofino").injects_port_status
    with pytest.raises(PipelineError, match="unknown target 'psa'"):
        load_builder("psa")


def test_softswitch_builds_the_sglb_program(tmp_path):
    files = load_builder("softswitch").build(ROOT / "p4src" / "sglb.p4", tmp_path,
                                             {"DRE_PERIOD_SHIFT": "9"})
    info = text_format.Parse(files.p4info.read_text(), p4i.P4Info())
    assert {t.preamble.name.rsplit(".", 1)[-1] for t in info.tables} >= {
        "switch_config", "dst_profile", "port_levels"}
    assert files.device_config.read_bytes()   # the program's source, self-contained


def test_softswitch_locates_errors_in_one_line(tmp_path):
    bad = tmp_path / "bad.p4"
    bad.write_text("#include <core.p4>\n#include <v1model.p4>\n\ncontrol C( {\n")
    with pytest.raises(PipelineError) as e:
        load_builder("softswitch").build(bad, tmp_path / "out")
    assert str(e.value).startswith(f"{bad}:4:") and "\n" not in str(e.value)
    with pytest.raises(PipelineError, match="no such file"):
        load_builder("softswitch").build(tmp_path / "none.p4", tmp_path / "out")


def _bf_pipeline_config_class():
    """BfPipelineConfig (stratum/hal/lib/barefoot/bf.proto) built from its field list."""
    f = descriptor_pb2.FileDescriptorProto(name="bf_test.proto", package="bftest",
                                           syntax="proto3")
    top = f.message_type.add(name="BfPipelineConfig")
    prof = top.nested_type.add(name="Profile")
    T = descriptor_pb2.FieldDescriptorProto
    for name, number, kind in (("profile_name", 1, T.TYPE_STRING), ("context", 2, T.TYPE_BYTES),
                               ("binary", 3, T.TYPE_BYTES)):
        prof.field.add(name=name, number=number, type=kind, label=T.LABEL_OPTIONAL)
    prof.field.add(name="pipe_scope", number=4, type=T.TYPE_UINT32, label=T.LABEL_REPEATED)
    top.field.add(name="p4_name", number=1, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL)
    top.field.add(name="bfruntime_info", number=2, type=T.TYPE_BYTES, label=T.LABEL_OPTIONAL)
    top.field.add(name="profiles", number=3, type=T.TYPE_MESSAGE, label=T.LABEL_REPEATED,
                  type_name=".bftest.BfPipelineConfig.Profile")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("bftest.BfPipelineConfig"))


def _bf_p4c_output(out: Path, scope=(0, 1, 2, 3)) -> None:
    """The files bf-p4c writes that the device config packs, and its .conf naming them."""
    (out / "pipe").mkdir(parents=True)
    (out / "bfrt.json").write_text('{"tables": []}')
    (out / "pipe" / "context.json").write_text('{"program_name": "sglb"}')
    (out / "pipe" / "tofino2.bin").write_bytes(bytes(range(256)) * 300)   # > 2^14: long lengths
    (out / "sglb.conf").write_text(json.dumps({"p4_devices": [{"device-id": 0, "p4_programs": [{
        "program-name": "sglb", "bfrt-config": str(out / "bfrt.json"),
        "p4_pipelines": [{"p4_pipeline_name": "pipe", "context": "pipe/context.json",
                          "config": "pipe/tofino2.bin", "pipe_scope": list(scope)}]}]}]}))


def test_tofino_device_config_is_stratums_bf_pipeline_config(tmp_path):
    _bf_p4c_output(tmp_path)
    msg = _bf_pipeline_config_class().FromString(tofino_target.device_config(tmp_path))
    assert msg.p4_name == "sglb" and msg.bfruntime_info == b'{"tables": []}'
    (profile,) = msg.profiles
    assert profile.profile_name == "pipe" and list(profile.pipe_scope) == [0, 1, 2, 3]
    assert profile.context == b'{"program_name": "sglb"}'
    assert profile.binary == bytes(range(256)) * 300


def test_tofino_device_config_refuses_what_bf_p4c_did_not_write(tmp_path):
    with pytest.raises(PipelineError, match="expected one bf-p4c .conf, found 0"):
        tofino_target.device_config(tmp_path)
    _bf_p4c_output(tmp_path)
    (tmp_path / "pipe" / "tofino2.bin").unlink()
    with pytest.raises(PipelineError, match=r"binary .*tofino2.bin: No such file"):
        tofino_target.device_config(tmp_path)
    (tmp_path / "sglb.conf").write_text('{"p4_devices": []}')
    with pytest.raises(PipelineError, match="not a bf-p4c .conf of one device"):
        tofino_target.device_config(tmp_path)


def test_tofino_builder_without_bf_p4c_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))   # no bf-p4c on it
    with pytest.raises(PipelineError, match="bf-p4c is not on PATH"):
        load_builder("tofino2").build(ROOT / "p4src" / "tna" / "sglb.p4", tmp_path / "out",
                                      {"MAX_PATHS": "8"})
