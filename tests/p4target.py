"""Which P4 target the packet tests drive: softswitch in-process (default) or BMv2.

``pytest --target bmv2`` (or ``P4_TARGET=bmv2``) runs the SGLB packet tests
and the STF corpus on ``simple_switch_grpc`` with the program compiled by
``p4c-bm2-ss``: the same calls, the same expected packets. A BMv2 started for a
test is stopped when the test ends, pass or fail (``close_all``, called by the
autouse fixture in ``tests/conftest.py``).

On BMv2 the switch's clock is the host's: a test that moves softswitch's
clock forward by hand waits that long instead (time passes at least as much
as the test asks); a test that needs time to stand still between packets
cannot be reproduced and is marked on this target (``BMV2_CLOCK``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

SOFTSWITCH, BMV2 = "softswitch", "bmv2"
TARGETS = (SOFTSWITCH, BMV2)

_selected = os.environ.get("P4_TARGET", SOFTSWITCH).lower()
_open: list[Any] = []


def select(target: str) -> None:
    """Set the target (tests/conftest.py does, from --target)."""
    global _selected
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r} (choose from {', '.join(TARGETS)})")
    _selected = target


def selected() -> str:
    """The target the packet tests run on."""
    return _selected


def on_bmv2() -> bool:
    """True when the packet tests run on BMv2."""
    return _selected == BMV2


def compile_program(path: Path | str, defines: dict[str, str] | None = None) -> Any:
    """The program for the selected target: softswitch's Program, or p4c's output for BMv2."""
    if on_bmv2():
        from bmv2.compiler import compile_program as p4c

        return p4c(path, defines=defines)
    from softswitch import compile_file

    return compile_file(str(path), defines=defines or None)


def make_switch(program: Any, cpu_port: int = 255, clock: Any = None) -> Any:
    """A switch running ``program`` on the selected target."""
    from bmv2.compiler import CompiledProgram

    if isinstance(program, CompiledProgram):
        from bmv2.switch import Bmv2Switch

        if clock is not None and not getattr(clock, "real_time", False):
            clock.__class__ = _real_time_class(type(clock))
        sw = Bmv2Switch(program)
        _open.append(sw)
        return sw
    from softswitch import Switch

    return Switch(program, cpu_port=cpu_port, clock=clock)


def _real_time_class(cls: type) -> type:
    """``cls`` with ``now`` as a property that waits when moved forward (keeps isinstance)."""

    def get(self: Any) -> int:
        return int(self.__dict__["now"])

    def set_(self: Any, value: int) -> None:
        old = self.__dict__.get("now", value)
        if value > old:
            time.sleep((value - old) / 1e6)
        self.__dict__["now"] = value

    return type(f"RealTime{cls.__name__}", (cls,), {"now": property(get, set_), "real_time": True})


def run_stf(p4_path: Path, stf_path: Path) -> Any:
    """Run an STF test on the selected target; softswitch.stf's StfResult."""
    from softswitch.stf import run_file, run_switch

    if not on_bmv2():
        return run_file(str(p4_path), str(stf_path))
    sw = make_switch(compile_program(p4_path))
    return run_switch(sw, stf_path.read_text(), str(stf_path))


def close_all() -> None:
    """Stop every BMv2 started since the last call."""
    while _open:
        _open.pop().close()
