"""Execution engine of the softswitch: v1model semantics as BMv2 simple_switch.

`Switch(program)` compiles a checked program into Python once and runs packets
through it; see docs/softswitch-api.md for the control-plane surface.
"""

from .errors import CompileError, SwitchError
from .match import Exact, Lpm, Optional, Range, Ternary
from .runtime import Digest
from .switch import Output, Switch, check_program
from .tables import Entry

__all__ = [
    "CompileError",
    "Digest",
    "Entry",
    "Exact",
    "Lpm",
    "Optional",
    "Output",
    "Range",
    "Switch",
    "SwitchError",
    "Ternary",
    "check_program",
]
