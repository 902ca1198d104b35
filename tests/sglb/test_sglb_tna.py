"""The Tofino program p4src/tna/sglb.p4: it compiles with bf-p4c for Tofino and
Tofino 2 at MAX_PATHS 8 and 64 and fits (skipped without bf-p4c); p4c's front
end accepts it with the TNA include files (skipped without them); its
encodings (sglb.tna_config) by hand; the resource figures' reader and the
--tofino report."""

from __future__ import annotations

import itertools
import json
import random
import re
import subprocess
import sys
import zlib

import pytest
from scapy.layers.l2 import Ether

from sglb import tofino
from sglb.codes import DropReason as Drop
from sglb.codes import LbMode, Neighbour, Role
from sglb.config import level_thresholds
from sglb.headers import SglbNotice
from sglb.settings import Feedback, SwitchSettings, SwitchTarget, switch_params
from sglb.tna_config import (
    DRAW_COLUMNS,
    DRAW_ROWS,
    DRAW_STRIDE,
    NOTICE_WRITEBACK,
    at_most,
    band_entries,
    draw_base,
    draw_rows,
    level_entries,
    level_planes,
    lowest_entries,
    writeback_frame,
)

BF_P4C = tofino.bf_p4c()
INCLUDE = tofino.tna_include_dir()
# What bf-p4c 9.13.4 measured (docs/sglb.md, "Figures (bf-p4c)"): every case fits;
# the 64-path ones take minutes, so they are marked slow.
CASES = [("tofino", 8), pytest.param("tofino", 64, marks=pytest.mark.slow),
         ("tofino2", 8), pytest.param("tofino2", 64, marks=pytest.mark.slow)]


# -- with the compiler ---------------------------------------------------------------

@pytest.mark.skipif(BF_P4C is None, reason="bf-p4c is not on PATH")
@pytest.mark.parametrize(("target", "max_paths"), CASES)
def test_bf_p4c_compiles_and_fits(tmp_path, target, max_paths):
    out = tofino.compile_tna(target, max_paths, tmp_path)
    figures = tofino.figures(out, target, max_paths)
    assert 0 < figures.stages <= figures.stage_limit, figures
    assert figures.srams > 0 and figures.phv_bits > 0, figures
    assert (out / "p4info.txtpb").stat().st_size > 0


@pytest.mark.skipif(INCLUDE is None, reason="no tna.p4 (bf-p4c's include files, or "
                                            "$SGLB_TNA_INCLUDE)")
@pytest.mark.parametrize(("target", "max_paths"), [("tofino", 8), ("tofino", 64),
                                                   ("tofino2", 8), ("tofino2", 64)])
def test_front_end_accepts_the_program(tmp_path, target, max_paths):
    if not tofino.shutil.which("p4test"):
        pytest.skip("p4test is not on PATH")
    info = tofino.front_end_p4info(target, max_paths, tmp_path / "p4info.txtpb", INCLUDE)
    text = info.read_text()
    for name in ("SglbIngress.dst_profile", "SglbIngress.draws", "SglbIngress.lowest_path",
                 "SglbIngress.kept_alive", "SglbEgress.port_levels"):
        assert f'name: "{name}"' in text, name
    # Tofino (two passes) looks the profile's masks up in the engine's egress
    assert ('name: "SglbEgress.dst_masks"' in text) == (target == "tofino")


# -- encodings ------------------------------------------------------------------------

def test_level_planes_and_bands_by_hand():
    levels = [0, 3, 7, 5, 1, 6, 2, 4]
    planes = level_planes(levels, 8)
    assert planes == (0b00011110, 0b01100110, 0b10101100)
    assert at_most(planes, 0, 8) == 0b00000001
    assert at_most(planes, 3, 8) == 0b01010011
    assert at_most(planes, 7, 8) == 0xFF
    with pytest.raises(ValueError, match="outside 0..7"):
        level_planes([8], 8)


# band_cut's actions (p4src/tna/sglb.p4): the paths above level K, from the planes
# p0..p2 and the pairs glb_safe_* makes (p1 & p0, p1 | p0), in one operation each
ABOVE = [lambda p0, p1, p2: p2 | (p1 | p0), lambda p0, p1, p2: p2 | p1,
         lambda p0, p1, p2: p2 | (p1 & p0), lambda p0, p1, p2: p2,
         lambda p0, p1, p2: p2 & (p1 | p0), lambda p0, p1, p2: p2 & p1,
         lambda p0, p1, p2: p2 & (p1 & p0), lambda p0, p1, p2: 0]


def test_band_cut_formulas_keep_the_paths_at_or_below_the_band():
    """eligible & ~above_K is exactly the eligible paths at level K or lower, for
    every K and every combination of levels of 8 paths."""
    for levels in itertools.product(range(8), repeat=2):
        planes = level_planes(list(levels) * 4, 8)
        for k in range(8):
            for eligible in (0xFF, 0b10110101, 0):
                assert eligible & ~ABOVE[k](*planes) & 0xFF == \
                    eligible & at_most(planes, k, 8), (levels, k, eligible)


@pytest.mark.parametrize("max_paths", [8, 64])
def test_band_entries_cut_at_the_lowest_eligible_level_plus_tolerance(max_paths):
    """band_level's entries matched by priority on (live_safe, fb0, fb1, fb2), with
    the default (no cut) when none matches, then the chosen cut's formula: the
    candidates are exactly the eligible paths within tie_tolerance levels of the
    lowest eligible level, for random levels, eligible masks and tolerances."""
    rng = random.Random(max_paths)
    full = (1 << max_paths) - 1
    for tol in (0, 1, 2, 7, 9):
        entries = sorted(band_entries(tol, range(max_paths), max_paths),
                         key=lambda b: -b.priority)
        assert len(entries) == 7 * max_paths
        for _ in range(300):
            levels = [rng.choice([rng.randrange(8), 7, 6, 0]) for _ in range(max_paths)]
            eligible = rng.getrandbits(max_paths) & rng.getrandbits(max_paths)
            planes = level_planes(levels, max_paths)
            keys = (eligible, *planes)
            hit = next((b for b in entries
                        if all(k & m == v for k, (v, m) in zip(keys, b.key(), strict=True))), None)
            cut = 7 if hit is None else hit.cut
            candidates = eligible & ~ABOVE[cut](*planes) & full
            lowest = min((lv for i, lv in enumerate(levels) if eligible >> i & 1), default=7)
            want = eligible & at_most(planes, min(lowest + tol, 7), max_paths)
            assert candidates == want, (tol, levels, hex(eligible))


def test_band_entries_refuse_bad_input():
    with pytest.raises(ValueError, match="path index 8"):
        band_entries(1, [8], 8)
    with pytest.raises(ValueError, match="tie_tolerance = 256"):
        band_entries(256, [0], 8)


