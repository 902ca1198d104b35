"""softswitch: a P4_16 (v1model) software target that executes the .p4 file itself.

The public surface is the `Pipeline` boundary described in docs/softswitch-api.md:
the front end (`compile_file`, `compile_source`, `P4Error`) and the engine
(`Switch` and the match-value classes). Imports are lazy so that the front end
can be used without loading the engine and vice versa.
"""

from importlib import import_module

_EXPORTS = {
    "compile_file": "softswitch.frontend",
    "compile_source": "softswitch.frontend",
    "P4Error": "softswitch.frontend",
    "Diagnostic": "softswitch.frontend",
    "Program": "softswitch.frontend",
    "Switch": "softswitch.engine",
    "SwitchError": "softswitch.engine",
    "Output": "softswitch.engine",
    "Digest": "softswitch.engine",
    "Exact": "softswitch.engine",
    "Lpm": "softswitch.engine",
    "Ternary": "softswitch.engine",
    "Range": "softswitch.engine",
    "Optional": "softswitch.engine",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'softswitch' has no attribute {name!r}")
    return getattr(import_module(module), name)
