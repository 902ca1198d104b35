"""Compile a checked P4_16 program into Python source, executed once with exec().

Every parser state, action, function, table apply and control body becomes a
straight-line Python function; headers and structs become classes with
__slots__ (fields `f_<name>`, validity `_v`). Control-level names live in a
per-invocation frame object `F`; the packet's pass state is `P`
(runtime.PacketContext). Tables and extern instances are module globals built
by `softswitch.engine.builder` from the same declarations.

One module per construct: values (representation of P4 types), expressions,
packing (field lists as integers), statements, calls (and externs), parsers,
controls (and actions, functions, tables); program.py combines them.
"""

from .base import ActionInfo, Emitter, ExternInfo, TableInfo
from .program import Codegen
from .values import is_agg, rt, width_of

__all__ = ["ActionInfo", "Codegen", "Emitter", "ExternInfo", "TableInfo", "is_agg", "rt", "width_of"]
