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

COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("softswitch.cli:check_main", "parse and check a P4 program, print diagnostics"),
    "stf": ("softswitch.stf:main", "run an STF packet test: softswitch stf PROG.p4 TEST.stf"),
    "compile": ("softswitch.p4info:main", "write P4Info (--p4info) and device config of a program"),
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


def _engine_problem(prog):
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
