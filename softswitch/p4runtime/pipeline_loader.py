"""Device configs: from P4 source (or the `softswitch compile` artefact) to a running Switch.

The p4_device_config of SetForwardingPipelineConfig is the program itself: P4_16 source
text whose only includes are the shipped `core.p4` / `v1model.p4`, or the preprocessed
artefact that `softswitch compile --device-config` writes. A config is self-contained:
compiling it never opens a file of this host, any other `#include` is refused
(INVALID_ARGUMENT naming only the directive), and every front-end stage is bounded
(softswitch/frontend/limits.py). Some clients wrap it in the
legacy `p4.tmp.P4DeviceConfig` message (fields: 1 reassign, 2 extras, 3 device_data);
that wrapper is recognised and unwrapped.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

from softswitch.p4runtime.errors import invalid

if TYPE_CHECKING:
    from softswitch.engine import Switch
    from softswitch.frontend import Program

ARTEFACT_MAGIC = "// softswitch device config v1"


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def unwrap_device_config(data: bytes) -> bytes:
    """Return device_data if `data` is a serialised p4.tmp.P4DeviceConfig, else `data`."""
    if not data or data[0] not in (0x08, 0x12, 0x1A):
        return data  # text never starts with these control bytes
    pos = 0
    found: bytes | None = None
    try:
        while pos < len(data):
            tag, pos = _varint(data, pos)
            number, wire = tag >> 3, tag & 7
            if number == 1 and wire == 0:
                _, pos = _varint(data, pos)
            elif number in (2, 3) and wire == 2:
                length, pos = _varint(data, pos)
                if pos + length > len(data):
                    return data
                if number == 3:
                    found = data[pos : pos + length]
                pos += length
            else:
                return data
    except ValueError:
        return data
    return found if found is not None else data


_COMPILED: OrderedDict[bytes, Program] = OrderedDict()
_CACHE_SIZE = 4
_CACHE_LOCK = threading.Lock()


def load_program(device_config: bytes) -> Program:
    """Compile a device config into a Program, or INVALID_ARGUMENT naming the first errors.

    The last few programs are cached by content: controllers push the same config again
    on every reconnection, and a Program is not modified by the engines that run it.
    """
    raw = unwrap_device_config(bytes(device_config))
    key = hashlib.sha256(raw).digest()
    with _CACHE_LOCK:
        if key in _COMPILED:
            _COMPILED.move_to_end(key)
            return _COMPILED[key]
    program = _compile(raw)
    with _CACHE_LOCK:
        _COMPILED[key] = program
        while len(_COMPILED) > _CACHE_SIZE:
            _COMPILED.popitem(last=False)
    return program


def _compile(raw: bytes) -> Program:
    """Compile a client's config: self-contained (no file is read), every stage bounded."""
    from softswitch.frontend import P4Error, compile_source
    from softswitch.frontend.limits import LIMITS

    if len(raw) > LIMITS.source_bytes:
        raise invalid(f"p4_device_config is {len(raw)} bytes, above the limit of "
                      f"{LIMITS.source_bytes} (docs/softswitch-p4runtime.md)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise invalid(
            f"p4_device_config is not P4 source text (byte {exc.start} is not UTF-8); "
            "send the .p4 program or the artefact of `softswitch compile`"
        ) from exc
    try:
        return compile_source(text, filename="p4_device_config", self_contained=True)
    except P4Error as exc:
        diags = getattr(exc, "diagnostics", []) or [exc]
        shown = "; ".join(str(d).splitlines()[0] for d in diags[:3])
        raise invalid(f"p4_device_config does not compile: {shown}") from exc


def make_switch(program: Program, cpu_port: int) -> Switch:
    """A fresh engine Switch running `program`, or INVALID_ARGUMENT if the engine cannot run it."""
    from softswitch.engine import CompileError, Switch

    try:
        return Switch(program, cpu_port=cpu_port)
    except CompileError as exc:
        raise invalid(f"p4_device_config cannot run on this target: {exc}") from exc
    except Exception as exc:  # an engine limit the front end missed: refused, never a crash
        raise invalid(f"p4_device_config cannot run on this target: {type(exc).__name__}: "
                      f"{exc}") from exc


def device_config_from_file(
    path: str | Path, include_dirs: tuple[str, ...] = (),
    defines: dict[str, str | None] | None = None,
) -> bytes:
    """The preprocessed, self-contained program text to use as p4_device_config."""
    from softswitch.frontend.diagnostics import Reporter
    from softswitch.frontend.preprocess import preprocess

    path = Path(path)
    reporter = Reporter()
    pre = preprocess(
        path.read_text(), str(path), reporter, include_dirs, defines, base_dir=str(path.parent)
    )
    reporter.raise_if_errors()
    return (ARTEFACT_MAGIC + f" ({path.name})\n" + pre.text).encode()
