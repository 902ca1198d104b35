"""Parsing: tokens (lexer.py) -> lark LALR parse tree (p4.lark) -> AST (ast.py)."""

from __future__ import annotations

import re
import threading
from pathlib import Path

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedInput, UnexpectedToken, VisitError
from lark.lexer import Lexer

from . import ast as A
from .diagnostics import Reporter
from .lexer import LexError, Tok, tokenize
from .limits import check_syntax_depth, check_tokens
from .preprocess import Preprocessed

_GRAMMAR = Path(__file__).with_name("p4.lark")
_lock = threading.Lock()
_lark: Lark | None = None
_literal_names: dict[str, str] = {}


class _ListLexer(Lexer):
    """Hands lark the token list made by lexer.tokenize (lark's custom-lexer interface 0)."""

    def __init__(self, lexer_conf):
        pass

    def lex(self, data):
        # `data` is one iterator shared by every resume after an error, so that a
        # resumed parse continues after the dropped token instead of from the start
        return data


def _parser() -> Lark:
    """The LALR parser, built once per process."""
    global _lark
    with _lock:
        if _lark is None:
            _lark = Lark(
                _GRAMMAR.read_text(),
                parser="lalr",
                lexer=_ListLexer,
                propagate_positions=True,
                maybe_placeholders=False,
            )
            for term in _lark.terminals:
                pattern = term.pattern
                if type(pattern).__name__ == "PatternStr":
                    _literal_names[pattern.value] = term.name
        return _lark


def _to_lark(toks: list[Tok]) -> list[Token]:
    out = []
    for t in toks:
        name = _literal_names.get(t.kind, t.kind)
        out.append(Token(name, t.value, t.pos, t.line, t.col, t.line, t.col + len(t.value)))
    return out


_PRETTY = {
    "IDENT": "identifier", "TYPE_IDENT": "type name", "GENERIC_IDENT": "identifier",
    "INTEGER": "integer", "STRING_LITERAL": "string", "ANNOTATION": "annotation",
    "$END": "end of input",
}


def parse(pre: Preprocessed, reporter: Reporter) -> A.P4Program | None:
    """Parse preprocessed text; on a syntax error report it and return None."""
    try:
        toks = tokenize(pre.text)
    except LexError as exc:
        reporter.error(pre.loc(exc.line, exc.col), str(exc))
        return None
    if not check_tokens(toks, pre.loc, reporter):
        return None
    parser = _parser()
    # Parse top-level declarations in separate runs, so that a syntax error in one is
    # reported and the others are still parsed: several errors per run, no cascades.
    trees = []
    failed = False
    for chunk in _top_level_chunks(toks):
        try:
            trees.append(parser.parse(iter(_to_lark(chunk))))
        except UnexpectedToken as exc:
            _report_syntax_error(exc, pre, reporter, chunk[-1] if chunk else None)
            failed = True
        except UnexpectedInput as exc:
            reporter.error(pre.loc(getattr(exc, "line", 1) or 1, getattr(exc, "column", 1) or 1),
                           "syntax error")
            failed = True
    if failed:
        return None
    if not all([check_syntax_depth(t, pre.loc, reporter) for t in trees]):
        return None
    tree = trees[0] if len(trees) == 1 else _merge(trees)
    builder = _Builder(pre, reporter)
    try:
        return builder.transform(tree)
    except RecursionError:
        reporter.error(pre.loc(1, 1), "program nested too deeply")
        return None
    except _BuildError as exc:
        reporter.error(exc.loc, exc.message)
        return None
    except VisitError as exc:
        orig = exc.orig_exc
        if isinstance(orig, _BuildError):
            reporter.error(orig.loc, orig.message)
            return None
        if isinstance(orig, RecursionError):
            reporter.error(pre.loc(1, 1), "program nested too deeply")
            return None
        raise


def _top_level_chunks(toks: list[Tok]) -> list[list[Tok]]:
    """Split tokens after each top-level `;` or `}` (brace depth 0)."""
    chunks: list[list[Tok]] = []
    cur: list[Tok] = []
    depth = 0
    for t in toks:
        cur.append(t)
        if t.kind == "{":
            depth += 1
        elif t.kind == "}":
            depth -= 1
        if depth <= 0 and t.kind in (";", "}"):
            depth = 0
            chunks.append(cur)
            cur = []
    if cur or not chunks:
        chunks.append(cur)
    return chunks


def _merge(trees):
    """One `start` tree holding the declarations of all chunk trees."""
    first = trees[0]
    children = [c for t in trees for c in t.children]
    return type(first)(first.data, children, first.meta)


