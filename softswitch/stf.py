"""Runner for STF files, the packet test format of the P4 reference test suite (p4c's bmv2 tests).

Commands (one per line, `#` starts a comment):

    add <table> [<priority>] <key>:<value> ... <action>(<param>:<value>, ...)
    setdefault <table> <action>(<param>:<value>, ...)
    remove <table> [<priority>] <key>:<value> ...
    packet <port> <hex>
    expect <port> [<hex with * don't-care nibbles>[$]]
    wait
    mc_mgrp_create <group>
    mc_node_create <rid> <port> [<port> ...]
    mc_node_associate <group> <node handle>
    mirroring_add <session> <port>
    register_write <register> <index> <value>
    register_read <register> <index> <expected value>
    counter_read <counter> <index> [packets:<n>] [bytes:<n>]
    check_counter <counter>(<index>) [packets|bytes] == <n>

`expect <port>` without data accepts any number of packets on that port
(as p4c's runner). Key values: exact `v`, lpm `v/len`, ternary `v&&&mask` or hex with `*` nibbles,
range `lo..hi` (or `lo->hi`); numbers hex (0x..), binary (0b..), decimal,
dotted IPv4 or colon MAC. Expectations are prefix matches unless they end in
`$`; each port must produce exactly the expected packets, in order.
Priorities are those of p4c's STF runner: the largest number wins (bmv2stf.py
hands BMv2's CLI `10000 - priority`, and in BMv2 the smallest wins). Ternary,
range and optional entries written without a priority rank below every
explicit one, the first one written winning.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from softswitch.engine import Exact, Lpm, Range, SwitchError, Ternary
from softswitch.engine import Optional as OptionalMatch

# STF priorities: the largest number wins, as in p4c's runner (which hands BMv2's CLI
# `10000 - priority`, the smallest winning there) and in the engine and P4Runtime.
# Explicit priorities sit above the automatic ones of entries written without one.
STF_PRIORITY_BASE = 1 << 30


class StfSyntaxError(Exception):
    """A malformed STF line; carries file and line number."""

    def __init__(self, file: str, line: int, message: str) -> None:
        super().__init__(f"{file}:{line}: error: {message}")
        self.file = file
        self.line = line


@dataclass(frozen=True)
class Command:
    """One parsed STF line."""

    line: int
    op: str
    args: tuple


@dataclass
class StfResult:
    """Outcome of an STF run: ok, a human-readable report and the exit code (0, 1 or 2)."""

    ok: bool
    report: str
    code: int = 0


@dataclass
class _Expect:
    line: int
    port: int
    pattern: str | None  # hex nibbles with '*', None = any packet
    exact: bool


# ---------------------------------------------------------------- parsing


def parse_number(text: str) -> int:
    """An STF integer: hex, binary, decimal, dotted IPv4 or colon-separated MAC."""
    t = text.strip().replace("_", "")
    if re.fullmatch(r"\d+\.\d+\.\d+\.\d+", t):
        parts = [int(p) for p in t.split(".")]
        if any(p > 255 for p in parts):
            raise ValueError(f"bad IPv4 address {text!r}")
        return int.from_bytes(bytes(parts), "big")
    if re.fullmatch(r"[0-9a-fA-F]{1,2}(:[0-9a-fA-F]{1,2}){5}", t):
        return int.from_bytes(bytes(int(p, 16) for p in t.split(":")), "big")
    neg = t.startswith("-")
    if neg:
        t = t[1:]
    if t.lower().startswith("0x"):
        v = int(t[2:], 16)
    elif t.lower().startswith("0b"):
        v = int(t[2:], 2)
    elif t.isdigit():
        v = int(t, 10)
    else:
        raise ValueError(f"not a number: {text!r}")
    return -v if neg else v


def _parse_key_value(text: str):
    """A key match value; the kind is fixed later from the table's key spec."""
    if "&&&" in text:
        v, m = text.split("&&&", 1)
        return ("ternary", parse_number(v), parse_number(m))
    if "/" in text:
        v, plen = text.split("/", 1)
        return ("lpm", parse_number(v), int(plen, 0))
    for sep in ("..", "->"):
        if sep in text and not re.fullmatch(r"\d+\.\d+\.\d+\.\d+", text):
            lo, hi = text.split(sep, 1)
            return ("range", parse_number(lo), parse_number(hi))
    if text.strip() == "*":
        return ("ternary", 0, 0)  # any value
    if "*" in text:
        t = text.lower()
        if t.startswith("0x"):
            digits = t[2:]
            value = int(digits.replace("*", "0"), 16)
            mask = int("".join("0" if c == "*" else "f" for c in digits), 16)
            return ("ternary", value, mask)
        if t.startswith("0b"):
            digits = t[2:]
            value = int(digits.replace("*", "0"), 2)
            mask = int("".join("0" if c == "*" else "1" for c in digits), 2)
            return ("ternary", value, mask)
        raise ValueError(f"'*' needs a 0x or 0b value: {text!r}")
    return ("value", parse_number(text))


