"""Bounded work in every stage of the front end: the limits and the passes that enforce them.

A P4 program may come from a hostile P4Runtime client (`p4_device_config`), so no
input may make the preprocessor, the parser, the checker or the engine do unbounded
work. Each stage checks its own limit and reports a located diagnostic:

* preprocessor (preprocess.py): source size, macro expansion work and nesting,
  include depth (an include cycle is named as such);
* tokens (`check_tokens`, before parsing): bracket nesting and integer literal sizes;
* syntax tree (`check_syntax_depth`, before the AST is built): nesting depth;
* AST before the checker (`check_syntax_tree`): expression and statement nesting,
  literal values, type widths, header-stack sizes and constant shift amounts and
  magnitudes, with a small evaluator of compile-time constants so that the
  checker never folds a constant too large to compute;
* AST after the checker (`check_resolved_tree`): resolved widths, stack sizes and
  the sizes of tables and extern instances, which the engine allocates.

The numbers are chosen far above what real programs use (p4c's 1,500 test programs
and p4src/sglb.p4 stay below a tenth of each; see docs/softswitch-p4runtime.md) and
low enough that the engine's generated Python stays within CPython's own nesting
limits.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from . import ast as A
from .diagnostics import Reporter


@dataclass(frozen=True)
class FrontendLimits:
    """The limits of each front-end stage (docs/softswitch-p4runtime.md lists them)."""

    source_bytes: int = 1 << 20
    """Size of one source text: the program given and each file it includes."""
    preprocessed_bytes: int = 4 << 20
    """Size of the preprocessed program (all includes and macros expanded)."""
    macro_tokens: int = 2_000_000
    """Tokens that macro expansion may handle in one program, counted at every level
    of nesting (p4c's largest test program, switch_p4_16.p4, needs 62,000; our own
    sglb.p4 unrolled for MAX_PATHS=64 needs 830,000)."""
    macro_depth: int = 64
    """Macros expanding inside the expansion of other macros."""
    include_depth: int = 32
    """Files open at once through nested `#include`s."""
    bracket_depth: int = 1024
    """Nesting of `(`, `[` and `{` (real programs: at most 10; p4c's parser stack
    takes 10,000)."""
    syntax_depth: int = 2500
    """Depth of the syntax tree (real programs: at most 24; a chain `a + b + ...` is
    as deep as it is long). The parser and the checker recurse once per level."""
    expression_depth: int = 1024
    """Operators, casts, calls, slices and indexes nested in one expression evaluated
    at run time (constant subexpressions are folded and do not count). The engine
    compiles deep expressions with a stack of its own and spills them into
    temporaries, so this bounds compile work, not a CPython limit."""
    statement_depth: int = 64
    """Nested `if`, `switch` and block statements; an `else if` continues its chain
    and does not nest (the engine compiles chains flat; CPython refuses more than
    100 indentation levels in the generated code)."""
    bit_width: int = 65536
    """Width W of bit<W>, int<W>, varbit<W> and of integer literals (`Ww`, `Ws`)."""
    value_bits: int = 1 << 20
    """Bits of an integer literal's value and of any compile-time constant (p4c's
    integers are unbounded; a 200,000-digit literal needs 664,386 bits)."""
    shift_amount: int = 65536
    """Amount of a shift whose amount is a compile-time constant."""
    stack_size: int = 256
    """Elements of a header stack (the engine keeps every element per packet)."""
    instance_size: int = 1 << 20
    """Size of a table, value set, action profile or selector, and cells of a
    counter, meter or register array."""


LIMITS = FrontendLimits()


class LimitExceeded(Exception):
    """A limit hit where the stage cannot go on; `loc` is the user's file and line."""

    def __init__(self, loc: A.Loc, message: str) -> None:
        super().__init__(message)
        self.loc = loc
        self.message = message


# ---------------------------------------------------------------- tokens

_INT_TOKEN = re.compile(r"(?:(\d+)[ws])?(0[xX]|0[bB]|0[oO]|0[dD])?(.*)", re.S)
_BITS_PER_DIGIT = {"x": 4.0, "b": 1.0, "o": 3.0, "d": math.log2(10)}
_OPEN, _CLOSE = "([{", ")]}"