def _report_syntax_error(exc: UnexpectedToken, pre: Preprocessed, reporter: Reporter,
                         last: Tok | None) -> None:
    tok = exc.token
    if tok.type == "$END":
        # just after the last token of the declaration
        loc = pre.loc(last.line, last.col + len(last.value)) if last else pre.loc(1, 1)
        got = "end of input"
    else:
        loc = pre.loc(tok.line, tok.column)
        got = f"'{tok.value}'"
    expected = sorted(_describe(e) for e in exc.expected)
    hint = "" if len(expected) > 8 else " (expected " + ", ".join(expected) + ")"
    reporter.error(loc, f"syntax error: unexpected {got}{hint}")


def _describe(terminal: str) -> str:
    if terminal in _PRETTY:
        return _PRETTY[terminal]
    for lit, name in _literal_names.items():
        if name == terminal:
            return f"'{lit}'"
    return terminal.lower()


class _BuildError(Exception):
    def __init__(self, loc: A.Loc, message: str):
        super().__init__(message)
        self.loc = loc
        self.message = message


class _Annots(list):
    """Marker list type for parsed annotations."""


_INT_RE = re.compile(r"(?:(\d+)([ws]))?(.*)", re.S)


def parse_int(text: str) -> tuple[int, int | None, bool]:
    """Value, width and signedness of a P4 integer literal (spec 6.4.3.1)."""
    m = _INT_RE.fullmatch(text)
    width = int(m.group(1)) if m.group(1) else None
    signed = m.group(2) == "s"
    body = m.group(3).replace("_", "")
    base = 10
    if len(body) > 1 and body[0] == "0" and body[1] in "xXbBoOdD":
        base = {"x": 16, "b": 2, "o": 8, "d": 10}[body[1].lower()]
        body = body[2:]
    if base == 10 and len(body) > _DECIMAL_CHUNK:
        return _long_decimal(body), width, signed
    return int(body, base), width, signed


_DECIMAL_CHUNK = 4000  # CPython converts at most 4,300 decimal digits in one int() call


def _long_decimal(digits: str) -> int:
    """int() of a decimal literal longer than CPython's conversion limit (its length is
    bounded by limits.check_tokens first)."""
    value = 0
    for i in range(0, len(digits), _DECIMAL_CHUNK):
        chunk = digits[i:i + _DECIMAL_CHUNK]
        value = value * 10 ** len(chunk) + int(chunk)
    return value


def _unescape(s: str) -> str:
    body = s[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(1), m.group(1)), body)


def parse_annotation(text: str, loc: A.Loc) -> A.Annotation:
    """Split `@name(body)` into name, body text and simple argument values."""
    m = re.match(r"@([A-Za-z_][A-Za-z0-9_]*)", text)
    name = m.group(1)
    rest = text[m.end():]
    if not rest:
        return A.Annotation(loc=loc, name=name)
    body = rest[1:-1]
    args: list | None = []
    for item in _split_top_level(body):
        item = item.strip()
        if not item:
            continue
        if item.startswith('"') and item.endswith('"') and len(item) >= 2:
            args.append(_unescape(item))
        elif re.fullmatch(r"-?[0-9][0-9a-fA-FxXbBoOdDws_]*", item):
            neg = item.startswith("-")
            try:
                v, _, _ = parse_int(item.lstrip("-"))
            except ValueError:
                args = None
                break
            args.append(-v if neg else v)
        elif re.fullmatch(r"[A-Za-z_.][A-Za-z0-9_.]*", item):
            args.append(item)
        else:
            args = None
            break
    return A.Annotation(loc=loc, name=name, text=body, args=args)


def _split_top_level(body: str) -> list[str]:
    parts, depth, cur, i = [], 0, [], 0
    while i < len(body):
        c = body[i]
        if c == '"':
            j = i + 1
            while j < len(body) and body[j] != '"':
                j += 2 if body[j] == "\\" else 1
            cur.append(body[i:j + 1])
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return parts


def _ctor_params(rest: list) -> tuple[list, list]:
    """Split the optional constructor parameters off the front of a parser/control body."""
    if rest and isinstance(rest[0], _CtorParams):
        return list(rest[0]), rest[1:]
    return [], rest


def _split(children, *types):
    """Pop leading annotations off a child list: (annotations, rest)."""
    ch = list(children)
    annots: list[A.Annotation] = []
    if ch and isinstance(ch[0], _Annots):
        annots = list(ch.pop(0))
    return annots, ch


