"""softswitch's pipeline builder (``switchtarget.pipeline.PipelineBuilder``).

The device config is the program's source, self-contained (docs/softswitch-api.md):
the front end checks it here first, so an error names the file, line and column
of the program rather than a server's reply; the P4Info is the one the server
derives from the same config.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from switchtarget.pipeline import PipelineError, PipelineFiles


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


class SoftswitchBuilder:
    """Pipelines for ``softswitch run``."""

    name = "softswitch"
    injects_port_status = True

    def build(self, program: Path, out_dir: Path,
              defines: Mapping[str, str] | None = None) -> PipelineFiles:
        """P4Info and device config of ``program``, checked by the front end."""
        from softswitch.frontend import P4Error, compile_file
        from softswitch.p4info import p4info_from_program, p4info_text
        from softswitch.p4runtime.pipeline_loader import device_config_from_file, load_program

        if not program.is_file():
            raise PipelineError(f"no such file: {program}")
        macros: dict[str, str | None] | None = dict(defines) if defines else None
        try:
            compile_file(str(program), defines=macros)  # locates errors in the file itself
            blob = device_config_from_file(program, defines=macros)
            info = p4info_from_program(load_program(blob))
        except P4Error as e:
            errors = [d for d in e.diagnostics if d.severity == "error"] or e.diagnostics
            d = errors[0]
            more = f" (and {len(errors) - 1} more error(s))" if len(errors) > 1 else ""
            raise PipelineError(f"{d.file}:{d.line}:{d.col}: {_one_line(d.message)}"
                                f"{more}") from None
        except Exception as e:  # noqa: BLE001 - any failure to build it is a bad program
            raise PipelineError(f"{program}: {_one_line(e)}") from None
        out_dir.mkdir(parents=True, exist_ok=True)
        files = PipelineFiles(out_dir / f"{program.stem}.p4info.txtpb",
                              out_dir / f"{program.stem}.p4cfg")
        files.p4info.write_text(p4info_text(info))
        files.device_config.write_bytes(blob)
        return files


BUILDER = SoftswitchBuilder()
