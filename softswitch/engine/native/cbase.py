"""Shared parts of the C code generator: the value representation, the generator's state,
C types of P4 types, and `Unsupported` for what the C backend refuses.

Value representation: every scalar is a `u64` holding the value reduced to its
width (`int<W>` as W-bit two's complement, `bool` as 0/1, `error` and plain
enums as their member number, as BMv2 encodes them); values of 65 to 128 bits
are a `u128` (unsigned __int128), wider ones are refused. Headers and structs
are C structs (`valid` for headers).
"""


from __future__ import annotations

from typing import Any

from softswitch.frontend import ast as A
from softswitch.frontend import types as T
from softswitch.frontend.program import Program

from ..codegen import Codegen
from ..codegen.values import rt
from ..errors import CompileError

K = A.CallKind
MK = A.MemberKind
MAX_KEYS = 16  # key fields per table (tbl_lookup's buffer)
PARSER_STEPS = 10000  # state transitions per packet, as the Python engine
ALGORITHMS = ("crc16", "crc32", "crcCCITT", "csum16", "xor16", "identity", "crc16_custom", "crc32_custom")
CUSTOM_CRCS = ("crc16_custom", "crc32_custom")  # per switch: sw->crc[i], i their index here
LOG_VALUES = 8  # values one log_msg can carry
MAX_LOGS = 64  # log_msg records one injected packet can leave (more are not logged)


class Unsupported(CompileError):
    """A construct the C backend does not take yet."""

    def __init__(self, node: Any, what: str) -> None:
        super().__init__(getattr(node, "loc", "?"),
                         f"the native engine does not support {what} yet; --engine python runs it")


def width(t: T.P4Type) -> int:
    """Bits of a scalar's representation (error and plain enums: 32, their member number)."""
    t = rt(t)
    if isinstance(t, T.Bits):
        return t.width
    if isinstance(t, T.BoolType):
        return 1
    if isinstance(t, T.EnumType | T.ErrorType):
        return 32
    if isinstance(t, T.InfInt):
        return 64
    return 0


def signed(t: T.P4Type) -> bool:
    t = rt(t)
    return isinstance(t, T.Bits) and t.signed


def mask(w: int) -> str:
    if w > 64:
        return f"MASK128({w})"
    return "~0ULL" if w >= 64 else hex((1 << w) - 1) + "ULL"


def cint(w: int) -> str:
    """C type of a scalar of w bits."""
    return "u128" if w > 64 else "u64"


def is_scalar(ct: str) -> bool:
    return ct in ("u64", "u128")


def alg_call(algo: str, buf: str, n: str) -> str:
    """C computing `algo` over n bytes of buf (inside a function with the packet `p`)."""
    if algo in CUSTOM_CRCS:
        return f"crc_custom(&p->sw->crc[{CUSTOM_CRCS.index(algo)}], {buf}, {n})"
    return f"alg_{algo}({buf}, {n})"


def alg_ref(algo: str) -> str:
    """The two arguments naming `algo` for with_payload: a function, or a custom CRC's parameters."""
    if algo in CUSTOM_CRCS:
        return f"NULL, &p->sw->crc[{CUSTOM_CRCS.index(algo)}]"
    return f"alg_{algo}, NULL"


def lit(v: int, w: int) -> str:
    if w > 64:  # C has no 128-bit literals
        v &= (1 << w) - 1
        return f"U128({hex(v >> 64)}ULL, {hex(v & ((1 << 64) - 1))}ULL)"
    return hex(v & ((1 << w) - 1) if w < 64 else v & ((1 << 64) - 1)) + "ULL"


