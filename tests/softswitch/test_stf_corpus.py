"""Run every STF test of the corpus in tests/softswitch/stf/ through the engine.

Each `NAME.stf` runs against `NAME.p4` next to it.  The expected outputs were
computed by hand or with scapy from BMv2 simple_switch semantics (see the
comments in each file).  Gaps the engine still has are listed in FINDINGS.md
and marked xfail(strict=True) below, so a fix shows up as XPASS.

With ``--target bmv2`` the same files run on BMv2 (tests/p4target.py): p4c
compiles each program and ``simple_switch_grpc`` must produce the expected
packets; files BMv2 cannot run are listed in BMV2_CANNOT_RUN with the reason.
"""

from pathlib import Path

import p4target
import pytest

STF_DIR = Path(__file__).parent / "stf"

# name -> reason, for corpus files that fail because of a known engine gap
KNOWN_GAPS: dict[str, str] = {
}


# name -> reason, for corpus files the reference tools cannot run (--target bmv2 only)
BMV2_CANNOT_RUN: dict[str, str] = {
    "control_flow": "p4c 1.2.5.16 stops with an internal error on this valid program "
                    "('Compiler Bug: Overwriting definitions at <ExitStatement>', "
                    "frontends/p4/def_use.h), caused by the `exit` in sub-control Adder, "
                    "which Ing instantiates twice (without that exit p4c compiles it)",
}


# name -> reason, for corpus files where BMv2 (with p4c) departs from the P4_16 spec that
# softswitch follows (--target bmv2 only; xfail so that a BMv2 that changes shows up)
BMV2_DEPARTS: dict[str, str] = {
    "enum_error": "a select with no matching case and no default: P4_16 ('Select "
                  "expressions') makes it error.NoMatch, softswitch too; p4c-bm2-ss 1.2.5.16 "
                  "writes no default transition and BMv2 1.15.5 ends the parser without "
                  "error on it (parser_error stays NoError: code 00 instead of 03)",
}


def _cases() -> list:
    cases = []
    for stf in sorted(STF_DIR.glob("*.stf")):
        marks = []
        if p4target.on_bmv2() and stf.stem in BMV2_CANNOT_RUN:
            marks.append(pytest.mark.skip(reason=BMV2_CANNOT_RUN[stf.stem]))
        elif p4target.on_bmv2() and stf.stem in BMV2_DEPARTS:
            marks.append(pytest.mark.xfail(strict=True, reason=BMV2_DEPARTS[stf.stem]))
        elif not p4target.on_bmv2() and stf.stem in KNOWN_GAPS:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[stf.stem]))
        cases.append(pytest.param(stf, id=stf.stem, marks=marks))
    return cases


def test_corpus_is_complete() -> None:
    """Every .stf has its .p4 and every .p4 is exercised by an .stf or a packet test."""
    stfs = {p.stem for p in STF_DIR.glob("*.stf")}
    programs = {p.stem for p in STF_DIR.glob("*.p4")}
    assert stfs <= programs, f"STF files without a program: {sorted(stfs - programs)}"
    used_by_packet_tests = set()
    for test_file in Path(__file__).parent.glob("test_*.py"):
        text = test_file.read_text()
        used_by_packet_tests |= {name for name in programs if f'"{name}.p4"' in text}
    unused = programs - stfs - used_by_packet_tests
    assert not unused, f"programs no test runs: {sorted(unused)}"


@pytest.mark.parametrize("stf_path", _cases())
def test_stf(stf_path: Path) -> None:
    result = p4target.run_stf(stf_path.with_suffix(".p4"), stf_path)
    assert result.ok, result.report


def test_stf_valid_key_alias(tmp_path: Path) -> None:
    """bmv2stf.py maps a key written `hdr.x.valid` to the validity key `hdr.x.$valid$`."""
    from softswitch.stf import run_file

    text = (STF_DIR / "stack_key.stf").read_text().replace("$valid$:", "valid:")
    assert "isValid" not in text and ".valid:" in text
    variant = tmp_path / "stack_key.stf"
    variant.write_text(text)
    result = run_file(str(STF_DIR / "stack_key.p4"), str(variant))
    assert result.ok, result.report


def test_stf_lpm_written_with_star_nibbles(tmp_path: Path) -> None:
    """bmv2stf.py: an lpm value without /len takes its prefix from the non-* digits."""
    from softswitch.stf import run_file

    text = (STF_DIR / "router.stf").read_text()
    text = text.replace("dstAddr:0x0A000000/8 ", "dstAddr:0x0A****** ")
    text = text.replace("dstAddr:0x0A000000/24 ", "dstAddr:0x0A0000** ")
    assert text.count("******") == 1 and text.count("0A0000**") == 1
    variant = tmp_path / "router.stf"
    variant.write_text(text)
    result = run_file(str(STF_DIR / "router.p4"), str(variant))
    assert result.ok, result.report


def test_stf_expect_without_data_accepts_any_number(tmp_path: Path) -> None:
    """bmv2stf.py: `expect <port>` with no data lets that port receive any number of packets."""
    from softswitch.stf import run_file

    variant = tmp_path / "misc.stf"
    variant.write_text(
        "packet 7 00 00 00 00 AABB\n"
        "packet 7 00 00 00 00 AABB\n"
        "expect 2\n"
        "packet 7 03 00 00 00 AABB   # dropped in ingress\n"
    )
    result = run_file(str(STF_DIR / "misc.p4"), str(variant))
    assert result.ok, result.report


def test_stf_short_names(tmp_path: Path) -> None:
    """bmv2stf.py resolves tables, keys and actions by a unique suffix of their names."""
    from softswitch.stf import run_file

    text = (STF_DIR / "router.stf").read_text()
    text = text.replace("add Ing.ipv4_lpm hdr.ipv4.dstAddr:", "add ipv4_lpm dstAddr:")
    text = text.replace(" Ing.set_nhop(", " set_nhop(")
    assert "Ing." not in text
    variant = tmp_path / "router.stf"
    variant.write_text(text)
    result = run_file(str(STF_DIR / "router.p4"), str(variant))
    assert result.ok, result.report


def test_stf_stack_element_written_with_dollar(tmp_path: Path) -> None:
    """bmv2stf.py reads a key `hdr.mpls$0.label` as `hdr.mpls[0].label` (p4c's ternary2-bmv2)."""
    from softswitch.stf import run_file

    text = (STF_DIR / "stack_key.stf").read_text().replace("mpls[0]", "mpls$0").replace(
        "mpls[1]", "mpls$1")
    assert "hdr.mpls$0.label:100" in text
    variant = tmp_path / "stack_key.stf"
    variant.write_text(text)
    result = run_file(str(STF_DIR / "stack_key.p4"), str(variant))
    assert result.ok, result.report