def test_draw_columns_follow_capacity():
    rows = draw_rows([15, 0, 8, 4])
    assert len(rows) == DRAW_ROWS and all(len(r) == DRAW_COLUMNS for r in rows)
    for column in range(DRAW_COLUMNS):
        counts = [sum(1 for r in rows if r[column] == p) for p in range(4)]
        assert counts == [36, 0, 19, 9]   # 64 slots: 35.6, 0, 19.0, 9.5 by largest remainder
    assert draw_rows([15, 0, 8, 4]) == rows   # deterministic: a rewrite changes nothing
    with pytest.raises(ValueError, match="non-zero"):
        draw_rows([0, 0])


@pytest.mark.parametrize("candidates", [{2, 3}, {0, 3}, {0, 2}, {0, 2, 3}])
def test_first_candidate_draw_is_capacity_proportional(candidates):
    """Rejection sampling over the columns: among the rows where a draw is a
    candidate, the first such draw follows the candidates' weights (within 0.1
    of the exact share over 64 rows)."""
    weights = [15, 0, 8, 4]
    picks = [next((p for p in r if p in candidates), None) for r in draw_rows(weights)]
    hit = [p for p in picks if p is not None]
    total = sum(weights[p] for p in candidates)
    for p in candidates:
        assert abs(hit.count(p) / len(hit) - weights[p] / total) < 0.1, (p, hit.count(p))
    if candidates == {0, 2, 3}:
        assert len(hit) == DRAW_ROWS   # every path is a candidate: never missed


def test_thin_paths_keep_a_slot():
    rows = draw_rows([15] * 7 + [1])
    assert any(7 in r for r in rows)


def test_level_entries_give_the_v1model_level():
    """Every estimate matches at most one ternary entry, whose level is the
    v1model program's (the number of thresholds it reaches); none matches from
    8 << shift on, where the table's default (QMAX) applies."""
    rng = random.Random(7)
    for mbps in (1, 10, 1000, 100000, 800000):
        t = level_thresholds(mbps, 6)
        entries = level_entries(mbps, 6)
        assert [e.level for e in entries] == list(range(8))
        samples = {0, 0xFFFFFFFF, *(x + d for x in t for d in (-1, 0, 1)),
                   *(rng.randrange(0, 9 * t[0] + 1) for _ in range(500))}
        for rate in samples:
            hits = [e.level for e in entries if rate & e.mask == e.value]
            assert (hits or [7]) == [sum(1 for x in t if rate >= x)], (mbps, rate, hits)


def test_lowest_entries_match_exactly_the_lowest_candidate():
    entries = lowest_entries({i: 10 + i for i in range(8)}, 8)
    for mask in range(1, 256):
        hits = [(path, port) for value, m, path, port in entries if mask & m == value]
        lowest = (mask & -mask).bit_length() - 1
        assert hits == [(lowest, 10 + lowest)], mask
    with pytest.raises(ValueError, match="outside 0..7"):
        lowest_entries({8: 1}, 8)


def test_writeback_frame_is_a_notice_of_its_kind():
    frame = writeback_frame(101, 7, 0x4000_0005, src_mac=0x025347000001)
    pkt = Ether(frame)
    notice = pkt[SglbNotice]
    assert pkt.type == 0x88B6 and pkt.src == "02:53:47:00:00:01"
    assert (notice.version, notice.kind, notice.length) == (1, NOTICE_WRITEBACK, 12)
    assert (notice.spine_id, notice.leaf_id, notice.epoch) == (101, 7, 5)   # mod 2^30
    with pytest.raises(ValueError, match="spine_id"):
        writeback_frame(1 << 16, 1, 1)


def test_switch_params_are_nanoseconds():
    fb = Feedback(fresh_us=10_000, gap_margin_us=100, gap_unknown_us=200_000)
    settings = SwitchSettings(flowlet_gap_us=500, feedback=fb)
    p = dict(switch_params(SwitchTarget.TOFINO2, Role.LEAF, 3, 0x02, settings, LbMode.SGLB))
    assert p["flowlet_gap"] == 500_000 and p["gap_margin"] == 100_000
    assert p["gap_unknown"] == 200_000_000
    assert p["fb_fresh"] == 611            # ceil(10 ms / 16.384 us)
    assert "fb_stale" not in p and "unknown_level" not in p
    too_long = SwitchSettings(flowlet_gap_us=5_000_000)   # 5 s: fits v1model's 32-bit us
    assert switch_params(SwitchTarget.V1MODEL, Role.LEAF, 3, 0x02, too_long)
    for target in (SwitchTarget.TOFINO, SwitchTarget.TOFINO2):
        with pytest.raises(ValueError, match=r"flowlet_gap_us = 5000000 is outside "
                                             r"0..4294967 on tofino2? \(32-bit ns\)"):
            switch_params(target, Role.LEAF, 3, 0x02, too_long)


# -- resource figures ------------------------------------------------------------------

def _fake_logs(root, stages, srams_per_stage, phv):
    logs = root / "pipe" / "logs"
    logs.mkdir(parents=True)
    mau = [{"stage_number": s, "logical_tables": {"ids": list(range(s + 1))},
            "rams": {"srams": [{}] * srams_per_stage}, "tcams": {"tcams": [{}] * (s % 2)},
            "map_rams": {"maprams": [{}]}} for s in range(stages)]
    mau.append({"stage_number": stages, "logical_tables": {"ids": []}})   # an empty stage
    (logs / "resources.json").write_text(json.dumps({"resources": {"mau": {"mau_stages": mau}}}))
    containers = [{"container_type": "normal", "bit_width": w, "phv_number": n,
                   "slices": [{"slice_info": {"lsb": lo, "msb": hi}} for lo, hi in sl]}
                  for w, n, sl in phv]
    (logs / "phv.json").write_text(json.dumps({"containers": containers}))


def test_figures_read_the_schema_by_hand(tmp_path):
    _fake_logs(tmp_path, 3, 5, [(8, 0, [(0, 7)]), (32, 64, [(0, 3), (2, 9)]),
                                (32, 64, [(20, 20)]), (16, 40, [])])
    f = tofino.figures(tmp_path, "tofino", 8)
    assert (f.stages, f.srams, f.tcams, f.map_rams, f.logical_tables) == (3, 15, 1, 3, 6)
    assert f.phv_containers == {8: 1, 32: 1} and f.phv_bits == 8 + 11
    assert f.fits and f.stage_limit == 12
    assert re.search(r"^tofino\s+8\s+2\s+3 of 12 ", tofino.table([f]), re.M)   # two passes


def test_figures_refuse_other_layouts(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "resources.json").write_text("{}")
    (tmp_path / "logs" / "phv.json").write_text("{}")
    with pytest.raises(ValueError, match="unexpected bf-p4c log layout"):
        tofino.figures(tmp_path, "tofino", 8)
    with pytest.raises(FileNotFoundError, match="bf-p4c -g"):
        tofino.figures(tmp_path / "none", "tofino", 8)


