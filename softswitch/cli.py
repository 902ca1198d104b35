"""`softswitch` command line: subcommands are registered in COMMANDS.

To add a subcommand, add one line to COMMANDS: name -> ("module:function", help).
The function receives the remaining arguments (list[str]) and returns the exit code.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from softswitch.frontend import Diagnostic, Program

COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("softswitch.cli:check_main", "parse and check a P4 program, print diagnostics"),
    "stf": ("softswitch.stf:main", "run an STF packet test: softswitch stf PROG.p4 TEST.stf"),
    "compile": ("softswitch.cli:compile_main", "write P4Info (--p4info) and device config of a program"),
    "run": ("softswitch.runner:main", "run a switch: softswitch run PROG.p4 -i 1@veth1 ... (P4Runtime)"),
}


def _usage() -> str:
    lines = ["usage: softswitch COMMAND [ARGS...]", "", "commands:"]
    width = max(len(n) for n in COMMANDS)
    for name, (_, help_text) in COMMANDS.items():
        lines.append(f"  {name.ljust(width)}  {help_text}")
    lines.append("")
    lines.append("`softswitch COMMAND --help` describes a command's arguments.")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `softswitch` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(_usage())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"softswitch: unknown command '{name}'\n\n{_usage()}", file=sys.stderr)
        return 2
    target, _ = COMMANDS[name]
    module, func = target.split(":")
    try:
        handler = getattr(import_module(module), func)
        return int(handler(rest) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # no traceback for users; SOFTSWITCH_DEBUG=1 shows it
        if os.environ.get("SOFTSWITCH_DEBUG"):
            raise
        print(f"softswitch {name}: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 3


def _defines(items: list[str]) -> dict[str, str]:
    out = {}
    for d in items:
        k, _, v = d.partition("=")
        out[k] = v if v else "1"
    return out


def check_main(argv: Sequence[str]) -> int:
    """`softswitch check PROG.p4`: 0 when clean, 1 on errors (printed with file:line:col)."""
    ap = argparse.ArgumentParser(prog="softswitch check",
                                 description="Parse and check a P4_16 v1model program.")
    ap.add_argument("program", help="the .p4 file")
    ap.add_argument("-I", dest="include", action="append", default=[], metavar="DIR",
                    help="include directory (repeatable)")
    ap.add_argument("-D", dest="define", action="append", default=[], metavar="NAME[=VAL]",
                    help="preprocessor define (repeatable)")
    ap.add_argument("--front-end-only", action="store_true",
                    help="skip building the program in the engine (which reports constructs "
                         "the engine cannot execute)")
    dump = ap.add_mutually_exclusive_group()
    dump.add_argument("--dump-ast", action="store_true", help="print the syntax tree")
    dump.add_argument("--dump-ir", action="store_true",
                      help="print the checked tree with types and resolved names")
    args = ap.parse_args(list(argv))

    from softswitch.frontend import P4Error, compile_file
    from softswitch.frontend.dump import dump_program

    try:
        prog = compile_file(args.program, include_dirs=args.include,
                            defines=_defines(args.define))
    except P4Error as exc:
        for d in exc.diagnostics:
            print(d, file=sys.stderr)
        n = sum(1 for d in exc.diagnostics if d.severity == "error")
        print(f"{n} error(s)", file=sys.stderr)
        return 1
    for w in prog.warnings:
        print(w, file=sys.stderr)
    if not args.front_end_only:
        problem = _engine_problem(prog)
        if problem is not None:
            print(problem, file=sys.stderr)
            print("1 error(s)", file=sys.stderr)
            return 1
    if args.dump_ast or args.dump_ir:
        print(dump_program(prog, with_types=args.dump_ir))
    else:
        info = prog.info
        print(f"{args.program}: ok ({len(info.tables)} tables, {len(info.actions)} actions, "
              f"{len(prog.warnings)} warning(s))")
    return 0


def compile_main(argv: Sequence[str]) -> int:
    """`softswitch compile PROG.p4`: check a program, write its P4Info and device config."""
    ap = argparse.ArgumentParser(prog="softswitch compile")
    ap.add_argument("program", help="P4_16 program (.p4)")
    ap.add_argument("--p4info", metavar="OUT.txtpb", help="write the P4Info (text format) here")
    ap.add_argument("--device-config", metavar="OUT.p4cfg",
                    help="write the self-contained device config for SetForwardingPipelineConfig")
    ap.add_argument("-I", dest="include_dirs", action="append", default=[],
                    help="include directory")
    ap.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]")
    args = ap.parse_args(list(argv))

    from softswitch.frontend import P4Error, compile_file
    from softswitch.p4info import P4InfoError, p4info_from_program, p4info_text
    from softswitch.p4runtime.pipeline_loader import device_config_from_file

    # `-D X` defines X as 1, `-D X=` as empty (as cc does)
    defines: dict[str, str | None] = {}
    for d in args.defines:
        name, eq, value = d.partition("=")
        defines[name] = value if eq else None
    include_dirs = tuple(args.include_dirs)
    try:
        program = compile_file(args.program, include_dirs=include_dirs, defines=defines)
        p4info = p4info_from_program(program)
        config = device_config_from_file(args.program, include_dirs, defines)
    except P4Error as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except (P4InfoError, OSError) as exc:
        print(f"{args.program}: error: {exc}", file=sys.stderr)
        return 1
    if args.p4info:
        Path(args.p4info).write_text(p4info_text(p4info))
    if args.device_config:
        Path(args.device_config).write_bytes(config)
    return 0


def _engine_problem(prog: Program) -> Diagnostic | None:
    """Build the program in the engine; a construct it cannot execute becomes a Diagnostic."""
    import linecache

    from softswitch.frontend import Diagnostic

    try:
        from softswitch.engine import Switch
        from softswitch.engine.errors import CompileError
    except ImportError:
        return None
    try:
        Switch(prog)
    except CompileError as exc:
        loc = exc.loc
        file, line, col = (getattr(loc, "file", "?"), getattr(loc, "line", 0),
                           getattr(loc, "col", 0))
        source = linecache.getline(file, line) if isinstance(file, str) and line else ""
        return Diagnostic(file, line, col, "error", exc.message, source.rstrip("\n"))
    return None


if __name__ == "__main__":
    sys.exit(main())