def _split_action(text: str) -> tuple[str, list[tuple[str, int]]]:
    m = re.fullmatch(r"\s*([A-Za-z_][\w.$]*)\s*(?:\((.*)\))?\s*", text)
    if not m:
        raise ValueError(f"bad action call {text!r}")
    name, body = m.group(1), m.group(2)
    args: list[tuple[str, int]] = []
    if body and body.strip():
        for part in body.split(","):
            if ":" not in part:
                raise ValueError(f"action argument {part.strip()!r} needs name:value")
            pname, pval = part.split(":", 1)
            args.append((pname.strip(), parse_number(pval)))
    return name, args


def _tokens_until_action(rest: str) -> tuple[list[str], str]:
    """Split 'k:v k:v act(a:1, b:2)' into key tokens and the action text."""
    paren = rest.find("(")
    if paren < 0:
        toks = rest.split()
        if not toks:
            raise ValueError("missing action")
        return toks[:-1], toks[-1]
    head = rest[:paren]
    toks = head.split()
    if not toks:
        raise ValueError("missing action name")
    action = toks[-1] + rest[paren:]
    return toks[:-1], action


def parse_stf(text: str, filename: str = "<stf>") -> list[Command]:
    """Parse STF text into commands; StfSyntaxError names the first bad line."""
    cmds: list[Command] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        op, _, rest = line.partition(" ")
        op = op.lower()
        rest = rest.strip()
        try:
            cmds.append(Command(lineno, op, _parse_args(op, rest)))
        except (ValueError, IndexError) as exc:
            raise StfSyntaxError(filename, lineno, f"{op}: {exc}") from None
    return cmds


def _parse_keys(tokens: list[str]) -> tuple[int | None, list[tuple[str, tuple]]]:
    priority = None
    if tokens and re.fullmatch(r"\d+", tokens[0]):
        priority = int(tokens[0])
        tokens = tokens[1:]
    keys = []
    for tok in tokens:
        if ":" not in tok:
            raise ValueError(f"key {tok!r} needs name:value")
        name, value = tok.split(":", 1)
        keys.append((name, _parse_key_value(value)))
    return priority, keys


def _hex_pattern(parts: Sequence[str]) -> tuple[str, bool]:
    text = "".join(parts).replace(" ", "")
    exact = text.endswith("$")
    if exact:
        text = text[:-1]
    text = text.lower()
    if text.startswith("0x"):
        text = text[2:]
    if not re.fullmatch(r"[0-9a-f*]*", text):
        raise ValueError(f"bad hex data {text!r}")
    return text, exact


