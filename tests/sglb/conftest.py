"""Fixtures of the SGLB packet tests (helpers live in sglb_harness.py); on BMv2
(``--target bmv2``) the tests that cannot run there as written are skipped, each with why."""

from pathlib import Path

import p4target
import pytest
from sglb_harness import leaf, program  # noqa: F401  (fixtures)

_HOST_CLOCK = "BMv2's clock is the host's and packets reach it milliseconds apart: "
# test name -> why it cannot run on BMv2 as written (none is a behaviour difference:
# those would be xfails in the tests themselves)
BMV2_CANNOT_RUN = {
    "test_program_surface": "inspects softswitch's ProgramInfo (p4c's P4Info of sglb.p4 is "
                            "compared with softswitch's in tests/reference/test_ref_p4info.py)",
    "test_counters_in_p4info": "inspects softswitch's ProgramInfo (tests/reference/)",
    "test_registers_in_p4info": "inspects softswitch's ProgramInfo (tests/reference/)",
    "test_full_rate_uplink_reads_congested": _HOST_CLOCK + "it loads the DRE with a packet "
                                             "every 8 us of the test clock (1 Gb/s)",
    "test_probe_path_spine_stamp_and_punt": _HOST_CLOCK + "it needs the spine's DRE to still "
                                            "hold the 1 KB packet sent in the same microsecond",
    "test_local_uplink_utilisation_counts": _HOST_CLOCK + "it needs 11 packets in the same "
                                            "microsecond, before the DRE decays",
    "test_path_kept_within_flowlet": _HOST_CLOCK + "it needs gaps of 49 us, under the 50 us "
                                     "flowlet gap",
    "test_dead_path_moves_flowlet_at_once": _HOST_CLOCK + "the flowlet must still be alive 1 us "
                                            "later to be moved as a failover",
    "test_flowlet_gap_boundary": _HOST_CLOCK + "it needs gaps of exactly 50 and 51 us",
}


def pytest_collection_modifyitems(config, items):
    if not p4target.on_bmv2():
        return
    here = Path(__file__).parent
    for item in items:
        if item.path.parent != here:
            continue
        reason = BMV2_CANNOT_RUN.get(getattr(item, "originalname", item.name))
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"on BMv2: {reason}"))