class CGenBase:
    """State and helpers every part of the C generator uses; `x`, `lval` and `block`
    are the expression and statement compilers (cgen.CGen)."""

    def __init__(self, program: Program, gen: Codegen) -> None:
        self.program = program
        self.gen = gen
        self.types: dict[int, str] = {}
        self.type_src: list[str] = []
        self.vars: dict[int, str] = {}  # id(decl) -> C l-value
        self.fns: list[str] = []  # function bodies
        self.protos: list[str] = []
        self.out: list[str] = []
        self.counter = 0
        self.pkt_fields: list[str] = []  # control-level variables kept in the packet
        self.table_ids: dict[tuple[int, str], int] = {}  # (id(TableDecl), codegen prefix) -> index
        self.table_infos: list[Any] = []
        self.table_actions: list[list[str]] = []  # per table: action names in the runtime's order
        self.action_fn: dict[str, str] = {}  # action fq name -> C function
        self.action_params: dict[str, list[A.Param]] = {}
        self.registers: list[tuple[str, int, int]] = []  # (name, size, width)
        self.reg_ids: dict[int, int] = {}
        self.counters: list[tuple[str, int]] = []
        self.ctr_ids: dict[int, int] = {}
        self.meters: list[tuple[str, int, str]] = []  # (name, size, unit)
        self.direct_meter_of: dict[int, bool] = {}
        self.met_ids: dict[int, int] = {}
        self.in_action: A.ActionDecl | None = None
        self.in_parser = False
        self.hdr_t: T.P4Type | None = None
        self.may_exit = False
        self.emit_sizes: list[int] = []
        self.err_members: list[str] = list(program.error_type.members)
        self.uses_passes = False  # clone, resubmit or recirculate: the job pipeline (cpasses.py)
        self.digests: list[tuple[str, list[tuple[str, int]]]] = []
        self.functions: dict[int, str] = {}  # id(FunctionDecl) -> C function
        self.log_texts: list[str] = []  # log_msg messages, by number
        self.fn_returns = False  # compiling a function that returns a value
        self.digest_width = 1
        self.loop_labels: list[int] = []  # enclosing loops' label numbers (cgen loops)

    # ------------------------------------------------------------------ helpers

    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"{base}{self.counter}"

    def e(self, line: str) -> None:
        self.out.append(line)

    def err_code(self, name: str) -> int:
        return self.err_members.index(name) if name in self.err_members else 0

    # ------------------------------------------------------------------ types

    def ctype(self, t: T.P4Type, node: Any) -> str:
        t0 = T.strip_newtype(t)
        if isinstance(t0, T.HeaderStack):
            return self.stack_type(t0, node)
        if isinstance(t0, T.Varbit):
            return self.varbit_type(t0)
        if isinstance(t0, T.StructLike):
            return self.struct(t0, node)
        w = width(t0)
        if not w:
            raise Unsupported(node, f"values of type {t0}")
        if w > 128:
            raise Unsupported(node, f"values wider than 128 bits ({t0})")
        return cint(w)

    def struct(self, t: T.StructLike, node: Any) -> str:
        name = self.types.get(id(t))
        if name is not None:
            return name
        fields = [(f.name, self.ctype(f.type, f.decl or node)) for f in t.fields]
        name = f"S{len(self.types)}_{t.name}"[:60]
        self.types[id(t)] = name
        body = "".join(f"    {ct} f_{fn};\n" for fn, ct in fields)
        if isinstance(t, T.HeaderType):
            body += "    uint8_t valid;\n"
        if not body:
            body = "    uint8_t empty;\n"
        self.type_src.append(f"typedef struct {{\n{body}}} {name};\n")
        return name

    def varbit_type(self, t: T.Varbit) -> str:
        """varbit<N>: its bytes in network order (extract takes whole bytes) and its current
        width in bits."""
        n = max((t.max_width + 7) // 8, 1)
        name = f"VB{n}"
        if name not in self.types.values():
            self.types[id(t)] = name
            self.type_src.append(f"typedef struct {{\n    uint8_t b[{n}];\n    u64 w;\n}} {name};\n")
        return name

    def stack_type(self, t: T.HeaderStack, node: Any) -> str:
        """A header stack: its elements and nextIndex `n` (spec 8.18)."""
        name = self.types.get(id(t))
        if name is not None:
            return name
        elem = rt(t.element)
        if not isinstance(elem, T.HeaderType):
            raise Unsupported(node, "stacks of header unions")
        ect = self.ctype(elem, node)
        name = f"K{len(self.types)}_{ect}"[:60]
        self.types[id(t)] = name
        self.type_src.append(f"typedef struct {{\n    {ect} e[{t.size}];\n    u64 n;\n}} {name};\n")
        return name

    def stack_of(self, e: A.Expression) -> tuple[str, T.HeaderStack, str]:
        """(l-value, type, element C type) of a header stack expression."""
        t = rt(e.type)
        assert isinstance(t, T.HeaderStack)
        return self.lval(e), t, self.ctype(t.element, e)

    # ------------------------------------------------------------------ compilers (cgen.CGen)

    def x(self, e: A.Expression) -> str:
        raise NotImplementedError

    def lval(self, e: A.Expression) -> str:
        raise NotImplementedError

    def assign_agg(self, dst: str, src: A.Expression, t: T.P4Type | None = None) -> None:
        raise NotImplementedError