def literal_bits_lower_bound(text: str) -> tuple[int | None, int]:
    """(width prefix or None, a lower bound of the value's bit length) of an integer token.

    Computed from the digit count without converting, so that a huge literal costs
    nothing before it is refused.
    """
    m = _INT_TOKEN.fullmatch(text)
    assert m is not None, text  # the lexer produced this token from the same pattern
    width_text, base, body = m.group(1), m.group(2), m.group(3)
    width = None
    if width_text is not None:
        width = int(width_text) if len(width_text) <= 12 else 1 << 62
    digits = body.replace("_", "").lstrip("0")
    per_digit = _BITS_PER_DIGIT[base[1].lower()] if base else _BITS_PER_DIGIT["d"]
    return width, int(max(len(digits) - 1, 0) * per_digit)


def check_tokens(toks, loc_of: Callable[[int, int], A.Loc], reporter: Reporter,
                 limits: FrontendLimits = LIMITS) -> bool:
    """Bracket nesting and integer literal sizes; False (and errors reported) if exceeded."""
    ok = True
    depth = 0
    for t in toks:
        kind = t.kind
        if kind in _OPEN:
            depth += 1
            if depth > limits.bracket_depth:
                reporter.error(loc_of(t.line, t.col),
                               f"brackets nested deeper than {limits.bracket_depth} levels")
                return False
        elif kind in _CLOSE:
            depth -= 1
        elif kind == "INTEGER":
            width, bits = literal_bits_lower_bound(t.value)
            if width is not None and width > limits.bit_width:
                reporter.error(loc_of(t.line, t.col), f"integer literal width {_short(t.value)} "
                               f"is above the limit of {limits.bit_width} bits")
                ok = False
            elif bits > limits.value_bits:
                reporter.error(loc_of(t.line, t.col), f"integer literal {_short(t.value)} has "
                               f"more than {limits.value_bits} bits")
                ok = False
    return ok


def _short(text: str, keep: int = 24) -> str:
    return text if len(text) <= keep else text[:keep] + "..."


def check_syntax_depth(tree, loc_of: Callable[[int, int], A.Loc], reporter: Reporter,
                       limits: FrontendLimits = LIMITS) -> bool:
    """Depth of a lark parse tree, measured without recursion; False if too deep."""
    from lark import Tree

    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, Tree):
            continue
        if depth > limits.syntax_depth:
            line, col = _first_position(node)
            reporter.error(loc_of(line, col), f"program nested deeper than {limits.syntax_depth} "
                           "levels (operators, statements and declarations)")
            return False
        stack.extend((c, depth + 1) for c in node.children)
    return True


def _first_position(node) -> tuple[int, int]:
    """Where the construct starts: its first token (a left-deep chain starts at its first term)."""
    from lark import Tree

    while isinstance(node, Tree):
        meta = node.meta
        if not getattr(meta, "empty", True):
            return meta.line, meta.column
        if not node.children:
            break
        node = node.children[0]
    if getattr(node, "line", None) is not None:
        return node.line, node.column
    return 1, 1


# ---------------------------------------------------------------- AST walking

_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(cls: type) -> tuple[str, ...]:
    """Fields of an AST class that hold syntax (back-references typed `Any` excluded)."""
    names = _CHILD_FIELDS.get(cls)
    if names is None:
        names = tuple(
            f.name for f in dataclasses.fields(cls)
            if f.name not in ("loc", "annotations")
            and not str(f.type).startswith(("Any", "list[Any]"))
        )
        if cls is A.TableProperty:
            names += ("value",)
        _CHILD_FIELDS[cls] = names
    return names


def _children(node: A.Node) -> Iterator[A.Node]:
    for name in _child_fields(type(node)):
        yield from _nodes_in(getattr(node, name, None))


def _nodes_in(value) -> Iterator[A.Node]:
    if isinstance(value, A.Node):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _nodes_in(v)


