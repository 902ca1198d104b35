"""Tofino's pipeline builder (``switchtarget.pipeline.PipelineBuilder``), for
p4src/tna/sglb.p4 on Tofino and Tofino 2.

bf-p4c (``sglb.tofino.compile_tna``) writes the P4Info (standard extern
messages, what SyncMesh parses) and, per pipe, the context.json and the
binary; its ``<program>.conf`` names them. The device config is Stratum's
``BfPipelineConfig`` (stratum/hal/lib/barefoot/bf.proto: p4_name = 1,
bfruntime_info = 2, profiles = 3, a profile being profile_name = 1,
context = 2, binary = 3, packed pipe_scope = 4), encoded here by hand so that
no Stratum protobuf module is needed. Tofino switches inject no port-status
packets: the controller sends them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from sglb.tofino import TARGETS, CompileError, compile_tna
from switchtarget.pipeline import PipelineBuilder, PipelineError, PipelineFiles

MAX_CONF_BYTES = 1 << 20
"""A .conf larger than this is not bf-p4c's (it lists a few file names)."""


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def bf_pipeline_config(name: str, bfrt: bytes,
                       profiles: list[tuple[str, bytes, bytes, list[int]]]) -> bytes:
    """The serialized BfPipelineConfig of a program: ``profiles`` as (name, context.json,
    binary, pipe scope)."""
    out = _field(1, name.encode()) + _field(2, bfrt)
    for profile, context, binary, scope in profiles:
        body = _field(1, profile.encode()) + _field(2, context) + _field(3, binary)
        if scope:
            body += _field(4, b"".join(_varint(p) for p in scope))
        out += _field(3, body)
    return out


def _read(conf_dir: Path, name: object, what: str) -> bytes:
    if not isinstance(name, str):
        raise PipelineError(f"bf-p4c's .conf names no {what} file")
    path = Path(name) if Path(name).is_absolute() else conf_dir / name
    try:
        return path.read_bytes()
    except OSError as e:
        raise PipelineError(f"{what} {path}: {e.strerror}") from None


def device_config(out_dir: Path) -> bytes:
    """The BfPipelineConfig of a bf-p4c output directory (from its one ``.conf``)."""
    confs = sorted(out_dir.glob("*.conf"))
    if len(confs) != 1:
        raise PipelineError(f"{out_dir}: expected one bf-p4c .conf, found {len(confs)}")
    if confs[0].stat().st_size > MAX_CONF_BYTES:
        raise PipelineError(f"{confs[0]}: larger than {MAX_CONF_BYTES} bytes")
    try:
        conf = json.loads(confs[0].read_text())
        (device,) = conf["p4_devices"]
        (program,) = device["p4_programs"]
        name = program["program-name"]
        pipelines = program["p4_pipelines"]
        profiles = [(p["p4_pipeline_name"], _read(out_dir, p["context"], "context"),
                     _read(out_dir, p["config"], "binary"),
                     [int(s) for s in p.get("pipe_scope", [])]) for p in pipelines]
        bfrt = _read(out_dir, program["bfrt-config"], "bfrt")
    except (KeyError, TypeError, ValueError) as e:
        raise PipelineError(f"{confs[0]}: not a bf-p4c .conf of one device and program "
                            f"({e!r})") from None
    if not isinstance(name, str) or not profiles:
        raise PipelineError(f"{confs[0]}: no program name or pipelines")
    return bf_pipeline_config(name, bfrt, profiles)


class TofinoBuilder:
    """Pipelines of p4src/tna/sglb.p4 for one Tofino generation."""

    injects_port_status = False

    def __init__(self, name: str) -> None:
        self.name = name

    def build(self, program: Path, out_dir: Path,
              defines: Mapping[str, str] | None = None) -> PipelineFiles:
        """Compile with bf-p4c (MAX_PATHS from ``defines``, 8 without) and pack the device
        config; bf-p4c's diagnostics, or its absence, in one line."""
        if not program.is_file():
            raise PipelineError(f"no such file: {program}")
        macros = dict(defines or {})
        try:
            max_paths = int(macros.pop("MAX_PATHS", "8"))
            compile_tna(self.name, max_paths, out_dir, program=program, defines=macros)
        except (CompileError, FileNotFoundError, ValueError) as e:
            raise PipelineError(" ".join(str(e).split())) from None
        files = PipelineFiles(out_dir / "p4info.txtpb", out_dir / "device_config.pb.bin")
        files.device_config.write_bytes(device_config(out_dir))
        return files


BUILDERS: dict[str, PipelineBuilder] = {name: TofinoBuilder(name) for name in TARGETS}