def _parse_args(op: str, rest: str) -> tuple:
    if op == "add":
        toks, action = _tokens_until_action(rest)
        if not toks:
            raise ValueError("missing table name")
        table = toks[0]
        priority, keys = _parse_keys(toks[1:])
        return (table, priority, keys, _split_action(action))
    if op == "setdefault":
        table, _, action = rest.partition(" ")
        if not table or not action.strip():
            raise ValueError("usage: setdefault <table> <action>(...)")
        return (table, _split_action(action))
    if op == "remove":
        toks = rest.split()
        if not toks:
            raise ValueError("missing table name")
        priority, keys = _parse_keys(toks[1:])
        return (toks[0], priority, keys)
    if op == "packet":
        toks = rest.split()
        if not toks:
            raise ValueError("missing port")
        data, exact = _hex_pattern(toks[1:])
        if "*" in data or exact:
            raise ValueError("'*' and '$' are only allowed in expect")
        if len(data) % 2:
            raise ValueError("odd number of hex digits")
        return (int(toks[0], 0), bytes.fromhex(data))
    if op == "expect":
        toks = rest.split()
        if not toks:
            raise ValueError("missing port")
        if len(toks) == 1:
            return (int(toks[0], 0), None, False)
        data, exact = _hex_pattern(toks[1:])
        return (int(toks[0], 0), data, exact)
    if op == "wait":
        return ()
    if op == "mc_mgrp_create":
        return (parse_number(rest),)
    if op == "mc_node_create":
        toks = rest.split()
        if len(toks) < 2:
            raise ValueError("usage: mc_node_create <rid> <port> [<port> ...]")
        return (parse_number(toks[0]), tuple(parse_number(p) for p in toks[1:]))
    if op == "mc_node_associate":
        toks = rest.split()
        if len(toks) != 2:
            raise ValueError("usage: mc_node_associate <group> <node>")
        return (parse_number(toks[0]), parse_number(toks[1]))
    if op == "mirroring_add":
        toks = rest.split()
        if len(toks) != 2:
            raise ValueError("usage: mirroring_add <session> <port>")
        return (parse_number(toks[0]), parse_number(toks[1]))
    if op == "register_write":
        toks = rest.split()
        if len(toks) != 3:
            raise ValueError("usage: register_write <register> <index> <value>")
        return (toks[0], parse_number(toks[1]), parse_number(toks[2]))
    if op == "register_read":
        toks = rest.split()
        if len(toks) != 3:
            raise ValueError("usage: register_read <register> <index> <expected>")
        return (toks[0], parse_number(toks[1]), parse_number(toks[2]))
    if op == "counter_read":
        toks = rest.split()
        if len(toks) < 3:
            raise ValueError("usage: counter_read <counter> <index> [packets:<n>] [bytes:<n>]")
        expected = {}
        for t in toks[2:]:
            k, _, v = t.partition(":")
            if k not in ("packets", "bytes") or not v:
                raise ValueError(f"expected packets:<n> or bytes:<n>, got {t!r}")
            expected[k] = parse_number(v)
        return (toks[0], parse_number(toks[1]), expected)
    if op == "check_counter":
        m = re.fullmatch(r"(\S+?)\((\S+)\)\s*(?:(packets|bytes)\s*)?==\s*(\S+)", rest)
        if not m:
            raise ValueError("usage: check_counter <counter>(<index>) [packets|bytes] == <n>")
        kind = m.group(3) or "packets"
        return (m.group(1), parse_number(m.group(2)), {kind: parse_number(m.group(4))})
    raise ValueError(f"unknown command {op!r}")


# ---------------------------------------------------------------- running


def _resolve_key_name(table, name: str) -> str:
    names = [k.name for k in table.match_keys]
    # bmv2stf.py writes a stack element `extra[0]` as `extra$0`
    name = re.sub(r"\$([0-9]+)", r"[\1]", name)
    if name not in names:
        # other spellings of a validity key (P4Info's, which the table uses, is `h.$valid$`)
        for alias in (".valid", ".isValid()"):
            if name.endswith(alias):
                name = name[: -len(alias)] + ".$valid$"
                break
    if name in names:
        return name
    hits = [n for n in names if n.endswith("." + name) or name.endswith("." + n)]
    if len(hits) == 1:
        return hits[0]
    raise SwitchError("NOT_FOUND", f"{table.name} has no key field {name}")