_SCOPES = (A.ControlDecl, A.ParserDecl, A.ActionDecl, A.FunctionDecl, A.ParserState, A.BlockStmt)
_COMPOUND = (A.IfStmt, A.SwitchStmt, A.BlockStmt)


# ---------------------------------------------------------------- constants


@dataclass(frozen=True)
class _Const:
    value: int
    width: int | None  # None: an arbitrary-precision `int`
    signed: bool = False


class _TooLarge(Exception):
    def __init__(self, node: A.Node, message: str) -> None:
        super().__init__(message)
        self.node = node
        self.message = message


class _Evaluator:
    """Values of compile-time constant expressions, computed only while they stay bounded.

    It follows the checker's folding closely enough to see every constant the
    checker would compute (literals, named constants, serializable enum members,
    casts, arithmetic, shifts, concatenation); anything else is None ("not known
    here") and left to the checker, which then folds only bounded values.
    """

    def __init__(self, limits: FrontendLimits) -> None:
        self.limits = limits
        self.memo: dict[int, _Const | None] = {}
        self.enums: dict[str, dict[str, A.Expression]] = {}

    def value(self, e: A.Node | None, scopes: tuple[dict, ...]) -> _Const | None:
        if not isinstance(e, A.Expression):
            return None
        key = id(e)
        if key not in self.memo:
            self.memo[key] = None  # a cyclic definition evaluates to "unknown"
            self.memo[key] = self._eval(e, scopes)
        return self.memo[key]

    def width(self, ref: A.TypeRef | None, scopes) -> int | None:
        if isinstance(ref, (A.BitsTypeRef, A.VarbitTypeRef)) and ref.width is not None:
            c = self.value(ref.width, scopes)
            return c.value if c is not None else None
        return None

    def _eval(self, e: A.Expression, scopes) -> _Const | None:
        lim = self.limits
        if isinstance(e, A.IntLiteral):
            return _Const(e.value, e.width, e.signed)
        if isinstance(e, A.PathExpr):
            for scope in reversed(scopes):
                if e.name in scope:
                    decl = scope[e.name]
                    c = self.value(decl.value, scopes)
                    w = self.width(decl.type_ref, scopes)
                    if c is not None and w is not None:
                        return self._wrap(c.value, w, isinstance(decl.type_ref, A.BitsTypeRef)
                                          and decl.type_ref.signed)
                    return c
            return None
        if isinstance(e, A.MemberExpr) and isinstance(e.expr, A.PathExpr):
            member = self.enums.get(e.expr.name, {}).get(e.member)
            return self.value(member, scopes) if member is not None else None
        if isinstance(e, A.CastExpr):
            c = self.value(e.expr, scopes)
            if c is None:
                return None
            w = self.width(e.type_ref, scopes)
            if w is None or w > lim.bit_width:
                return c
            return self._wrap(c.value, w, isinstance(e.type_ref, A.BitsTypeRef) and e.type_ref.signed)
        if isinstance(e, A.UnaryExpr):
            c = self.value(e.operand, scopes)
            if c is None or e.op not in ("-", "~"):
                return None
            v = -c.value if e.op == "-" else ~c.value
            return self._wrap(v, c.width, c.signed) if c.width is not None else _Const(v, None)
        if isinstance(e, A.BinaryExpr):
            return self._binary(e, scopes)
        return None

    def _binary(self, e: A.BinaryExpr, scopes) -> _Const | None:
        lim = self.limits
        a = self.value(e.left, scopes)
        b = self.value(e.right, scopes)
        op = e.op
        if op in ("<<", ">>") and b is not None and b.value > lim.shift_amount:
            raise _TooLarge(e, f"shift amount {b.value} is above the limit of {lim.shift_amount}")
        if a is None or b is None:
            return None
        width = a.width if a.width is not None else b.width
        signed = a.signed if a.width is not None else b.signed
        if op == "++":
            if a.width is None or b.width is None:
                return None
            if a.width + b.width > lim.bit_width:
                raise _TooLarge(e, f"concatenation is {a.width + b.width} bits wide, above the "
                                f"limit of {lim.bit_width}")
            return _Const(((a.value & _mask(a.width)) << b.width) | (b.value & _mask(b.width)),
                          a.width + b.width, a.signed)
        if op == "<<":
            if a.width is not None:
                return _Const(0, a.width, a.signed) if b.value >= a.width else \
                    self._wrap(a.value << b.value, a.width, a.signed)
            self._bounded(e, abs(a.value).bit_length() + b.value)
            return _Const(a.value << b.value, None)
        if op == ">>":
            return _Const(a.value >> min(b.value, lim.shift_amount), a.width, a.signed)
        if op == "*":
            if width is None:
                self._bounded(e, abs(a.value).bit_length() + abs(b.value).bit_length())
            v = a.value * b.value
        elif op == "+":
            v = a.value + b.value
        elif op == "-":
            v = a.value - b.value
        elif op in ("/", "%"):
            if b.value == 0:
                return None
            v = a.value // b.value if op == "/" else a.value % b.value
        elif op == "&":
            v = a.value & b.value
        elif op == "|":
            v = a.value | b.value
        elif op == "^":
            v = a.value ^ b.value
        else:
            return None
        if width is None:
            self._bounded(e, abs(v).bit_length())
            return _Const(v, None)
        return self._wrap(v, width, signed)

    def _bounded(self, e: A.Node, bits: int) -> None:
        if bits > self.limits.value_bits:
            raise _TooLarge(e, f"compile-time value needs more than {self.limits.value_bits} bits")

    def _wrap(self, v: int, width: int | None, signed: bool) -> _Const:
        if width is None:
            return _Const(v, None)
        v &= _mask(width)
        if signed and width and v >> (width - 1):
            v -= 1 << width
        return _Const(v, width, signed)


