"""Code generation of a whole program: the six v1model blocks, their entry points, field lists.

`Codegen` combines the passes of this package; `compile()` returns the source of
one Python module, executed once by `softswitch.engine.builder`.
"""

from __future__ import annotations

import re

from softswitch.frontend import ast as A
from softswitch.frontend import types as T

from ..errors import CompileError
from .calls import CallCode
from .controls import ControlCode
from .expressions import ExpressionCode
from .packing import PackingCode
from .parsers import ParserCode
from .statements import StatementCode
from .values import ValueCode, is_agg, rt


class Codegen(ValueCode, ExpressionCode, PackingCode, StatementCode, CallCode, ParserCode,
              ControlCode):
    """Translate the checked AST of a v1model program into one Python module's source."""

    def field_list_copiers(self, meta_type: T.P4Type) -> None:
        """Emit FL_<n>(src, dst) copying the metadata fields annotated @field_list(n)."""
        lists: dict[int, list[str]] = {}

        def walk(t: T.P4Type, path: str) -> None:
            t = rt(t)
            if not isinstance(t, T.StructLike):
                return
            for f in t.fields:
                for ann in f.annotations or []:
                    if getattr(ann, "name", None) == "field_list":
                        for arg in ann.args or []:
                            if isinstance(arg, int):
                                lists.setdefault(arg, []).append(f"{path}.f_{f.name}")
                if is_agg(f.type):
                    walk(f.type, f"{path}.f_{f.name}")

        walk(meta_type, "")
        e = self.out
        for idx, paths in sorted(lists.items()):
            e(f"def FL_{idx}(src, dst):")
            for p in paths:
                e(f"    dst{p} = _cp(src{p})")
            e("")
        e("FIELD_LISTS = {" + ", ".join(f"{i}: FL_{i}" for i in sorted(lists)) + "}")

    def compile(self) -> str:
        """Source of the generated module."""
        main = self.program.main
        if main is None:
            raise CompileError(self.program.source_file, "the program has no V1Switch main package")
        # top-level actions and extern instances are shared by every control
        main_inst = getattr(main, "instantiation", None)
        for d in self.program.ast.decls:
            if isinstance(d, A.ActionDecl):
                self.compile_action(d)
            elif isinstance(d, A.Instantiation) and d is not main_inst:
                t = d.type.base if isinstance(d.type, T.SpecializedType) else d.type
                if isinstance(t, T.ExternType):
                    self.register_instance(d)
        blocks = {}
        roles = ("parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser")
        ctor_calls = _block_constructors(main_inst, [getattr(main, r) for r in roles])
        for role, ctor in zip(roles, ctor_calls, strict=True):
            decl = getattr(main, role)
            self.block_fq = decl.name
            args = list(ctor.bound_args) if ctor is not None else []
            blocks[role] = self.compile_instance(decl, role, None, args)
        params = main.parser.params
        hdr_t = rt(params[1].type)
        meta_t = rt(params[2].type)
        sm_t = rt(params[3].type)
        e = self.out
        e(f"new_headers = {self.class_for(hdr_t)}")
        e(f"new_meta = {self.class_for(meta_t)}")
        e(f"new_sm = {self.class_for(sm_t)}")
        for role, g in blocks.items():
            e(f"RUN_{role} = {g}")
        self.field_list_copiers(meta_t)
        body = self.out.text()
        fns = "".join(d.text() for d in self.deferred)
        return self.class_src.text() + "\n" + alias_params(fns + "\n" + body, self.agg_params)


def _block_constructors(main_inst: object, decls: list[object]) -> list[A.CallExpr | None]:
    """The constructor call (`Ingress(true)`) of each V1Switch block, in the blocks' order."""
    calls = [a for a in getattr(main_inst, "bound_args", None) or []
             if isinstance(a, A.CallExpr)]
    if len(calls) == len(decls) and all(c.target is d for c, d in zip(calls, decls, strict=True)):
        return list(calls)
    out: list[A.CallExpr | None] = []
    for d in decls:
        match = next((c for c in calls if c.target is d), None)
        if match is not None:
            calls.remove(match)
        out.append(match)
    return out


_PROLOGUE = re.compile(r"^\s+(F = FR\d+\(\)|F\.[ps]_\w+ = a\d+)$")


def alias_params(source: str, agg_params: set[str]) -> str:
    """Read aggregate frame slots (`F.p_hdr`) once per function into a local (`p_hdr`).

    Aggregate parameters are references that a block never rebinds, so a local
    alias is equivalent and saves an attribute lookup per access.
    """
    if not agg_params:
        return source
    pattern = re.compile(r"\bF\.(" + "|".join(sorted(agg_params)) + r")\b")
    out: list[str] = []
    lines = source.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("def "):
            out.append(line)
            i += 1
            continue
        j = i + 1
        while j < len(lines) and (lines[j].startswith(" ") or not lines[j]):
            j += 1
        block = lines[i + 1 : j]
        k = 0
        while k < len(block) and _PROLOGUE.match(block[k]):
            k += 1
        rest = block[k:]
        used = sorted({m.group(1) for ln in rest for m in pattern.finditer(ln)})
        out.append(line)
        out.extend(block[:k])
        out.extend(f"    {name} = F.{name}" for name in used)
        out.extend(pattern.sub(r"\1", ln) for ln in rest)
        i = j
    return "\n".join(out)