def _match_value(kind: str, width: int, parsed: tuple):
    full = (1 << width) - 1
    tag = parsed[0]
    if kind == "exact":
        if tag == "ternary" and parsed[2] & full == full:
            return Exact(parsed[1])
        if tag != "value":
            raise SwitchError("INVALID_ARGUMENT", "exact key needs a plain value")
        return Exact(parsed[1])
    if kind == "lpm":
        if tag == "lpm":
            plen = parsed[2]
            keep = full ^ ((1 << max(width - plen, 0)) - 1) if 0 <= plen <= width else full
            return Lpm(parsed[1] & keep, plen)
        if tag == "ternary":
            return Lpm(parsed[1] & parsed[2], bin(parsed[2] & full).count("1"))
        if tag == "value":
            return Lpm(parsed[1], width)
    if kind == "ternary":
        if tag == "ternary":
            return Ternary(parsed[1] & parsed[2], parsed[2])
        if tag == "value":
            return Ternary(parsed[1], full)
        if tag == "lpm":
            keep = full ^ ((1 << max(width - parsed[2], 0)) - 1)
            return Ternary(parsed[1] & keep, keep)
    if kind == "range":
        if tag == "range":
            return Range(parsed[1], parsed[2])
        if tag == "value":
            return Range(parsed[1], parsed[1])
        if tag == "ternary" and parsed[2] == 0:
            return Range(0, full)
    if kind == "optional":
        if tag == "value":
            return OptionalMatch(parsed[1])
        if tag == "ternary":
            return OptionalMatch(None) if parsed[2] == 0 else OptionalMatch(parsed[1])
    raise SwitchError("INVALID_ARGUMENT", f"a {tag} value cannot match a {kind} key")


def _keys_for(table, keys) -> dict:
    out = {}
    specs = {k.name: k for k in table.match_keys}
    for name, parsed in keys:
        full = _resolve_key_name(table, name)
        spec = specs[full]
        out[full] = _match_value(spec.match_kind, spec.width, parsed)
    return out


def _nibble_diff(expected: str, got: str, exact: bool) -> tuple[bool, str]:
    """(matches, marker line) comparing an expected hex pattern with received hex."""
    ok = True
    marks = []
    for i, c in enumerate(expected):
        g = got[i] if i < len(got) else None
        if c == "*":
            marks.append(" ")
        elif g != c:
            ok = False
            marks.append("^")
        else:
            marks.append(" ")
    if exact and len(got) != len(expected):
        ok = False
        marks.extend("^" * max(len(got) - len(expected), 0))
    return ok, "".join(marks).rstrip()


