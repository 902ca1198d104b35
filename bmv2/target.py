"""BMv2's pipeline builder (``switchtarget.pipeline.PipelineBuilder``): p4c-bm2-ss's
JSON is the device config of ``simple_switch_grpc`` (through ``bmv2.compiler``,
cached), its P4Info the program's. BMv2 does not turn carrier changes into
port-status packets: the controller sends them as PacketOut."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

from switchtarget.pipeline import PipelineError, PipelineFiles


class Bmv2Builder:
    """Pipelines for ``simple_switch_grpc``."""

    name = "bmv2"
    injects_port_status = False

    def build(self, program: Path, out_dir: Path,
              defines: Mapping[str, str] | None = None) -> PipelineFiles:
        """P4Info and JSON of ``program`` compiled by p4c (p4c's first error, or the
        missing tool, in one line)."""
        from bmv2.compiler import P4cError, compile_program
        from bmv2.tools import MissingToolError

        if not program.is_file():
            raise PipelineError(f"no such file: {program}")
        try:
            compiled = compile_program(program, defines=defines)
        except (MissingToolError, P4cError) as e:
            raise PipelineError(" ".join(str(e).split())) from None
        out_dir.mkdir(parents=True, exist_ok=True)
        files = PipelineFiles(out_dir / compiled.p4info.name, out_dir / compiled.json.name)
        shutil.copyfile(compiled.p4info, files.p4info)
        shutil.copyfile(compiled.json, files.device_config)
        return files


BUILDER = Bmv2Builder()