class _OperatorRules:
    """Builders of p4.lark's operator rules, one per operator (its precedence levels).

    Mixed into _Builder, whose `L` maps a rule's position to the source location.
    """

    def _binary(self, meta, ch, op: str) -> A.BinaryExpr:
        return A.BinaryExpr(loc=self.L(meta), op=op, left=ch[0], right=ch[1])

    def _unary(self, meta, ch, op: str) -> A.UnaryExpr:
        return A.UnaryExpr(loc=self.L(meta), op=op, operand=ch[0])

    def binop_lor(self, meta, ch):
        return self._binary(meta, ch, "||")

    def binop_land(self, meta, ch):
        return self._binary(meta, ch, "&&")

    def binop_eq(self, meta, ch):
        return self._binary(meta, ch, "==")

    def binop_ne(self, meta, ch):
        return self._binary(meta, ch, "!=")

    def binop_lt(self, meta, ch):
        return self._binary(meta, ch, "<")

    def binop_gt(self, meta, ch):
        return self._binary(meta, ch, ">")

    def binop_le(self, meta, ch):
        return self._binary(meta, ch, "<=")

    def binop_ge(self, meta, ch):
        return self._binary(meta, ch, ">=")

    def binop_bor(self, meta, ch):
        return self._binary(meta, ch, "|")

    def binop_bxor(self, meta, ch):
        return self._binary(meta, ch, "^")

    def binop_band(self, meta, ch):
        return self._binary(meta, ch, "&")

    def binop_shl(self, meta, ch):
        return self._binary(meta, ch, "<<")

    def binop_shr(self, meta, ch):
        return self._binary(meta, ch, ">>")

    def binop_add(self, meta, ch):
        return self._binary(meta, ch, "+")

    def binop_sub(self, meta, ch):
        return self._binary(meta, ch, "-")

    def binop_concat(self, meta, ch):
        return self._binary(meta, ch, "++")

    def binop_addsat(self, meta, ch):
        return self._binary(meta, ch, "|+|")

    def binop_subsat(self, meta, ch):
        return self._binary(meta, ch, "|-|")

    def binop_mul(self, meta, ch):
        return self._binary(meta, ch, "*")

    def binop_div(self, meta, ch):
        return self._binary(meta, ch, "/")

    def binop_mod(self, meta, ch):
        return self._binary(meta, ch, "%")

    def unop_not(self, meta, ch):
        return self._unary(meta, ch, "!")

    def unop_cpl(self, meta, ch):
        return self._unary(meta, ch, "~")

    def unop_neg(self, meta, ch):
        return self._unary(meta, ch, "-")

    def unop_pos(self, meta, ch):
        return self._unary(meta, ch, "+")


