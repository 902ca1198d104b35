"""The pipeline interface between a controller and a switch target.

A target package provides a module-level ``BUILDER`` that satisfies
``PipelineBuilder``: it turns a P4 program into the two files a P4Runtime
``SetForwardingPipelineConfig`` carries, the P4Info (protobuf text format) and
the target's ``p4_device_config`` bytes (``PipelineFiles``). Every problem
with the program or the tools is one ``PipelineError`` whose message is one
line (a located diagnostic, or the missing tool). ``load_builder(name)``
imports the target's package only when asked, so that a controller depends on
no target.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

BUILDERS = {"softswitch": "softswitch.target", "bmv2": "bmv2.target",
            "tofino": "sglb.tofino_target", "tofino2": "sglb.tofino_target"}
"""Module of each target's builder (``tofino`` / ``tofino2``: its ``BUILDERS[name]``)."""


@dataclass(frozen=True)
class PipelineFiles:
    """P4Info (text) and device config of a program, as P4Runtime clients load them."""

    p4info: Path
    """P4Info in protobuf text format."""
    device_config: Path
    """The target's ``p4_device_config`` bytes."""


class PipelineError(Exception):
    """A program the target cannot build, or a tool it lacks (the message is one line)."""


class PipelineBuilder(Protocol):
    """What a target package provides to build its pipelines."""

    @property
    def name(self) -> str:
        """The target's name (a key of ``BUILDERS``)."""
        ...

    @property
    def injects_port_status(self) -> bool:
        """True when the target turns carrier changes into port-status packets itself;
        otherwise the controller sends them as PacketOut."""
        ...

    def build(self, program: Path, out_dir: Path,
              defines: Mapping[str, str] | None = None) -> PipelineFiles:
        """Compile ``program`` (with -D ``defines``) into P4Info and device config files
        in ``out_dir``; PipelineError if it cannot."""
        ...


def load_builder(name: str) -> PipelineBuilder:
    """The builder of target ``name`` (its package is imported now)."""
    if name not in BUILDERS:
        raise PipelineError(f"unknown target {name!r} (one of {', '.join(BUILDERS)})")
    module = importlib.import_module(BUILDERS[name])
    builders: Mapping[str, PipelineBuilder] | None = getattr(module, "BUILDERS", None)
    if builders is not None:
        return builders[name]
    builder: PipelineBuilder = module.BUILDER
    return builder


def compile_pipeline(program: Path, out_dir: Path | None = None,
                     defines: Mapping[str, str] | None = None,
                     target: str = "softswitch") -> PipelineFiles:
    """``load_builder(target).build(program, out_dir, defines)``; without ``out_dir``, into
    a fresh temporary directory (left for the caller)."""
    import tempfile

    out = out_dir if out_dir is not None else Path(tempfile.mkdtemp(prefix="pipeline-"))
    return load_builder(target).build(program, out, defines)