def test_resources_report_without_the_compiler(tmp_path):
    done = subprocess.run([sys.executable, "-m", "sglb.resources", "--tofino"],
                          capture_output=True, text=True, timeout=120,
                          env={"PATH": str(tmp_path), "PYTHONPATH": ":".join(sys.path)})
    assert done.returncode == 2
    assert "bf-p4c is not on PATH" in done.stderr


def test_resources_report_reads_earlier_logs(tmp_path):
    for target, paths in [(t, n) for t in ("tofino", "tofino2") for n in (8, 64)]:
        _fake_logs(tmp_path / f"{target}-{paths}", 13 if target == "tofino" and paths == 64
                   else 4, 2, [(32, 1, [(0, 31)])])
    done = subprocess.run([sys.executable, "-m", "sglb.resources", "--tofino-logs",
                           str(tmp_path), "--no-compile"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1, done.stdout    # 13 stages do not fit Tofino's 12
    assert "13 of 12" in done.stdout and done.stdout.count(" of 20") == 2


def test_compile_without_compiler_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="bf-p4c is not on PATH"):
        tofino.compile_tna("tofino", 8, tmp_path)
    with pytest.raises(ValueError, match="target"):
        tofino.compile_tna("tofino3", 8, tmp_path)


def _fake_compiler(tmp_path, body: str):
    exe = tmp_path / "bin" / "bf-p4c"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(0o755)
    return str(exe)


def test_compile_runs_under_the_memory_limit(tmp_path, monkeypatch):
    """bf-p4c runs with an address-space limit ($SGLB_BF_P4C_MEMORY_GB): a fake
    compiler reports the limit it got (ulimit -v, in KiB)."""
    exe = _fake_compiler(tmp_path, 'ulimit -v > "$(dirname "$0")/limit"\n')
    monkeypatch.setenv("SGLB_BF_P4C_MEMORY_GB", "3")
    tofino.compile_tna("tofino2", 8, tmp_path / "out", compiler=exe)
    assert int((tmp_path / "bin" / "limit").read_text()) == 3 * 10**9 // 1024
    monkeypatch.setenv("SGLB_BF_P4C_MEMORY_GB", "lots")
    with pytest.raises(ValueError, match="SGLB_BF_P4C_MEMORY_GB"):
        tofino.compile_tna("tofino2", 8, tmp_path / "out", compiler=exe)


def test_compile_failure_says_memory_and_how_far_placement_got(tmp_path):
    """A bf-p4c that dies of std::bad_alloc after its first table placement: the
    error names the memory limit and the stages that placement needed."""
    out = tmp_path / "out"
    logs = out / "pipe" / "logs"
    logs.mkdir(parents=True)
    (logs / "table_summary.log").write_text(
        "Table allocation done 1 time(s), state = INITIAL\n"
        "Number of stages in table allocation: 21\n"
        "  Number of stages for ingress table allocation: 21\n"
        "  Number of stages for egress table allocation: 4\n"
        "Critical path length through the table dependency graph: 19\n")
    exe = _fake_compiler(tmp_path, "echo \"terminate called after throwing an instance of "
                                   "'std::bad_alloc'\" >&2\nexit 134\n")
    with pytest.raises(tofino.CompileError) as err:
        tofino.compile_tna("tofino2", 8, out, compiler=exe, memory=2 * 10**9)
    assert "ran out of memory (limit 2 GB" in str(err.value)
    assert "21 ingress stages needed, dependence chain 19 (of 20)" in str(err.value)
    assert tofino.placement_progress(tmp_path / "none") is None


def test_random_masks_pick_a_single_lowest_entry_at_64_paths():
    entries = lowest_entries({i: i for i in range(64)}, 64)
    rng = random.Random(7)
    for _ in range(500):
        mask = rng.getrandbits(64) or 1
        hits = [path for value, m, path, _ in entries if mask & m == value]
        assert hits == [(mask & -mask).bit_length() - 1]


def test_path_words_carry_valid_path_and_port():
    from sglb.tna_config import path_word
    assert path_word(0, 0) == 0x8000 and path_word(63, 511) == 0xFFFF
    assert path_word(5, 3) >> 9 & 63 == 5 and path_word(5, 3) & 511 == 3
    with pytest.raises(ValueError, match="path 64"):
        path_word(64, 1)


def _front_end_entries(tmp_path, max_paths: int, table: str, target: str = "tofino2"):
    """The const entries of ``table`` as p4c's front end emits them for ``target``:
    a list of (priority, [a predicate per key, in key order], action name,
    parameters), highest priority first."""
    tables = _front_end_tables(tmp_path, max_paths, [table], target)
    return tables[table][1]


def _front_end_tables(tmp_path, max_paths: int, names: list[str], target: str = "tofino2"):
    """{table: (key names, entries as _front_end_entries gives them)} for those of
    ``names`` that the program has (one front-end run)."""
    from finsy.proto import p4i, p4r
    from google.protobuf import text_format

    if not tofino.shutil.which("p4test"):
        pytest.skip("p4test is not on PATH")
    info_path, entries_path = tmp_path / "p4info.txtpb", tmp_path / "entries.txtpb"
    tofino.front_end_p4info(target, max_paths, info_path, INCLUDE, entries=entries_path)
    info = text_format.Parse(info_path.read_text(), p4i.P4Info())
    request = text_format.Parse(entries_path.read_text(), p4r.WriteRequest())
    actions = {a.preamble.id: a.preamble.name.split(".")[-1] for a in info.actions}
    out = {}
    for t in info.tables:
        if t.preamble.name not in names:
            continue
        entries = []
        for update in request.updates:
            e = update.entity.table_entry
            if e.table_id != t.preamble.id:
                continue
            by_field = {m.field_id: _matcher(m) for m in e.match}
            keys = [by_field.get(f.id, _ANY) for f in t.match_fields]
            params = tuple(int.from_bytes(p.value, "big") for p in e.action.action.params)
            entries.append((e.priority, keys, actions[e.action.action.action_id], params))
        out[t.preamble.name] = ([f.name for f in t.match_fields],
                                sorted(entries, key=lambda entry: -entry[0]))
    missing = set(names) - set(out)
    if names == [names[0]] and missing:
        raise AssertionError(f"the program has no table {names[0]}")
    return out


def _ANY(_value: int) -> bool:
    return True


def _matcher(m):
    """A predicate on a key value for one P4Runtime FieldMatch (exact, ternary, range)."""
    kind = m.WhichOneof("field_match_type")
    if kind == "exact":
        want = int.from_bytes(m.exact.value, "big")
        return lambda v: v == want
    if kind == "ternary":
        value, mask = (int.from_bytes(m.ternary.value, "big"),
                       int.from_bytes(m.ternary.mask, "big"))
        return lambda v: v & mask == value
    if kind == "range":
        low, high = int.from_bytes(m.range.low, "big"), int.from_bytes(m.range.high, "big")
        return lambda v: low <= v <= high
    raise AssertionError(f"unexpected match kind {kind}")


def _lookup(entries, keys, default):
    """(action, params) of the first entry, by priority, whose keys all match."""
    return next(((action, params) for _, key, action, params in entries
                 if all(match(k) for k, match in zip(keys, key, strict=True))), default)


@pytest.mark.skipif(INCLUDE is None, reason="no tna.p4 (bf-p4c's include files, or "
                                            "$SGLB_TNA_INCLUDE)")
@pytest.mark.parametrize("max_paths", [8, 64])
def test_pick_draw_takes_the_first_candidate_draw(tmp_path, max_paths):
    """pick_draw's const entries, as the front end emits them, matched by priority:
    the first draw (valid ++ path) whose path is a candidate, else none
    (the default, pick_lowest), for random draws and candidate masks."""
    entries = _front_end_entries(tmp_path, max_paths, "SglbIngress.pick_draw")
    assert len(entries) == 4 * max_paths
    rng = random.Random(max_paths)
    for _ in range(3000):
        words = [rng.choice([0, 64]) | rng.randrange(max_paths) for _ in range(4)]
        candidates = rng.getrandbits(max_paths) & rng.getrandbits(max_paths)
        if rng.random() < 0.3:   # a draw that is a candidate
            candidates |= 1 << (words[rng.randrange(4)] & 63)
        keys = [*words, candidates]
        want = next((f"pick_{j}" for j, w in enumerate(words)
                     if w & 64 and candidates >> (w & 63) & 1), "pick_lowest")
        got, _ = _lookup(entries, keys, ("pick_lowest", ()))
        assert got == want, (words, hex(candidates))


def _v1model_ipv4_verdict(f: dict, max_paths: int) -> str | int:
    """The drop reason of the v1model program's IPv4 checks (p4src/sglb.p4, in its
    order), or "forward" / "ok" (passed; routed or not)."""
    if f["tag"]:
        if (f["version"] != 1 or f["length"] != 20 or f["npaths"] == 0
                or f["npaths"] > max_paths or f["npaths"] <= f["path"] or f["ce"] > 7
                or f["src_leaf"] >= 1024
                or (f["fb_level"] != 0xFF and (f["fb_level"] > 7 or f["fb_path"] >= max_paths))):
            return Drop.BAD_TAG
        if f["role"] == Role.LEAF and f["nb_kind"] != 2:
            return Drop.TAG_WRONG_PORT
        if f["role"] == Role.SPINE and (f["nb_kind"] != 3 or f["nb_id"] != f["src_leaf"]):
            return Drop.TAG_WRONG_PORT
    if f["route_miss"]:
        return Drop.NO_ROUTE
    if f["ip_version"] != 4 or f["checksum_error"]:
        return Drop.BAD_IPV4
    if f["ihl"] != 5:
        return Drop.UNSUPPORTED
    if f["ttl"] <= 1:
        return Drop.TTL_EXPIRED
    return "forward" if f["dec_ttl"] else "ok"


@pytest.mark.skipif(INCLUDE is None, reason="no tna.p4 (bf-p4c's include files, or "
                                            "$SGLB_TNA_INCLUDE)")
@pytest.mark.parametrize("max_paths", [8, 64])
def test_ipv4_check_follows_the_v1model_order(tmp_path, max_paths):
    """tag_check's then ipv4_check's const entries, as the front end emits them,
    name the drop of the v1model program's chain of checks (or pass) for random
    packets, each field drawn near its limits so that every check is hit alone
    and together."""
    tag_entries = _front_end_entries(tmp_path, max_paths, "SglbIngress.tag_check")
    entries = _front_end_entries(tmp_path, max_paths, "SglbIngress.ipv4_check")
    rng = random.Random(max_paths)
    seen = set()
    for _ in range(20000):
        pick = lambda good, bad: rng.choice(bad) if rng.random() < 0.08 else good  # noqa: E731
        npaths = pick(rng.randint(1, max_paths), [0, max_paths + 1, 255])
        src_leaf = pick(rng.randrange(1024), [1024, 0xFFFF])
        f = {"tag": rng.random() < 0.6, "version": pick(1, [0, 2, 255]),
             "length": pick(20, [19, 21, 0]), "npaths": npaths,
             "path": pick(rng.randrange(max(npaths, 1)), [npaths, 255]),
             "ce": pick(rng.randint(0, 7), [8, 255]), "src_leaf": src_leaf,
             "fb_level": pick(rng.choice([0xFF, rng.randint(0, 7)]), [8, 0xFE]),
             "fb_path": pick(rng.randrange(max_paths), [max_paths, 255]),
             "role": rng.choice([Role.LEAF, Role.SPINE]),
             "nb_kind": pick(rng.choice([2, 3]), [0, 1, 4]),
             "nb_id": pick(src_leaf, [src_leaf ^ 1, 0xFFFF]),
             "route_miss": rng.random() < 0.05, "ip_version": pick(4, [0, 5, 15]),
             "checksum_error": rng.random() < 0.05, "ihl": pick(5, [4, 6, 15]),
             "ttl": pick(rng.randint(2, 255), [0, 1]), "dec_ttl": rng.random() < 0.5,
             "leaf_route": rng.random() < 0.3}
        want = _v1model_ipv4_verdict(f, max_paths)
        if want in ("forward", "ok"):   # the stores of a tagged packet a leaf takes
            rx = int(f["tag"] and f["role"] == Role.LEAF and not f["leaf_route"])
            want = (want, rx, int(rx and f["fb_level"] != 0xFF))
        verdict = 0   # no tag
        if f["tag"]:
            span = max(f["npaths"] - f["path"], 0)
            tag_keys = [span, f["version"], f["length"], f["ce"], f["src_leaf"], f["npaths"],
                        f["fb_level"], f["fb_path"], int(f["role"]), f["nb_kind"],
                        f["nb_id"] ^ f["src_leaf"]]
            _, (verdict,) = _lookup(tag_entries, tag_keys, ("tag_verdict_is", (1,)))
        keys = [verdict, int(f["route_miss"]), f["ip_version"], int(f["checksum_error"]),
                f["ihl"], f["ttl"], int(f["dec_ttl"]), int(f["role"]), int(f["tag"]),
                int(f["leaf_route"]), f["fb_level"]]
        action, params = _lookup(entries, keys, ("drop_as", (int(Drop.BAD_IPV4),)))
        got = params[0] if action == "drop_as" else (
            {"ipv4_forward": "forward", "ipv4_ok": "ok"}[action], *params)
        assert got == want, (f, action, params)
        seen.add(want)
    assert len(seen) == 12, seen   # every drop reason and pass (with its stores) was reached


def _forced_entries() -> tuple[list[tuple[list[str], str]], dict[str, tuple[int, int]]]:
    """SGLB_FORCED_ENTRIES of p4src/tna/regs.p4: (keys, action macro) in priority
    order, and the NOTICE_RV_* (value, mask) pairs."""
    source = (tofino.TNA_PROGRAM.parent / "regs.p4").read_text()
    body = source[source.index("#define SGLB_FORCED_ENTRIES"):]
    body = body[:body.index("#define SGLB_FORCED_ACCESS_ONE")]
    masks = {name: (int(v, 16), int(m, 16)) for name, v, m in re.findall(
        r"#define (NOTICE_RV_\w+) 32w(0x[0-9A-F]+|0) &&& 32w(0x[0-9A-F]+)", source)}
    out = []
    for keys, action in re.findall(r"\(([^)]*)\):\s*(\w+)\(\);", body):
        out.append(([k.strip() for k in keys.split(",")], action))
    return out, masks


def _forced_action(entries, masks, ok: int, kind: str, seen: int, rv: int, mode: str) -> str:
    """The action of the first entry that matches (the default: access_none)."""
    for (e_ok, k, s, r, m), action in entries:
        if e_ok not in (str(ok), "_") or k not in (kind, "_") or s not in (str(seen), "_") \
                or m not in (mode, "_"):
            continue
        if r != "_":
            value, mask = masks[r]
            if rv & mask != value:
                continue
        return action
    return "access_none"


def test_forced_bits_follow_the_serial_number_rule():
    """The forced_* access tables' entries act on a notice exactly when the v1model
    rule does: an offer when nothing is held or key - held > 1 as a signed 32-bit
    number, a write-back when held - key <= 1; FAIL / RECOVER / write-back pick
    their own action, whatever the switch's mode. notice_rv is what notice_epoch
    answers (state.p4). A packet that is no notice reads the registers in SGLB
    mode only (ECMP ignores notices, as in the v1model program)."""
    entries, masks = _forced_entries()
    rng = random.Random(3)
    keys = [0b10, 0b11, 0xFFFFFFFE, 0x7FFFFFFE, *(rng.randrange(2, 1 << 32) | 2 for _ in range(300))]
    for mode in ("MODE_SGLB", "MODE_ECMP"):
        for key in keys:
            for held in (0, key, key - 1, key + 1, key + 2, key - 2, key ^ 0x80000000,
                         rng.randrange(1, 1 << 32) | 2):
                held &= 0xFFFFFFFF
                seen = int(held != 0)
                diff = (key - held) & 0xFFFFFFFF
                signed = diff - (1 << 32) if diff >> 31 else diff
                for kind, act in (("NOTICE_FAIL", "FAIL_A"), ("NOTICE_RECOVER", "RECOVER_A")):
                    want = act if (held == 0 or signed > 1) else "access_none"
                    got = _forced_action(entries, masks, 1, kind, seen, diff, mode)
                    assert got == want, (key, held, mode)
                back = (held - key) & 0xFFFFFFFF
                back_signed = back - (1 << 32) if back >> 31 else back
                want = "WB_A" if seen and back_signed <= 1 else "access_none"
                assert _forced_action(entries, masks, 1, "NOTICE_WRITEBACK", seen, back, mode) \
                    == want
    # nothing held: the first notice acts; a packet that is no notice (notice_ok 0)
    # reads in SGLB mode and does nothing in ECMP
    assert _forced_action(entries, masks, 1, "NOTICE_FAIL", 0, 5, "MODE_ECMP") == "FAIL_A"
    for kind in ("NOTICE_FAIL", "NOTICE_WRITEBACK", "0"):
        assert _forced_action(entries, masks, 0, kind, 1, 5, "MODE_SGLB") == "READ_A"
        assert _forced_action(entries, masks, 0, kind, 1, 5, "MODE_ECMP") == "access_none"
    assert all(keys[0] == "1" and keys[4] == "_" for keys, _ in entries[:-1])


# -- the decision tables (const entries, as the front end emits them) ----------------

needs_tna_include = pytest.mark.skipif(INCLUDE is None, reason="no tna.p4 (bf-p4c's include "
                                                               "files, or $SGLB_TNA_INCLUDE)")


@needs_tna_include
def test_notice_verdict_follows_the_serial_number_rule(tmp_path):
    """An offer (FAIL / RECOVER) is applied when nothing is held or key - held > 1 as a
    signed 32-bit number, a duplicate at 0, 1 and -1, stale otherwise; a write-back
    is consumed without an event (the v1model rule, sglb.p4's chain before)."""
    from sglb.codes import Event

    entries = _front_end_entries(tmp_path, 8, "SglbIngress.notice_verdict")
    rng = random.Random(5)
    rvs = [0, 1, 2, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF,
           *(rng.getrandbits(32) for _ in range(300))]
    for kind in (1, 2, NOTICE_WRITEBACK):
        for seen in (0, 1):
            for rv in rvs:
                if kind == NOTICE_WRITEBACK:
                    want = ("notice_consumed", (32,))
                elif seen == 0 or (rv >> 1 != 0 and rv >> 31 == 0):
                    want = ("notice_apply", ())
                elif rv >> 1 == 0 or rv == 0xFFFFFFFF:
                    want = ("notice_consumed", (int(Event.NOTICE_DUPLICATE),))
                else:
                    want = ("notice_consumed", (int(Event.NOTICE_STALE),))
                got = _lookup(entries, [kind, seen, rv],
                              ("notice_consumed", (int(Event.NOTICE_STALE),)))
                assert got == want, (kind, seen, hex(rv))


@needs_tna_include
def test_packet_kind_follows_the_v1model_order(tmp_path):
    """packet_kind names what the v1model program's chain of conditions makes of a
    packet (a parser error; a PacketOut sent as is, to a port in range, or of a bad
    op; then the first valid header of port-status, notice, probe, ARP; a tag
    without IPv4; IPv4; else unsupported), for random header sets."""
    entries = _front_end_entries(tmp_path, 8, "SglbIngress.packet_kind")
    malformed = ("drop_as", (int(Drop.MALFORMED),))
    rng = random.Random(5)
    seen = set()
    for _ in range(20000):
        err = rng.choice([0, 0, 0, 1 << rng.randrange(16)])
        po, op = rng.random() < 0.3, rng.choice([0, 0, 1, 1, 2, 0xFF])
        port = rng.choice([rng.randrange(512), 512, 0xFFFF])
        ps, notice, probe, arp, tag, ipv4 = (rng.random() < 0.25 for _ in range(6))
        if err:
            want = malformed
        elif po and op == 1:
            want = ("packet_out_direct", ()) if port < 512 else \
                ("drop_as", (int(Drop.BAD_PACKET_OUT),))
        elif po and op != 0:
            want = ("drop_as", (int(Drop.BAD_PACKET_OUT),))
        elif ps:
            want = ("kind_port_status", ())
        elif notice:
            want = ("kind_notice", ())
        elif probe:
            want = ("kind_probe", ())
        elif arp:
            want = ("kind_arp", ())
        elif tag and not ipv4:
            want = ("drop_as", (int(Drop.BAD_TAG),))
        elif ipv4:
            want = ("kind_ipv4", ())
        else:
            want = ("drop_as", (int(Drop.UNSUPPORTED),))
        keys = [err, int(po), op, port, int(ps), int(notice), int(probe), int(arp), int(tag),
                int(ipv4)]
        assert _lookup(entries, keys, malformed) == want, keys
        seen.add(want)
    assert len(seen) == 10, seen


@needs_tna_include
def test_port_status_check_gives_the_checks_and_the_update(tmp_path):
    """port_status_check drops what the v1model chain drops (not from the CPU port,
    another version, an op other than DOWN or UP, a port out of range) and gives the
    op of the access table the update goes to: path_down on a leaf, leaf_links on
    a spine when the port leads to a leaf."""
    entries = _front_end_entries(tmp_path, 8, "SglbIngress.port_status_check")
    cpu = 0   # tofino2's CPU_PORT
    bad = ("drop_as", (int(Drop.BAD_PORT_STATUS),))
    rng = random.Random(6)
    seen = set()
    for _ in range(5000):
        ingress = rng.choice([cpu, cpu, 1, 0x1FF])
        version, op = rng.choice([1, 1, 0, 2]), rng.choice([1, 2, 1, 2, 0, 3])
        port = rng.choice([rng.randrange(512), 512, 0xFFFF])
        role, peer = rng.choice([Role.LEAF, Role.SPINE]), rng.randrange(2)
        if ingress != cpu or version != 1 or op not in (1, 2) or port >= 512:
            want = bad
        else:
            down = int(op == 1)
            code = 1 if down else 2   # OP_DOWN / OP_UP
            want = ("port_status_takes", (down, code if role == Role.LEAF else 0,
                                          code if role == Role.SPINE and peer else 0))
        got = _lookup(entries, [ingress, version, op, port, int(role), peer], bad)
        assert got == want, (ingress, version, op, port, role, peer)
        seen.add(want)
    assert len(seen) == 7, seen


@needs_tna_include
def test_port_status_event_says_down_up_or_duplicate(tmp_path):
    from sglb.codes import Event

    entries = _front_end_entries(tmp_path, 8, "SglbIngress.port_status_event")
    for down, was in itertools.product((0, 1), (0, 1)):
        event = Event.PORT_STATUS_DUP if was == down else (
            Event.PORT_DOWN if down else Event.PORT_UP)
        assert _lookup(entries, [down, was], ("port_status_is", (int(Event.PORT_UP),))) == \
            ("port_status_is", (int(event),)), (down, was)


@needs_tna_include
@pytest.mark.parametrize("target", ["tofino", "tofino2"])
def test_leaf_decision_follows_the_v1model_order(tmp_path, target):
    """leaf_decision does what the v1model chain does with a leaf's packet toward a
    leaf once the checks passed (a destination out of range; a probe, by its port's
    state; a tag in transit; in one pass, no candidate; else out, tagged when SGLB
    feeds back and the frame has room), and nothing to any other packet. Tofino
    decides the candidate in its second pass, so its table does not look at it."""
    entries = _front_end_entries(tmp_path, 8, "SglbIngress.leaf_decision", target)
    none = ("no_decision", ())
    rng = random.Random(7)
    seen = set()
    for _ in range(20000):
        d = {"drop": rng.choice([0, 0, 0, rng.randrange(1, 40)]), "to_leaf": rng.randrange(2),
             "dst": rng.choice([rng.randrange(1024), 1024, 0xFFFF]),
             "probe": int(rng.random() < 0.2), "up": rng.randrange(2),
             "tag": int(rng.random() < 0.1), "lowest": int(rng.random() < 0.8),
             "mode": rng.choice([LbMode.SGLB, LbMode.ECMP]), "fb": rng.randrange(2),
             "over": rng.choice([0, 0, rng.randrange(1, 1 << 16)])}
        if d["drop"] or not d["to_leaf"]:
            want = none
        elif d["dst"] >= 1024:
            want = ("drop_as", (int(Drop.NO_ROUTE),))
        elif d["probe"]:
            want = ("probe_out", ()) if d["up"] else ("drop_as", (int(Drop.NO_LIVE_PATH),))
        elif d["tag"]:
            want = ("drop_as", (int(Drop.NO_ROUTE),))
        elif target == "tofino2" and not d["lowest"]:
            want = ("drop_as", (int(Drop.NO_LIVE_PATH),))
        elif d["mode"] == LbMode.SGLB and d["fb"]:
            want = ("leaf_out_untagged", ()) if d["over"] else ("leaf_out_tagged", ())
        else:
            want = ("leaf_out", ())
        keys = [d["drop"], d["to_leaf"], d["dst"], d["probe"], d["up"], d["tag"],
                d["lowest"], int(d["mode"]), d["fb"], d["over"]]
        assert _lookup(entries, keys, none) == want, d
        seen.add(want)
    assert len(seen) == 7, seen


@needs_tna_include
def test_spine_member_follows_the_v1model_order(tmp_path):
    """spine_member sends down the member the v1model chain picks: when both links
    are up and they are two ports, the flow's member in SGLB mode (flow_member 1: a,
    else b) or by the hash (ECMP, probes: flow_member 0, split_left non-zero: a);
    else the one that is up (a first), else none (NO_LIVE_PATH)."""
    entries = _front_end_entries(tmp_path, 8, "SglbIngress.spine_member")
    none = ("no_member", ())
    seen = set()
    for links, same, member, left in itertools.product(range(8), (0, 1), range(4), (0, 1, 200)):
        down_x = 0 if same else 1 << (links % 9)
        if links == 0 and down_x != 0:
            if member == 1 or (member == 0 and left):
                want = ("member_a", ())
            else:
                want = ("member_b", ())
        elif links & 1 == 0:
            want = ("member_a", ())
        elif links & 2 == 0:
            want = ("member_b", ())
        else:
            want = none
        assert _lookup(entries, [links, down_x, member, left], none) == want, \
            (links, down_x, member, left)
        seen.add(want)
    assert len(seen) == 3


class _TnaSpine:
    """One SGLB spine of the Tofino program toward one leaf with two links up: its
    registers as p4src/tna/state.p4 declares them (flowlet_age, draw_next, the
    flowlet_path actions), its steps as steps.p4's (spine_age, spine_draw), and
    its decisions by the front end's entries of spine_flow_access and
    spine_member, looked up by key name (a program without the first splits by
    the hash: split_left). One flowlet slot per flow (no collisions)."""

    def __init__(self, tables, down: tuple[int, int, int, int], gap_unknown_ns: int):
        self.tables = tables
        self.a, self.b, self.share, self.base = down
        self.gap = gap_unknown_ns
        self.time: dict[int, int] = {}
        self.path: dict[int, int] = {}
        self.cursor = 0

    def _decide(self, table: str, values: dict[str, int], default):
        names, entries = self.tables[table]
        return _lookup(entries, [values[n] for n in names], default)

    def send(self, flow: int, tuple_bytes: bytes, now_ns: int) -> int:
        values = {"meta.links_now": 0, "meta.down_x": self.a ^ self.b,
                  "meta.share_a": self.share, "meta.flow_member": 0,
                  "meta.split_left": max(0, self.share - (zlib.crc32(tuple_bytes) & 0xFF))}
        if "SglbIngress.spine_flow_access" in self.tables:
            held = self.time.get(flow, 0)
            idle = 0xFFFFFFFF if held == 0 else (now_ns - held) % (1 << 32)
            self.time[flow] = now_ns % (1 << 32) | 1
            values["meta.spine_left"] = max(0, self.gap - idle)
            point = 0
            if values["meta.spine_left"] == 0:
                point = (self.cursor + self.base) % (1 << 16)
                self.cursor = (self.cursor + DRAW_STRIDE) % (1 << 16)
            values["meta.draw_left"] = max(0, self.share - (point >> 8))
            action, _ = self._decide("SglbIngress.spine_flow_access", values,
                                     ("access_none", ()))
            given = {"flow_to_a": 1, "flow_to_b": 2}
            self.path[flow] = given.get(action, self.path.get(flow, 0))
            values["meta.flow_member"] = self.path[flow]
        action, _ = self._decide("SglbIngress.spine_member", values, ("no_member", ()))
        return {"member_a": self.a, "member_b": self.b}[action]


@needs_tna_include
@pytest.mark.parametrize(("ports", "caps"), [((4, 5), {}), ((5, 4), {4: 5.0, 5: 10.0})],
                         ids=["equal", "listed-high-first"])
def test_sglb_spine_member_follows_the_v1model_spine(tmp_path, ports, caps):
    """An SGLB spine of the Tofino program on Tofino 2 at 8 paths (registers modelled, decisions by its
    tables, leaf_downlinks as SyncMesh writes it) sends every packet of 16 flows down
    the member the v1model program's spine does (run in the software target): k
    flows split k * share whatever their 5-tuples hash to; a flow keeps its member
    across idle times up to gap_unknown (beyond the flowlet gap), and is drawn
    again after it, the destination's sequence going on. Also for a bundle listed
    high port first (the Tofino program's a is the lower port, share swapped)."""
    from sglb_harness import (
        FLOWLET_GAP,
        compiled,
        configure_spine,
        longest_kept_idle,
        out_ports,
        sticky_spine_settings,
    )

    from sglb.config import downlink_share
    from sglb.settings import switch_params as params

    flows = 16
    settings = sticky_spine_settings()
    v1 = configure_spine(compiled(8), leaves=((1, (3,)), (2, ports)), capacities=caps,
                         settings=settings)
    share_v1 = downlink_share(caps.get(ports[0], 10.0), caps.get(ports[1], 10.0))
    # leaf_downlinks as SglbTnaMapping writes it (port_a the lower port)
    a, b, share, base = ports[0], ports[1], share_v1, draw_base(2)
    if a > b:
        a, b, share, base = b, a, 256 - share_v1, draw_base(2, swapped_share=share_v1)
    gap_ns = dict(params(SwitchTarget.TOFINO2, Role.SPINE, 101, 0x02, settings,
                         LbMode.SGLB))["gap_unknown"]
    tables = _front_end_tables(tmp_path, 8, ["SglbIngress.spine_flow_access",
                                             "SglbIngress.spine_member"])
    tna = _TnaSpine(tables, (a, b, share, base), gap_ns)
    gap_us = settings.feedback.gap_unknown_us
    assert gap_us * 1000 == gap_ns and gap_us > 10 * FLOWLET_GAP

    def round_(sports) -> list[int]:
        got = []
        for sport in sports:
            v1.clock.now += 1
            frame = udp_frame(sport)
            want = out_ports(v1.send(3, frame))
            member = tna.send(sport, frame[26:38], v1.clock.now * 1000)
            assert [member] == want, (sport, member, want)
            got.append(member)
        return got

    sports = list(range(1000, 1000 + flows))
    first = round_(sports)
    # one flowlet slot per flow in the v1model program too (else it would keep a member)
    assert sum(v1.sw.register_read("flowlet_path", i) != 0 for i in range(4096)) == flows
    assert abs(first.count(a) - flows * share / 256) <= 1, first
    for idle in (1, 10 * FLOWLET_GAP, longest_kept_idle(gap_us, flows)):
        v1.clock.now += idle
        assert round_(sports) == first
    v1.clock.now += gap_us
    again = round_(sports)
    assert abs(again.count(a) - flows * share / 256) <= 1, again
    assert again != first
    # new flows continue the destination's sequence alongside the kept ones
    assert round_(list(range(2000, 2000 + flows)) + sports[:4])[-4:] == again[:4]
    assert sum(v1.sw.register_read("flowlet_path", i) != 0 for i in range(4096)) == 2 * flows


def udp_frame(sport: int) -> bytes:
    """A frame from leaf 1's host to one on leaf 2 (the spine's test fabric)."""
    from sglb_harness import udp

    return udp(dst="10.2.0.5", src="10.1.0.1", sport=sport, payload=b"d" * 100)


@needs_tna_include
@pytest.mark.parametrize("max_paths", [8, 64])
def test_kept_alive_keeps_a_live_path_and_counts_new_flowlets(tmp_path, max_paths):
    entries = _front_end_entries(tmp_path, max_paths, "SglbIngress.kept_alive")
    rng = random.Random(max_paths)
    for _ in range(3000):
        word = (rng.choice([0, 64]) | rng.randrange(max_paths))
        live = rng.getrandbits(max_paths)
        if rng.random() < 0.5:
            live |= 1 << (word & 63)
        new = rng.randrange(2)
        alive = bool(word & 64 and live >> (word & 63) & 1)
        want = (("keep_path_new" if new else "keep_path"), (word & 63,)) if alive \
            else ("path_dead", ())
        assert _lookup(entries, [word, live, new], ("path_dead", ())) == want, \
            (word, hex(live), new)


@needs_tna_include
def test_fb_level_out_returns_only_fresh_valid_in_range_metrics(tmp_path):
    entries = _front_end_entries(tmp_path, 8, "SglbIngress.fb_level_out")
    rng = random.Random(3)
    for _ in range(3000):
        tried = rng.randrange(2)
        top = rng.randrange(16)          # valid ++ level
        over = rng.choice([0, 0, rng.randrange(256)])
        left = rng.choice([0, 0, rng.getrandbits(28)])
        send = tried and top & 8 and over == 0 and left == 0
        want = ("put_fb_level", (top & 7,)) if send else ("tag_no_feedback", ())
        assert _lookup(entries, [tried, top, over, left], ("tag_no_feedback", ())) == want


@needs_tna_include
def test_notice_check_follows_the_v1model_order(tmp_path):
    """notice_check names the drop of the v1model chain of a notice's checks (format
    and leaf role, then the port, then the spine) or passes it, for random notices
    with each field drawn near its limits."""
    entries = _front_end_entries(tmp_path, 8, "SglbIngress.notice_check")
    cpu = 0   # tofino2's CPU_PORT (the front end compiles for tofino2 here)
    rng = random.Random(9)
    seen = set()
    for _ in range(20000):
        pick = lambda good, bad: rng.choice(bad) if rng.random() < 0.1 else good  # noqa: E731
        spine_id = rng.randrange(1 << 16)
        n = {"version": pick(1, [0, 2]), "length": pick(12, [11, 13]),
             "kind": rng.choice([1, 2, NOTICE_WRITEBACK, 0, 3, 7]),
             "leaf_id": pick(rng.randrange(1024), [1024, 0xFFFF]),
             "role": pick(Role.LEAF, [Role.SPINE]), "port": pick(cpu, [1, 5, 0x1FF]),
             "packet_out": rng.random() < 0.8, "nb_kind": pick(2, [0, 1, 3]),
             "nb_id": pick(spine_id, [spine_id ^ 4]), "spine_known": rng.random() < 0.9}
        if (n["version"] != 1 or n["length"] != 12 or n["kind"] not in (1, 2, NOTICE_WRITEBACK)
                or n["leaf_id"] >= 1024 or n["role"] != Role.LEAF):
            want = ("drop_as", (int(Drop.BAD_NOTICE),))
        elif n["kind"] == NOTICE_WRITEBACK and (n["port"] != cpu or not n["packet_out"]):
            want = ("drop_as", (int(Drop.NOTICE_WRONG_PORT),))
        elif n["kind"] != NOTICE_WRITEBACK and (n["nb_kind"] != 2 or n["nb_id"] != spine_id):
            want = ("drop_as", (int(Drop.NOTICE_WRONG_PORT),))
        elif not n["spine_known"]:
            want = ("drop_as", (int(Drop.UNKNOWN_SPINE),))
        else:
            want = ("notice_passes", ())
        keys = [n["version"], n["length"], n["kind"], n["leaf_id"], int(n["role"]), n["port"],
                int(n["packet_out"]), n["nb_kind"], n["nb_id"] ^ spine_id, int(n["spine_known"])]
        assert _lookup(entries, keys, ("drop_as", (int(Drop.BAD_NOTICE),))) == want, n
        seen.add(want)
    assert len(seen) == 4, seen


@needs_tna_include
@pytest.mark.parametrize("max_paths", [8, 64])
def test_probe_check_follows_the_v1model_order(tmp_path, max_paths):
    """probe_check gives what the v1model chain of a probe's conditions does (the
    format, the leaf id and path bounds; a spine's transit from a leaf; a leaf's
    PacketOut send, or its reflection or reply of a probe for itself from a
    spine's port; else BAD_PROBE), for random probes with each field near its
    limits."""
    entries = _front_end_entries(tmp_path, max_paths, "SglbIngress.probe_check")
    bad = ("drop_as", (int(Drop.BAD_PROBE),))
    rng = random.Random(11)
    seen = set()
    for _ in range(20000):
        pick = lambda good, bad_values: (rng.choice(bad_values)  # noqa: E731
                                         if rng.random() < 0.1 else good)
        me = rng.randrange(1024)
        p = {"version": pick(1, [0, 2]), "length": pick(20, [19, 21]),
             "dst_leaf": pick(rng.choice([me, rng.randrange(1024)]), [1024, 0xFFFF]),
             "path": pick(rng.randrange(max_paths), [max_paths, 0xFF]),
             "role": rng.choice([Role.LEAF, Role.SPINE]), "nb_kind": rng.choice([0, 1, 2, 3]),
             "packet_out": rng.random() < 0.3, "kind": rng.choice([3, 4])}
        if (p["version"] != 1 or p["length"] != 20 or p["dst_leaf"] >= 1024
                or p["path"] >= max_paths):
            want = bad
        elif p["role"] == Role.SPINE:
            want = ("probe_transit", ()) if p["nb_kind"] == Neighbour.LEAF else bad
        elif p["packet_out"]:
            want = ("probe_send", ()) if p["kind"] == 3 and p["dst_leaf"] != me else bad
        elif p["nb_kind"] != Neighbour.SPINE or p["dst_leaf"] != me:
            want = bad
        else:
            want = ("probe_reflect", ()) if p["kind"] == 3 else ("probe_reply", ())
        keys = [p["version"], p["length"], p["dst_leaf"], p["path"], int(p["role"]),
                p["nb_kind"], int(p["packet_out"]), p["kind"], p["dst_leaf"] ^ me]
        assert _lookup(entries, keys, bad) == want, p
        seen.add(want[0])
    assert seen == {"drop_as", "probe_transit", "probe_send", "probe_reflect", "probe_reply"}


@needs_tna_include
def test_arp_check_takes_ipv4_requests_only(tmp_path):
    entries = _front_end_entries(tmp_path, 8, "SglbIngress.arp_check")
    for oper, htype, ptype in itertools.product((0, 1, 2), (0, 1, 6), (0x0800, 0x86DD, 0)):
        want = ("arp_request", ()) if (oper, htype, ptype) == (1, 1, 0x0800) else \
            ("drop_as", (int(Drop.UNSUPPORTED),))
        assert _lookup(entries, [oper, htype, ptype],
                       ("drop_as", (int(Drop.UNSUPPORTED),))) == want


def test_links_change_says_when_a_leaf_becomes_reachable_or_not():
    """links_change (checks.p4) flags a port-status update on a spine exactly when
    the leaf's reachability flips: both its links down after the update and not
    before (a FAIL notice follows), or the other way (RECOVER); leaf_links holds
    bit 0 for member a and bit 1 for member b, and the update sets (down) or
    clears (up) the member's bits (member 3, a leaf's only link, is both)."""
    source = (tofino.TNA_PROGRAM.parent / "checks.p4").read_text()
    body = source[source.index("table links_change"):]
    body = body[:body.index("size =")]
    ops = {"OP_DOWN": 1, "OP_UP": 2}
    listed = {(ops[op], int(was), int(member))
              for op, was, member, action in re.findall(
                  r"\((OP_\w+), (\d), (\d)\): (\w+)\(\);", body)
              if action == "reach_changes"}
    assert "const default_action = reach_stays();" in body
    flips = set()
    for op, was, member in itertools.product((1, 2), range(4), (1, 2, 3)):
        now = was | member if op == 1 else was & ~member
        if (was == 3) != (now == 3):
            flips.add((op, was, member))
    assert listed == flips and len(flips) == 8