def _mask(width: int) -> int:
    return (1 << width) - 1


# ---------------------------------------------------------------- AST passes


def check_syntax_tree(tree: A.P4Program | None, reporter: Reporter,
                      limits: FrontendLimits = LIMITS) -> None:
    """Limits on the AST before the checker folds constants and resolves types."""
    if tree is None:
        return
    ev = _Evaluator(limits)
    for d in tree.decls:
        if isinstance(d, A.EnumDecl):
            ev.enums[d.name] = {m.name: m.value for m in d.members if m.value is not None}
    top: dict[str, A.ConstantDecl] = {}
    # (node, parent, statement depth, scopes)
    stack: list[tuple[A.Node, A.Node | None, int, tuple[dict, ...]]] = [
        (d, None, 0, (top,)) for d in reversed(tree.decls)
    ]
    while stack:
        node, parent, sdepth, scopes = stack.pop()
        if isinstance(node, _COMPOUND):
            else_if = isinstance(node, A.IfStmt) and isinstance(parent, A.IfStmt) \
                and parent.otherwise is node
            nested = not else_if and (isinstance(node, (A.IfStmt, A.SwitchStmt))
                                      or isinstance(parent, A.BlockStmt))
            sdepth += 1 if nested else 0
            if sdepth > limits.statement_depth:
                reporter.error(node.loc, f"statements nested deeper than {limits.statement_depth} "
                               "levels")
                continue
        try:
            _check_node(node, ev, scopes, limits, reporter)
        except _TooLarge as exc:
            reporter.error(exc.node.loc, exc.message)
            continue
        except RecursionError:  # bounded by syntax_depth; kept so that no input crashes us
            reporter.error(node.loc, "expression nested too deeply to evaluate")
            continue
        if isinstance(node, A.ConstantDecl):
            scopes[-1][node.name] = node  # visible to the declarations after it
        if isinstance(node, _SCOPES):
            scopes = (*scopes, {})
        children = list(_children(node))
        for child in reversed(children):
            stack.append((child, node, sdepth, scopes))