class StfRunner:
    """Runs parsed STF commands against a Switch and collects the report."""

    def __init__(self, switch, filename: str = "<stf>") -> None:
        self.sw = switch
        self.filename = filename
        self.expects: list[_Expect] = []
        self.got: dict[int, list[bytes]] = {}
        self.errors: list[str] = []
        self.mc_nodes: dict[int, tuple[int, tuple[int, ...]]] = {}
        self.mc_groups: dict[int, list[int]] = {}
        self.auto_priority = 1 << 20
        self.packets_sent = 0

    def fail(self, cmd: Command, message: str) -> None:
        self.errors.append(f"{self.filename}:{cmd.line}: {message}")

    def run(self, cmds: Sequence[Command]) -> None:
        for cmd in cmds:
            try:
                getattr(self, "do_" + cmd.op)(cmd, *cmd.args)
            except SwitchError as exc:
                self.fail(cmd, f"{cmd.op} refused: {exc}")

    def _priority(self, table, priority: int | None) -> int:
        """Engine priority (larger wins) of an STF priority (larger wins, p4c's runner)."""
        if not table.needs_priority:
            return 0
        if priority is not None:
            return STF_PRIORITY_BASE + priority
        self.auto_priority -= 1
        return self.auto_priority

    def _args(self, table, action: str, args: list[tuple[str, int]]) -> dict:
        spec = table.resolve_action_name(action)
        return {name: value for name, value in args} if args or spec.params else {}

    def do_add(self, cmd, table_name, priority, keys, action) -> None:
        table = self.sw.table(table_name)
        aname, args = action
        keydict = _keys_for(table, keys)
        self.sw.table_add(table.name, keydict, aname, self._args(table, aname, args), self._priority(table, priority))

    def do_setdefault(self, cmd, table_name, action) -> None:
        table = self.sw.table(table_name)
        aname, args = action
        self.sw.table_set_default(table.name, aname, self._args(table, aname, args))

    def do_remove(self, cmd, table_name, priority, keys) -> None:
        table = self.sw.table(table_name)
        handle = self.sw.table_find(table.name, _keys_for(table, keys), self._priority(table, priority))
        if handle is None:
            raise SwitchError("NOT_FOUND", f"{table.name}: no entry with these keys")
        self.sw.table_delete(table.name, handle)

    def do_packet(self, cmd, port, data) -> None:
        self.packets_sent += 1
        for out in self.sw.process_packet(port, data):
            self.got.setdefault(out.port, []).append(out.data)

    def do_expect(self, cmd, port, pattern, exact) -> None:
        self.expects.append(_Expect(cmd.line, port, pattern, exact))

    def do_wait(self, cmd) -> None:
        pass  # the engine runs each packet to completion

    def do_mc_mgrp_create(self, cmd, group) -> None:
        if group in self.mc_groups:
            raise SwitchError("ALREADY_EXISTS", f"multicast group {group} exists")
        self.sw.mc_group_set(group, [])
        self.mc_groups[group] = []

    def do_mc_node_create(self, cmd, rid, ports) -> None:
        handle = len(self.mc_nodes)
        self.mc_nodes[handle] = (rid, ports)

    def do_mc_node_associate(self, cmd, group, node) -> None:
        if group not in self.mc_groups:
            raise SwitchError("NOT_FOUND", f"no multicast group {group}")
        if node not in self.mc_nodes:
            raise SwitchError("NOT_FOUND", f"no multicast node {node}")
        nodes = self.mc_groups[group] + [node]
        replicas = [(p, self.mc_nodes[n][0]) for n in nodes for p in self.mc_nodes[n][1]]
        self.sw.mc_group_set(group, replicas)
        self.mc_groups[group] = nodes

    def do_mirroring_add(self, cmd, session, port) -> None:
        self.sw.clone_session_set(session, [(port, 0)])

    def do_register_write(self, cmd, name, index, value) -> None:
        self.sw.register_write(name, index, value)

    def do_register_read(self, cmd, name, index, expected) -> None:
        value = self.sw.register_read(name, index)
        if value != expected:
            self.fail(cmd, f"register {name}[{index}] = {value:#x}, expected {expected:#x}")

    def do_counter_read(self, cmd, name, index, expected) -> None:
        packets, nbytes = self._counter(name, index)
        got = {"packets": packets, "bytes": nbytes}
        for k, v in expected.items():
            if got[k] != v:
                self.fail(cmd, f"counter {name}[{index}] {k} = {got[k]}, expected {v}")

    do_check_counter = do_counter_read

    def _counter(self, name: str, index: int) -> tuple[int, int]:
        try:
            return self.sw.counter_read(name, index)
        except SwitchError as exc:
            if not exc.is_not_found():
                raise
        # a direct counter: index is the handle of the entry
        for dname, (kind, table) in self.sw.direct.items():
            if kind == "counter" and (dname == name or dname.endswith("." + name)):
                return self.sw.direct_counter_read(table, index)
        raise SwitchError("NOT_FOUND", f"no counter named {name}")

    def compare(self) -> None:
        """Check every expectation against what came out, port by port."""
        by_port: dict[int, list[_Expect]] = {}
        for ex in self.expects:
            by_port.setdefault(ex.port, []).append(ex)
        for port in sorted(set(by_port) | set(self.got)):
            exps = by_port.get(port, [])
            got = self.got.get(port, [])
            if exps and all(ex.pattern is None for ex in exps):
                continue  # `expect <port>` without data: any number of packets (as p4c's runner)
            for i, ex in enumerate(exps):
                if i >= len(got):
                    self.errors.append(
                        f"{self.filename}:{ex.line}: port {port}: expected packet #{i + 1} did not arrive\n"
                        f"    expected {ex.pattern or '(any)'}{'$' if ex.exact else ''}"
                    )
                    continue
                if ex.pattern is None:
                    continue
                hexgot = got[i].hex()
                ok, marks = _nibble_diff(ex.pattern, hexgot, ex.exact)
                if not ok:
                    self.errors.append(
                        f"{self.filename}:{ex.line}: port {port}: packet #{i + 1} differs\n"
                        f"    expected {ex.pattern}{'$' if ex.exact else ''}\n"
                        f"    got      {hexgot}\n"
                        f"             {marks}"
                    )
            for j in range(len(exps), len(got)):
                self.errors.append(
                    f"{self.filename}: port {port}: unexpected packet #{j + 1}\n    got      {got[j].hex()}"
                )

    def result(self) -> StfResult:
        self.compare()
        if self.errors:
            return StfResult(False, "\n".join(self.errors) + f"\nFAIL: {len(self.errors)} problem(s)", 1)
        n = len(self.expects)
        return StfResult(True, f"PASS: {self.packets_sent} packet(s) sent, {n} expectation(s) met", 0)


