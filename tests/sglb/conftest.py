"""Fixtures of the SGLB packet tests (helpers live in sglb_harness.py); on BMv2
(``--target bmv2``) the tests that cannot run there as written are skipped, each with why."""

from pathlib import Path

import p4target
import pytest
from sglb_harness import leaf, program, program_phase  # noqa: F401  (fixtures)

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
    "test_probe_round_trip_punted_with_rtt": _HOST_CLOCK + "it needs the spine's DRE to still "
                                             "hold the 1 KB packet sent in the same microsecond "
                                             "and an RTT of exactly 300 us",
    "test_probe_detects_recovery_when_every_path_is_excluded": _HOST_CLOCK + "the same probe "
                                                               "round trip as above",
    "test_spine_splits_unequal_parallel_links_by_capacity": _HOST_CLOCK + "it reads both "
                                                            "members' DRE after 1,500 packets "
                                                            "with no time passed (the 1:2 "
                                                            "split itself is checked first)",
    "test_a_steadily_loaded_uplink_reads_alike_early_and_late_in_the_dre_period":
        _HOST_CLOCK + "it loads the DRE with a frame every 8 us of the test clock",
    "test_a_spine_reads_a_steadily_loaded_port_alike_early_and_late_in_the_dre_period":
        _HOST_CLOCK + "it loads the DRE with a frame every 8 us of the test clock",
    "test_spine_raises_the_tag_to_its_egress_level": _HOST_CLOCK + "it needs 4 packets within "
                                                     "one 64 us DRE period",
    # in-band feedback: freshness is 10 ms and a test sends 40 packets per check (on
    # BMv2 each takes about a millisecond), leaves' clocks must differ by a set offset
    "test_feedback_moves_new_flowlets_off_a_congested_spine": _HOST_CLOCK + "it needs 16 KB "
                                                              "through the spine's DRE within "
                                                              "one period, and the feedback "
                                                              "fresh (10 ms) afterwards",
    "test_stale_feedback_ages_toward_unknown_never_toward_idle": _HOST_CLOCK + "feedback ages "
                                                                 "past its 10 ms freshness "
                                                                 "while a check sends 40 packets",
    "test_fresh_feedback_overrides_an_older_profile": _HOST_CLOCK + "feedback ages past its "
                                                      "10 ms freshness while the check sends "
                                                      "40 packets",
    "test_flowlet_moves_only_after_the_measured_delay_skew": _HOST_CLOCK + "it needs idle "
                                                             "times of exactly 4,050 and 4,101 us",
    "test_feedback_cycles_through_the_source_paths": _HOST_CLOCK + "the feedback must still be "
                                                     "fresh (10 ms) when leaf 1 returns it",
    "test_one_way_delay_is_measured_across_clock_offsets": "every BMv2 reads the same host "
                                                           "clock: two leaves with clocks 7 s "
                                                           "apart cannot be made",
    "test_by_default_unknown_defers_to_the_profile_so_unmeasured_paths_are_explored":
        _HOST_CLOCK + "feedback turns stale (100 ms) during the ageing check's 40 packets",
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