def _check_node(node: A.Node, ev: _Evaluator, scopes, limits: FrontendLimits,
                reporter: Reporter) -> None:
    if isinstance(node, A.IntLiteral):
        if node.width is not None and node.width > limits.bit_width:
            reporter.error(node.loc, f"integer literal width {node.width} is above the limit of "
                           f"{limits.bit_width} bits")
        if node.value.bit_length() > limits.value_bits:
            reporter.error(node.loc, f"integer literal has more than {limits.value_bits} bits")
    elif isinstance(node, (A.BitsTypeRef, A.VarbitTypeRef)):
        w = ev.width(node, scopes)
        if w is not None and w > limits.bit_width:
            reporter.error(node.loc, f"width {w} is above the limit of {limits.bit_width} bits")
    elif isinstance(node, A.StackTypeRef):
        c = ev.value(node.size, scopes)
        if c is not None and c.value > limits.stack_size:
            reporter.error(node.loc, f"header stack of {c.value} elements is above the limit of "
                           f"{limits.stack_size}")
    elif isinstance(node, A.Expression):
        ev.value(node, scopes)  # raises _TooLarge for shifts and values out of bounds


# externs whose constructor argument at this position is a number of cells/entries
_SIZED_EXTERNS = {"counter": 0, "meter": 0, "register": 0, "action_profile": 0,
                  "action_selector": 1, "direct_counter": None, "direct_meter": None}


def check_resolved_tree(tree: A.P4Program | None, reporter: Reporter,
                        limits: FrontendLimits = LIMITS) -> None:
    """Limits on what the checker resolved and the engine will compile: run-time
    expression depth, widths, stack sizes, table and extern sizes."""
    if tree is None:
        return
    seen: set[int] = set()
    stack: list[tuple[A.Node, int]] = [(d, 0) for d in tree.decls]
    while stack:
        node, edepth = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, A.Expression):
            if node.const_value is not None:
                continue  # folded: the engine reads the value, not the expression
            if not isinstance(node, (A.MemberExpr, A.PathExpr)):  # no parentheses for those
                edepth += 1
            if edepth > limits.expression_depth:
                reporter.error(node.loc, f"expression nested deeper than {limits.expression_depth} "
                               "levels; split it with local variables")
                continue
        else:
            if not isinstance(node, A.Argument):  # an argument is part of its call
                edepth = 0
            _check_resolved(node, reporter, limits)
        stack.extend((child, edepth) for child in _children(node))


def _check_resolved(node: A.Node, reporter: Reporter, limits: FrontendLimits) -> None:
    resolved = getattr(node, "resolved", None) if isinstance(node, A.TypeRef) else None
    size = getattr(resolved, "size", None)
    width = getattr(resolved, "width", None)
    if isinstance(node, A.StackTypeRef) and isinstance(size, int) and size > limits.stack_size:
        reporter.error(node.loc, f"header stack of {size} elements is above the limit of "
                       f"{limits.stack_size}")
    elif isinstance(node, (A.BitsTypeRef, A.VarbitTypeRef)) and isinstance(width, int) \
            and width > limits.bit_width:
        reporter.error(node.loc, f"width {width} is above the limit of {limits.bit_width} bits")
    elif isinstance(node, A.TableDecl) and (node.size_value or 0) > limits.instance_size:
        reporter.error(node.loc, f"table {node.name} has size {node.size_value}, above the limit "
                       f"of {limits.instance_size}")
    elif isinstance(node, A.ValueSetDecl) and node.size_value > limits.instance_size:
        reporter.error(node.loc, f"value set {node.name} has size {node.size_value}, above the "
                       f"limit of {limits.instance_size}")
    elif isinstance(node, A.Instantiation):
        name = getattr(node.type_ref, "name", None)
        index = _SIZED_EXTERNS.get(name) if isinstance(name, str) else None
        if index is not None and index < len(node.args):
            size_value = _const_of(node.args[index].value)
            if isinstance(size_value, int) and size_value > limits.instance_size:
                reporter.error(node.loc, f"{name} {node.name} has {size_value} cells, above the "
                               f"limit of {limits.instance_size}")


def _const_of(e: Any) -> Any:
    return getattr(e, "const_value", None)
