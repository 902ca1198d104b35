"""Compile a program's C once with the system compiler (cffi, API mode) and load it.

The shared object is cached under `$SOFTSWITCH_NATIVE_CACHE` (default
`~/.cache/softswitch/native`), named by a hash of the C source, the compiler
flags, the compiler's version and the Python ABI, so a program is compiled once
per machine. Compilation happens in a private directory and the result is moved
into place atomically, so concurrent processes never load a half-written file.

`SOFTSWITCH_NATIVE_SANITIZE=1` builds with AddressSanitizer and
UndefinedBehaviorSanitizer (the process must then preload libasan; see
tests/softswitch/test_native_sanitizers.py).
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import CompileError

FLAGS = ["-O2", "-std=gnu11", "-fno-strict-aliasing", "-Wno-unused-label", "-Wno-unused-variable",
         "-Wno-unused-but-set-variable", "-Wno-unused-function"]
SANITIZE_FLAGS = ["-O1", "-g", "-std=gnu11", "-fsanitize=address,undefined", "-fno-omit-frame-pointer",
                  "-fno-sanitize-recover=undefined", "-Wno-unused-label", "-Wno-unused-variable",
                  "-Wno-unused-but-set-variable", "-Wno-unused-function"]
SANITIZE_ENV = "SOFTSWITCH_NATIVE_SANITIZE"
CACHE_ENV = "SOFTSWITCH_NATIVE_CACHE"


def sanitizing() -> bool:
    """Whether builds use the sanitizer flags ($SOFTSWITCH_NATIVE_SANITIZE)."""
    return os.environ.get(SANITIZE_ENV, "") not in ("", "0")


def cache_dir() -> Path:
    """Where compiled programs are kept."""
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path.home() / ".cache" / "softswitch" / "native"


@lru_cache(maxsize=1)
def compiler_version() -> str:
    """`cc --version`'s first line; empty when no C compiler is found."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    exe = shutil.which(cc.split()[0])
    if exe is None:
        return ""
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.splitlines()[0] if out.stdout else ""


def available() -> str | None:
    """None when native programs can be built here, otherwise why not."""
    try:
        import cffi  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        return "cffi is not installed"
    if not compiler_version():
        return "no C compiler found"
    return None


_loaded: dict[str, Any] = {}
# cffi builds in the process's working directory (it changes into its tmpdir), which every
# thread shares: two builds at once (a pipeline and the ring I/O, two P4Runtime requests)
# link each other's objects or lose their directory. One build at a time per process.
_build_lock = threading.Lock()


def load(source: str, cdef: str, where: str) -> Any:
    """The compiled module (`.ffi`, `.lib`) of `source`; compiled on first use."""
    why = available()
    if why is not None:
        raise CompileError(where, f"the native engine cannot run here: {why}; --engine python runs it")
    flags = SANITIZE_FLAGS if sanitizing() else FLAGS
    abi = sysconfig.get_config_var("SOABI") or sys.version
    digest = hashlib.sha256("\0".join([source, cdef, " ".join(flags), compiler_version(), abi]).encode()).hexdigest()
    name = f"_ssnative_{digest[:24]}"
    with _build_lock:
        mod = _loaded.get(name)
        if mod is not None:
            return mod
        cache = cache_dir()
        suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
        target = cache / (name + suffix)
        if not target.exists():
            # switches of one fabric start together with the same program: one process
            # compiles it, the others wait for the file instead of compiling it again
            cache.mkdir(parents=True, exist_ok=True)
            with open(cache / f".{name}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not target.exists():
                    _compile(name, source, cdef, flags, cache, target, where)
        spec = importlib.util.spec_from_file_location(name, target)
        if spec is None or spec.loader is None:
            raise CompileError(where, f"cannot load the compiled program {target}")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _loaded[name] = mod
        return mod


def _compile(name: str, source: str, cdef: str, flags: list[str], cache: Path, target: Path,
             where: str) -> None:
    import cffi  # type: ignore[import-untyped]

    ffi = cffi.FFI()
    ffi.cdef(cdef)
    ffi.set_source(name, source, extra_compile_args=flags,
                   extra_link_args=["-fsanitize=address,undefined"] if flags is SANITIZE_FLAGS else [])
    with tempfile.TemporaryDirectory(dir=cache, prefix=".build-") as tmp:
        try:
            built = Path(ffi.compile(tmpdir=tmp, verbose=False))
        except Exception as exc:  # the compiler's message, never a traceback
            raise CompileError(where, f"the C compiler failed on the generated program: {exc}") from None
        os.replace(built, target)