class _Builder(_OperatorRules, Transformer):
    """Turns the lark tree into ast nodes, mapping positions to the original files.

    Every rule method takes (meta, children); `_call_userfunc` calls it directly
    rather than through lark's v_args wrappers, which cost a third of the parse time.
    """

    __visit_tokens__ = False

    def __init__(self, pre: Preprocessed, reporter: Reporter):
        super().__init__(visit_tokens=False)
        self.pre = pre
        self.reporter = reporter

    def _call_userfunc(self, tree, new_children=None):
        children = new_children if new_children is not None else tree.children
        f = getattr(self, tree.data, None)
        if f is None:
            return self.__default__(tree.data, children, tree.meta)
        return f(tree.meta, children)

    # -- helpers
    def L(self, meta) -> A.Loc:
        if getattr(meta, "empty", True):
            return A.NOWHERE
        return self.pre.loc(meta.line, meta.column)

    def TL(self, tok: Token) -> A.Loc:
        return self.pre.loc(tok.line, tok.column)

    def __default__(self, data, children, meta):
        raise _BuildError(self.L(meta), f"internal: no builder for {data}")

    def __default_token__(self, token):
        return token

    def start(self, meta, ch):
        return A.P4Program(loc=A.NOWHERE, decls=[c for c in ch if c is not None])

    def empty_decl(self, meta, ch):
        return None

    def annots(self, meta, ch):
        return _Annots(parse_annotation(str(t), self.TL(t)) for t in ch)

    def name(self, meta, ch):
        return ch[0]

    def member(self, meta, ch):
        return ch[0] if ch else Token("IDENT", "apply")

    # -- types
    def type_ref(self, meta, ch):
        return ch[0]

    def t_bool(self, meta, ch):
        return A.BaseTypeRef(loc=self.L(meta), name="bool")

    def t_error(self, meta, ch):
        return A.BaseTypeRef(loc=self.L(meta), name="error")

    def t_string(self, meta, ch):
        return A.BaseTypeRef(loc=self.L(meta), name="string")

    def t_void(self, meta, ch):
        return A.BaseTypeRef(loc=self.L(meta), name="void")

    def t_match_kind(self, meta, ch):
        return A.BaseTypeRef(loc=self.L(meta), name="match_kind")

    def t_int(self, meta, ch):
        return A.BaseTypeRef(loc=self.L(meta), name="int")

    def t_bit1(self, meta, ch):
        return A.BitsTypeRef(loc=self.L(meta), width=A.IntLiteral(loc=self.L(meta), value=1))

    def t_bit(self, meta, ch):
        return A.BitsTypeRef(loc=self.L(meta), width=ch[0])

    def t_sint(self, meta, ch):
        return A.BitsTypeRef(loc=self.L(meta), width=ch[0], signed=True)

    def t_varbit(self, meta, ch):
        return A.VarbitTypeRef(loc=self.L(meta), width=ch[0])

    def width_int(self, meta, ch):
        return self.int_lit(meta, ch)

    def width_expr(self, meta, ch):
        return ch[0]

    def width_name(self, meta, ch):
        return A.PathExpr(loc=self.TL(ch[0]), name=str(ch[0]))

    def t_named(self, meta, ch):
        return A.NamedTypeRef(loc=self.L(meta), name=str(ch[0]))

    def t_specialized(self, meta, ch):
        return A.NamedTypeRef(loc=self.L(meta), name=str(ch[0]), args=ch[1])

    def stack_type(self, meta, ch):
        return A.StackTypeRef(loc=self.L(meta), element=ch[0], size=ch[1])

    def tuple_type(self, meta, ch):
        return A.TupleTypeRef(loc=self.L(meta), args=ch[0])

    def type_args(self, meta, ch):
        return list(ch)

    def t_dontcare(self, meta, ch):
        return A.BaseTypeRef(loc=self.L(meta), name="_")

    def type_params(self, meta, ch):
        return [str(c) for c in ch]

    # -- type declarations
    def field(self, meta, ch):
        annots, ch = _split(ch)
        return A.FieldDecl(loc=self.TL(ch[1]), name=str(ch[1]), type_ref=ch[0], annotations=annots)

    def _fields_decl(self, cls, meta, ch):
        annots, ch = _split(ch)
        return cls(loc=self.L(meta), name=str(ch[0]), annotations=annots, fields=list(ch[1:]))

    def header_decl(self, meta, ch):
        return self._fields_decl(A.HeaderDecl, meta, ch)

    def header_union_decl(self, meta, ch):
        return self._fields_decl(A.HeaderUnionDecl, meta, ch)

    def struct_decl(self, meta, ch):
        return self._fields_decl(A.StructDecl, meta, ch)

    def enum_decl(self, meta, ch):
        annots, ch = _split(ch)
        members = [A.EnumMember(loc=self.TL(t), name=str(t)) for t in ch[1:]]
        return A.EnumDecl(loc=self.L(meta), name=str(ch[0]), annotations=annots, members=members)

    def ser_enum_decl(self, meta, ch):
        annots, ch = _split(ch)
        return A.EnumDecl(loc=self.L(meta), name=str(ch[1]), annotations=annots,
                          underlying=ch[0], members=list(ch[2:]))

    def enum_member(self, meta, ch):
        return A.EnumMember(loc=self.TL(ch[0]), name=str(ch[0]), value=ch[1])

    def typedef_decl(self, meta, ch):
        annots, ch = _split(ch)
        return A.TypedefDecl(loc=self.L(meta), name=str(ch[1]), annotations=annots, type_ref=ch[0])

    def newtype_decl(self, meta, ch):
        d = self.typedef_decl(meta, ch)
        d.newtype = True
        return d

    def error_decl(self, meta, ch):
        return A.ErrorDecl(loc=self.L(meta), members=[str(c) for c in ch])

    def match_kind_decl(self, meta, ch):
        return A.MatchKindDecl(loc=self.L(meta), members=[str(c) for c in ch])

    # -- externs / functions
    def extern_object(self, meta, ch):
        annots, ch = _split(ch)
        t = ch[0]
        tparams = []
        for a in t.args:
            if isinstance(a, A.NamedTypeRef) and not a.args:
                tparams.append(a.name)
            else:
                raise _BuildError(a.loc, "type parameter expected")
        return A.ExternDecl(loc=self.L(meta), name=t.name, annotations=annots,
                            type_params=tparams, methods=list(ch[1:]))

    def extern_object_plain(self, meta, ch):
        annots, ch = _split(ch)
        return A.ExternDecl(loc=self.L(meta), name=str(ch[0]), annotations=annots,
                            methods=list(ch[1:]))

    def _proto_parts(self, ch):
        """(return type, name, type params, params) from a method-like child list."""
        ret, name = ch[0], ch[1]
        tparams: list[str] = []
        rest = ch[2:]
        if rest and not isinstance(rest[0], _Params):
            tparams = rest[0]
            rest = rest[1:]
        params = rest[0] if rest else []
        return ret, name, tparams, params, rest[1:]

    def method(self, meta, ch):
        annots, ch = _split(ch)
        ret, name, tparams, params, _ = self._proto_parts(ch)
        return A.MethodDecl(loc=self.TL(name), name=str(name), annotations=annots,
                            return_type=ret, type_params=tparams, params=params)

    def abstract_method(self, meta, ch):
        m = self.method(meta, ch)
        m.abstract = True
        return m

    def constructor(self, meta, ch):
        annots, ch = _split(ch)
        return A.MethodDecl(loc=self.TL(ch[0]), name=str(ch[0]), annotations=annots,
                            params=ch[1], is_constructor=True)

    def extern_function(self, meta, ch):
        annots, ch = _split(ch)
        ret, name, tparams, params, _ = self._proto_parts(ch)
        return A.ExternFunctionDecl(loc=self.L(meta), name=str(name), annotations=annots,
                                    return_type=ret, type_params=tparams, params=params)

    def function_decl(self, meta, ch):
        annots, ch = _split(ch)
        ret, name, tparams, params, rest = self._proto_parts(ch)
        return A.FunctionDecl(loc=self.L(meta), name=str(name), annotations=annots,
                              return_type=ret, type_params=tparams, params=params, body=rest[0])

    def package_decl(self, meta, ch):
        annots, ch = _split(ch)
        name = ch[0]
        tparams = ch[1] if len(ch) == 3 else []
        return A.PackageTypeDecl(loc=self.L(meta), name=str(name), annotations=annots,
                                 type_params=tparams, params=ch[-1])

    def params(self, meta, ch):
        for i, p in enumerate(ch):
            p.index = i
        return _Params(ch)

    def param(self, meta, ch):
        annots, ch = _split(ch)
        direction, tref, name = ch[0], ch[1], ch[2]
        default = ch[3] if len(ch) > 3 else None
        return A.Param(loc=self.TL(name), name=str(name), annotations=annots, direction=direction,
                       type_ref=tref, default=default)

    def direction(self, meta, ch):
        return str(ch[0]) if ch else ""

    # -- parsers
    def parser_head(self, meta, ch):
        annots, ch = _split(ch)
        name = ch[0]
        tparams = ch[1] if len(ch) == 3 else []
        return (self.L(meta), annots, str(name), tparams, ch[-1])

    def parser_proto(self, meta, ch):
        loc, annots, name, tparams, params = ch[0]
        return A.ParserTypeDecl(loc=loc, name=name, annotations=annots, type_params=tparams,
                                params=params)

    def parser_decl(self, meta, ch):
        loc, annots, name, tparams, params = ch[0]
        ctor, rest = _ctor_params(ch[1:])
        locals_ = [d for d in rest if not isinstance(d, A.ParserState)]
        states = [d for d in rest if isinstance(d, A.ParserState)]
        return A.ParserDecl(loc=loc, name=name, annotations=annots, type_params=tparams,
                            params=params, ctor_params=ctor, locals=locals_, states=states)

    def ctor_params(self, meta, ch):
        return _CtorParams(ch[0])

    def value_set_decl(self, meta, ch):
        annots, ch = _split(ch)
        return A.ValueSetDecl(loc=self.L(meta), name=str(ch[2]), annotations=annots,
                              element=ch[0], size=ch[1])

    def parser_state(self, meta, ch):
        annots, ch = _split(ch)
        name = ch[0]
        stmts = list(ch[1:])
        transition = None
        if stmts and isinstance(stmts[-1], _Transition):
            transition = stmts.pop().expr
        # local declarations in a state (spec 13.4) are statements, as in a block
        stmts = [self._stmt(st) for st in stmts]
        return A.ParserState(loc=self.TL(name), name=str(name), annotations=annots,
                             stmts=stmts, transition=transition)

    def transition_direct(self, meta, ch):
        return _Transition(A.PathExpr(loc=self.TL(ch[0]), name=str(ch[0])))

    def transition_select(self, meta, ch):
        return _Transition(ch[0])

    def select_expr(self, meta, ch):
        return A.SelectExpr(loc=self.L(meta), keys=ch[0], cases=list(ch[1:]))

    def select_case(self, meta, ch):
        return A.SelectCase(loc=self.L(meta), keyset=ch[0],
                            state=A.PathExpr(loc=self.TL(ch[1]), name=str(ch[1])))

    def tuple_keyset(self, meta, ch):
        return A.ListExpr(loc=self.L(meta), items=list(ch))

    def mask_keyset(self, meta, ch):
        return A.MaskExpr(loc=self.L(meta), value=ch[0], mask=ch[1])

    def range_keyset(self, meta, ch):
        return A.RangeExpr(loc=self.L(meta), lo=ch[0], hi=ch[1])

    def default_keyset(self, meta, ch):
        return A.DefaultExpr(loc=self.L(meta))

    def dontcare_keyset(self, meta, ch):
        return A.DontCareExpr(loc=self.L(meta))

    # -- controls
    def control_head(self, meta, ch):
        return self.parser_head(meta, ch)

    def control_proto(self, meta, ch):
        loc, annots, name, tparams, params = ch[0]
        return A.ControlTypeDecl(loc=loc, name=name, annotations=annots, type_params=tparams,
                                 params=params)

    def control_decl(self, meta, ch):
        loc, annots, name, tparams, params = ch[0]
        ctor, rest = _ctor_params(ch[1:])
        body = rest[-1]
        return A.ControlDecl(loc=loc, name=name, annotations=annots, type_params=tparams,
                             params=params, ctor_params=ctor, locals=list(rest[:-1]), body=body)

    def action_decl(self, meta, ch):
        annots, ch = _split(ch)
        return A.ActionDecl(loc=self.TL(ch[0]), name=str(ch[0]), annotations=annots,
                            params=ch[1], body=ch[2])

    def table_decl(self, meta, ch):
        annots, ch = _split(ch)
        t = A.TableDecl(loc=self.TL(ch[0]), name=str(ch[0]), annotations=annots)
        for prop in ch[1:]:
            t.properties.append(prop)
        return t

    def key_prop(self, meta, ch):
        annots, ch = _split(ch)
        return A.TableProperty(loc=self.TL(ch[0]), name="key", value=list(ch[1:]),
                               annotations=annots)

    def actions_prop(self, meta, ch):
        annots, ch = _split(ch)
        return A.TableProperty(loc=self.TL(ch[0]), name="actions", value=list(ch[1:]),
                               annotations=annots)

    def entries_prop(self, meta, ch):
        annots, ch = _split(ch)
        const = ch[0]
        return A.TableProperty(loc=self.TL(ch[1]), name="entries", value=list(ch[2:]),
                               const=const, annotations=annots)

    def simple_prop(self, meta, ch):
        annots, ch = _split(ch)
        return A.TableProperty(loc=self.TL(ch[1]), name=str(ch[1]), value=ch[2], const=ch[0],
                               annotations=annots)

    def const_kw(self, meta, ch):
        return not getattr(meta, "empty", True)

    def key_element(self, meta, ch):
        annots = list(ch[2]) if len(ch) > 2 else []
        return A.KeyElement(loc=self.L(meta), expr=ch[0], match_kind=str(ch[1]),
                            annotations=annots)

    def action_item(self, meta, ch):
        annots, ch = _split(ch)
        ref = ch[0]
        ref.annotations = annots
        return ref

    def action_ref_bare(self, meta, ch):
        return A.ActionRef(loc=self.L(meta), name=ch[0])

    def action_ref_call(self, meta, ch):
        return A.ActionRef(loc=self.L(meta), name=ch[0], args=ch[1], has_args=True)

    def entry(self, meta, ch):
        annots, ch = _split(ch)
        prio = None
        if ch and isinstance(ch[0], _Priority):
            prio = ch.pop(0).expr
        if len(ch) > 2 and isinstance(ch[2], _Annots):
            annots = annots + list(ch[2])
        return A.TableEntry(loc=self.L(meta), keyset=ch[0], action=ch[1], priority=prio,
                            annotations=annots)

    def entry_priority(self, meta, ch):
        v = ch[1]
        if isinstance(v, Token):
            v = self.int_lit_tok(v)
        return _Priority(v)

    # -- declarations in blocks
    def constant_decl(self, meta, ch):
        annots, ch = _split(ch)
        return A.ConstantDecl(loc=self.TL(ch[1]), name=str(ch[1]), annotations=annots,
                              type_ref=ch[0], value=ch[2])

    def var_decl(self, meta, ch):
        annots, ch = _split(ch)
        return A.VariableDecl(loc=self.TL(ch[1]), name=str(ch[1]), annotations=annots,
                              type_ref=ch[0])

    def var_decl_init(self, meta, ch):
        annots, ch = _split(ch)
        return A.VariableDecl(loc=self.TL(ch[1]), name=str(ch[1]), annotations=annots,
                              type_ref=ch[0], init=ch[2])

    def instantiation(self, meta, ch):
        annots, ch = _split(ch)
        return A.Instantiation(loc=self.TL(ch[2]), name=str(ch[2]), annotations=annots,
                               type_ref=ch[0], args=ch[1])

    # -- statements
    def _stmt(self, node):
        if isinstance(node, A.Declaration):
            return A.DeclStmt(loc=node.loc, decl=node)
        return node

    def block(self, meta, ch):
        annots, ch = _split(ch)
        return A.BlockStmt(loc=self.L(meta), stmts=[self._stmt(c) for c in ch],
                           annotations=annots)

    def assign_stmt(self, meta, ch):
        return A.AssignStmt(loc=self.L(meta), lhs=ch[0], rhs=ch[1])

    def compound_assign_stmt(self, meta, ch):
        lhs, op, b = ch
        rhs = A.BinaryExpr(loc=self.L(meta), op=op, left=lhs, right=b)
        return A.AssignStmt(loc=self.L(meta), lhs=lhs, rhs=rhs, op=op)

    def compound_op(self, meta, ch):
        return str(ch[0])[:-1]  # "+=" -> "+"

    def call_stmt(self, meta, ch):
        call = A.CallExpr(loc=self.L(meta), callee=ch[0], args=ch[1])
        return A.CallStmt(loc=self.L(meta), call=call)

    # -- loops (P4_16 1.2.4)
    def for_stmt(self, meta, ch):
        annots, ch = _split(ch)
        inits, cond, updates, body = ch
        return A.ForStmt(loc=self.L(meta), init=inits, cond=cond, updates=updates,
                         body=self._stmt(body), annotations=annots)

    def _for_in(self, meta, ch, ranged: bool):
        annots, ch = _split(ch)
        _, ch = _split(ch)  # annotations of the loop variable
        type_ref, name, direction = ch[0], ch[1], ch[2]
        if str(direction) != "in":
            raise _BuildError(self.TL(direction), f"syntax error: unexpected '{direction}' "
                                                  f"(expected 'in')")
        var = A.VariableDecl(loc=self.TL(name), name=str(name), type_ref=type_ref)
        if ranged:
            return A.ForInStmt(loc=self.L(meta), var=var, lo=ch[3], hi=ch[4],
                               body=self._stmt(ch[5]), annotations=annots)
        return A.ForInStmt(loc=self.L(meta), var=var, collection=ch[3], body=self._stmt(ch[4]),
                           annotations=annots)

    def for_in_stmt(self, meta, ch):
        return self._for_in(meta, ch, ranged=False)

    def for_range_stmt(self, meta, ch):
        return self._for_in(meta, ch, ranged=True)

    def for_inits(self, meta, ch):
        return [self._stmt(c) for c in ch]

    def for_updates(self, meta, ch):
        return list(ch)

    def for_var_init(self, meta, ch):
        return self.var_decl_init(meta, ch)

    def for_var(self, meta, ch):
        return self.var_decl(meta, ch)

    def simple_assign(self, meta, ch):
        return A.AssignStmt(loc=self.L(meta), lhs=ch[0], rhs=ch[1])

    def simple_compound(self, meta, ch):
        return self.compound_assign_stmt(meta, ch)

    def simple_call(self, meta, ch):
        return self.call_stmt(meta, ch)

    def simple_generic_call(self, meta, ch):
        return self.generic_call_stmt(meta, ch)

    def break_stmt(self, meta, ch):
        return A.BreakStmt(loc=self.L(meta))

    def continue_stmt(self, meta, ch):
        return A.ContinueStmt(loc=self.L(meta))

    def generic_call_stmt(self, meta, ch):
        call = A.CallExpr(loc=self.L(meta), callee=ch[0], type_arg_refs=ch[1], args=ch[2])
        return A.CallStmt(loc=self.L(meta), call=call)

    def generic_member(self, meta, ch):
        return A.MemberExpr(loc=self.TL(ch[1]), expr=ch[0], member=str(ch[1]))

    def generic_path(self, meta, ch):
        return A.PathExpr(loc=self.TL(ch[0]), name=str(ch[0]))

    def if_stmt(self, meta, ch):
        return A.IfStmt(loc=self.L(meta), cond=ch[0], then=self._stmt(ch[1]),
                        otherwise=self._stmt(ch[2]) if len(ch) > 2 else None)

    def exit_stmt(self, meta, ch):
        return A.ExitStmt(loc=self.L(meta))

    def return_stmt(self, meta, ch):
        return A.ReturnStmt(loc=self.L(meta), value=ch[0] if ch else None)

    def empty_stmt(self, meta, ch):
        return A.EmptyStmt(loc=self.L(meta))

    def switch_stmt(self, meta, ch):
        return A.SwitchStmt(loc=self.L(meta), expr=ch[0], cases=list(ch[1:]))

    def switch_case(self, meta, ch):
        return A.SwitchCase(loc=self.L(meta), label=ch[0], body=ch[1])

    def switch_fallthrough(self, meta, ch):
        return A.SwitchCase(loc=self.L(meta), label=ch[0], body=None)

    def label_default(self, meta, ch):
        return A.DefaultExpr(loc=self.L(meta))

    def label_expr(self, meta, ch):
        return ch[0]

    # -- expressions
    def path(self, meta, ch):
        return A.PathExpr(loc=self.TL(ch[0]), name=str(ch[0]))

    def abs_path(self, meta, ch):
        return A.PathExpr(loc=self.L(meta), name=str(ch[0]), absolute=True)

    def member_expr(self, meta, ch):
        return A.MemberExpr(loc=self.L(meta), expr=ch[0], member=str(ch[1]))

    def index_expr(self, meta, ch):
        return A.IndexExpr(loc=self.L(meta), expr=ch[0], index=ch[1])

    def slice_expr(self, meta, ch):
        return A.SliceExpr(loc=self.L(meta), expr=ch[0], hi=ch[1], lo=ch[2])

    def call_expr(self, meta, ch):
        return A.CallExpr(loc=self.L(meta), callee=ch[0], args=ch[1])

    def generic_method_call(self, meta, ch):
        callee = A.MemberExpr(loc=self.TL(ch[1]), expr=ch[0], member=str(ch[1]))
        return A.CallExpr(loc=self.L(meta), callee=callee, type_arg_refs=ch[2], args=ch[3])

    def generic_call(self, meta, ch):
        callee = A.PathExpr(loc=self.TL(ch[0]), name=str(ch[0]))
        return A.CallExpr(loc=self.L(meta), callee=callee, type_arg_refs=ch[1], args=ch[2])

    def type_member(self, meta, ch):
        tref = A.NamedTypeRef(loc=self.TL(ch[0]), name=str(ch[0]))
        base = A.TypeNameExpr(loc=self.TL(ch[0]), type_ref=tref)
        return A.MemberExpr(loc=self.L(meta), expr=base, member=str(ch[1]))

    def error_member(self, meta, ch):
        base = A.TypeNameExpr(loc=self.L(meta), type_ref=A.BaseTypeRef(loc=self.L(meta), name="error"))
        return A.MemberExpr(loc=self.L(meta), expr=base, member=str(ch[0]))

    def ctor_call(self, meta, ch):
        base = A.TypeNameExpr(loc=self.L(meta), type_ref=ch[0])
        return A.CallExpr(loc=self.L(meta), callee=base, args=ch[1])

    def list_expr(self, meta, ch):
        return A.ListExpr(loc=self.L(meta), items=list(ch))

    def struct_init(self, meta, ch):
        return A.StructInitExpr(loc=self.L(meta), fields=list(ch))

    def kv_pair(self, meta, ch):
        return (str(ch[0]), ch[1])

    def expr_list(self, meta, ch):
        return list(ch)

    def arg_list(self, meta, ch):
        return list(ch)

    def arg_pos(self, meta, ch):
        return A.Argument(loc=self.L(meta), value=ch[0])

    def arg_named(self, meta, ch):
        return A.Argument(loc=self.L(meta), value=ch[1], name=str(ch[0]))

    def arg_dontcare(self, meta, ch):
        return A.Argument(loc=self.L(meta), value=A.DontCareExpr(loc=self.L(meta)))

    def arg_named_dontcare(self, meta, ch):
        return A.Argument(loc=self.L(meta), value=A.DontCareExpr(loc=self.TL(ch[1])),
                          name=str(ch[0]))

    def ternary_expr(self, meta, ch):
        return A.TernaryExpr(loc=self.L(meta), cond=ch[0], then=ch[1], otherwise=ch[2])

    def cast_expr(self, meta, ch):
        return A.CastExpr(loc=self.L(meta), type_ref=ch[0], expr=ch[1])

    def int_lit_tok(self, tok: Token) -> A.IntLiteral:
        value, width, signed = parse_int(str(tok))
        return A.IntLiteral(loc=self.TL(tok), value=value, width=width, signed=signed,
                            text=str(tok))

    def int_lit(self, meta, ch):
        return self.int_lit_tok(ch[0])

    def true_lit(self, meta, ch):
        return A.BoolLiteral(loc=self.L(meta), value=True)

    def false_lit(self, meta, ch):
        return A.BoolLiteral(loc=self.L(meta), value=False)

    def string_lit(self, meta, ch):
        return A.StringLiteral(loc=self.TL(ch[0]), value=_unescape(str(ch[0])))


class _Params(list):
    """Marker list type for parameter lists."""


class _CtorParams(list):
    """Marker list type for constructor parameter lists."""


class _Transition:
    def __init__(self, expr):
        self.expr = expr


class _Priority:
    def __init__(self, expr):
        self.expr = expr

