"""Tokenizer for P4_16 (spec section 6.4) feeding the LALR grammar in p4.lark.

Three decisions the grammar cannot make with one token of lookahead are made
here, over the whole token list:

* type names: every name declared as a type anywhere in the program (header,
  struct, enum, typedef, extern, parser, control, package, and generic type
  parameters) is a TYPE_IDENT, as in p4c's lexer;
* generic calls: an identifier directly followed by `<` and a type is a
  GENERIC_IDENT (`pkt.lookahead<bit<8>>()`);
* `>>` closing two type-argument lists is split into two `>` tokens.

Context keywords (`key`, `actions`, `entries` before `=`, `priority` before `=`
inside `entries`) become keywords only there, so fields may use these names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KEYWORDS = {
    "abstract", "action", "apply", "bit", "bool", "break", "const", "continue", "control",
    "default", "else", "enum", "error", "exit", "extern", "false", "for", "header", "header_union", "if", "int", "match_kind", "package", "parser", "return", "select", "state",
    "string", "struct", "switch", "table", "transition", "true", "tuple", "typedef", "type",
    "value_set", "varbit", "void",
}

PUNCT = sorted(
    [
        "|+|=", "|-|=", "<<=", ">>=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
        "&&&", "|+|", "|-|", "..", "&&", "||", "==", "!=", "<=", ">=", "<<", ">>", "++",
        "{", "}", "(", ")", "[", "]", "<", ">", ";", ":", ",", ".", "=", "+", "-", "*", "/",
        "%", "&", "|", "^", "~", "!", "?",
    ],
    key=len,
    reverse=True,
)

_NUMBER = (
    r"\d+[ws](?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|[0-9][0-9_]*)"
    r"|0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|[0-9][0-9_]*"
)
_TOKEN_RE = re.compile(
    r"(?P<ws>[ \t\r\f\v]+)"
    r"|(?P<nl>\n)"
    r"|(?P<lcomment>//[^\n]*)"
    r"|(?P<bcomment>/\*.*?\*/)"
    r"|(?P<directive>\#[^\n]*)"
    r"|(?P<annotation>@[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<string>\"(?:[^\"\\\n]|\\.)*\")"
    rf"|(?P<number>(?:{_NUMBER})(?![A-Za-z0-9_]))"
    r"|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<punct>" + "|".join(re.escape(p) for p in PUNCT) + ")",
    re.S,
)

# tokens that can start a type (keywords are their own kind, lower case)
TYPE_START = {"TYPE_IDENT", "bit", "int", "varbit", "bool", "tuple", "error", "string", "void"}
_VALUE_FOLLOWERS = {
    ";", "=", "+", "-", "*", "/", "%", "&", "|", "^", "]", ":", "==", "!=", "<=", ">=", "&&", "||",
    "?", "++", "|+|", "|-|", "<<", ">>", "&&&", "..",
    "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^=", "|+|=", "|-|=",
}
_ANGLE_OPENERS = TYPE_START | {"GENERIC_IDENT", "value_set"}


@dataclass
class Tok:
    """A token before it is handed to lark: kind is a keyword, punctuation or class name."""

    kind: str  # "IDENT", "INTEGER", ..., or the keyword / punctuation text itself
    value: str
    pos: int
    line: int
    col: int


class LexError(Exception):
    """A character sequence that is no P4 token; carries the position."""

    def __init__(self, message: str, line: int, col: int):
        super().__init__(message)
        self.line = line
        self.col = col


def tokenize(text: str) -> list[Tok]:
    """Split preprocessed text into tokens (positions are preprocessed line/col)."""
    toks: list[Tok] = []
    pos, line, line_start = 0, 1, 0
    n = len(text)
    while pos < n:
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            col = pos - line_start + 1
            if text.startswith("/*", pos):
                raise LexError("unterminated comment", line, col)
            if text[pos] == '"':
                raise LexError("unterminated string literal", line, col)
            raise LexError(f"unexpected character {text[pos]!r}", line, col)
        kind = m.lastgroup
        value = m.group()
        col = pos - line_start + 1
        if kind == "nl":
            line += 1
            line_start = m.end()
        elif kind in ("bcomment", "directive", "lcomment", "ws"):
            nls = value.count("\n")
            if nls:
                line += nls
                line_start = pos + value.rindex("\n") + 1
        elif kind == "annotation":
            end = m.end()
            if end < n and text[end] == "(":
                end = _balanced_end(text, end, line, col)
                value = text[pos:end]
            toks.append(Tok("ANNOTATION", value, pos, line, col))
            nls = value.count("\n")
            if nls:
                line += nls
                line_start = pos + value.rindex("\n") + 1
            pos = end
            continue
        elif kind == "string":
            toks.append(Tok("STRING_LITERAL", value, pos, line, col))
        elif kind == "number":
            toks.append(Tok("INTEGER", value, pos, line, col))
        elif kind == "ident":
            if value in ("in", "out", "inout"):
                toks.append(Tok("DIRECTION", value, pos, line, col))
            elif value == "type" and toks and toks[-1].kind not in (";", "}", "{", "ANNOTATION"):
                # `type` only starts a declaration; elsewhere it is a name (v1model's
                # `counter(bit<32> size, CounterType type)`)
                toks.append(Tok("IDENT", value, pos, line, col))
            elif value in KEYWORDS:
                toks.append(Tok(value, value, pos, line, col))
            elif value == "_":
                toks.append(Tok("DONTCARE", value, pos, line, col))
            else:
                toks.append(Tok("IDENT", value, pos, line, col))
        else:
            toks.append(Tok(value, value, pos, line, col))
        pos = m.end()
    _classify(toks)
    return toks


def _balanced_end(text: str, start: int, line: int, col: int) -> int:
    """End offset of the parenthesised annotation body starting at `start`."""
    depth = 0
    i = start
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise LexError("unterminated annotation body", line, col)


def type_names(toks: list[Tok]) -> set[str]:
    """Names declared as types anywhere in the token list (scope-insensitive, like p4c)."""
    names: set[str] = set()
    n = len(toks)
    for i, t in enumerate(toks):
        k = t.kind
        nxt = toks[i + 1] if i + 1 < n else None
        if k in ("header", "header_union", "struct", "parser", "control", "package"):
            if nxt is not None and nxt.kind == "IDENT":
                names.add(nxt.value)
        elif k == "extern":
            # `extern Name {` / `extern Name<T> {` declare an object type
            if nxt is not None and nxt.kind == "IDENT" and i + 2 < n and toks[i + 2].kind in ("{", "<"):
                names.add(nxt.value)
        elif k == "enum":
            j = i + 1
            while j < n and toks[j].kind != "{" and toks[j].kind != ";":
                j += 1
            if j - 1 > i and toks[j - 1].kind == "IDENT":
                names.add(toks[j - 1].value)
        elif k in ("typedef", "type"):
            j = i + 1
            while j < n and toks[j].kind not in (";", "{", "}"):
                j += 1
            if j < n and toks[j].kind == ";" and toks[j - 1].kind == "IDENT":
                names.add(toks[j - 1].value)
        elif k == "<" and i > 0 and toks[i - 1].kind == "IDENT":
            # type parameter list of a generic declaration: `name<A, B>(`
            j = i + 1
            params = []
            while j + 1 < n and toks[j].kind == "IDENT" and toks[j + 1].kind in (",", ">"):
                params.append(toks[j].value)
                if toks[j + 1].kind == ">":
                    break
                j += 2
            if params and j + 2 < n and toks[j + 1].kind == ">" and toks[j + 2].kind in ("(", "{"):
                if _is_declaration_context(toks, i - 1):
                    names.update(params)
    return names


def _is_declaration_context(toks: list[Tok], name_index: int) -> bool:
    """True when toks[name_index] names something being declared (preceded by a type or keyword)."""
    if name_index == 0:
        return False
    prev = toks[name_index - 1]
    return prev.kind in ("extern", "parser", "control", "package", "void", "IDENT", ">", "bool",
                         "TYPE_IDENT", "abstract")


def _classify(toks: list[Tok]) -> None:
    """Apply type names, generic identifiers, context keywords and `>>` splitting in place."""
    names = type_names(toks)
    n = len(toks)
    for i, t in enumerate(toks):
        if t.kind == "IDENT" and t.value in names:
            nxt_kind = toks[i + 1].kind if i + 1 < n else ";"
            # a type name directly followed by an operator is a value of the same name
            # (e.g. a variable called like some generic's type parameter)
            prev_kind = toks[i - 1].kind if i > 0 else ";"
            if nxt_kind in _VALUE_FOLLOWERS:
                continue
            if nxt_kind == "." and prev_kind in (";", "{", "}", "else"):
                continue  # `meta.x = ...` at the start of a statement: a value
            t.kind = "TYPE_IDENT"
    entries_depth: int | None = None
    brace_depth = 0
    for i, t in enumerate(toks):
        nxt = toks[i + 1] if i + 1 < n else None
        prev = toks[i - 1] if i > 0 else None
        if t.kind == "{":
            brace_depth += 1
        elif t.kind == "}":
            brace_depth -= 1
            if entries_depth is not None and brace_depth < entries_depth:
                entries_depth = None
        elif t.kind == "IDENT" and nxt is not None:
            after_dot = prev is not None and prev.kind == "."
            if nxt.kind == "=" and not after_dot:
                if t.value == "key":
                    t.kind = "KEY_KW"
                elif t.value == "actions":
                    t.kind = "ACTIONS_KW"
                elif t.value == "entries":
                    t.kind = "ENTRIES_KW"
                    entries_depth = brace_depth + 1
                elif t.value == "priority" and entries_depth is not None:
                    t.kind = "PRIORITY_KW"
            elif nxt.kind == "<" and i + 2 < n and toks[i + 2].kind in TYPE_START:
                t.kind = "GENERIC_IDENT"
    _split_angles(toks)


def _split_angles(toks: list[Tok]) -> None:
    """Mark which `<`/`>` belong to type arguments; split `>>` that closes two of them."""
    stack: list[str] = []
    out: list[Tok] = []
    prev_kind = ""
    for t in toks:
        k = t.kind
        if k == "<" and prev_kind in _ANGLE_OPENERS:
            stack.append("<")
        elif k in ("(", "[") and stack:
            stack.append(k)
        elif k in (")", "]") and stack:
            while stack and stack[-1] == "<":
                stack.pop()
            if stack:
                stack.pop()
        elif k == ">" and stack and stack[-1] == "<":
            stack.pop()
        elif k == ">>" and stack and stack[-1] == "<":
            stack.pop()
            if stack and stack[-1] == "<":
                stack.pop()
            first = Tok(">", ">", t.pos, t.line, t.col)
            second = Tok(">", ">", t.pos + 1, t.line, t.col + 1)
            out.append(first)
            out.append(second)
            prev_kind = ">"
            continue
        elif k in (";", "{", "}"):
            stack.clear()
        out.append(t)
        prev_kind = k
    toks[:] = out

