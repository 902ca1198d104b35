"""Operations on checked types: equality, substitution, casts, wrapping and folding of values."""

from __future__ import annotations

from .. import types as T


class _Poison(T.P4Type):
    """Type of an expression that already produced an error (suppresses follow-on errors)."""

    def __str__(self) -> str:
        return "<error>"


POISON = _Poison()


def wrap(value: int, t: T.P4Type) -> int:
    """Reduce an integer to the range of bit<W>/int<W> (two's complement, spec 8.5/8.6)."""
    t = T.strip_newtype(t)
    if isinstance(t, T.Bits):
        value &= (1 << t.width) - 1
        if t.signed and t.width and value >> (t.width - 1):
            value -= 1 << t.width
    return value


def same_type(a: T.P4Type, b: T.P4Type) -> bool:
    """Structural equality for unnamed types, identity for named ones."""
    if a is b:
        return True
    if isinstance(a, T.Bits | T.Varbit | T.BoolType | T.InfInt | T.StringType | T.VoidType):
        return a == b
    if isinstance(a, T.ErrorType) and isinstance(b, T.ErrorType):
        return True
    if isinstance(a, T.HeaderStack) and isinstance(b, T.HeaderStack):
        return a.size == b.size and same_type(a.element, b.element)
    if isinstance(a, T.TupleType) and isinstance(b, T.TupleType):
        return len(a.elements) == len(b.elements) and all(
            same_type(x, y) for x, y in zip(a.elements, b.elements, strict=True))
    if isinstance(a, T.SpecializedType) and isinstance(b, T.SpecializedType):
        return a.base is b.base and len(a.args) == len(b.args) and all(
            same_type(x, y) for x, y in zip(a.args, b.args, strict=True))
    return False


def contains_typevar(t: T.P4Type) -> bool:
    """True when a type variable occurs in `t`."""
    if isinstance(t, T.TypeVar):
        return True
    if isinstance(t, T.SpecializedType):
        return any(contains_typevar(a) for a in t.args)
    if isinstance(t, T.TupleType):
        return any(contains_typevar(a) for a in t.elements)
    if isinstance(t, T.HeaderStack):
        return contains_typevar(t.element)
    return False


def substitute(t: T.P4Type, env: dict[str, T.P4Type]) -> T.P4Type:
    """Replace type variables bound in `env`."""
    if isinstance(t, T.TypeVar):
        return env.get(t.name, t)
    if isinstance(t, T.SpecializedType):
        return T.SpecializedType(t.base, [substitute(a, env) for a in t.args])
    if isinstance(t, T.TupleType):
        return T.TupleType([substitute(a, env) for a in t.elements])
    if isinstance(t, T.HeaderStack):
        return T.HeaderStack(substitute(t.element, env), t.size)
    return t


def castable(src: T.P4Type, dst: T.P4Type) -> bool:
    """Explicit casts allowed by spec 8.11."""
    s, d = T.strip_newtype(src), T.strip_newtype(dst)
    if same_type(s, d):
        return True
    if isinstance(d, T.Bits):
        return isinstance(s, T.Bits | T.InfInt) or (isinstance(s, T.BoolType) and d.width == 1) \
            or (isinstance(s, T.EnumType) and s.underlying is not None)
    if isinstance(d, T.BoolType):
        return (isinstance(s, T.Bits) and s.width == 1 and not s.signed) or isinstance(s, T.InfInt)
    if isinstance(d, T.EnumType) and d.underlying is not None:
        return isinstance(s, T.Bits | T.InfInt)
    if isinstance(d, T.StructLike) and isinstance(s, T.StructLike | T.TupleType):
        return True
    return False


def fold(op: str, a: int, b: int, t: T.P4Type) -> int:
    """Constant-fold an arithmetic operator (spec 8.5/8.6; saturating ops 8.5)."""
    if (op == "|+|" or op == "|-|") and isinstance(t, T.Bits):  # only on sized operands
        r = a + b if op == "|+|" else a - b
        if t.signed:
            lo, hi = -(1 << (t.width - 1)), (1 << (t.width - 1)) - 1
        else:
            lo, hi = 0, (1 << t.width) - 1
        return max(lo, min(hi, r))
    result: int = {
        "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a // b,
        "%": lambda: a % b, "&": lambda: a & b, "|": lambda: a | b, "^": lambda: a ^ b,
    }[op]()
    return wrap(result, t) if isinstance(t, T.Bits) else result
