"""One program of p4c's test corpus through softswitch, in its own process.

Run by bench_p4c_corpus.py, one subprocess per program so that a crash, a
hang or a memory blow-up of one program cannot take the others with it.
Prints one JSON object: {"status": ..., "detail": ...}.

Modes:
  stf PROG STF         run the STF test; pass / fail / reject (compile error)
  accept PROG          front end + engine build; accept / reject
  p4info PROG REF      P4Info compared with p4c's reference; same / differ / reject
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def _compile(prog: str):
    """Front end and engine build; returns the program or raises."""
    from softswitch import Switch, compile_file

    program = compile_file(prog, include_dirs=(str(Path(prog).parent),))
    Switch(program)
    return program


def _rejection(exc: BaseException) -> dict:
    from softswitch.engine.errors import CompileError
    from softswitch.frontend import P4Error

    if isinstance(exc, P4Error | CompileError):
        return {"status": "reject", "detail": _first_line(str(exc))}
    return {"status": "crash", "detail": f"{type(exc).__name__}: {_first_line(str(exc))}"}


def run_stf(prog: str, stf: str) -> dict:
    from softswitch.stf import run_file

    result = run_file(prog, stf, include_dirs=(str(Path(prog).parent),))
    if result.ok:
        return {"status": "pass", "detail": ""}
    if result.code == 2:
        detail = _first_line(result.report)
        crashed = "the engine cannot run this program" in detail or "internal error" in detail
        return {"status": "crash" if crashed else "reject", "detail": detail}
    return {"status": "fail", "detail": _first_line(result.report)}


def run_accept(prog: str) -> dict:
    try:
        _compile(prog)
    except Exception as exc:  # classified, not hidden: crash vs rejection
        return _rejection(exc)
    return {"status": "accept", "detail": ""}


def _canonical(msg) -> dict:
    """P4Info as a dict, without pkg_info (p4c fills arch/version from its own build)."""
    from google.protobuf.json_format import MessageToDict

    d = MessageToDict(msg, preserving_proto_field_name=True)
    d.pop("pkg_info", None)
    return d


def _differences(ours: dict, ref: dict) -> list[str]:
    """Names of entities present on one side only or different, per kind."""
    out = []
    for kind in sorted(set(ours) | set(ref)):
        a = {e.get("preamble", {}).get("name", json.dumps(e, sort_keys=True)): e
             for e in ours.get(kind, [])} if isinstance(ours.get(kind), list) else {}
        b = {e.get("preamble", {}).get("name", json.dumps(e, sort_keys=True)): e
             for e in ref.get(kind, [])} if isinstance(ref.get(kind), list) else {}
        for name in sorted(set(a) - set(b)):
            out.append(f"{kind}: extra {name}")
        for name in sorted(set(b) - set(a)):
            out.append(f"{kind}: missing {name}")
        for name in sorted(set(a) & set(b)):
            if a[name] != b[name]:
                out.append(f"{kind}: differs {name}")
    return out


def run_p4info(prog: str, ref: str) -> dict:
    from finsy.proto import p4i
    from google.protobuf import text_format

    try:
        program = _compile(prog)
    except Exception as exc:
        return _rejection(exc)
    from softswitch.p4info import p4info_from_program_info

    ours = p4info_from_program_info(program.info)
    theirs = text_format.Parse(Path(ref).read_text(), p4i.P4Info())
    diffs = _differences(_canonical(ours), _canonical(theirs))
    if not diffs:
        return {"status": "same", "detail": ""}
    return {"status": "differ", "detail": "; ".join(diffs[:6])}


def main(argv: list[str]) -> int:
    mode, args = argv[0], argv[1:]
    # an internal error of the engine on a packet is a crash here, not a failed expectation
    os.environ["SOFTSWITCH_STRICT"] = "1"
    try:
        if mode == "stf":
            out = run_stf(*args)
        elif mode == "accept":
            out = run_accept(*args)
        elif mode == "p4info":
            out = run_p4info(*args)
        else:
            raise SystemExit(f"unknown mode {mode!r}")
    except RecursionError as exc:
        out = {"status": "crash", "detail": f"RecursionError: {_first_line(str(exc))}"}
    except Exception as exc:
        out = {"status": "crash", "detail": f"{type(exc).__name__}: {_first_line(str(exc))}"}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