def run_switch(switch, stf_text: str, filename: str = "<stf>") -> StfResult:
    """Run STF text against an existing Switch."""
    try:
        cmds = parse_stf(stf_text, filename)
    except StfSyntaxError as exc:
        return StfResult(False, str(exc), 2)
    runner = StfRunner(switch, filename)
    runner.run(cmds)
    return runner.result()


def run_file(p4_path: str, stf_path: str, include_dirs: Sequence[str] = (), defines: dict | None = None,
             engine: str | None = None) -> StfResult:
    """Compile a P4 program and run an STF test against it (on `engine`, default as Switch's)."""
    from softswitch import P4Error, Switch, compile_file
    from softswitch.engine import CompileError

    try:
        with open(stf_path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        return StfResult(False, f"{stf_path}: error: cannot read: {exc.strerror}", 2)
    try:
        cmds = parse_stf(text, stf_path)
    except StfSyntaxError as exc:
        return StfResult(False, str(exc), 2)
    try:
        program = compile_file(p4_path, include_dirs=tuple(include_dirs), defines=defines or {})
        switch = Switch(program, engine=engine)
    except P4Error as exc:
        return StfResult(False, str(exc), 2)
    except CompileError as exc:
        return StfResult(False, str(exc), 2)
    except OSError as exc:
        return StfResult(False, f"{p4_path}: error: cannot read: {exc.strerror}", 2)
    except Exception as exc:  # an engine limitation must not surface as a traceback
        return StfResult(False, f"{p4_path}: error: the engine cannot run this program: {type(exc).__name__}: {exc}", 2)
    runner = StfRunner(switch, stf_path)
    runner.run(cmds)
    return runner.result()


def show_python(p4_path: str, include_dirs: Sequence[str] = (), defines: dict | None = None) -> str | None:
    """The generated Python module of a program (for debugging), or None when it does not compile."""
    from softswitch import Switch, compile_file

    try:
        return Switch(compile_file(p4_path, include_dirs=tuple(include_dirs), defines=defines or {})).source
    except Exception:  # run_file reports the error properly
        return None


def main(argv: Sequence[str] | None = None) -> int:
    """`softswitch stf PROG.p4 TEST.stf`: 0 when every expectation holds, 1 otherwise, 2 on bad input."""
    ap = argparse.ArgumentParser(prog="softswitch stf", description="Run an STF packet test against a P4 program.")
    ap.add_argument("program", help="the .p4 file")
    ap.add_argument("stf", help="the .stf test")
    ap.add_argument("-I", dest="include", action="append", default=[], help="include directory")
    ap.add_argument("-D", dest="define", action="append", default=[], help="NAME[=VALUE] preprocessor define")
    ap.add_argument("--show-python", action="store_true", help="print the Python the program compiles to, then run")
    ap.add_argument("--engine", choices=["python", "native"], default=None,
                    help="packet engine (default: $SOFTSWITCH_ENGINE, else native where a C compiler "
                         "is found, else python)")
    args = ap.parse_args(argv)
    defines = {}
    for d in args.define:
        k, _, v = d.partition("=")
        defines[k] = v or "1"
    if args.show_python:
        shown = show_python(args.program, args.include, defines)
        if shown is not None:
            print(shown)
    result = run_file(args.program, args.stf, args.include, defines, engine=args.engine)
    stream = sys.stdout if result.code == 0 else sys.stderr
    print(result.report, file=stream)
    return result.code


if __name__ == "__main__":
    sys.exit(main())
