"""The resource model against a hand-computed case and the 1,024 x 64 target."""

import pytest

from sglb.resources import ModelParams, leaf_state, main, per_destination_bits, total_bits


def test_small_case_by_hand():
    # 4 leaves, 2 paths, 16 flowlets, 3-bit congestion, 4-bit weights, 48-bit time;
    # defaults: 4 ports, 2 spines, 8-bit generations, 32-bit epochs and DRE.
    rows = {s.name: s for s in leaf_state(ModelParams(leaves=4, paths=2, flowlets=16))}
    expected = {
        "dst_profile": 4 * (2 + 2 + 8 + 2 * (3 + 4)),  # key 2, mask 2, gen 8, per path 3 + 4
        "uplinks": 1 * (2 + 2 * (2 + 5)),              # slots 2, per path port 2 + shift 5
        "spine_paths": 2 * (16 + 1 + 2),               # key 16, slot 1, mask 2
        "switch_config": 1 + 1 + 16 + 48 + 48 + 8 + 16,
        "port_down": 4 * 1,
        "dre": 4 * (32 + 48),
        "flowlets": 16 * (48 + 2),                     # path + 1 in 0..2: 2 bits
        "exclusions": 4 * (2 + 8),
        "notice_epoch": 2 * 32,
    }
    assert {k: v.bits for k, v in rows.items()} == expected
    assert total_bits(list(rows.values())) == 1524
    assert per_destination_bits(list(rows.values())) == 104 + 40


def test_state_grows_with_quantisation_and_paths():
    base = total_bits(leaf_state(ModelParams(64, 8, 1024, qbits=3)))
    more_q = total_bits(leaf_state(ModelParams(64, 8, 1024, qbits=4)))
    assert more_q - base == 64 * 8  # one more bit per (leaf, path)


def test_target_scale_fits_and_cli(capsys):
    assert main(["--leaves", "4", "--paths", "2", "--flowlets", "16"]) == 0
    out = capsys.readouterr().out
    assert "1024 leaves x 64 paths" in out
    assert "fits" in out and "does NOT fit" not in out
    assert main(["--budget-bits", "1000"]) == 1  # 1,024 x 64 cannot fit 1,000 bits


def test_bad_parameters_rejected(capsys):
    with pytest.raises(ValueError, match="paths must be >= 1"):
        ModelParams(leaves=4, paths=0, flowlets=16)
    assert main(["--leaves", "0"]) == 2
    assert "leaves must be >= 1" in capsys.readouterr().err
