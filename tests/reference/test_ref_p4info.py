"""P4Info of every P4 program in the tests, benchmarks and p4src/, from softswitch and
from p4c (``p4c-bm2-ss --p4runtime-files``): the same, entity for entity.

Needs p4c-bm2-ss (skipped otherwise, tests/conftest.py says so). Each known
difference is an xfail(strict=True) naming the construct; the construct itself
has an xfail test of its own in tests/softswitch/test_p4info_vs_p4c.py (no p4c
needed), so a fix there shows up here as XPASS too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToDict

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.p4c


def _programs() -> list[Path]:
    """Whole programs (they instantiate a package); include files are not."""
    found = sorted((ROOT / "tests").rglob("*.p4")) + sorted((ROOT / "bench").rglob("*.p4"))
    found.append(ROOT / "p4src" / "sglb.p4")
    return [p for p in found if " main;" in p.read_text() or ") main;" in p.read_text()]


ENUMS = "no type_info.serializable_enums"

# program (path from the repo root) -> what softswitch's P4Info lacks or names otherwise
KNOWN: dict[str, tuple[str, ...]] = {
    "tests/softswitch/stf/names.p4": (ENUMS,),
}

# program -> why p4c does not compile it (the P4Info cannot be compared)
P4C_REFUSES: dict[str, str] = {
    "tests/softswitch/programs/frontend_constructs.p4": (
        "the program annotates const entries before their keyset (`@priority(5) (_, _): a();`): "
        "P4_16's grammar (and p4c) take an entry's annotations after its action only; "
        "softswitch accepts both places (tests/softswitch/test_p4info_vs_p4c.py)"),
    "tests/softswitch/stf/control_flow.p4": (
        "p4c 1.2.5.16 stops with an internal error on this valid program "
        "(tests/softswitch/test_stf_corpus.py, BMV2_CANNOT_RUN)"),
}


def _case(path: Path):
    rel = str(path.relative_to(ROOT))
    marks = []
    if rel in P4C_REFUSES:
        marks.append(pytest.mark.skip(reason=f"p4c refuses it: {P4C_REFUSES[rel]}"))
    elif rel in KNOWN:
        marks.append(pytest.mark.xfail(strict=True, reason="softswitch: " + "; ".join(KNOWN[rel])))
    return pytest.param(path, id=rel, marks=marks)


def canonical(p4info) -> dict:
    """A P4Info as a dict, entity lists keyed by name; without pkg_info (p4c fills it
    from its own build) and with an empty type_info left out (p4c always writes one)."""
    d = MessageToDict(p4info, preserving_proto_field_name=True)
    d.pop("pkg_info", None)
    if not d.get("type_info"):
        d.pop("type_info", None)
    for kind, entities in list(d.items()):
        if isinstance(entities, list):
            d[kind] = {e.get("preamble", {}).get("name", str(i)): e for i, e in enumerate(entities)}
    return d


def differences(ours: dict, theirs: dict, path: str = "") -> list[str]:
    """Every path where the two canonical P4Infos differ, with both values."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out = []
        for k in sorted(set(ours) | set(theirs), key=str):
            out += differences(ours.get(k), theirs.get(k), f"{path}/{k}")
        return out
    return [] if ours == theirs else [f"{path}: softswitch {ours!r}, p4c {theirs!r}"]


def _sglb_needs_version_flag(path: Path, error: str) -> bool:
    return path.name == "sglb.p4" and "V1MODEL_VERSION" not in path.read_text() and \
        "type parameter" in error


@pytest.mark.parametrize("path", [_case(p) for p in _programs()])
def test_p4info_agrees_with_p4c(path: Path):
    from bmv2.compiler import P4cError, compile_program
    from softswitch import compile_file
    from softswitch.p4info import p4info_from_program_info

    try:
        theirs = compile_program(path).p4info_message()
    except P4cError as e:
        if _sglb_needs_version_flag(path, str(e)):
            pytest.xfail("sglb.p4 uses v1model's newer register<T, I> but does not define "
                         "V1MODEL_VERSION: stock p4c refuses it (the SGLB data-plane issue)")
        raise
    ours = p4info_from_program_info(compile_file(str(path)).info)
    diff = differences(canonical(ours), canonical(theirs))
    assert not diff, "\n".join(diff)


def test_every_program_is_compared():
    """The lists above name only programs that exist (no stale entries)."""
    rels = {str(p.relative_to(ROOT)) for p in _programs()}
    assert set(KNOWN) <= rels and set(P4C_REFUSES) <= rels
    assert len(rels) >= 40
