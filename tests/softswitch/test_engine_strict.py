"""Internal errors are not drops: strict mode raises them, otherwise they are counted and
logged once per cause (docs/softswitch-engine.md "Errors")."""

import logging
import os

import pytest
from engine_harness import switch

from softswitch.engine.errors import InternalError


def _broken_switch(strict: bool):
    """A switch whose generated code hits a bug: the division helper raises."""
    sw = switch("hdr.o.r0 = hdr.i.a / hdr.i.b;")
    sw.strict = strict

    def boom(a: int, b: int) -> int:
        raise ZeroDivisionError("injected fault")

    sw.ns["_div"] = boom  # the generated module looks its helpers up in these globals
    return sw


def test_the_test_suite_runs_in_strict_mode():
    assert os.environ.get("SOFTSWITCH_STRICT") == "1"
    assert switch("").strict


def test_strict_mode_raises_an_internal_error():
    sw = _broken_switch(strict=True)
    with pytest.raises(InternalError, match="injected fault") as info:
        sw.process_packet(0, bytes([4, 2, 0, 0]))
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_outside_strict_mode_the_drop_is_counted_and_logged_once(caplog):
    sw = _broken_switch(strict=False)
    with caplog.at_level(logging.ERROR, logger="softswitch.engine"):
        for _ in range(3):
            assert sw.process_packet(5, bytes([4, 2, 0, 0])) == []
    assert sw.stats["dropped"][5] == 3
    assert sw.stats["errors"][5] == 3
    logged = [r for r in caplog.records if "internal error" in r.getMessage()]
    assert len(logged) == 1  # once per cause
    assert "ZeroDivisionError: injected fault" in logged[0].getMessage()


def test_a_program_drop_is_not_an_internal_error():
    # assert() failing is the program's decision (v1model): a counted drop, no error
    sw = switch("assert(hdr.i.a == 0);")
    assert sw.process_packet(1, bytes([1, 0, 0, 0])) == []
    assert sw.stats["dropped"][1] == 1
    assert not sw.stats["errors"]
