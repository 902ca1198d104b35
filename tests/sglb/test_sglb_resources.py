"""The resource model against a hand-computed case and the 1,024 x 64 target."""

import pytest

from sglb.resources import ModelParams, leaf_state, main, per_destination_bits, total_bits


def test_small_case_by_hand():
    # 4 leaves, 2 paths, 16 flowlets, 3-bit congestion, 4-bit weights, 32-bit time;
    # defaults: 4 ports, 2 spines, 30-bit epochs, 32-bit DRE, 28-bit feedback time,
    # 32-bit one-way delays.
    rows = {s.name: s for s in leaf_state(ModelParams(leaves=4, paths=2, flowlets=16))}
    expected = {
        "dst_profile": 4 * (2 + 2 + 2 * (3 + 4 + 31)),  # key 2, mask 2, per path rq, w, valid+epoch
        "uplinks": 1 * (2 + 2 + 2 * (2 + 5)),           # slots 2, count 2, per path port 2 + shift 5
        "port_neighbour": 4 * (2 + 2 + 16),             # key 2, kind 2, id 16
        "spine_paths": 2 * (16 + 2),                    # key 16, mask 2
        "switch_config": 1 + 1 + 16 + 48 + 32 + 8 + 16 + 1 + 16 + 32 + 32 + 3 + 32 + 32,
        "port_down": 4 * 1,
        "dre": 4 * (32 + 48),
        "flowlets": 16 * (32 + 2),                      # path + 1 in 0..2: 2 bits
        "notices": 8 * (1 + 30 + 1),
        "feedback": 8 * (1 + 3 + 28),
        "delays": 8 * 32,
        "rx_metrics": 8 * (1 + 3 + 28 + 32),
        "fb_cursor": 4 * (2 + 2),
    }
    assert {k: v.bits for k, v in rows.items()} == expected
    assert total_bits(list(rows.values())) == sum(expected.values()) == 2888
    per_dest = ("dst_profile", "notices", "feedback", "delays", "rx_metrics", "fb_cursor")
    assert per_destination_bits(list(rows.values())) == sum(expected[k] for k in per_dest)


def test_state_grows_with_quantisation_and_paths():
    base = total_bits(leaf_state(ModelParams(64, 8, 1024, qbits=3)))
    more_q = total_bits(leaf_state(ModelParams(64, 8, 1024, qbits=4)))
    # one more bit per (leaf, path) in the profile, the feedback and the returned metric
    assert more_q - base == 3 * 64 * 8 + 1  # + switch_config's unknown_level


def test_target_scale_fits_and_cli(capsys):
    assert main(["--leaves", "4", "--max-paths", "16", "--flowlets", "16"]) == 0
    out = capsys.readouterr().out
    assert "MAX_PATHS = 16" in out and "4 leaves x 16 paths" in out
    assert "1024 leaves x 64 paths" in out
    assert "fits" in out and "does NOT fit" not in out
    assert main(["--budget-bits", "1000"]) == 1  # 1,024 x 64 cannot fit 1,000 bits


def test_bad_parameters_rejected(capsys):
    with pytest.raises(ValueError, match="paths must be >= 1"):
        ModelParams(leaves=4, paths=0, flowlets=16)
    assert main(["--leaves", "0"]) == 2
    assert "leaves must be >= 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--max-paths", "32"])
