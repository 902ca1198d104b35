"""sglb/codes.py mirrors the constants of p4src/include/constants.p4."""

import re
from pathlib import Path

from sglb.codes import DropReason, Event, Neighbour, Punt

CONSTANTS = Path(__file__).resolve().parents[2] / "p4src" / "include" / "constants.p4"


def _p4_consts(width: int, prefix: str) -> dict[str, int]:
    text = CONSTANTS.read_text()
    found = re.findall(rf"const bit<{width}> {prefix}(\w+)\s*=\s*(\d+);", text)
    return {name: int(v) for name, v in found if name != "COUNTER_SIZE"}


def test_drop_reasons_match_p4():
    assert _p4_consts(32, "DROP_") == {m.name: m.value for m in DropReason}


def test_events_match_p4():
    assert _p4_consts(32, "EV_") == {m.name: m.value for m in Event}


def test_neighbours_and_punt_reasons_match_p4():
    assert _p4_consts(8, "NEIGHBOUR_") == {m.name: m.value for m in Neighbour}
    assert _p4_consts(8, "PUNT_") == {m.name: m.value for m in Punt}
