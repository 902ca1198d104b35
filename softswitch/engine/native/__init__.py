"""The native engine: the checked program compiled to C and run in-process (cffi).

docs/softswitch-engine.md ("Native engine") describes it; `Switch(..., engine="native")`
selects it.
"""

from .cbuild import available
from .cgen import Unsupported

__all__ = ["Unsupported", "available"]
