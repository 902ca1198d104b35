"""Control-plane names, as p4c gives them (P4Runtime spec 6.3; P4_16 spec 18.3.3 `@name`).

One set of rules, used by `Program.info` (so P4Info) and by the engine (so the
names P4Runtime requests are resolved against):

* a declaration's local name is its `@name("x")` or else its own name;
* `@name(".x")` is absolute: the name is `x`, wherever the declaration is;
* a declaration local to a parser or control is named `<instance path>.<local name>`;
* the instance path of one of the main package's blocks is the block type's declared
  name (`MyIngress`); that of an instance inside a block is the enclosing path plus the
  instance's local name (`MyIngress.acl1`), or its absolute `@name`;
* top-level declarations keep their (local) name (`NoAction`).
"""

from __future__ import annotations

from typing import Any

from . import ast as A


def _name_annotation(d: Any) -> str | None:
    ann = A.find_annotation(getattr(d, "annotations", []), "name")
    text = ann.string_arg() if ann is not None else None
    return text or None


def local_name(d: Any) -> str:
    """`@name` (a leading '.' dropped) or the declared name."""
    text = _name_annotation(d)
    if text is None:
        return str(d.name)
    return text[1:] if text.startswith(".") else text


def is_absolute(d: Any) -> bool:
    """True for `@name(".x")`."""
    text = _name_annotation(d)
    return text is not None and text.startswith(".")


def name_in(d: Any, prefix: str | None) -> str:
    """The name of `d` declared in the block whose instance path is `prefix` (None: top level)."""
    if prefix is None or is_absolute(d):
        return local_name(d)
    return f"{prefix}.{local_name(d)}"


def block_path(block: Any) -> str:
    """Instance path of one of the main package's blocks: the anonymous instance in main's
    arguments is named after the parser/control type's declared name (an `@name` on the
    type declaration is not the instance's; p4c's name_annotations_to_p4info-bmv2)."""
    return str(block.name)


def instance_path(parent: str, inst: Any) -> str:
    """Instance path of the parser/control instance `inst` declared in the block at `parent`."""
    return name_in(inst, parent)
