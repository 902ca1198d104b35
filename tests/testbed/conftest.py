"""Shared fixtures of the testbed tests: the compiled SGLB pipeline and an in-process switch."""

from pathlib import Path

import pytest

from switchtarget.pipeline import compile_pipeline

REPO = Path(__file__).resolve().parents[2]
PROGRAM = REPO / "p4src" / "sglb.p4"


@pytest.fixture(scope="session")
def sglb_pipeline(tmp_path_factory):
    """P4Info and device config of p4src/sglb.p4 (compiled once per session)."""
    return compile_pipeline(PROGRAM, tmp_path_factory.mktemp("tb-pipeline"))
