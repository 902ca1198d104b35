"""The testbed's shaped interface: Mininet's ``TCIntf`` with its HTB class's quantum named.

tc derives an HTB class's quantum from its rate (rate / r2q, r2q 10) and warns when that
passes 200,000 bytes, that is for every rate above 16 Mbit/s. Mininet prints the warning
as ``*** Error`` once per shaped interface (32 lines for ls4x2 at 100 Mbit/s) and has no
r2q setting. Each interface has one class, so the quantum (what a class may send per
round while classes share a parent) shapes nothing here; naming it keeps tc quiet.
"""

from __future__ import annotations

from typing import Any

# isort: off
import topologies.mininet_import  # noqa: F401  (must come before any other mininet import)
from mininet.link import TCIntf, TCLink
# isort: on

QUANTUM = 15_000
"""Bytes: ten full-size frames, the same as Mininet's 15k burst."""


class ShapedIntf(TCIntf):
    """``TCIntf`` whose HTB class carries ``quantum QUANTUM``."""

    def bwCmds(self, *args: Any, **kwargs: Any) -> tuple[list[str], str]:  # noqa: N802 (Mininet's name)
        cmds, parent = super().bwCmds(*args, **kwargs)
        return [f"{c} quantum {QUANTUM}" if " htb rate " in c else c for c in cmds], parent


class ShapedLink(TCLink):
    """``TCLink`` with a ``ShapedIntf`` at both ends."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("cls1", ShapedIntf)
        kwargs.setdefault("cls2", ShapedIntf)
        super().__init__(*args, **kwargs)
