"""softswitch front end: preprocess, parse and check a P4_16 (v1model) program.

`compile_file` / `compile_source` return a `Program` (see program.py) or raise
`P4Error` listing every diagnostic. See ast.py for what the checked tree
guarantees to the engine.
"""

from .compiler import compile_file, compile_source
from .diagnostics import Diagnostic, P4Error
from .program import MainPackage, Program

__all__ = ["compile_file", "compile_source", "Diagnostic", "P4Error", "MainPackage", "Program"]
